/* vocab.c: masking a whole vocabulary against a grammar state. The token texts are sorted once
 * into a byte trie laid out in preorder (each node knows where its subtree ends), so the mask is
 * one forward pass: a node's frontier is its parent's stepped by one byte, kept on a stack of
 * levels, and a dead node skips its whole subtree. Tokens that share a prefix share its steps. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grammar/grammar_impl.h"

#define MAX_TOKEN_BYTES 4096 /* a longer token is never allowed (no vocabulary has one) */

typedef struct trie_node {
    uint32_t end;       /* preorder index past this node's subtree */
    uint32_t tok_first; /* tokens ending here: sorted[tok_first .. tok_first + tok_count) */
    uint32_t tok_count;
    uint16_t depth; /* bytes from the root, 1 for the root's children */
    uint8_t byte;
} trie_node;

struct grammar_vocab {
    size_t n_tokens;
    trie_node *nodes; /* preorder, the root left out */
    uint32_t n_nodes;
    uint32_t *sorted; /* token ids in byte order */
    size_t max_depth;
};

typedef struct piece {
    const uint8_t *p;
    size_t len;
    uint32_t id;
} piece;

static int cmp_piece(const void *a, const void *b) {
    const piece *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

brasa_status grammar_vocab_create(const char *const *pieces, const size_t *lengths, size_t n_tokens,
                                  grammar_vocab **out, brasa_error *err) {
    *out = NULL;
    if (n_tokens && (!pieces || !lengths))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "grammar_vocab_create: no token texts");
    if (n_tokens > UINT32_MAX / 2)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "grammar_vocab_create: %zu tokens is too many", n_tokens);
    grammar_vocab *v = calloc(1, sizeof *v);
    piece *list = malloc((n_tokens ? n_tokens : 1) * sizeof *list);
    uint32_t *path = malloc((MAX_TOKEN_BYTES + 1) * sizeof *path); /* open nodes by depth */
    size_t n = 0, total = 0;
    if (!v || !list || !path)
        goto oom;
    v->n_tokens = n_tokens;
    for (size_t i = 0; i < n_tokens; i++) {
        if (!pieces[i] || lengths[i] == 0 || lengths[i] > MAX_TOKEN_BYTES)
            continue;
        list[n++] = (piece){ (const uint8_t *)pieces[i], lengths[i], (uint32_t)i };
        total += lengths[i]; /* at most 2^31 * 4096: no overflow on 64-bit; checked below on 32-bit */
        if (total > UINT32_MAX / 2) {
            free(list);
            free(path);
            grammar_vocab_free(v);
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "grammar_vocab_create: token texts too long in all");
        }
    }
    qsort(list, n, sizeof *list, cmp_piece);
    v->sorted = malloc((n ? n : 1) * sizeof *v->sorted);
    v->nodes = malloc((total ? total : 1) * sizeof *v->nodes); /* at most one node per byte */
    if (!v->sorted || !v->nodes)
        goto oom;
    /* Each token after the first opens nodes only past its common prefix with the one before; the
     * nodes deeper than that prefix are closed (their subtree ends here). */
    size_t open = 0;
    uint32_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        v->sorted[i] = list[i].id;
        if (list[i].len == 0) /* (never: empty texts were left out; so path[0], the root, is never read) */
            continue;
        size_t common = 0;
        if (i > 0) {
            size_t lim = list[i - 1].len < list[i].len ? list[i - 1].len : list[i].len;
            while (common < lim && list[i - 1].p[common] == list[i].p[common])
                common++;
        }
        for (; open > common; open--)
            v->nodes[path[open]].end = nn;
        for (size_t d = open; d < list[i].len; d++) {
            v->nodes[nn] = (trie_node){ 0, 0, 0, (uint16_t)(d + 1), list[i].p[d] };
            path[++open] = nn++;
        }
        trie_node *last = &v->nodes[path[open]];
        if (last->tok_count == 0)
            last->tok_first = (uint32_t)i;
        last->tok_count++;
        if (list[i].len > v->max_depth)
            v->max_depth = list[i].len;
    }
    for (; open > 0; open--)
        v->nodes[path[open]].end = nn;
    v->n_nodes = nn;
    free(list);
    free(path);
    *out = v;
    return BRASA_OK;
oom:
    free(list);
    free(path);
    grammar_vocab_free(v);
    return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory indexing the vocabulary");
}

void grammar_vocab_free(grammar_vocab *v) {
    if (!v)
        return;
    free(v->nodes);
    free(v->sorted);
    free(v);
}

size_t grammar_vocab_size(const grammar_vocab *v) {
    return v->n_tokens;
}

/* Room for one frontier per trie level (grown once per vocabulary, then reused). */
static bool reserve_levels(gwork *w, size_t levels) {
    if (w->cap_levels >= levels)
        return true;
    gthread *lifo = realloc(w->lifo, levels * GRAMMAR_MAX_THREADS * sizeof *lifo);
    if (lifo)
        w->lifo = lifo;
    uint32_t *ends = realloc(w->level_end, levels * sizeof *ends);
    if (ends)
        w->level_end = ends;
    uint32_t *arenas = realloc(w->level_arena, levels * sizeof *arenas);
    if (arenas)
        w->level_arena = arenas;
    if (!lifo || !ends || !arenas)
        return false;
    w->cap_lifo = levels * GRAMMAR_MAX_THREADS;
    w->cap_levels = levels;
    return true;
}

void grammar_state_mask(const grammar_state *s, const grammar_vocab *v, uint8_t *allowed) {
    memset(allowed, 0, v->n_tokens);
    gwork *w = s->w;
    if (s->n_threads == 0)
        return;
    if (!reserve_levels(w, v->max_depth + 1)) {
        /* out of memory for the walk's levels: the slow way, token by token, gives the same mask */
        char text[MAX_TOKEN_BYTES];
        for (uint32_t i = 0; i < v->n_nodes; i++) {
            const trie_node *t = &v->nodes[i];
            text[t->depth - 1] = (char)t->byte;
            if (t->tok_count && grammar_state_accepts(s, text, t->depth))
                for (uint32_t k = 0; k < t->tok_count; k++)
                    allowed[v->sorted[t->tok_first + k]] = 1;
        }
        return;
    }
    /* level 0 is the state's frontier; level d's threads follow level d-1's in the lifo */
    memcpy(w->lifo, s->threads, s->n_threads * sizeof *s->threads);
    w->level_end[0] = s->n_threads;
    w->level_arena[0] = w->n_persist;
    const trie_node *nodes = v->nodes;
    uint32_t i = 0;
    while (i < v->n_nodes) {
        const trie_node *t = &nodes[i];
        const uint32_t d = t->depth;
        const uint32_t parent_start = d >= 2 ? w->level_end[d - 2] : 0, parent_end = w->level_end[d - 1];
        w->n_arena = w->level_arena[d - 1];
        bool complete;
        uint32_t n = grammar_step(s->g, w, w->lifo + parent_start, parent_end - parent_start, t->byte,
                                  w->lifo + parent_end, &complete);
        if (n == 0 && !complete) {
            i = t->end;
            continue;
        }
        for (uint32_t k = 0; k < t->tok_count; k++)
            allowed[v->sorted[t->tok_first + k]] = 1;
        if (n == 0) {
            i = t->end;
            continue;
        }
        w->level_end[d] = parent_end + n;
        w->level_arena[d] = w->n_arena;
        i++;
    }
    w->n_arena = w->n_persist;
}
