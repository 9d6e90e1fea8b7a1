/* test_batch_step_matches_alone: sequences decoded together (brasa_seq_decode_step, continuous
 * batching) get bit for bit the logits each gets decoding alone in a context of its own, on real
 * models, with 8-bit and float activations (a model over 1B parameters: 8-bit only), for
 * 1..BK_BATCH_EXACT_MAX+2 sequences (the last split into two forward passes). Also: prefix copies
 * between sequences, and bad arguments.
 *
 * Usage: test_batch_step_matches_alone MODEL.gguf... (exit 77 when a model is missing) */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brasa.h"
#include "engine_check.h"
#include "../test_env.h"

enum { N_SEQ = 17, N_STEPS = 6, MAX_PROMPT = 64 };

/* Different prompts of different lengths, so the sequences sit at different positions. */
static size_t prompt_of(const brasa_model *m, int s, brasa_token *out) {
    static const char *texts[] = { "The capital of France is", "Once upon a time", "def fib(n):",
                                   "¿Qué tal? Canción, pingüino, ñandú", "1, 2, 3, 4,", "Water boils at" };
    char text[160];
    snprintf(text, sizeof text, "%s%s", texts[s % 6], s >= 6 ? " and then" : "");
    size_t n = 0;
    brasa_error err;
    if (brasa_tokenize(m, text, strlen(text), BRASA_TOKENIZE_ADD_BOS, out, MAX_PROMPT, &n, &err) != BRASA_OK)
        return 0;
    return n;
}

