/* jinja_lex.c: splits a template into tokens exactly as jinja2's lexer does under transformers'
 * settings: newlines normalized to "\n" and one trailing newline dropped; a block or comment tag
 * eats the newline after it (trim_blocks) and the spaces before it on its own line (lstrip_blocks);
 * '-' strips all whitespace on its side, '+' keeps it; {% raw %} passes text through untouched.
 * Inside tags a closing "}}" or "%}" only counts with the brackets balanced, as in jinja2. */
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "template/jinja_internal.h"

#define MAX_BRACKETS 256

typedef struct lexer {
    jarena *arena;
    const char *s; /* normalized source */
    size_t n, pos;
    int line;     /* at pos */
    jtok *toks;
    size_t n_toks, cap_toks;
    brasa_error *err;
} lexer;

static brasa_status lex_fail(lexer *lx, int line, const char *msg) {
    return err_set(lx->err, BRASA_ERR_FORMAT, "line %d: %s", line, msg);
}

static brasa_status oom(lexer *lx) {
    return err_set(lx->err, BRASA_ERR_NO_MEMORY, "line %d: out of memory", lx->line);
}

static jtok *push(lexer *lx, jtok_kind kind, int line) {
    if (lx->n_toks == lx->cap_toks) {
        size_t cap = lx->cap_toks ? lx->cap_toks * 2 : 256;
        if (cap > SIZE_MAX / sizeof(jtok))
            return NULL;
        jtok *t = realloc(lx->toks, cap * sizeof *t);
        if (!t)
            return NULL;
        lx->toks = t;
        lx->cap_toks = cap;
    }
    jtok *t = &lx->toks[lx->n_toks++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->line = line;
    return t;
}

/* Python's str.isspace for ASCII and the common Unicode spaces (what \s and str.strip see). */
static size_t space_len(const char *s, size_t n) {
    unsigned char c = (unsigned char)s[0];
    if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f))
        return 1;
    if (c < 0x80)
        return 0;
    uint32_t cp = 0;
    int k = utf8_decode((const unsigned char *)s, n, &cp);
    if (k <= 0)
        return 0;
    bool sp = cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
              cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
    return sp ? (size_t)k : 0;
}

/* Length of s[0..n) without its trailing whitespace (Python's rstrip). */
static size_t rstrip_len(const char *s, size_t n) {
    size_t keep = 0, i = 0;
    while (i < n) {
        size_t k = space_len(s + i, n - i);
        if (k) {
            i += k;
        } else {
            i++;
            while (i < n && ((unsigned char)s[i] & 0xc0) == 0x80)
                i++;
            keep = i;
        }
    }
    return keep;
}

static size_t skip_space(const char *s, size_t n, size_t i) {
    size_t k;
    while (i < n && (k = space_len(s + i, n - i)) > 0)
        i += k;
    return i;
}

static int count_lines(const char *s, size_t n) {
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += s[i] == '\n';
    return lines;
}

static void advance(lexer *lx, size_t to) {
    lx->line += count_lines(lx->s + lx->pos, to - lx->pos);
    lx->pos = to;
}

/* Emits template text, after the strip rules for the tag that follows it. tag_sign is '-', '+' or
 * 0; lstrip applies to block and comment tags, not to {{. */
static brasa_status emit_text(lexer *lx, size_t start, size_t end, char tag_sign, bool lstrip_ok, bool line_starting) {
    const char *text = lx->s + start;
    size_t len = end - start;
    if (tag_sign == '-') {
        len = rstrip_len(text, len);
    } else if (tag_sign != '+' && lstrip_ok) {
        size_t l_pos = 0;
        for (size_t i = len; i > 0; i--)
            if (text[i - 1] == '\n') {
                l_pos = i;
                break;
            }
        if ((l_pos > 0 || line_starting) && l_pos < len && skip_space(text, len, l_pos) == len)
            len = l_pos;
    }
    if (len == 0)
        return BRASA_OK;
    jtok *t = push(lx, JT_DATA, lx->line);
    if (!t)
        return oom(lx);
    t->text = text;
    t->len = len;
    return BRASA_OK;
}

