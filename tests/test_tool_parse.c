/* The tool's number parser (tools/parse.c) on a table of hostile values, random round trips, and the
 * overflow-checked byte counts of the commands' buffers. */
#include <float.h>

#include "../tools/parse.h"
#include "harness.h"

static void test_uint(void)
{
    static const char *const bad[] = {"", " ", "-1", "+1", " 1", "1 ", "1\n", "0x10", "010x", "1e3", "1.0", "1,2", "1_000",
                                      "18446744073709551616", "99999999999999999999999", "--1", "\xef\xbc\x91" /* U+FF11 */};
    uint64_t v = 77;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!tool_parse_uint(bad[i], 0, UINT64_MAX, &v), "'%s' is not a number", bad[i]);
        CHECK(v == 77, "a refused value is not written");
    }
    CHECK(tool_parse_uint("18446744073709551615", 0, UINT64_MAX, &v) && v == UINT64_MAX, "2^64 - 1");
    CHECK(tool_parse_uint("9223372036854775808", 0, UINT64_MAX, &v) && v == 9223372036854775808ull, "2^63");
    CHECK(!tool_parse_uint("9223372036854775808", 1, (uint64_t)1 << 40, &v), "2^63 past the range");
    CHECK(!tool_parse_uint("144115188075855873", 1, (uint64_t)1 << 40, &v), "2^57 + 1 past the range");
    CHECK(tool_parse_uint("0007", 1, 10, &v) && v == 7, "leading zeros");
    CHECK(!tool_parse_uint("0", 1, 10, &v) && !tool_parse_uint("11", 1, 10, &v), "the range's ends");
    CHECK(tool_parse_uint("1", 1, 10, &v) && v == 1 && tool_parse_uint("10", 1, 10, &v) && v == 10, "inside the ends");
    CHECK(!tool_parse_uint(NULL, 0, 1, &v), "NULL");
    int t = -5;
    CHECK(!tool_parse_int("2147483648", 1, 1024, &t) && !tool_parse_int("-3", -5, 5, &t) && t == -5, "int range");
    CHECK(tool_parse_int("1024", 1, 1024, &t) && t == 1024, "int");
    size_t z;
    CHECK(tool_parse_size("4096", 1, 4096, &z) && z == 4096, "size");
    /* random values round-trip through their decimal text */
    for (int i = 0; i < 2000; i++) {
        uint64_t x = harness_next() >> (harness_next() % 64), got;
        char text[32];
        snprintf(text, sizeof text, "%" PRIu64, x);
        CHECK(tool_parse_uint(text, 0, UINT64_MAX, &got) && got == x, "%s", text);
        CHECK(tool_parse_uint(text, x, x, &got) == true && !(x > 0 && tool_parse_uint(text, 0, x - 1, &got)), "%s range", text);
    }
}

static void test_real(void)
{
    static const char *const bad[] = {"", ".", "-", "e3", "1e", "1e+", "nan", "NaN", "inf", "-inf", "infinity", "0x1p3",
                                      "1e999", "-1e999", " 1", "1 ", "+1", "--1", "1..2", "1e3.5", "1,5", "0.1f", "-0.5"};
    double v = 7.0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!tool_parse_real(bad[i], 0, DBL_MAX, &v), "'%s' is not a finite number >= 0", bad[i]);
        CHECK(v == 7.0, "a refused value is not written");
    }
    static const struct { const char *text; double value; } good[] = {
        {"0", 0}, {"0.5", 0.5}, {".5", 0.5}, {"5.", 5}, {"1e-3", 1e-3}, {"2.5E+2", 250}, {"1e308", 1e308}, {"007", 7}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK(tool_parse_real(good[i].text, 0, DBL_MAX, &v) && v == good[i].value, "'%s'", good[i].text);
    CHECK(tool_parse_real("-0.5", -1, 1, &v) && v == -0.5, "a sign where the range allows one");
    CHECK(!tool_parse_real("600001", 0, 600000, &v) && tool_parse_real("600000", 0, 600000, &v), "the range's end");
    CHECK(!tool_parse_real("1e-7", 1e-6, 1, &v), "below the range");
}

static void test_lists(void)
{
    size_t out[4] = {0};
    static const char *const bad[] = {"", ",", "1,", ",1", "1,,2", "1, 2", "1,-2", "1,2,3,4,5", "1;2", "1,0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(tool_parse_uint_list(bad[i], 1, 100, out, 4) == -1, "'%s' is not a list", bad[i]);
    CHECK(tool_parse_uint_list("1,2,100,7", 1, 100, out, 4) == 4 && out[0] == 1 && out[2] == 100 && out[3] == 7, "a list");
    size_t n = 0, k = 0;
    static const char *const bad_shapes[] = {"", ":", "1:", ":1", "1:2:3", "0:4", "4:0", "-1:4", "4:-1", "1x2", "4 :4",
                                             "18446744073709551616:1"};
    for (size_t i = 0; i < sizeof bad_shapes / sizeof bad_shapes[0]; i++)
        CHECK(!tool_parse_shape(bad_shapes[i], (uint64_t)1 << 40, &n, &k), "'%s' is not a shape", bad_shapes[i]);
    CHECK(tool_parse_shape("4096:14336", (uint64_t)1 << 40, &n, &k) && n == 4096 && k == 14336, "a shape");
}

static void test_bytes(void)
{
    tool_bytes b = {0, false};
    tool_bytes_add(&b, 4096, 14336, 2);
    tool_bytes_add(&b, 8, 14336, 12);
    CHECK(!b.overflow && b.total == (size_t)4096 * 14336 * 2 + (size_t)8 * 14336 * 12, "a sum of products");
    tool_bytes_add(&b, (size_t)1 << 40, (size_t)1 << 40, 1);
    CHECK(b.overflow, "2^80 overflows");
    tool_bytes c = {SIZE_MAX - 1, false};
    tool_bytes_add(&c, 1, 1, 2);
    CHECK(c.overflow, "a sum past SIZE_MAX overflows");
    tool_bytes d = {0, false};
    tool_bytes_add(&d, 0, SIZE_MAX, SIZE_MAX);
    tool_bytes_add(&d, SIZE_MAX, 1, 1);
    CHECK(!d.overflow && d.total == SIZE_MAX, "zero factors and SIZE_MAX itself");
    CHECK(!tool_bytes_fit("test", &b), "an overflowed total does not fit");
    tool_bytes huge = {SIZE_MAX / 2, false};
    CHECK(!tool_bytes_fit("test", &huge), "2^63 bytes do not fit any machine's memory");
    tool_bytes small = {4096, false};
    CHECK(tool_bytes_fit("test", &small), "4 kB fit");
    tool_seen seen = {{0}, 0};
    CHECK(tool_first_time(&seen, "test", "--m") && tool_first_time(&seen, "test", "--n"), "first times");
    CHECK(!tool_first_time(&seen, "test", "--m"), "a repeat");
}

int main(void)
{
    harness_begin("test_tool_parse");
    test_uint();
    test_real();
    test_lists();
    test_bytes();
    return harness_end("test_tool_parse");
}
