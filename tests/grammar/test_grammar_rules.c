/* test_grammar_accepts_what_the_schema_allows: the schema grammar (grammar/grammar.h) fed byte by
 * byte. Valid documents are accepted to the last byte and complete there; invalid ones are
 * refused at exactly the byte where they stop being a prefix of a valid document. Also: tokens cut
 * in the middle of a UTF-8 character, recursion through $ref, anyOf, enums, literal text around a
 * schema, complete versus finished, bounded whitespace, the mask against per-token accepts on a
 * made-up vocabulary, and errors that name the unsupported keyword and where it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "grammar/grammar.h"

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

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_random(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* Compiles a schema text; NULL (with the message in err) when it does not compile. */
static grammar *compile_text(const char *schema, brasa_error *err) {
    json_doc *doc = NULL;
    if (json_parse(schema, strlen(schema), &doc, err) != BRASA_OK) {
        printf("FAIL: schema does not parse: %s\n%s\n", err->message, schema);
        failures++;
        return NULL;
    }
    grammar *g = NULL;
    grammar_from_schema(json_root(doc), &g, err);
    json_free(doc);
    return g;
}

static grammar *compile_ok(const char *schema) {
    brasa_error err;
    grammar *g = compile_text(schema, &err);
    CHECK(g != NULL, "schema %s: %s", schema, err.message);
    return g;
}

/* Feeds text byte by byte; returns the index of the first byte refused, or -1 when all are taken
 * (then *complete tells whether the document may end there). */
static long feed(grammar *g, const char *text, bool *complete) {
    grammar_state *s = NULL;
    brasa_error err;
    if (grammar_state_create(g, &s, &err) != BRASA_OK)
        return -2;
    long refused = -1;
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++) {
        bool would = grammar_state_accepts(s, text + i, 1);
        bool did = grammar_state_advance(s, text + i, 1);
        CHECK(would == did, "accepts and advance disagree at byte %zu of %s", i, text);
        if (!did) {
            refused = (long)i;
            break;
        }
    }
    *complete = grammar_state_complete(s);
    grammar_state_free(s);
    return refused;
}

static void expect_valid(const char *schema, const char *doc) {
    grammar *g = compile_ok(schema);
    if (!g)
        return;
    bool complete;
    long at = feed(g, doc, &complete);
    CHECK(at == -1, "valid %s refused at byte %ld (schema %s)", doc, at, schema);
    CHECK(at != -1 || complete, "valid %s not complete (schema %s)", doc, schema);
    grammar_free(g);
}

/* `at` is the index of the byte that must be refused; -1: every byte taken but not complete. */
static void expect_invalid(const char *schema, const char *doc, long at) {
    grammar *g = compile_ok(schema);
    if (!g)
        return;
    bool complete;
    long got = feed(g, doc, &complete);
    if (at >= 0)
        CHECK(got == at, "invalid %s refused at %ld, expected %ld (schema %s)", doc, got, at, schema);
    else
        CHECK(got == -1 && !complete, "incomplete %s: refused at %ld, complete %d", doc, got, complete);
    grammar_free(g);
}

static void expect_error(const char *schema, const char *needle) {
    brasa_error err;
    err.message[0] = '\0';
    grammar *g = compile_text(schema, &err);
    CHECK(g == NULL, "schema %s compiled, expected an error with '%s'", schema, needle);
    CHECK(g != NULL || strstr(err.message, needle), "error '%s' lacks '%s'", err.message, needle);
    grammar_free(g);
}

static const char *PERSON =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\",\"minLength\":1},"
    "\"age\":{\"type\":\"integer\"},"
    "\"email\":{\"type\":\"string\",\"format\":\"email\"},"
    "\"address\":{\"type\":\"object\",\"properties\":{\"street\":{\"type\":\"string\"},"
    "\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}},"
    "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}";

