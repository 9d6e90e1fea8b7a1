/* measured.h: figures measured on this machine and kept in the per-user cache directory, so that
 * `brasa fit`, `doctor` and `cost` give the same answer run after run without a second of full
 * memory traffic each time. A figure is reused only while the machine it was measured on (kernels,
 * cores, memory) is the one running. */
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

/* The machine's memory read bandwidth: from the cache when a figure for this machine is there and
 * remeasure is false, else measured now and written back (atomically). A missing, foreign or damaged
 * cache file is measured over, never an error; failing to write it is reported in cache_problem. */
brasa_status measured_memory_bandwidth(const char *kernels, bool remeasure, measured_bandwidth *out, brasa_error *err);

#endif
