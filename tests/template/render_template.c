/* render_template: renders Jinja chat templates with brasa's engine, for the test that compares it
 * with Python jinja2.
 *
 * Usage: render_template TEMPLATE CONTEXT.json
 *        render_template --batch CASES.json
 * CONTEXT is {"vars": {...}, "trusted": ["bos_token", ...], "now": 1700000000}. The single form
 * prints the rendered text to stdout (exit 0) or the error to stderr (exit 1). The batch form takes
 * a JSON array of contexts, each with "template": a file path, and prints one JSON line per case:
 * {"ok": true, "text": "...", "markup": [[start, end], ...]} or {"ok": false, "error": "..."}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "template/jinja.h"

#define MAX_VARS 64

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    buf b = { 0 };
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (!buf_append(&b, chunk, n)) {
            fclose(f);
            buf_free(&b);
            return NULL;
        }
    fclose(f);
    if (!buf_append(&b, "", 1)) {
        buf_free(&b);
        return NULL;
    }
    *len = b.len - 1;
    return b.data;
}

static bool is_trusted(const json_value *ctx, const char *name, size_t len) {
    const json_value *t = json_get(ctx, "trusted");
    for (size_t i = 0; t && t->type == JSON_ARRAY && i < t->len; i++)
        if (t->items[i].type == JSON_STRING && t->items[i].len == len && memcmp(t->items[i].str, name, len) == 0)
            return true;
    return false;
}

/* Renders one context; on success out holds the text. */
static brasa_status render(const jinja_template *t, const json_value *ctx, jinja_output *out, brasa_error *err) {
    jinja_var vars[MAX_VARS];
    size_t n = 0;
    const json_value *v = json_get(ctx, "vars");
    for (size_t i = 0; v && v->type == JSON_OBJECT && i < v->len && n < MAX_VARS; i++) {
        vars[n].name = v->keys[i].str;
        vars[n].value = &v->items[i];
        vars[n].trusted = is_trusted(ctx, v->keys[i].str, v->keys[i].len);
        n++;
    }
    const json_value *now = json_get(ctx, "now");
    jinja_limits limits = jinja_default_limits();
    return jinja_render(t, vars, n, now && now->type == JSON_NUMBER ? (int64_t)now->number : 0, &limits, out, err);
}

static int run_single(const char *template_path, const char *context_path) {
    size_t tlen, clen;
    char *src = read_file(template_path, &tlen), *ctx_text = read_file(context_path, &clen);
    if (!src || !ctx_text) {
        fprintf(stderr, "render_template: cannot read %s\n", !src ? template_path : context_path);
        free(src);
        free(ctx_text);
        return 2;
    }
    brasa_error err;
    json_doc *doc = NULL;
    jinja_template *t = NULL;
    jinja_output out = { 0 };
    int rc = 1;
    if (json_parse(ctx_text, clen, &doc, &err) == BRASA_OK && jinja_parse(src, tlen, &t, &err) == BRASA_OK &&
        render(t, json_root(doc), &out, &err) == BRASA_OK) {
        fwrite(out.text.data, 1, out.text.len, stdout);
        rc = 0;
    } else {
        fprintf(stderr, "%s\n", err.message);
    }
    jinja_output_free(&out);
    jinja_free(t);
    json_free(doc);
    free(src);
    free(ctx_text);
    return rc;
}

static void print_json_string(const char *s, size_t n) {
    buf b = { 0 };
    if (json_write_string(&b, s, n))
        fwrite(b.data, 1, b.len, stdout);
    buf_free(&b);
}

static int run_batch(const char *cases_path) {
    size_t len;
    char *text = read_file(cases_path, &len);
    if (!text) {
        fprintf(stderr, "render_template: cannot read %s\n", cases_path);
        return 2;
    }
    brasa_error err;
    json_doc *doc = NULL;
    if (json_parse(text, len, &doc, &err) != BRASA_OK || json_root(doc)->type != JSON_ARRAY) {
        fprintf(stderr, "render_template: %s: %s\n", cases_path, doc ? "expected an array" : err.message);
        json_free(doc);
        free(text);
        return 2;
    }
    const json_value *cases = json_root(doc);
    const char *cached_path = NULL;
    jinja_template *t = NULL;
    brasa_error parse_err = { 0 };
    brasa_status parse_st = BRASA_OK;
    for (size_t i = 0; i < cases->len; i++) {
        const json_value *c = &cases->items[i], *path = json_get(c, "template");
        if (!path || path->type != JSON_STRING) {
            printf("{\"ok\": false, \"error\": \"case without a template\"}\n");
            continue;
        }
        if (!cached_path || strcmp(cached_path, path->str) != 0) {
            jinja_free(t);
            t = NULL;
            size_t tlen;
            char *src = read_file(path->str, &tlen);
            parse_st = src ? jinja_parse(src, tlen, &t, &parse_err) : BRASA_ERR_IO;
            if (!src)
                snprintf(parse_err.message, sizeof parse_err.message, "cannot read %s", path->str);
            free(src);
            cached_path = path->str;
        }
        jinja_output out = { 0 };
        if (parse_st != BRASA_OK) {
            printf("{\"ok\": false, \"error\": ");
            print_json_string(parse_err.message, strlen(parse_err.message));
            printf("}\n");
        } else if (render(t, c, &out, &err) != BRASA_OK) {
            printf("{\"ok\": false, \"error\": ");
            print_json_string(err.message, strlen(err.message));
            printf("}\n");
        } else {
            printf("{\"ok\": true, \"text\": ");
            print_json_string(out.text.data ? out.text.data : "", out.text.len);
            printf(", \"markup\": [");
            for (size_t k = 0; k < out.n_markup_spans; k++)
                printf("%s[%zu, %zu]", k ? ", " : "", out.markup_spans[2 * k], out.markup_spans[2 * k + 1]);
            printf("]}\n");
        }
        jinja_output_free(&out);
    }
    jinja_free(t);
    json_free(doc);
    free(text);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--batch") == 0)
        return run_batch(argv[2]);
    if (argc == 3)
        return run_single(argv[1], argv[2]);
    fprintf(stderr, "usage: render_template TEMPLATE CONTEXT.json | render_template --batch CASES.json\n");
    return 2;
}
