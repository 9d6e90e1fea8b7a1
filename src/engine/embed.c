/* embed.c: embeddings (brasa_embed): inputs through forward passes that end with the final hidden
 * states (context.h), pooled per input as the model's file says and scaled to unit length.
 *
 * An encoder sees each input whole, so several short inputs share one pass (each a run of the
 * batch, attending only to itself) and the weights are read once for all of them. A causal model
 * reads an input in batches through sequence 0's cache, pooling as it goes: the mean sums every
 * batch's rows, the first and last token come from the first and last batch. Sums are in double:
 * a mean over hundreds of rows should not depend on their order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "engine/context.h"
#include "model/model.h"

const char *brasa_pooling_name(brasa_pooling pooling) {
    switch (pooling) {
    case BRASA_POOLING_NONE: return "none";
    case BRASA_POOLING_MEAN: return "mean";
    case BRASA_POOLING_CLS: return "cls";
    case BRASA_POOLING_LAST: return "last";
    case BRASA_POOLING_RANK: return "rank";
    }
    return "unknown";
}

/* One input's pooling in progress: the sum of the rows taken (one row for cls and last). */
typedef struct pooled {
    double *sum; /* (n_embd) */
    int64_t rows;
} pooled;

/* Takes rows [row0, row0 + n) of hidden, the part of one input a pass computed; first and last say
 * whether they hold the input's first and last token. */
static brasa_status take_rows(const bk_tensor *hidden, int64_t row0, int64_t n, bool first, bool last, brasa_pooling how,
                              float *host, pooled *p, brasa_error *err) {
    const int64_t from = how == BRASA_POOLING_MEAN ? row0 : how == BRASA_POOLING_CLS ? row0 : row0 + n - 1;
    const int64_t count = how == BRASA_POOLING_MEAN ? n : 1;
    if ((how == BRASA_POOLING_CLS && !first) || (how == BRASA_POOLING_LAST && !last))
        return BRASA_OK;
    brasa_status st = hidden->dev->ops->download(hidden, host, from, count, err);
    if (st != BRASA_OK)
        return st;
    const int64_t dim = hidden->ne0;
    for (int64_t r = 0; r < count; r++)
        for (int64_t i = 0; i < dim; i++)
            p->sum[i] += (double)host[r * dim + i];
    p->rows += count;
    return BRASA_OK;
}

/* The pooled vector (the mean of the rows taken) at unit length, into out; cleared for the next. */
static void finish(pooled *p, int64_t dim, float *out) {
    double norm = 0.0;
    for (int64_t i = 0; i < dim; i++) {
        p->sum[i] /= (double)p->rows;
        norm += p->sum[i] * p->sum[i];
    }
    /* as sentence-transformers' Normalize (torch's normalize: divide by max(norm, 1e-12)) */
    norm = sqrt(norm);
    const double scale = 1.0 / (norm > 1e-12 ? norm : 1e-12);
    for (int64_t i = 0; i < dim; i++)
        out[i] = (float)(p->sum[i] * scale);
    memset(p->sum, 0, (size_t)dim * sizeof *p->sum);
    p->rows = 0;
}

/* Every input checked before any is evaluated: the caller's mistake costs no computing. */
static brasa_status check_inputs(brasa_context *c, const brasa_token *const *inputs, const size_t *n_tokens, size_t n_inputs,
                                 float *out, size_t out_cap, brasa_error *err) {
    const brasa_model *m = brasa_context_model(c);
    const arch_hparams *hp = &m->hp;
    if (!m->desc.is_embedding)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "%s makes no embeddings: its file sets no pooling (%s.pooling_type)%s",
                       m->desc.architecture, m->desc.architecture,
                       hp->pooling == BRASA_POOLING_RANK ? "; rank pooling (a reranker) is not supported yet" : "");
    if (n_inputs == 0 || !inputs || !n_tokens)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "nothing to embed: no inputs");
    const size_t dim = (size_t)hp->n_embd;
    if (!out || out_cap / dim < n_inputs)
        return err_set(err, BRASA_ERR_BUFFER_TOO_SMALL, "%zu embeddings of %zu floats do not fit in %zu floats", n_inputs, dim,
                       out ? out_cap : 0);
    const int32_t n_ctx = brasa_context_size(c);
    for (size_t i = 0; i < n_inputs; i++) {
        const char *which = n_inputs > 1 ? "input " : "the input";
        char num[24] = "";
        if (n_inputs > 1)
            snprintf(num, sizeof num, "%zu", i);
        if (n_tokens[i] == 0 || !inputs[i])
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s%s is empty: an embedding needs at least one token", which, num);
        if (n_tokens[i] > (size_t)n_ctx)
            return err_set(err, BRASA_CONTEXT_FULL, "%s%s has %zu tokens, more than the context's %d%s", which, num, n_tokens[i],
                           n_ctx, hp->encoder ? " (the model's trained length is the most)" : " (use a larger context)");
        brasa_status st = ctx_check_tokens(c, inputs[i], n_tokens[i], err);
        if (st != BRASA_OK)
            return st;
    }
    return BRASA_OK;
}

