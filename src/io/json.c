/* The bounded JSON parser of json.h, and the text buffer used to write JSON. The parser never reads
 * past text + len, recurses at most QMM__JSON_MAX_DEPTH deep, and checks every size it computes. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "fileutil.h"
#include "json.h"

typedef struct qmm__json_parser {
    const char *fn, *what;
    const unsigned char *s;
    size_t len, pos;
    qmm__json *doc;
    qmm_status status; /* set by the first failure; later failures keep the first message */
} qmm__json_parser;

static bool qmm__json_error(qmm__json_parser *p, const char *reason)
{
    if (p->status == QMM_OK)
        p->status = qmm__fail(QMM_ERR_MALFORMED, "%s: %s: %s at byte %zu", p->fn, p->what, reason, p->pos);
    return false;
}

static bool qmm__json_oom(qmm__json_parser *p)
{
    if (p->status == QMM_OK)
        p->status = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: %s: out of memory parsing %zu bytes", p->fn, p->what, p->len);
    return false;
}

static void qmm__json_skip_ws(qmm__json_parser *p)
{
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

/* Appends a value slot; returns its index or QMM__JSON_NONE on allocation failure. */
static size_t qmm__json_new_value(qmm__json_parser *p, qmm__json_type type)
{
    qmm__json *d = p->doc;
    if (d->count == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        if (cap > (size_t)-1 / sizeof(qmm__json_value)) return QMM__JSON_NONE;
        qmm__json_value *v = realloc(d->v, cap * sizeof *v);
        if (!v) return QMM__JSON_NONE;
        d->v = v;
        d->cap = cap;
    }
    size_t i = d->count++;
    qmm__json_value e = {0};
    e.type = type;
    e.start = p->pos;
    d->v[i] = e;
    return i;
}

/* Length of the UTF-8 sequence at s[0, avail), or 0 when it is not valid (RFC 3629). */
static size_t qmm__utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) lo = 0xa0;      /* no overlongs */
        else if (c == 0xed) hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) lo = 0x90;
        else if (c == 0xf4) hi = 0x8f; /* nothing past U+10FFFF */
    } else return 0;
    if (avail < n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

bool qmm__utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t n = qmm__utf8_seq(u + i, len - i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

static int qmm__hex4(const unsigned char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = s[i];
        int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t qmm__utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string starting at the opening quote. The decoded text is never longer than the literal (an
 * escape of n bytes decodes to at most n bytes), so the arena sized to the text always has room. */
static bool qmm__json_string(qmm__json_parser *p, size_t idx)
{
    qmm__json *d = p->doc;
    p->pos++; /* the quote */
    size_t out = d->arena_len;
    for (;;) {
        if (p->pos >= p->len) return qmm__json_error(p, "unterminated string");
        unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) return qmm__json_error(p, "control character in a string");
        if (c != '\\') {
            size_t n = qmm__utf8_seq(p->s + p->pos, p->len - p->pos);
            if (n == 0) return qmm__json_error(p, "invalid UTF-8 in a string");
            memcpy(d->arena + out, p->s + p->pos, n);
            out += n;
            p->pos += n;
            continue;
        }
        if (p->pos + 1 >= p->len) return qmm__json_error(p, "unterminated escape");
        unsigned char e = p->s[p->pos + 1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e != 'u') {
            if (!simple || e == '\0') return qmm__json_error(p, "invalid escape in a string");
            static const char map[] = "\"\\/\b\f\n\r\t";
            d->arena[out++] = map[simple - "\"\\/bfnrt"];
            p->pos += 2;
            continue;
        }
        if (p->len - p->pos < 6) return qmm__json_error(p, "truncated \\u escape");
        int hi = qmm__hex4(p->s + p->pos + 2);
        if (hi < 0) return qmm__json_error(p, "invalid \\u escape");
        uint32_t cp = (uint32_t)hi;
        size_t used = 6;
        if (hi >= 0xdc00 && hi <= 0xdfff) return qmm__json_error(p, "lone low surrogate in a \\u escape");
        if (hi >= 0xd800 && hi <= 0xdbff) {
            if (p->len - p->pos < 12 || p->s[p->pos + 6] != '\\' || p->s[p->pos + 7] != 'u')
                return qmm__json_error(p, "lone high surrogate in a \\u escape");
            int lo = qmm__hex4(p->s + p->pos + 8);
            if (lo < 0xdc00 || lo > 0xdfff) return qmm__json_error(p, "invalid surrogate pair in a \\u escape");
            cp = 0x10000u + (((uint32_t)hi - 0xd800u) << 10) + ((uint32_t)lo - 0xdc00u);
            used = 12;
        }
        if (cp == 0) return qmm__json_error(p, "U+0000 in a string");
        out += qmm__utf8_encode(cp, d->arena + out);
        p->pos += used;
    }
    d->v[idx].str = d->arena_len;
    d->v[idx].len = out - d->arena_len;
    d->arena[out++] = '\0';
    d->arena_len = out;
    return true;
}

static bool qmm__json_number_syntax(qmm__json_parser *p)
{
    const unsigned char *s = p->s;
    size_t i = p->pos;
#define QMM__DIGIT(j) ((j) < p->len && s[j] >= '0' && s[j] <= '9')
    if (i < p->len && s[i] == '-') i++;
    if (!QMM__DIGIT(i)) return qmm__json_error(p, "invalid number");
    if (s[i] == '0') i++;
    else
        while (QMM__DIGIT(i)) i++;
    if (i < p->len && s[i] == '.') {
        i++;
        if (!QMM__DIGIT(i)) return qmm__json_error(p, "invalid number");
        while (QMM__DIGIT(i)) i++;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-')) i++;
        if (!QMM__DIGIT(i)) return qmm__json_error(p, "invalid number");
        while (QMM__DIGIT(i)) i++;
    }
#undef QMM__DIGIT
    p->pos = i;
    return true;
}

static bool qmm__json_literal(qmm__json_parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) return qmm__json_error(p, "invalid value");
    p->pos += n;
    return true;
}

static bool qmm__json_value_at(qmm__json_parser *p, int depth);

/* An array or object starting at its opening bracket. */
static bool qmm__json_container(qmm__json_parser *p, size_t idx, int depth)
{
    const bool object = p->doc->v[idx].type == QMM__JSON_OBJECT;
    const unsigned char close = object ? '}' : ']';
    size_t count = 0;
    p->pos++;
    qmm__json_skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        p->doc->v[idx].count = 0;
        return true;
    }
    for (;;) {
        qmm__json_skip_ws(p);
        if (object) {
            if (p->pos >= p->len || p->s[p->pos] != '"') return qmm__json_error(p, "expected a string key");
            size_t key = qmm__json_new_value(p, QMM__JSON_STRING);
            if (key == QMM__JSON_NONE) return qmm__json_oom(p);
            if (!qmm__json_string(p, key)) return false;
            p->doc->v[key].end = p->pos;
            p->doc->v[key].next = key + 1;
            qmm__json_skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') return qmm__json_error(p, "expected ':'");
            p->pos++;
        }
        if (!qmm__json_value_at(p, depth + 1)) return false;
        count++;
        qmm__json_skip_ws(p);
        if (p->pos >= p->len) return qmm__json_error(p, object ? "unterminated object" : "unterminated array");
        if (p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->s[p->pos] == close) {
            p->pos++;
            break;
        }
        return qmm__json_error(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    p->doc->v[idx].count = count;
    return true;
}

static bool qmm__json_value_at(qmm__json_parser *p, int depth)
{
    if (depth > QMM__JSON_MAX_DEPTH) return qmm__json_error(p, "nesting deeper than 64");
    qmm__json_skip_ws(p);
    if (p->pos >= p->len) return qmm__json_error(p, "expected a value");
    unsigned char c = p->s[p->pos];
    qmm__json_type type = c == '{'   ? QMM__JSON_OBJECT
                          : c == '[' ? QMM__JSON_ARRAY
                          : c == '"' ? QMM__JSON_STRING
                          : c == 't' ? QMM__JSON_TRUE
                          : c == 'f' ? QMM__JSON_FALSE
                          : c == 'n' ? QMM__JSON_NULL
                                     : QMM__JSON_NUMBER;
    size_t idx = qmm__json_new_value(p, type);
    if (idx == QMM__JSON_NONE) return qmm__json_oom(p);
    bool ok;
    switch (type) {
    case QMM__JSON_OBJECT:
    case QMM__JSON_ARRAY: ok = qmm__json_container(p, idx, depth); break;
    case QMM__JSON_STRING: ok = qmm__json_string(p, idx); break;
    case QMM__JSON_TRUE: ok = qmm__json_literal(p, "true"); break;
    case QMM__JSON_FALSE: ok = qmm__json_literal(p, "false"); break;
    case QMM__JSON_NULL: ok = qmm__json_literal(p, "null"); break;
    default: ok = qmm__json_number_syntax(p); break;
    }
    if (!ok) return false;
    p->doc->v[idx].end = p->pos;
    p->doc->v[idx].next = p->doc->count;
    return true;
}

qmm_status qmm__json_parse(const char *fn, const char *what, const char *text, size_t len, qmm__json *doc)
{
    qmm__json empty = {0};
    *doc = empty;
    qmm__json d = {0};
    if (len == (size_t)-1) return qmm__fail(QMM_ERR_MALFORMED, "%s: %s is too long", fn, what);
    d.arena = malloc(len + 1);
    if (!d.arena) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: %s: cannot allocate %zu bytes", fn, what, len + 1);
    qmm__json_parser p = {fn, what, (const unsigned char *)text, len, 0, &d, QMM_OK};
    bool ok = qmm__json_value_at(&p, 1);
    if (ok) {
        qmm__json_skip_ws(&p);
        if (p.pos != len) ok = qmm__json_error(&p, "unexpected text after the value");
    }
    if (!ok) {
        qmm__json_free(&d);
        return p.status;
    }
    *doc = d;
    return QMM_OK;
}

void qmm__json_free(qmm__json *doc)
{
    if (!doc) return;
    free(doc->v);
    free(doc->arena);
    qmm__json empty = {0};
    *doc = empty;
}

size_t qmm__json_member(const qmm__json *doc, size_t obj, const char *key)
{
    if (obj >= doc->count || doc->v[obj].type != QMM__JSON_OBJECT) return QMM__JSON_NONE;
    size_t i = obj + 1;
    for (size_t m = 0; m < doc->v[obj].count; m++) {
        if (strcmp(qmm__json_str(doc, i), key) == 0) return i + 1;
        i = doc->v[i + 1].next;
    }
    return QMM__JSON_NONE;
}

static int qmm__cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool qmm__json_has_duplicate_key(const qmm__json *doc, size_t obj, const char **dup)
{
    const size_t n = doc->v[obj].count;
    if (n < 2) return false;
    if (n <= 8) { /* the common case (a tensor's entry): no allocation */
        const char *keys[8];
        size_t i = obj + 1;
        for (size_t m = 0; m < n; m++, i = doc->v[i + 1].next) keys[m] = qmm__json_str(doc, i);
        for (size_t a = 0; a < n; a++)
            for (size_t b = a + 1; b < n; b++)
                if (strcmp(keys[a], keys[b]) == 0) {
                    *dup = keys[a];
                    return true;
                }
        return false;
    }
    const char **keys = malloc(n * sizeof *keys);
    if (!keys) { /* fall back to the quadratic scan rather than fail */
        for (size_t a = obj + 1; a < doc->v[obj].next; a = doc->v[a + 1].next)
            for (size_t b = doc->v[a + 1].next; b < doc->v[obj].next; b = doc->v[b + 1].next)
                if (strcmp(qmm__json_str(doc, a), qmm__json_str(doc, b)) == 0) {
                    *dup = qmm__json_str(doc, a);
                    return true;
                }
        return false;
    }
    size_t i = obj + 1;
    for (size_t m = 0; m < n; m++, i = doc->v[i + 1].next) keys[m] = qmm__json_str(doc, i);
    qsort(keys, n, sizeof *keys, qmm__cmp_cstr);
    bool found = false;
    for (size_t m = 1; m < n && !found; m++)
        if (strcmp(keys[m - 1], keys[m]) == 0) {
            *dup = keys[m];
            found = true;
        }
    free(keys);
    return found;
}

bool qmm__json_u64(const qmm__json *doc, const char *text, size_t i, uint64_t *out)
{
    if (i >= doc->count || doc->v[i].type != QMM__JSON_NUMBER) return false;
    uint64_t v = 0;
    for (size_t j = doc->v[i].start; j < doc->v[i].end; j++) {
        char c = text[j];
        if (c < '0' || c > '9') return false;
        uint64_t d = (uint64_t)(c - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

void qmm__buf_put(qmm__buf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (!b->p || n >= b->cap - b->len) { /* room for n bytes and the NUL */
        if (n > (size_t)-1 / 2 - b->len) {
            b->failed = true;
            return;
        }
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len <= n) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void qmm__buf_str(qmm__buf *b, const char *s) { qmm__buf_put(b, s, strlen(s)); }

void qmm__buf_u64(qmm__buf *b, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    qmm__buf_put(b, tmp + i, sizeof tmp - i);
}

void qmm__buf_quote(qmm__buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    qmm__buf_put(b, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        qmm__buf_put(b, run, (size_t)(s - run));
        char esc[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t n = 2;
        if (c == '\n') esc[1] = 'n';
        else if (c == '\t') esc[1] = 't';
        else if (c == '\r') esc[1] = 'r';
        else if (c < 0x20) {
            esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
            n = 6;
        }
        qmm__buf_put(b, esc, n);
        run = s + 1;
    }
    qmm__buf_put(b, run, (size_t)(s - run));
    qmm__buf_put(b, "\"", 1);
}

void qmm__buf_free(qmm__buf *b)
{
    free(b->p);
    qmm__buf e = {0};
    *b = e;
}

qmm_status qmm__json_read_file(const char *fn, const char *path, const char *what, size_t max, char **text, size_t *len,
                               qmm__json *doc)
{
    size_t n = 0;
    *text = NULL;
    qmm_status st = qmm__read_file(fn, path, max, text, &n);
    if (st == QMM_OK) st = qmm__json_parse(fn, what, *text, n, doc);
    if (st != QMM_OK) {
        free(*text);
        *text = NULL;
        return st;
    }
    if (len) *len = n;
    return QMM_OK;
}
