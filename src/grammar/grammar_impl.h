/* grammar_impl.h: what the grammar module's sources share and nobody else sees: the compiled
 * automaton (a recursive transition network over bytes), the builder the schema compiler writes it
 * with, and the matcher's step on a set of stacks that both the state and the vocabulary mask use.
 *
 * A node consumes a byte through its ranges, or moves without input: along epsilon edges, into a
 * rule (a CALL node pushes its return node and goes to the callee's start) or out of one (a node
 * marked is_return pops). Rules that recurse only after consuming a byte ('[' or '{') never loop
 * without input; anything else is cut by GRAMMAR_MAX_DEPTH. */
#ifndef BRASA_GRAMMAR_IMPL_H
#define BRASA_GRAMMAR_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar/grammar.h"

#define GRAMMAR_NONE UINT32_MAX
#define GRAMMAR_MAX_NODES (1u << 22)  /* a bigger schema is refused */
#define GRAMMAR_MAX_THREADS 64        /* stacks followed at once (ambiguity from anyOf); more are dropped */
#define GRAMMAR_MAX_DEPTH 160         /* rule calls nested (about 64 nested containers); deeper is dropped */
#define GRAMMAR_ARENA_CAP (1u << 15)  /* stack entries a state holds, its own and the scratch ones */
#define GRAMMAR_VISIT_CAP 1024        /* (node, stack) pairs one closure may visit */

typedef struct grange {
    uint8_t lo, hi; /* bytes lo..hi inclusive */
    uint32_t to;
} grange;

typedef struct gnode {
    uint32_t first_range, n_ranges; /* into grammar.ranges, sorted by lo */
    uint32_t first_eps, n_eps;      /* into grammar.eps */
    uint32_t callee, ret;           /* a CALL node: the rule's start node and where to return */
    uint8_t is_return;              /* the rule may end here */
    uint8_t plain;                  /* only ranges: no closure work when reached */
} gnode;

struct grammar {
    gnode *nodes;
    uint32_t n_nodes;
    grange *ranges;
    uint32_t *eps;
    uint32_t start; /* the top rule; it returns with an empty stack when the output is complete */
};

/* The builder: edges are collected per kind and grouped by node when finished. */
typedef struct gbuild {
    struct { uint32_t from; grange r; } *ranges;
    size_t n_ranges, cap_ranges;
    struct { uint32_t from, to; } *eps;
    size_t n_eps, cap_eps;
    struct { uint32_t callee, ret; uint8_t is_return; } *nodes;
    size_t n_nodes, cap_nodes;
    bool failed; /* out of memory or too many nodes; every call after it does nothing */
} gbuild;

uint32_t gbuild_node(gbuild *b);
void gbuild_range(gbuild *b, uint32_t from, uint8_t lo, uint8_t hi, uint32_t to);
void gbuild_eps(gbuild *b, uint32_t from, uint32_t to);
/* A CALL node reached from `from` by epsilon; returns the node the rule returns to. */
uint32_t gbuild_call(gbuild *b, uint32_t from, uint32_t callee);
void gbuild_return(gbuild *b, uint32_t node);
/* Bytes in sequence from `from`; returns the node after them. */
uint32_t gbuild_literal(gbuild *b, uint32_t from, const char *bytes, size_t n);
/* Moves the nodes into g (which takes ownership) and frees the builder. */
brasa_status gbuild_finish(gbuild *b, grammar *g, uint32_t start, brasa_error *err);
void gbuild_free(gbuild *b);

/* The schema compiler: the parts' rule, built into b; *start is the top rule's start node. */
brasa_status grammar_build_parts(gbuild *b, const grammar_part *parts, size_t n_parts, uint32_t *start,
                                 brasa_error *err);

/* The matcher. A thread is a node that consumes a byte and a stack (an index into the arena of
 * stack entries; 0 is the empty stack). Parents always sit at lower indices than children, so the
 * arena can be cut back (LIFO) and compacted in place. */
typedef struct gthread {
    uint32_t node, stack;
} gthread;

typedef struct gentry {
    uint32_t ret, parent, depth;
} gentry;

typedef struct gwork {
    gentry *arena;
    uint32_t n_arena; /* entries in use; [1, n_persist) belong to the state's frontier */
    uint32_t n_persist;
    gthread *todo, *seen; /* closure scratch, GRAMMAR_VISIT_CAP each */
    gthread *buf[2];      /* accepts' frontiers, GRAMMAR_MAX_THREADS each */
    uint32_t *remap;      /* compaction scratch, GRAMMAR_ARENA_CAP */
    gthread *lifo;        /* the mask walk's frontiers, one level per trie depth */
    size_t cap_lifo;
    uint32_t *level_end, *level_arena;
    size_t cap_levels;
} gwork;

struct grammar_state {
    const grammar *g;
    gthread threads[GRAMMAR_MAX_THREADS]; /* the frontier after the output so far */
    uint32_t n_threads;
    bool complete;
    gwork *w; /* mutable scratch behind a const state: see grammar.h */
};

/* From frontier in[0..n_in), consumes byte: writes the next frontier to out (GRAMMAR_MAX_THREADS
 * room), returns its size, sets *complete. Stack entries it creates go on the arena's top. */
uint32_t grammar_step(const grammar *g, gwork *w, const gthread *in, uint32_t n_in, uint8_t byte, gthread *out,
                      bool *complete);

#endif