static bool starts(const lexer *lx, size_t i, const char *lit) {
    size_t k = strlen(lit);
    return i <= lx->n && lx->n - i >= k && memcmp(lx->s + i, lit, k) == 0;
}

/* After a closing tag at i ("+%}", "-%}", "%}" and the like, close naming the two-character end):
 * the end of what it consumes. Returns 0 when no end is at i. trim: trim_blocks applies. */
static size_t match_end(const lexer *lx, size_t i, const char *close, bool trim) {
    if (lx->s[i] == '+' && starts(lx, i + 1, close))
        return i + 3;
    if (lx->s[i] == '-' && starts(lx, i + 1, close))
        return skip_space(lx->s, lx->n, i + 3);
    if (starts(lx, i, close)) {
        i += 2;
        if (trim && i < lx->n && lx->s[i] == '\n')
            i++;
        return i;
    }
    return 0;
}

static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

/* If "{%(-|+)?\s*raw\s*(-%}\s*|%})" starts at i, its end; else 0. */
static size_t match_raw_begin(const lexer *lx, size_t i) {
    if (!starts(lx, i, "{%"))
        return 0;
    i += 2;
    if (i < lx->n && (lx->s[i] == '-' || lx->s[i] == '+'))
        i++;
    i = skip_space(lx->s, lx->n, i);
    if (!starts(lx, i, "raw") || (i + 3 < lx->n && is_name_char(lx->s[i + 3])))
        return 0;
    i = skip_space(lx->s, lx->n, i + 3);
    if (starts(lx, i, "-%}"))
        return skip_space(lx->s, lx->n, i + 3);
    if (starts(lx, i, "%}"))
        return i + 2;
    return 0;
}

/* Raw content up to its "{% endraw %}"; returns where the endraw tag ends and sets *line_starting. */
static brasa_status lex_raw(lexer *lx, bool *line_starting) {
    for (size_t i = lx->pos; i + 1 < lx->n; i++) {
        if (lx->s[i] != '{' || lx->s[i + 1] != '%')
            continue;
        size_t j = i + 2;
        char sign = 0;
        if (j < lx->n && (lx->s[j] == '-' || lx->s[j] == '+'))
            sign = lx->s[j++];
        j = skip_space(lx->s, lx->n, j);
        if (!starts(lx, j, "endraw"))
            continue;
        j = skip_space(lx->s, lx->n, j + 6);
        size_t end = j < lx->n ? match_end(lx, j, "%}", true) : 0;
        if (!end)
            continue;
        brasa_status st = emit_text(lx, lx->pos, i, sign, true, *line_starting);
        if (st != BRASA_OK)
            return st;
        *line_starting = lx->s[end - 1] == '\n';
        advance(lx, end);
        return BRASA_OK;
    }
    return lex_fail(lx, lx->line, "missing end of raw directive");
}

/* Decodes a string literal's body as Python's unicode-escape codec does. */
static brasa_status decode_string(lexer *lx, const char *p, size_t n, int line, jtok *t) {
    char *out = jarena_alloc(lx->arena, n + 1);
    if (!out)
        return oom(lx);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (p[i] != '\\' || i + 1 >= n) {
            out[o++] = p[i++];
            continue;
        }
        char c = p[i + 1];
        i += 2;
        uint32_t cp = 0;
        int hex_digits = 0;
        switch (c) {
        case '\n': continue;
        case '\\': out[o++] = '\\'; continue;
        case '\'': out[o++] = '\''; continue;
        case '"': out[o++] = '"'; continue;
        case 'a': out[o++] = '\a'; continue;
        case 'b': out[o++] = '\b'; continue;
        case 'f': out[o++] = '\f'; continue;
        case 'n': out[o++] = '\n'; continue;
        case 'r': out[o++] = '\r'; continue;
        case 't': out[o++] = '\t'; continue;
        case 'v': out[o++] = '\v'; continue;
        case 'x': hex_digits = 2; break;
        case 'u': hex_digits = 4; break;
        case 'U': hex_digits = 8; break;
        default:
            if (c >= '0' && c <= '7') {
                cp = (uint32_t)(c - '0');
                for (int k = 0; k < 2 && i < n && p[i] >= '0' && p[i] <= '7'; k++)
                    cp = cp * 8 + (uint32_t)(p[i++] - '0');
                break;
            }
            if (c == 'N')
                return lex_fail(lx, line, "\\N{...} escapes are not supported");
            out[o++] = '\\'; /* Python keeps an unknown escape as written */
            i--;
            continue;
        }
        for (int k = 0; k < hex_digits; k++, i++) {
            char h = i < n ? p[i] : 0;
            int v = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
            if (v < 0)
                return lex_fail(lx, line, "truncated \\xXX, \\uXXXX or \\UXXXXXXXX escape");
            cp = cp * 16 + (uint32_t)v;
        }
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return lex_fail(lx, line, "escape out of the Unicode range");
        o += (size_t)utf8_encode(cp, out + o); /* never longer than the escape it replaces */
    }
    out[o] = '\0';
    t->text = out;
    t->len = o;
    return BRASA_OK;
}

