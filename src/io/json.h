/* A small, bounded JSON parser for safetensors headers, shard indexes and model config files.
 *
 * The document is parsed into a flat array of values in document order (like jsmn): a container's
 * children follow it, and every value records the index just past its subtree, so siblings are walked
 * without recursion. An object's children alternate key (a string) and value. Strings are decoded
 * (escapes, surrogate pairs) into one arena, NUL-terminated. Limits: nesting depth QMM__JSON_MAX_DEPTH,
 * valid UTF-8 only, no U+0000 inside strings (names must be C strings), numbers per RFC 8259. */
#ifndef QMM_IO_JSON_H
#define QMM_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

#define QMM__JSON_MAX_DEPTH 64
#define QMM__JSON_NONE ((size_t)-1)

typedef enum qmm__json_type {
    QMM__JSON_NULL,
    QMM__JSON_FALSE,
    QMM__JSON_TRUE,
    QMM__JSON_NUMBER,
    QMM__JSON_STRING,
    QMM__JSON_ARRAY,
    QMM__JSON_OBJECT
} qmm__json_type;

typedef struct qmm__json_value {
    qmm__json_type type;
    size_t next;   /* index just past this value's subtree: the next sibling, if any */
    size_t count;  /* ARRAY: elements; OBJECT: members */
    size_t start;  /* byte span of the value in the text: [start, end) */
    size_t end;
    size_t str;    /* STRING: offset of the decoded text in the arena */
    size_t len;    /* STRING: decoded length in bytes */
} qmm__json_value;

typedef struct qmm__json {
    qmm__json_value *v; /* v[0] is the root */
    size_t count, cap;
    char *arena;        /* decoded strings, each NUL-terminated */
    size_t arena_len;
} qmm__json;

/* Parses text[0, len) as one JSON value surrounded by optional whitespace. On failure *doc is empty
 * and the status is QMM_ERR_MALFORMED ("<fn>: <what>: <reason> at byte <offset>") or
 * QMM_ERR_OUT_OF_MEMORY. `what` names the text in messages ("safetensors header"). */
qmm_status qmm__json_parse(const char *fn, const char *what, const char *text, size_t len, qmm__json *doc);

void qmm__json_free(qmm__json *doc);

/* Reads the file at path (at most max bytes, as qmm__read_file) and parses it (`what` names it in
 * messages). On success *text (malloc'd, NUL-terminated; the values' spans point into it), *len (when
 * len is not NULL) and *doc are the caller's, to free with free() and qmm__json_free(); on failure
 * nothing is left to free. */
qmm_status qmm__json_read_file(const char *fn, const char *path, const char *what, size_t max, char **text, size_t *len,
                               qmm__json *doc);

/* The decoded text of string value i. */
static inline const char *qmm__json_str(const qmm__json *doc, size_t i) { return doc->arena + doc->v[i].str; }

/* The index of the value of member `key` of object i, or QMM__JSON_NONE. */
size_t qmm__json_member(const qmm__json *doc, size_t obj, const char *key);

/* True when object i has two members with the same key; *dup then names one of them. */
bool qmm__json_has_duplicate_key(const qmm__json *doc, size_t obj, const char **dup);

/* Value i as an unsigned integer: only digits (no sign, fraction or exponent) and at most 2^64 - 1. */
bool qmm__json_u64(const qmm__json *doc, const char *text, size_t i, uint64_t *out);

/* True when s[0, len) is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
bool qmm__utf8_valid(const char *s, size_t len);

/* A growing text buffer for writing JSON. After an allocation failure `failed` is set and further
 * appends do nothing, so a writer checks once at the end. */
typedef struct qmm__buf {
    char *p;
    size_t len, cap;
    bool failed;
} qmm__buf;

void qmm__buf_put(qmm__buf *b, const char *s, size_t n);
void qmm__buf_str(qmm__buf *b, const char *s);
void qmm__buf_u64(qmm__buf *b, uint64_t v);
/* Appends s (NUL-terminated, valid UTF-8) as a JSON string literal: quotes, and escapes for '"', '\\'
 * and control characters. */
void qmm__buf_quote(qmm__buf *b, const char *s);
void qmm__buf_free(qmm__buf *b);

#endif