static void test_objects(void) {
    expect_valid(PERSON, "{\"name\":\"Ann\",\"age\":31}");
    expect_valid(PERSON, "{\"name\":\"Ann\",\"age\":-3,\"email\":\"a@b.c\",\"address\":{\"city\":\"Rio\"}}");
    expect_valid(PERSON, "{\n  \"name\": \"Ann\",\n  \"age\": 0,\n  \"address\": {\"street\": \"x\", \"city\": \"y\"}\n}");
    expect_valid(PERSON, "{ \"name\" : \"Ann\" , \"age\" : 7 }");
    /* the required "age" cannot be skipped: '}' after name is refused */
    expect_invalid(PERSON, "{\"name\":\"Ann\"}", 13);
    /* properties keep schema order */
    expect_invalid(PERSON, "{\"age\":3,", 2);
    /* no extra members */
    expect_invalid(PERSON, "{\"name\":\"A\",\"age\":1,\"x\":1}", 21);
    /* minLength 1 */
    expect_invalid(PERSON, "{\"name\":\"\"", 9);
    /* integer: no fraction */
    expect_invalid(PERSON, "{\"name\":\"A\",\"age\":1.5}", 19);
    expect_invalid(PERSON, "{\"name\":\"A\",\"age\":01}", 19);
    /* leading whitespace and trailing text are refused */
    expect_invalid(PERSON, " {}", 0);
    expect_invalid("{\"type\":\"object\"}", "{} ", 2);
    /* an object schema without properties takes any members */
    expect_valid("{\"type\":\"object\"}", "{\"a\":[1,{\"b\":null}],\"c\":\"d\"}");
    expect_valid("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", "{\"a\":1,\"b\":2}");
    expect_invalid("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", "{\"a\":true}", 5);
    /* extra members after declared ones, never with a declared name */
    const char *open = "{\"properties\":{\"id\":{\"type\":\"integer\"}},\"additionalProperties\":true}";
    expect_valid(open, "{\"id\":1,\"idx\":2,\"other\":[]}");
    expect_valid(open, "{\"i\":\"x\"}");
    expect_invalid(open, "{\"id\":1,\"id\":", 11);
    expect_invalid(open, "{\"i\\u0064\":1}", 3);
    /* optional properties skipped, commas right */
    const char *opt = "{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"},"
                      "\"c\":{\"type\":\"integer\"}}}";
    expect_valid(opt, "{}");
    expect_valid(opt, "{\"b\":1}");
    expect_valid(opt, "{\"a\":1,\"c\":3}");
    expect_invalid(opt, "{,", 1);
    expect_invalid(opt, "{\"a\":1\"b\"", 6);
}

static void test_strings_and_utf8(void) {
    const char *str = "{\"type\":\"string\"}";
    expect_valid(str, "\"plain ascii ~\x7f\"");
    expect_valid(str, "\"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\"");
    expect_valid(str, "\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83D\\uDE00\"");
    expect_invalid(str, "\"\x01\"", 1);         /* raw control character */
    expect_invalid(str, "\"\xc0\x80\"", 1);     /* overlong */
    expect_invalid(str, "\"\xed\xa0\x80\"", 2); /* a surrogate in UTF-8 */
    expect_invalid(str, "\"\xf4\x90\x80\x80\"", 2); /* above U+10FFFF */
    expect_invalid(str, "\"\xc3\"", 2);         /* cut character */
    expect_invalid(str, "\"\\x\"", 2);
    expect_invalid(str, "\"\\uDC00\"", 4);      /* lone low surrogate */
    expect_invalid(str, "\"\\uD800x\"", 7);     /* high surrogate not followed by a low one */
    expect_invalid(str, "\"\\uD800\\u0041\"", 9);

    /* character counts: escapes and multi-byte characters are one each, a surrogate pair too */
    const char *two = "{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}";
    expect_valid(two, "\"ab\"");
    expect_valid(two, "\"\xe6\x97\xa5\\n\xf0\x9f\x98\x80\"");
    expect_valid(two, "\"\\uD83D\\uDE00\\u0041\"");
    expect_invalid(two, "\"a\"", 2);
    expect_invalid(two, "\"abcd", 4);

    /* tokens ending in the middle of a character: the state carries the half character */
    grammar *g = compile_ok(str);
    grammar_state *s = NULL;
    brasa_error err;
    if (g && grammar_state_create(g, &s, &err) == BRASA_OK) {
        const char *text = "\"\xe6\x97\xa5\xf0\x9f\x98\x80\xc3\xa9\"";
        size_t n = strlen(text);
        for (int round = 0; round < 50; round++) {
            grammar_state_reset(s);
            size_t i = 0;
            bool ok = true;
            while (i < n && ok) {
                size_t len = 1 + next_random() % 4;
                if (len > n - i)
                    len = n - i;
                ok = grammar_state_accepts(s, text + i, len) && grammar_state_advance(s, text + i, len);
                i += len;
            }
            CHECK(ok && grammar_state_finished(s), "chunked UTF-8 round %d", round);
        }
        grammar_state_reset(s);
        CHECK(grammar_state_advance(s, "\"\xf0\x9f", 3), "half an emoji");
        CHECK(!grammar_state_accepts(s, "\x98\x80\x80", 3), "an extra continuation byte");
        CHECK(!grammar_state_accepts(s, "\"", 1), "a quote inside a character");
        CHECK(grammar_state_accepts(s, "\x98\x80\"", 3), "the rest of the emoji");
        grammar_state_free(s);
    }
    grammar_free(g);
}

