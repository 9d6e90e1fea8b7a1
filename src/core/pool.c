/* pool.c: workers sleep on a condition variable between jobs; a job is published with a generation
 * counter and the caller waits until every worker has reported back. Simple, and cheap enough at
 * the granularity of whole matrix products. */
#include "core/pool.h"

#include <stdlib.h>

#include "core/error.h"
#include "platform/platform.h"

typedef struct worker {
    pool *p;
    int ith;
    plat_thread *thread;
} worker;

struct pool {
    int n;
    worker *workers;
    plat_mutex *mutex;
    plat_cond *wake, *done;
    unsigned generation;
    int pending;
    bool stop;
    pool_fn fn;
    void *ctx;
};

static void worker_main(void *arg) {
    worker *w = arg;
    pool *p = w->p;
    unsigned seen = 0;
    for (;;) {
        plat_mutex_lock(p->mutex);
        while (p->generation == seen && !p->stop)
            plat_cond_wait(p->wake, p->mutex);
        if (p->stop) {
            plat_mutex_unlock(p->mutex);
            return;
        }
        seen = p->generation;
        pool_fn fn = p->fn;
        void *ctx = p->ctx;
        plat_mutex_unlock(p->mutex);
        fn(ctx, w->ith, p->n);
        plat_mutex_lock(p->mutex);
        if (--p->pending == 0)
            plat_cond_broadcast(p->done);
        plat_mutex_unlock(p->mutex);
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
    p->done = plat_cond_create();
    p->workers = calloc((size_t)n_threads, sizeof *p->workers);
    if (!p->mutex || !p->wake || !p->done || !p->workers) {
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
    if (p->mutex) {
        plat_mutex_lock(p->mutex);
        p->stop = true;
        if (p->wake)
            plat_cond_broadcast(p->wake);
        plat_mutex_unlock(p->mutex);
    }
    for (int i = 1; p->workers && i < p->n; i++)
        plat_thread_join(p->workers[i].thread);
    free(p->workers);
    plat_cond_free(p->wake);
    plat_cond_free(p->done);
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
    plat_mutex_lock(p->mutex);
    p->fn = fn;
    p->ctx = ctx;
    p->pending = p->n - 1;
    p->generation++;
    plat_cond_broadcast(p->wake);
    plat_mutex_unlock(p->mutex);
    fn(ctx, 0, p->n);
    plat_mutex_lock(p->mutex);
    while (p->pending > 0)
        plat_cond_wait(p->done, p->mutex);
    plat_mutex_unlock(p->mutex);
}
