/* test_vocab_ends_generation_where_the_format_does: the end-of-generation set a vocabulary loads
 * (tok_vocab.eog). A harmony vocabulary (gpt-oss: <|return|> and <|call|> are control tokens)
 * ends at <|return|> and <|call|> and never at <|end|>, which closes the reasoning message before
 * the answer, whether <|end|> is the guessed end of turn or the one the file names; any other
 * vocabulary keeps end of turn and end of text, the turn's end first. The vocabularies are small
 * GGUF images written here (byte-level BPE, no merges needed for the lookup). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "gguf/gguf.h"
#include "tokenizer/vocab.h"

static int failures;

#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            failures++;                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                             \
            printf(__VA_ARGS__);                                                                    \
            printf("\n");                                                                           \
        }                                                                                           \
    } while (0)

/* ---- a GGUF image (version 3, no tensors), little-endian as the format says ---- */

static void put_u32(buf *b, uint32_t v) {
    unsigned char le[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24) };
    buf_append(b, le, 4);
}

static void put_u64(buf *b, uint64_t v) {
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_str(buf *b, const char *s) {
    put_u64(b, strlen(s));
    buf_append(b, s, strlen(s));
}

static void put_key(buf *b, const char *key, gguf_type type) {
    put_str(b, key);
    put_u32(b, (uint32_t)type);
}

#define MAX_TOKENS 16

/* A test vocabulary: token texts, which of them are control tokens, and the special ids the file
 * names (-1: not named). */
typedef struct spec {
    const char *tokens[MAX_TOKENS];
    int n;
    int eos, eot;
} spec;

static bool is_marker(const char *t) {
    return t[0] == '<' && strlen(t) > 2;
}

static void write_image(const spec *s, buf *b) {
    const int n_kv = 4 + (s->eos >= 0) + (s->eot >= 0);
    buf_append(b, "GGUF", 4);
    put_u32(b, 3);
    put_u64(b, 0);
    put_u64(b, (uint64_t)n_kv);
    put_key(b, "tokenizer.ggml.model", GGUF_TYPE_STRING);
    put_str(b, "gpt2");
    put_key(b, "tokenizer.ggml.tokens", GGUF_TYPE_ARRAY);
    put_u32(b, GGUF_TYPE_STRING);
    put_u64(b, (uint64_t)s->n);
    for (int i = 0; i < s->n; i++)
        put_str(b, s->tokens[i]);
    put_key(b, "tokenizer.ggml.token_type", GGUF_TYPE_ARRAY);
    put_u32(b, GGUF_TYPE_INT32);
    put_u64(b, (uint64_t)s->n);
    for (int i = 0; i < s->n; i++)
        put_u32(b, is_marker(s->tokens[i]) ? TOK_ATTR_CONTROL : TOK_ATTR_NORMAL);
    put_key(b, "tokenizer.ggml.merges", GGUF_TYPE_ARRAY);
    put_u32(b, GGUF_TYPE_STRING);
    put_u64(b, 0);
    if (s->eos >= 0) {
        put_key(b, "tokenizer.ggml.eos_token_id", GGUF_TYPE_UINT32);
        put_u32(b, (uint32_t)s->eos);
    }
    if (s->eot >= 0) {
        put_key(b, "tokenizer.ggml.eot_token_id", GGUF_TYPE_UINT32);
        put_u32(b, (uint32_t)s->eot);
    }
}

static int id_of(const spec *s, const char *text) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->tokens[i], text) == 0)
            return i;
    return -1;
}

/* Loads s and checks that exactly the tokens in `ends` (by text, the first being eog[0]) end
 * generation and that the end of turn is `eot`. */
static void check(const char *name, const spec *s, const char *eot, const char *const *ends, int n_ends) {
    buf image = { 0 };
    write_image(s, &image);
    gguf_file *f = NULL;
    brasa_error err = { 0 };
    tok_vocab v;
    if (gguf_open_memory((const uint8_t *)image.data, image.len, &f, &err) != BRASA_OK ||
        tok_vocab_load(&v, f, &err) != BRASA_OK) {
        CHECK(false, "%s: does not load: %s", name, err.message);
        gguf_close(f);
        buf_free(&image);
        return;
    }
    CHECK(v.eot == id_of(s, eot), "%s: end of turn %d, want %s (%d)", name, v.eot, eot, id_of(s, eot));
    CHECK(v.n_eog == n_ends, "%s: %d end-of-generation tokens, want %d", name, v.n_eog, n_ends);
    CHECK(n_ends > 0 && v.n_eog > 0 && v.eog[0] == id_of(s, ends[0]), "%s: a reply is ended with %d, want %s", name,
          v.n_eog > 0 ? v.eog[0] : -1, n_ends > 0 ? ends[0] : "?");
    for (int t = 0; t < s->n; t++) {
        bool want = false;
        for (int k = 0; k < n_ends; k++)
            want |= strcmp(s->tokens[t], ends[k]) == 0;
        CHECK(tok_vocab_is_eog(&v, t) == want, "%s: %s %s end generation", name, s->tokens[t],
              want ? "must" : "must not");
    }
    CHECK(!tok_vocab_is_eog(&v, BRASA_TOKEN_NONE) && !tok_vocab_is_eog(&v, s->n), "%s: ids outside end nothing", name);
    tok_vocab_free(&v);
    gguf_close(f);
    buf_free(&image);
}

#define HARMONY_TOKENS                                                                                             \
    { "a", "b", "analysis", "<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>",        \
      "<|constrain|>", "<|endoftext|>" }

int main(void) {
    spec harmony = { HARMONY_TOKENS, 11, -1, -1 };
    harmony.eos = id_of(&harmony, "<|return|>");
    /* gpt-oss's own files: eos <|return|>, no end of turn, so <|end|> is guessed as one */
    check("harmony, eos <|return|>", &harmony, "<|end|>", (const char *[]){ "<|return|>", "<|call|>" }, 2);

    spec named = harmony;
    named.eot = id_of(&named, "<|end|>");
    check("harmony, <|end|> named the end of turn", &named, "<|end|>", (const char *[]){ "<|return|>", "<|call|>" }, 2);

    spec text_end = harmony;
    text_end.eos = id_of(&text_end, "<|endoftext|>");
    check("harmony, eos <|endoftext|>", &text_end, "<|end|>",
          (const char *[]){ "<|return|>", "<|call|>", "<|endoftext|>" }, 3);

    /* ChatML: <|im_end|> guessed, then eos; unchanged by the harmony rule */
    spec chatml = { { "a", "b", "<|im_start|>", "<|im_end|>", "<|endoftext|>" }, 5, 4, -1 };
    check("chatml", &chatml, "<|im_end|>", (const char *[]){ "<|im_end|>", "<|endoftext|>" }, 2);

    /* Phi-3's markers: <|end|> is its end of turn, and without <|call|> no harmony rule applies */
    spec phi3 = { { "a", "<|user|>", "<|assistant|>", "<|end|>", "<|return|>", "<|endoftext|>" }, 6, 5, -1 };
    check("phi-3 (<|end|>, no <|call|>)", &phi3, "<|end|>", (const char *[]){ "<|end|>", "<|endoftext|>" }, 2);

    /* no end of turn to guess: the end of text alone (the guess falls back to it) */
    spec plain = { { "a", "b", "</s>" }, 3, 2, -1 };
    check("eos only", &plain, "</s>", (const char *[]){ "</s>" }, 1);

    if (failures) {
        printf("%d checks failed\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