static void test_numbers_and_types(void) {
    const char *num = "{\"type\":\"number\"}";
    expect_valid(num, "0");
    expect_valid(num, "-12.5e+3");
    expect_valid(num, "3E7");
    expect_invalid(num, "-", -1);
    expect_invalid(num, "1.", -1);
    expect_invalid(num, "1.e", 2);
    expect_invalid(num, "+1", 0);
    expect_invalid(num, "00", 1);
    expect_invalid("{\"type\":\"integer\"}", "12e3", 2);
    const char *multi = "{\"type\":[\"string\",\"null\",\"boolean\",\"array\"]}";
    expect_valid(multi, "null");
    expect_valid(multi, "false");
    expect_valid(multi, "[1,\"x\",{}]");
    expect_valid(multi, "\"s\"");
    expect_invalid(multi, "nul1", 3);
    expect_invalid(multi, "1", 0);
    expect_valid("{}", "{\"any\":[true,null,-0.5,\"\"]}");
    expect_valid("true", "[[[]]]");
}

static void test_enum_const_anyof(void) {
    const char *color = "{\"enum\":[\"red\",\"green\",\"grey\",7,null,{\"a\":[1]}]}";
    expect_valid(color, "\"red\"");
    expect_valid(color, "\"grey\"");
    expect_valid(color, "7");
    expect_valid(color, "null");
    expect_valid(color, "{\"a\":[1]}");
    expect_invalid(color, "\"gx", 2);
    expect_invalid(color, "\"re\"", 3);
    expect_invalid(color, "8", 0);
    expect_valid("{\"const\":\"only\"}", "\"only\"");
    expect_invalid("{\"const\":\"only\"}", "\"onlyx", 5);
    /* enum values of another type than "type" are left out */
    expect_invalid("{\"type\":\"string\",\"enum\":[\"a\",1]}", "1", 0);

    const char *any = "{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"object\",\"properties\":{\"k\":{\"const\":1}},"
                      "\"required\":[\"k\"]},{\"type\":\"object\",\"properties\":{\"k\":{\"const\":\"s\"},"
                      "\"m\":{\"type\":\"boolean\"}},\"required\":[\"k\",\"m\"]}]}";
    expect_valid(any, "42");
    expect_valid(any, "{\"k\":1}");
    expect_valid(any, "{\"k\":\"s\",\"m\":true}");
    expect_invalid(any, "{\"k\":\"s\"}", 8);
    expect_invalid(any, "{\"k\":1,", 6);
    expect_valid("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "null");
    expect_valid("{\"allOf\":[{\"type\":\"boolean\"}],\"title\":\"t\"}", "true");
}

static void test_arrays(void) {
    const char *bounded = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":3}";
    expect_valid(bounded, "[1,2]");
    expect_valid(bounded, "[1, 2, 3]");
    expect_invalid(bounded, "[1]", 2);
    expect_invalid(bounded, "[1,2,3,", 6);
    expect_invalid(bounded, "[]", 1);
    const char *tuple = "{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"items\":false}";
    expect_valid(tuple, "[\"a\",1]");
    expect_valid(tuple, "[]");
    expect_invalid(tuple, "[1", 1);
    expect_invalid(tuple, "[\"a\",1,", 6);
    const char *more = "{\"prefixItems\":[{\"type\":\"string\"}],\"items\":{\"type\":\"null\"},\"minItems\":1}";
    expect_valid(more, "[\"a\",null,null]");
    expect_invalid(more, "[\"a\",1", 5);
    expect_valid("{\"type\":\"array\",\"maxItems\":0}", "[]");
    expect_invalid("{\"type\":\"array\",\"maxItems\":0}", "[1", 1);
}

static const char *TREE = "{\"$ref\":\"#/$defs/node\",\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{"
                          "\"value\":{\"type\":\"integer\"},\"children\":{\"type\":\"array\",\"items\":"
                          "{\"$ref\":\"#/$defs/node\"}}},\"required\":[\"value\"]}}}";

static void test_recursion(void) {
    expect_valid(TREE, "{\"value\":1}");
    expect_valid(TREE, "{\"value\":1,\"children\":[{\"value\":2,\"children\":[]},{\"value\":3,\"children\":"
                       "[{\"value\":4}]}]}");
    char deep[4096];
    size_t n = 0;
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(deep + n, sizeof deep - n, "{\"value\":%d,\"children\":[", i);
    n += (size_t)snprintf(deep + n, sizeof deep - n, "{\"value\":0}");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(deep + n, sizeof deep - n, "]}");
    expect_valid(TREE, deep);
    expect_invalid(TREE, "{\"value\":1,\"children\":[{\"children\"", 25);
    /* "#" is the root itself, and "definitions" works as "$defs" does */
    const char *list = "{\"type\":\"object\",\"properties\":{\"next\":{\"anyOf\":[{\"$ref\":\"#\"},{\"type\":\"null\"}]}},"
                       "\"required\":[\"next\"]}";
    expect_valid(list, "{\"next\":{\"next\":{\"next\":null}}}");
    expect_valid("{\"definitions\":{\"x\":{\"type\":\"integer\"}},\"$ref\":\"#/definitions/x\"}", "5");
    /* nesting is capped: a very deep document stops being accepted instead of growing the state */
    grammar *g = compile_ok("{}");
    grammar_state *s = NULL;
    brasa_error err;
    if (g && grammar_state_create(g, &s, &err) == BRASA_OK) {
        int depth = 0;
        while (depth < 1000 && grammar_state_advance(s, "[", 1))
            depth++;
        CHECK(depth >= 64 && depth < 1000, "nesting cap: %d", depth);
        grammar_state_free(s);
    }
    grammar_free(g);
}

static void test_parts_and_completion(void) {
    json_doc *doc = NULL;
    brasa_error err;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}},\"required\":[\"q\"]}";
    if (json_parse(schema, strlen(schema), &doc, &err) != BRASA_OK) {
        CHECK(0, "parse: %s", err.message);
        return;
    }
    grammar_part parts[3] = {
        { GRAMMAR_LITERAL, "<tool_call>\n", 12, NULL },
        { GRAMMAR_SCHEMA, NULL, 0, json_root(doc) },
        { GRAMMAR_LITERAL, "\n</tool_call>", 13, NULL },
    };
    grammar *g = NULL;
    CHECK(grammar_compile(parts, 3, &g, &err) == BRASA_OK, "parts: %s", err.message);
    json_free(doc);
    grammar_state *s = NULL;
    if (!g || grammar_state_create(g, &s, &err) != BRASA_OK) {
        grammar_free(g);
        return;
    }
    CHECK(!grammar_state_accepts(s, "{", 1), "the literal comes first");
    CHECK(grammar_state_accepts(s, "<tool", 5), "literal prefix");
    CHECK(grammar_state_advance(s, "<tool_call>\n{\"q\":\"x\"}", 21), "literal and value");
    CHECK(!grammar_state_complete(s), "the closing literal is due");
    CHECK(!grammar_state_accepts(s, "\n</tool_call> ", 14), "nothing after the closing literal");
    CHECK(grammar_state_advance(s, "\n</tool_", 8), "closing literal");
    CHECK(!grammar_state_advance(s, "x", 1), "wrong byte in the closing literal");
    CHECK(grammar_state_advance(s, "call>", 5), "closing literal, rest");
    CHECK(grammar_state_complete(s) && grammar_state_finished(s), "complete and finished");
    grammar_state_reset(s);
    CHECK(!grammar_state_complete(s) && grammar_state_accepts(s, "<", 1), "reset");
    grammar_state_free(s);
    grammar_free(g);

    g = compile_ok("{\"type\":\"integer\"}");
    if (g && grammar_state_create(g, &s, &err) == BRASA_OK) {
        CHECK(grammar_state_advance(s, "12", 2), "integer");
        CHECK(grammar_state_complete(s) && !grammar_state_finished(s), "more digits may follow");
        CHECK(grammar_state_accepts(s, "3", 1) && !grammar_state_accepts(s, "}", 1), "digits only");
        /* sixteen digits at most, so that a model repeating a digit has to stop */
        CHECK(grammar_state_advance(s, "34567890123456", 14), "sixteen digits");
        CHECK(grammar_state_complete(s) && !grammar_state_accepts(s, "7", 1), "no seventeenth digit");
        grammar_state_free(s);
    }
    grammar_free(g);
    g = compile_ok("{\"type\":\"number\"}");
    if (g && grammar_state_create(g, &s, &err) == BRASA_OK) {
        CHECK(grammar_state_advance(s, "-1234567890123456.1234567890123456", 34), "sixteen digits each side");
        CHECK(!grammar_state_accepts(s, "7", 1), "no seventeenth fraction digit");
        CHECK(grammar_state_advance(s, "e-308", 5) && grammar_state_complete(s), "an exponent of three digits");
        CHECK(!grammar_state_accepts(s, "0", 1), "no fourth exponent digit");
        grammar_state_reset(s);
        CHECK(grammar_state_advance(s, "0.5E+2", 6) && grammar_state_complete(s), "a short number");
        CHECK(grammar_state_accepts(s, "00", 2) && !grammar_state_accepts(s, "000", 3), "one exponent digit so far");
        grammar_state_free(s);
    }
    grammar_free(g);

    CHECK(grammar_json_object(&g, &err) == BRASA_OK, "json_object: %s", err.message);
    if (g && grammar_state_create(g, &s, &err) == BRASA_OK) {
        CHECK(!grammar_state_accepts(s, "[", 1) && !grammar_state_accepts(s, "1", 1), "json_object: objects only");
        CHECK(grammar_state_advance(s, "{\"a\": [1, {}]}", 14), "json_object: an object");
        CHECK(grammar_state_finished(s), "json_object: finished");
        grammar_state_free(s);
    }
    grammar_free(g);
}

