/* The safetensors reader and writer: malformed input of every kind gives QMM_ERR_MALFORMED (or its own
 * status) with a message and nothing written; the writer's files round-trip, are 8-byte aligned and
 * carry __metadata__; sharded checkpoints open through their index. */
#include "io_harness.h"

#define SENTINEL ((qmm_safetensors *)(uintptr_t)0x1234)

/* Opening these bytes must fail with `expected` and leave *out alone. */
static void expect_bad(const char *what, const unsigned char *bytes, size_t size, qmm_status expected)
{
    qmm_safetensors *f = SENTINEL;
    qmm_status st = qmm_safetensors_open_memory(bytes, size, &f);
    CHECK(st == expected, "%s: status %d (%s), expected %d", what, (int)st, qmm_last_error(), (int)expected);
    CHECK(f == SENTINEL, "%s: out was written on failure", what);
    CHECK(st == QMM_OK || strlen(qmm_last_error()) > 0, "%s: no message", what);
    if (getenv("QMM_TEST_VERBOSE")) printf("  %-32s -> %s\n", what, qmm_last_error());
    if (st == QMM_OK && f != SENTINEL) qmm_safetensors_close(f);
}

static void expect_bad_header(const char *what, const char *header, size_t data_len)
{
    size_t size;
    unsigned char *b = io_file_bytes(header, data_len, &size);
    expect_bad(what, b, size, QMM_ERR_MALFORMED);
    free(b);
}

static qmm_safetensors *expect_good(const char *what, const char *header, size_t data_len)
{
    size_t size;
    unsigned char *b = io_file_bytes(header, data_len, &size);
    qmm_safetensors *f = NULL;
    CHECK_STATUS(qmm_safetensors_open_memory(b, size, &f), QMM_OK);
    free(b);
    if (!f) fprintf(stderr, "  (%s)\n", what);
    return f;
}

