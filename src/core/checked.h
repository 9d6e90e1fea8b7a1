/* checked.h: overflow-checked size arithmetic for numbers that come from outside (file headers,
 * requests). Each returns false, leaving *out untouched, when the true result does not fit. */
#ifndef BRASA_CORE_CHECKED_H
#define BRASA_CORE_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool ck_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a > UINT64_MAX - b)
        return false;
    *out = a + b;
    return true;
}

static inline bool ck_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

/* For non-negative int64 values (tensor dimensions): the product must stay <= INT64_MAX. */
static inline bool ck_mul_i64(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0 || (a != 0 && b > INT64_MAX / a))
        return false;
    *out = a * b;
    return true;
}

/* uint64 -> size_t, for 32-bit hosts where a file offset may not fit in memory arithmetic. */
static inline bool ck_u64_to_size(uint64_t a, size_t *out) {
    if (a > (uint64_t)SIZE_MAX)
        return false;
    *out = (size_t)a;
    return true;
}

#endif