static void test_whitespace_is_bounded(void) {
    const char *arr = "{\"type\":\"array\"}";
    expect_valid(arr, "[\n\t\t1,\n    2\n]");
    expect_invalid(arr, "[  1]", 2);
    expect_invalid(arr, "[\n\n1]", 2);
    expect_invalid(arr, "[\r\n1]", 1);
    char deep[64] = "[\n";
    memset(deep + 2, ' ', 21);
    deep[23] = '\0';
    expect_invalid(arr, deep, 22);
}

static void test_errors(void) {
    expect_error("{\"type\":\"object\",\"properties\":{\"x\":{\"patternProperties\":{}}}}",
                 "schema at /properties/x: 'patternProperties' is not supported");
    expect_error("{\"type\":\"string\",\"pattern\":\"^a\"}", "'pattern' is not supported");
    expect_error("{\"type\":\"integer\",\"minimum\":0}", "'minimum' is not supported");
    expect_error("{\"items\":{\"anyOf\":[{\"type\":\"string\"},{\"uniqueItems\":true}]}}",
                 "schema at /items/anyOf/1: 'uniqueItems' is not supported");
    expect_error("{\"$ref\":\"http://example.com/s.json\"}", "'$ref' to 'http://example.com/s.json' is not supported");
    expect_error("{\"$ref\":\"#/$defs/missing\"}", "no such definition");
    expect_error("{\"allOf\":[{\"type\":\"string\"},{\"maxLength\":3}]}", "'allOf' with more than one schema");
    expect_error("{\"type\":\"object\",\"anyOf\":[{}]}", "'anyOf' together with 'type'");
    expect_error("{\"$defs\":{\"a\":{\"not\":{}}},\"$ref\":\"#/$defs/a\"}", "schema at /$defs/a: 'not' is not supported");
    expect_error("{\"type\":\"strin\"}", "'type' must be");
    expect_error("false", "admits no value");
    expect_error("{\"type\":\"string\",\"minLength\":3,\"maxLength\":2}", "'minLength' is above 'maxLength'");
    expect_error("{\"required\":[\"a\"],\"properties\":{}}", "'required' names 'a'");
}

