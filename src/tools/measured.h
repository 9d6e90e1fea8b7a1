/* measured.h: figures measured on this machine and kept in the per-user cache directory, so that
 * `brasa fit`, `doctor`, `cost` and `bench` give the same answer run after run without a second of
 * full memory traffic (or a quarter of one of full arithmetic) each time. A figure is reused only
 * while the machine it was measured on (kernels, cores, memory) is the one running. */
#ifndef BRASA_TOOLS_MEASURED_H
#define BRASA_TOOLS_MEASURED_H

#include <stdbool.h>
#include <stdint.h>

#include "brasa.h"

typedef struct measured_bandwidth {
    double gbs;            /* read bandwidth, GB/s */
    int64_t measured_at;   /* when it was measured (seconds since 1970) */
    bool from_cache;       /* read back from the cache rather than measured by this run */
    char cache_path[1024]; /* the file it is kept in; "" when there is no cache directory */
    char cache_problem[160]; /* why it could not be kept, or "" */
} measured_bandwidth;

typedef struct measured_peak {
    double macs_per_second; /* 8-bit multiply-adds a second, all cores (brasa_measure_int8_peak) */
    char path[32];          /* the kernel path whose product instruction was measured */
    int64_t measured_at;
    bool from_cache;
    char cache_path[1024];
    char cache_problem[160];
} measured_peak;

/* The machine's memory read bandwidth: from the cache when a figure for this machine is there and
 * remeasure is false, else measured now and written back (atomically). A missing, foreign or damaged
 * cache file is measured over, never an error; failing to write it is reported in cache_problem.
 * kernels: the CPU backend's kernel name (bk_cpu_kernels_name), part of the machine's key. */
brasa_status measured_memory_bandwidth(const char *kernels, bool remeasure, measured_bandwidth *out, brasa_error *err);

/* The kernels' integer product peak, the same way: kept in the same file beside the bandwidth, so
 * a file with only one of the two has the other measured and added. */
brasa_status measured_int8_peak(const char *kernels, bool remeasure, measured_peak *out, brasa_error *err);

#endif
