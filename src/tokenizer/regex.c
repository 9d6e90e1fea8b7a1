/* regex.c: parser, code generator and backtracking matcher for the split-rule dialect (regex.h).
 *
 * The pattern is parsed into a tree, checked (no loop over something that can match nothing, so
 * every loop advances), then emitted as instructions in the style of a backtracking virtual
 * machine: SPLIT tries its first branch and remembers the second on an explicit stack (so a long
 * run of one class costs heap, never C stack), lookahead and atomic groups run their body as a
 * nested match. Each class keeps a 128-bit table for ASCII so the common case is one bit test;
 * each SPLIT knows which ASCII code points its branches can start with, so most alternatives are
 * skipped without a frame; and the branch points found exhausted are remembered for the range
 * (rx_memo), so scanning a long run stays linear. */
#include "tokenizer/regex.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "tokenizer/unicode.h"

enum { OP_CLASS, OP_SPLIT, OP_JMP, OP_MATCH, OP_LOOK, OP_NLOOK, OP_ATOMIC, OP_EOL, OP_WORDB, OP_NWORDB };

typedef struct rx_inst {
    uint8_t op;
    int32_t x, y; /* CLASS: class; SPLIT: first, second; JMP: target; LOOK/NLOOK/ATOMIC: body, after */
} rx_inst;

typedef struct rx_class {
    uint16_t bits;   /* UNI_* bits any of which admits a code point */
    bool neg;
    uint32_t r0, nr; /* its ranges in prog->ranges */
    int32_t and_with; /* -1, or a class that must also admit it (&&) */
    uint64_t ascii[2]; /* the whole class (negation and && included) for code points < 128 */
} rx_class;

typedef struct rx_range {
    uint32_t lo, hi;
} rx_range;

/* What the thread starting at an instruction can take first, for ASCII code points: a SPLIT whose
 * branch cannot start with the next code point goes straight to the other, without a frame. */
typedef struct rx_first {
    uint64_t ascii[2]; /* the ASCII code points it can consume first */
    bool any;          /* it can also match without consuming, or test an assertion first: no pruning */
} rx_first;

struct rx_prog {
    rx_inst *code;
    size_t n_code, cap_code;
    rx_class *classes;
    size_t n_classes, cap_classes;
    rx_range *ranges;
    size_t n_ranges, cap_ranges;
    rx_first *first_x, *first_y; /* (n_code) of each SPLIT's two branches */
};

/* A backtracking frame: an alternative to try (pc >= 0), or the mark (pc = -1 - split) that the
 * alternatives of the branch point `split` at pos are all spent once it is popped. */
struct rx_frame {
    int32_t pc;
    size_t pos;
};

struct rx_dead {
    uint32_t gen;
    size_t lo, hi; /* positions [lo, hi] from which this instruction cannot lead to a match */
};

enum { N_CLASS, N_CAT, N_ALT, N_REPEAT, N_LOOK, N_NLOOK, N_EOL, N_WORDB, N_NWORDB, N_EMPTY };

#define REPEAT_INF (-1)
#define MAX_NODES 4096
#define MAX_CODE 65536
#define MAX_REPEAT 1024

typedef struct node {
    uint8_t kind;
    bool possessive;
    int32_t a, b;     /* children */
    int32_t min, max; /* N_REPEAT */
    int32_t cls;      /* N_CLASS */
} node;

typedef struct parser {
    const char *s;
    size_t i;
    rx_prog *p;
    node nodes[MAX_NODES];
    int32_t n_nodes;
    bool icase;
    char *err;
    size_t err_len;
    bool failed;
} parser;

static void fail(parser *ps, const char *fmt, ...) {
    if (ps->failed)
        return;
    ps->failed = true;
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (ps->err && ps->err_len)
        snprintf(ps->err, ps->err_len, "%s at offset %zu of the pattern", what, ps->i);
}

static int32_t new_node(parser *ps, uint8_t kind, int32_t a, int32_t b) {
    if (ps->n_nodes >= MAX_NODES) {
        fail(ps, "pattern too long");
        return -1;
    }
    ps->nodes[ps->n_nodes] = (node){ kind, false, a, b, 0, 0, -1 };
    return ps->n_nodes++;
}