/* A number at i: jinja2 tries its float pattern before its integer pattern. Returns the end. */
static brasa_status lex_number(lexer *lx, size_t i, size_t *end) {
    const char *s = lx->s;
    size_t n = lx->n, j = i;
    int line = lx->line;
    char digits[128];
    size_t nd = 0;
    /* prefixed integers */
    if (s[i] == '0' && i + 1 < n && strchr("bBoOxX", s[i + 1]) && s[i + 1]) {
        int base = (s[i + 1] | 0x20) == 'b' ? 2 : (s[i + 1] | 0x20) == 'o' ? 8 : 16;
        j = i + 2;
        uint64_t v = 0;
        size_t count = 0;
        while (j < n) {
            char c = s[j];
            if (c == '_' && j + 1 < n) {
                j++;
                c = s[j];
            }
            int d = is_digit(c) ? c - '0' : ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') ? (c | 0x20) - 'a' + 10 : 99;
            if (d >= base)
                break;
            if (v > (uint64_t)INT64_MAX / (uint64_t)base)
                return lex_fail(lx, line, "integer literal too large");
            v = v * (uint64_t)base + (uint64_t)d;
            count++;
            j++;
        }
        if (count > 0) {
            if (v > (uint64_t)INT64_MAX)
                return lex_fail(lx, line, "integer literal too large");
            jtok *t = push(lx, JT_INT, line);
            if (!t)
                return oom(lx);
            t->ival = (int64_t)v;
            *end = j;
            return BRASA_OK;
        }
        j = i;
    }
    bool is_float = false;
    while (j < n && (is_digit(s[j]) || (s[j] == '_' && j + 1 < n && is_digit(s[j + 1]) && j > i))) {
        if (s[j] != '_' && nd < sizeof digits - 8)
            digits[nd++] = s[j];
        j++;
    }
    if (j + 1 < n && s[j] == '.' && is_digit(s[j + 1])) {
        is_float = true;
        digits[nd++] = '.';
        j++;
        while (j < n && (is_digit(s[j]) || (s[j] == '_' && j + 1 < n && is_digit(s[j + 1])))) {
            if (s[j] != '_' && nd < sizeof digits - 8)
                digits[nd++] = s[j];
            j++;
        }
    }
    if (j < n && (s[j] | 0x20) == 'e') {
        size_t k = j + 1;
        if (k < n && (s[k] == '+' || s[k] == '-'))
            k++;
        if (k < n && is_digit(s[k])) {
            is_float = true;
            digits[nd++] = 'e';
            if (s[j + 1] == '-')
                digits[nd++] = '-';
            while (k < n && (is_digit(s[k]) || (s[k] == '_' && k + 1 < n && is_digit(s[k + 1])))) {
                if (s[k] != '_' && nd < sizeof digits - 2)
                    digits[nd++] = s[k];
                k++;
            }
            j = k;
        }
    }
    digits[nd] = '\0';
    jtok *t = push(lx, is_float ? JT_FLOAT : JT_INT, line);
    if (!t)
        return oom(lx);
    if (is_float) {
        t->fval = strtod(digits, NULL);
    } else {
        if (nd > 1 && digits[0] == '0') { /* "0_0" is zero; "01" is no integer in jinja2 */
            for (size_t k = 0; k < nd; k++)
                if (digits[k] != '0')
                    return lex_fail(lx, line, "leading zeros in an integer literal");
        }
        uint64_t v = 0;
        for (size_t k = 0; k < nd; k++) {
            if (v > ((uint64_t)INT64_MAX - (uint64_t)(digits[k] - '0')) / 10)
                return lex_fail(lx, line, "integer literal too large");
            v = v * 10 + (uint64_t)(digits[k] - '0');
        }
        t->ival = (int64_t)v;
    }
    *end = j;
    return BRASA_OK;
}

