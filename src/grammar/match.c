/* match.c: following an output through the automaton. The state is the set of threads (a node
 * waiting for a byte, and a stack of return nodes) that the output so far can be in, closed under
 * the moves that take no input. Stacks are linked entries in an arena: a push is one entry, a pop
 * is following the parent, so a step touches only the tops; a query adds scratch entries above the
 * state's own and cuts them off afterwards, and an advance compacts the arena to what the new
 * frontier still uses. Everything is preallocated when the state is created: no allocation per
 * byte, and the sizes are bounded (threads, depth, arena), dropping what does not fit. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grammar/grammar_impl.h"

/* A stack entry (ret, parent), shared with an identical one made in this closure, so that two
 * paths into the same rule give the same stack and their threads merge. GRAMMAR_NONE when the
 * arena or the depth is exhausted. */
static uint32_t push_entry(gwork *w, uint32_t ret, uint32_t parent, uint32_t closure_base) {
    for (uint32_t i = closure_base; i < w->n_arena; i++)
        if (w->arena[i].ret == ret && w->arena[i].parent == parent)
            return i;
    uint32_t depth = parent ? w->arena[parent].depth + 1 : 1;
    if (depth > GRAMMAR_MAX_DEPTH || w->n_arena >= GRAMMAR_ARENA_CAP)
        return GRAMMAR_NONE;
    w->arena[w->n_arena] = (gentry){ ret, parent, depth };
    return w->n_arena++;
}

static void add_thread(gthread *out, uint32_t *n_out, gthread t) {
    for (uint32_t i = 0; i < *n_out; i++)
        if (out[i].node == t.node && out[i].stack == t.stack)
            return;
    if (*n_out < GRAMMAR_MAX_THREADS)
        out[(*n_out)++] = t;
}

/* Closes todo[0..n_todo) under the moves without input, writing the threads that wait for a byte
 * to out (appended, deduplicated). Sets *complete when the top rule can return. */
static void closure(const grammar *g, gwork *w, uint32_t n_todo, gthread *out, uint32_t *n_out, bool *complete) {
    const uint32_t base = w->n_arena;
    uint32_t n_seen = 0;
    while (n_todo) {
        const gthread t = w->todo[--n_todo];
        const gnode *nd = &g->nodes[t.node];
        if (nd->plain) {
            add_thread(out, n_out, t);
            continue;
        }
        bool seen = false;
        for (uint32_t i = 0; i < n_seen && !seen; i++)
            seen = w->seen[i].node == t.node && w->seen[i].stack == t.stack;
        if (seen || n_seen == GRAMMAR_VISIT_CAP)
            continue;
        w->seen[n_seen++] = t;
        if (nd->n_ranges)
            add_thread(out, n_out, t);
        for (uint32_t i = 0; i < nd->n_eps && n_todo < GRAMMAR_VISIT_CAP; i++)
            w->todo[n_todo++] = (gthread){ g->eps[nd->first_eps + i], t.stack };
        if (nd->callee != GRAMMAR_NONE && n_todo < GRAMMAR_VISIT_CAP) {
            uint32_t e = push_entry(w, nd->ret, t.stack, base);
            if (e != GRAMMAR_NONE)
                w->todo[n_todo++] = (gthread){ nd->callee, e };
        }
        if (nd->is_return) {
            if (t.stack == 0)
                *complete = true;
            else if (n_todo < GRAMMAR_VISIT_CAP)
                w->todo[n_todo++] = (gthread){ w->arena[t.stack].ret, w->arena[t.stack].parent };
        }
    }
}

uint32_t grammar_step(const grammar *g, gwork *w, const gthread *in, uint32_t n_in, uint8_t byte, gthread *out,
                      bool *complete) {
    uint32_t n_out = 0, n_todo = 0;
    *complete = false;
    for (uint32_t i = 0; i < n_in; i++) {
        const gnode *nd = &g->nodes[in[i].node];
        const grange *r = g->ranges + nd->first_range, *end = r + nd->n_ranges;
        for (; r < end && r->lo <= byte; r++) {
            if (byte > r->hi)
                continue;
            const gthread t = { r->to, in[i].stack };
            /* the common case, one plain successor, skips the closure's bookkeeping */
            if (g->nodes[t.node].plain)
                add_thread(out, &n_out, t);
            else if (n_todo < GRAMMAR_VISIT_CAP)
                w->todo[n_todo++] = t;
        }
    }
    if (n_todo)
        closure(g, w, n_todo, out, &n_out, complete);
    return n_out;
}

static void state_start(grammar_state *s) {
    gwork *w = s->w;
    w->n_arena = 1; /* entry 0 stands for the empty stack */
    w->todo[0] = (gthread){ s->g->start, 0 };
    s->n_threads = 0;
    s->complete = false;
    closure(s->g, w, 1, s->threads, &s->n_threads, &s->complete);
    w->n_persist = w->n_arena;
}

