/* logits_dump: runs a prompt through brasa and writes the logits of every position, for the
 * reference forward-pass test; optionally continues greedily. Uses only the public API.
 *
 * Usage: logits_dump MODEL --out FILE --tokens "ID ID ..." [--greedy N] [--threads T] [--batch B] [--ctx N]
 *        [--kv-type f16|f32] [--device DEV] [--gpu-layers N|all|auto]
 * Says on stderr where the model ran and what it took from the GPU tuning cache
 * ("gpu layers: N; tuned choices: N; tuning note: ...; backend: ..."). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brasa.h"

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

int main(int argc, char **argv) {
    /* under mpirun, process 0 dumps and the others serve it their layers */
    int rank = 0;
    brasa_error gerr;
    if (brasa_group_start(&rank, NULL, &gerr) != BRASA_OK) {
        fprintf(stderr, "logits_dump: %s\n", gerr.message);
        return 1;
    }
    if (rank > 0) {
        brasa_model_params gp = brasa_model_default_params();
        brasa_model *gm = NULL;
        const int grc = argc > 1 && brasa_model_open(argv[1], &gp, &gm, &gerr) == BRASA_OK ? brasa_group_serve(gm, NULL)
                                                                                        : brasa_group_serve(NULL, gerr.message);
        brasa_model_free(gm);
        brasa_group_stop();
        return grc;
    }
    const char *model_path = argc > 1 ? argv[1] : NULL, *out_path = NULL, *tokens_arg = NULL;
    int greedy = 0;
    brasa_context_params cp = brasa_context_default_params();
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--out") == 0) out_path = argv[i + 1];
        else if (strcmp(argv[i], "--tokens") == 0) tokens_arg = argv[i + 1];
        else if (strcmp(argv[i], "--greedy") == 0) greedy = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--threads") == 0) cp.n_threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--batch") == 0) cp.n_batch = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--ctx") == 0) cp.n_ctx = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--kv-type") == 0) cp.kv_type = strcmp(argv[i + 1], "f32") == 0 ? BRASA_KV_F32 : BRASA_KV_F16;
        else if (strcmp(argv[i], "--device") == 0) cp.device = argv[i + 1];
        else if (strcmp(argv[i], "--gpu-layers") == 0)
            cp.gpu_layers = strcmp(argv[i + 1], "all") == 0    ? BRASA_GPU_LAYERS_ALL
                            : strcmp(argv[i + 1], "auto") == 0 ? BRASA_GPU_LAYERS_AUTO
                            : atoi(argv[i + 1]) == 0            ? BRASA_GPU_LAYERS_NONE
                                                                : atoi(argv[i + 1]);
        else {
            fprintf(stderr, "logits_dump: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!model_path || !out_path || !tokens_arg) {
        fprintf(stderr, "usage: logits_dump MODEL --out FILE --tokens \"ID ...\" [--greedy N] [--threads T] [--batch B] [--ctx N] [--kv-type f16|f32] [--device DEV] [--gpu-layers N|all|auto]\n");
        return 2;
    }
    size_t n = 0, cap = 16;
    brasa_token *tokens = malloc(cap * sizeof *tokens);
    for (char *s = (char *)tokens_arg, *end; *s; s = end) {
        long v = strtol(s, &end, 10);
        if (end == s)
            break;
        if (n == cap)
            tokens = realloc(tokens, (cap *= 2) * sizeof *tokens);
        tokens[n++] = (brasa_token)v;
    }
    brasa_error err;
    brasa_model *m = NULL;
    brasa_context *c = NULL;
    float *all = NULL;
    int rc = 1;
    brasa_model_params mp = brasa_model_default_params();
    if (brasa_model_open(model_path, &mp, &m, &err) != BRASA_OK || brasa_context_create(m, &cp, &c, &err) != BRASA_OK) {
        fprintf(stderr, "logits_dump: %s\n", err.message);
        goto done;
    }
    const char *note = NULL;
    const int tuned = brasa_context_tuning(c, &note);
    fprintf(stderr, "gpu layers: %d; tuned choices: %d; tuning note: %s; backend: %s\n", brasa_context_gpu_layers(c), tuned,
            note[0] ? note : "none", brasa_context_backend(c));
    const int V = brasa_logits_size(c);
    all = malloc(n * (size_t)V * sizeof *all);
    if (brasa_decode(c, tokens, n, all, &err) != BRASA_OK) {
        fprintf(stderr, "logits_dump: %s\n", err.message);
        goto done;
    }
    FILE *f = fopen(out_path, "wb");
    if (!f || fwrite(all, sizeof *all, n * (size_t)V, f) != n * (size_t)V || fclose(f) != 0) {
        fprintf(stderr, "logits_dump: cannot write %s\n", out_path);
        goto done;
    }
    for (int i = 0; i < greedy; i++) {
        brasa_token t = argmax(brasa_logits(c), V);
        printf("%s%d", i ? " " : "", t);
        if (i + 1 < greedy && brasa_decode(c, &t, 1, NULL, &err) != BRASA_OK) {
            fprintf(stderr, "logits_dump: %s\n", err.message);
            goto done;
        }
    }
    if (greedy)
        printf("\n");
    rc = 0;
done:
    free(all);
    free(tokens);
    brasa_context_free(c);
    brasa_model_free(m);
    brasa_group_stop();
    return rc;
}