static const struct {
    const char *text;
    jop op;
} operators[] = {
    { "//", OP_FLOORDIV }, { "**", OP_POW }, { "==", OP_EQ }, { "!=", OP_NE }, { ">=", OP_GE }, { "<=", OP_LE },
    { "+", OP_ADD }, { "-", OP_SUB }, { "/", OP_DIV }, { "*", OP_MUL }, { "%", OP_MOD }, { "~", OP_TILDE },
    { "[", OP_LBRACKET }, { "]", OP_RBRACKET }, { "(", OP_LPAREN }, { ")", OP_RPAREN }, { "{", OP_LBRACE },
    { "}", OP_RBRACE }, { ">", OP_GT }, { "<", OP_LT }, { "=", OP_ASSIGN }, { ".", OP_DOT }, { ":", OP_COLON },
    { "|", OP_PIPE }, { ",", OP_COMMA }, { ";", OP_SEMICOLON },
};

/* The inside of a {{ }} or {% %} tag, up to and including its end. */
static brasa_status lex_tag(lexer *lx, bool is_block, bool *line_starting) {
    char brackets[MAX_BRACKETS];
    size_t depth = 0;
    int open_line = lx->line;
    while (lx->pos < lx->n) {
        size_t i = lx->pos;
        if (depth == 0) {
            size_t end = is_block ? match_end(lx, i, "%}", true) : 0;
            if (!is_block) {
                if (starts(lx, i, "-}}"))
                    end = skip_space(lx->s, lx->n, i + 3);
                else if (starts(lx, i, "}}"))
                    end = i + 2;
            }
            if (end) {
                if (!push(lx, is_block ? JT_BLOCK_END : JT_VAR_END, lx->line))
                    return oom(lx);
                *line_starting = lx->s[end - 1] == '\n';
                advance(lx, end);
                return BRASA_OK;
            }
        }
        char c = lx->s[i];
        size_t sp = space_len(lx->s + i, lx->n - i);
        if (sp) {
            advance(lx, i + sp);
            continue;
        }
        size_t end = 0;
        if (is_digit(c)) {
            brasa_status st = lex_number(lx, i, &end);
            if (st != BRASA_OK)
                return st;
        } else if (is_name_start(c)) {
            end = i;
            while (end < lx->n && is_name_char(lx->s[end]))
                end++;
            jtok *t = push(lx, JT_NAME, lx->line);
            if (!t)
                return oom(lx);
            t->text = lx->s + i;
            t->len = end - i;
        } else if (c == '\'' || c == '"') {
            end = i + 1;
            while (end < lx->n && lx->s[end] != c)
                end += lx->s[end] == '\\' ? 2 : 1;
            if (end >= lx->n)
                return lex_fail(lx, lx->line, "unexpected end of string literal");
            jtok *t = push(lx, JT_STRING, lx->line);
            if (!t)
                return oom(lx);
            brasa_status st = decode_string(lx, lx->s + i + 1, end - i - 1, lx->line, t);
            if (st != BRASA_OK)
                return st;
            end++;
        } else {
            size_t k = 0;
            for (; k < sizeof operators / sizeof operators[0]; k++)
                if (starts(lx, i, operators[k].text))
                    break;
            if (k == sizeof operators / sizeof operators[0])
                return err_set(lx->err, BRASA_ERR_FORMAT, "line %d: unexpected char '%c'", lx->line, c);
            jop op = operators[k].op;
            if (op == OP_LBRACE || op == OP_LPAREN || op == OP_LBRACKET) {
                if (depth == MAX_BRACKETS)
                    return lex_fail(lx, lx->line, "brackets nested too deeply");
                brackets[depth++] = op == OP_LBRACE ? '}' : op == OP_LPAREN ? ')' : ']';
            } else if (op == OP_RBRACE || op == OP_RPAREN || op == OP_RBRACKET) {
                if (depth == 0)
                    return err_set(lx->err, BRASA_ERR_FORMAT, "line %d: unexpected '%c'", lx->line, c);
                if (brackets[--depth] != c)
                    return err_set(lx->err, BRASA_ERR_FORMAT, "line %d: unexpected '%c', expected '%c'", lx->line, c,
                                   brackets[depth]);
            }
            jtok *t = push(lx, JT_OP, lx->line);
            if (!t)
                return oom(lx);
            t->op = op;
            end = i + strlen(operators[k].text);
        }
        advance(lx, end);
    }
    return lex_fail(lx, open_line, is_block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'");
}

/* jinja2 splits on \r\n, \r and \n, joins with \n and drops one trailing empty line. */
static char *normalize(const char *src, size_t len, size_t *out_len) {
    char *s = malloc(len + 1);
    if (!s)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[o++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n')
                i++;
        } else {
            s[o++] = src[i];
        }
    }
    if (o > 0 && s[o - 1] == '\n')
        o--;
    s[o] = '\0';
    *out_len = o;
    return s;
}