brasa_status grammar_state_create(const grammar *g, grammar_state **out, brasa_error *err) {
    *out = NULL;
    if (!g)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "grammar_state_create: no grammar");
    grammar_state *s = calloc(1, sizeof *s);
    gwork *w = calloc(1, sizeof *w);
    if (!s || !w)
        goto oom;
    s->g = g;
    s->w = w;
    w->arena = malloc(GRAMMAR_ARENA_CAP * sizeof *w->arena);
    w->todo = malloc(GRAMMAR_VISIT_CAP * sizeof *w->todo);
    w->seen = malloc(GRAMMAR_VISIT_CAP * sizeof *w->seen);
    w->buf[0] = malloc(GRAMMAR_MAX_THREADS * sizeof *w->buf[0]);
    w->buf[1] = malloc(GRAMMAR_MAX_THREADS * sizeof *w->buf[1]);
    w->remap = malloc(GRAMMAR_ARENA_CAP * sizeof *w->remap);
    if (!w->arena || !w->todo || !w->seen || !w->buf[0] || !w->buf[1] || !w->remap)
        goto oom;
    state_start(s);
    *out = s;
    return BRASA_OK;
oom:
    if (s)
        s->w = w;
    grammar_state_free(s);
    if (!s && w)
        free(w);
    return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory creating a grammar state");
}

void grammar_state_free(grammar_state *s) {
    if (!s)
        return;
    gwork *w = s->w;
    if (w) {
        free(w->arena);
        free(w->todo);
        free(w->seen);
        free(w->buf[0]);
        free(w->buf[1]);
        free(w->remap);
        free(w->lifo);
        free(w->level_end);
        free(w->level_arena);
        free(w);
    }
    free(s);
}

void grammar_state_reset(grammar_state *s) {
    state_start(s);
}

/* Runs bytes from the state's frontier; returns the final frontier (in one of the scratch buffers,
 * or the state's own when n == 0) and its size, or NULL when the bytes are not accepted. The
 * scratch stack entries stay on the arena: the caller cuts them off or keeps them. */
static const gthread *run(const grammar_state *s, const char *bytes, size_t n, uint32_t *n_final, bool *complete) {
    gwork *w = s->w;
    const gthread *cur = s->threads;
    uint32_t n_cur = s->n_threads;
    *complete = s->complete;
    for (size_t i = 0; i < n; i++) {
        if (n_cur == 0)
            return NULL;
        gthread *next = w->buf[i & 1];
        n_cur = grammar_step(s->g, w, cur, n_cur, (uint8_t)bytes[i], next, complete);
        cur = next;
        if (n_cur == 0 && !*complete)
            return NULL;
    }
    *n_final = n_cur;
    return cur;
}

bool grammar_state_accepts(const grammar_state *s, const char *bytes, size_t n) {
    uint32_t n_final;
    bool complete;
    const bool ok = run(s, bytes, n, &n_final, &complete) != NULL;
    s->w->n_arena = s->w->n_persist;
    return ok;
}

/* Keeps only the stack entries the frontier uses, moved down in order (a parent sits below its
 * children, so moving each entry to its new index, lowest first, never overwrites a live one). */
static void compact(grammar_state *s) {
    gwork *w = s->w;
    memset(w->remap, 0xff, w->n_arena * sizeof *w->remap);
    w->remap[0] = 0;
    for (uint32_t i = 0; i < s->n_threads; i++)
        for (uint32_t e = s->threads[i].stack; e && w->remap[e] == GRAMMAR_NONE; e = w->arena[e].parent)
            w->remap[e] = 0; /* live; numbered below */
    uint32_t n = 1;
    for (uint32_t e = 1; e < w->n_arena; e++) {
        if (w->remap[e] == GRAMMAR_NONE)
            continue;
        gentry moved = w->arena[e];
        moved.parent = w->remap[moved.parent];
        w->remap[e] = n;
        w->arena[n++] = moved;
    }
    for (uint32_t i = 0; i < s->n_threads; i++)
        s->threads[i].stack = w->remap[s->threads[i].stack];
    w->n_arena = w->n_persist = n;
}

bool grammar_state_advance(grammar_state *s, const char *bytes, size_t n) {
    uint32_t n_final = 0;
    bool complete;
    const gthread *final = run(s, bytes, n, &n_final, &complete);
    if (!final) {
        s->w->n_arena = s->w->n_persist;
        return false;
    }
    if (final != s->threads) {
        memcpy(s->threads, final, n_final * sizeof *final);
        s->n_threads = n_final;
        s->complete = complete;
    }
    compact(s);
    return true;
}

bool grammar_state_complete(const grammar_state *s) {
    return s->complete;
}

bool grammar_state_finished(const grammar_state *s) {
    return s->complete && s->n_threads == 0;
}
