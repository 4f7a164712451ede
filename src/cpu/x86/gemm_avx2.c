#include "../kernels.h"
typedef int qmm__avx2_placeholder;
