/* Helpers shared by the checkpoint commands (quantize, inspect, verify). Public API only. */
#ifndef QMM_TOOLS_IO_COMMON_H
#define QMM_TOOLS_IO_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "qmm_io.h"

/* True when s ends with suffix. */
bool tool_ends_with(const char *s, const char *suffix);

/* A malloc'd copy of s without its last `cut` bytes; NULL when out of memory. */
char *tool_strip(const char *s, size_t cut);

/* The tensor as fp32 (F32, F16 or BF16; the bytes need no alignment) into a malloc'd array of
 * v->elements floats; NULL for other dtypes or when out of memory. */
float *tool_view_floats(const qmm_tensor_view *v);

/* "(4096, 14336)" into buf. */
const char *tool_shape_text(const qmm_tensor_view *v, char *buf, size_t cap);

/* "1.23 GB" style sizes (decimal units) into buf. */
const char *tool_bytes_text(double bytes, char *buf, size_t cap);

/* Progress on stderr ("WHAT [done/total] NAME", the name escaped), one line rewritten in place, only
 * when stderr is a terminal. done >= total clears the line. */
void tool_progress(const char *what, size_t done, size_t total, const char *name);

/* The module name of a tensor that is part of a quantized weight, and the part: ".weight",
 * ".weight_scale", ".weight_scale_2", ".input_scale", "_blocks" or "_scales". NULL when the name has
 * none of these suffixes; *module is malloc'd otherwise. */
const char *tool_weight_part(const char *name, char **module);

#endif