static void check_model(const char *path, const char *activations) {
    brasa_error err;
    brasa_model *m = NULL;
    brasa_model_params mp = brasa_model_default_params();
    if (brasa_model_open(path, &mp, &m, &err) != BRASA_OK) {
        CHECK(0, "%s: %s", path, err.message);
        return;
    }
    const int32_t V = brasa_vocab_size(m);
    /* a 1.5B model: 8-bit activations (the default) and the two group sizes that matter, to keep
     * the suite short; the small models take every size in both modes */
    brasa_model_desc desc;
    brasa_model_describe(m, &desc);
    const bool big = desc.n_params > 1000000000;
    if (big && strcmp(activations, "f32") == 0) {
        brasa_model_free(m);
        return;
    }
    brasa_context_params cp = brasa_context_default_params();
    cp.n_ctx = 128;
    cp.n_threads = 2;
    brasa_context *alone = NULL, *many = NULL;
    CHECK(brasa_context_create(m, &cp, &alone, &err) == BRASA_OK, "%s", err.message);
    cp.n_seq = N_SEQ;
    CHECK(brasa_context_create(m, &cp, &many, &err) == BRASA_OK, "%s", err.message);
    if (!alone || !many)
        goto done;
    CHECK(brasa_context_seqs(many) == N_SEQ, "seqs %d", brasa_context_seqs(many));

    /* expected: each sequence alone, greedy */
    static brasa_token expected[N_SEQ][N_STEPS];
    static float expected_logits[N_SEQ][N_STEPS];
    for (int s = 0; s < N_SEQ; s++) {
        brasa_token p[MAX_PROMPT];
        size_t n = prompt_of(m, s, p);
        brasa_context_reset(alone);
        CHECK(brasa_decode(alone, p, n, NULL, &err) == BRASA_OK, "%s", err.message);
        for (int k = 0; k < N_STEPS; k++) {
            const float *l = brasa_logits(alone);
            expected[s][k] = argmax(l, V);
            expected_logits[s][k] = l[expected[s][k]];
            CHECK(brasa_decode(alone, &expected[s][k], 1, NULL, &err) == BRASA_OK, "%s", err.message);
        }
    }
    /* together: every group size, sequences joining at their own prompt lengths */
    const int sizes[] = { 1, 2, 4, 5, 8, 15, N_SEQ }, big_sizes[] = { 5, N_SEQ };
    const size_t n_sizes = big ? sizeof big_sizes / sizeof big_sizes[0] : sizeof sizes / sizeof sizes[0];
    for (size_t g = 0; g < n_sizes; g++) {
        const int n_seq = big ? big_sizes[g] : sizes[g];
        brasa_context_reset(many);
        for (int s = 0; s < n_seq; s++) {
            brasa_token p[MAX_PROMPT];
            size_t n = prompt_of(m, s, p);
            CHECK(brasa_seq_decode(many, s, p, n, NULL, &err) == BRASA_OK, "%s", err.message);
        }
        int mismatched = 0;
        for (int k = 0; k < N_STEPS; k++) {
            int32_t seqs[N_SEQ];
            brasa_token toks[N_SEQ];
            for (int s = 0; s < n_seq; s++) {
                const float *l = brasa_seq_logits(many, s);
                toks[s] = argmax(l, V);
                seqs[s] = s;
                if (toks[s] != expected[s][k] || memcmp(&l[toks[s]], &expected_logits[s][k], sizeof(float)) != 0)
                    mismatched++;
            }
            CHECK(brasa_seq_decode_step(many, seqs, toks, (size_t)n_seq, &err) == BRASA_OK, "%s", err.message);
        }
        CHECK(mismatched == 0, "%s (%s activations), %d sequences together: %d of %d tokens or logits differ from alone",
              path, activations, n_seq, mismatched, n_seq * N_STEPS);
    }
    /* a prefix copied from one sequence continues exactly like the original */
    {
        brasa_context_reset(many);
        brasa_token p[MAX_PROMPT];
        size_t n = prompt_of(m, 0, p);
        CHECK(brasa_seq_decode(many, 0, p, n, NULL, &err) == BRASA_OK, "%s", err.message);
        CHECK(brasa_seq_copy(many, 0, 3, (int32_t)n - 1, &err) == BRASA_OK, "%s", err.message);
        CHECK(brasa_seq_used(many, 3) == (int32_t)n - 1, "copied %d", brasa_seq_used(many, 3));
        CHECK(brasa_seq_logits(many, 3) == NULL, "logits after a copy");
        CHECK(brasa_seq_decode(many, 3, p + n - 1, 1, NULL, &err) == BRASA_OK, "%s", err.message);
        CHECK(memcmp(brasa_seq_logits(many, 3), brasa_seq_logits(many, 0), (size_t)V * sizeof(float)) == 0,
              "a copied prefix gives other logits");
    }
    /* bad arguments are refused and change nothing */
    {
        const int32_t used = brasa_seq_used(many, 0);
        int32_t seqs[2] = { 0, 0 };
        brasa_token toks[2] = { 1, 1 };
        CHECK(brasa_seq_decode_step(many, seqs, toks, 2, &err) == BRASA_ERR_INVALID_ARGUMENT, "a sequence twice");
        seqs[1] = N_SEQ;
        CHECK(brasa_seq_decode_step(many, seqs, toks, 2, &err) == BRASA_ERR_INVALID_ARGUMENT, "sequence out of range");
        seqs[1] = 1;
        toks[1] = V + 5;
        CHECK(brasa_seq_decode_step(many, seqs, toks, 2, &err) == BRASA_ERR_INVALID_ARGUMENT, "token out of range");
        CHECK(brasa_seq_decode(many, -1, toks, 1, NULL, &err) == BRASA_ERR_INVALID_ARGUMENT, "sequence -1");
        CHECK(brasa_seq_copy(many, 0, 1, used + 1, &err) == BRASA_ERR_INVALID_ARGUMENT, "copy past the end");
        CHECK(brasa_seq_used(many, 0) == used, "a refused call changed the cache");
        /* a full sequence stops the step before anything is evaluated */
        brasa_context_reset(many);
        brasa_token fill[128];
        for (int i = 0; i < 128; i++)
            fill[i] = 1;
        CHECK(brasa_seq_decode(many, 1, fill, 128, NULL, &err) == BRASA_OK, "%s", err.message);
        CHECK(brasa_seq_decode(many, 0, fill, 4, NULL, &err) == BRASA_OK, "%s", err.message);
        seqs[0] = 0;
        seqs[1] = 1;
        toks[1] = 1;
        CHECK(brasa_seq_decode_step(many, seqs, toks, 2, &err) == BRASA_CONTEXT_FULL, "a full sequence in a step");
        CHECK(brasa_seq_used(many, 0) == 4, "a refused step advanced a sequence");
    }
done:
    brasa_context_free(alone);
    brasa_context_free(many);
    brasa_model_free(m);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            printf("SKIP: %s is missing (fetch it with scripts/fetch_models.py)\n", argv[i]);
            return 77;
        }
        fclose(f);
    }
    static const char *modes[] = { "q8", "f32" };
    for (int md = 0; md < 2; md++) {
        set_env("BRASA_CPU_ACTIVATIONS", modes[md]);
        for (int i = 1; i < argc; i++)
            check_model(argv[i], modes[md]);
    }
    printf("batch_step: %s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
