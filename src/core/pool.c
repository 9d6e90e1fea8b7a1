/* pool.c: workers spin briefly on a generation counter between jobs, so the hundreds of kernel
 * launches of one decoded token cost no system calls, and fall asleep on a condition variable when
 * no work comes (between requests). A job is published by bumping the generation under the mutex,
 * which is what makes the sleep safe from lost wake-ups; the caller then runs its own share and
 * spins until every worker has reported back. */
#include "core/pool.h"

#include <stdlib.h>

#include "core/error.h"
#include "platform/platform.h"

/* About a millisecond of spinning before a worker sleeps. */
#define POOL_SPINS 20000
/* A thread that has waited POOL_YIELD_AFTER spins (tens of microseconds, longer than a kernel's
 * threads usually wait for one another) yields to the scheduler every POOL_YIELD_EVERY spins: when
 * the machine runs more threads than it has cores (a second brasa, a build, more --threads than
 * cores), the thread it waits for may be the one kept off a core, and spinning out a time slice
 * made such runs 5-17x slower. Yielding sooner cost decode speed when the machine is not shared. */
#define POOL_YIELD_AFTER 1024
#define POOL_YIELD_EVERY 64

static void spin_once(unsigned spins) {
    plat_cpu_relax();
    if (spins >= POOL_YIELD_AFTER && spins % POOL_YIELD_EVERY == 0)
        plat_yield();
}

typedef struct worker {
    pool *p;
    int ith;
    plat_thread *thread;
} worker;

struct pool {
    int n;
    worker *workers;
    plat_mutex *mutex;
    plat_cond *wake;
    volatile int32_t generation; /* bumped once per job */
    volatile int32_t pending;    /* workers still running the current job */
    volatile int32_t stop;
    int sleepers;                /* workers waiting on `wake`; guarded by mutex */
    pool_fn fn;
    void *ctx;
};

static void worker_main(void *arg) {
    worker *w = arg;
    pool *p = w->p;
    int32_t seen = 0;
    for (;;) {
        int spins = 0;
        int32_t g;
        while ((g = plat_atomic_load(&p->generation)) == seen && !plat_atomic_load(&p->stop)) {
            if (++spins < POOL_SPINS) {
                spin_once((unsigned)spins);
                continue;
            }
            plat_mutex_lock(p->mutex);
            p->sleepers++;
            while (plat_atomic_load(&p->generation) == seen && !plat_atomic_load(&p->stop))
                plat_cond_wait(p->wake, p->mutex);
            p->sleepers--;
            plat_mutex_unlock(p->mutex);
            spins = 0;
        }
        if (plat_atomic_load(&p->stop))
            return;
        seen = g;
        p->fn(p->ctx, w->ith, p->n);
        plat_atomic_add(&p->pending, -1);
    }
}

brasa_status pool_create(int n_threads, pool **out, brasa_error *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "thread count %d is outside 1..1024", n_threads);
    pool *p = calloc(1, sizeof *p);
    if (!p)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    p->n = n_threads;
    p->mutex = plat_mutex_create();
    p->wake = plat_cond_create();
    p->workers = calloc((size_t)n_threads, sizeof *p->workers);
    if (!p->mutex || !p->wake || !p->workers) {
        pool_free(p);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 1; i < n_threads; i++) {
        p->workers[i] = (worker){ p, i, NULL };
        brasa_status st = plat_thread_start(&p->workers[i].thread, worker_main, &p->workers[i], err);
        if (st != BRASA_OK) {
            p->n = i; /* only the started ones are joined */
            pool_free(p);
            return st;
        }
    }
    *out = p;
    return BRASA_OK;
}

void pool_free(pool *p) {
    if (!p)
        return;
    if (p->mutex && p->wake) {
        plat_mutex_lock(p->mutex);
        plat_atomic_store(&p->stop, 1);
        plat_cond_broadcast(p->wake);
        plat_mutex_unlock(p->mutex);
    }
    for (int i = 1; p->workers && i < p->n; i++)
        plat_thread_join(p->workers[i].thread);
    free(p->workers);
    plat_cond_free(p->wake);
    plat_mutex_free(p->mutex);
    free(p);
}

int pool_threads(const pool *p) {
    return p->n;
}

void pool_run(pool *p, pool_fn fn, void *ctx) {
    if (p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    plat_atomic_store(&p->pending, p->n - 1);
    plat_mutex_lock(p->mutex);
    plat_atomic_add(&p->generation, 1);
    if (p->sleepers > 0)
        plat_cond_broadcast(p->wake);
    plat_mutex_unlock(p->mutex);
    fn(ctx, 0, p->n);
    for (unsigned spins = 1; plat_atomic_load(&p->pending) > 0; spins++) /* (wraps harmlessly on a long wait) */
        spin_once(spins);
}
