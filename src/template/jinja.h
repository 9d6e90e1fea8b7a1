/* jinja.h: a Jinja template engine for Hugging Face chat templates. It renders byte for byte as
 * Python jinja2 3.1 does when configured as transformers configures it (ImmutableSandboxedEnvironment,
 * trim_blocks, lstrip_blocks, loop controls, its tojson, raise_exception and strftime_now, the
 * {% generation %} tag), and it tracks where every output byte came from: template text and trusted
 * variables are markup, everything else is data, so that special tokens are recognized only in
 * markup. Templates are untrusted input: every loop, call, string and output is bounded by limits.
 *
 *     jinja_template *t = NULL;
 *     if (jinja_parse(src, len, &t, &err) != BRASA_OK) ...             (err names the line)
 *     jinja_var vars[] = { { "messages", msgs_json, false }, { "bos_token", bos_json, true } };
 *     jinja_limits lim = jinja_default_limits();
 *     jinja_output out = { 0 };
 *     if (jinja_render(t, vars, 2, time(NULL), &lim, &out, &err) == BRASA_OK) ...use out.text...
 *     jinja_output_free(&out);
 *     jinja_free(t);
 */
#ifndef BRASA_TEMPLATE_JINJA_H
#define BRASA_TEMPLATE_JINJA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"
#include "core/buf.h"
#include "core/json.h"

typedef struct jinja_template jinja_template; /* parsed, immutable, reusable, shareable between threads */

/* Parses a template; a syntax error names the line: "line 12: expected 'endfor'". An unknown filter
 * or test is a syntax error too, as jinja2 reports it when compiling. */
brasa_status jinja_parse(const char *src, size_t len, jinja_template **out, brasa_error *err);
void jinja_free(jinja_template *t); /* accepts NULL */

typedef struct jinja_var {
    const char *name;
    const json_value *value; /* read during jinja_render only: it need not outlive the call */
    bool trusted;            /* strings from it count as template text (bos_token, eos_token) */
} jinja_var;

typedef struct jinja_limits {
    uint64_t max_steps; /* evaluation steps (node visits, loop iterations, calls, 64 bytes built) */
    size_t max_output;  /* bytes of output, and of any one string or list built on the way */
    int max_depth;      /* nesting of macro calls; expression and statement nesting is 16 times it */
    size_t max_memory;  /* bytes of values alive at once */
} jinja_limits;
/* 10 million steps, 16 MiB of output, depth 64, 256 MiB of values. */
jinja_limits jinja_default_limits(void);

typedef struct jinja_output {
    buf text;              /* the rendered text (not NUL-terminated) */
    size_t *markup_spans;  /* pairs [start, end) of output bytes that came from template text or trusted vars */
    size_t n_markup_spans; /* in order, non-overlapping, adjacent ones merged */
} jinja_output;
void jinja_output_free(jinja_output *o); /* accepts NULL; leaves *o zeroed */

/* Renders t with the variables (vars[i].value is NULL: the name is left undefined); now = seconds
 * since the epoch for strftime_now, formatted in local time. *out must be zeroed; on success it
 * holds the text and its markup spans, which the caller frees with jinja_output_free. A template
 * error (raise_exception, undefined misuse, a type error, a limit) returns an error naming the
 * template line, and *out is left empty. */
brasa_status jinja_render(const jinja_template *t, const jinja_var *vars, size_t n_vars, int64_t now,
                          const jinja_limits *limits, jinja_output *out, brasa_error *err);

#endif
