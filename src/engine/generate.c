/* generate.c: the one generation loop of brasa. brasa_generation_next is its step (sample, accept,
 * end of generation, detokenize, stop strings, limits, the final flush); the server's scheduler
 * calls it for each of its sequences between batched forward passes, and brasa_generate, which the
 * command line uses, is the same step in a loop over one sequence. Text is streamed in whole UTF-8
 * characters through engine/stream.h. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "engine/stream.h"
#include "platform/platform.h"

#define MAX_STOP_STRINGS 16
/* tokens of a reasoning block's opening or closing text (brasa_generation_params.think_*) */
#define MAX_THINK_TOKENS 16

struct brasa_generation {
    brasa_context *ctx;
    const brasa_model *model;
    int32_t seq;
    brasa_sampler *sampler;
    brasa_decoder *decoder;
    int32_t n_predict, top_logprobs, n_sampled;
    char *stop[MAX_STOP_STRINGS + 1];
    gen_stream stream;
    bool ended;
    /* the reasoning budget (brasa_generation_params.think_*): where the reply stands in its block */
    enum { THINK_OFF, THINK_OPENING, THINK_IN, THINK_CLOSING } think;
    int32_t think_budget, n_thought, think_at; /* think_at: open tokens matched, or close tokens given */
    brasa_token think_open[MAX_THINK_TOKENS], think_close[MAX_THINK_TOKENS];
    size_t n_think_open, n_think_close;
};

brasa_generation_params brasa_generation_default_params(void) {
    brasa_generation_params p;
    memset(&p, 0, sizeof p);
    p.top_logprobs = -1;
    return p;
}

void brasa_generation_free(brasa_generation *g) {
    if (!g)
        return;
    for (int i = 0; i < MAX_STOP_STRINGS; i++)
        free(g->stop[i]);
    gen_stream_free(&g->stream);
    brasa_decoder_free(g->decoder);
    free(g);
}

brasa_status brasa_generation_create(brasa_context *ctx, int32_t seq, brasa_sampler *sampler,
                                     const brasa_generation_params *p, brasa_generation **out, brasa_error *err) {
    if (out)
        *out = NULL;
    if (!ctx || !sampler || !p || !out)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_generation_create: invalid arguments");
    if (p->n_predict < 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "n_predict %d must not be negative", p->n_predict);
    if (p->top_logprobs > BRASA_MAX_TOP_LOGPROBS)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "top_logprobs %d is over %d", p->top_logprobs,
                       BRASA_MAX_TOP_LOGPROBS);
    size_t n_stop = 0;
    for (; p->stop && p->stop[n_stop]; n_stop++)
        if (p->stop[n_stop][0] == '\0')
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "stop strings must not be empty");
    if (n_stop > MAX_STOP_STRINGS)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%zu stop strings: at most %d", n_stop, MAX_STOP_STRINGS);
    brasa_generation *g = calloc(1, sizeof *g);
    if (!g)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    g->ctx = ctx;
    g->model = brasa_context_model(ctx);
    g->seq = seq;
    g->sampler = sampler;
    g->n_predict = p->n_predict;
    g->top_logprobs = p->top_logprobs;
    for (size_t k = 0; k < n_stop; k++) {
        const size_t len = strlen(p->stop[k]);
        if (!(g->stop[k] = malloc(len + 1))) {
            brasa_generation_free(g);
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
        }
        memcpy(g->stop[k], p->stop[k], len + 1);
    }
    g->stream = (gen_stream){ (const char *const *)g->stop, p->on_text, p->user_data, { 0 }, false, false, -1 };
    if (p->think_budget > 0) {
        const char *open = p->think_open ? p->think_open : "", *close = p->think_close ? p->think_close : "";
        brasa_status ts = brasa_tokenize(g->model, open, strlen(open), BRASA_TOKENIZE_PARSE_SPECIAL, g->think_open,
                                         MAX_THINK_TOKENS, &g->n_think_open, err);
        if (ts == BRASA_OK)
            ts = brasa_tokenize(g->model, close, strlen(close), BRASA_TOKENIZE_PARSE_SPECIAL, g->think_close,
                                MAX_THINK_TOKENS, &g->n_think_close, err);
        if (ts == BRASA_OK && g->n_think_close == 0)
            ts = err_set(err, BRASA_ERR_INVALID_ARGUMENT, "a reasoning budget needs the text that closes reasoning");
        if (ts != BRASA_OK) {
            brasa_generation_free(g);
            return ts == BRASA_ERR_BUFFER_TOO_SMALL
                       ? err_set(err, BRASA_ERR_INVALID_ARGUMENT, "reasoning's opening or closing text is over %d tokens",
                                 MAX_THINK_TOKENS)
                       : ts;
        }
        g->think_budget = p->think_budget;
        g->think = g->n_think_open ? THINK_OPENING : THINK_IN;
    }
    const brasa_status st = brasa_decoder_create(g->model, p->detokenize_flags, &g->decoder, err);
    if (st != BRASA_OK) {
        brasa_generation_free(g);
        return st;
    }
    *out = g;
    return BRASA_OK;
}

void brasa_generation_flush(brasa_generation *g) {
    if (!g || g->ended)
        return;
    g->ended = true;
    if (g->stream.matched)
        return;
    /* what was held back for a stop string or an unfinished character is output after all */
    const char *rest;
    size_t len;
    brasa_decoder_flush(g->decoder, &rest, &len);
    if (buf_append(&g->stream.pending, rest, len))
        gen_stream_flush(&g->stream);
}

int32_t brasa_generation_count(const brasa_generation *g) {
    return g ? g->n_sampled : 0;
}

