/* fuzz.h: what the fuzz targets share: the libFuzzer entry points (also called by replay_main.c, so
 * a build without libFuzzer replays the corpus), the model that model-based targets load once from
 * $BRASA_FUZZ_MODEL, and a check that turns a broken invariant into a crash the fuzzer keeps. */
#ifndef BRASA_TESTS_FUZZ_H
#define BRASA_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "brasa.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Exit code that ctest reads as "skipped" (the model is not in the cache). */
#define FUZZ_SKIP 77

/* An invariant the library promises; abort() so that libFuzzer saves the input as a crash. */
#define FUZZ_CHECK(cond)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);            \
            abort();                                                                                \
        }                                                                                           \
    } while (0)

/* Opens $BRASA_FUZZ_MODEL, or exits with FUZZ_SKIP when it is not set or not there (and with 1 when
 * it is there but does not open). The model stays open for the life of the process (reachable, so
 * the leak checker does not count it). */
static inline brasa_model *fuzz_open_model(const char *target) {
    const char *path = getenv("BRASA_FUZZ_MODEL");
    if (!path || !path[0]) {
        fprintf(stderr, "%s: set BRASA_FUZZ_MODEL to a GGUF model (scripts/fetch_models.py fetches the test models)\n",
                target);
        exit(FUZZ_SKIP);
    }
    brasa_error err;
    brasa_model *model = NULL;
    brasa_model_params params = brasa_model_default_params();
    brasa_status st = brasa_model_open(path, &params, &model, &err);
    if (st != BRASA_OK) {
        fprintf(stderr, "%s: cannot open %s: %s%s\n", target, path, err.message,
                st == BRASA_ERR_IO ? " (scripts/fetch_models.py fetches the test models)" : "");
        exit(st == BRASA_ERR_IO ? FUZZ_SKIP : 1);
    }
    return model;
}

#endif