static bool grow(void **ptr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*ptr, c * elem);
    if (!q)
        return false;
    *ptr = q;
    *cap = c;
    return true;
}

static bool class_admits(const rx_prog *p, const rx_class *c, uint32_t cp, uint16_t bits);

static bool ranges_have(const rx_prog *p, const rx_class *c, uint32_t cp) {
    for (uint32_t k = 0; k < c->nr; k++)
        if (cp >= p->ranges[c->r0 + k].lo && cp <= p->ranges[c->r0 + k].hi)
            return true;
    return false;
}

static bool class_admits(const rx_prog *p, const rx_class *c, uint32_t cp, uint16_t bits) {
    if (cp < 128)
        return (c->ascii[cp >> 6] >> (cp & 63)) & 1;
    bool in = (bits & c->bits) != 0 || ranges_have(p, c, cp);
    if (c->neg)
        in = !in;
    return in && (c->and_with < 0 || class_admits(p, &p->classes[c->and_with], cp, bits));
}

/* Fills the ASCII table of class k from its definition (its && partner is finished first). */
static void finish_class(rx_prog *p, int32_t k) {
    rx_class *c = &p->classes[k];
    c->ascii[0] = c->ascii[1] = 0;
    for (uint32_t cp = 0; cp < 128; cp++) {
        bool in = (uni_bits(cp) & c->bits) != 0 || ranges_have(p, c, cp);
        if (c->neg)
            in = !in;
        if (in && c->and_with >= 0)
            in = class_admits(p, &p->classes[c->and_with], cp, uni_bits(cp));
        if (in)
            c->ascii[cp >> 6] |= 1ull << (cp & 63);
    }
}

static int32_t new_class(parser *ps) {
    rx_prog *p = ps->p;
    if (!grow((void **)&p->classes, &p->cap_classes, p->n_classes + 1, sizeof *p->classes)) {
        fail(ps, "out of memory");
        return -1;
    }
    p->classes[p->n_classes] = (rx_class){ 0, false, (uint32_t)p->n_ranges, 0, -1, { 0, 0 } };
    return (int32_t)p->n_classes++;
}

/* Ranges of a class are appended while it is the last class being built. */
static void add_range(parser *ps, int32_t k, uint32_t lo, uint32_t hi) {
    rx_prog *p = ps->p;
    if (!grow((void **)&p->ranges, &p->cap_ranges, p->n_ranges + 1, sizeof *p->ranges)) {
        fail(ps, "out of memory");
        return;
    }
    p->ranges[p->n_ranges++] = (rx_range){ lo, hi };
    p->classes[k].nr++;
}

/* A range, with its other ASCII case too under (?i). */
static void add_range_folded(parser *ps, int32_t k, uint32_t lo, uint32_t hi) {
    add_range(ps, k, lo, hi);
    if (!ps->icase)
        return;
    for (uint32_t c = lo; c <= hi && c < 128; c++) {
        if (c >= 'a' && c <= 'z')
            add_range(ps, k, c - 32, c - 32);
        else if (c >= 'A' && c <= 'Z')
            add_range(ps, k, c + 32, c + 32);
    }
}

static uint32_t peek_cp(parser *ps, int *len) {
    uint32_t cp;
    size_t rest = strlen(ps->s + ps->i);
    int k = rest ? utf8_decode((const unsigned char *)ps->s + ps->i, rest, &cp) : 0;
    if (k <= 0) {
        *len = rest ? 1 : 0;
        return rest ? 0xFFFD : 0;
    }
    *len = k;
    return cp;
}

static uint32_t next_cp(parser *ps) {
    int len;
    uint32_t cp = peek_cp(ps, &len);
    ps->i += (size_t)len;
    return cp;
}

