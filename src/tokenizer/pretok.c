/* pretok.c: the GPT-2, SmolLM, Llama-3 and Qwen2 splits, as matchers over code points.
 *
 * Each matcher returns the end of the match that the first successful alternative of the pattern
 * would produce at position i; the alternatives are tried in the pattern's order. The two whitespace
 * rules carry the regex semantics that matter: `\s+(?!\S)` gives back the last space of a run that
 * is followed by a non-space (so " word" keeps its space), and `\s*[\r\n]+` ends after the last
 * line break of a whitespace run.
 */
#include "tokenizer/pretok.h"

#include <stdlib.h>

#include "core/utf8.h"
#include "tokenizer/unicode.h"

/* A code point that stands for an ill-formed byte: matches no class. */
#define CP_INVALID 0xFFFFFFFFu

typedef struct cps {
    const uint32_t *cp;
    size_t n;
} cps;

static bool is_l(uint32_t c) { return c != CP_INVALID && uni_is_letter(c); }
static bool is_n(uint32_t c) { return c != CP_INVALID && uni_is_number(c); }
static bool is_s(uint32_t c) { return c != CP_INVALID && uni_is_space(c); }
static bool is_other(uint32_t c) { return !is_s(c) && !is_l(c) && !is_n(c); } /* [^\s\p{L}\p{N}] */
static bool is_newline(uint32_t c) { return c == '\r' || c == '\n'; }

static uint32_t lower_ascii(uint32_t c) {
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 's 't 're 've 'm 'll 'd; returns the length matched at i or 0. */
static size_t match_contraction(const cps *t, size_t i, bool ignore_case) {
    if (t->cp[i] != '\'' || i + 1 >= t->n)
        return 0;
    uint32_t a = t->cp[i + 1], b = i + 2 < t->n ? t->cp[i + 2] : 0;
    if (ignore_case) {
        a = lower_ascii(a);
        b = lower_ascii(b);
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    return 0;
}

static size_t run_of(const cps *t, size_t i, bool (*cls)(uint32_t)) {
    while (i < t->n && cls(t->cp[i]))
        i++;
    return i;
}

/* \s+(?!\S) then \s+, at a whitespace code point i. */
static size_t match_spaces(const cps *t, size_t i) {
    size_t j = run_of(t, i, is_s);
    if (j < t->n && j - i >= 2)
        return j - 1; /* leave the last space to the word that follows */
    return j;
}

static size_t match_gpt2(const cps *t, size_t i) {
    size_t k = match_contraction(t, i, false);
    if (k)
        return i + k;
    size_t s = t->cp[i] == ' ' && i + 1 < t->n ? i + 1 : i; /* the optional leading space */
    if (is_l(t->cp[s]))
        return run_of(t, s, is_l);
    if (is_n(t->cp[s]))
        return run_of(t, s, is_n);
    if (is_other(t->cp[s]))
        return run_of(t, s, is_other);
    /* here cp[i] is whitespace (a lone ' ' at the end also lands here) */
    return match_spaces(t, i);
}

static size_t match_llama3(const cps *t, size_t i, size_t max_digits) {
    size_t k = match_contraction(t, i, true);
    if (k)
        return i + k;
    uint32_t c = t->cp[i];
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (is_l(c))
        return run_of(t, i, is_l);
    if (!is_newline(c) && !is_n(c) && i + 1 < t->n && is_l(t->cp[i + 1]))
        return run_of(t, i + 1, is_l);
    /* \p{N}{1,max} */
    if (is_n(c)) {
        size_t j = i;
        while (j < t->n && j - i < max_digits && is_n(t->cp[j]))
            j++;
        return j;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    size_t s = c == ' ' && i + 1 < t->n && is_other(t->cp[i + 1]) ? i + 1 : i;
    if (is_other(t->cp[s])) {
        size_t j = run_of(t, s, is_other);
        while (j < t->n && is_newline(t->cp[j]))
            j++;
        return j;
    }
    /* \s*[\r\n]+ : through the last line break of the whitespace run */
    size_t end = run_of(t, i, is_s);
    for (size_t j = end; j > i; j--)
        if (is_newline(t->cp[j - 1]))
            return j;
    return match_spaces(t, i);
}

typedef struct splitter {
    tok_pre pre;
    const char *text;
    const size_t *off; /* byte offset of each code point, and of the end */
    pretok_emit emit;
    void *ctx;
} splitter;

/* Applies the pattern to code points [from, to), treating `to` as the end of the text. */
static bool split_range(const splitter *sp, const uint32_t *cp, size_t from, size_t to) {
    cps t = { cp + from, to - from };
    size_t i = 0;
    while (i < t.n) {
        size_t j;
        switch (sp->pre) {
        case TOK_PRE_LLAMA3: j = match_llama3(&t, i, 3); break;
        case TOK_PRE_QWEN2: j = match_llama3(&t, i, 1); break;
        default: j = match_gpt2(&t, i); break;
        }
        if (j <= i)
            j = i + 1; /* cannot happen: every code point matches some alternative */
        size_t a = sp->off[from + i], b = sp->off[from + j];
        if (!sp->emit(sp->text + a, b - a, sp->ctx))
            return false;
        i = j;
    }
    return true;
}

bool pretok_split(tok_pre pre, const char *text, size_t n, pretok_emit emit, void *ctx) {
    if (n == 0)
        return true;
    uint32_t *cp = malloc(n * sizeof *cp);
    size_t *off = malloc((n + 1) * sizeof *off);
    if (!cp || !off) {
        free(cp);
        free(off);
        return false;
    }
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        int k = utf8_decode((const unsigned char *)text + i, n - i, &c);
        off[m] = i;
        if (k < 0) {
            c = CP_INVALID;
            k = 1; /* each ill-formed byte on its own keeps the bytes exact for byte-level BPE */
        }
        cp[m++] = c;
        i += (size_t)k;
    }
    off[m] = n;
    splitter sp = { pre, text, off, emit, ctx };
    bool ok = true;
    if (pre == TOK_PRE_SMOLLM) {
        /* Digits(individual_digits) first: every digit is a piece, the text between is split alone */
        sp.pre = TOK_PRE_GPT2;
        size_t start = 0;
        for (size_t i = 0; i < m && ok; i++) {
            if (!is_n(cp[i]))
                continue;
            ok = split_range(&sp, cp, start, i) && emit(text + off[i], off[i + 1] - off[i], ctx);
            start = i + 1;
        }
        if (ok)
            ok = split_range(&sp, cp, start, m);
    } else {
        ok = split_range(&sp, cp, 0, m);
    }
    free(cp);
    free(off);
    return ok;
}
