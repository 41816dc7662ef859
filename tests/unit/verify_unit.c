/*
 * verify_unit.c - the element conversions and the fill pattern, checked exhaustively where the
 * type is small enough and against the compiler's own _Float16 where it has one.
 *
 * What the verifier relies on: f16/bf16 round-trip every value and round to nearest-even like
 * the hardware; movement patterns are distinct, finite, normal and never the all-ones poison;
 * summing patterns add up exactly whatever the order and however often partial sums are
 * rounded back to the type (the sim's reduce and a ring's pairwise reduces both must match);
 * values compare and print as a user expects. Prints "[PASS] name" / "[FAIL] name".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify.h"

static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (ok)                                                                                \
                printf("  %s:%d: ", __FILE__, __LINE__), printf(__VA_ARGS__), printf("\n");       \
            ok = 0;                                                                                \
        }                                                                                          \
    } while (0)

static void result(const char *name, int ok)
{
    printf("[%s] %s\n", ok ? "PASS" : "FAIL", name);
    failures += !ok;
}

static int is_nan16(uint16_t h, int bf16)
{
    return bf16 ? (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) : (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu);
}

static void test_roundtrip(void)
{
    int ok = 1;
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t f16 = rt_f32_to_f16(rt_f16_to_f32((uint16_t)h));
        uint16_t bf = rt_f32_to_bf16(rt_bf16_to_f32((uint16_t)h));
        if (is_nan16((uint16_t)h, 0))
            EXPECT(is_nan16(f16, 0), "f16 NaN %04x became %04x", h, f16);
        else
            EXPECT(f16 == h, "f16 %04x became %04x", h, f16);
        if (is_nan16((uint16_t)h, 1))
            EXPECT(is_nan16(bf, 1), "bf16 NaN %04x became %04x", h, bf);
        else
            EXPECT(bf == h, "bf16 %04x became %04x", h, bf);
    }
    result("every f16 and bf16 value survives f32 and back", ok);
}

static void test_rounding(void)
{
    int ok = 1;
    static const struct {
        float f;
        uint16_t h;
    } f16[] = {
        {1.0f, 0x3C00},          {1.0f + 0x1p-11f, 0x3C00}, /* a tie goes to even */
        {1.0f + 0x3p-11f, 0x3C02}, {65504.0f, 0x7BFF},      {65519.0f, 0x7BFF},
        {65520.0f, 0x7C00},      {1e9f, 0x7C00},            {0x1p-24f, 0x0001},
        {0x1p-25f, 0x0000},      {0x3p-26f, 0x0001}, {0x3p-25f, 0x0002},        {-0.0f, 0x8000},
        {-2048.0f, 0xE800},      {0x1p-14f, 0x0400},        {0x1.ffcp-15f, 0x0400},
    };
    for (size_t i = 0; i < sizeof f16 / sizeof f16[0]; i++)
        EXPECT(rt_f32_to_f16(f16[i].f) == f16[i].h, "f16(%a) = %04x, want %04x", (double)f16[i].f,
               rt_f32_to_f16(f16[i].f), f16[i].h);
    EXPECT(rt_f32_to_bf16(rt_bits_f32(0x3F808000u)) == 0x3F80, "bf16 tie to even (down)");
    EXPECT(rt_f32_to_bf16(rt_bits_f32(0x3F818000u)) == 0x3F82, "bf16 tie to even (up)");
    EXPECT(rt_f32_to_bf16(rt_bits_f32(0x3F808001u)) == 0x3F81, "bf16 above a tie");
    EXPECT(rt_f32_to_bf16(rt_bits_f32(0x7F7FFFFFu)) == 0x7F80, "bf16 overflow to infinity");
#if defined(__FLT16_MAX__) && !defined(__cplusplus)
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 2000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        float f = rt_bits_f32((uint32_t)x);
        if (isnan(f))
            continue;
        __extension__ _Float16 ref = (__extension__(_Float16) f);
        uint16_t want;
        memcpy(&want, &ref, 2);
        EXPECT(rt_f32_to_f16(f) == want, "f16(%a) = %04x, the compiler says %04x", (double)f, rt_f32_to_f16(f), want);
    }
    result("f32 -> f16 rounds to nearest even (and agrees with _Float16 on 2M random floats)", ok);
