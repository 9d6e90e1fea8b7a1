/* system.c: facts about this machine for benchmarks and diagnostics: SIMD features, processor
 * count, peak memory, and measurements of main-memory read bandwidth (the limit of decoding) and
 * of the kernels' integer product peak (the limit of prefill). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/peak.h"
#include "core/error.h"
#include "core/pool.h"
#include "platform/platform.h"

void brasa_cpu_features(char *buf, size_t size) {
    cpu_features f;
    cpu_detect_features(&f);
    cpu_features_text(&f, buf, size);
}

int32_t brasa_cpu_count(void) {
    return plat_physical_cores();
}

uint64_t brasa_peak_memory_bytes(void) {
    return plat_peak_rss_bytes();
}

#define BANDWIDTH_BYTES ((size_t)512 << 20) /* far beyond any cache */
#define BANDWIDTH_PASSES 5

typedef struct read_job {
    const uint64_t *data;
    size_t words;
    uint64_t sink[64]; /* per-thread results, so the reads cannot be optimized away */
} read_job;

/* Reads a slice with memchr for a byte that is not there: the C library's vectorized scan is a
 * faithful, portable stand-in for streaming reads. */
static void read_part(void *ctx, int ith, int nth) {
    read_job *j = ctx;
    size_t per = j->words / (size_t)nth, lo = per * (size_t)ith, hi = ith == nth - 1 ? j->words : lo + per;
    const void *hit = memchr(j->data + lo, 0xff, (hi - lo) * sizeof *j->data);
    j->sink[ith % 64] = hit != NULL;
}

brasa_status brasa_measure_memory_bandwidth(int32_t n_threads, double *gb_per_second, brasa_error *err) {
    if (!gb_per_second || n_threads < 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_measure_memory_bandwidth: invalid arguments");
    if (n_threads == 0)
        n_threads = plat_cpu_count();
    uint64_t *data = malloc(BANDWIDTH_BYTES);
    if (!data)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory: the bandwidth test needs %zu MB", BANDWIDTH_BYTES >> 20);
    const size_t words = BANDWIDTH_BYTES / sizeof *data;
    /* touch every page (no pass may measure page faults) with bytes that are never 0xff */
    for (size_t i = 0; i < words; i++)
        data[i] = (uint64_t)i & 0x7f7f7f7f7f7f7f7full;
    pool *p;
    brasa_status st = pool_create(n_threads, &p, err);
    if (st != BRASA_OK) {
        free(data);
        return st;
    }
    read_job job = { data, words, { 0 } };
    double best = 0.0;
    for (int pass = 0; pass < BANDWIDTH_PASSES; pass++) {
        double t0 = plat_time_seconds();
        pool_run(p, read_part, &job);
        double dt = plat_time_seconds() - t0;
        if (dt > 0 && (double)BANDWIDTH_BYTES / dt / 1e9 > best)
            best = (double)BANDWIDTH_BYTES / dt / 1e9;
    }
    pool_free(p);
    free(data);
    *gb_per_second = best;
    return BRASA_OK;
}

brasa_status brasa_measure_int8_peak(int32_t n_threads, double *macs_per_second, char *path, size_t path_size,
                                     brasa_error *err) {
    if (!macs_per_second || n_threads < 0 || (path && path_size == 0))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_measure_int8_peak: invalid arguments");
    /* the table the CPU backend would run, chosen the same way */
    const cpu_kernels *k;
    brasa_status st = cpu_kernels_select(&k, err);
    if (st != BRASA_OK)
        return st;
    if (n_threads == 0)
        n_threads = plat_cpu_count();
    pool *p;
    if ((st = pool_create(n_threads, &p, err)) != BRASA_OK)
        return st;
    st = cpu_int8_peak(k, p, macs_per_second, err);
    pool_free(p);
    if (st == BRASA_OK && path)
        snprintf(path, path_size, "%s", k->name);
    return st;
}
