/* The tool's one parser of command-line numbers and its checks on the sizes they imply. Every number
 * goes through here: the whole text is consumed, no sign where none is allowed, no spaces, hex, "inf"
 * or "nan", a range per option, and overflow-checked products for the buffers a command allocates. */
#ifndef QMM_TOOLS_PARSE_H
#define QMM_TOOLS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A decimal integer in [min, max]: one or more digits and nothing else. */
bool tool_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* tool_parse_uint() into a size_t or an int. */
bool tool_parse_size(const char *s, size_t min, size_t max, size_t *out);
bool tool_parse_int(const char *s, int min, int max, int *out);

/* A finite decimal number in [min, max]: digits with an optional fraction and exponent ("0.5", "1e-3",
 * "2.5E+2"); a leading '-' only where min < 0. */
bool tool_parse_real(const char *s, double min, double max, double *out);

/* "a,b,c": one to cap integers in [min, max], each as tool_parse_uint; returns the count, or -1. */
int tool_parse_uint_list(const char *s, uint64_t min, uint64_t max, size_t *out, int cap);

/* "N:K" with N and K in [1, max]. */
bool tool_parse_shape(const char *s, uint64_t max, size_t *n, size_t *k);

/* The bytes a command is about to allocate: terms added as overflow-checked products. */
typedef struct tool_bytes {
    size_t total;
    bool overflow;
} tool_bytes;

/* Adds a * b * c bytes (pass 1 for unused factors). */
void tool_bytes_add(tool_bytes *b, size_t a, size_t b2, size_t c);

/* True when the total fits in the machine's memory; otherwise prints "qmm CMD: ... needs X bytes"
 * to stderr and returns false. */
bool tool_bytes_fit(const char *cmd, const tool_bytes *b);

/* Options given so far in one command line, so that an option given twice is a usage error. */
typedef struct tool_seen {
    const char *names[32];
    int count;
} tool_seen;

/* True the first time opt is seen; false, with "qmm CMD: OPT given twice" on stderr, after that. */
bool tool_first_time(tool_seen *s, const char *cmd, const char *opt);

#endif
