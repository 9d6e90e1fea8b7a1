/* test_reasoning_splits_any_chunking: the reasoning splitter (engine/reasoning.h) gives the same
 * reasoning and answer however the reply is cut into chunks: whole, at every byte into two and
 * into three, and byte by byte. The expected split comes from a plain whole-string reading of the
 * rule (a leading <think> block, or one the prompt opened; whitespace after </think> dropped).
 * Each piece of valid UTF-8 input must be whole characters, reasoning never follows answer, and a
 * callback that says stop ends the feeding. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/utf8.h"
#include "engine/reasoning.h"

static int failures, checks;

#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        checks++;                                                                                   \
        if (!(cond)) {                                                                              \
            failures++;                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                             \
            printf(__VA_ARGS__);                                                                    \
            printf("\n");                                                                           \
        }                                                                                           \
    } while (0)

typedef struct collected {
    buf thought, answer;
    bool answer_seen, thought_after_answer, broken_char, empty_piece;
    bool check_chars;
    int pieces, stop_after; /* stop_after > 0: say stop at that piece */
} collected;

static bool collect(reasoning_part part, const char *text, size_t len, void *user) {
    collected *c = user;
    c->pieces++;
    c->empty_piece |= len == 0;
    if (c->check_chars && !utf8_is_valid(text, len))
        c->broken_char = true;
    if (part == REASONING_ANSWER)
        c->answer_seen = true;
    else if (c->answer_seen)
        c->thought_after_answer = true;
    buf_append(part == REASONING_THOUGHT ? &c->thought : &c->answer, text, len);
    return c->stop_after == 0 || c->pieces < c->stop_after;
}

/* The rule on the whole reply at once. */
static void expected_split(const char *text, size_t n, brasa_chat_reasoning start, buf *thought, buf *answer) {
    size_t at = 0;
    if (start == BRASA_REASONING_NONE || (start == BRASA_REASONING_LEADING && (n < 7 || memcmp(text, "<think>", 7) != 0))) {
        buf_append(answer, text, n);
        return;
    }
    if (start == BRASA_REASONING_LEADING)
        at = 7;
    for (size_t i = at; i + 8 <= n; i++) {
        if (memcmp(text + i, "</think>", 8) == 0) {
            buf_append(thought, text + at, i - at);
            size_t a = i + 8;
            while (a < n && (text[a] == ' ' || text[a] == '\t' || text[a] == '\n' || text[a] == '\r'))
                a++;
            buf_append(answer, text + a, n - a);
            return;
        }
    }
    buf_append(thought, text + at, n - at);
}

static bool same(const buf *b, const buf *want) {
    return b->len == want->len && (b->len == 0 || memcmp(b->data, want->data, b->len) == 0);
}

/* Feeds text cut at the given points (sorted, within [0, n]) and checks the result. */
static void run_cut(const char *name, const char *text, size_t n, brasa_chat_reasoning start, const size_t *cuts,
                    size_t n_cuts, const buf *want_thought, const buf *want_answer) {
    collected c = { 0 };
    c.check_chars = utf8_is_valid(text, n);
    reasoning_splitter s;
    reasoning_init(&s, start, collect, &c);
    size_t from = 0;
    bool ok = true;
    for (size_t k = 0; k <= n_cuts; k++) {
        const size_t to = k < n_cuts ? cuts[k] : n;
        ok = reasoning_push(&s, text + from, to - from) && ok;
        from = to;
    }
    ok = reasoning_finish(&s) && ok;
    char where[64] = "";
    for (size_t k = 0; k < n_cuts && k < 3; k++)
        snprintf(where + strlen(where), sizeof where - strlen(where), " %zu", cuts[k]);
    CHECK(ok, "%s: the splitter said stop without being asked", name);
    CHECK(same(&c.thought, want_thought), "%s (cut at%s): reasoning '%.*s', expected '%.*s'", name, where,
          (int)(c.thought.len < 60 ? c.thought.len : 60), c.thought.data ? c.thought.data : "", (int)(want_thought->len < 60 ? want_thought->len : 60),
          want_thought->data ? want_thought->data : "");
    CHECK(same(&c.answer, want_answer), "%s (cut at%s): answer '%.*s', expected '%.*s'", name, where,
          (int)(c.answer.len < 60 ? c.answer.len : 60), c.answer.data ? c.answer.data : "", (int)(want_answer->len < 60 ? want_answer->len : 60),
          want_answer->data ? want_answer->data : "");
    CHECK(!c.broken_char, "%s (cut at%s): a piece ends inside a character", name, where);
    CHECK(!c.thought_after_answer, "%s (cut at%s): reasoning after the answer", name, where);
    CHECK(!c.empty_piece, "%s (cut at%s): an empty piece", name, where);
    buf_free(&c.thought);
    buf_free(&c.answer);
}

static void check_case(const char *name, const char *text, size_t n, brasa_chat_reasoning start) {
    buf want_thought = { 0 }, want_answer = { 0 };
    expected_split(text, n, start, &want_thought, &want_answer);
    size_t *cuts = malloc((n + 2) * sizeof *cuts);
    if (!cuts) {
        CHECK(false, "out of memory");
        return;
    }
    run_cut(name, text, n, start, NULL, 0, &want_thought, &want_answer);
    for (size_t i = 0; i <= n; i++) {
        cuts[0] = i;
        run_cut(name, text, n, start, cuts, 1, &want_thought, &want_answer);
        for (size_t j = i; j <= n && n <= 64; j++) {
            cuts[1] = j;
            run_cut(name, text, n, start, cuts, 2, &want_thought, &want_answer);
        }
    }
    for (size_t i = 0; i < n; i++)
        cuts[i] = i + 1;
    run_cut(name, text, n, start, cuts, n, &want_thought, &want_answer);
    free(cuts);
    buf_free(&want_thought);
    buf_free(&want_answer);
}