static bool eat(parser *ps, const char *lit) {
    size_t n = strlen(lit);
    if (strncmp(ps->s + ps->i, lit, n) != 0)
        return false;
    ps->i += n;
    return true;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* \p{..} names: general categories and their groups, White_Space, Han. */
static const struct {
    const char *name;
    uint16_t bits;
} property_names[] = {
    { "L", UNI_L }, { "Lu", UNI_LU }, { "Ll", UNI_LL }, { "Lt", UNI_LT }, { "Lm", UNI_LM }, { "Lo", UNI_LO },
    { "M", UNI_M }, { "N", UNI_N }, { "Nd", UNI_ND }, { "P", UNI_P }, { "Pc", UNI_PC }, { "S", UNI_S },
    { "Han", UNI_HAN }, { "White_Space", UNI_WS },
};

/* What an escape inside or outside a class stands for. */
typedef struct escape {
    bool is_set;      /* a class of code points (bits, optionally negated) */
    uint16_t bits;
    bool neg;
    uint32_t cp;      /* else a single code point */
    int assertion;    /* N_WORDB, N_NWORDB, or 0 */
} escape;

static escape parse_escape(parser *ps, bool in_class) {
    escape e = { 0 };
    char c = ps->s[ps->i];
    if (!c) {
        fail(ps, "pattern ends after a backslash");
        return e;
    }
    ps->i++;
    switch (c) {
    case 's': case 'S': e.is_set = true; e.bits = UNI_WS; e.neg = c == 'S'; return e;
    case 'd': case 'D': e.is_set = true; e.bits = UNI_ND; e.neg = c == 'D'; return e;
    case 'w': case 'W': e.is_set = true; e.bits = UNI_W; e.neg = c == 'W'; return e;
    case 'r': e.cp = '\r'; return e;
    case 'n': e.cp = '\n'; return e;
    case 't': e.cp = '\t'; return e;
    case 'f': e.cp = '\f'; return e;
    case 'v': e.cp = '\v'; return e;
    case 'b': case 'B':
        if (in_class)
            fail(ps, "\\%c inside a class is not supported", c);
        e.assertion = c == 'b' ? N_WORDB : N_NWORDB;
        return e;
    case 'x': case 'u': {
        int digits = c == 'x' ? 2 : 4;
        uint32_t v = 0;
        if (c == 'x' && ps->s[ps->i] == '{') { /* \x{H..}: any code point */
            ps->i++;
            int n = 0;
            for (int h; (h = hex_value(ps->s[ps->i])) >= 0 && n < 6; n++, ps->i++)
                v = v * 16 + (uint32_t)h;
            if (n == 0 || ps->s[ps->i] != '}' || v > 0x10FFFF) {
                fail(ps, "bad \\x{..}");
                return e;
            }
            ps->i++;
            e.cp = v;
            return e;
        }
        for (int k = 0; k < digits; k++) {
            int h = hex_value(ps->s[ps->i]);
            if (h < 0) {
                fail(ps, "\\%c needs %d hex digits", c, digits);
                return e;
            }
            v = v * 16 + (uint32_t)h;
            ps->i++;
        }
        e.cp = v;
        return e;
    }
    case 'p': case 'P': {
        if (ps->s[ps->i] != '{') {
            fail(ps, "\\%c needs a {name}", c);
            return e;
        }
        const char *name = ps->s + ps->i + 1, *close = strchr(name, '}');
        if (!close) {
            fail(ps, "unterminated \\%c{", c);
            return e;
        }
        size_t n = (size_t)(close - name);
        for (size_t k = 0; k < sizeof property_names / sizeof property_names[0]; k++)
            if (strlen(property_names[k].name) == n && memcmp(property_names[k].name, name, n) == 0) {
                e.is_set = true;
                e.bits = property_names[k].bits;
                e.neg = c == 'P';
                ps->i += n + 2;
                return e;
            }
        fail(ps, "unknown property \\%c{%.*s}", c, (int)(n > 32 ? 32 : n), name);
        return e;
    }
    default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            fail(ps, "unsupported escape \\%c", c);
            return e;
        }
        e.cp = (unsigned char)c; /* escaped punctuation stands for itself */
        return e;
    }
}

static int32_t parse_alt(parser *ps);

/* A class of the form \p{..} or \s outside brackets, or a bracket class's escape set: its own class. */
static int32_t set_class(parser *ps, uint16_t bits, bool neg) {
    int32_t k = new_class(ps);
    if (k < 0)
        return -1;
    ps->p->classes[k].bits = bits;
    ps->p->classes[k].neg = neg;
    return k;
}

/* [..] after the '[': items, then optionally && and another class. Escape sets with negation
 * inside brackets (\S, \P{..}) become a nested class joined by union, which this dialect does not
 * need; they are refused. */
