/* generate.c: the generation loop shared by the command line and the server: evaluate the prompt,
 * then sample, stream and evaluate one token at a time until an end-of-generation token, a stop
 * string, the token limit, a full context or an abort. Text is streamed in whole UTF-8 characters
 * through engine/stream.h. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "engine/stream.h"
#include "core/error.h"
#include "platform/platform.h"

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
    gen_stream s = { params->stop, params->on_text, params->user_data, { 0 }, false, false };

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
        if (st == BRASA_OK && !gen_stream_push(&s, piece, len))
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
            gen_stream_flush(&s);
    }
    gen_stream_free(&s);
    brasa_decoder_free(dec);
    return st;
}
