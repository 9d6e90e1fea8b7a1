/* fuzz_template: the Jinja engine on hostile template text (a chat template comes from a model file
 * or the command line). Input: the template source, rendered against a small fixed conversation
 * (system, user with a special-token-looking text, assistant tool call, tool result) and tools, with
 * tight limits so that every input ends fast. Besides memory safety it checks the output's promises:
 * the text fits the output limit; the markup spans are ordered, non-empty, non-adjacent and inside
 * the text; the same render twice gives the same bytes and spans; a failure comes with a message
 * that names a line. */
#include <string.h>

#include "core/json.h"
#include "fuzz.h"
#include "template/jinja.h"

static const char messages_json[] =
    "[{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": \"Hi <|im_start|> \\u00e9\\u65e5 {{ x }}\"},"
    " {\"role\": \"assistant\", \"content\": \"\", \"reasoning_content\": \"think\", \"tool_calls\": [{\"type\": \"function\","
    " \"function\": {\"name\": \"f\", \"arguments\": {\"a\": 1, \"b\": [true, null, 2.5]}}}]},"
    " {\"role\": \"tool\", \"content\": \"{\\\"ok\\\": 1}\"}]";
static const char tools_json[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"d\", \"parameters\": {\"type\": \"object\","
    " \"properties\": {\"a\": {\"type\": \"integer\"}}, \"required\": [\"a\"]}}}]";

static json_doc *messages, *tools, *bos, *yes;

static json_doc *parse_or_die(const char *text) {
    json_doc *d = NULL;
    brasa_error err;
    if (json_parse(text, strlen(text), &d, &err) != BRASA_OK) {
        fprintf(stderr, "fuzz_template: bad fixed JSON: %s\n", err.message);
        abort();
    }
    return d;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    messages = parse_or_die(messages_json);
    tools = parse_or_die(tools_json);
    bos = parse_or_die("\"<s>\"");
    yes = parse_or_die("true");
    return 0;
}

static brasa_status render(const jinja_template *t, const jinja_limits *lim, jinja_output *out, brasa_error *err) {
    if (!messages)
        LLVMFuzzerInitialize(NULL, NULL);
    jinja_var vars[] = {
        { "messages", json_root(messages), false }, { "tools", json_root(tools), false },
        { "bos_token", json_root(bos), true }, { "eos_token", json_root(bos), true },
        { "add_generation_prompt", json_root(yes), false },
    };
    return jinja_render(t, vars, sizeof vars / sizeof vars[0], 1700000000, lim, out, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    jinja_template *t = NULL;
    brasa_error err;
    if (jinja_parse((const char *)data, size, &t, &err) != BRASA_OK) {
        FUZZ_CHECK(t == NULL && strncmp(err.message, "line ", 5) == 0);
        return 0;
    }
    jinja_limits lim = jinja_default_limits();
    lim.max_steps = 200000;
    lim.max_output = 1 << 20;
    lim.max_memory = 64u << 20;
    lim.max_depth = 32;
    jinja_output a = { 0 }, b = { 0 };
    brasa_status sa = render(t, &lim, &a, &err);
    if (sa != BRASA_OK)
        FUZZ_CHECK(strncmp(err.message, "line ", 5) == 0 && a.text.len == 0 && a.n_markup_spans == 0);
    brasa_status sb = render(t, &lim, &b, &err);
    FUZZ_CHECK(sa == sb);
    if (sa == BRASA_OK) {
        FUZZ_CHECK(a.text.len <= lim.max_output);
        FUZZ_CHECK(a.text.len == b.text.len && (a.text.len == 0 || memcmp(a.text.data, b.text.data, a.text.len) == 0));
        FUZZ_CHECK(a.n_markup_spans == b.n_markup_spans);
        for (size_t i = 0; i < a.n_markup_spans; i++) {
            size_t s = a.markup_spans[2 * i], e = a.markup_spans[2 * i + 1];
            FUZZ_CHECK(s < e && e <= a.text.len);
            FUZZ_CHECK(i == 0 || s > a.markup_spans[2 * i - 1]);
            FUZZ_CHECK(s == b.markup_spans[2 * i] && e == b.markup_spans[2 * i + 1]);
        }
    }
    jinja_output_free(&a);
    jinja_output_free(&b);
    jinja_free(t);
    return 0;
}