static int32_t parse_bracket(parser *ps) {
    int32_t k = new_class(ps);
    if (k < 0)
        return -1;
    if (eat(ps, "^"))
        ps->p->classes[k].neg = true;
    bool first = true;
    for (;;) {
        if (ps->failed)
            return -1;
        char c = ps->s[ps->i];
        if (!c) {
            fail(ps, "unterminated class");
            return -1;
        }
        if (c == ']' && !first) {
            ps->i++;
            break;
        }
        first = false;
        if (eat(ps, "&&")) {
            int32_t other;
            if (eat(ps, "["))
                other = parse_bracket(ps);
            else {
                fail(ps, "&& must be followed by a bracketed class");
                return -1;
            }
            if (other < 0)
                return -1;
            finish_class(ps->p, other);
            ps->p->classes[k].and_with = other;
            if (!eat(ps, "]")) {
                fail(ps, "expected ] after the && class");
                return -1;
            }
            break;
        }
        if (c == '[') {
            fail(ps, "a nested class is supported only after &&");
            return -1;
        }
        uint32_t lo;
        if (c == '\\') {
            ps->i++;
            escape e = parse_escape(ps, true);
            if (ps->failed)
                return -1;
            if (e.is_set) {
                if (e.neg) {
                    fail(ps, "a negated set inside a class is not supported");
                    return -1;
                }
                ps->p->classes[k].bits |= e.bits;
                continue;
            }
            lo = e.cp;
        } else {
            lo = next_cp(ps);
        }
        uint32_t hi = lo;
        if (ps->s[ps->i] == '-' && ps->s[ps->i + 1] != ']' && ps->s[ps->i + 1]) {
            ps->i++;
            if (ps->s[ps->i] == '\\') {
                ps->i++;
                escape e = parse_escape(ps, true);
                if (e.is_set) {
                    fail(ps, "a range cannot end in a set");
                    return -1;
                }
                hi = e.cp;
            } else {
                hi = next_cp(ps);
            }
            if (hi < lo) {
                fail(ps, "range out of order");
                return -1;
            }
        }
        /* the ranges of class k must be contiguous: a nested class is built only after && (above) */
        add_range_folded(ps, k, lo, hi);
    }
    return k;
}

/* The node that matches one code point of class k (finished first), or -1 when k is. */
static int32_t class_node(parser *ps, int32_t k) {
    if (k < 0)
        return -1;
    finish_class(ps->p, k);
    int32_t n = new_node(ps, N_CLASS, -1, -1);
    if (n >= 0)
        ps->nodes[n].cls = k;
    return n;
}

static int32_t literal(parser *ps, uint32_t cp) {
    int32_t k = new_class(ps);
    if (k >= 0)
        add_range_folded(ps, k, cp, cp);
    return class_node(ps, k);
}

static int32_t parse_atom(parser *ps) {
    char c = ps->s[ps->i];
    if (c == '(') {
        ps->i++;
        bool saved = ps->icase;
        int kind = -1; /* a plain, (?:) or (?i:) group is its body */
        if (eat(ps, "?i:"))
            ps->icase = true;
        else if (eat(ps, "?="))
            kind = N_LOOK;
        else if (eat(ps, "?!"))
            kind = N_NLOOK;
        else if (!eat(ps, "?:") && ps->s[ps->i] == '?') {
            fail(ps, "unsupported group (?%c", ps->s[ps->i + 1]);
            return -1;
        }
        int32_t body = parse_alt(ps);
        ps->icase = saved;
        if (body < 0)
            return -1;
        if (!eat(ps, ")")) {
            fail(ps, "expected )");
            return -1;
        }
        return kind < 0 ? body : new_node(ps, (uint8_t)kind, body, -1);
    }
    if (c == '[') {
        ps->i++;
        return class_node(ps, parse_bracket(ps));
    }
    if (c == '.') {
        ps->i++;
        int32_t k = set_class(ps, 0, true);
        if (k >= 0)
            add_range(ps, k, '\n', '\n');
        return class_node(ps, k);
    }
    if (c == '$') {
        ps->i++;
        return new_node(ps, N_EOL, -1, -1);
    }
    if (c == '\\') {
        ps->i++;
        escape e = parse_escape(ps, false);
        if (ps->failed)
            return -1;
        if (e.assertion)
            return new_node(ps, (uint8_t)e.assertion, -1, -1);
        return e.is_set ? class_node(ps, set_class(ps, e.bits, e.neg)) : literal(ps, e.cp);
    }
    if (c == '*' || c == '+' || c == '?' || c == '{' || c == '^') {
        fail(ps, "unexpected '%c'", c);
        return -1;
    }
    return literal(ps, next_cp(ps));
}

