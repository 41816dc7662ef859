/*
 * sha256.h - SHA-256 (FIPS 180-4), for the JIT cache's keys and its entries' checksums.
 *
 * A small streaming implementation of our own, so that libcdsl needs no crypto library. It is
 * used for integrity against torn or corrupted cache files and for content addressing, not for
 * secrecy.
 */
#ifndef CDSL_SHA256_H
#define CDSL_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct RtSha256 {
    uint32_t h[8];
    uint64_t total;        /* bytes hashed so far */
    uint8_t block[64];
    size_t used;           /* bytes waiting in block */
} RtSha256;

void rt_sha256_init(RtSha256 *s);
void rt_sha256_update(RtSha256 *s, const void *data, size_t len);
void rt_sha256_final(RtSha256 *s, uint8_t digest[32]);
/* One call: digest of data[0..len). */
void rt_sha256(const void *data, size_t len, uint8_t digest[32]);
/* Lower-case hex, 64 characters and a NUL. */
void rt_sha256_hex(const uint8_t digest[32], char hex[65]);

#endif
