/* build.c: the automaton's storage: a builder that collects nodes and edges in any order, and the
 * step that groups them per node (ranges sorted by first byte) into the immutable grammar the
 * matcher reads; also grammar_compile, which runs the schema compiler into a builder. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grammar/grammar_impl.h"

/* Grows an array of n elements of size sz to hold one more; false (and b->failed) when it cannot. */
static bool grow(gbuild *b, void **p, size_t *cap, size_t n, size_t sz) {
    if (b->failed)
        return false;
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 256;
    if (c > SIZE_MAX / sz) {
        b->failed = true;
        return false;
    }
    void *q = realloc(*p, c * sz);
    if (!q) {
        b->failed = true;
        return false;
    }
    *p = q;
    *cap = c;
    return true;
}

uint32_t gbuild_node(gbuild *b) {
    if (b->n_nodes >= GRAMMAR_MAX_NODES) {
        b->failed = true;
        return 0;
    }
    if (!grow(b, (void **)&b->nodes, &b->cap_nodes, b->n_nodes, sizeof *b->nodes))
        return 0;
    b->nodes[b->n_nodes].callee = GRAMMAR_NONE;
    b->nodes[b->n_nodes].ret = GRAMMAR_NONE;
    b->nodes[b->n_nodes].is_return = 0;
    return (uint32_t)b->n_nodes++;
}

void gbuild_range(gbuild *b, uint32_t from, uint8_t lo, uint8_t hi, uint32_t to) {
    if (lo > hi || !grow(b, (void **)&b->ranges, &b->cap_ranges, b->n_ranges, sizeof *b->ranges))
        return;
    b->ranges[b->n_ranges].from = from;
    b->ranges[b->n_ranges].r.lo = lo;
    b->ranges[b->n_ranges].r.hi = hi;
    b->ranges[b->n_ranges].r.to = to;
    b->n_ranges++;
}

void gbuild_eps(gbuild *b, uint32_t from, uint32_t to) {
    if (!grow(b, (void **)&b->eps, &b->cap_eps, b->n_eps, sizeof *b->eps))
        return;
    b->eps[b->n_eps].from = from;
    b->eps[b->n_eps].to = to;
    b->n_eps++;
}

uint32_t gbuild_call(gbuild *b, uint32_t from, uint32_t callee) {
    uint32_t call = gbuild_node(b), ret = gbuild_node(b);
    if (b->failed)
        return 0;
    b->nodes[call].callee = callee;
    b->nodes[call].ret = ret;
    gbuild_eps(b, from, call);
    return ret;
}

void gbuild_return(gbuild *b, uint32_t node) {
    if (!b->failed && node < b->n_nodes)
        b->nodes[node].is_return = 1;
}

uint32_t gbuild_literal(gbuild *b, uint32_t from, const char *bytes, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t next = gbuild_node(b);
        gbuild_range(b, from, (uint8_t)bytes[i], (uint8_t)bytes[i], next);
        from = next;
    }
    return from;
}

void gbuild_free(gbuild *b) {
    free(b->ranges);
    free(b->eps);
    free(b->nodes);
    memset(b, 0, sizeof *b);
}

static int cmp_range(const void *a, const void *b) {
    const grange *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

brasa_status gbuild_finish(gbuild *b, grammar *g, uint32_t start, brasa_error *err) {
    brasa_status st = BRASA_OK;
    if (b->failed) {
        st = b->n_nodes >= GRAMMAR_MAX_NODES
                 ? err_set(err, BRASA_ERR_UNSUPPORTED, "schema too large: over %u automaton nodes", GRAMMAR_MAX_NODES)
                 : err_set(err, BRASA_ERR_NO_MEMORY, "out of memory compiling the schema");
        goto done;
    }
    const uint32_t n = (uint32_t)b->n_nodes;
    g->nodes = calloc(n ? n : 1, sizeof *g->nodes);
    g->ranges = malloc((b->n_ranges ? b->n_ranges : 1) * sizeof *g->ranges);
    g->eps = malloc((b->n_eps ? b->n_eps : 1) * sizeof *g->eps);
    if (!g->nodes || !g->ranges || !g->eps) {
        st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory compiling the schema");
        goto done;
    }
    g->n_nodes = n;
    g->start = start;
    /* counting sort of the edges by their node */
    for (size_t i = 0; i < b->n_ranges; i++)
        g->nodes[b->ranges[i].from].n_ranges++;
    for (size_t i = 0; i < b->n_eps; i++)
        g->nodes[b->eps[i].from].n_eps++;
    uint32_t r = 0, e = 0;
    for (uint32_t i = 0; i < n; i++) {
        g->nodes[i].first_range = r;
        g->nodes[i].first_eps = e;
        r += g->nodes[i].n_ranges;
        e += g->nodes[i].n_eps;
        g->nodes[i].n_ranges = g->nodes[i].n_eps = 0;
    }
    for (size_t i = 0; i < b->n_ranges; i++) {
        gnode *nd = &g->nodes[b->ranges[i].from];
        g->ranges[nd->first_range + nd->n_ranges++] = b->ranges[i].r;
    }
    for (size_t i = 0; i < b->n_eps; i++) {
        gnode *nd = &g->nodes[b->eps[i].from];
        g->eps[nd->first_eps + nd->n_eps++] = b->eps[i].to;
    }
    for (uint32_t i = 0; i < n; i++) {
        gnode *nd = &g->nodes[i];
        qsort(g->ranges + nd->first_range, nd->n_ranges, sizeof *g->ranges, cmp_range);
        nd->callee = b->nodes[i].callee;
        nd->ret = b->nodes[i].ret;
        nd->is_return = b->nodes[i].is_return;
        nd->plain = nd->n_ranges > 0 && nd->n_eps == 0 && nd->callee == GRAMMAR_NONE && !nd->is_return;
    }
done:
    gbuild_free(b);
    return st;
}

void grammar_free(grammar *g) {
    if (!g)
        return;
    free(g->nodes);
    free(g->ranges);
    free(g->eps);
    free(g);
}

brasa_status grammar_compile(const grammar_part *parts, size_t n_parts, grammar **out, brasa_error *err) {
    *out = NULL;
    if (!parts && n_parts)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "grammar_compile: no parts");
    gbuild b;
    memset(&b, 0, sizeof b);
    uint32_t start = 0;
    brasa_status st = grammar_build_parts(&b, parts, n_parts, &start, err);
    if (st != BRASA_OK) {
        gbuild_free(&b);
        return st;
    }
    grammar *g = calloc(1, sizeof *g);
    if (!g) {
        gbuild_free(&b);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory compiling the schema");
    }
    st = gbuild_finish(&b, g, start, err);
    if (st != BRASA_OK) {
        grammar_free(g);
        return st;
    }
    *out = g;
    return BRASA_OK;
}

brasa_status grammar_from_schema(const json_value *schema, grammar **out, brasa_error *err) {
    grammar_part part = { GRAMMAR_SCHEMA, NULL, 0, schema };
    return grammar_compile(&part, 1, out, err);
}

brasa_status grammar_json_object(grammar **out, brasa_error *err) {
    char type_key[] = "type", object[] = "object";
    json_value key = { .type = JSON_STRING, .str = type_key, .len = 4 };
    json_value value = { .type = JSON_STRING, .str = object, .len = 6 };
    json_value schema = { .type = JSON_OBJECT, .len = 1, .items = &value, .keys = &key };
    return grammar_from_schema(&schema, out, err);
}