static bool parse_count(parser *ps, int32_t *out) {
    int32_t v = 0;
    if (ps->s[ps->i] < '0' || ps->s[ps->i] > '9')
        return false;
    while (ps->s[ps->i] >= '0' && ps->s[ps->i] <= '9') {
        v = v * 10 + (ps->s[ps->i++] - '0');
        if (v > MAX_REPEAT) {
            fail(ps, "repeat count above %d", MAX_REPEAT);
            return false;
        }
    }
    *out = v;
    return true;
}

static int32_t parse_repeat(parser *ps) {
    int32_t atom = parse_atom(ps);
    for (;;) {
        if (atom < 0 || ps->failed)
            return -1;
        int32_t min, max;
        char c = ps->s[ps->i];
        if (c == '*') { min = 0; max = REPEAT_INF; ps->i++; }
        else if (c == '+') { min = 1; max = REPEAT_INF; ps->i++; }
        else if (c == '?') { min = 0; max = 1; ps->i++; }
        else if (c == '{') {
            ps->i++;
            if (!parse_count(ps, &min)) {
                fail(ps, "expected a count after {");
                return -1;
            }
            max = min;
            if (eat(ps, ",")) {
                max = REPEAT_INF;
                if (ps->s[ps->i] != '}' && !parse_count(ps, &max)) {
                    fail(ps, "expected a count after ,");
                    return -1;
                }
            }
            if (!eat(ps, "}") || (max != REPEAT_INF && max < min)) {
                fail(ps, "bad {n,m}");
                return -1;
            }
        } else {
            return atom;
        }
        int32_t r = new_node(ps, N_REPEAT, atom, -1);
        if (r < 0)
            return -1;
        ps->nodes[r].min = min;
        ps->nodes[r].max = max;
        if (eat(ps, "+"))
            ps->nodes[r].possessive = true;
        else if (ps->s[ps->i] == '?') {
            fail(ps, "lazy quantifiers are not supported");
            return -1;
        }
        atom = r;
    }
}

static int32_t parse_concat(parser *ps) {
    int32_t left = -1;
    while (!ps->failed) {
        char c = ps->s[ps->i];
        if (!c || c == '|' || c == ')')
            break;
        int32_t r = parse_repeat(ps);
        if (r < 0)
            return -1;
        left = left < 0 ? r : new_node(ps, N_CAT, left, r);
    }
    return left < 0 ? new_node(ps, N_EMPTY, -1, -1) : left;
}

static int32_t parse_alt(parser *ps) {
    int32_t left = parse_concat(ps);
    while (left >= 0 && !ps->failed && eat(ps, "|")) {
        int32_t right = parse_concat(ps);
        if (right < 0)
            return -1;
        left = new_node(ps, N_ALT, left, right);
    }
    return ps->failed ? -1 : left;
}

/* Whether node n can match without consuming anything. */
static bool nullable(const parser *ps, int32_t n) {
    const node *d = &ps->nodes[n];
    switch (d->kind) {
    case N_CLASS: return false;
    case N_CAT: return nullable(ps, d->a) && nullable(ps, d->b);
    case N_ALT: return nullable(ps, d->a) || nullable(ps, d->b);
    case N_REPEAT: return d->min == 0 || nullable(ps, d->a);
    default: return true; /* assertions and empty */
    }
}

/* A loop whose body can match nothing could spin without advancing: refuse it. */
static bool check_loops(parser *ps, int32_t n) {
    const node *d = &ps->nodes[n];
    if (d->kind == N_REPEAT && d->max == REPEAT_INF && nullable(ps, d->a)) {
        fail(ps, "a repeated group can match nothing");
        return false;
    }
    if (d->a >= 0 && !check_loops(ps, d->a))
        return false;
    return d->b < 0 || d->kind == N_REPEAT || check_loops(ps, d->b);
}

