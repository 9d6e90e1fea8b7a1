/* tok_bpe.c: BPE with merges. Each pre-tokenized piece starts as one symbol per byte (byte-level
 * BPE: the token of that byte's printable code point) or per character (Gemma 4: its token, with
 * spaces written as U+2581); then the adjacent pair with the lowest merge rank is merged, leftmost
 * first, until no pair has a merge. A binary heap of candidate pairs with lazy invalidation keeps
 * this O(n log n) per piece, so a hostile prompt of one huge word cannot stall. */
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

#include "tokenizer/pretok.h"
#include "tokenizer/tokenizer.h"

typedef struct bpe_pair {
    uint32_t rank;
    uint32_t left;     /* symbol index of the left side */
    int32_t left_id, right_id, merged;
} bpe_pair;

typedef struct bpe_state {
    const tok_vocab *v;
    ivec *out;
    int32_t *id;       /* (n) current token of each symbol; -1: merged away, or a character with
                        * no token (its bytes then go out as byte tokens) */
    uint32_t *start, *len; /* (n) the symbol's bytes in the piece; merged away: len 0 */
    uint32_t *next, *prev;
    buf mapped;        /* the piece in the vocabulary's spelling, for whole-piece lookups */
    bpe_pair *heap;
    size_t heap_len, cap;
} bpe_state;

static bool pair_before(const bpe_pair *a, const bpe_pair *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->left < b->left;
}

static void heap_push(bpe_state *s, bpe_pair p) {
    size_t i = s->heap_len++;
    s->heap[i] = p;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!pair_before(&s->heap[i], &s->heap[parent]))
            break;
        bpe_pair t = s->heap[i];
        s->heap[i] = s->heap[parent];
        s->heap[parent] = t;
        i = parent;
    }
}

static bpe_pair heap_pop(bpe_state *s) {
    bpe_pair top = s->heap[0];
    s->heap[0] = s->heap[--s->heap_len];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->heap_len && pair_before(&s->heap[l], &s->heap[m]))
            m = l;
        if (r < s->heap_len && pair_before(&s->heap[r], &s->heap[m]))
            m = r;
        if (m == i)
            break;
        bpe_pair t = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = t;
        i = m;
    }
    return top;
}

#define NO_SYMBOL UINT32_MAX

static void consider(bpe_state *s, uint32_t left) {
    if (left == NO_SYMBOL)
        return;
    uint32_t right = s->next[left];
    if (right == NO_SYMBOL || s->id[left] < 0 || s->id[right] < 0)
        return;
    uint64_t key = (uint64_t)(uint32_t)s->id[left] << 32 | (uint32_t)s->id[right], value;
    if (u64map_get(&s->v->merges, key, &value))
        heap_push(s, (bpe_pair){ (uint32_t)(value >> 32), left, s->id[left], s->id[right], (int32_t)(uint32_t)value });
}

static bool grow_state(bpe_state *s, size_t n) {
    if (n <= s->cap)
        return true;
    size_t cap = n < 64 ? 64 : n;
    int32_t *id = realloc(s->id, cap * sizeof *id);
    if (id) s->id = id;
    uint32_t *next = realloc(s->next, cap * sizeof *next);
    if (next) s->next = next;
    uint32_t *prev = realloc(s->prev, cap * sizeof *prev);
    if (prev) s->prev = prev;
    uint32_t *start = realloc(s->start, cap * sizeof *start);
    if (start) s->start = start;
    uint32_t *len = realloc(s->len, cap * sizeof *len);
    if (len) s->len = len;
    /* each merge adds at most two pairs to the n-1 initial ones */
    bpe_pair *heap = realloc(s->heap, 3 * cap * sizeof *heap);
    if (heap) s->heap = heap;
    if (!id || !next || !prev || !start || !len || !heap)
        return false;
    s->cap = cap;
    return true;
}

/* The piece as the vocabulary spells it: byte-level pieces through GPT-2's map, others as they are. */
static bool spell(bpe_state *s, const char *piece, size_t n) {
    s->mapped.len = 0;
    if (!s->v->byte_level)
        return buf_append(&s->mapped, piece, n);
    for (size_t i = 0; i < n; i++) {
        char enc[4];
        int k = utf8_encode(s->v->byte_cp[(unsigned char)piece[i]], enc);
        if (!buf_append(&s->mapped, enc, (size_t)k))
            return false;
    }
    return true;
}

/* A piece taken whole: with ignore_merges any token, and with PRETOK_WHOLE_NEWLINES a run of line
 * breaks that is a token. */
