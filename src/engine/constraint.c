/* constraint.c: generated text held to a grammar (src/grammar/): a literal prefix, a JSON value
 * valid against a JSON Schema, a literal suffix. A constraint is compiled once per request with the
 * text of every token of the vocabulary (control tokens as they are written, so "<tool_call>" can
 * open a forced call) indexed for masking; each sampler following it keeps its own grammar state. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "core/json.h"
#include "engine/constraint.h"
#include "grammar/grammar.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

struct brasa_constraint {
    const brasa_model *model;
    grammar *g;
    grammar_vocab *vocab;
    bool *eog;          /* n_tokens: ends generation */
    size_t *offset;     /* n_tokens + 1: token t's text is text.data[offset[t] .. offset[t + 1]) */
    buf text;
    int32_t n_tokens;
    brasa_token end;    /* the token forced when the output is finished */
};

struct constraint_state {
    const brasa_constraint *c;
    grammar_state *g;
    uint8_t *allowed;   /* n_tokens, scratch for masking */
};

static brasa_status index_vocabulary(brasa_constraint *c, brasa_error *err) {
    const tok_vocab *v = &c->model->vocab;
    const int32_t n = c->n_tokens;
    c->eog = calloc((size_t)n, sizeof *c->eog);
    c->offset = calloc((size_t)n + 1, sizeof *c->offset);
    const char **pieces = calloc((size_t)n, sizeof *pieces);
    size_t *lengths = calloc((size_t)n, sizeof *lengths);
    if (!c->eog || !c->offset || !pieces || !lengths) {
        free(pieces);
        free(lengths);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory indexing the vocabulary");
    }
    brasa_status st = BRASA_OK;
    for (int32_t t = 0; t < n && st == BRASA_OK; t++) {
        c->eog[t] = brasa_token_is_eog(c->model, t);
        if (!c->eog[t] && !tok_decode_append(v, t, BRASA_DETOKENIZE_SPECIAL, false, &c->text))
            st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory indexing the vocabulary");
        c->offset[t + 1] = c->text.len;
    }
    for (int32_t t = 0; t < n && st == BRASA_OK; t++) {
        pieces[t] = c->eog[t] ? NULL : c->text.data + c->offset[t];
        lengths[t] = c->eog[t] ? 0 : c->offset[t + 1] - c->offset[t];
    }
    if (st == BRASA_OK)
        st = grammar_vocab_create(pieces, lengths, (size_t)n, &c->vocab, err);
    free(pieces);
    free(lengths);
    return st;
}

brasa_status brasa_constraint_create(const brasa_model *m, const char *prefix, const char *schema_json,
                                     const char *suffix, brasa_constraint **out, brasa_error *err) {
    if (!m || !out)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "brasa_constraint_create: invalid arguments");
    *out = NULL;
    if (m->vocab.type == BRASA_VOCAB_NONE)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "cannot constrain output: %s", m->tokenizer_error);
    json_doc *schema = NULL;
    brasa_error perr = { 0 };
    if (schema_json && json_parse(schema_json, strlen(schema_json), &schema, &perr) != BRASA_OK)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "the JSON Schema is not JSON: %s", perr.message);
    grammar_part parts[3];
    size_t n = 0;
    if (prefix && *prefix)
        parts[n++] = (grammar_part){ .kind = GRAMMAR_LITERAL, .literal = prefix, .literal_len = strlen(prefix) };
    if (schema)
        parts[n++] = (grammar_part){ .kind = GRAMMAR_SCHEMA, .schema = json_root(schema) };
    if (suffix && *suffix)
        parts[n++] = (grammar_part){ .kind = GRAMMAR_LITERAL, .literal = suffix, .literal_len = strlen(suffix) };
    brasa_constraint *c = calloc(1, sizeof *c);
    if (!c) {
        json_free(schema);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    c->model = m;
    c->n_tokens = m->vocab.n_tokens;
    c->end = m->vocab.n_eog > 0 ? m->vocab.eog[0] : BRASA_TOKEN_NONE;
    brasa_status st = BRASA_OK;
    if (n == 0)
        st = err_set(err, BRASA_ERR_INVALID_ARGUMENT, "a constraint needs a prefix, a schema or a suffix");
    else if (!tok_vocab_has(&m->vocab, c->end))
        st = err_set(err, BRASA_ERR_UNSUPPORTED, "the model has no end-of-generation token to end constrained output");
    if (st == BRASA_OK)
        st = grammar_compile(parts, n, &c->g, err);
    if (st == BRASA_OK)
        st = index_vocabulary(c, err);
    json_free(schema);
    if (st != BRASA_OK) {
        brasa_constraint_free(c);
        return st;
    }
    *out = c;
    return BRASA_OK;
}

void brasa_constraint_free(brasa_constraint *c) {
    if (!c)
        return;
    grammar_free(c->g);
    grammar_vocab_free(c->vocab);
    free(c->eog);
    free(c->offset);
    buf_free(&c->text);
    free(c);
}

brasa_status constraint_state_create(const brasa_constraint *c, constraint_state **out, brasa_error *err) {
    constraint_state *s = calloc(1, sizeof *s);
    if (!s)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    s->c = c;
    s->allowed = malloc((size_t)c->n_tokens);
    brasa_status st = s->allowed ? grammar_state_create(c->g, &s->g, err)
                                 : err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    if (st != BRASA_OK) {
        constraint_state_free(s);
        return st;
    }
    *out = s;
    return BRASA_OK;
}

void constraint_state_free(constraint_state *s) {
    if (!s)
        return;
    grammar_state_free(s->g);
    free(s->allowed);
    free(s);
}

void constraint_reset(constraint_state *s) {
    grammar_state_reset(s->g);
}

bool constraint_allows(const constraint_state *s, brasa_token t) {
    const brasa_constraint *c = s->c;
    if (t < 0 || t >= c->n_tokens)
        return false;
    if (c->eog[t])
        return grammar_state_complete(s->g);
    const size_t len = c->offset[t + 1] - c->offset[t];
    return len > 0 && grammar_state_accepts(s->g, c->text.data + c->offset[t], len);
}

void constraint_take(constraint_state *s, brasa_token t) {
    const brasa_constraint *c = s->c;
    if (t >= 0 && t < c->n_tokens && !c->eog[t])
        grammar_state_advance(s->g, c->text.data + c->offset[t], c->offset[t + 1] - c->offset[t]);
}

bool constraint_finished(const constraint_state *s) {
    return grammar_state_finished(s->g);
}

brasa_token constraint_end_token(const constraint_state *s) {
    return s->c->end;
}

int32_t constraint_mask(constraint_state *s, const float *logits, int32_t n, float *out) {
    const brasa_constraint *c = s->c;
    grammar_state_mask(s->g, c->vocab, s->allowed);
    const bool complete = grammar_state_complete(s->g);
    int32_t allowed = 0;
    for (int32_t t = 0; t < n; t++) {
        const bool ok = t < c->n_tokens && (c->eog[t] ? complete : s->allowed[t] != 0);
        out[t] = ok ? logits[t] : -INFINITY;
        allowed += ok;
    }
    return allowed;
}
