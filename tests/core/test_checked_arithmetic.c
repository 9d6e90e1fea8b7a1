/* test_checked_arithmetic: the overflow checks used on untrusted sizes catch every overflow. */
#include <stdio.h>

#include "core/checked.h"

static int failures;

#define CHECK(cond)                                                                                 \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                \
            failures++;                                                                             \
        }                                                                                           \
    } while (0)

int main(void) {
    uint64_t u;
    int64_t i;
    CHECK(ck_add_u64(1, 2, &u) && u == 3);
    CHECK(!ck_add_u64(UINT64_MAX, 1, &u));
    CHECK(ck_add_u64(UINT64_MAX - 1, 1, &u) && u == UINT64_MAX);
    CHECK(ck_mul_u64(0, UINT64_MAX, &u) && u == 0);
    CHECK(!ck_mul_u64(1ull << 32, 1ull << 32, &u));
    CHECK(ck_mul_u64(1ull << 31, 1ull << 32, &u) && u == 1ull << 63);
    CHECK(!ck_mul_i64(INT64_MAX / 2 + 1, 2, &i));
    CHECK(ck_mul_i64(INT64_MAX / 2, 2, &i) && i == INT64_MAX - 1);
    CHECK(!ck_mul_i64(-1, 2, &i));
    CHECK(!ck_mul_i64(1ll << 32, 1ll << 31, &i));
    printf("checked arithmetic: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
