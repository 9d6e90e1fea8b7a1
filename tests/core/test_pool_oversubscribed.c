/* test_pool_oversubscribed: the thread pool keeps its speed when the machine runs more threads than
 * it has cores (a second brasa beside the first, a build, --threads above the core count). The same
 * jobs (a fixed amount of arithmetic split between the pool's threads, as the kernels split theirs)
 * run with one thread per core and with twice that many; the oversubscribed pool must not take more
 * than OVERSUBSCRIBED_MAX times as long. A pool whose waiting threads spun out their time slices
 * took 5-17x as long (measured 2026-12-06 with brasa run, 2 cores, 4 threads); now about 1.5-3x.
 * Best of three alternated runs each, as timings on a shared machine are noisy; results are checked
 * too, so a pool that skipped work could not pass by being fast. */
#include <stdio.h>
#include <stdlib.h>

#include "core/pool.h"
#include "platform/platform.h"

enum { N_JOBS = 1500, WORK = 1 << 17 };
#define OVERSUBSCRIBED_MAX 4.0

typedef struct job {
    double *sums; /* one per thread */
} job;

static void job_fn(void *ctx, int ith, int nth) {
    job *j = ctx;
    const int lo = (int)((long long)WORK * ith / nth), hi = (int)((long long)WORK * (ith + 1) / nth);
    double s = 0;
    for (int i = lo; i < hi; i++)
        s += (double)(i & 1023) * 0.5;
    j->sums[ith] = s;
}

/* Seconds for N_JOBS jobs on a pool of n threads; 0 when the pool cannot start or a sum is wrong. */
static double time_jobs(int n) {
    brasa_error err;
    pool *p = NULL;
    if (pool_create(n, &p, &err) != BRASA_OK) {
        fprintf(stderr, "pool of %d threads: %s\n", n, err.message);
        return 0;
    }
    double *sums = calloc((size_t)n, sizeof *sums);
    job j = { sums };
    double expected = 0;
    for (int i = 0; i < WORK; i++)
        expected += (double)(i & 1023) * 0.5;
    const double t0 = plat_time_seconds();
    int wrong = 0;
    for (int k = 0; k < N_JOBS; k++) {
        pool_run(p, job_fn, &j);
        double total = 0;
        for (int i = 0; i < n; i++)
            total += sums[i];
        wrong += total != expected;
    }
    const double t = plat_time_seconds() - t0;
    free(sums);
    pool_free(p);
    if (wrong) {
        fprintf(stderr, "pool of %d threads: %d of %d jobs summed wrong\n", n, wrong, N_JOBS);
        return 0;
    }
    return t;
}

int main(void) {
    int cores = plat_cpu_count();
    if (cores < 2)
        cores = 2;
    double best_fit = 1e30, best_over = 1e30;
    for (int round = 0; round < 3; round++) {
        const double fit = time_jobs(cores), over = time_jobs(2 * cores);
        if (fit <= 0 || over <= 0)
            return 1;
        best_fit = fit < best_fit ? fit : best_fit;
        best_over = over < best_over ? over : best_over;
    }
    const double ratio = best_over / best_fit;
    printf("%d jobs: %.3f s with %d threads, %.3f s with %d threads on %d cores (%.2fx; at most %.1fx)\n", N_JOBS,
           best_fit, cores, best_over, 2 * cores, cores, ratio, OVERSUBSCRIBED_MAX);
    if (ratio > OVERSUBSCRIBED_MAX) {
        printf("FAILED: an oversubscribed pool is %.2fx as slow\n", ratio);
        return 1;
    }
    printf("pool oversubscribed: all checks passed\n");
    return 0;
}
