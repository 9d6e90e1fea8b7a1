/* engine_check.h: what the engine tests (small C programs over real models) share: a CHECK that
 * counts and reports a failed condition with its line, and the greedy pick of a logits row. */
#ifndef BRASA_TESTS_ENGINE_CHECK_H
#define BRASA_TESTS_ENGINE_CHECK_H

#include <stdio.h>

#include "brasa.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* The most likely token (the first of equals). */
static inline brasa_token argmax(const float *l, int32_t n) {
    brasa_token best = 0;
    for (int32_t i = 1; i < n; i++)
        if (l[i] > l[best])
            best = i;
    return best;
}

#endif
