/* regex.h: the regular expressions that tokenizers publish as their split rules (a tokenizer.json's
 * Split patterns), compiled to a small backtracking program over code points.
 *
 * The dialect is the subset those patterns use, with Oniguruma's meaning (the engine Hugging Face
 * `tokenizers` runs them with): alternation, groups (?:..) and (..) (nothing is captured),
 * (?i:..) (ASCII case folding), lookahead (?=..) (?!..), greedy quantifiers ? * + {n} {n,} {n,m}
 * and possessive ones (?+ *+ ++), classes [..] with ranges, negation, \p{..}/\P{..} and
 * intersection (&&[..]), the escapes \s \S \d \D \w \W \b \B \r \n \t \f \v \xHH \x{H..} \uHHHH and
 * escaped punctuation, `.` and `$` (end of text or before a newline). A match is leftmost-first,
 * as in Perl: the first alternative that succeeds wins, quantifiers take as much as they can and
 * give back only what the rest needs. Anything else (backreferences, lazy quantifiers, lookbehind,
 * a pattern or loop that can match nothing) is a compile error, so a new rule fails at load, not
 * at a user's prompt. */
#ifndef BRASA_TOKENIZER_REGEX_H
#define BRASA_TOKENIZER_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rx_prog rx_prog;

/* A text as code points with their UNI_* class bits (unicode.h). An ill-formed byte is the code
 * point RX_INVALID with no bits: it matches only negated classes, as a byte Oniguruma would
 * never see (the reference tokenizers replace it) must still land in some piece. */
#define RX_INVALID 0xFFFFFFFFu
typedef struct rx_text {
    const uint32_t *cp;
    const uint16_t *bits;
} rx_text;

/* Decodes n bytes of UTF-8 into cp and bits (n entries each suffice), an ill-formed byte as one
 * RX_INVALID code point (which keeps the bytes exact for byte-level BPE), and when off is not NULL
 * the byte offset of each code point and of the end (n + 1 entries). Returns the code points. */
size_t rx_decode(const char *text, size_t n, uint32_t *cp, uint16_t *bits, size_t *off);

/* The backtracking stack, reused across matches; zero-initialize, free with rx_scratch_free. */
typedef struct rx_scratch {
    struct rx_frame *frames;
    size_t len, cap;
    bool oom;
    uint64_t steps; /* instructions run so far: a machine-independent measure of matching time */
} rx_scratch;

/* What one program has learned about one text range: the branch points (instruction, position)
 * from which no match can follow. Matches tried at later positions of the same range skip them,
 * which keeps a scan linear where plain backtracking would walk a long run again from every start
 * (`\s*[\r\n]+` or `\s+$` over many spaces). Sound because a state's outcome depends only on
 * the instruction, the position and the range. Each branch point keeps one interval of positions,
 * which greedy loops extend one position at a time. */
typedef struct rx_memo {
    struct rx_dead *dead; /* (instructions of the program) */
    size_t n;
    uint32_t gen; /* entries of other generations are empty: a new range costs nothing to start */
} rx_memo;

bool rx_memo_init(rx_memo *m, const rx_prog *p); /* false when out of memory */
void rx_memo_reset(rx_memo *m);                  /* before matching in another range */
void rx_memo_free(rx_memo *m);

#define RX_NO_MATCH SIZE_MAX

/* Compiles pattern (UTF-8, NUL-terminated). NULL on error, with the reason and position in err. */
rx_prog *rx_compile(const char *pattern, char *err, size_t err_len);
void rx_free(rx_prog *p);

/* The end of the match that starts exactly at `at` in the text [start, end) (lookahead and `$` see
 * `end` as the end of the text, \b sees `start` as its start), or RX_NO_MATCH. m (NULL: none) is
 * the program's memo for this range. Out of memory for the backtracking stack also gives
 * RX_NO_MATCH, with s->oom set. */
size_t rx_match_at(const rx_prog *p, const rx_text *t, size_t start, size_t end, size_t at, rx_scratch *s,
                   rx_memo *m);

void rx_scratch_free(rx_scratch *s);

#endif
