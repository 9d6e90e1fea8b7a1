/* tok_bpe.c: byte-level BPE (GPT-2 style). Each pre-tokenized piece starts as one symbol per byte
 * (the token of that byte's printable code point); then the adjacent pair with the lowest merge rank
 * is merged, leftmost first, until no pair has a merge. A binary heap of candidate pairs with lazy
 * invalidation keeps this O(n log n) per piece, so a hostile prompt of one huge word cannot stall. */
#include <stdlib.h>

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
    int32_t *id;       /* (n) current token of each symbol; symbols merged away are -1 */
    uint32_t *next, *prev;
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
    if (right == NO_SYMBOL)
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
    /* each merge adds at most two pairs to the n-1 initial ones */
    bpe_pair *heap = realloc(s->heap, 3 * cap * sizeof *heap);
    if (heap) s->heap = heap;
    if (!id || !next || !prev || !heap)
        return false;
    s->cap = cap;
    return true;
}

static bool bpe_piece(const char *piece, size_t n, void *ctx) {
    bpe_state *s = ctx;
    const tok_vocab *v = s->v;
    if (n >= UINT32_MAX || !grow_state(s, n))
        return false;
    /* A byte with no token of its own (SmolLM2 lacks 21) is dropped, as the reference BPE does
     * without an unknown token, so its neighbours become adjacent. */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t t = v->byte_token[(unsigned char)piece[i]];
        if (t >= 0)
            s->id[m++] = t;
    }
    n = m;
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
        if (s->id[p.left] != p.left_id || right == NO_SYMBOL || s->id[right] != p.right_id)
            continue;
        s->id[p.left] = p.merged;
        s->id[right] = -1;
        s->next[p.left] = s->next[right];
        if (s->next[right] != NO_SYMBOL)
            s->prev[s->next[right]] = p.left;
        consider(s, s->prev[p.left]);
        consider(s, p.left);
    }
    for (uint32_t i = 0; i != NO_SYMBOL; i = s->next[i])
        if (s->id[i] >= 0 && !ivec_push(s->out, s->id[i]))
            return false;
    return true;
}

bool tok_bpe_encode(const tok_vocab *v, const char *text, size_t n, ivec *out) {
    bpe_state s = { .v = v, .out = out };
    bool ok = pretok_split(v->pre, text, n, bpe_piece, &s);
    free(s.id);
    free(s.next);
    free(s.prev);
    free(s.heap);
    return ok;
}