static int32_t emit(parser *ps, uint8_t op, int32_t x, int32_t y) {
    rx_prog *p = ps->p;
    if (p->n_code >= MAX_CODE) {
        fail(ps, "pattern compiles to too many instructions");
        return -1;
    }
    if (!grow((void **)&p->code, &p->cap_code, p->n_code + 1, sizeof *p->code)) {
        fail(ps, "out of memory");
        return -1;
    }
    p->code[p->n_code] = (rx_inst){ op, x, y };
    return (int32_t)p->n_code++;
}

static void gen(parser *ps, int32_t n);

/* A sub-program run as a nested match: op body... MATCH, then the code after it. */
static void gen_nested(parser *ps, uint8_t op, int32_t body_node) {
    int32_t at = emit(ps, op, 0, 0);
    if (at < 0)
        return;
    ps->p->code[at].x = at + 1;
    gen(ps, body_node);
    emit(ps, OP_MATCH, 0, 0);
    if (!ps->failed)
        ps->p->code[at].y = (int32_t)ps->p->n_code;
}

static void gen_repeat(parser *ps, const node *d) {
    for (int32_t k = 0; k < d->min && !ps->failed; k++)
        gen(ps, d->a);
    if (d->max == REPEAT_INF) {
        int32_t split = emit(ps, OP_SPLIT, 0, 0);
        gen(ps, d->a);
        emit(ps, OP_JMP, split, 0);
        if (!ps->failed) {
            ps->p->code[split].x = split + 1;
            ps->p->code[split].y = (int32_t)ps->p->n_code;
        }
        return;
    }
    /* (x(x(x)?)?)? for the optional copies: every SPLIT skips to the common end */
    int32_t splits[MAX_REPEAT];
    int32_t n_opt = d->max - d->min, n_done = 0;
    while (n_done < n_opt && !ps->failed) {
        splits[n_done++] = emit(ps, OP_SPLIT, 0, 0);
        gen(ps, d->a);
    }
    if (ps->failed)
        return;
    for (int32_t k = 0; k < n_done; k++) {
        ps->p->code[splits[k]].x = splits[k] + 1;
        ps->p->code[splits[k]].y = (int32_t)ps->p->n_code;
    }
}

static void gen(parser *ps, int32_t n) {
    if (ps->failed)
        return;
    const node *d = &ps->nodes[n];
    switch (d->kind) {
    case N_CLASS: emit(ps, OP_CLASS, d->cls, 0); break;
    case N_CAT: gen(ps, d->a); gen(ps, d->b); break;
    case N_ALT: {
        int32_t split = emit(ps, OP_SPLIT, 0, 0);
        gen(ps, d->a);
        int32_t jmp = emit(ps, OP_JMP, 0, 0);
        int32_t second = (int32_t)ps->p->n_code;
        gen(ps, d->b);
        if (!ps->failed) {
            ps->p->code[split].x = split + 1;
            ps->p->code[split].y = second;
            ps->p->code[jmp].x = (int32_t)ps->p->n_code;
        }
        break;
    }
    case N_REPEAT:
        if (d->possessive) {
            /* the whole repeat as an atomic group: what it takes it never gives back */
            node plain = *d;
            plain.possessive = false;
            int32_t at = emit(ps, OP_ATOMIC, 0, 0);
            if (at < 0)
                return;
            ps->p->code[at].x = at + 1;
            gen_repeat(ps, &plain);
            emit(ps, OP_MATCH, 0, 0);
            if (!ps->failed)
                ps->p->code[at].y = (int32_t)ps->p->n_code;
        } else {
            gen_repeat(ps, d);
        }
        break;
    case N_LOOK: gen_nested(ps, OP_LOOK, d->a); break;
    case N_NLOOK: gen_nested(ps, OP_NLOOK, d->a); break;
    case N_EOL: emit(ps, OP_EOL, 0, 0); break;
    case N_WORDB: emit(ps, OP_WORDB, 0, 0); break;
    case N_NWORDB: emit(ps, OP_NWORDB, 0, 0); break;
    default: break; /* N_EMPTY */
    }
}

/* Adds to f what the thread from pc can take first (seen: instructions already followed, as JMP
 * and SPLIT can reach one twice). */
