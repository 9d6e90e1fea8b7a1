/* vocab.h: a tokenizer vocabulary read from GGUF metadata (tokenizer.ggml.*): token texts, scores,
 * types, BPE merges, special ids and flags, with the lookup tables the encoders need. Immutable after
 * tok_vocab_load, so one vocabulary serves any number of threads. */
#ifndef BRASA_TOKENIZER_VOCAB_H
#define BRASA_TOKENIZER_VOCAB_H

#include <stdbool.h>
#include <stdint.h>

#include "brasa.h"
#include "core/strmap.h"
#include "gguf/gguf.h"
#include "tokenizer/bert_norm.h"
#include "tokenizer/pretok.h"

/* tokenizer.ggml.token_type values */
typedef enum tok_attr {
    TOK_ATTR_NORMAL = 1,
    TOK_ATTR_UNKNOWN = 2,
    TOK_ATTR_CONTROL = 3,
    TOK_ATTR_USER_DEFINED = 4,
    TOK_ATTR_UNUSED = 5,
    TOK_ATTR_BYTE = 6
} tok_attr;

/* The most tokens that can end generation: eos, eot, and harmony's <|return|> and <|call|>. */
#define TOK_MAX_EOG 4

typedef struct tok_vocab {
    brasa_vocab_type type;
    pretok pre;         /* BPE: the split before merging (none for SentencePiece) */
    bool byte_level;    /* BPE: symbols are bytes in GPT-2's printable map; else UTF-8 characters with
                         * <0xXX> tokens for bytes that have no piece (Gemma 4) and spaces as U+2581 */
    bool ignore_merges; /* BPE: a piece that is a token is taken whole (PRETOK_IGNORE_MERGES) */
    bnorm_opts norm;    /* WordPiece: which of BERT's normalizing steps run (uncased vocabularies: all) */
    uint32_t max_token_len; /* WordPiece: the longest token's bytes, which bounds the pieces tried */
    int32_t n_tokens;
    const char **text;  /* (n_tokens) NUL-terminated copies */
    uint32_t *len;      /* (n_tokens) byte lengths */
    float *scores;      /* (n_tokens) SentencePiece scores, 0 when the file has none */
    uint8_t *attr;      /* (n_tokens) tok_attr */
    char *arena;        /* holds all texts */
    smap by_text;       /* text -> id */
    u64map merges;      /* (left id << 32 | right id) -> (rank << 32 | merged id), BPE only */
    int32_t byte_token[256]; /* byte-level BPE: the token of each byte's code point; else its <0xXX>
                              * token; -1 if none */
    uint32_t byte_cp[256];   /* BPE: GPT-2's byte -> printable code point mapping */
    int16_t cp_byte[324];    /* its inverse, -1 for code points that are no byte */
    /* Special (control and user-defined) tokens, for leftmost-longest matching by one hash lookup
     * per candidate length: special_by_text maps a text to the lowest special id with it and
     * special_next (n_tokens) chains to the next special with the same text (-1: none); the
     * distinct lengths of the specials that begin with byte b are special_lens[special_len_start[b]
     * .. special_len_start[b+1]), longest first. A vocabulary with thousands of "<unusedN>" tokens
     * then costs a few lookups at each '<' of a text, not a comparison with each of them. */
    smap special_by_text;
    int32_t *special_next;
    uint32_t *special_lens;
    int32_t special_len_start[257];
    brasa_token bos, eos, eot, unk, pad;
    /* The tokens that end generation (tok_vocab_is_eog), the first being the one to end a reply
     * with on purpose (a constraint's last token): the end of turn, then the end of text. A
     * harmony vocabulary (gpt-oss: it has <|return|> and <|call|>) ends instead at <|return|>
     * (the answer's end) and <|call|> (a tool call's end), never at <|end|>, which closes every
     * message, the reasoning before the answer too, even when the file names it the end of turn;
     * llama.cpp drops <|end|> from its end-of-generation set the same way (llama-vocab.cpp). */
    brasa_token eog[TOK_MAX_EOG];
    int32_t n_eog;
    bool add_bos, add_eos, add_space_prefix;
} tok_vocab;

/* Builds the vocabulary from f, which must outlive nothing: texts are copied. On failure v is left
 * empty (safe to free) and err says why, e.g. "tokenizer.ggml.scores has 10 entries for 12 tokens". */
brasa_status tok_vocab_load(tok_vocab *v, const gguf_file *f, brasa_error *err);
void tok_vocab_free(tok_vocab *v);

static inline bool tok_vocab_has(const tok_vocab *v, brasa_token t) {
    return t >= 0 && t < v->n_tokens;
}

/* Whether t ends generation (one of v->eog). */
static inline bool tok_vocab_is_eog(const tok_vocab *v, brasa_token t) {
    for (int32_t i = 0; i < v->n_eog; i++)
        if (v->eog[i] == t)
            return true;
    return false;
}

#endif
