/* The public scalar conversions: thin wrappers over the inline versions in convert.h. */
#include "convert.h"

#include "qmm.h"

uint16_t qmm_fp32_to_bf16(float x) { return qmm__fp32_to_bf16(x); }
float qmm_bf16_to_fp32(uint16_t h) { return qmm__bf16_to_fp32(h); }
uint16_t qmm_fp32_to_fp16(float x) { return qmm__fp32_to_fp16(x); }
float qmm_fp16_to_fp32(uint16_t h) { return qmm__fp16_to_fp32(h); }
uint8_t qmm_fp32_to_e4m3(float x) { return qmm__fp32_to_e4m3(x); }
float qmm_e4m3_to_fp32(uint8_t code) { return qmm__e4m3_to_fp32(code); }
uint8_t qmm_fp32_to_e2m1(float x) { return qmm__fp32_to_e2m1(x); }
float qmm_e2m1_to_fp32(uint8_t code) { return qmm__e2m1_to_fp32(code); }
uint8_t qmm_fp32_to_e8m0(float x) { return qmm__fp32_to_e8m0(x); }
float qmm_e8m0_to_fp32(uint8_t code) { return qmm__e8m0_to_fp32(code); }