/* A made-up vocabulary: JSON-ish pieces and random byte strings, some with broken UTF-8. */
static size_t make_vocab(char **pieces, size_t *lengths, size_t cap) {
    static const char *const fixed[] = {
        "{", "}", "[", "]", ",", ":", "\"", "{\"", "\":", "\":\"", "\",", "\",\"", "}]", "]}", "},{", " ",
        "\n", "\n ", "\n  ", "  ", "name", "\"name\"", "age", "value", "children", "true", "false", "null",
        "nul", "1", "12", "0", "-", ".", "e", "E+", "5.", "\\", "\\n", "\\u", "00e9", "\xc3", "\xa9",
        "\xc3\xa9", "\xe6\x97", "\xa5", "\xf0\x9f\x98\x80", "\":{\"", "\":[", "red", "\"red\"", "gr", "ey",
        "\"g", "{\"value\":", "x", " \"", "\t", "\xed\xa0\x80", "}\n", "Ann", "\"A",
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && n < cap; i++, n++) {
        lengths[n] = strlen(fixed[i]);
        pieces[n] = malloc(lengths[n]);
        memcpy(pieces[n], fixed[i], lengths[n]);
    }
    static const char alphabet[] = "{}[],:\" \n\\ulnrtaefs0123456789.-+eE\x01\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80";
    while (n < cap) {
        lengths[n] = n % 97 == 0 ? 0 : 1 + next_random() % 6; /* some empty: never allowed */
        pieces[n] = lengths[n] ? malloc(lengths[n]) : NULL;
        for (size_t k = 0; k < lengths[n]; k++)
            pieces[n][k] = alphabet[next_random() % (sizeof alphabet - 1)];
        n++;
    }
    return n;
}

