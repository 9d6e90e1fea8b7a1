/* generate.c: the generation loop shared by the command line and the server: evaluate the prompt,
 * then sample, stream and evaluate one token at a time until an end-of-generation token, a stop
 * string, the token limit, a full context or an abort. Text is streamed in whole UTF-8 characters,
 * and text that might be the start of a stop string is held back until it is known not to be. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "platform/platform.h"

brasa_generate_params brasa_generate_default_params(void) {
    brasa_generate_params p;
    memset(&p, 0, sizeof p);
    return p;
}

typedef struct streamer {
    const brasa_generate_params *p;
    buf pending;   /* decoded text not yet handed out */
    bool stopped;  /* on_text asked to stop */
    bool matched;  /* a stop string appeared */
} streamer;

/* Length of the longest suffix of s that is a proper prefix of some stop string. */
static size_t held_back(const char *s, size_t n, const char *const *stop) {
    size_t best = 0;
    for (size_t k = 0; stop && stop[k]; k++) {
        size_t len = strlen(stop[k]);
        for (size_t l = len - 1 < n ? len - 1 : n; l > best; l--)
            if (memcmp(s + n - l, stop[k], l) == 0) {
                best = l;
                break;
            }
    }
    return best;
}

static void emit(streamer *s, size_t n) {
    if (n > 0 && s->p->on_text && !s->p->on_text(s->pending.data, n, s->p->user_data))
        s->stopped = true;
    if (s->pending.len > n)
        memmove(s->pending.data, s->pending.data + n, s->pending.len - n);
    s->pending.len -= n;
}

/* Adds text and hands out what is safe; detects stop strings. */
static bool stream_text(streamer *s, const char *text, size_t n) {
    if (!buf_append(&s->pending, text, n))
        return false;
    const char *const *stop = s->p->stop;
    size_t cut = s->pending.len;
    for (size_t k = 0; stop && stop[k]; k++) {
        size_t len = strlen(stop[k]);
        if (len == 0 || len > s->pending.len)
            continue;
        for (size_t i = 0; i + len <= s->pending.len; i++)
            if (memcmp(s->pending.data + i, stop[k], len) == 0) {
                if (i < cut)
                    cut = i;
                break;
            }
    }
    if (cut < s->pending.len) {
        s->matched = true;
        s->pending.len = cut;
        emit(s, cut);
        return true;
    }
    emit(s, s->pending.len - held_back(s->pending.data, s->pending.len, stop));
    return true;
}

brasa_status brasa_generate(brasa_context *ctx, brasa_sampler *sampler, const brasa_token *prompt, size_t n_prompt,
                            const brasa_generate_params *params, brasa_generate_stats *stats, brasa_error *err) {
    if (!ctx || !sampler || !params || (!prompt && n_prompt))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_generate: invalid arguments");
    if (n_prompt == 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "the prompt is empty: give at least one token");
    if (params->n_predict < 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "n_predict %d must not be negative", params->n_predict);
    for (size_t k = 0; params->stop && params->stop[k]; k++)
        if (params->stop[k][0] == '\0')
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "stop strings must not be empty");
    brasa_generate_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->n_prompt = (int32_t)n_prompt;

    const brasa_model *model = brasa_context_model(ctx);
    brasa_decoder *dec = NULL;
    brasa_status st = brasa_decoder_create(model, BRASA_DETOKENIZE_DEFAULT, &dec, err);
    if (st != BRASA_OK)
        return st;
    streamer s = { params, { 0 }, false, false };

    double t0 = plat_time_seconds();
    st = brasa_decode(ctx, prompt, n_prompt, NULL, err);
    stats->prompt_seconds = plat_time_seconds() - t0;
    for (size_t i = 0; st == BRASA_OK && i < n_prompt; i++)
        brasa_sampler_accept(sampler, prompt[i]);

    double t1 = plat_time_seconds();
    while (st == BRASA_OK) {
        if (params->abort_flag && *params->abort_flag) {
            stats->stop_reason = BRASA_STOP_ABORTED;
            break;
        }
        if (params->n_predict > 0 && stats->n_generated >= params->n_predict) {
            stats->stop_reason = BRASA_STOP_LENGTH;
            break;
        }
        brasa_token t = brasa_sampler_sample(sampler, brasa_logits(ctx), brasa_logits_size(ctx));
        if (t == BRASA_TOKEN_NONE) {
            st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory while sampling");
            break;
        }
        brasa_sampler_accept(sampler, t);
        stats->n_generated++;
        if (brasa_token_is_eog(model, t)) {
            stats->stop_reason = BRASA_STOP_EOG;
            break;
        }
        const char *piece;
        size_t len;
        st = brasa_decoder_push(dec, t, &piece, &len, err);
        if (st == BRASA_OK && !stream_text(&s, piece, len))
            st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory while streaming");
        if (st != BRASA_OK)
            break;
        if (s.matched) {
            stats->stop_reason = BRASA_STOP_STRING;
            break;
        }
        if (s.stopped) {
            stats->stop_reason = BRASA_STOP_ABORTED;
            break;
        }
        if (params->n_predict > 0 && stats->n_generated >= params->n_predict) {
            stats->stop_reason = BRASA_STOP_LENGTH;
            break;
        }
        if (brasa_context_used(ctx) >= brasa_context_size(ctx)) {
            stats->stop_reason = BRASA_STOP_CONTEXT;
            break;
        }
        st = brasa_decode(ctx, &t, 1, NULL, err);
        if (st == BRASA_OK && params->on_token)
            params->on_token(t, params->user_data);
    }
    stats->generate_seconds = plat_time_seconds() - t1;
    if (st == BRASA_OK && !s.matched) {
        /* what was held back for a stop string or an unfinished character is output after all */
        const char *rest;
        size_t len;
        brasa_decoder_flush(dec, &rest, &len);
        if (buf_append(&s.pending, rest, len))
            emit(&s, s.pending.len);
    }
    buf_free(&s.pending);
    brasa_decoder_free(dec);
    return st;
}