/* An encoder: as many whole inputs per pass as the batch holds. */
static brasa_status embed_encoder(brasa_context *c, const brasa_token *const *inputs, const size_t *n_tokens, size_t n_inputs,
                                  float *out, pooled *p, brasa_error *err) {
    const brasa_model *m = brasa_context_model(c);
    const brasa_pooling how = (brasa_pooling)m->hp.pooling;
    const int64_t dim = m->hp.n_embd, batch = ctx_batch_size(c);
    /* a batch's tokens side by side, and its runs (one allocation per call, not per token) */
    brasa_token *tokens = malloc((size_t)batch * sizeof *tokens);
    int64_t *len = malloc((size_t)batch * sizeof *len);
    int32_t *seq = calloc((size_t)batch, sizeof *seq);
    if (!tokens || !len || !seq) {
        free(tokens);
        free(len);
        free(seq);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    brasa_status st = BRASA_OK;
    for (size_t next = 0; st == BRASA_OK && next < n_inputs;) {
        int n_runs = 0;
        int64_t used = 0;
        const size_t first = next;
        while (next < n_inputs && used + (int64_t)n_tokens[next] <= batch) {
            memcpy(tokens + used, inputs[next], n_tokens[next] * sizeof *tokens);
            len[n_runs++] = (int64_t)n_tokens[next];
            used += (int64_t)n_tokens[next];
            next++;
        }
        bk_tensor hidden;
        st = ctx_eval_hidden(c, n_runs, seq, len, tokens, &hidden, err);
        for (int r = 0, row = 0; st == BRASA_OK && r < n_runs; row += (int)len[r], r++) {
            st = take_rows(&hidden, row, len[r], true, true, how, ctx_embd_rows(c), p, err);
            if (st == BRASA_OK)
                finish(p, dim, out + (first + (size_t)r) * (size_t)dim);
        }
    }
    free(tokens);
    free(len);
    free(seq);
    return st;
}

/* A causal model: each input in batches through sequence 0, which is emptied before and after. */
static brasa_status embed_causal(brasa_context *c, const brasa_token *const *inputs, const size_t *n_tokens, size_t n_inputs,
                                 float *out, pooled *p, brasa_error *err) {
    const brasa_model *m = brasa_context_model(c);
    const brasa_pooling how = (brasa_pooling)m->hp.pooling;
    const int64_t dim = m->hp.n_embd, batch = ctx_batch_size(c);
    const int32_t seq = 0;
    brasa_status st = BRASA_OK;
    for (size_t i = 0; st == BRASA_OK && i < n_inputs; i++) {
        brasa_seq_truncate(c, seq, 0);
        for (size_t done = 0; st == BRASA_OK && done < n_tokens[i];) {
            const int64_t chunk = (int64_t)(n_tokens[i] - done < (size_t)batch ? n_tokens[i] - done : (size_t)batch);
            bk_tensor hidden;
            st = ctx_eval_hidden(c, 1, &seq, &chunk, inputs[i] + done, &hidden, err);
            if (st == BRASA_OK)
                st = take_rows(&hidden, 0, chunk, done == 0, done + (size_t)chunk == n_tokens[i], how, ctx_embd_rows(c), p, err);
            done += (size_t)chunk;
        }
        if (st == BRASA_OK)
            finish(p, dim, out + i * (size_t)dim);
    }
    brasa_seq_truncate(c, seq, 0);
    return st;
}

brasa_status brasa_embed_batch(brasa_context *c, const brasa_token *const *inputs, const size_t *n_tokens, size_t n_inputs,
                               float *out, size_t out_cap, brasa_error *err) {
    if (!c)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_embed: a context is required");
    brasa_status st = check_inputs(c, inputs, n_tokens, n_inputs, out, out_cap, err);
    if (st != BRASA_OK)
        return st;
    const brasa_model *m = brasa_context_model(c);
    const int64_t dim = m->hp.n_embd;
    pooled p = { calloc((size_t)dim, sizeof(double)), 0 };
    if (!p.sum)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    if (!m->hp.bidirectional)
        st = embed_causal(c, inputs, n_tokens, n_inputs, out, &p, err);
    else
        st = embed_encoder(c, inputs, n_tokens, n_inputs, out, &p, err);
    free(p.sum);
    return st;
}

brasa_status brasa_embed(brasa_context *c, const brasa_token *tokens, size_t n, float *out, size_t out_cap, brasa_error *err) {
    return brasa_embed_batch(c, &tokens, &n, 1, out, out_cap, err);
}