static void test_malformed(void)
{
    unsigned char tiny[7] = {1, 0, 0, 0, 0, 0, 0};
    expect_bad("truncated below 8 bytes", tiny, sizeof tiny, QMM_ERR_MALFORMED);
    unsigned char eight[8] = {0};
    expect_bad("zero header length", eight, 8, QMM_ERR_MALFORMED);
    /* header length past the end */
    size_t size;
    unsigned char *b = io_file_bytes("{}", 0, &size);
    b[0] = 3;
    expect_bad("header length past the end", b, size, QMM_ERR_MALFORMED);
    b[0] = 2;
    b[5] = 0x10; /* 2^44 + 2 */
    expect_bad("header length of 2^44", b, size, QMM_ERR_MALFORMED);
    free(b);
    /* a huge header: over the 100 MB limit, with the bytes actually there */
    const size_t big = QMM_SAFETENSORS_MAX_HEADER + 8;
    unsigned char *huge = malloc(8 + big);
    if (huge) {
        memset(huge + 8, ' ', big);
        huge[8] = '{';
        huge[8 + big - 1] = '}';
        for (int i = 0; i < 8; i++) huge[i] = (unsigned char)((uint64_t)big >> (8 * i));
        expect_bad("header over the limit", huge, 8 + big, QMM_ERR_MALFORMED);
        free(huge);
    }
    expect_bad("NULL bytes", NULL, 10, QMM_ERR_NULL_POINTER);

    /* bad JSON */
    expect_bad_header("does not start with {", " {}", 0);
    expect_bad_header("array root", "[]", 0);
    expect_bad_header("unterminated object", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}", 1);
    expect_bad_header("trailing comma", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},}", 1);
    expect_bad_header("garbage after the object", "{} x", 0);
    expect_bad_header("two objects", "{}{}", 0);
    expect_bad_header("bad escape", "{\"a\\q\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("lone surrogate", "{\"\\ud800\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("escaped NUL in a name", "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("invalid UTF-8", "{\"\xc3\x28\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("overlong UTF-8", "{\"\xc0\xaf\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("control character", "{\"a\tb\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("bad literal", "{\"__metadata__\":nul}", 0);
    expect_bad_header("bad number", "{\"a\":{\"dtype\":\"U8\",\"shape\":[01],\"data_offsets\":[0,1]}}", 1);
    char deep[400];
    size_t pos = 0;
    pos += (size_t)sprintf(deep, "{\"__metadata__\":");
    for (int i = 0; i < 100; i++) deep[pos++] = '[';
    for (int i = 0; i < 100; i++) deep[pos++] = ']';
    deep[pos++] = '}';
    deep[pos] = 0;
    expect_bad_header("nesting 100 deep", deep, 0);

    /* entries */
    expect_bad_header("duplicate names", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                                         "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2);
    expect_bad_header("duplicate field", "{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("unknown dtype", "{\"a\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("dtype not a string", "{\"a\":{\"dtype\":8,\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("missing shape", "{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("missing offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1);
    expect_bad_header("entry not an object", "{\"a\":[1,2]}", 0);
    expect_bad_header("negative extent", "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("fractional extent", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1.0],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("extent past 2^64", "{\"a\":{\"dtype\":\"U8\",\"shape\":[18446744073709551616],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("three offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,1]}}", 1);
    expect_bad_header("reversed offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[1,0]}}", 1);
    expect_bad_header("offsets out of range", "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 2);
    expect_bad_header("offsets far out of range",
                      "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[18446744073709551614,18446744073709551615]}}", 1);
    expect_bad_header("size mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4);
    expect_bad_header("shape overflow", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}", 4);
    expect_bad_header("F4 not filling a byte", "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("F6 not filling a byte", "{\"a\":{\"dtype\":\"F6_E2M3\",\"shape\":[2],\"data_offsets\":[0,1]}}", 1);
    expect_bad_header("overlap", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                                 "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}", 3);
    expect_bad_header("gap", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                             "\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]}}", 3);
    expect_bad_header("data left over", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 2);
    expect_bad_header("data without tensors", "{}", 1);
    expect_bad_header("metadata not an object", "{\"__metadata__\":[\"a\"]}", 0);
    expect_bad_header("metadata value not a string", "{\"__metadata__\":{\"a\":1}}", 0);
    expect_bad_header("metadata key twice", "{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}", 0);
    expect_bad_header("metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 0);
}

static void test_valid_edge_cases(void)
{
    qmm_safetensors *f = expect_good("empty", "{}", 0);
    CHECK(f && qmm_safetensors_tensor_count(f) == 0, "no tensors");
    qmm_safetensors_close(f);
    f = expect_good("padding and unknown keys",
                    "{\"__metadata__\":null,\"b\":{\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[1,4],\"x\":[{}]},"
                    "\"a\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[0,1]},"
                    "\"z\":{\"dtype\":\"F32\",\"shape\":[0,7],\"data_offsets\":[4,4]},"
                    "\"\\u00e9\\ud83d\\ude00\":{\"dtype\":\"F6_E3M2\",\"shape\":[4],\"data_offsets\":[4,7]}}   \n\t ",
                    7);
    if (f) {
        CHECK(qmm_safetensors_tensor_count(f) == 4, "four tensors");
        qmm_tensor_view v;
        CHECK_OK(qmm_safetensors_tensor_at(f, 0, &v));
        CHECK(strcmp(v.name, "a") == 0 && v.ndim == 0 && v.elements == 1 && v.bytes == 1 && v.dtype == QMM_ST_BOOL,
              "scalar first (file order)");
        CHECK(*(const unsigned char *)v.data == 0, "scalar data");
        CHECK_OK(qmm_safetensors_tensor_find(f, "b", &v));
        CHECK(v.dtype == QMM_ST_F4 && v.ndim == 2 && v.shape[1] == 3 && v.bytes == 3 && ((const unsigned char *)v.data)[0] == 1,
              "F4 tensor");
        CHECK_OK(qmm_safetensors_tensor_find(f, "z", &v));
        CHECK(v.elements == 0 && v.bytes == 0 && v.data != NULL, "empty tensor");
        CHECK_OK(qmm_safetensors_tensor_find(f, "\xc3\xa9\xf0\x9f\x98\x80", &v));
        CHECK(v.dtype == QMM_ST_F6_E3M2 && v.bytes == 3, "escaped UTF-8 name decoded");
        CHECK_STATUS(qmm_safetensors_tensor_find(f, "nope", &v), QMM_ERR_NOT_FOUND);
        CHECK_STATUS(qmm_safetensors_tensor_at(f, 4, &v), QMM_ERR_INVALID_ARGUMENT);
        CHECK(qmm_safetensors_metadata_count(f, 0) == 0, "null metadata");
        const char *value;
        CHECK_STATUS(qmm_safetensors_metadata_find(f, "x", &value), QMM_ERR_NOT_FOUND);
        CHECK(qmm_safetensors_shard_count(f) == 1 && strcmp(qmm_safetensors_shard_name(f, 0), "") == 0, "memory shard");
        CHECK(qmm_safetensors_shard_name(f, 1) == NULL, "shard out of range");
    }
    qmm_safetensors_close(f);
    qmm_safetensors_close(NULL);
    CHECK(qmm_safetensors_tensor_count(NULL) == 0, "count of NULL");
}

static void test_dtypes(void)
{
    static const char *const names[] = {"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F16", "BF16",
                                        "F32", "F64", "C64", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
                                        "F8_E5M2FNUZ", "F4", "F6_E2M3", "F6_E3M2"};
    static const int bits[] = {8, 8, 8, 16, 16, 32, 32, 64, 64, 16, 16, 32, 64, 64, 8, 8, 8, 8, 8, 4, 6, 6};
    for (int i = 0; i < 22; i++) {
        qmm_st_dtype d;
        CHECK_OK(qmm_st_dtype_from_name(names[i], &d));
        CHECK((int)d == i + 1 && strcmp(qmm_st_dtype_name(d), names[i]) == 0 && qmm_st_dtype_bits(d) == bits[i],
              "dtype %s", names[i]);
    }
    qmm_st_dtype d;
    CHECK_STATUS(qmm_st_dtype_from_name("bf16", &d), QMM_ERR_NOT_FOUND);
    CHECK(qmm_st_dtype_name((qmm_st_dtype)0) == NULL && qmm_st_dtype_bits((qmm_st_dtype)23) == 0, "unknown dtype");
}

static void test_writer_round_trip(void)
{
    const char *path = io_path("round.safetensors");
    qmm_safetensors_writer *w = NULL;
    CHECK_OK(qmm_safetensors_writer_create(path, 0, &w));
    if (!w) return;
    CHECK_OK(qmm_safetensors_writer_set_metadata(w, "format", "pt"));
    CHECK_OK(qmm_safetensors_writer_set_metadata(w, "quote \"and\" \\ newline\n", "\xe2\x82\xac"));
    CHECK_STATUS(qmm_safetensors_writer_set_metadata(w, "format", "np"), QMM_ERR_INVALID_ARGUMENT);
    float f32[6];
    for (int i = 0; i < 6; i++) f32[i] = (float)harness_normal();
    uint16_t bf16[5] = {0x3f80, 0xbf80, 0x7f80, 0x0001, 0x8000};
    uint8_t f4[3] = {0x12, 0x34, 0x56};
    int64_t i64 = -5;
    const size_t s23[2] = {2, 3}, s5[1] = {5}, s6[1] = {6}, s0[2] = {0, 9};
    CHECK_OK(qmm_safetensors_writer_add(w, "x.f32", QMM_ST_F32, 2, s23, f32, sizeof f32));
    CHECK_OK(qmm_safetensors_writer_add(w, "y.bf16", QMM_ST_BF16, 1, s5, bf16, sizeof bf16));
    CHECK_OK(qmm_safetensors_writer_add(w, "z.f4", QMM_ST_F4, 1, s6, f4, 3));
    CHECK_OK(qmm_safetensors_writer_add(w, "scalar", QMM_ST_I64, 0, NULL, &i64, 8));
    CHECK_OK(qmm_safetensors_writer_add(w, "empty", QMM_ST_F16, 2, s0, NULL, 0));
    /* writer errors leave it usable */
    CHECK_STATUS(qmm_safetensors_writer_add(w, "x.f32", QMM_ST_F32, 2, s23, f32, sizeof f32), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_safetensors_writer_add(w, "bad", QMM_ST_F32, 2, s23, f32, 20), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_safetensors_writer_add(w, "odd.f4", QMM_ST_F4, 1, s5, f4, 3), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_safetensors_writer_add(w, "__metadata__", QMM_ST_U8, 1, s5, f4, 5), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_safetensors_writer_add(w, "", QMM_ST_U8, 0, NULL, f4, 1), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_safetensors_writer_add(w, "\xff", QMM_ST_U8, 0, NULL, f4, 1), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_safetensors_writer_add(w, "e", (qmm_st_dtype)99, 0, NULL, f4, 1), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_safetensors_writer_add(w, "n", QMM_ST_U8, 1, NULL, f4, 1), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_safetensors_writer_add(w, "n", QMM_ST_U8, 1, s5, NULL, 5), QMM_ERR_NULL_POINTER);
    const size_t huge[3] = {SIZE_MAX / 2, 4, 4};
    CHECK_STATUS(qmm_safetensors_writer_add(w, "huge", QMM_ST_U8, 3, huge, f4, 1), QMM_ERR_SIZE_OVERFLOW);
    CHECK(access(path, F_OK) != 0, "nothing at the path before finish");
    CHECK_OK(qmm_safetensors_writer_finish(w));

    size_t size;
    unsigned char *bytes = io_read(path, &size);
    CHECK(bytes != NULL, "file written");
    if (!bytes) return;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | bytes[i];
    CHECK((8 + n) % 8 == 0, "data area starts 8-byte aligned (header %llu bytes)", (unsigned long long)n);
    CHECK(bytes[8] == '{' && (bytes[8 + n - 1] == ' ' || bytes[8 + n - 1] == '}'), "header padded with spaces");
    CHECK(memcmp(bytes + 8, "{\"__metadata__\":{", 17) == 0, "__metadata__ first");
    free(bytes);
    qmm_safetensors *f = NULL;
    CHECK_OK(qmm_safetensors_open(path, &f));
    if (!f) return;
    CHECK(qmm_safetensors_tensor_count(f) == 5, "five tensors");
    const char *value;
    CHECK_OK(qmm_safetensors_metadata_find(f, "format", &value));
    CHECK(strcmp(value, "pt") == 0, "metadata format");
    CHECK_OK(qmm_safetensors_metadata_find(f, "quote \"and\" \\ newline\n", &value));
    CHECK(strcmp(value, "\xe2\x82\xac") == 0, "escaped metadata round trip");
    const char *key;
    CHECK_OK(qmm_safetensors_metadata_at(f, 0, 1, &key, &value));
    CHECK(strcmp(key, "quote \"and\" \\ newline\n") == 0, "metadata order");
    CHECK_STATUS(qmm_safetensors_metadata_at(f, 0, 2, &key, &value), QMM_ERR_INVALID_ARGUMENT);
    static const char *const order[] = {"x.f32", "y.bf16", "z.f4", "scalar", "empty"};
    for (size_t i = 0; i < 5; i++) {
        qmm_tensor_view v;
        CHECK_OK(qmm_safetensors_tensor_at(f, i, &v));
        CHECK(strcmp(v.name, order[i]) == 0, "tensor %zu is %s, expected %s (order added)", i, v.name, order[i]);
    }
    qmm_tensor_view v;
    CHECK_OK(qmm_safetensors_tensor_find(f, "x.f32", &v));
    CHECK(v.dtype == QMM_ST_F32 && v.ndim == 2 && v.shape[0] == 2 && v.shape[1] == 3 && memcmp(v.data, f32, 24) == 0, "f32");
    CHECK(((uintptr_t)v.data) % 8 == 0, "first tensor 8-byte aligned in the map");
    CHECK_OK(qmm_safetensors_tensor_find(f, "y.bf16", &v));
    CHECK(v.dtype == QMM_ST_BF16 && memcmp(v.data, bf16, 10) == 0, "bf16");
    CHECK_OK(qmm_safetensors_tensor_find(f, "z.f4", &v));
    CHECK(v.dtype == QMM_ST_F4 && v.elements == 6 && memcmp(v.data, f4, 3) == 0, "f4");
    CHECK_OK(qmm_safetensors_tensor_find(f, "scalar", &v));
    CHECK(v.ndim == 0 && memcmp(v.data, &i64, 8) == 0, "scalar");
    CHECK_OK(qmm_safetensors_tensor_find(f, "empty", &v));
    CHECK(v.bytes == 0 && v.shape[1] == 9, "empty");
    qmm_safetensors_close(f);

    /* refuse to overwrite, then overwrite */
    CHECK_STATUS(qmm_safetensors_writer_create(path, 0, &w), QMM_ERR_EXISTS);
    CHECK_STATUS(qmm_safetensors_writer_create(path, 8, &w), QMM_ERR_INVALID_ARGUMENT);
    CHECK_OK(qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w));
    CHECK_OK(qmm_safetensors_writer_finish(w));
    CHECK_OK(qmm_safetensors_open(path, &f));
    CHECK(f && qmm_safetensors_tensor_count(f) == 0, "overwritten with an empty file");
    qmm_safetensors_close(f);
    /* a file that appears while writing is not replaced */
    const char *late = io_path("late.safetensors");
    CHECK_OK(qmm_safetensors_writer_create(late, 0, &w));
    io_write(late, "x", 1);
    CHECK_STATUS(qmm_safetensors_writer_finish(w), QMM_ERR_EXISTS);
    size_t late_size;
    unsigned char *late_bytes = io_read(late, &late_size);
    CHECK(late_size == 1, "the other file is kept");
    free(late_bytes);
    /* discard leaves nothing behind */
    const int before = io_count_entries(io_dir);
    CHECK_OK(qmm_safetensors_writer_create(io_path("discarded.safetensors"), 0, &w));
    CHECK_OK(qmm_safetensors_writer_add(w, "x", QMM_ST_F32, 2, s23, f32, sizeof f32));
    qmm_safetensors_writer_discard(w);
    qmm_safetensors_writer_discard(NULL);
    CHECK(io_count_entries(io_dir) == before, "no temporary file left (%d entries, %d before)", io_count_entries(io_dir), before);
    CHECK_STATUS(qmm_safetensors_writer_create(io_path("no/such/dir.safetensors"), 0, &w), QMM_ERR_IO);
}

static void write_small(const char *path, const char *const *names, size_t count, uint8_t first)
{
    qmm_safetensors_writer *w;
    CHECK_OK(qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w));
    for (size_t i = 0; i < count; i++) {
        uint8_t data[3] = {first, (uint8_t)(first + i), 7};
        const size_t shape[1] = {3};
        CHECK_OK(qmm_safetensors_writer_add(w, names[i], QMM_ST_U8, 1, shape, data, 3));
    }
    CHECK_OK(qmm_safetensors_writer_finish(w));
}

static void expect_bad_index(const char *what, const char *json, qmm_status expected)
{
    io_write(io_path("bad.index.json"), json, strlen(json));
    qmm_safetensors *f = SENTINEL;
    qmm_status st = qmm_safetensors_open(io_path("bad.index.json"), &f);
    CHECK(st == expected && f == SENTINEL, "%s: status %d (%s), expected %d", what, (int)st, qmm_last_error(), (int)expected);
}

static void test_sharded(void)
{
    mkdir(io_path("sharded"), 0755);
    char p1[512], p2[512], idx[512];
    snprintf(p1, sizeof p1, "%s/sharded/model-00001-of-00002.safetensors", io_dir);
    snprintf(p2, sizeof p2, "%s/sharded/model-00002-of-00002.safetensors", io_dir);
    snprintf(idx, sizeof idx, "%s/sharded/model.safetensors.index.json", io_dir);
    static const char *const a[] = {"layers.0.w", "layers.0.b"}, *const b[] = {"layers.1.w"};
    write_small(p1, a, 2, 10);
    write_small(p2, b, 1, 20);
    const char *tn[3] = {"layers.1.w", "layers.0.w", "layers.0.b"};
    const char *sn[3] = {"model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors",
                         "model-00001-of-00002.safetensors"};
    CHECK_OK(qmm_safetensors_index_write(idx, tn, sn, 3, 9, 0));
    CHECK_STATUS(qmm_safetensors_index_write(idx, tn, sn, 3, 9, 0), QMM_ERR_EXISTS);
    const char *dup[2] = {"x", "x"}, *bad_shard[1] = {"../evil.safetensors"};
    CHECK_STATUS(qmm_safetensors_index_write(io_path("i2.json"), dup, sn, 2, 0, 0), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_safetensors_index_write(io_path("i2.json"), tn, bad_shard, 1, 0, 0), QMM_ERR_INVALID_ARGUMENT);
    for (int how = 0; how < 2; how++) {
        qmm_safetensors *f = NULL;
        char dir[512];
        snprintf(dir, sizeof dir, "%s/sharded", io_dir);
        CHECK_OK(qmm_safetensors_open(how ? idx : dir, &f));
        if (!f) continue;
        CHECK(qmm_safetensors_shard_count(f) == 2 && qmm_safetensors_tensor_count(f) == 3, "two shards, three tensors");
        CHECK(strcmp(qmm_safetensors_shard_name(f, 0), "model-00001-of-00002.safetensors") == 0, "shard order");
        qmm_tensor_view v;
        CHECK_OK(qmm_safetensors_tensor_find(f, "layers.1.w", &v));
        CHECK(v.shard == 1 && ((const uint8_t *)v.data)[0] == 20, "tensor of shard 2");
        CHECK_OK(qmm_safetensors_tensor_find(f, "layers.0.b", &v));
        CHECK(v.shard == 0 && ((const uint8_t *)v.data)[1] == 11, "tensor of shard 1");
        CHECK_OK(qmm_safetensors_tensor_at(f, 2, &v));
        CHECK(strcmp(v.name, "layers.1.w") == 0, "file order: by shard");
        qmm_safetensors_close(f);
    }
    /* malformed indexes, resolved in the scratch folder */
    write_small(io_path("s1.safetensors"), a, 2, 1);
    write_small(io_path("s2.safetensors"), a, 1, 1);
    expect_bad_index("no weight_map", "{\"metadata\":{}}", QMM_ERR_MALFORMED);
    expect_bad_index("weight_map not an object", "{\"weight_map\":[]}", QMM_ERR_MALFORMED);
    expect_bad_index("bad JSON", "{\"weight_map\":{", QMM_ERR_MALFORMED);
    expect_bad_index("shard with a slash", "{\"weight_map\":{\"layers.0.w\":\"sharded/model-00001-of-00002.safetensors\"}}",
                     QMM_ERR_MALFORMED);
    expect_bad_index("shard with ..", "{\"weight_map\":{\"layers.0.w\":\"..\"}}", QMM_ERR_MALFORMED);
    expect_bad_index("shard not a string", "{\"weight_map\":{\"layers.0.w\":1}}", QMM_ERR_MALFORMED);
    expect_bad_index("tensor missing from the map", "{\"weight_map\":{\"layers.0.w\":\"s1.safetensors\"}}", QMM_ERR_MALFORMED);
    expect_bad_index("tensor in the wrong shard",
                     "{\"weight_map\":{\"layers.0.w\":\"s1.safetensors\",\"layers.0.b\":\"s2.safetensors\"}}",
                     QMM_ERR_MALFORMED);
    expect_bad_index("tensor in two shards",
                     "{\"weight_map\":{\"layers.0.w\":\"s1.safetensors\",\"layers.0.b\":\"s1.safetensors\","
                     "\"x\":\"s2.safetensors\"}}",
                     QMM_ERR_MALFORMED);
    expect_bad_index("mapped twice",
                     "{\"weight_map\":{\"layers.0.w\":\"s1.safetensors\",\"layers.0.w\":\"s1.safetensors\"}}",
                     QMM_ERR_MALFORMED);
    expect_bad_index("missing shard file", "{\"weight_map\":{\"layers.0.w\":\"nothere.safetensors\"}}", QMM_ERR_NOT_FOUND);
    expect_bad_index("shard is malformed", "{\"weight_map\":{\"x\":\"bad.index.json\"}}", QMM_ERR_MALFORMED);
}

static void test_files(void)
{
    qmm_safetensors *f = SENTINEL;
    CHECK_STATUS(qmm_safetensors_open(io_path("missing.safetensors"), &f), QMM_ERR_NOT_FOUND);
    CHECK_STATUS(qmm_safetensors_open(NULL, &f), QMM_ERR_NULL_POINTER);
    mkdir(io_path("emptydir"), 0755);
    CHECK_STATUS(qmm_safetensors_open(io_path("emptydir"), &f), QMM_ERR_NOT_FOUND);
    io_write(io_path("short.safetensors"), "abc", 3);
    CHECK_STATUS(qmm_safetensors_open(io_path("short.safetensors"), &f), QMM_ERR_MALFORMED);
    io_write(io_path("empty.safetensors"), "", 0);
    CHECK_STATUS(qmm_safetensors_open(io_path("empty.safetensors"), &f), QMM_ERR_MALFORMED);
    /* a truncated real file */
    size_t size;
    unsigned char *b = io_file_bytes("{\"a\":{\"dtype\":\"U8\",\"shape\":[64],\"data_offsets\":[0,64]}}", 64, &size);
    io_write(io_path("cut.safetensors"), b, size - 1);
    CHECK_STATUS(qmm_safetensors_open(io_path("cut.safetensors"), &f), QMM_ERR_MALFORMED);
    CHECK(f == SENTINEL, "nothing written on failure");
    /* a folder holding model.safetensors */
    mkdir(io_path("single"), 0755);
    char p[600];
    snprintf(p, sizeof p, "%s/single/model.safetensors", io_dir);
    io_write(p, b, size);
    CHECK_OK(qmm_safetensors_open(io_path("single"), &f));
    if (f != SENTINEL) {
        CHECK(qmm_safetensors_tensor_count(f) == 1 && strcmp(qmm_safetensors_shard_name(f, 0), "model.safetensors") == 0,
              "folder with model.safetensors");
        qmm_safetensors_close(f);
    }
    free(b);
    /* not regular files: refused at once, a FIFO's open does not wait for a writer */
    f = SENTINEL;
    CHECK(mkfifo(io_path("fifo.safetensors"), 0644) == 0, "mkfifo");
    CHECK_STATUS(qmm_safetensors_open(io_path("fifo.safetensors"), &f), QMM_ERR_IO);
    CHECK_STATUS(qmm_safetensors_open("/dev/null", &f), QMM_ERR_IO);
    mkdir(io_path("fifodir"), 0755);
    snprintf(p, sizeof p, "%s/fifodir/model.safetensors", io_dir);
    CHECK(mkfifo(p, 0644) == 0, "mkfifo");
    CHECK_STATUS(qmm_safetensors_open(io_path("fifodir"), &f), QMM_ERR_IO);
    CHECK(f == SENTINEL, "nothing written on failure");
}

/* Messages and qmm_text_escape(): nothing a terminal acts on gets through. */
static void test_escaped_text(void)
{
    qmm_safetensors *f = SENTINEL;
    CHECK_STATUS(qmm_safetensors_open(io_path("no\x1b[2Jsuch\a\xc2\x9b.safetensors"), &f), QMM_ERR_NOT_FOUND);
    const char *e = qmm_last_error();
    CHECK(strstr(e, "no\\x1b[2Jsuch\\x07\\u009b.safetensors") != NULL, "the name escaped in the message: %s", e);
    for (const unsigned char *c = (const unsigned char *)e; *c; c++) CHECK(*c >= 0x20 && *c != 0x7f, "byte 0x%02x", *c);
    static const struct { const char *in, *out; } cases[] = {
        {"plain", "plain"},
        {"tab\there", "tab\\x09here"},
        {"\x7f", "\\x7f"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"}, /* UTF-8 kept */
        {"\xc2\x85\xc2\x9f\xc2\xa0", "\\u0085\\u009f\xc2\xa0"},   /* C1 controls escaped, U+00A0 kept */
        {"\x9b\xff\xc0\xaf", "\\x9b\\xff\\xc0\\xaf"},            /* bytes that are not UTF-8 */
        {"\xe0\x80\xaf\xed\xa0\x80", "\\xe0\\x80\\xaf\\xed\\xa0\\x80"}, /* overlong, surrogate */
        {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},              /* past U+10FFFF */
        {"cut\xe2\x82", "cut\\xe2\\x82"},                              /* a sequence cut short */
    };
    char buf[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(strcmp(qmm_text_escape(cases[i].in, buf, sizeof buf), cases[i].out) == 0, "case %zu: '%s'", i, buf);
    CHECK(strcmp(qmm_text_escape(NULL, buf, sizeof buf), "(null)") == 0, "NULL text");
    CHECK(strcmp(qmm_text_escape("abc", NULL, 4), "") == 0 && strcmp(qmm_text_escape("abc", buf, 0), "") == 0, "no room");
    /* cut between characters, never inside an escape or a UTF-8 sequence */
    CHECK(strcmp(qmm_text_escape("ab\x1b", buf, 6), "ab") == 0, "an escape that does not fit: '%s'", buf);
    CHECK(strcmp(qmm_text_escape("a\xe2\x82\xac", buf, 4), "a") == 0, "a character that does not fit: '%s'", buf);
}

int main(void)
{
    harness_begin("test_safetensors");
    io_make_dir();
    test_dtypes();
    test_malformed();
    test_valid_edge_cases();
    test_writer_round_trip();
    test_sharded();
    test_files();
    test_escaped_text();
    io_remove_tree(io_dir);
    return harness_end("test_safetensors");
}
