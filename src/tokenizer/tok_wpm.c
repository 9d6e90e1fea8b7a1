/* tok_wpm.c: WordPiece (tokenizer.ggml.model = bert), as Hugging Face's BERT tokenizer runs it:
 * the text is normalized (bert_norm.h: cleaned, and for uncased vocabularies stripped of accents and
 * lowercased), cut into words at whitespace, with every punctuation character and every CJK
 * ideograph a word of its own, and each word is covered greedily from its start by the longest
 * vocabulary piece, then the longest continuation piece, and so on. A word that cannot be covered,
 * or longer than 100 characters, becomes the unknown token as a whole.
 *
 * Vocabularies are stored as llama.cpp converts them: a word-initial piece "w" as "\u2581w", a
 * continuation "##w" as "w", so the first lookup of a word carries the U+2581 prefix and the
 * others do not. */
#include <string.h>

#include "core/utf8.h"
#include "tokenizer/bert_norm.h"
#include "tokenizer/tokenizer.h"

/* Hugging Face's max_input_chars_per_word for BERT vocabularies (GGUF files do not carry it). */
#define WPM_MAX_WORD_CHARS 100

static const char phantom_space[] = "\xe2\x96\x81";
#define PHANTOM_LEN 3

/* A word being built: the phantom space, then its normalized text. */
typedef struct wpm_word {
    buf text;
    size_t chars;
} wpm_word;

/* The id of a piece that text may match (control tokens only come from the special-token pass). */
static int32_t piece(const tok_vocab *v, const char *s, size_t n) {
    const int32_t id = smap_get(&v->by_text, s, n);
    return id >= 0 && v->attr[id] != TOK_ATTR_CONTROL ? id : -1;
}

/* Greedy longest-match-first over one word, into out; the unknown token when it fails. */
static bool encode_word(const tok_vocab *v, const wpm_word *w, ivec *out) {
    const char *s = w->text.data;
    const size_t len = w->text.len;
    const size_t mark = out->len;
    if (w->chars <= WPM_MAX_WORD_CHARS) {
        /* the first piece includes the phantom space; continuations start after a match */
        for (size_t start = 0; start < len;) {
            size_t end = len;
            if (end - start > v->max_token_len) {
                end = start + v->max_token_len;
                while (end > start && ((unsigned char)s[end] & 0xc0) == 0x80)
                    end--; /* back to a character boundary */
            }
            int32_t id = -1;
            while (end > start + (start == 0 ? PHANTOM_LEN : 0)) {
                if ((id = piece(v, s + start, end - start)) >= 0)
                    break;
                do
                    end--;
                while (end > start && ((unsigned char)s[end] & 0xc0) == 0x80);
            }
            if (id < 0) {
                out->len = mark; /* drop the pieces of a word that cannot be covered */
                break;
            }
            if (!ivec_push(out, id))
                return false;
            start = end;
        }
        if (out->len > mark)
            return true;
    }
    /* one unknown token for the whole word (nothing when the vocabulary has none) */
    return v->unk < 0 || ivec_push(out, v->unk);
}

static bool flush(const tok_vocab *v, wpm_word *w, ivec *out) {
    bool ok = true;
    if (w->chars > 0)
        ok = encode_word(v, w, out);
    w->text.len = PHANTOM_LEN;
    w->chars = 0;
    return ok;
}

static bool append(wpm_word *w, uint32_t cp) {
    char u[4];
    w->chars++;
    return buf_append(&w->text, u, (size_t)utf8_encode(cp, u));
}

bool tok_wpm_encode(const tok_vocab *v, const char *text, size_t n, ivec *out) {
    wpm_word w = { { 0 }, 0 };
    bool ok = buf_append(&w.text, phantom_space, PHANTOM_LEN);
    for (size_t i = 0; ok && i < n;) {
        uint32_t cp;
        int k = utf8_decode((const unsigned char *)text + i, n - i, &cp);
        if (k < 0) { /* an ill-formed sequence is a replacement character, which cleaning drops */
            cp = 0xFFFD;
            k = -k;
        }
        i += (size_t)k;
        uint32_t norm[BNORM_MAX_OUT];
        const int m = bnorm_char(&v->norm, cp, norm);
        if (bnorm_is_cjk(cp)) {
            /* an ideograph is a word of its own (Hugging Face pads it with spaces before the
             * other steps) */
            ok = flush(v, &w, out);
            for (int j = 0; ok && j < m; j++)
                ok = append(&w, norm[j]);
            ok = ok && flush(v, &w, out);
            continue;
        }
        for (int j = 0; ok && j < m; j++) {
            if (norm[j] == ' ') {
                ok = flush(v, &w, out);
            } else if (bnorm_is_punct(norm[j])) {
                ok = flush(v, &w, out) && append(&w, norm[j]) && flush(v, &w, out);
            } else {
                ok = append(&w, norm[j]);
            }
        }
    }
    ok = ok && flush(v, &w, out);
    buf_free(&w.text);
    return ok;
}
