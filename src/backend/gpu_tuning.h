/* gpu_tuning.h: the GPU tuning cache. A module's products come in variants (gpu_module.h); this
 * measures them for a model's weight shapes, keeps the fastest per shape in a file of the user's
 * cache directory, and hands stored choices back to the device when a context opens it.
 *
 * One file per device: <cache dir>/gpu-tuning-<backend>-<arch>-<hash of the name>.txt, a header
 * naming the device, its architecture and driver version and brasa's version, then one line per
 * shape ("decode q4_K 1536 8960 4 12.500": kind, weight type, rows, row length, variant, microseconds).
 * A file whose header names anything else is stale or foreign, and one with a line that does not
 * parse is damaged: either is ignored as a whole, with a note, and overwritten by the next tuning.
 */
#ifndef BRASA_GPU_TUNING_H
#define BRASA_GPU_TUNING_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/gpu/gpu_module.h"
#include "brasa.h"

/* The device a cache file belongs to. */
typedef struct gtune_device {
    const bk_gpu_module *module;
    bk_device *dev;
    bk_gpu_info info;
} gtune_device;

/* The cache file's path; false when there is no cache directory. */
bool gtune_path(const gtune_device *d, char *out, size_t size);

/* Checks a cache file's text as gtune_load reads it: the number of choices it holds, or -1 when it
 * would be ignored (the reason in note). For the fuzzer: nothing is set on the device. */
int gtune_parse(const gtune_device *d, const char *text, size_t len, char *note, size_t note_size);

/* Sets every choice the device's cache file stores on d->dev. Returns how many; a file that is
 * ignored (stale, foreign, damaged) is named in note with the reason (else note is ""). */
int gtune_load(const gtune_device *d, char *note, size_t note_size);

/* Measures every variant of the products of the weights (1 token for decode, prefill_tokens for
 * prefill; reps runs each after a warm-up), sets the fastest on d->dev and stores them in the
 * cache file beside the stored choices of other shapes. Weights of one shape count once; 3-D
 * expert weights are skipped (matmul_id does not take tuned variants). */
brasa_status gtune_measure(const gtune_device *d, const bk_tensor *const *weights, size_t n, const brasa_tune_params *params,
                           brasa_tune_report *report, brasa_error *err);

#endif
