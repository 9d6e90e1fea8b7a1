/* pool.h: a fixed pool of worker threads for data-parallel kernels. pool_run calls fn(ctx, i, n)
 * for i in 0..n-1 (n = the pool's thread count, the caller being thread 0) and returns when all are
 * done. Kernels split work by i so results never depend on timing. */
#ifndef BRASA_CORE_POOL_H
#define BRASA_CORE_POOL_H

#include <stdbool.h>

#include "brasa.h"

typedef struct pool pool;
typedef void (*pool_fn)(void *ctx, int ith, int nth);

brasa_status pool_create(int n_threads, pool **out, brasa_error *err);
void pool_free(pool *p);
int pool_threads(const pool *p);
void pool_run(pool *p, pool_fn fn, void *ctx);

#endif
