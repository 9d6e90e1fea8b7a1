/* sha256.h: SHA-256 (FIPS 180-4), for checking downloaded model files against the hash the hub
 * publishes. Streaming: init, any number of updates, final; a whole buffer in one call too. */
#ifndef BRASA_CORE_SHA256_H
#define BRASA_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32
#define SHA256_HEX_BYTES 65 /* 64 lowercase hex digits and a NUL */

typedef struct sha256_ctx {
    uint32_t state[8];
    uint64_t length;    /* bytes hashed so far */
    uint8_t block[64];  /* the unfinished block */
    size_t block_len;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
/* Pads, finishes and writes the digest; c must be initialized again before another use. */
void sha256_final(sha256_ctx *c, uint8_t digest[SHA256_BYTES]);

/* The digest of data[0..len) as lowercase hex, NUL-terminated. */
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_BYTES]);
/* A digest as lowercase hex, NUL-terminated. */
void sha256_to_hex(const uint8_t digest[SHA256_BYTES], char hex[SHA256_HEX_BYTES]);

#endif
