/* tokenizer.c: special-token partitioning, dispatch to the model's algorithm, and decoding.
 *
 * Special tokens are matched leftmost-longest, the way the reference tokenizers match "added
 * tokens": user-defined tokens (Gemma's runs of newlines, Qwen's <tool_call>) always, control tokens
 * (<|im_start|>, <bos>) only with BRASA_TOKENIZE_PARSE_SPECIAL, so that text a user typed cannot
 * forge a chat marker unless the caller allows it. */
#include "tokenizer/tokenizer.h"

#include <string.h>

#include "core/error.h"
#include "core/utf8.h"

/* Whether control tokens may be matched at text[i..i+len): everywhere, nowhere, or inside spans. */
typedef struct control_rule {
    bool everywhere;
    const size_t *spans; /* pairs [start, end) */
    size_t n_spans;
} control_rule;

/* Spans come in text order and do not overlap, so the only one that can hold [i, i+len) is the
 * last that starts at or before i: a binary search, so that a long chat with many markers stays
 * linear in its length. */
static bool control_allowed(const control_rule *r, size_t i, size_t len) {
    if (r->everywhere)
        return true;
    size_t lo = 0, hi = r->n_spans; /* find the first span that starts after i */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->spans[2 * mid] <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && i + len <= r->spans[2 * (lo - 1) + 1];
}

/* The longest special token that starts at text[i..n), or -1: for each length a special that
 * begins with this byte has (longest first), the specials with exactly that text, lowest id first. */
static int32_t special_at(const tok_vocab *v, const char *text, size_t i, size_t n, const control_rule *rule) {
    unsigned char b = (unsigned char)text[i];
    for (int32_t k = v->special_len_start[b]; k < v->special_len_start[b + 1]; k++) {
        uint32_t len = v->special_lens[k];
        if (len > n - i)
            continue;
        for (int32_t id = smap_get(&v->special_by_text, text + i, len); id >= 0; id = v->special_next[id])
            if (v->attr[id] != TOK_ATTR_CONTROL || control_allowed(rule, i, len))
                return id;
    }
    return -1;
}

static bool encode_plain(const tok_vocab *v, const char *text, size_t n, ivec *out) {
    if (n == 0)
        return true;
    switch (v->type) {
    case BRASA_VOCAB_BPE: return tok_bpe_encode(v, text, n, out);
    case BRASA_VOCAB_WPM: return tok_wpm_encode(v, text, n, out);
    default: return tok_spm_encode(v, text, n, out);
    }
}

static brasa_status encode(const tok_vocab *v, const char *text, size_t n, unsigned flags, const control_rule *rule,
                           ivec *out, brasa_error *err) {
    if (v->type == BRASA_VOCAB_NONE)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "this model has no usable tokenizer");
    if ((flags & BRASA_TOKENIZE_ADD_BOS) && v->add_bos && v->bos >= 0 && !ivec_push(out, v->bos))
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory while tokenizing");
    size_t plain = 0; /* start of the text not yet encoded */
    for (size_t i = 0; i < n;) {
        int32_t id = special_at(v, text, i, n, rule);
        if (id < 0) {
            i++;
            continue;
        }
        /* every stretch of text opens after the start or a special token, and SentencePiece gives
         * each its leading space (llama.cpp's rule; Hugging Face's Prepend normalizer does the same
         * for each stretch between added tokens) */
        if (!encode_plain(v, text + plain, i - plain, out) || !ivec_push(out, id))
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory while tokenizing");
        i += v->len[id];
        plain = i;
    }
    if (!encode_plain(v, text + plain, n - plain, out))
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory while tokenizing");
    if ((flags & BRASA_TOKENIZE_ADD_BOS) && v->add_eos && v->eos >= 0 && !ivec_push(out, v->eos))
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory while tokenizing");
    return BRASA_OK;
}

brasa_status tok_encode(const tok_vocab *v, const char *text, size_t n, unsigned flags, ivec *out,
                        brasa_error *err) {
    control_rule rule = { (flags & BRASA_TOKENIZE_PARSE_SPECIAL) != 0, NULL, 0 };
    return encode(v, text, n, flags, &rule, out, err);
}

brasa_status tok_encode_spans(const tok_vocab *v, const char *text, size_t n, const size_t *spans, size_t n_spans,
                              ivec *out, brasa_error *err) {
    control_rule rule = { false, spans, n_spans };
    return encode(v, text, n, 0, &rule, out, err);
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Byte-level text back to bytes: each code point of the GPT-2 map is one byte. */
static bool decode_byte_level(const tok_vocab *v, const char *s, size_t n, buf *out) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (k < 0)
            k = -k;
        else if (cp < 324 && v->cp_byte[cp] >= 0) {
            char b = (char)v->cp_byte[cp];
            if (!buf_append(out, &b, 1))
                return false;
            i += (size_t)k;
            continue;
        }
        if (!buf_append(out, s + i, (size_t)k)) /* not a mapped code point: keep it as written */
            return false;
        i += (size_t)k;
    }
    return true;
}

/* SentencePiece text back to bytes: U+2581 is a space. */
static bool decode_spm(const char *s, size_t n, bool drop_leading_space, buf *out) {
    for (size_t i = 0; i < n;) {
        if (n - i >= 3 && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
            if (!(drop_leading_space && i == 0) && !buf_append(out, " ", 1))
                return false;
            i += 3;
            continue;
        }
        if (!buf_append(out, s + i, 1))
            return false;
        i++;
    }
    return true;
}

bool tok_decode_append(const tok_vocab *v, brasa_token t, unsigned flags, bool at_start, buf *out) {
    if (!tok_vocab_has(v, t))
        return true;
    const char *s = v->text[t];
    size_t n = v->len[t];
    switch (v->attr[t]) {
    case TOK_ATTR_CONTROL:
        return (flags & BRASA_DETOKENIZE_SPECIAL) ? buf_append(out, s, n) : true;
    case TOK_ATTR_USER_DEFINED:
        return buf_append(out, s, n);
    case TOK_ATTR_BYTE:
        if (!v->byte_level && n == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' &&
            hex_digit(s[3]) >= 0 && hex_digit(s[4]) >= 0) {
            char b = (char)(hex_digit(s[3]) * 16 + hex_digit(s[4]));
            return buf_append(out, &b, 1);
        }
        break;
    default:
        break;
    }
    if (v->byte_level)
        return decode_byte_level(v, s, n, out);
    return decode_spm(s, n, at_start && v->add_space_prefix, out);
}

size_t tok_utf8_incomplete_tail(const char *p, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = (unsigned char)p[n - k];
        if ((c & 0xc0) == 0x80)
            continue; /* a continuation byte: the lead is further back */
        int need = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 1;
        if (c >= 0xf5 || need <= (int)k)
            return 0;
        uint32_t cp;
        /* incomplete but well-formed so far: decoding runs out exactly at the end */
        return utf8_decode((const unsigned char *)p + n - k, k, &cp) == -(int)k ? k : 0;
    }
    return 0;
}

brasa_status tok_copy_out(const ivec *ids, brasa_token *tokens, size_t capacity, size_t *n_tokens, brasa_error *err) {
    *n_tokens = ids->len;
    if (ids->len > capacity)
        return err_set(err, BRASA_ERR_BUFFER_TOO_SMALL, "%zu tokens do not fit in %zu", ids->len, capacity);
    if (ids->len)
        memcpy(tokens, ids->data, ids->len * sizeof *tokens);
    return BRASA_OK;
}
