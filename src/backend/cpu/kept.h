/* kept.h: weights the CPU device keeps in its kernels' eight-row layout (cpu_kernels.x8_keep).
 * Each weight tensor is laid out once, on its first product, and found again by its address; the
 * mapped file's pages behind it are then handed back to the system, so the copy costs no memory. */
#ifndef BRASA_BACKEND_CPU_KEPT_H
#define BRASA_BACKEND_CPU_KEPT_H

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "core/pool.h"

typedef struct cpu_kept cpu_kept;

brasa_status cpu_kept_create(cpu_kept **out, brasa_error *err);
void cpu_kept_free(cpu_kept *kp);

/* The eight-row layout of w's first 8 * (w->ne1 / 8) rows (groups of k->x8_bytes[type](ne0)
 * bytes, group g holding rows 8g .. 8g + 7), built on the first call with the pool's threads;
 * *packed is NULL where w is not kept: not a constant tensor, a format the path does not keep, or
 * fewer than eight rows. The layout lives until cpu_kept_free. */
brasa_status cpu_kept_find(cpu_kept *kp, const cpu_kernels *k, pool *pl, const bk_tensor *w, const char **packed,
                           brasa_error *err);

#endif