static int32_t whole_piece(bpe_state *s, const char *piece, size_t n) {
    const tok_vocab *v = s->v;
    bool newlines = (v->pre.def->flags & PRETOK_WHOLE_NEWLINES) && n > 0;
    for (size_t i = 0; newlines && i < n; i++)
        newlines = piece[i] == '\n';
    if (!v->ignore_merges && !newlines)
        return -1;
    if (!spell(s, piece, n))
        return -2;
    return smap_get(&v->by_text, s->mapped.data, s->mapped.len);
}

/* The first symbols: bytes (byte-level; a byte with no token of its own, as SmolLM2 lacks 21, is
 * dropped as the reference BPE drops it without an unknown token, so its neighbours meet) or
 * characters (an ill-formed byte is a symbol of its own). */
static size_t first_symbols(bpe_state *s, const char *piece, size_t n) {
    const tok_vocab *v = s->v;
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        size_t k = 1;
        int32_t t;
        if (v->byte_level) {
            t = v->byte_token[(unsigned char)piece[i]];
            if (t < 0) {
                i++;
                continue;
            }
        } else {
            uint32_t cp;
            int d = utf8_decode((const unsigned char *)piece + i, n - i, &cp);
            k = d > 0 ? (size_t)d : 1;
            t = d > 0 ? smap_get(&v->by_text, piece + i, k) : -1;
        }
        s->id[m] = t;
        s->start[m] = (uint32_t)i;
        s->len[m++] = (uint32_t)k;
        i += k;
    }
    return m;
}

/* A symbol that is a token goes out as it; one that is not, byte by byte through the <0xXX> tokens
 * (bytes without one are dropped, as llama.cpp does). */
static bool emit_symbol(bpe_state *s, const char *piece, uint32_t i) {
    if (s->id[i] >= 0)
        return ivec_push(s->out, s->id[i]);
    for (uint32_t k = 0; k < s->len[i]; k++) {
        int32_t b = s->v->byte_token[(unsigned char)piece[s->start[i] + k]];
        if (b >= 0 && !ivec_push(s->out, b))
            return false;
    }
    return true;
}

static bool bpe_piece(const char *piece, size_t n, void *ctx) {
    bpe_state *s = ctx;
    if (n >= UINT32_MAX || !grow_state(s, n))
        return false;
    int32_t whole = whole_piece(s, piece, n);
    if (whole == -2)
        return false;
    if (whole >= 0)
        return ivec_push(s->out, whole);
    n = first_symbols(s, piece, n);
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++) {
        s->prev[i] = i == 0 ? NO_SYMBOL : (uint32_t)(i - 1);
        s->next[i] = i + 1 == n ? NO_SYMBOL : (uint32_t)(i + 1);
    }
    s->heap_len = 0;
    for (size_t i = 0; i + 1 < n; i++)
        consider(s, (uint32_t)i);
    while (s->heap_len > 0) {
        bpe_pair p = heap_pop(s);
        uint32_t right = s->next[p.left];
        /* stale entries: a side was merged since the pair was queued */
        if (s->len[p.left] == 0 || s->id[p.left] != p.left_id || right == NO_SYMBOL || s->id[right] != p.right_id)
            continue;
        s->id[p.left] = p.merged;
        s->len[p.left] += s->len[right]; /* byte-level symbols may have skipped bytes between them: */
        s->len[right] = 0;               /* only id matters for them, as they always have one */
        s->id[right] = -1;
        s->next[p.left] = s->next[right];
        if (s->next[right] != NO_SYMBOL)
            s->prev[s->next[right]] = p.left;
        consider(s, s->prev[p.left]);
        consider(s, p.left);
    }
    for (uint32_t i = 0; i != NO_SYMBOL; i = s->next[i])
        if (!emit_symbol(s, piece, i))
            return false;
    return true;
}

bool tok_bpe_encode(const tok_vocab *v, const char *text, size_t n, ivec *out) {
    bpe_state s = { .v = v, .out = out };
    bool ok;
    if (v->byte_level) {
        ok = pretok_split(&v->pre, text, n, bpe_piece, &s);
    } else { /* Gemma 4: spaces become U+2581 before the split, as its normalizer writes them */
        buf escaped = { 0 };
        ok = tok_escape_spaces(text, n, &escaped) &&
             pretok_split(&v->pre, escaped.data, escaped.len, bpe_piece, &s);
        buf_free(&escaped);
    }
    free(s.start);
    free(s.len);
    buf_free(&s.mapped);
    free(s.id);
    free(s.next);
    free(s.prev);
    free(s.heap);
    return ok;
}
