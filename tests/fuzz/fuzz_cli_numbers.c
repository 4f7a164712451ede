/* libFuzzer target for the tool's number parser (tools/parse.c), the part of the command line that
 * turns text into sizes. The input is the text of one option value (up to its first NUL); every parser
 * reads it, and whatever a parser accepts must hold its promise: a value in the range asked for, made
 * of nothing but what the grammar allows; a value it refuses is never written. A broken promise aborts,
 * and the sanitizers catch any read past the text. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    const size_t len = strlen(s);

    uint64_t u = 12345;
    if (tool_parse_uint(s, 1, (uint64_t)1 << 40, &u)) {
        if (u < 1 || u > (uint64_t)1 << 40 || len == 0) abort();
        for (size_t i = 0; i < len; i++)
            if (!isdigit((unsigned char)s[i])) abort();
    } else if (u != 12345) {
        abort();
    }
    double r = 0.25;
    if (tool_parse_real(s, 0, 1e6, &r)) {
        if (!isfinite(r) || r < 0 || r > 1e6 || len == 0) abort();
        for (size_t i = 0; i < len; i++)
            if (!isdigit((unsigned char)s[i]) && !strchr(".eE+-", s[i])) abort();
    } else if (r != 0.25) {
        abort();
    }
    size_t list[8];
    const int count = tool_parse_uint_list(s, 1, 100000, list, 8);
    if (count == 0 || count > 8) abort();
    for (int i = 0; i < count; i++)
        if (list[i] < 1 || list[i] > 100000) abort();
    size_t n = 0, k = 0;
    if (tool_parse_shape(s, (uint64_t)1 << 40, &n, &k) && (n < 1 || k < 1 || n > (size_t)1 << 40 || k > (size_t)1 << 40))
        abort();
    /* the byte count of a command's buffers from what was parsed: never wraps */
    tool_bytes b = {0, false};
    tool_bytes_add(&b, n, k, 2);
    tool_bytes_add(&b, (size_t)u, k, 12);
    tool_bytes_add(&b, (size_t)u, n, 20);
    if (!b.overflow && b.total < n * 2 && k == 1) abort();
    free(s);
    return 0;
}
