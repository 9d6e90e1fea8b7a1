/* kv_alloc: what contexts of a model really allocate, for the fit tests: for each context size
 * given, one JSON line with the KV cache and scratch bytes brasa_context_memory_use reports.
 *
 * Usage: kv_alloc MODEL.gguf N_CTX... */
#include <stdio.h>
#include <stdlib.h>

#include "brasa.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf N_CTX...\n", argv[0]);
        return 2;
    }
    brasa_error err;
    brasa_model *m = NULL;
    if (brasa_model_open(argv[1], NULL, &m, &err) != BRASA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int rc = 0;
    for (int i = 2; i < argc && rc == 0; i++) {
        brasa_context_params p = brasa_context_default_params();
        p.n_ctx = atoi(argv[i]);
        p.n_threads = 1;
        brasa_context *c = NULL;
        if (brasa_context_create(m, &p, &c, &err) != BRASA_OK) {
            fprintf(stderr, "%s\n", err.message);
            rc = 1;
            break;
        }
        brasa_context_memory mem;
        brasa_context_memory_use(c, &mem);
        printf("{\"n_ctx\": %d, \"kv_bytes\": %llu, \"scratch_bytes\": %llu}\n", p.n_ctx, (unsigned long long)mem.kv_bytes,
               (unsigned long long)mem.scratch_bytes);
        brasa_context_free(c);
    }
    brasa_model_free(m);
    return rc;
}
