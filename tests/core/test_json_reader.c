/* test_json_reader: the library's JSON reader keeps what templates and schemas must see (integers
 * apart from other numbers, member order, escapes, surrogate pairs), rejects malformed input with
 * the line and column, bounds nesting, and writes back compact JSON that reads the same. */
#include <stdio.h>
#include <string.h>

#include "core/json.h"

static int failures;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            failures++;                                                    \
        }                                                                  \
    } while (0)

static json_doc *parse(const char *s) {
    json_doc *d = NULL;
    brasa_error err = { 0 };
    if (json_parse(s, strlen(s), &d, &err) != BRASA_OK)
        return NULL;
    return d;
}

static void expect_error(const char *s, const char *fragment) {
    json_doc *d = NULL;
    brasa_error err = { 0 };
    brasa_status st = json_parse(s, strlen(s), &d, &err);
    CHECK(st != BRASA_OK && d == NULL);
    if (st != BRASA_OK && !strstr(err.message, fragment)) {
        fprintf(stderr, "input %.40s: error '%s' lacks '%s'\n", s, err.message, fragment);
        failures++;
    }
}

static void expect_round_trip(const char *s, const char *compact) {
    json_doc *d = parse(s);
    CHECK(d != NULL);
    if (!d)
        return;
    buf b = { 0 };
    CHECK(json_write(&b, json_root(d)));
    if (b.len != strlen(compact) || memcmp(b.data, compact, b.len) != 0) {
        fprintf(stderr, "write of %s gave %.*s, want %s\n", s, (int)b.len, b.data, compact);
        failures++;
    }
    buf_free(&b);
    json_free(d);
}

int main(void) {
    json_doc *d = parse(" {\"a\": 1, \"b\": 1.0, \"c\": -2e3, \"a\": [true, false, null], \"s\": \"x\\u00e9\\ud83d\\ude00\\n\"} ");
    CHECK(d != NULL);
    if (d) {
        const json_value *r = json_root(d);
        CHECK(r->type == JSON_OBJECT && r->len == 5);
        CHECK(json_get(r, "a")->type == JSON_ARRAY); /* the last of a repeated name, as Python keeps */
        CHECK(json_get(r, "b")->type == JSON_NUMBER && !json_get(r, "b")->is_integer);
        CHECK(r->items[0].is_integer && r->items[0].integer == 1);
        CHECK(json_get(r, "c")->number == -2000.0 && !json_get(r, "c")->is_integer);
        CHECK(json_is_string(json_get(r, "s"), "x\xc3\xa9\xf0\x9f\x98\x80\n"));
        CHECK(json_get(r, "missing") == NULL);
        json_free(d);
    }
    expect_round_trip("{\"k\" : [1, 2.5, \"q\\\"\\\\\\u0001\", {}, []], \"e\": 1e400}", "{\"k\":[1,2.5,\"q\\\"\\\\\\u0001\",{},[]],\"e\":null}");
    expect_round_trip("\"\\ud800x\"", "\"\xef\xbf\xbdx\""); /* a lone surrogate becomes U+FFFD */
    expect_round_trip("123456789012345678901234567890", "1.2345678901234568e+29");
    expect_round_trip("0.1", "0.1");
    expect_round_trip("[-0.0e9, 3.0, 2e0]", "[-0.0,3.0,2.0]"); /* a fraction stays: it would read back an integer */
    buf raw = { 0 };
    CHECK(json_write_string(&raw, "a\xff\xe2\x82z", 5)); /* ill-formed UTF-8: U+FFFD each, still valid JSON */
    CHECK(raw.len == 10 && memcmp(raw.data, "\"a\xef\xbf\xbd\xef\xbf\xbd" "z\"", 10) == 0);
    buf_free(&raw);
    expect_error("{\"a\": 1,\n  \"b\" 2}", "line 2, column 7");
    expect_error("[1, 2", "expected ',' or ']'");
    expect_error("\"abc", "unterminated string");
    expect_error("\"a\x01\"", "control character");
    expect_error("\"\xff\"", "invalid UTF-8");
    expect_error("01", "text after");
    expect_error("[1.]", "digit after '.'");
    expect_error("tru", "expected a value");
    expect_error("", "expected a value");
    expect_error("{1: 2}", "member name");
    expect_error("[1] [2]", "text after");
    char deep[2 * JSON_MAX_DEPTH + 8];
    memset(deep, '[', JSON_MAX_DEPTH + 1);
    memset(deep + JSON_MAX_DEPTH + 1, ']', JSON_MAX_DEPTH + 1);
    deep[2 * JSON_MAX_DEPTH + 2] = 0;
    expect_error(deep, "nested too deeply");
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