#else
    result("f32 -> f16 and bf16 round to nearest even", ok);
#endif
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int finite_normal(cdsl_dtype t, uint32_t v)
{
    if (t == CDSL_U32 || t == CDSL_S32)
        return 1;
    uint32_t e = t == CDSL_F32 ? (v >> 23) & 0xFF : t == CDSL_F16 ? (v >> 10) & 0x1F : (v >> 7) & 0xFF;
    uint32_t emax = t == CDSL_F16 ? 0x1F : 0xFF;
    return e != 0 && e != emax;
}

/* Elements [first, first + count) of one rank count's pattern are pairwise distinct. */
static int distinct(cdsl_dtype t, int nranks, uint64_t first, size_t count)
{
    uint32_t *v = malloc(count * sizeof *v);
    size_t k = 0;
    for (uint64_t u = first; u < first + count; u++) {
        v[k] = vf_value(t, VF_MOVE, nranks, (int)(u % (uint64_t)nranks), u / (uint64_t)nranks);
        if (!finite_normal(t, v[k]) || v[k] == vf_poison(t)) {
            free(v);
            return 0;
        }
        k++;
    }
    qsort(v, count, sizeof *v, cmp_u32);
    int ok = 1;
    for (size_t i = 1; i < count; i++)
        ok &= v[i] != v[i - 1];
    free(v);
    return ok;
}

static void test_distinct(void)
{
    int ok = 1;
    EXPECT(distinct(CDSL_F16, 8, 0, 61440), "f16: 61440 distinct normal values");
    EXPECT(distinct(CDSL_BF16, 8, 0, 65024), "bf16: 65024 distinct normal values");
    EXPECT(distinct(CDSL_F32, 8, 0, 1u << 20), "f32: the first 2^20");
    EXPECT(distinct(CDSL_F32, 8, (1u << 24) - (1u << 19), 1u << 20), "f32: across 2^24");
    EXPECT(distinct(CDSL_U32, 8, 0, 1u << 20), "u32");
    EXPECT(distinct(CDSL_S32, 3, 123456789, 1u << 20), "s32");
    EXPECT(vf_value(CDSL_F32, VF_MOVE, 4, 0, 0) == rt_f32_bits(1.0f), "f32 starts at 1");
    EXPECT(vf_value(CDSL_F16, VF_MOVE, 4, 1, 0) == 0x3C01, "f16 counts up from 1");
    result("movement patterns are distinct, finite, normal and never the poison", ok);
}

static float round_to(cdsl_dtype t, float f)
{
    if (t == CDSL_F16)
        return rt_f16_to_f32(rt_f32_to_f16(f));
    if (t == CDSL_BF16)
        return rt_bf16_to_f32(rt_f32_to_bf16(f));
    return f;
}

static uint32_t to_bits(cdsl_dtype t, float f)
{
    return t == CDSL_F16 ? rt_f32_to_f16(f) : t == CDSL_BF16 ? rt_f32_to_bf16(f) : rt_f32_bits(f);
}

static float as_float(cdsl_dtype t, uint32_t bits)
{
    return t == CDSL_F16 ? rt_f16_to_f32((uint16_t)bits) : t == CDSL_BF16 ? rt_bf16_to_f32((uint16_t)bits) : rt_bits_f32(bits);
}

/* The sum over ranks, forwards with f32 accumulation (the sim's switch reduce) and backwards
 * rounding every partial sum to the type (a ring of pairwise reduces), equals vf_sum. */
