/* jinja_parse.c: the recursive-descent parser from tokens to the syntax tree, following jinja2's
 * grammar and operator precedence (parser.py): or < and < not < comparisons < + - < ~ < * / // % <
 * ** < unary - + < postfix (.attr [sub] (call)) and filters/tests. Nesting is bounded so a hostile
 * template ends in an error, not a stack overflow. Also the arena the template lives in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_internal.h"

/* ---- Arena ------------------------------------------------------------------------------------- */

struct jarena_block {
    jarena_block *next;
    size_t used, cap;
    max_align_t data[]; /* aligned for any node */
};

void *jarena_alloc(jarena *a, size_t bytes) {
    bytes = (bytes + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (bytes == 0)
        bytes = sizeof(max_align_t);
    jarena_block *b = a->head;
    if (!b || b->cap - b->used < bytes) {
        size_t cap = bytes > 32768 ? bytes : 32768;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += bytes;
    memset(p, 0, bytes);
    return p;
}

void jarena_free(jarena *a) {
    for (jarena_block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->head = NULL;
}

/* ---- Parser ------------------------------------------------------------------------------------ */

typedef struct parser {
    jarena *arena;
    const jtok *t;
    size_t n, pos;
    int depth;
    int in_loop;  /* for bodies around us (break and continue are only valid there) */
    bool soft;    /* inside an if or a conditional expression: an unknown filter fails only if reached */
    brasa_error *err;
    bool failed;
} parser;

static const jtok *cur(const parser *p) { return &p->t[p->pos]; }
static const jtok *peek(const parser *p, size_t k) { return &p->t[p->pos + k < p->n ? p->pos + k : p->n - 1]; }
static void next(parser *p) {
    if (p->pos + 1 < p->n)
        p->pos++;
}

static bool fail(parser *p, int line, const char *fmt, const char *what) {
    if (!p->failed) {
        char msg[256];
        snprintf(msg, sizeof msg, fmt, what);
        err_set(p->err, BRASA_ERR_FORMAT, "line %d: %s", line, msg);
        p->failed = true;
    }
    return false;
}

static jnode *node(parser *p, jnode_kind kind, int line) {
    jnode *n = jarena_alloc(p->arena, sizeof *n);
    if (!n) {
        if (!p->failed)
            err_set(p->err, BRASA_ERR_NO_MEMORY, "line %d: out of memory", line);
        p->failed = true;
        return NULL;
    }
    n->kind = kind;
    n->line = line;
    n->builtin = -1;
    return n;
}

static bool is_op(const parser *p, jop op) { return cur(p)->kind == JT_OP && cur(p)->op == op; }
static bool is_name(const jtok *t, const char *name) {
    return t->kind == JT_NAME && t->len == strlen(name) && memcmp(t->text, name, t->len) == 0;
}

static const char *tok_desc(const jtok *t) {
    switch (t->kind) {
    case JT_EOF: return "end of template";
    case JT_DATA: return "template data";
    case JT_VAR_BEGIN: return "'{{'";
    case JT_VAR_END: return "'}}'";
    case JT_BLOCK_BEGIN: return "'{%'";
    case JT_BLOCK_END: return "'%}'";
    case JT_NAME: return "name";
    case JT_STRING: return "string";
    case JT_INT: return "integer";
    case JT_FLOAT: return "float";
    case JT_OP: return "operator";
    }
    return "token";
}

static bool expect_op(parser *p, jop op, const char *what) {
    if (!is_op(p, op))
        return fail(p, cur(p)->line, "expected %s", what);
    next(p);
    return true;
}

static bool expect_kind(parser *p, jtok_kind kind, const char *what) {
    if (cur(p)->kind != kind)
        return fail(p, cur(p)->line, "expected %s", what);
    next(p);
    return true;
}

static bool expect_name(parser *p, const char *name) {
    if (!is_name(cur(p), name)) {
        char what[64];
        snprintf(what, sizeof what, "'%s'", name);
        return fail(p, cur(p)->line, "expected %s", what);
    }
    next(p);
    return true;
}

static bool enter(parser *p) {
    if (++p->depth > JINJA_MAX_PARSE_DEPTH)
        return fail(p, cur(p)->line, "%s", "template nested too deeply");
    return true;
}

/* A growing array of node pointers, copied into the arena when done. */
typedef struct nodes {
    jnode **v;
    size_t n, cap;
} nodes;

static bool nodes_push(parser *p, nodes *ns, jnode *n) {
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 8;
        jnode **v = realloc(ns->v, cap * sizeof(jnode *));
        if (!v) {
            free(ns->v);
            ns->v = NULL;
            ns->n = ns->cap = 0;
            return fail(p, cur(p)->line, "%s", "out of memory");
        }
        ns->v = v;
        ns->cap = cap;
    }
    ns->v[ns->n++] = n;
    return true;
}

static bool nodes_finish(parser *p, nodes *ns, jnode ***out, size_t *n) {
    *out = NULL;
    *n = ns->n;
    if (ns->n) {
        *out = jarena_alloc(p->arena, ns->n * sizeof(jnode *));
        if (*out)
            memcpy(*out, ns->v, ns->n * sizeof(jnode *));
    }
    free(ns->v);
    ns->v = NULL;
    if (ns->n && !*out)
        return fail(p, cur(p)->line, "%s", "out of memory");
    return true;
}

static jnode *parse_expression(parser *p, bool with_condexpr);
static jnode *parse_tuple(parser *p, bool with_condexpr, bool explicit_parens, const char *extra_end);
static jnode *parse_unary(parser *p, bool with_filter);

/* Call arguments after '(' up to ')': positional into items, keyword into kw_*. */
static bool parse_call_args(parser *p, jnode *n) {
    nodes pos = { 0 }, kwv = { 0 };
    const char *names[64];
    size_t lens[64];
    if (!expect_op(p, OP_LPAREN, "'('"))
        return false;
    while (!is_op(p, OP_RPAREN)) {
        if (pos.n + kwv.n > 0 && !expect_op(p, OP_COMMA, "','"))
            goto fail;
        if (is_op(p, OP_RPAREN))
            break;
        if (is_op(p, OP_MUL) || is_op(p, OP_POW)) {
            fail(p, cur(p)->line, "%s", "*args and **kwargs in calls are not supported");
            goto fail;
        }
        if (cur(p)->kind == JT_NAME && peek(p, 1)->kind == JT_OP && peek(p, 1)->op == OP_ASSIGN) {
            if (kwv.n == 64) {
                fail(p, cur(p)->line, "%s", "too many keyword arguments");
                goto fail;
            }
            names[kwv.n] = cur(p)->text;
            lens[kwv.n] = cur(p)->len;
            next(p);
            next(p);
            jnode *v = parse_expression(p, true);
            if (!v || !nodes_push(p, &kwv, v))
                goto fail;
        } else {
            if (kwv.n) {
                fail(p, cur(p)->line, "%s", "positional argument follows keyword argument");
                goto fail;
            }
            jnode *v = parse_expression(p, true);
            if (!v || !nodes_push(p, &pos, v))
                goto fail;
        }
    }
    next(p);
    if (!nodes_finish(p, &pos, &n->items, &n->n_items))
        goto fail;
    n->n_kw = kwv.n;
    if (kwv.n) {
        n->kw_names = jarena_alloc(p->arena, kwv.n * sizeof *n->kw_names);
        n->kw_lens = jarena_alloc(p->arena, kwv.n * sizeof *n->kw_lens);
        if (!n->kw_names || !n->kw_lens) {
            fail(p, cur(p)->line, "%s", "out of memory");
            goto fail;
        }
        memcpy(n->kw_names, names, kwv.n * sizeof *names);
        memcpy(n->kw_lens, lens, kwv.n * sizeof *lens);
    }
    return nodes_finish(p, &kwv, &n->kw_values, &n->n_kw);
fail:
    free(pos.v);
    free(kwv.v);
    return false;
}

/* A dotted name after '|' or 'is': jinja2 allows "a.b" for filters and tests. */
static bool parse_dotted_name(parser *p, const char **name, size_t *len) {
    if (cur(p)->kind != JT_NAME)
        return fail(p, cur(p)->line, "expected %s", "a filter or test name");
    *name = cur(p)->text;
    *len = cur(p)->len;
    next(p);
    if (is_op(p, OP_DOT))
        return fail(p, cur(p)->line, "%s", "dotted filter and test names are not supported");
    return true;
}

static jnode *parse_filter(parser *p, jnode *operand, bool start_inline) {
    while (is_op(p, OP_PIPE) || start_inline) {
        if (!start_inline)
            next(p);
        start_inline = false;
        jnode *f = node(p, N_FILTER, cur(p)->line);
        if (!f || !parse_dotted_name(p, &f->name, &f->name_len))
            return NULL;
        f->a = operand;
        f->builtin = jb_filter_index(f->name, f->name_len);
        if (f->builtin < 0 && !p->soft) {
            char nm[64];
            snprintf(nm, sizeof nm, "'%.*s'", (int)(f->name_len > 60 ? 60 : f->name_len), f->name);
            fail(p, f->line, "no filter named %s", nm);
            return NULL;
        }
        if (is_op(p, OP_LPAREN) && !parse_call_args(p, f))
            return NULL;
        operand = f;
    }
    return operand;
}

static jnode *parse_primary(parser *p);
static jnode *parse_postfix(parser *p, jnode *n);

static jnode *parse_test(parser *p, jnode *operand) {
    int line = cur(p)->line;
    next(p); /* 'is' */
    bool negated = false;
    if (is_name(cur(p), "not")) {
        negated = true;
        next(p);
    }
    jnode *t = node(p, N_TEST, line);
    if (!t || !parse_dotted_name(p, &t->name, &t->name_len))
        return NULL;
    t->a = operand;
    t->builtin = jb_test_index(t->name, t->name_len);
    if (t->builtin < 0 && !p->soft) {
        char nm[64];
        snprintf(nm, sizeof nm, "'%.*s'", (int)(t->name_len > 60 ? 60 : t->name_len), t->name);
        fail(p, line, "no test named %s", nm);
        return NULL;
    }
    const jtok *c = cur(p);
    if (is_op(p, OP_LPAREN)) {
        if (!parse_call_args(p, t))
            return NULL;
    } else if ((c->kind == JT_NAME || c->kind == JT_STRING || c->kind == JT_INT || c->kind == JT_FLOAT ||
                (c->kind == JT_OP && (c->op == OP_LBRACKET || c->op == OP_LBRACE))) &&
               !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and")) {
        if (is_name(c, "is")) {
            fail(p, c->line, "%s", "you cannot chain multiple tests with is");
            return NULL;
        }
        jnode *arg = parse_primary(p);
        if (arg)
            arg = parse_postfix(p, arg);
        if (!arg)
            return NULL;
        t->items = jarena_alloc(p->arena, sizeof(jnode *)); /* one argument */
        if (!t->items) {
            fail(p, line, "%s", "out of memory");
            return NULL;
        }
        t->items[0] = arg;
        t->n_items = 1;
    }
    if (negated) {
        jnode *n = node(p, N_NOT, line);
        if (n)
            n->a = t;
        return n;
    }
    return t;
}

/* The inside of [ ]: an expression or a slice, several making a tuple. */
static jnode *parse_subscribed(parser *p) {
    int line = cur(p)->line;
    jnode *start = NULL;
    if (!is_op(p, OP_COLON)) {
        start = parse_expression(p, true);
        if (!start)
            return NULL;
        if (!is_op(p, OP_COLON))
            return start;
    }
    next(p); /* ':' */
    jnode *s = node(p, N_SLICE, line);
    if (!s)
        return NULL;
    s->a = start;
    if (!is_op(p, OP_RBRACKET) && !is_op(p, OP_COMMA) && !is_op(p, OP_COLON)) {
        if (!(s->b = parse_expression(p, true)))
            return NULL;
    }
    if (is_op(p, OP_COLON)) {
        next(p);
        if (!is_op(p, OP_RBRACKET) && !is_op(p, OP_COMMA)) {
            if (!(s->c = parse_expression(p, true)))
                return NULL;
        }
    }
    return s;
}

static jnode *parse_subscript(parser *p, jnode *obj) {
    int line = cur(p)->line;
    if (is_op(p, OP_DOT)) {
        next(p);
        const jtok *t = cur(p);
        if (t->kind == JT_NAME) {
            jnode *n = node(p, N_GETATTR, line);
            if (!n)
                return NULL;
            n->a = obj;
            n->name = t->text;
            n->name_len = t->len;
            next(p);
            return n;
        }
        if (t->kind == JT_INT) {
            jnode *n = node(p, N_GETITEM, line), *k = node(p, N_INT, line);
            if (!n || !k)
                return NULL;
            k->ival = t->ival;
            n->a = obj;
            n->b = k;
            next(p);
            return n;
        }
        fail(p, line, "%s", "expected a name or number after '.'");
        return NULL;
    }
    next(p); /* '[' */
    nodes args = { 0 };
    while (!is_op(p, OP_RBRACKET)) {
        if (args.n && !expect_op(p, OP_COMMA, "','"))
            goto fail;
        if (is_op(p, OP_RBRACKET))
            break;
        jnode *a = parse_subscribed(p);
        if (!a || !nodes_push(p, &args, a))
            goto fail;
    }
    next(p);
    jnode *n = node(p, N_GETITEM, line);
    if (!n || args.n == 0) {
        if (n)
            fail(p, line, "%s", "expected a subscript");
        goto fail;
    }
    n->a = obj;
    if (args.n == 1) {
        n->b = args.v[0];
        free(args.v);
    } else {
        jnode *t = node(p, N_TUPLE, line);
        if (!t)
            goto fail;
        if (!nodes_finish(p, &args, &t->items, &t->n_items))
            return NULL;
        n->b = t;
    }
    return n;
fail:
    free(args.v);
    return NULL;
}

static jnode *parse_postfix(parser *p, jnode *n) {
    while (n) {
        if (is_op(p, OP_DOT) || is_op(p, OP_LBRACKET)) {
            n = parse_subscript(p, n);
        } else if (is_op(p, OP_LPAREN)) {
            jnode *c = node(p, N_CALL, cur(p)->line);
            if (!c || !parse_call_args(p, c))
                return NULL;
            c->a = n;
            n = c;
        } else {
            break;
        }
    }
    return n;
}

static jnode *parse_filter_expr(parser *p, jnode *n) {
    while (n) {
        if (is_op(p, OP_PIPE)) {
            n = parse_filter(p, n, false);
        } else if (is_name(cur(p), "is")) {
            n = parse_test(p, n);
        } else if (is_op(p, OP_LPAREN)) {
            jnode *c = node(p, N_CALL, cur(p)->line);
            if (!c || !parse_call_args(p, c))
                return NULL;
            c->a = n;
            n = c;
        } else {
            break;
        }
    }
    return n;
}

/* [ ... ] and { ... } literals. */
static jnode *parse_list_or_dict(parser *p, bool dict) {
    int line = cur(p)->line;
    next(p);
    jop close = dict ? OP_RBRACE : OP_RBRACKET;
    nodes items = { 0 };
    size_t count = 0;
    while (!is_op(p, close)) {
        if (count && !expect_op(p, OP_COMMA, "','"))
            goto fail;
        if (is_op(p, close))
            break;
        jnode *k = parse_expression(p, true);
        if (!k || !nodes_push(p, &items, k))
            goto fail;
        if (dict) {
            if (!expect_op(p, OP_COLON, "':'"))
                goto fail;
            jnode *v = parse_expression(p, true);
            if (!v || !nodes_push(p, &items, v))
                goto fail;
        }
        count++;
    }
    next(p);
    jnode *n = node(p, dict ? N_DICT : N_LIST, line);
    if (!n)
        goto fail;
    if (!nodes_finish(p, &items, &n->items, &n->n_items))
        return NULL;
    return n;
fail:
    free(items.v);
    return NULL;
}

static jnode *parse_primary(parser *p) {
    const jtok *t = cur(p);
    jnode *n = NULL;
    if (!enter(p))
        return NULL;
    switch (t->kind) {
    case JT_NAME:
        if (is_name(t, "true") || is_name(t, "True") || is_name(t, "false") || is_name(t, "False")) {
            if ((n = node(p, N_BOOL, t->line)))
                n->ival = t->text[0] == 't' || t->text[0] == 'T';
        } else if (is_name(t, "none") || is_name(t, "None")) {
            n = node(p, N_NONE, t->line);
        } else if ((n = node(p, N_NAME, t->line))) {
            n->name = t->text;
            n->name_len = t->len;
        }
        next(p);
        break;
    case JT_STRING: {
        /* adjacent literals join, as in Python */
        size_t total = 0, k = 0;
        for (; peek(p, k)->kind == JT_STRING; k++)
            total += peek(p, k)->len;
        char *s = jarena_alloc(p->arena, total + 1);
        if (!s || !(n = node(p, N_STR, t->line))) {
            fail(p, t->line, "%s", "out of memory");
            break;
        }
        size_t o = 0;
        for (size_t i = 0; i < k; i++) {
            memcpy(s + o, cur(p)->text, cur(p)->len);
            o += cur(p)->len;
            next(p);
        }
        n->name = s;
        n->name_len = total;
        break;
    }
    case JT_INT:
        if ((n = node(p, N_INT, t->line)))
            n->ival = t->ival;
        next(p);
        break;
    case JT_FLOAT:
        if ((n = node(p, N_FLOAT, t->line)))
            n->fval = t->fval;
        next(p);
        break;
    case JT_OP:
        if (t->op == OP_LPAREN) {
            next(p);
            n = parse_tuple(p, true, true, NULL);
            if (n && !expect_op(p, OP_RPAREN, "')'"))
                n = NULL;
        } else if (t->op == OP_LBRACKET || t->op == OP_LBRACE) {
            n = parse_list_or_dict(p, t->op == OP_LBRACE);
        } else {
            fail(p, t->line, "unexpected %s", tok_desc(t));
        }
        break;
    default:
        fail(p, t->line, "unexpected %s", tok_desc(t));
        break;
    }
    p->depth--;
    return n;
}

static jnode *parse_unary(parser *p, bool with_filter) {
    if (!enter(p))
        return NULL;
    jnode *n;
    if (is_op(p, OP_SUB) || is_op(p, OP_ADD)) {
        int line = cur(p)->line;
        jnode_kind kind = is_op(p, OP_SUB) ? N_NEG : N_POS;
        next(p);
        jnode *operand = parse_unary(p, false);
        n = operand ? node(p, kind, line) : NULL;
        if (n)
            n->a = operand;
    } else {
        n = parse_primary(p);
    }
    n = parse_postfix(p, n);
    if (with_filter)
        n = parse_filter_expr(p, n);
    p->depth--;
    return n;
}

static jnode *binop(parser *p, jop op, jnode *a, jnode *b, int line) {
    if (!a || !b)
        return NULL;
    jnode *n = node(p, N_BINOP, line);
    if (n) {
        n->op = op;
        n->a = a;
        n->b = b;
    }
    return n;
}

static jnode *parse_pow(parser *p) {
    jnode *n = parse_unary(p, true);
    while (n && is_op(p, OP_POW)) {
        int line = cur(p)->line;
        next(p);
        n = binop(p, OP_POW, n, parse_unary(p, true), line);
    }
    return n;
}

static jnode *parse_math2(parser *p) {
    jnode *n = parse_pow(p);
    while (n && (is_op(p, OP_MUL) || is_op(p, OP_DIV) || is_op(p, OP_FLOORDIV) || is_op(p, OP_MOD))) {
        jop op = cur(p)->op;
        int line = cur(p)->line;
        next(p);
        n = binop(p, op, n, parse_pow(p), line);
    }
    return n;
}

static jnode *parse_concat(parser *p) {
    jnode *n = parse_math2(p);
    while (n && is_op(p, OP_TILDE)) {
        int line = cur(p)->line;
        next(p);
        n = binop(p, OP_TILDE, n, parse_math2(p), line);
    }
    return n;
}

static jnode *parse_math1(parser *p) {
    jnode *n = parse_concat(p);
    while (n && (is_op(p, OP_ADD) || is_op(p, OP_SUB))) {
        jop op = cur(p)->op;
        int line = cur(p)->line;
        next(p);
        n = binop(p, op, n, parse_concat(p), line);
    }
    return n;
}

static jnode *parse_compare(parser *p) {
    int line = cur(p)->line;
    jnode *first = parse_math1(p);
    if (!first)
        return NULL;
    nodes operands = { 0 };
    jop ops[64];
    for (;;) {
        jop op;
        const jtok *t = cur(p);
        if (t->kind == JT_OP && (t->op == OP_EQ || t->op == OP_NE || t->op == OP_LT || t->op == OP_LE ||
                                 t->op == OP_GT || t->op == OP_GE)) {
            op = t->op;
            next(p);
        } else if (is_name(t, "in")) {
            op = OP_IN;
            next(p);
        } else if (is_name(t, "not") && is_name(peek(p, 1), "in")) {
            op = OP_NOT_IN;
            next(p);
            next(p);
        } else {
            break;
        }
        if (operands.n == 64) {
            fail(p, t->line, "%s", "comparison chain too long");
            goto fail;
        }
        jnode *rhs = parse_math1(p);
        if (!rhs || !nodes_push(p, &operands, rhs))
            goto fail;
        ops[operands.n - 1] = op;
    }
    if (operands.n == 0)
        return first;
    jnode *n = node(p, N_COMPARE, line);
    if (!n)
        goto fail;
    n->a = first;
    n->ops = jarena_alloc(p->arena, operands.n * sizeof *n->ops);
    if (!n->ops) {
        fail(p, line, "%s", "out of memory");
        goto fail;
    }
    memcpy(n->ops, ops, operands.n * sizeof *ops);
    if (!nodes_finish(p, &operands, &n->items, &n->n_items))
        return NULL;
    return n;
fail:
    free(operands.v);
    return NULL;
}

static jnode *parse_not(parser *p) {
    if (is_name(cur(p), "not")) {
        int line = cur(p)->line;
        next(p);
        if (!enter(p))
            return NULL;
        jnode *operand = parse_not(p);
        p->depth--;
        jnode *n = operand ? node(p, N_NOT, line) : NULL;
        if (n)
            n->a = operand;
        return n;
    }
    return parse_compare(p);
}

/* A left-associative chain "operand WORD operand ...", as jinja2 parses `and` and `or`. */
static jnode *parse_chain(parser *p, const char *word, jnode_kind kind, jnode *(*operand)(parser *)) {
    jnode *n = operand(p);
    while (n && is_name(cur(p), word)) {
        int line = cur(p)->line;
        next(p);
        jnode *rhs = operand(p), *joined = rhs ? node(p, kind, line) : NULL;
        if (joined) {
            joined->a = n;
            joined->b = rhs;
        }
        n = joined;
    }
    return n;
}

static jnode *parse_and(parser *p) {
    return parse_chain(p, "and", N_AND, parse_not);
}

static jnode *parse_or(parser *p) {
    return parse_chain(p, "or", N_OR, parse_and);
}

static jnode *parse_expression(parser *p, bool with_condexpr) {
    if (!enter(p))
        return NULL;
    jnode *n = parse_or(p);
    while (with_condexpr && n && is_name(cur(p), "if")) {
        int line = cur(p)->line;
        bool soft = p->soft;
        p->soft = true;
        next(p);
        jnode *c = node(p, N_COND, line);
        if (c) {
            c->b = n;
            c->a = parse_or(p);
            if (c->a && is_name(cur(p), "else")) {
                next(p);
                c->c = parse_expression(p, true);
                if (!c->c)
                    c = NULL;
            }
            if (c && !c->a)
                c = NULL;
        }
        p->soft = soft;
        n = c;
    }
    p->depth--;
    return n;
}

static bool is_tuple_end(parser *p, const char *extra_end) {
    const jtok *t = cur(p);
    if (t->kind == JT_VAR_END || t->kind == JT_BLOCK_END || t->kind == JT_EOF)
        return true;
    if (t->kind == JT_OP && t->op == OP_RPAREN)
        return true;
    return extra_end && is_name(t, extra_end);
}

/* Expressions separated by commas; one without a comma is itself, not a tuple. */
static jnode *parse_tuple(parser *p, bool with_condexpr, bool explicit_parens, const char *extra_end) {
    int line = cur(p)->line;
    nodes items = { 0 };
    bool comma = false;
    for (;;) {
        if (items.n) {
            if (!is_op(p, OP_COMMA))
                break;
            next(p);
            comma = true;
        }
        if (is_tuple_end(p, extra_end))
            break;
        jnode *e = parse_expression(p, with_condexpr);
        if (!e || !nodes_push(p, &items, e)) {
            free(items.v);
            return NULL;
        }
    }
    if (items.n == 1 && !comma) {
        jnode *n = items.v[0];
        free(items.v);
        return n;
    }
    if (items.n == 0 && !explicit_parens) {
        free(items.v);
        fail(p, cur(p)->line, "expected an expression, got %s", tok_desc(cur(p)));
        return NULL;
    }
    jnode *n = node(p, N_TUPLE, line);
    if (!n) {
        free(items.v);
        return NULL;
    }
    if (!nodes_finish(p, &items, &n->items, &n->n_items))
        return NULL;
    return n;
}

/* A for or set target: a name, names separated by commas (with or without parentheses), or (set
 * only) namespace.attr. */
static jnode *parse_assign_target(parser *p, bool with_namespace, const char *extra_end) {
    int line = cur(p)->line;
    if (with_namespace && cur(p)->kind == JT_NAME && peek(p, 1)->kind == JT_OP && peek(p, 1)->op == OP_DOT &&
        peek(p, 2)->kind == JT_NAME) {
        jnode *n = node(p, N_NSATTR, line);
        if (!n)
            return NULL;
        n->name = cur(p)->text;
        n->name_len = cur(p)->len;
        n->attr = peek(p, 2)->text;
        n->attr_len = peek(p, 2)->len;
        next(p);
        next(p);
        next(p);
        return n;
    }
    bool parens = is_op(p, OP_LPAREN);
    if (parens)
        next(p);
    nodes names = { 0 };
    bool comma = false;
    for (;;) {
        if (names.n) {
            if (!is_op(p, OP_COMMA))
                break;
            next(p);
            comma = true;
            if ((parens && is_op(p, OP_RPAREN)) || (!parens && extra_end && is_name(cur(p), extra_end)))
                break;
        }
        const jtok *t = cur(p);
        if (t->kind != JT_NAME) {
            free(names.v);
            fail(p, t->line, "expected %s", "a name to assign to");
            return NULL;
        }
        jnode *n = node(p, N_NAME, t->line);
        if (!n || !nodes_push(p, &names, n)) {
            free(names.v);
            return NULL;
        }
        n->name = t->text;
        n->name_len = t->len;
        next(p);
    }
    if (parens && !expect_op(p, OP_RPAREN, "')'")) {
        free(names.v);
        return NULL;
    }
    if (names.n == 1 && !comma) {
        jnode *n = names.v[0];
        free(names.v);
        return n;
    }
    jnode *t = node(p, N_TUPLE, line);
    if (!t) {
        free(names.v);
        return NULL;
    }
    if (!nodes_finish(p, &names, &t->items, &t->n_items))
        return NULL;
    return t;
}

static jnode *parse_body(parser *p, const char *const *end_names, const char *looking_for);

static bool block_end(parser *p) { return expect_kind(p, JT_BLOCK_END, "'%}'"); }

/* At "{% name": whether name is one of end_names. */
static bool at_end_tag(const parser *p, const char *const *end_names) {
    if (cur(p)->kind != JT_BLOCK_BEGIN)
        return false;
    for (size_t i = 0; end_names[i]; i++)
        if (is_name(peek(p, 1), end_names[i]))
            return true;
    return false;
}

/* Consumes "{% name" of an end tag already seen by parse_body. */
static void take_end_tag(parser *p) {
    next(p);
    next(p);
}

/* Macro and call-block parameters: (a, b=default, ...). */
static bool parse_signature(parser *p, jnode *n) {
    nodes names = { 0 }, defaults = { 0 };
    if (!expect_op(p, OP_LPAREN, "'('"))
        return false;
    while (!is_op(p, OP_RPAREN)) {
        if (names.n && !expect_op(p, OP_COMMA, "','"))
            goto fail;
        if (is_op(p, OP_RPAREN))
            break;
        const jtok *t = cur(p);
        if (t->kind != JT_NAME) {
            fail(p, t->line, "expected %s", "a parameter name");
            goto fail;
        }
        jnode *nm = node(p, N_NAME, t->line);
        if (!nm || !nodes_push(p, &names, nm))
            goto fail;
        nm->name = t->text;
        nm->name_len = t->len;
        next(p);
        jnode *def = NULL;
        if (is_op(p, OP_ASSIGN)) {
            next(p);
            if (!(def = parse_expression(p, true)))
                goto fail;
        } else if (defaults.n && defaults.v[defaults.n - 1]) {
            fail(p, t->line, "%s", "non-default argument follows default argument");
            goto fail;
        }
        if (!nodes_push(p, &defaults, def))
            goto fail;
    }
    next(p);
    if (!nodes_finish(p, &names, &n->items, &n->n_items))
        goto fail;
    return nodes_finish(p, &defaults, &n->kw_values, &n->n_kw);
fail:
    free(names.v);
    free(defaults.v);
    return false;
}

static jnode *parse_for(parser *p, int line) {
    jnode *n = node(p, S_FOR, line);
    if (!n || !(n->a = parse_assign_target(p, false, "in")) || !expect_name(p, "in"))
        return NULL;
    if (!(n->b = parse_tuple(p, false, false, "recursive")))
        return NULL;
    if (is_name(cur(p), "if")) {
        next(p);
        if (!(n->c = parse_expression(p, true)))
            return NULL;
    }
    if (is_name(cur(p), "recursive"))
        return fail(p, line, "%s", "recursive loops are not supported"), NULL;
    if (!block_end(p))
        return NULL;
    static const char *const body_end[] = { "endfor", "else", NULL };
    static const char *const else_end[] = { "endfor", NULL };
    p->in_loop++;
    bool soft = p->soft;
    p->soft = false;
    n->d = parse_body(p, body_end, "'endfor' or 'else'");
    p->in_loop--;
    if (n->d && is_name(peek(p, 1), "else")) {
        take_end_tag(p);
        if (!block_end(p) || !(n->e = parse_body(p, else_end, "'endfor'")))
            n = NULL;
    }
    p->soft = soft;
    if (!n || p->failed)
        return NULL;
    take_end_tag(p);
    return block_end(p) ? n : NULL;
}

static jnode *parse_if(parser *p, int line) {
    static const char *const ends[] = { "elif", "else", "endif", NULL };
    static const char *const else_end[] = { "endif", NULL };
    bool soft = p->soft;
    p->soft = true;
    jnode *top = node(p, S_IF, line), *n = top;
    if (!n || !(n->a = parse_tuple(p, false, false, NULL)) || !block_end(p))
        goto done;
    for (;;) {
        if (!(n->b = parse_body(p, ends, "'elif' or 'else' or 'endif'")))
            goto done;
        if (is_name(peek(p, 1), "elif")) {
            int l = peek(p, 1)->line;
            take_end_tag(p);
            jnode *e = node(p, S_IF, l);
            if (!e || !(e->a = parse_tuple(p, false, false, NULL)) || !block_end(p))
                goto done;
            n->c = e;
            n = e;
            continue;
        }
        if (is_name(peek(p, 1), "else")) {
            take_end_tag(p);
            if (!block_end(p) || !(n->c = parse_body(p, else_end, "'endif'")))
                goto done;
        }
        take_end_tag(p);
        if (!block_end(p))
            goto done;
        p->soft = soft;
        return top;
    }
done:
    p->soft = soft;
    return NULL;
}

static jnode *parse_set(parser *p, int line) {
    jnode *target = parse_assign_target(p, true, NULL);
    if (!target)
        return NULL;
    if (is_op(p, OP_ASSIGN)) {
        next(p);
        jnode *n = node(p, S_SET, line);
        if (!n || !(n->b = parse_tuple(p, true, false, NULL)) || !block_end(p))
            return NULL;
        n->a = target;
        return n;
    }
    jnode *n = node(p, S_SETBLOCK, line);
    if (!n)
        return NULL;
    n->a = target;
    if (is_op(p, OP_PIPE) && !(n->c = parse_filter(p, NULL, false)))
        return NULL;
    if (!block_end(p))
        return NULL;
    static const char *const ends[] = { "endset", NULL };
    bool soft = p->soft;
    p->soft = false;
    n->d = parse_body(p, ends, "'endset'");
    p->soft = soft;
    if (!n->d)
        return NULL;
    take_end_tag(p);
    return block_end(p) ? n : NULL;
}

/* The body of a macro, call block or filter block: a new frame (not soft, not in a loop). */
static jnode *parse_scoped_body(parser *p, const char *end_name, const char *looking_for) {
    const char *ends[] = { end_name, NULL };
    bool soft = p->soft;
    int in_loop = p->in_loop;
    p->soft = false;
    p->in_loop = 0;
    jnode *body = parse_body(p, ends, looking_for);
    p->soft = soft;
    p->in_loop = in_loop;
    if (!body)
        return NULL;
    take_end_tag(p);
    return block_end(p) ? body : NULL;
}

static jnode *parse_statement(parser *p) {
    next(p); /* {% */
    const jtok *t = cur(p);
    if (t->kind != JT_NAME) {
        fail(p, t->line, "%s", "tag name expected");
        return NULL;
    }
    if (!enter(p))
        return NULL;
    jnode *n = NULL;
    int line = t->line;
    if (is_name(t, "for")) {
        next(p);
        n = parse_for(p, line);
    } else if (is_name(t, "if")) {
        next(p);
        n = parse_if(p, line);
    } else if (is_name(t, "set")) {
        next(p);
        n = parse_set(p, line);
    } else if (is_name(t, "macro")) {
        next(p);
        if (cur(p)->kind != JT_NAME) {
            fail(p, line, "expected %s", "a macro name");
        } else if ((n = node(p, S_MACRO, line))) {
            n->name = cur(p)->text;
            n->name_len = cur(p)->len;
            next(p);
            if (!parse_signature(p, n) || !block_end(p) || !(n->d = parse_scoped_body(p, "endmacro", "'endmacro'")))
                n = NULL;
        }
    } else if (is_name(t, "call")) {
        next(p);
        if ((n = node(p, S_CALLBLOCK, line))) {
            if (is_op(p, OP_LPAREN) && !parse_signature(p, n))
                n = NULL;
            if (n && (!(n->a = parse_expression(p, true)) || n->a->kind != N_CALL)) {
                if (!p->failed)
                    fail(p, line, "%s", "expected a call after 'call'");
                n = NULL;
            }
            if (n && (!block_end(p) || !(n->d = parse_scoped_body(p, "endcall", "'endcall'"))))
                n = NULL;
        }
    } else if (is_name(t, "filter")) {
        next(p);
        if ((n = node(p, S_FILTERBLOCK, line))) {
            if (!(n->c = parse_filter(p, NULL, true)) || !block_end(p) ||
                !(n->d = parse_scoped_body(p, "endfilter", "'endfilter'")))
                n = NULL;
        }
    } else if (is_name(t, "generation")) {
        /* transformers' AssistantTracker: the body renders as it is */
        next(p);
        if (block_end(p)) {
            static const char *const ends[] = { "endgeneration", NULL };
            n = parse_body(p, ends, "'endgeneration'");
            if (n) {
                take_end_tag(p);
                if (!block_end(p))
                    n = NULL;
            }
        }
    } else if (is_name(t, "break") || is_name(t, "continue")) {
        bool brk = is_name(t, "break");
        next(p);
        if (!p->in_loop)
            fail(p, line, "'%s' outside of a loop", brk ? "break" : "continue");
        else if ((n = node(p, brk ? S_BREAK : S_CONTINUE, line)) && !block_end(p))
            n = NULL;
    } else {
        char nm[72];
        snprintf(nm, sizeof nm, "'%.*s'", (int)(t->len > 64 ? 64 : t->len), t->text);
        fail(p, line, "encountered unknown tag %s", nm);
    }
    p->depth--;
    return n;
}

/* Statements up to one of end_names (left unconsumed: the caller reads which it was) or, when
 * end_names is NULL, to the end of the template. */
static jnode *parse_body(parser *p, const char *const *end_names, const char *looking_for) {
    int line = cur(p)->line;
    nodes items = { 0 };
    for (;;) {
        const jtok *t = cur(p);
        jnode *n = NULL;
        if (t->kind == JT_EOF) {
            if (end_names) {
                fail(p, t->line, "unexpected end of template, expected %s", looking_for);
                goto fail;
            }
            break;
        }
        if (end_names && at_end_tag(p, end_names))
            break;
        if (t->kind == JT_DATA) {
            if ((n = node(p, S_DATA, t->line))) {
                n->name = t->text;
                n->name_len = t->len;
            }
            next(p);
        } else if (t->kind == JT_VAR_BEGIN) {
            next(p);
            jnode *e = parse_tuple(p, true, false, NULL);
            if (e && expect_kind(p, JT_VAR_END, "'}}'") && (n = node(p, S_OUTPUT, t->line)))
                n->a = e;
        } else if (t->kind == JT_BLOCK_BEGIN) {
            const jtok *name = peek(p, 1);
            if (name->kind == JT_NAME && (is_name(name, "endfor") || is_name(name, "endif") || is_name(name, "else") ||
                                          is_name(name, "elif") || is_name(name, "endmacro") || is_name(name, "endset") ||
                                          is_name(name, "endcall") || is_name(name, "endfilter") ||
                                          is_name(name, "endgeneration"))) {
                char msg[160];
                snprintf(msg, sizeof msg, "unexpected '%.*s'%s%s", (int)name->len, name->text,
                         end_names ? ", expected " : "", end_names ? looking_for : "");
                fail(p, name->line, "%s", msg);
                goto fail;
            }
            n = parse_statement(p);
        } else {
            fail(p, t->line, "unexpected %s", tok_desc(t));
        }
        if (!n || !nodes_push(p, &items, n))
            goto fail;
    }
    jnode *body = node(p, S_BODY, line);
    if (!body)
        goto fail;
    if (!nodes_finish(p, &items, &body->items, &body->n_items))
        return NULL;
    return body;
fail:
    free(items.v);
    if (!p->failed)
        fail(p, line, "%s", "syntax error");
    return NULL;
}

brasa_status jinja_parse_tokens(jarena *arena, const jtok *tokens, size_t n_tokens, jnode **root, brasa_error *err) {
    parser p = { .arena = arena, .t = tokens, .n = n_tokens, .err = err };
    *root = parse_body(&p, NULL, NULL);
    if (!*root || p.failed)
        return err && err->status != BRASA_OK ? err->status : BRASA_ERR_FORMAT;
    return BRASA_OK;
}

brasa_status jinja_parse(const char *src, size_t len, jinja_template **out, brasa_error *err) {
    *out = NULL;
    if (!src && len)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "jinja_parse: no source");
    jinja_template *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    jtok *tokens = NULL;
    size_t n_tokens = 0;
    brasa_status st = jinja_lex(&t->arena, src ? src : "", len, &tokens, &n_tokens, err);
    if (st == BRASA_OK)
        st = jinja_parse_tokens(&t->arena, tokens, n_tokens, &t->root, err);
    if (st != BRASA_OK) {
        jinja_free(t);
        return st;
    }
    *out = t;
    return BRASA_OK;
}

void jinja_free(jinja_template *t) {
    if (!t)
        return;
    jarena_free(&t->arena);
    free(t);
}
