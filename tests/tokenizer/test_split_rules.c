/* test_split_rules: the pieces under the pre-tokenizers, without a vocabulary.
 * - Every row of the pre-tokenizer table compiles, and every name in it is found again.
 * - The ASCII fast path of the Unicode classes agrees with the generated ranges, and the ranges
 *   are sorted and disjoint.
 * - Every rule splits long runs of one character in linear time (counted in matcher steps).
 * - The regex dialect means what Oniguruma means on the constructs the rules use (leftmost-first
 *   alternation, greedy backtracking, possessive quantifiers, lookahead, `$`, \b, class
 *   intersection, (?i:)), checked on hand-worked examples; what it refuses, it refuses at compile.
 * The splits of whole texts are checked against Hugging Face tokenizers elsewhere
 * (test_tokenizer_reference.py); this pins the engine's semantics and the table's integrity. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/pretok.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

static int failures;

#define CHECK(cond, ...)                                                                                       \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            failures++;                                                                                        \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                        \
            printf(__VA_ARGS__);                                                                               \
            printf("\n");                                                                                      \
        }                                                                                                      \
    } while (0)

static void table_compiles(void) {
    size_t n = 0;
    for (const pretok_def *d; (d = pretok_def_at(n)) != NULL; n++) {
        pretok p;
        char err[256] = "";
        CHECK(pretok_init(&p, d, err, sizeof err), "%s", err);
        CHECK(p.n_rules > 0, "pre-tokenizer '%s' has no rule", d->names[0]);
        pretok_free(&p);
        for (const char *const *name = d->names; *name; name++)
            CHECK(pretok_find(*name, strlen(*name)) == d, "'%s' is found in another row or not at all", *name);
    }
    CHECK(n >= 15, "only %zu pre-tokenizers", n);
    CHECK(pretok_find("no-such-split", 13) == NULL, "an unknown name is found");
    CHECK(pretok_find("qwen", 4) == NULL, "a prefix of a name is found");
}

static uint16_t bits_by_search(uint32_t cp) {
    for (size_t i = 0; i < uni_ranges_count; i++)
        if (cp >= uni_ranges[i].first && cp <= uni_ranges[i].last)
            return uni_ranges[i].bits;
    return 0;
}

static void unicode_tables(void) {
    for (uint32_t cp = 0; cp < 128; cp++)
        CHECK(uni_bits(cp) == bits_by_search(cp), "U+%04X: ASCII table %#x, ranges %#x", cp, uni_bits(cp),
              bits_by_search(cp));
    for (size_t i = 0; i < uni_ranges_count; i++) {
        CHECK(uni_ranges[i].first <= uni_ranges[i].last && uni_ranges[i].bits != 0, "range %zu", i);
        CHECK(i == 0 || uni_ranges[i - 1].last < uni_ranges[i].first, "ranges %zu and %zu overlap or are unsorted",
              i - 1, i);
    }
    /* a few code points whose classes the rules depend on */
    CHECK(uni_bits(0x4E2D) & UNI_HAN && uni_bits(0x4E2D) & UNI_LO, "U+4E2D is Han, Lo");
    CHECK(uni_bits(0x0301) == UNI_M, "U+0301 is a mark");
    CHECK(uni_bits(0x00BD) == UNI_NO, "U+00BD is No");
    CHECK(uni_bits(0x3000) & UNI_WS, "U+3000 is white space");
    CHECK(uni_bits(0x01C5) == UNI_LT, "U+01C5 is Lt");
    CHECK(uni_bits(0x1F642) == UNI_S, "U+1F642 is a symbol");
    CHECK(uni_bits(0xE000) == 0 && uni_bits(0x200D) == 0, "private use and ZWJ have no class");
}

/* The end of the match of pattern at byte `at` of text (in code points), or -1; -2 if it did not
 * compile. */
static long match(const char *pattern, const char *text, size_t at) {
    char err[160];
    rx_prog *p = rx_compile(pattern, err, sizeof err);
    if (!p) {
        printf("  (compile: %s)\n", err);
        return -2;
    }
    uint32_t cp[64];
    uint16_t bits[64];
    size_t n = strlen(text), m = n <= 64 ? rx_decode(text, n, cp, bits, NULL) : 0;
    rx_text t = { cp, bits };
    rx_scratch s = { 0 };
    rx_memo memo;
    size_t end = RX_NO_MATCH, plain = RX_NO_MATCH;
    if (rx_memo_init(&memo, p)) {
        end = rx_match_at(p, &t, 0, m, at, &s, &memo);
        plain = rx_match_at(p, &t, 0, m, at, &s, NULL);
        rx_memo_free(&memo);
    }
    rx_scratch_free(&s);
    if (end != plain)
        printf("  (/%s/ with and without the memo: %zu vs %zu)\n", pattern, end, plain);
    rx_free(p);
    return end == RX_NO_MATCH ? -1 : (long)end;
}

