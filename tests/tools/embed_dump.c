/* embed_dump: embeddings of token-id inputs, for the embedding reference test.
 *
 * Usage: embed_dump MODEL INFILE [--batch] [--threads N] [--ctx N] [--kv-f32]
 *        embed_dump MODEL --decode ID...
 * INFILE has one input per line, its token ids separated by spaces (an empty line is an empty
 * input). Prints one line per input: the embedding's floats separated by spaces (%.9g). Inputs go
 * one brasa_embed call each, or with --batch all in one brasa_embed_batch call; --kv-f32 keeps a
 * causal model's cache in float (the reference tests' setting). --decode tries brasa_decode with
 * the ids instead (an embedding model must refuse). Errors: "embed_dump: STATUS: message" on
 * stderr, exit 1. Uses only the public API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brasa.h"

#define MAX_INPUTS 4096

static int fail(brasa_status st, const brasa_error *err) {
    fprintf(stderr, "embed_dump: %s: %s\n", brasa_status_str(st), err->message);
    return 1;
}

/* Reads the inputs: token ids per line. Returns the count, or -1 when the file is unreadable. */
static long read_inputs(const char *path, brasa_token **inputs, size_t *lens) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    long n = 0;
    static char line[1 << 20];
    while (n < MAX_INPUTS && fgets(line, sizeof line, f)) {
        size_t cap = 16, len = 0;
        brasa_token *ids = malloc(cap * sizeof *ids);
        for (char *p = line, *end; ids; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p)
                break;
            if (len == cap) {
                cap *= 2;
                brasa_token *grown = realloc(ids, cap * sizeof *ids);
                if (!grown) {
                    free(ids);
                    ids = NULL;
                    break;
                }
                ids = grown;
            }
            ids[len++] = (brasa_token)v;
        }
        if (!ids) {
            fclose(f);
            return -1;
        }
        inputs[n] = ids;
        lens[n++] = len;
    }
    fclose(f);
    return n;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: embed_dump MODEL INFILE [--batch] [--threads N] [--ctx N] [--kv-f32] | MODEL --decode ID...\n");
        return 2;
    }
    brasa_error err;
    brasa_model *m = NULL;
    brasa_model_params mp = brasa_model_default_params();
    brasa_status st = brasa_model_open(argv[1], &mp, &m, &err);
    if (st != BRASA_OK)
        return fail(st, &err);
    brasa_context_params cp = brasa_context_default_params();
    int batch = 0, decode = strcmp(argv[2], "--decode") == 0;
    for (int i = 3; i < argc && !decode; i++) {
        if (strcmp(argv[i], "--batch") == 0)
            batch = 1;
        else if (strcmp(argv[i], "--kv-f32") == 0)
            cp.kv_type = BRASA_KV_F32;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            cp.n_threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--ctx") == 0 && i + 1 < argc)
            cp.n_ctx = atoi(argv[++i]);
        else {
            fprintf(stderr, "embed_dump: unknown option %s\n", argv[i]);
            brasa_model_free(m);
            return 2;
        }
    }
    brasa_context *c = NULL;
    st = brasa_context_create(m, &cp, &c, &err);
    if (st != BRASA_OK) {
        brasa_model_free(m);
        return fail(st, &err);
    }
    int rc = 0;
    if (decode) {
        brasa_token ids[256];
        int n = 0;
        for (int i = 3; i < argc && n < 256; i++)
            ids[n++] = (brasa_token)atoi(argv[i]);
        st = brasa_decode(c, ids, (size_t)n, NULL, &err);
        rc = st == BRASA_OK ? 0 : fail(st, &err);
        brasa_context_free(c);
        brasa_model_free(m);
        return rc;
    }
    static brasa_token *inputs[MAX_INPUTS];
    static size_t lens[MAX_INPUTS];
    const long n = read_inputs(argv[2], inputs, lens);
    brasa_model_desc d;
    brasa_model_describe(m, &d);
    const size_t dim = d.embedding_dim > 0 ? (size_t)d.embedding_dim : 1;
    float *out = n > 0 ? malloc((size_t)n * dim * sizeof *out) : NULL;
    if (n < 0 || (n > 0 && !out)) {
        fprintf(stderr, "embed_dump: cannot read %s\n", argv[2]);
        rc = 1;
    }
    if (rc == 0 && batch) {
        st = brasa_embed_batch(c, (const brasa_token *const *)inputs, lens, (size_t)n, out, (size_t)n * dim, &err);
        rc = st == BRASA_OK ? 0 : fail(st, &err);
    }
    for (long i = 0; rc == 0 && !batch && i < n; i++) {
        st = brasa_embed(c, inputs[i], lens[i], out + (size_t)i * dim, dim, &err);
        rc = st == BRASA_OK ? 0 : fail(st, &err);
    }
    for (long i = 0; rc == 0 && i < n; i++) {
        for (size_t k = 0; k < dim; k++)
            printf("%s%.9g", k ? " " : "", (double)out[(size_t)i * dim + k]);
        printf("\n");
    }
    for (long i = 0; i < n; i++)
        free(inputs[i]);
    free(out);
    brasa_context_free(c);
    brasa_model_free(m);
    return rc;
}
