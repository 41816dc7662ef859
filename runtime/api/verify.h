/*
 * verify.h - element values: the dtype conversions the sim reduces with, and the pattern that
 * cdsl_fill() writes and cdsl_check() expects (runtime/api/verify.c).
 *
 * Element bits travel in a uint32_t whatever the dtype (16-bit types in the low half), so one
 * loop can fill, compare and print every dtype. The conversions are here, inline, because the
 * sim backend (sim.c) must round exactly as the verifier expects: f16 and bf16 are summed in
 * f32 and rounded to nearest-even once per result.
 *
 * The pattern, per element e of rank r's input buffer, with u = e * nranks + r:
 *   movement collectives (allgather, custom): values compared bit for bit, distinct over all
 *     ranks' elements as far as the dtype has distinct finite normal values: u32/s32 a
 *     bijection of u mod 2^32; f32 the integer u+1 up to 2^24, then distinct normal floats
 *     below 1; f16 and bf16 cycle through their normal values (61440 and 65024 of them).
 *   sums (reducescatter, allreduce): small integers in [-M, M] with M = L / nranks, where
 *     L = 2^24 (f32), 2048 (f16), 256 (bf16): every partial and total sum over the ranks is an
 *     integer of magnitude <= L, which the dtype holds exactly, so the result does not depend
 *     on the order of summation. u32/s32 use all 32 bits and wrap (s32 sums as two's
 *     complement, like u32).
 *   outputs and scratch buffers start as all-ones bytes (NaN for the float types), a value the
 *     pattern never produces, so a chunk nobody wrote is reported as "never written".
 */
#ifndef CDSL_VERIFY_H
#define CDSL_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cdsl.h"
#include "program.h"

enum { VF_POISON_BYTE = 0xFF };

typedef enum VfMode { VF_MOVE, VF_SUM } VfMode;

/* ---- f16 / bf16 <-> f32 ----------------------------------------------------------------- */

static inline uint32_t rt_f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static inline float rt_bits_f32(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static inline float rt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0 && m == 0)
        return rt_bits_f32(sign);
    if (e == 0) { /* subnormal: normalise into an f32 exponent */
        e = 113;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        return rt_bits_f32(sign | (e << 23) | ((m & 0x3FFu) << 13));
    }
    if (e == 31)
        return rt_bits_f32(sign | 0x7F800000u | (m << 13));
    return rt_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

/* Round to nearest even; overflow to infinity, NaN stays NaN (quiet). */
static inline uint16_t rt_f32_to_f16(float f)
{
    uint32_t x = rt_f32_bits(f);
    uint32_t sign = x & 0x80000000u;
    uint32_t o;
    x ^= sign;
    if (x >= (127u + 16u) << 23) {
        o = x > 0x7F800000u ? 0x7E00u : 0x7C00u;
    } else if (x < 113u << 23) {
        /* Subnormal or zero: adding 0.5 lines the 10 mantissa bits up at the bottom of the
         * f32 mantissa, and the FPU's own nearest-even rounding does the rest. */
        const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
        o = rt_f32_bits(rt_bits_f32(x) + rt_bits_f32(magic)) - magic;
    } else {
        uint32_t odd = (x >> 13) & 1u;
        x += 0xC8000FFFu + odd; /* rebias the exponent by (15 - 127) << 23, round */
        o = x >> 13;
    }
    return (uint16_t)(o | (sign >> 16));
}

static inline float rt_bf16_to_f32(uint16_t b)
{
    return rt_bits_f32((uint32_t)b << 16);
}

static inline uint16_t rt_f32_to_bf16(float f)
{
    uint32_t x = rt_f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* ---- elements as bits --------------------------------------------------------------------- */

static inline uint32_t vf_load(cdsl_dtype t, const void *base, size_t i)
{
    if (t == CDSL_F16 || t == CDSL_BF16) {
        uint16_t h;
        memcpy(&h, (const char *)base + 2 * i, 2);
        return h;
    }
    uint32_t w;
    memcpy(&w, (const char *)base + 4 * i, 4);
    return w;
}

static inline void vf_store(cdsl_dtype t, void *base, size_t i, uint32_t bits)
{
    if (t == CDSL_F16 || t == CDSL_BF16) {
        uint16_t h = (uint16_t)bits;
        memcpy((char *)base + 2 * i, &h, 2);
        return;
    }
    memcpy((char *)base + 4 * i, &bits, 4);
}

/* ---- the pattern (verify.c) ---------------------------------------------------------------- */

VfMode vf_mode(Collective c);
/* Bits of element `elem` of rank `rank`'s input buffer. */
uint32_t vf_value(cdsl_dtype t, VfMode m, int nranks, int rank, uint64_t elem);
/* Bits of the sum over every rank of element `elem` of the input buffers (VF_SUM values). */
uint32_t vf_sum(cdsl_dtype t, int nranks, uint64_t elem);
/* Whether got is the expected value (bit for bit when moved, by value when summed). */
bool vf_equal(cdsl_dtype t, VfMode m, uint32_t want, uint32_t got);
/* The value as a user reads it: "42", "-1.5", "nan". */
void vf_format(cdsl_dtype t, uint32_t bits, char *out, size_t len);
/* The all-ones poison value as element bits. */
uint32_t vf_poison(cdsl_dtype t);

/* The communicator's message stream, for verify.c (defined in api.c). */
FILE *rt_comm_log(const cdsl_comm *c);
/* Whether the communicator's buffers were allocated or registered for ir's layout: the same
 * buffers, chunk counts and in-place form as a run of ir requires (api.c). The verifier then
 * takes every size from the communicator (cdsl_comm_buf_bytes) and reaches the aliased buffer
 * through it (cdsl_comm_write), so that it fills and checks the memory the run uses. */
bool rt_comm_layout_matches(const cdsl_comm *c, const IrProgram *ir);

#endif
