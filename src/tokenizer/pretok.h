/* pretok.h: pre-tokenizers, the splitting of text into the pieces that BPE then merges within.
 *
 * Each is a row of one table (pretok.c): the tokenizer.ggml.pre names that mean it, and its split
 * rule as published in the family's tokenizer.json: a sequence of regular expressions, each
 * applied to every piece the previous one made, keeping both the matches and the text between
 * them as pieces (Hugging Face's Split with behavior "Isolated"). Also per family: the defaults
 * that llama.cpp, the reference for what GGUF metadata means, attaches to the name. */
#ifndef BRASA_TOKENIZER_PRETOK_H
#define BRASA_TOKENIZER_PRETOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/regex.h"

#define PRETOK_MAX_RULES 6

enum {
    /* a piece that is itself a vocabulary token is that token, without merging (Hugging Face's
     * BPE ignore_merges): vocabularies converted from tiktoken hold tokens their merges cannot
     * reach, e.g. Llama 3's Vietnamese words */
    PRETOK_IGNORE_MERGES = 1 << 0,
    PRETOK_ADD_BOS = 1 << 1, /* BOS is added when tokenizer.ggml.add_bos_token is absent */
    /* BPE over UTF-8 characters, spaces written as U+2581, <0xXX> tokens for bytes without a piece
     * (not GPT-2's byte map) */
    PRETOK_RAW_UTF8 = 1 << 2,
    /* a piece of line breaks only that is a token is taken whole (Gemma 4: its merges do not
     * build those runs) */
    PRETOK_WHOLE_NEWLINES = 1 << 3,
};

typedef struct pretok_def {
    const char *names[24];                  /* tokenizer.ggml.pre values, NULL-terminated */
    const char *rules[PRETOK_MAX_RULES];   /* the split sequence, NULL-terminated */
    unsigned flags;                         /* PRETOK_* */
    /* 0, or the first rule that sees the text through GPT-2's byte map (one code point per byte),
     * because the family's sequence runs ByteLevel before it (Falcon) */
    unsigned mapped_from;
} pretok_def;

/* The compiled splitter of one vocabulary. */
typedef struct pretok {
    const pretok_def *def;
    rx_prog *rules[PRETOK_MAX_RULES]; /* NULL for a rule computed, not matched (Tiny Aya's numbers) */
    size_t n_rules;
} pretok;

/* The definition for a tokenizer.ggml.pre value (len bytes), or NULL when brasa has none. */
const pretok_def *pretok_find(const char *name, size_t len);

/* GPT-2's reversible byte -> printable code point map, which byte-level BPE vocabularies spell
 * tokens in: printable Latin-1 bytes stand for themselves, the other 68 take 256.. in order. */
void pretok_byte_map(uint32_t cp[256]);

/* Every definition, for tests and fuzzing: the i-th, or NULL past the end. */
const pretok_def *pretok_def_at(size_t i);

/* Compiles def's rules into p. False with a message in err when a rule does not compile (a bug
 * in the table, which the tests compile in full) or memory ran out. */
bool pretok_init(pretok *p, const pretok_def *def, char *err, size_t err_len);
void pretok_free(pretok *p);

/* Called once per piece, in order; return false to stop (e.g. out of memory). */
typedef bool (*pretok_emit)(const char *piece, size_t len, void *ctx);

/* Splits text (n bytes; an ill-formed UTF-8 byte is one code point of its own that only negated
 * classes match) into pieces that together are exactly the text. A pretok with no rules gives the
 * whole text as one piece. Returns false when emit stopped or memory ran out. */
bool pretok_split(const pretok *p, const char *text, size_t n, pretok_emit emit, void *ctx);

/* How many matcher instructions splitting text takes (0 when memory ran out): the tests' measure
 * of linear time, the same on every machine. */
uint64_t pretok_split_steps(const pretok *p, const char *text, size_t n);

#endif