/* Where token t (sampled, or given while closing) leaves the reply's reasoning block. */
static void think_track(brasa_generation *g, brasa_token t) {
    switch (g->think) {
    case THINK_OPENING:
        if (t != g->think_open[g->think_at])
            g->think = THINK_OFF; /* the reply does not reason */
        else if ((size_t)++g->think_at == g->n_think_open)
            g->think = THINK_IN;
        break;
    case THINK_IN:
        if (t == g->think_close[0]) {
            g->think = THINK_OFF; /* the model closes it itself */
        } else if (++g->n_thought >= g->think_budget) {
            g->think = THINK_CLOSING;
            g->think_at = 0;
        }
        break;
    case THINK_CLOSING:
        if ((size_t)g->think_at == g->n_think_close)
            g->think = THINK_OFF;
        break;
    case THINK_OFF:
        break;
    }
}

static brasa_status step_done(brasa_generation *g, brasa_generation_step *step, brasa_stop_reason why) {
    step->done = true;
    step->stop_reason = why;
    if (why == BRASA_STOP_STRING)
        step->stop_index = g->stream.matched_index;
    if (why != BRASA_STOP_ABORTED)
        brasa_generation_flush(g);
    g->ended = true;
    return BRASA_OK;
}

brasa_status brasa_generation_next(brasa_generation *g, brasa_generation_step *step, brasa_error *err) {
    if (!g || !step)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_generation_next: invalid arguments");
    memset(step, 0, sizeof *step);
    step->token = BRASA_TOKEN_NONE;
    step->stop_index = -1;
    if (g->ended)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_generation_next: generation is over");
    const float *logits = brasa_seq_logits(g->ctx, g->seq);
    if (!logits)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "sequence %d has no logits: evaluate its prompt first", g->seq);
    const int32_t n_vocab = brasa_logits_size(g->ctx);
    step->forced = g->think == THINK_CLOSING;
    const brasa_token t = step->forced ? g->think_close[g->think_at++] : brasa_sampler_sample(g->sampler, logits, n_vocab);
    if (t == BRASA_TOKEN_NONE)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory while sampling");
    think_track(g, t);
    step->token = t;
    const bool eog = brasa_token_is_eog(g->model, t);
    if (g->top_logprobs >= 0 && !eog) {
        step->has_logprob = true;
        step->n_top = g->top_logprobs;
        step->logprob = brasa_logprobs(logits, n_vocab, t, g->top_logprobs, step->top);
    }
    brasa_sampler_accept(g->sampler, t);
    g->n_sampled++;
    if (eog)
        return step_done(g, step, BRASA_STOP_EOG);
    const char *piece;
    size_t len;
    brasa_status st = brasa_decoder_push(g->decoder, t, &piece, &len, err);
    if (st != BRASA_OK)
        return st;
    if (!gen_stream_push(&g->stream, piece, len))
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory while streaming");
    if (g->stream.matched)
        return step_done(g, step, BRASA_STOP_STRING);
    if (g->stream.stopped)
        return step_done(g, step, BRASA_STOP_ABORTED);
    if (g->n_predict > 0 && g->n_sampled >= g->n_predict)
        return step_done(g, step, BRASA_STOP_LENGTH);
    if (brasa_seq_used(g->ctx, g->seq) >= brasa_context_size(g->ctx))
        return step_done(g, step, BRASA_STOP_CONTEXT);
    return BRASA_OK;
}

brasa_generate_params brasa_generate_default_params(void) {
    brasa_generate_params p;
    memset(&p, 0, sizeof p);
    return p;
}

brasa_status brasa_generate(brasa_context *ctx, brasa_sampler *sampler, const brasa_token *prompt, size_t n_prompt,
                            const brasa_generate_params *params, brasa_generate_stats *stats, brasa_error *err) {
    if (!ctx || !sampler || !params || (!prompt && n_prompt))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_generate: invalid arguments");
    if (n_prompt == 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "the prompt is empty: give at least one token");
    brasa_generate_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->n_prompt = (int32_t)n_prompt;

    brasa_generation_params gp = brasa_generation_default_params();
    gp.n_predict = params->n_predict;
    gp.stop = params->stop;
    gp.detokenize_flags = params->detokenize_flags;
    gp.on_text = params->on_text;
    gp.user_data = params->user_data;
    brasa_generation *g = NULL;
    brasa_status st = brasa_generation_create(ctx, 0, sampler, &gp, &g, err);
    if (st != BRASA_OK)
        return st;

    double t0 = plat_time_seconds();
    st = brasa_decode(ctx, prompt, n_prompt, NULL, err);
    stats->prompt_seconds = plat_time_seconds() - t0;
    for (size_t i = 0; st == BRASA_OK && i < n_prompt; i++)
        brasa_sampler_accept(sampler, prompt[i]);

    double t1 = plat_time_seconds();
    while (st == BRASA_OK) {
        if (params->abort_flag && *params->abort_flag) {
            stats->stop_reason = BRASA_STOP_ABORTED;
            brasa_generation_flush(g);
            break;
        }
        brasa_generation_step step = { 0 };
        st = brasa_generation_next(g, &step, err);
        if (st != BRASA_OK)
            break;
        if (step.done) {
            stats->stop_reason = step.stop_reason;
            break;
        }
        st = brasa_decode(ctx, &step.token, 1, NULL, err);
        if (st == BRASA_OK && params->on_token)
            params->on_token(step.token, params->user_data);
    }
    stats->n_generated = brasa_generation_count(g);
    stats->generate_seconds = plat_time_seconds() - t1;
    brasa_generation_free(g);
    return st;
}