static void first_of(const rx_prog *p, int32_t pc, rx_first *f, uint8_t *seen) {
    while (!f->any && !seen[pc]) {
        seen[pc] = 1;
        const rx_inst *in = &p->code[pc];
        switch (in->op) {
        case OP_CLASS:
            f->ascii[0] |= p->classes[in->x].ascii[0];
            f->ascii[1] |= p->classes[in->x].ascii[1];
            return;
        case OP_SPLIT:
            first_of(p, in->x, f, seen);
            pc = in->y;
            break;
        case OP_JMP: pc = in->x; break;
        default: f->any = true; return; /* MATCH or an assertion */
        }
    }
}

static bool first_sets(rx_prog *p) {
    p->first_x = calloc(p->n_code, sizeof *p->first_x);
    p->first_y = calloc(p->n_code, sizeof *p->first_y);
    uint8_t *seen = malloc(p->n_code);
    if (!p->first_x || !p->first_y || !seen) {
        free(seen);
        return false;
    }
    for (size_t pc = 0; pc < p->n_code; pc++) {
        if (p->code[pc].op != OP_SPLIT)
            continue;
        memset(seen, 0, p->n_code);
        first_of(p, p->code[pc].x, &p->first_x[pc], seen);
        memset(seen, 0, p->n_code);
        first_of(p, p->code[pc].y, &p->first_y[pc], seen);
    }
    free(seen);
    return true;
}

rx_prog *rx_compile(const char *pattern, char *err, size_t err_len) {
    parser *ps = calloc(1, sizeof *ps);
    rx_prog *p = calloc(1, sizeof *p);
    if (!ps || !p) {
        free(ps);
        free(p);
        if (err && err_len)
            snprintf(err, err_len, "out of memory");
        return NULL;
    }
    ps->s = pattern;
    ps->p = p;
    ps->err = err;
    ps->err_len = err_len;
    int32_t root = parse_alt(ps);
    if (root >= 0 && !ps->failed && ps->s[ps->i] == ')')
        fail(ps, "unmatched )");
    if (root >= 0 && !ps->failed && nullable(ps, root))
        fail(ps, "the pattern can match nothing");
    if (root >= 0 && !ps->failed && check_loops(ps, root)) {
        gen(ps, root);
        emit(ps, OP_MATCH, 0, 0);
    }
    if (!ps->failed && root >= 0 && !first_sets(p))
        fail(ps, "out of memory");
    bool ok = !ps->failed && root >= 0;
    free(ps);
    if (!ok) {
        rx_free(p);
        return NULL;
    }
    return p;
}

void rx_free(rx_prog *p) {
    if (!p)
        return;
    free(p->code);
    free(p->classes);
    free(p->ranges);
    free(p->first_x);
    free(p->first_y);
    free(p);
}

void rx_scratch_free(rx_scratch *s) {
    free(s->frames);
    s->frames = NULL;
    s->len = s->cap = 0;
}

size_t rx_decode(const char *text, size_t n, uint32_t *cp, uint16_t *bits, size_t *off) {
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        int k = utf8_decode((const unsigned char *)text + i, n - i, &c);
        if (off)
            off[m] = i;
        if (k < 0) {
            c = RX_INVALID;
            k = 1;
        }
        cp[m] = c;
        bits[m++] = c == RX_INVALID ? 0 : uni_bits(c);
        i += (size_t)k;
    }
    if (off)
        off[m] = n;
    return m;
}

bool rx_memo_init(rx_memo *m, const rx_prog *p) {
    m->n = p->n_code;
    m->gen = 1;
    m->dead = calloc(m->n ? m->n : 1, sizeof *m->dead);
    return m->dead != NULL;
}

void rx_memo_reset(rx_memo *m) {
    if (++m->gen == 0) { /* wrapped: old entries could look current again */
        memset(m->dead, 0, m->n * sizeof *m->dead);
        m->gen = 1;
    }
}

void rx_memo_free(rx_memo *m) {
    free(m->dead);
    m->dead = NULL;
    m->n = 0;
}

static bool is_dead(const rx_memo *m, int32_t pc, size_t pos) {
    const struct rx_dead *d = &m->dead[pc];
    return d->gen == m->gen && pos >= d->lo && pos <= d->hi;
}

