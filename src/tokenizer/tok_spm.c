/* tok_spm.c: SentencePiece-style BPE over a scored vocabulary (tokenizer.ggml.model = llama), as
 * Gemma and Llama 2 use. The text is normalized (spaces become U+2581 "▁", optionally a leading one
 * is added, ill-formed UTF-8 becomes U+FFFD), split into characters, and the adjacent pair whose join
 * is a vocabulary piece with the highest score is merged, leftmost first, until none is left.
 * Pieces that are not in the vocabulary fall back to their bytes (<0xXX> tokens). */
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "tokenizer/tokenizer.h"

typedef struct spm_pair {
    float score;
    uint32_t left, left_len, right_len;
    int32_t id;
} spm_pair;

typedef struct spm_state {
    const tok_vocab *v;
    const char *s;       /* the normalized text */
    uint32_t *start, *len, *next, *prev;
    spm_pair *heap;
    size_t heap_len;
} spm_state;

#define NO_SYMBOL UINT32_MAX

static bool pair_before(const spm_pair *a, const spm_pair *b) {
    return a->score != b->score ? a->score > b->score : a->left < b->left;
}

static void heap_push(spm_state *st, spm_pair p) {
    size_t i = st->heap_len++;
    st->heap[i] = p;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!pair_before(&st->heap[i], &st->heap[parent]))
            break;
        spm_pair t = st->heap[i];
        st->heap[i] = st->heap[parent];
        st->heap[parent] = t;
        i = parent;
    }
}

static spm_pair heap_pop(spm_state *st) {
    spm_pair top = st->heap[0];
    st->heap[0] = st->heap[--st->heap_len];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < st->heap_len && pair_before(&st->heap[l], &st->heap[m]))
            m = l;
        if (r < st->heap_len && pair_before(&st->heap[r], &st->heap[m]))
            m = r;
        if (m == i)
            break;
        spm_pair t = st->heap[i];
        st->heap[i] = st->heap[m];
        st->heap[m] = t;
        i = m;
    }
    return top;
}

/* Only ordinary pieces are merge targets: control, byte and unused pieces never come from text. */
static bool mergeable(const tok_vocab *v, int32_t id) {
    return id >= 0 && (v->attr[id] == TOK_ATTR_NORMAL || v->attr[id] == TOK_ATTR_USER_DEFINED);
}

static void consider(spm_state *st, uint32_t left) {
    if (left == NO_SYMBOL || st->next[left] == NO_SYMBOL)
        return;
    uint32_t right = st->next[left];
    /* adjacent symbols are adjacent in the text, so their join is a slice of it */
    int32_t id = smap_get(&st->v->by_text, st->s + st->start[left], st->len[left] + st->len[right]);
    if (mergeable(st->v, id))
        heap_push(st, (spm_pair){ st->v->scores[id], left, st->len[left], st->len[right], id });
}

static const char space_marker[] = "\xe2\x96\x81";

bool tok_escape_spaces(const char *text, size_t n, buf *out) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = utf8_decode((const unsigned char *)text + i, n - i, &cp);
        bool ok;
        if (k < 0) {
            ok = buf_append(out, "\xef\xbf\xbd", 3);
            k = -k;
        } else if (cp == ' ') {
            ok = buf_append(out, space_marker, 3);
        } else {
            ok = buf_append(out, text + i, (size_t)k);
        }
        if (!ok)
            return false;
        i += (size_t)k;
    }
    return true;
}

/* Normalizes text into out: tok_escape_spaces, after a leading U+2581 when the vocabulary adds one
 * (to every stretch of text between special tokens: see tokenizer.c). */
static bool normalize(const tok_vocab *v, const char *text, size_t n, buf *out) {
    if (v->add_space_prefix && !buf_append(out, space_marker, 3))
        return false;
    return tok_escape_spaces(text, n, out);
}

static bool emit_symbol(const spm_state *st, uint32_t i, ivec *out) {
    const tok_vocab *v = st->v;
    int32_t id = smap_get(&v->by_text, st->s + st->start[i], st->len[i]);
    if (mergeable(v, id))
        return ivec_push(out, id);
    for (uint32_t k = 0; k < st->len[i]; k++) {
        int32_t b = v->byte_token[(unsigned char)st->s[st->start[i] + k]];
        /* no byte fallback: one unknown token stands for the rest of the piece, or nothing when the
         * vocabulary has no unknown token (as byte-level BPE drops a byte it has no token for) */
        if (b < 0)
            return v->unk < 0 || ivec_push(out, v->unk);
        if (!ivec_push(out, b))
            return false;
    }
    return true;
}

bool tok_spm_encode(const tok_vocab *v, const char *text, size_t n, ivec *out) {
    buf norm = { 0 };
    if (!normalize(v, text, n, &norm))
        return false;
    size_t m = norm.len;
    if (m == 0)
        return true;
    if (m >= UINT32_MAX) {
        buf_free(&norm);
        return false;
    }
    spm_state st = { .v = v, .s = norm.data };
    st.start = malloc(m * sizeof *st.start);
    st.len = malloc(m * sizeof *st.len);
    st.next = malloc(m * sizeof *st.next);
    st.prev = malloc(m * sizeof *st.prev);
    st.heap = malloc(3 * m * sizeof *st.heap);
    bool ok = st.start && st.len && st.next && st.prev && st.heap;
    uint32_t count = 0;
    for (size_t i = 0; ok && i < m;) {
        uint32_t cp;
        int k = utf8_decode((const unsigned char *)norm.data + i, m - i, &cp); /* valid after normalize */
        st.start[count] = (uint32_t)i;
        st.len[count] = (uint32_t)k;
        st.prev[count] = count == 0 ? NO_SYMBOL : count - 1;
        st.next[count] = NO_SYMBOL;
        if (count > 0)
            st.next[count - 1] = count;
        count++;
        i += (size_t)k;
    }
    for (uint32_t i = 0; ok && i + 1 < count; i++)
        consider(&st, i);
    while (ok && st.heap_len > 0) {
        spm_pair p = heap_pop(&st);
        uint32_t right = st.next[p.left];
        /* stale: either side changed since the pair was queued (merged symbols have len 0) */
        if (st.len[p.left] != p.left_len || right == NO_SYMBOL || st.len[right] != p.right_len)
            continue;
        st.len[p.left] += st.len[right];
        st.len[right] = 0;
        st.next[p.left] = st.next[right];
        if (st.next[right] != NO_SYMBOL)
            st.prev[st.next[right]] = p.left;
        consider(&st, st.prev[p.left]);
        consider(&st, p.left);
    }
    for (uint32_t i = 0; ok && count > 0 && i != NO_SYMBOL; i = st.next[i])
        ok = emit_symbol(&st, i, out);
    free(st.start);
    free(st.len);
    free(st.next);
    free(st.prev);
    free(st.heap);
    buf_free(&norm);
    return ok;
}