static void test_sums(void)
{
    int ok = 1;
    static const cdsl_dtype types[] = {CDSL_F32, CDSL_F16, CDSL_BF16};
    static const int ns[] = {2, 3, 8, 64, 256};
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            cdsl_dtype t = types[ti];
            int n = ns[ni], nonzero = 0;
            for (uint64_t e = 0; e < 5000; e++) {
                float fwd = 0, back = 0;
                for (int p = 0; p < n; p++)
                    fwd += as_float(t, vf_value(t, VF_SUM, n, p, e));
                for (int p = n - 1; p >= 0; p--)
                    back = round_to(t, back + as_float(t, vf_value(t, VF_SUM, n, p, e)));
                uint32_t want = vf_sum(t, n, e);
                nonzero += as_float(t, want) != 0;
                EXPECT(vf_equal(t, VF_SUM, want, to_bits(t, fwd)), "%s n=%d e=%llu forwards", cdsl_dtype_name(t), n,
                       (unsigned long long)e);
                EXPECT(round_to(t, fwd) == back, "%s n=%d e=%llu: order matters (%g vs %g)", cdsl_dtype_name(t), n,
                       (unsigned long long)e, (double)fwd, (double)back);
            }
            EXPECT(nonzero > 1000, "%s n=%d: sums are mostly zero", cdsl_dtype_name(t), n);
        }
    uint32_t s = 0;
    for (int p = 0; p < 5; p++)
        s += vf_value(CDSL_U32, VF_SUM, 5, p, 77);
    EXPECT(vf_sum(CDSL_U32, 5, 77) == s && vf_sum(CDSL_S32, 5, 77) == s, "u32/s32 wrap");
    result("summing patterns add up exactly in any order and rounding", ok);
}

static void test_compare_and_format(void)
{
    int ok = 1;
    char buf[48];
    EXPECT(vf_equal(CDSL_F32, VF_SUM, rt_f32_bits(0.0f), rt_f32_bits(-0.0f)), "sum: -0 == +0");
    EXPECT(!vf_equal(CDSL_F32, VF_MOVE, rt_f32_bits(0.0f), rt_f32_bits(-0.0f)), "move: bits");
    EXPECT(!vf_equal(CDSL_F16, VF_SUM, 0x7E00, 0x7E00), "NaN is never right");
    vf_format(CDSL_F32, 0xFFFFFFFFu, buf, sizeof buf);
    EXPECT(!strcmp(buf, "nan"), "nan: %s", buf);
    vf_format(CDSL_F16, 0xBE00, buf, sizeof buf);
    EXPECT(!strcmp(buf, "-1.5"), "-1.5: %s", buf);
    vf_format(CDSL_BF16, 0x4228, buf, sizeof buf);
    EXPECT(!strcmp(buf, "42"), "42: %s", buf);
    vf_format(CDSL_S32, 0xFFFFFFFEu, buf, sizeof buf);
    EXPECT(!strcmp(buf, "-2"), "-2: %s", buf);
    vf_format(CDSL_U32, 0xFFFFFFFEu, buf, sizeof buf);
    EXPECT(!strcmp(buf, "4294967294"), "u32: %s", buf);
    EXPECT(vf_poison(CDSL_F16) == 0xFFFF && vf_poison(CDSL_S32) == 0xFFFFFFFFu, "poison");
    EXPECT(vf_mode(COLL_ALLREDUCE) == VF_SUM && vf_mode(COLL_CUSTOM) == VF_MOVE, "modes");
    result("values compare and print as users read them", ok);
}

static void test_names(void)
{
    int ok = 1;
    cdsl_backend b;
    cdsl_dtype t;
    EXPECT(!cdsl_backend_parse("nvls", &b) && b == CDSL_BACKEND_NVLS, "nvls");
    EXPECT(cdsl_backend_parse("gpu", &b) == CDSL_ERR_USAGE, "gpu");
    EXPECT(!cdsl_dtype_parse("bfloat16", &t) && t == CDSL_BF16, "bfloat16");
    EXPECT(!cdsl_dtype_parse("s32", &t) && t == CDSL_S32 && cdsl_dtype_size(t) == 4, "s32");
    EXPECT(cdsl_dtype_parse("f64", &t) == CDSL_ERR_USAGE, "f64");
    EXPECT(!strcmp(cdsl_dtype_name(CDSL_F16), "f16") && !strcmp(cdsl_backend_name(CDSL_BACKEND_SIM), "sim"), "names");
    EXPECT(cdsl_version() && *cdsl_version(), "version");
    result("backend and dtype names parse and print", ok);
}

int main(void)
{
    test_roundtrip();
    test_rounding();
    test_distinct();
    test_sums();
    test_compare_and_format();
    test_names();
    return failures != 0;
}