static void test_mask_matches_accepts(void) {
    enum { N = 4000 };
    static char *pieces[N];
    static size_t lengths[N];
    static uint8_t mask[N];
    size_t n = make_vocab(pieces, lengths, N);
    grammar_vocab *v = NULL;
    brasa_error err;
    CHECK(grammar_vocab_create((const char *const *)pieces, lengths, n, &v, &err) == BRASA_OK, "vocab: %s",
          err.message);
    const char *schemas[] = { PERSON, TREE, "{}", "{\"enum\":[\"red\",\"green\",\"grey\"]}",
                              "{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"maxItems\":3}",
                              "{\"type\":\"string\",\"maxLength\":2}" };
    const char *docs[] = {
        "{\"name\":\"Ann \xc3\xa9\xe6\x97\xa5\\n\",\"age\":12,\"address\":{\n  \"city\": \"x\"}}",
        "{\"value\":1,\"children\":[{\"value\":2}, {\"value\":-3,\"children\":[]}]}",
        "{\"a\": [1.5e3, \"\\u00e9\", null, {\"b\":\n\t{}}]}",
        "\"grey\"",
        "[1, 2.5,\n 3]",
        "\"\xf0\x9f\x98\x80\\t\"",
    };
    for (size_t k = 0; k < sizeof schemas / sizeof schemas[0]; k++) {
        grammar *g = compile_ok(schemas[k]);
        grammar_state *s = NULL;
        if (!g || grammar_state_create(g, &s, &err) != BRASA_OK) {
            grammar_free(g);
            continue;
        }
        const char *doc = docs[k];
        size_t len = strlen(doc), mismatches = 0, allowed = 0;
        for (size_t at = 0; at <= len; at++) {
            grammar_state_mask(s, v, mask);
            for (size_t t = 0; t < n; t++) {
                bool acc = lengths[t] > 0 && grammar_state_accepts(s, pieces[t], lengths[t]);
                mismatches += acc != (mask[t] == 1);
                allowed += mask[t];
            }
            if (at < len)
                CHECK(grammar_state_advance(s, doc + at, 1), "schema %zu: doc byte %zu", k, at);
        }
        CHECK(mismatches == 0, "schema %zu: mask and accepts differ on %zu tokens", k, mismatches);
        CHECK(allowed > len, "schema %zu: the mask allowed only %zu tokens in all", k, allowed);
        grammar_state_free(s);
        grammar_free(g);
    }
    grammar_vocab_free(v);
    for (size_t i = 0; i < n; i++)
        free(pieces[i]);
}

int main(void) {
    test_objects();
    test_strings_and_utf8();
    test_numbers_and_types();
    test_enum_const_anyof();
    test_arrays();
    test_recursion();
    test_parts_and_completion();
    test_whitespace_is_bounded();
    test_errors();
    test_mask_matches_accepts();
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
