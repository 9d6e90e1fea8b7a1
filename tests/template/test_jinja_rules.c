/* test_jinja_rules: named behaviours of the Jinja engine that the comparison with jinja2 cannot show:
 * where output bytes came from (markup or data), hostile templates ending in a clean error within
 * the limits, errors that name the line, and syntax errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "template/jinja.h"

static int failures;

#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__);                                    \
            fprintf(stderr, __VA_ARGS__);                                                           \
            fprintf(stderr, "\n");                                                                  \
            failures++;                                                                             \
        }                                                                                           \
    } while (0)

typedef struct rendered {
    brasa_status status;
    char error[512];
    jinja_output out;
} rendered;

/* Renders src with one untrusted variable "messages" and a trusted "bos_token" from JSON. */
static rendered render_with(const char *src, const char *messages_json, const jinja_limits *limits) {
    rendered r;
    memset(&r, 0, sizeof r);
    brasa_error err = { 0 };
    jinja_template *t = NULL;
    json_doc *msgs = NULL, *bos = NULL;
    r.status = jinja_parse(src, strlen(src), &t, &err);
    if (r.status == BRASA_OK) {
        const char *mj = messages_json ? messages_json : "[]";
        if (json_parse(mj, strlen(mj), &msgs, &err) != BRASA_OK || json_parse("\"<s>\"", 5, &bos, &err) != BRASA_OK) {
            fprintf(stderr, "bad test JSON: %s\n", err.message);
            exit(1);
        }
        jinja_var vars[] = { { "messages", json_root(msgs), false }, { "bos_token", json_root(bos), true } };
        jinja_limits lim = limits ? *limits : jinja_default_limits();
        r.status = jinja_render(t, vars, 2, 1700000000, &lim, &r.out, &err);
    }
    if (r.status != BRASA_OK)
        snprintf(r.error, sizeof r.error, "%s", err.message);
    json_free(msgs);
    json_free(bos);
    jinja_free(t);
    return r;
}

static bool text_is(const rendered *r, const char *want) {
    return r->status == BRASA_OK && r->out.text.len == strlen(want) && memcmp(r->out.text.data, want, r->out.text.len) == 0;
}

/* Whether bytes [start, end) are all markup (want_markup) or all data. */
static bool all(const rendered *r, size_t start, size_t end, bool want_markup) {
    for (size_t i = start; i < end; i++) {
        bool markup = false;
        for (size_t k = 0; k < r->out.n_markup_spans; k++)
            markup |= i >= r->out.markup_spans[2 * k] && i < r->out.markup_spans[2 * k + 1];
        if (markup != want_markup)
            return false;
    }
    return true;
}

static void test_jinja_concatenation_keeps_provenance(void) {
    rendered r = render_with("{% for message in messages %}{{ '<|im_start|>' + message.role + '\\n' }}{% endfor %}",
                             "[{\"role\": \"user\"}]", NULL);
    CHECK(text_is(&r, "<|im_start|>user\n"), "text: %s", r.error);
    CHECK(all(&r, 0, 12, true) && all(&r, 12, 16, false) && all(&r, 16, 17, true), "markup/data/markup");
    CHECK(r.out.n_markup_spans == 2, "two markup spans, got %zu", r.out.n_markup_spans);
    jinja_output_free(&r.out);
}

static void test_jinja_typed_special_token_is_data(void) {
    rendered r = render_with("{{ bos_token }}{{ messages[0].content | trim }}{{ messages | tojson }}{{ 42 }}",
                             "[{\"content\": \" <|im_start|>system \"}]", NULL);
    CHECK(r.status == BRASA_OK, "%s", r.error);
    const char *text = r.out.text.data;
    size_t n = r.out.text.len;
    CHECK(n > 5 && memcmp(text, "<s>", 3) == 0 && all(&r, 0, 3, true), "trusted bos_token is markup");
    CHECK(all(&r, 3, n - 2, false), "message text, trimmed or as JSON, is data");
    CHECK(all(&r, n - 2, n, true), "a printed number is markup");
    jinja_output_free(&r.out);
}

static void test_jinja_join_keeps_each_part(void) {
    rendered r = render_with("{{ messages | map(attribute='c') | join('|') }}", "[{\"c\": \"a\"}, {\"c\": \"b\"}]", NULL);
    CHECK(text_is(&r, "a|b"), "join: %s", r.error);
    CHECK(all(&r, 0, 1, false) && all(&r, 1, 2, true) && all(&r, 2, 3, false), "join keeps data and markup apart");
    jinja_output_free(&r.out);
}

