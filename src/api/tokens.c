/* tokens.c: the public token API: tokenize, detokenize, streaming decode, vocabulary lookups. */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

static brasa_status need_tokenizer(const brasa_model *m, brasa_error *err) {
    if (m->vocab.type == BRASA_VOCAB_NONE)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "cannot tokenize: %s",
                       m->tokenizer_error[0] ? m->tokenizer_error : "the model has no tokenizer");
    return BRASA_OK;
}

brasa_status brasa_tokenize(const brasa_model *m, const char *text, size_t len, unsigned flags,
                            brasa_token *tokens, size_t capacity, size_t *n_tokens, brasa_error *err) {
    if (!m || (!text && len) || !n_tokens || (!tokens && capacity))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_tokenize: invalid arguments");
    brasa_status st = need_tokenizer(m, err);
    if (st != BRASA_OK)
        return st;
    ivec ids = { 0 };
    st = tok_encode(&m->vocab, text ? text : "", len, flags, &ids, err);
    if (st == BRASA_OK)
        st = tok_copy_out(&ids, tokens, capacity, n_tokens, err);
    ivec_free(&ids);
    return st;
}

brasa_status brasa_detokenize(const brasa_model *m, const brasa_token *tokens, size_t n, unsigned flags,
                              char *out, size_t size, size_t *n_bytes, brasa_error *err) {
    if (!m || (!tokens && n) || !n_bytes || (!out && size))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_detokenize: invalid arguments");
    brasa_status st = need_tokenizer(m, err);
    if (st != BRASA_OK)
        return st;
    buf b = { 0 };
    for (size_t i = 0; i < n; i++) {
        if (!tok_vocab_has(&m->vocab, tokens[i])) {
            buf_free(&b);
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "token %d is outside the %d-token vocabulary",
                           tokens[i], m->vocab.n_tokens);
        }
        if (!tok_decode_append(&m->vocab, tokens[i], flags, i == 0, &b)) {
            buf_free(&b);
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory while detokenizing");
        }
    }
    *n_bytes = b.len;
    if (b.len > size)
        st = err_set(err, BRASA_ERR_BUFFER_TOO_SMALL, "%zu bytes do not fit in %zu", b.len, size);
    else if (b.len)
        memcpy(out, b.data, b.len);
    buf_free(&b);
    return st;
}

struct brasa_decoder {
    const brasa_model *model;
    unsigned flags;
    bool started;
    buf pending; /* decoded bytes; the first `ready` of them were handed out by the last call */
    size_t ready;
};

brasa_status brasa_decoder_create(const brasa_model *m, unsigned flags, brasa_decoder **out, brasa_error *err) {
    if (!m || !out)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_decoder_create: invalid arguments");
    *out = NULL;
    brasa_status st = need_tokenizer(m, err);
    if (st != BRASA_OK)
        return st;
    brasa_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    d->model = m;
    d->flags = flags;
    *out = d;
    return BRASA_OK;
}

void brasa_decoder_free(brasa_decoder *d) {
    if (!d)
        return;
    buf_free(&d->pending);
    free(d);
}

/* Drops what the previous call handed out, keeping the held-back tail at the front. */
static void decoder_compact(brasa_decoder *d) {
    if (d->ready) {
        memmove(d->pending.data, d->pending.data + d->ready, d->pending.len - d->ready);
        d->pending.len -= d->ready;
        d->ready = 0;
    }
}

brasa_status brasa_decoder_push(brasa_decoder *d, brasa_token token, const char **out, size_t *n_out,
                                brasa_error *err) {
    if (!d || !out || !n_out)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_decoder_push: invalid arguments");
    *out = NULL;
    *n_out = 0;
    const tok_vocab *v = &d->model->vocab;
    if (!tok_vocab_has(v, token))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "token %d is outside the %d-token vocabulary", token,
                       v->n_tokens);
    decoder_compact(d);
    if (!tok_decode_append(v, token, d->flags, !d->started, &d->pending))
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory while decoding");
    d->started = true;
    size_t hold = tok_utf8_incomplete_tail(d->pending.data, d->pending.len);
    d->ready = d->pending.len - hold;
    *out = d->pending.data;
    *n_out = d->ready;
    return BRASA_OK;
}

void brasa_decoder_flush(brasa_decoder *d, const char **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (!d)
        return;
    decoder_compact(d);
    d->ready = d->pending.len;
    *out = d->pending.data;
    *n_out = d->ready;
}

int32_t brasa_vocab_size(const brasa_model *m) {
    return m ? m->vocab.n_tokens : 0;
}

const char *brasa_token_text(const brasa_model *m, brasa_token t) {
    return m && tok_vocab_has(&m->vocab, t) ? m->vocab.text[t] : NULL;
}

bool brasa_token_is_control(const brasa_model *m, brasa_token t) {
    return m && tok_vocab_has(&m->vocab, t) && m->vocab.attr[t] == TOK_ATTR_CONTROL;
}

brasa_token brasa_token_special(const brasa_model *m, brasa_special which) {
    if (!m)
        return BRASA_TOKEN_NONE;
    switch (which) {
    case BRASA_SPECIAL_BOS: return m->vocab.bos;
    case BRASA_SPECIAL_EOS: return m->vocab.eos;
    case BRASA_SPECIAL_EOT: return m->vocab.eot;
    case BRASA_SPECIAL_UNK: return m->vocab.unk;
    case BRASA_SPECIAL_PAD: return m->vocab.pad;
    }
    return BRASA_TOKEN_NONE;
}

bool brasa_token_is_eog(const brasa_model *m, brasa_token t) {
    return m && tok_vocab_is_eog(&m->vocab, t);
}
