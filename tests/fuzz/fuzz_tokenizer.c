/* fuzz_tokenizer: a real model's tokenizer ($BRASA_FUZZ_MODEL: SmolLM2 for byte-level BPE, Gemma 3
 * for SentencePiece, all-MiniLM-L6-v2 for WordPiece) on hostile input, both ways. The first byte chooses what the rest is:
 *   bit 7 clear: text, encoded with the flags in bits 0-1 (ADD_BOS, PARSE_SPECIAL), then decoded;
 *   bit 7 set:   little-endian int32 token ids, decoded as they are (mostly out of range) and again
 *                folded into -1 .. n_vocab (mostly in range);
 *   bit 2: decode with BRASA_DETOKENIZE_SPECIAL.
 * Invariants checked: every id the encoder makes is in the vocabulary, without PARSE_SPECIAL text
 * yields no control token (only BOS/EOS that ADD_BOS adds, and the unknown token, which stands for
 * text and which BERT vocabularies mark as control), the buffer-size convention holds, an
 * id out of range is refused, and the streaming decoder gives exactly brasa_detokenize's bytes.
 * Text is also split by every pre-tokenizer of brasa's table, whichever the model uses: the pieces
 * must be non-empty and together be exactly the text. */
#include <string.h>

#include "fuzz.h"
#include "tokenizer/pretok.h"

static brasa_model *model;
static pretok splitters[64];
static size_t n_splitters;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    model = fuzz_open_model("fuzz_tokenizer");
    for (const pretok_def *d; (d = pretok_def_at(n_splitters)) != NULL; n_splitters++) {
        char err[256];
        FUZZ_CHECK(n_splitters < sizeof splitters / sizeof splitters[0]);
        FUZZ_CHECK(pretok_init(&splitters[n_splitters], d, err, sizeof err));
    }
    return 0;
}

typedef struct rejoin {
    const char *text;
    size_t len, at;
} rejoin;

static bool next_piece(const char *piece, size_t len, void *ctx) {
    rejoin *r = ctx;
    FUZZ_CHECK(len > 0 && r->at + len <= r->len && piece == r->text + r->at);
    r->at += len;
    return true;
}

/* Every pre-tokenizer cuts the text into non-empty pieces that are, in order, the whole text. */
static void split_all(const char *text, size_t len) {
    for (size_t i = 0; i < n_splitters; i++) {
        rejoin r = { text, len, 0 };
        FUZZ_CHECK(pretok_split(&splitters[i], text, len, next_piece, &r) && r.at == len);
    }
}

static bool in_vocab(brasa_token t) {
    return t >= 0 && t < brasa_vocab_size(model);
}

/* The bytes of ids (all in range) through brasa_detokenize, with its two-call size convention;
 * *n gets their count. The caller frees the result. */
static char *detokenize_all(const brasa_token *ids, size_t n_ids, unsigned flags, size_t *n) {
    brasa_error err;
    size_t need = 0;
    brasa_status st = brasa_detokenize(model, ids, n_ids, flags, NULL, 0, &need, &err);
    FUZZ_CHECK(st == (need ? BRASA_ERR_BUFFER_TOO_SMALL : BRASA_OK));
    char *text = malloc(need ? need : 1);
    FUZZ_CHECK(text != NULL);
    size_t got = 0;
    st = brasa_detokenize(model, ids, n_ids, flags, text, need, &got, &err);
    FUZZ_CHECK(st == BRASA_OK && got == need);
    *n = need;
    return text;
}

/* Feeds every id to a streaming decoder, which must refuse those out of range and, over the
 * rest, hand out exactly what brasa_detokenize makes of them. */
static void decode_streaming(const brasa_token *ids, size_t n_ids, unsigned flags) {
    brasa_token *kept = malloc((n_ids ? n_ids : 1) * sizeof *kept);
    char *streamed = NULL;
    size_t n_kept = 0, n_streamed = 0, cap = 0;
    brasa_decoder *dec = NULL;
    brasa_error err;
    FUZZ_CHECK(kept != NULL && brasa_decoder_create(model, flags, &dec, &err) == BRASA_OK);
    for (size_t i = 0; i <= n_ids; i++) {
        const char *out = NULL;
        size_t n_out = 0;
        if (i < n_ids) {
            brasa_status st = brasa_decoder_push(dec, ids[i], &out, &n_out, &err);
            FUZZ_CHECK(st == (in_vocab(ids[i]) ? BRASA_OK : BRASA_ERR_INVALID_ARGUMENT));
            if (st == BRASA_OK)
                kept[n_kept++] = ids[i];
        } else {
            brasa_decoder_flush(dec, &out, &n_out);
        }
        if (n_streamed + n_out > cap) {
            cap = 2 * (n_streamed + n_out);
            streamed = realloc(streamed, cap);
            FUZZ_CHECK(streamed != NULL);
        }
        if (n_out)
            memcpy(streamed + n_streamed, out, n_out);
        n_streamed += n_out;
    }
    size_t n_text = 0;
    char *text = detokenize_all(kept, n_kept, flags, &n_text);
    FUZZ_CHECK(n_text == n_streamed && (n_text == 0 || memcmp(text, streamed, n_text) == 0));
    free(text);
    free(streamed);
    free(kept);
    brasa_decoder_free(dec);
}