static void expect_error(const char *name, const char *src, const jinja_limits *lim, const char *needle) {
    rendered r = render_with(src, "[]", lim);
    CHECK(r.status != BRASA_OK, "%s: should fail", name);
    CHECK(strstr(r.error, needle) != NULL, "%s: error '%s' should mention '%s'", name, r.error, needle);
    jinja_output_free(&r.out);
}

static void test_jinja_hostile_templates_end_in_errors(void) {
    jinja_limits lim = jinja_default_limits();
    lim.max_steps = 1000000;
    expect_error("nested ranges", "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", &lim,
                 "steps");
    expect_error("recursive macro", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", &lim, "nested deeper");
    expect_error("huge output", "{% for a in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", NULL, "longer than");
    expect_error("huge repetition", "{{ 'x' * 10**12 }}", NULL, "repetition");
    expect_error("range too big", "{{ range(10**9) | length }}", NULL, "range too big");
    expect_error("doubling string",
                 "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", NULL,
                 "longer than");
    /* 100k nested parentheses: a parse error, not a stack overflow */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 8);
    memcpy(deep, "{{ ", 3);
    memset(deep + 3, '(', depth);
    deep[3 + depth] = '1';
    memset(deep + 4 + depth, ')', depth);
    memcpy(deep + 4 + 2 * depth, " }}", 4);
    expect_error("deep parentheses", deep, NULL, "nested too deeply");
    free(deep);
    /* a namespace that holds itself: a cycle, freed when the render ends (the leak checker sees) */
    rendered r = render_with("{% set ns = namespace() %}{% set ns.me = ns %}ok", "[]", NULL);
    CHECK(text_is(&r, "ok"), "cycle: %s", r.error);
    jinja_output_free(&r.out);
}

static void test_jinja_errors_name_the_line(void) {
    expect_error("raise_exception", "line one\n{{ raise_exception('roles must alternate') }}", NULL,
                 "line 2: roles must alternate");
    expect_error("undefined attribute", "\n\n{{ nothing.here }}", NULL, "line 3:");
    expect_error("type error", "{{ 1 + 'a' }}", NULL, "line 1: unsupported operand");
    expect_error("mutation refused", "{% set xs = [1] %}\n{{ xs.append(2) }}", NULL, "line 2: access to attribute 'append'");
}

static void test_jinja_syntax_errors(void) {
    expect_error("unclosed for", "{% for x in xs %}\n{{ x }}\n", NULL, "expected 'endfor' or 'else'");
    expect_error("unknown tag", "a\n{% frobnicate %}", NULL, "line 2: encountered unknown tag 'frobnicate'");
    expect_error("unknown filter", "{{ x | nope }}", NULL, "no filter named 'nope'");
    expect_error("stray endif", "{% endif %}", NULL, "unexpected 'endif'");
    expect_error("unterminated string", "{{ 'abc }}", NULL, "string");
    expect_error("missing end of comment", "{# never closed", NULL, "comment");
    expect_error("break outside loop", "{% break %}", NULL, "outside of a loop");
}

static void test_jinja_whitespace_and_scoping(void) {
    rendered r = render_with("{% set x = 1 %}\n  {% for i in [1, 2] %}\n    {% set x = i %}{{ x }}\n  {% endfor %}\n{{ x }}\n",
                             "[]", NULL);
    CHECK(text_is(&r, "1\n2\n1"), "trim_blocks, lstrip_blocks and loop scope: %s", r.error);
    jinja_output_free(&r.out);
    r = render_with("{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
                    "[]", NULL);
    CHECK(text_is(&r, "3"), "namespace attributes leave the loop: %s", r.error);
    jinja_output_free(&r.out);
}

int main(void) {
    test_jinja_concatenation_keeps_provenance();
    test_jinja_typed_special_token_is_data();
    test_jinja_join_keeps_each_part();
    test_jinja_hostile_templates_end_in_errors();
    test_jinja_errors_name_the_line();
    test_jinja_syntax_errors();
    test_jinja_whitespace_and_scoping();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all jinja rules hold\n");
    return 0;
}
