/* test_sliding_window_ring: gemma3's sliding-window layers keep a ring of window + batch - 1 rows
 * instead of the whole context, and that changes no result: a long prompt and greedy decoding give
 * bit for bit the logits of a context whose rings never wrap (its batch is as large as its context,
 * so every layer keeps every position). Rewinds within the ring's slack keep the tokens, longer ones
 * empty the sequence, and prefix copies the ring can no longer serve fail.
 *
 * Usage: test_sliding_window_ring GEMMA3.gguf (exit 77 when the model is missing) */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brasa.h"
#include "engine_check.h"

enum { N_CTX = 1024, CHUNK = 64, MAX_PROMPT = 4096 };

static brasa_context *make(const brasa_model *m, int32_t n_batch, int32_t n_seq) {
    brasa_context_params cp = brasa_context_default_params();
    cp.n_ctx = N_CTX;
    cp.n_batch = n_batch;
    cp.n_threads = 2;
    cp.n_seq = n_seq;
    brasa_context *c = NULL;
    brasa_error err;
    if (brasa_context_create(m, &cp, &c, &err) != BRASA_OK) {
        CHECK(0, "context: %s", err.message);
        return NULL;
    }
    return c;
}

/* Feeds tokens to both contexts in the same calls and compares the last logits after each. */
static void feed(brasa_context *ring, brasa_context *full, const brasa_token *t, size_t n, int32_t V, const char *what) {
    brasa_error err;
    for (size_t done = 0; done < n; done += CHUNK) {
        const size_t k = n - done < CHUNK ? n - done : CHUNK;
        CHECK(brasa_decode(ring, t + done, k, NULL, &err) == BRASA_OK, "%s: %s", what, err.message);
        CHECK(brasa_decode(full, t + done, k, NULL, &err) == BRASA_OK, "%s: %s", what, err.message);
        const float *a = brasa_logits(ring), *b = brasa_logits(full);
        if (!a || !b || memcmp(a, b, (size_t)V * sizeof *a) != 0) {
            CHECK(0, "%s: logits differ after %zu tokens (position %d)", what, done + k, brasa_context_used(full));
            return;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s GEMMA3.gguf\n", argv[0]);
        return 2;
    }
    brasa_error err;
    brasa_model *m = NULL;
    brasa_model_params mp = brasa_model_default_params();
    if (brasa_model_open(argv[1], &mp, &m, &err) != BRASA_OK) {
        printf("SKIP %s\n", err.message);
        return 77;
    }
    brasa_model_desc d;
    brasa_model_describe(m, &d);
    CHECK(d.sliding_window > 0 && d.sliding_window + CHUNK - 1 < N_CTX, "window %d", d.sliding_window);
    const int32_t V = brasa_vocab_size(m);

    brasa_context *ring = make(m, CHUNK, 1), *full = make(m, N_CTX, 1);
    if (!ring || !full)
        return 1;
    brasa_context_memory mr, mf;
    brasa_context_memory_use(ring, &mr);
    brasa_context_memory_use(full, &mf);
    printf("KV cache at %d tokens: %.1f MB with rings of %d rows, %.1f MB without\n", N_CTX, (double)mr.kv_bytes / 1e6,
           d.sliding_window + CHUNK - 1, (double)mf.kv_bytes / 1e6);
    CHECK(mr.kv_bytes < mf.kv_bytes, "rings save nothing: %llu of %llu bytes",
          (unsigned long long)mr.kv_bytes, (unsigned long long)mf.kv_bytes);

    /* a prompt well past the window, so every ring wraps */
    brasa_token *prompt = malloc(MAX_PROMPT * sizeof *prompt);
    char text[8192] = "";
    for (int i = 0; strlen(text) + 200 < sizeof text; i++) {
        char line[200];
        snprintf(line, sizeof line, "Line %d: the quick brown fox jumps over the lazy dog; ¿qué tal, ñandú? ", i * 7 + 3);
        strcat(text, line);
    }
    size_t n = 0;
    CHECK(brasa_tokenize(m, text, strlen(text), BRASA_TOKENIZE_ADD_BOS, prompt, MAX_PROMPT, &n, &err) == BRASA_OK,
          "tokenize: %s", err.message);
    n = n > 720 ? 720 : n;
    CHECK(n > (size_t)d.sliding_window + 2 * CHUNK, "prompt of %zu tokens", n);
    feed(ring, full, prompt, n, V, "prompt");

    /* greedy decoding, one token at a time */
    brasa_token next = argmax(brasa_logits(full), V);
    for (int i = 0; i < 24; i++) {
        feed(ring, full, &next, 1, V, "decode");
        next = argmax(brasa_logits(full), V);
    }

    /* a rewind within the slack keeps the tokens, and both continue alike */
    const int32_t used = brasa_context_used(full);
    brasa_context_truncate(ring, used - 40);
    brasa_context_truncate(full, used - 40);
    CHECK(brasa_context_used(ring) == used - 40, "short rewind kept %d of %d", brasa_context_used(ring), used - 40);
    feed(ring, full, prompt + 100, 40, V, "after a rewind");
    /* a longer one starts the ring's sequence over */
    brasa_context_truncate(ring, used - 300);
    CHECK(brasa_context_used(ring) == 0, "long rewind left %d tokens", brasa_context_used(ring));

    /* prefix copies: served while the ring still holds the window, refused after */
    brasa_context *two = make(m, CHUNK, 2);
    if (two) {
        CHECK(brasa_seq_decode(two, 0, prompt, 700, NULL, &err) == BRASA_OK, "%s", err.message);
        CHECK(brasa_seq_copy(two, 0, 1, 690, &err) == BRASA_OK, "near copy: %s", err.message);
        CHECK(brasa_seq_used(two, 1) == 690, "copy holds %d", brasa_seq_used(two, 1));
        CHECK(brasa_seq_copy(two, 0, 1, 300, &err) != BRASA_OK, "a copy of 300 tokens from 700 was not refused");
        /* the copy continues exactly as the original would have */
        brasa_seq_truncate(two, 0, 690);
        CHECK(brasa_seq_decode(two, 0, prompt + 690, 5, NULL, &err) == BRASA_OK, "%s", err.message);
        CHECK(brasa_seq_decode(two, 1, prompt + 690, 5, NULL, &err) == BRASA_OK, "%s", err.message);
        const float *a = brasa_seq_logits(two, 0), *b = brasa_seq_logits(two, 1);
        CHECK(a && b && memcmp(a, b, (size_t)V * sizeof *a) == 0, "the copied sequence continues differently");
        brasa_context_free(two);
    }
    free(prompt);
    brasa_context_free(ring);
    brasa_context_free(full);
    brasa_model_free(m);
    printf("%s\n", failures ? "FAILED" : "ok: rings match full caches");
    return failures ? 1 : 0;
}
