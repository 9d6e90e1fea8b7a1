/* test_generation_steps: the step-wise generation API (brasa_generation_*) on a real model, against
 * an independent greedy loop over brasa_decode and the detokenizer: the same tokens and the same
 * text; n_predict and a full context end it as LENGTH and CONTEXT; a stop string ends it before the
 * string, naming which one (the earliest in the text when two match), with the text that followed
 * never handed out; a false from on_text ends it as ABORTED; log-probabilities come with each
 * token; a second sequence of one context is followed on its own; bad arguments are refused.
 *
 * Usage: test_generation_steps MODEL.gguf (exit 77 when it is missing) */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brasa.h"
#include "engine_check.h"

enum { N_GEN = 24, MAX_PROMPT = 64, MAX_STEPS = 128 /* more than the context holds */ };

typedef struct text_sink {
    char text[4096];
    size_t len;
    int calls, stop_after; /* stop_after > 0: return false on that call */
} text_sink;

static bool on_text(const char *text, size_t len, void *user) {
    text_sink *t = user;
    if (t->len + len < sizeof t->text) {
        memcpy(t->text + t->len, text, len);
        t->len += len;
        t->text[t->len] = '\0';
    }
    return ++t->calls != t->stop_after;
}

/* The reference: greedy by hand, every token's text decoded with the detokenizer. */
static size_t reference(brasa_context *ctx, const brasa_model *m, const brasa_token *p, size_t n, brasa_token *out,
                        char *text, size_t cap) {
    brasa_error err;
    brasa_context_reset(ctx);
    if (brasa_decode(ctx, p, n, NULL, &err) != BRASA_OK)
        return 0;
    size_t k = 0, len = 0;
    text[0] = '\0';
    while (k < N_GEN) {
        const brasa_token t = argmax(brasa_logits(ctx), brasa_logits_size(ctx));
        out[k++] = t;
        if (brasa_token_is_eog(m, t))
            break;
        char piece[256];
        size_t plen = 0;
        if (brasa_detokenize(m, &t, 1, BRASA_DETOKENIZE_DEFAULT, piece, sizeof piece, &plen, &err) == BRASA_OK &&
            len + plen < cap) {
            memcpy(text + len, piece, plen);
            len += plen;
            text[len] = '\0';
        }
        if (brasa_decode(ctx, &t, 1, NULL, &err) != BRASA_OK)
            break;
    }
    return k;
}