/* brasa_detokenize on ids as given: refused when one is out of range. */
static void decode_ids(const brasa_token *ids, size_t n_ids, unsigned flags) {
    bool all_in = true;
    for (size_t i = 0; i < n_ids; i++)
        all_in = all_in && in_vocab(ids[i]);
    if (all_in) {
        size_t n_text = 0;
        free(detokenize_all(ids, n_ids, flags, &n_text));
    } else {
        brasa_error err;
        char small[16];
        size_t n_text = 0;
        FUZZ_CHECK(brasa_detokenize(model, ids, n_ids, flags, small, sizeof small, &n_text, &err) ==
                   BRASA_ERR_INVALID_ARGUMENT);
    }
    decode_streaming(ids, n_ids, flags);
}

/* Tokenizes with the two-call size convention; the caller frees the ids. */
static brasa_token *tokenize(const char *text, size_t len, unsigned flags, size_t *n) {
    brasa_error err;
    brasa_status st = brasa_tokenize(model, text, len, flags, NULL, 0, n, &err);
    FUZZ_CHECK(st == (*n ? BRASA_ERR_BUFFER_TOO_SMALL : BRASA_OK));
    brasa_token *ids = malloc((*n ? *n : 1) * sizeof *ids);
    FUZZ_CHECK(ids != NULL);
    size_t got = 0;
    st = brasa_tokenize(model, text, len, flags, ids, *n, &got, &err);
    FUZZ_CHECK(st == BRASA_OK && got == *n);
    for (size_t i = 0; i < got; i++)
        FUZZ_CHECK(in_vocab(ids[i]));
    return ids;
}

static size_t count_control(const brasa_token *ids, size_t n) {
    const brasa_token unk = brasa_token_special(model, BRASA_SPECIAL_UNK);
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += brasa_token_is_control(model, ids[i]) && ids[i] != unk;
    return count;
}

static void encode_text(const char *text, size_t len, unsigned flags, unsigned decode_flags) {
    size_t n = 0;
    brasa_token *ids = tokenize(text, len, flags, &n);
    if (!(flags & BRASA_TOKENIZE_PARSE_SPECIAL)) {
        /* the control tokens of the empty text are those ADD_BOS adds, when the model asks for them */
        size_t n_empty = 0;
        brasa_token *added = tokenize("", 0, flags, &n_empty);
        FUZZ_CHECK(count_control(ids, n) == count_control(added, n_empty));
        free(added);
    }
    decode_ids(ids, n, decode_flags);
    free(ids);
}

/* Token ids from the input: raw, then folded so that most are in range and -1 and n_vocab (the
 * nearest ids out of range) still occur. */
static void decode_raw_ids(const uint8_t *data, size_t size, unsigned flags) {
    size_t n = size / 4;
    brasa_token *ids = calloc(n ? n : 1, sizeof *ids);
    FUZZ_CHECK(ids != NULL);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = data + 4 * i;
        ids[i] = (brasa_token)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    }
    decode_ids(ids, n, flags);
    const uint32_t span = (uint32_t)brasa_vocab_size(model) + 2;
    for (size_t i = 0; i < n; i++)
        ids[i] = (brasa_token)((uint32_t)ids[i] % span) - 1;
    decode_ids(ids, n, flags);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    const unsigned mode = data[0];
    const unsigned decode_flags = (mode & 4) ? BRASA_DETOKENIZE_SPECIAL : BRASA_DETOKENIZE_DEFAULT;
    if (mode & 0x80)
        decode_raw_ids(data + 1, size - 1, decode_flags);
    else {
        encode_text((const char *)data + 1, size - 1, mode & 3, decode_flags);
        split_all((const char *)data + 1, size - 1);
    }
    return 0;
}