brasa_status jinja_lex(jarena *arena, const char *src, size_t len, jtok **tokens, size_t *n_tokens, brasa_error *err) {
    lexer lx = { .arena = arena, .line = 1, .err = err };
    size_t n;
    char *norm = normalize(src, len, &n);
    if (!norm)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    /* the tokens point into the source: keep it in the arena */
    char *s = jarena_alloc(arena, n + 1);
    if (!s) {
        free(norm);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    memcpy(s, norm, n + 1);
    free(norm);
    lx.s = s;
    lx.n = n;
    bool line_starting = true;
    brasa_status st = BRASA_OK;
    while (lx.pos < n && st == BRASA_OK) {
        /* the next tag: the earliest "{{", "{%" or "{#" */
        size_t i = lx.pos;
        while (i + 1 < n && !(s[i] == '{' && (s[i + 1] == '{' || s[i + 1] == '%' || s[i + 1] == '#')))
            i++;
        if (i + 1 >= n) {
            st = emit_text(&lx, lx.pos, n, 0, false, line_starting);
            advance(&lx, n);
            break;
        }
        char kind = s[i + 1];
        char sign = (i + 2 < n && (s[i + 2] == '-' || s[i + 2] == '+')) ? s[i + 2] : 0;
        size_t raw_end = kind == '%' ? match_raw_begin(&lx, i) : 0;
        st = emit_text(&lx, lx.pos, i, sign, kind != '{', line_starting);
        if (st != BRASA_OK)
            break;
        advance(&lx, i);
        if (raw_end) {
            advance(&lx, raw_end);
            line_starting = s[raw_end - 1] == '\n';
            st = lex_raw(&lx, &line_starting);
            continue;
        }
        size_t body = i + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            size_t j = body, end = 0;
            for (; j < n; j++)
                if ((end = match_end(&lx, j, "#}", true)) != 0)
                    break;
            if (!end) {
                st = lex_fail(&lx, lx.line, "missing end of comment tag");
                break;
            }
            line_starting = s[end - 1] == '\n';
            advance(&lx, end);
            continue;
        }
        if (!push(&lx, kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, lx.line)) {
            st = oom(&lx);
            break;
        }
        advance(&lx, body);
        st = lex_tag(&lx, kind == '%', &line_starting);
    }
    if (st == BRASA_OK && !push(&lx, JT_EOF, lx.line))
        st = oom(&lx);
    if (st != BRASA_OK) {
        free(lx.toks);
        return st;
    }
    /* hand the tokens over in arena memory, so the template owns everything in one place */
    jtok *toks = jarena_alloc(arena, lx.n_toks * sizeof *toks);
    if (!toks) {
        free(lx.toks);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    if (lx.n_toks) /* lx.toks is NULL when nothing was pushed */
        memcpy(toks, lx.toks, lx.n_toks * sizeof *toks);
    free(lx.toks);
    *tokens = toks;
    *n_tokens = lx.n_toks;
    return BRASA_OK;
}