static void mark_dead(rx_memo *m, int32_t pc, size_t pos) {
    struct rx_dead *d = &m->dead[pc];
    if (d->gen == m->gen && pos + 1 >= d->lo && pos <= d->hi + 1) { /* touches the interval: extend it */
        d->lo = pos < d->lo ? pos : d->lo;
        d->hi = pos > d->hi ? pos : d->hi;
    } else { /* a new interval; forgetting the old one only costs speed */
        *d = (struct rx_dead){ m->gen, pos, pos };
    }
}

static bool can_start(const rx_first *f, bool has_next, uint32_t c) {
    return f->any || (has_next && ((f->ascii[c >> 6] >> (c & 63)) & 1));
}

static bool push(rx_scratch *s, int32_t pc, size_t pos) {
    if (s->len == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        struct rx_frame *f = realloc(s->frames, cap * sizeof *f);
        if (!f)
            return false;
        s->frames = f;
        s->cap = cap;
    }
    s->frames[s->len++] = (struct rx_frame){ pc, pos };
    return true;
}

static bool is_word(const rx_text *t, size_t i) {
    return t->cp[i] != RX_INVALID && (t->bits[i] & UNI_W) != 0;
}

static size_t run(const rx_prog *p, const rx_text *t, size_t start, size_t end, int32_t pc, size_t pos,
                  rx_scratch *s, rx_memo *m) {
    size_t base = s->len;
    for (;;) {
        s->steps++;
        const rx_inst *in = &p->code[pc];
        bool ok = true;
        switch (in->op) {
        case OP_CLASS:
            ok = pos < end && class_admits(p, &p->classes[in->x], t->cp[pos], t->bits[pos]);
            if (ok) {
                pos++;
                pc++;
            }
            break;
        case OP_SPLIT: {
            if (m && is_dead(m, pc, pos)) {
                ok = false;
                break;
            }
            /* a branch that cannot start with the next (ASCII) code point, or at the end, is skipped */
            uint32_t c = pos < end ? t->cp[pos] : 0;
            bool known = pos == end || c < 128;
            bool x_can = !known || can_start(&p->first_x[pc], pos < end, c);
            bool y_can = !known || can_start(&p->first_y[pc], pos < end, c);
            if (!x_can && !y_can) {
                if (m)
                    mark_dead(m, pc, pos);
                ok = false;
                break;
            }
            /* the mark that makes this branch point dead once what follows it has failed */
            if ((m && !push(s, -1 - pc, pos)) || (x_can && y_can && !push(s, in->y, pos))) {
                s->oom = true;
                s->len = base;
                return RX_NO_MATCH;
            }
            pc = x_can ? in->x : in->y;
            break;
        }
        case OP_JMP: pc = in->x; break;
        case OP_MATCH: s->len = base; return pos;
        case OP_LOOK: case OP_NLOOK: case OP_ATOMIC: {
            size_t r = run(p, t, start, end, in->x, pos, s, m);
            if (s->oom)
                return RX_NO_MATCH;
            ok = in->op == OP_NLOOK ? r == RX_NO_MATCH : r != RX_NO_MATCH;
            if (ok) {
                if (in->op == OP_ATOMIC)
                    pos = r;
                pc = in->y;
            }
            break;
        }
        case OP_EOL:
            ok = pos == end || t->cp[pos] == '\n';
            pc++;
            break;
        default: { /* word boundaries */
            bool before = pos > start && is_word(t, pos - 1), after = pos < end && is_word(t, pos);
            ok = (before != after) == (in->op == OP_WORDB);
            pc++;
            break;
        }
        }
        if (ok)
            continue;
        for (;;) { /* backtrack: the next alternative, marking the branch points it exhausts */
            if (s->len == base)
                return RX_NO_MATCH;
            struct rx_frame f = s->frames[--s->len];
            if (f.pc >= 0) {
                pc = f.pc;
                pos = f.pos;
                break;
            }
            mark_dead(m, -1 - f.pc, f.pos);
        }
    }
}

size_t rx_match_at(const rx_prog *p, const rx_text *t, size_t start, size_t end, size_t at, rx_scratch *s,
                   rx_memo *m) {
    s->oom = false;
    return run(p, t, start, end, 0, at, s, m);
}