/* Runs the step API over sequence seq (prompt evaluated here), returning the steps made. */
static int run_steps(brasa_context *ctx, int32_t seq, const brasa_token *p, size_t n, const brasa_generation_params *gp,
                     brasa_token *out, brasa_generation_step *last) {
    brasa_error err;
    brasa_sampler_params sp = brasa_sampler_default_params();
    sp.temperature = 0;
    brasa_sampler *s = NULL;
    brasa_generation *g = NULL;
    if (brasa_sampler_create(&sp, &s, &err) != BRASA_OK)
        return -1;
    brasa_seq_truncate(ctx, seq, 0);
    int k = -1;
    if (brasa_seq_decode(ctx, seq, p, n, NULL, &err) == BRASA_OK &&
        brasa_generation_create(ctx, seq, s, gp, &g, &err) == BRASA_OK) {
        for (k = 0;;) {
            if (brasa_generation_next(g, last, &err) != BRASA_OK) {
                CHECK(0, "step: %s", err.message);
                break;
            }
            out[k++] = last->token;
            if (last->done || k == MAX_STEPS || brasa_seq_decode(ctx, seq, &last->token, 1, NULL, &err) != BRASA_OK)
                break;
        }
        CHECK(brasa_generation_count(g) == k, "count %d, steps %d", brasa_generation_count(g), k);
        brasa_generation_step after;
        CHECK(brasa_generation_next(g, &after, &err) != BRASA_OK, "a step after the end is refused");
    } else {
        CHECK(0, "%s", err.message);
    }
    brasa_generation_free(g);
    brasa_sampler_free(s);
    return k;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_generation_steps MODEL.gguf\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 77;
    fclose(f);
    brasa_error err;
    brasa_model *m = NULL;
    brasa_model_params mp = brasa_model_default_params();
    if (brasa_model_open(argv[1], &mp, &m, &err) != BRASA_OK) {
        printf("FAIL %s: %s\n", argv[1], err.message);
        return 1;
    }
    brasa_context_params cp = brasa_context_default_params();
    cp.n_ctx = 96;
    cp.n_threads = 2;
    cp.n_seq = 2;
    brasa_context *ctx = NULL, *alone = NULL;
    CHECK(brasa_context_create(m, &cp, &ctx, &err) == BRASA_OK, "%s", err.message);
    cp.n_seq = 1;
    CHECK(brasa_context_create(m, &cp, &alone, &err) == BRASA_OK, "%s", err.message);
    const char *prompt = "Once upon a time, in a small village,";
    brasa_token p[MAX_PROMPT], want[N_GEN + 1], got[MAX_STEPS];
    size_t n = 0;
    CHECK(brasa_tokenize(m, prompt, strlen(prompt), BRASA_TOKENIZE_ADD_BOS, p, MAX_PROMPT, &n, &err) == BRASA_OK,
          "%s", err.message);
    char ref_text[4096];
    const size_t n_ref = ctx && alone ? reference(alone, m, p, n, want, ref_text, sizeof ref_text) : 0;
    CHECK(n_ref == N_GEN && strlen(ref_text) > 20, "the reference made %zu tokens: '%s'", n_ref, ref_text);

    /* the same tokens and text, on either sequence, ending by n_predict */
    for (int32_t seq = 0; seq < 2 && n_ref == N_GEN; seq++) {
        text_sink sink = { .stop_after = 0 };
        brasa_generation_params gp = brasa_generation_default_params();
        gp.n_predict = N_GEN;
        gp.on_text = on_text;
        gp.user_data = &sink;
        gp.top_logprobs = 3;
        brasa_generation_step last;
        const int k = run_steps(ctx, seq, p, n, &gp, got, &last);
        CHECK(k == N_GEN && memcmp(got, want, sizeof *got * N_GEN) == 0, "seq %d: %d tokens, not the reference's", seq, k);
        CHECK(last.done && last.stop_reason == BRASA_STOP_LENGTH && last.stop_index == -1, "seq %d ends as LENGTH", seq);
        CHECK(strcmp(sink.text, ref_text) == 0, "seq %d text '%s' vs '%s'", seq, sink.text, ref_text);
        CHECK(last.has_logprob && last.n_top == 3 && last.top[0].logprob >= last.logprob && last.logprob <= 0 &&
              last.top[0].token == last.token, "greedy: the token is the most likely, with its log-probability");
    }

    /* stop strings: the earliest in the text wins; the text ends before it */
    if (n_ref == N_GEN) {
        const char *mid = ref_text + strlen(ref_text) / 2;
        char early[8], late[8];
        snprintf(early, sizeof early, "%.3s", ref_text + 4);
        snprintf(late, sizeof late, "%.3s", mid);
        const char *stops[] = { late, early, NULL };
        text_sink sink = { .stop_after = 0 };
        brasa_generation_params gp = brasa_generation_default_params();
        gp.stop = stops;
        gp.on_text = on_text;
        gp.user_data = &sink;
        brasa_generation_step last;
        run_steps(ctx, 0, p, n, &gp, got, &last);
        const char *at = strstr(ref_text, early);
        CHECK(last.done && last.stop_reason == BRASA_STOP_STRING && last.stop_index == 1,
              "a stop string ends it, naming the earlier one (%d, index %d)", last.stop_reason, last.stop_index);
        CHECK(at && sink.len == (size_t)(at - ref_text) && strncmp(sink.text, ref_text, sink.len) == 0,
              "the text ends before '%s': '%s'", early, sink.text);
    }

    /* on_text saying stop ends it as ABORTED; a small context ends as CONTEXT */
    {
        text_sink sink = { .stop_after = 3 };
        brasa_generation_params gp = brasa_generation_default_params();
        gp.on_text = on_text;
        gp.user_data = &sink;
        brasa_generation_step last;
        const int k = run_steps(ctx, 1, p, n, &gp, got, &last);
        CHECK(last.done && last.stop_reason == BRASA_STOP_ABORTED && sink.calls == 3 && k >= 3,
              "on_text false: ABORTED after its call (%d, %d calls)", last.stop_reason, sink.calls);
        gp = brasa_generation_default_params();
        run_steps(ctx, 0, p, n, &gp, got, &last);
        CHECK(last.done && (last.stop_reason == BRASA_STOP_CONTEXT || last.stop_reason == BRASA_STOP_EOG) &&
              brasa_seq_used(ctx, 0) <= brasa_context_size(ctx), "no limit: until the context is full or the turn ends");
    }

    /* bad arguments */
    {
        brasa_sampler_params sp = brasa_sampler_default_params();
        brasa_sampler *s = NULL;
        brasa_generation *g = NULL;
        brasa_generation_params gp = brasa_generation_default_params();
        CHECK(brasa_sampler_create(&sp, &s, &err) == BRASA_OK, "%s", err.message);
        gp.n_predict = -1;
        CHECK(brasa_generation_create(ctx, 0, s, &gp, &g, &err) == BRASA_ERR_INVALID_ARGUMENT && !g, "n_predict < 0");
        gp = brasa_generation_default_params();
        gp.top_logprobs = 21;
        CHECK(brasa_generation_create(ctx, 0, s, &gp, &g, &err) == BRASA_ERR_INVALID_ARGUMENT && !g, "top_logprobs 21");
        const char *empty[] = { "", NULL };
        gp = brasa_generation_default_params();
        gp.stop = empty;
        CHECK(brasa_generation_create(ctx, 0, s, &gp, &g, &err) == BRASA_ERR_INVALID_ARGUMENT && !g, "empty stop");
        gp = brasa_generation_default_params();
        brasa_context_reset(ctx);
        CHECK(brasa_generation_create(ctx, 0, s, &gp, &g, &err) == BRASA_OK, "%s", err.message);
        brasa_generation_step step;
        CHECK(brasa_generation_next(g, &step, &err) == BRASA_ERR_INVALID_ARGUMENT, "no logits yet: refused");
        CHECK(brasa_generation_next(NULL, &step, &err) == BRASA_ERR_INVALID_ARGUMENT, "NULL generation");
        brasa_generation_free(g);
        brasa_generation_free(NULL);
        brasa_sampler_free(s);
    }
    brasa_context_free(ctx);
    brasa_context_free(alone);
    brasa_model_free(m);
    printf("generation steps: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