static void semantics(void) {
    static const struct {
        const char *pattern, *text;
        size_t at;
        long end;
    } cases[] = {
        { "a|ab", "ab", 0, 1 },                 /* leftmost-first, not longest */
        { "ab|a", "ab", 0, 2 },
        { "\\s+(?!\\S)", "   x", 0, 2 },         /* gives back the space before a word */
        { "\\s+(?!\\S)", "   ", 0, 3 },
        { "\\s*[\\r\\n]+", "  \n \n  x", 0, 5 }, /* through the last line break */
        { "[^\\s\\p{L}]?\\p{L}+", "!abc", 0, 4 },
        { "[^\\s\\p{L}]?\\p{L}+", "!!", 0, -1 },
        { "[\\p{Lu}]*[\\p{Ll}]+", "ABCdef", 0, 6 },
        { "[\\p{Lu}]*[\\p{Ll}]+", "ABC", 0, -1 },
        { "[\\p{L}&&[^\\p{Han}]]+", "ab\xe4\xb8\xad", 0, 2 }, /* intersection leaves Han out */
        { "(?i:'s|'ll)", "'LL", 0, 3 },
        { "(?i:'s)", "'\xc5\xbf", 0, -1 },       /* ASCII folding only: not U+017F */
        { "\\p{N}{1,3}", "12345", 0, 3 },
        { "\\p{N}{2}", "1", 0, -1 },
        { "a?+a", "a", 0, -1 },                  /* possessive: never gives the a back */
        { "a?a", "a", 0, 1 },
        { "\\s+$", "  ", 0, 2 },
        { "\\s+$", "  \nx", 0, 2 },              /* $ before a line break too */
        { "\\s+$", "  x", 0, -1 },
        { "\\d{1,3}(?=(?:\\d{3})*\\b)", "12345", 0, 2 },
        { "x\\b", "x y", 0, 1 },
        { "1\\b", "1\xc2\xbd", 0, -1 },        /* \w takes every number, as Oniguruma's does */
        { "x\\B", "xy", 0, 1 },
        { "[^\\s\\p{L}\\p{N}]+", "\xff\xfe", 0, 2 }, /* ill-formed bytes: only negated classes */
        { "\\p{L}", "\xff", 0, -1 },
        { "\\x{1F642}+", "\xf0\x9f\x99\x82\xf0\x9f\x99\x82", 0, 2 },
        { "[.,]", "ab,", 2, 3 },
        { ".+", "ab\ncd", 0, 2 },
        { "(a|b)+c", "ababc", 0, 5 },
        { "[\\x{4E00}-\\x{9FA5}]+", "\xe4\xb8\xad\xe6\x96\x87x", 0, 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long got = match(cases[i].pattern, cases[i].text, cases[i].at);
        CHECK(got == cases[i].end, "/%s/ at %zu: end %ld, expected %ld", cases[i].pattern, cases[i].at, got,
              cases[i].end);
    }
    static const char *refused[] = {
        "a*?", "(?<=a)b", "\\1", "(a*)*", "a**", "[a", "(a", "a)", "\\p{Nope}", "a{3,1}", "", "a|", "\\q",
        "[\\S]", "[[a]]", "a{2000}", "\\x{110000}",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char err[160] = "";
        rx_prog *p = rx_compile(refused[i], err, sizeof err);
        CHECK(p == NULL && err[0], "/%s/ compiled", refused[i]);
        rx_free(p);
    }
}

/* A long run of one character under every rule: ends, and the pieces make the text. */
typedef struct rejoin {
    const char *text;
    size_t at;
} rejoin;

static bool next_piece(const char *piece, size_t len, void *ctx) {
    rejoin *r = ctx;
    if (piece != r->text + r->at || len == 0)
        return false;
    r->at += len;
    return true;
}

/* A run of `reps` copies of unit (plus `tail`, which may end the run differently); the caller frees it. */
static char *run_of(const char *unit, size_t reps, const char *tail, size_t *len) {
    size_t k = strlen(unit), t = strlen(tail);
    char *text = malloc(reps * k + t + 1);
    for (size_t i = 0; i < reps; i++)
        memcpy(text + i * k, unit, k);
    memcpy(text + reps * k, tail, t + 1);
    *len = reps * k + t;
    return text;
}

/* Long runs of one character (then a different one, so that backtracking has to give back) under
 * every rule: the pieces make the text, and ten times the run costs about ten times the matcher
 * steps, never a hundred (no quadratic backtracking). Steps, not seconds: the same on any machine. */
static void long_runs(void) {
    static const char *units[] = { "a", "A", " ", "\n", "1", "\xe4\xb8\xad", "!", "\xcc\x81", "\xff", "\r\n", "aB",
                                   "\xf0\x9f\x99\x82", "\xe0\xb8\x81", "'s" };
    static const char *tails[] = { "", "x", " ", "1", "\n" };
    size_t n = 0;
    for (const pretok_def *d; (d = pretok_def_at(n)) != NULL; n++) {
        pretok p;
        char err[256];
        if (!pretok_init(&p, d, err, sizeof err))
            continue;
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
            for (size_t t = 0; t < sizeof tails / sizeof tails[0]; t++) {
                size_t short_len, long_len;
                char *text = run_of(units[u], 2000 / strlen(units[u]), tails[t], &short_len);
                rejoin r = { text, 0 };
                CHECK(pretok_split(&p, text, short_len, next_piece, &r) && r.at == short_len,
                      "'%s' on a run of %s: pieces do not make the text", d->names[0], units[u]);
                uint64_t few = pretok_split_steps(&p, text, short_len);
                free(text);
                text = run_of(units[u], 20000 / strlen(units[u]), tails[t], &long_len);
                uint64_t many = pretok_split_steps(&p, text, long_len);
                free(text);
                CHECK(few > 0 && many <= 12 * few, "'%s' on a run of %s then '%s': %llu steps for 10x the %llu",
                      d->names[0], units[u], tails[t], (unsigned long long)many, (unsigned long long)few);
            }
        }
        pretok_free(&p);
    }
}

int main(void) {
    table_compiles();
    unicode_tables();
    semantics();
    long_runs();
    printf("split rules (Unicode %s): %s\n", uni_version, failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