/* Literal expectations, so that the reference reading itself is pinned down. */
static void check_literal(const char *text, brasa_chat_reasoning start, const char *thought, const char *answer) {
    buf t = { 0 }, a = { 0 };
    expected_split(text, strlen(text), start, &t, &a);
    CHECK(t.len == strlen(thought) && (t.len == 0 || memcmp(t.data, thought, t.len) == 0),
          "reference on '%s': reasoning '%.*s'", text, (int)t.len, t.data ? t.data : "");
    CHECK(a.len == strlen(answer) && (a.len == 0 || memcmp(a.data, answer, a.len) == 0),
          "reference on '%s': answer '%.*s'", text, (int)a.len, a.data ? a.data : "");
    buf_free(&t);
    buf_free(&a);
}

static void check_stop(void) {
    collected c = { 0 };
    c.stop_after = 1;
    reasoning_splitter s;
    reasoning_init(&s, BRASA_REASONING_LEADING, collect, &c);
    const char *text = "<think>one</think>two";
    const bool ok = reasoning_push(&s, text, strlen(text));
    CHECK(!ok && c.pieces == 1, "a callback that says stop: push returned %d after %d pieces", ok, c.pieces);
    CHECK(!reasoning_finish(&s) && c.pieces == 1, "finish after a stop hands out nothing more (%d pieces)", c.pieces);
    buf_free(&c.thought);
    buf_free(&c.answer);
}

int main(void) {
    static const struct {
        const char *name, *text;
        brasa_chat_reasoning start;
    } cases[] = {
        { "block then answer", "<think>\nLet me see: 2 + 2.\n</think>\n\nThe answer is 4.", BRASA_REASONING_LEADING },
        { "no block", "Plain answer, no block.", BRASA_REASONING_LEADING },
        { "empty reply", "", BRASA_REASONING_LEADING },
        { "an unfinished open tag at the end", "<thi", BRASA_REASONING_LEADING },
        { "a text that starts like the tag", "<thinking>not a block</thinking>", BRASA_REASONING_LEADING },
        { "space before the tag", " <think>a</think>b", BRASA_REASONING_LEADING },
        { "unterminated block", "<think>still thinking when it ended", BRASA_REASONING_LEADING },
        { "an unfinished close tag at the end", "<think>almost</thin", BRASA_REASONING_LEADING },
        { "look-alike close tags inside", "<think>x</thinking>y<</think>  z", BRASA_REASONING_LEADING },
        { "empty block", "<think></think>answer", BRASA_REASONING_LEADING },
        { "only whitespace after the block", "<think>a</think>\n\n \t", BRASA_REASONING_LEADING },
        { "a later block is answer", "<think>a</think>b<think>c</think>d", BRASA_REASONING_LEADING },
        { "multi-byte characters", "<think>é 日本 🐧</think>\n ñandú 🐧", BRASA_REASONING_LEADING },
        { "implicit open", "reasoning\n</think>\n\nanswer", BRASA_REASONING_OPEN },
        { "implicit open, never closed", "no close at all, ¿sí? 🐧", BRASA_REASONING_OPEN },
        { "implicit open, closed at once", "</think>x", BRASA_REASONING_OPEN },
        { "implicit open, a <think> inside", "<think>a</think>b", BRASA_REASONING_OPEN },
        { "a format without reasoning", "<think>a</think>b", BRASA_REASONING_NONE },
        { "ill-formed bytes", "<think>\xe4\xb8</think>\xff ok \xf0\x9f", BRASA_REASONING_LEADING },
        { "a character cut by the end", "<think>ab\xe6\x97", BRASA_REASONING_LEADING },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(cases[i].name, cases[i].text, strlen(cases[i].text), cases[i].start);
    /* a long reply, chunked at every byte into two and byte by byte */
    buf longer = { 0 };
    buf_append(&longer, "<think>", 7);
    for (int i = 0; i < 200; i++)
        buf_append(&longer, "pensé </thin <thin 日 ", strlen("pensé </thin <thin 日 "));
    buf_append(&longer, "</think>\r\n\n", 11);
    for (int i = 0; i < 100; i++)
        buf_append(&longer, "respuesta 🐧 ", strlen("respuesta 🐧 "));
    check_case("a long reply", longer.data, longer.len, BRASA_REASONING_LEADING);
    buf_free(&longer);

    check_literal("<think>\nr\n</think>\n\nanswer", BRASA_REASONING_LEADING, "\nr\n", "answer");
    check_literal("<thi", BRASA_REASONING_LEADING, "", "<thi");
    check_literal("<think>x</thi", BRASA_REASONING_LEADING, "x</thi", "");
    check_literal("r</think> a", BRASA_REASONING_OPEN, "r", "a");
    check_literal("<think>a</think>b", BRASA_REASONING_NONE, "", "<think>a</think>b");
    check_stop();

    printf("reasoning splitter: %d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
