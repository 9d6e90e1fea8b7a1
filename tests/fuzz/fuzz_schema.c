/* fuzz_schema: the schema grammar (grammar/grammar.h) on hostile schemas. Input: a JSON Schema's
 * text; it is parsed, compiled (an error is fine, it must only be reported), and then an output is
 * walked: at each step the input's own bytes, taken in turn, are offered and the first accepted one
 * is appended. Besides memory safety and bounded time, this checks the promises: accepts and
 * advance agree, a refused advance leaves the state as it was, finished implies complete and
 * nothing accepted, and the vocabulary mask equals per-token accepts on a small vocabulary. */
#include <string.h>

#include "core/json.h"
#include "fuzz.h"
#include "grammar/grammar.h"

#define MAX_STEPS 300

static const char *const vocab_texts[] = {
    "{", "}", "[", "]", ",", ":", "\"", "\":", "\",\"", " ", "\n  ", "true", "null", "false", "0", "-1.5e3",
    "a", "ab", "\\u00e9", "\\", "\xc3", "\xa9", "\xc3\xa9", "\xf0\x9f\x98\x80", "\x01", "x\"}", "{\"", "\"]",
};
#define N_VOCAB (sizeof vocab_texts / sizeof vocab_texts[0])

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    return 0;
}

static void check_mask(const grammar_state *s, const grammar_vocab *v, const size_t *lengths) {
    uint8_t mask[N_VOCAB];
    grammar_state_mask(s, v, mask);
    for (size_t i = 0; i < N_VOCAB; i++)
        FUZZ_CHECK(mask[i] == grammar_state_accepts(s, vocab_texts[i], lengths[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_doc *doc = NULL;
    brasa_error err;
    if (json_parse((const char *)data, size, &doc, &err) != BRASA_OK)
        return 0;
    grammar *g = NULL;
    brasa_status st = grammar_from_schema(json_root(doc), &g, &err);
    json_free(doc);
    if (st != BRASA_OK) {
        FUZZ_CHECK(g == NULL && err.message[0] != '\0');
        return 0;
    }
    grammar_state *s = NULL;
    FUZZ_CHECK(grammar_state_create(g, &s, &err) == BRASA_OK);
    size_t lengths[N_VOCAB];
    for (size_t i = 0; i < N_VOCAB; i++)
        lengths[i] = strlen(vocab_texts[i]);
    grammar_vocab *v = NULL;
    FUZZ_CHECK(grammar_vocab_create(vocab_texts, lengths, N_VOCAB, &v, &err) == BRASA_OK);
    size_t at = 0;
    for (int step = 0; step < MAX_STEPS && size > 0; step++) {
        if (step % 16 == 0)
            check_mask(s, v, lengths);
        if (grammar_state_finished(s)) {
            FUZZ_CHECK(grammar_state_complete(s));
            for (unsigned b = 0; b < 256; b++) {
                char c = (char)b;
                FUZZ_CHECK(!grammar_state_accepts(s, &c, 1));
            }
            break;
        }
        bool moved = false;
        for (size_t tries = 0; tries < size && !moved; tries++) {
            const char c = (char)data[at];
            at = (at + 1) % size;
            const bool would = grammar_state_accepts(s, &c, 1);
            const bool complete = grammar_state_complete(s);
            moved = grammar_state_advance(s, &c, 1);
            FUZZ_CHECK(would == moved);
            if (!moved)
                FUZZ_CHECK(complete == grammar_state_complete(s));
        }
        if (!moved)
            break;
    }
    grammar_state_reset(s);
    FUZZ_CHECK(grammar_state_accepts(s, "", 0));
    grammar_vocab_free(v);
    grammar_state_free(s);
    grammar_free(g);
    return 0;
}
