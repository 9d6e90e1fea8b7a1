/* api_ollama.c: Ollama's API (see api.h and Ollama's docs/api.md): /api/chat and /api/generate
 * (NDJSON streams by default, one object with "stream": false), /api/embed, /api/tags, /api/ps,
 * /api/show and /api/version, with errors as {"error": "..."}. Requests are translated into the
 * chat templates' shape: /api/generate's prompt (and system) become a chat unless "raw" is set, as
 * Ollama templates them. Sampling follows Ollama's defaults (temperature 0.8, top_k 40, top_p 0.9,
 * repeat_penalty 1.1 over the last 64 tokens) and its options; options that only tune loading
 * (num_gpu, num_thread, use_mmap, ...) are the server's flags here and accepted as hints, while
 * sampling methods brasa lacks (mirostat, tfs_z, typical_p) are refused unless off. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api_shared.h"

static bool is_generate(const api_endpoint *ep) {
    return strcmp(ep->path, "/api/generate") == 0;
}

/* A Go duration ("5m", "1h30m", "300ms"), a number of seconds, or either as text; negative: forever. */
static bool parse_keep_alive(const cJSON *v, double *out) {
    if (!v || cJSON_IsNull(v))
        return true;
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
        *out = v->valuedouble < 0 ? 1e18 : v->valuedouble;
        return true;
    }
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return false;
    char *end;
    const double plain = strtod(v->valuestring, &end);
    if (*end == '\0' && isfinite(plain)) {
        *out = plain < 0 ? 1e18 : plain;
        return true;
    }
    static const struct { const char *unit; double seconds; } units[] = {
        { "ns", 1e-9 }, { "us", 1e-6 }, { "ms", 1e-3 }, { "s", 1 }, { "m", 60 }, { "h", 3600 },
    };
    const char *p = v->valuestring;
    const bool negative = *p == '-';
    p += negative;
    double total = 0;
    while (*p) {
        const double n = strtod(p, &end);
        if (end == p || !isfinite(n) || n < 0)
            return false;
        p = end;
        size_t u = 0;
        while (u < sizeof units / sizeof units[0] && strncmp(p, units[u].unit, strlen(units[u].unit)) != 0)
            u++;
        if (u == sizeof units / sizeof units[0])
            return false;
        total += n * units[u].seconds;
        p += strlen(units[u].unit);
    }
    *out = negative ? 1e18 : total;
    return true;
}

/* Options that tune loading and threads: the server's flags decide them here, so they are taken as
 * hints. */
static const char *const load_hints[] = { "numa", "num_batch", "num_gpu", "main_gpu", "low_vram", "f16_kv",
                                          "logits_all", "vocab_only", "use_mmap", "use_mlock", "embedding_only",
                                          "num_thread", "num_keep", "penalize_newline" };

static bool is_load_hint(const char *key) {
    for (size_t i = 0; i < sizeof load_hints / sizeof load_hints[0]; i++)
        if (strcmp(key, load_hints[i]) == 0)
            return true;
    return false;
}

/* options: the sampling ones into r, num_ctx and num_predict as limits, the load-time ones taken
 * as hints (this server's flags decide them), unsupported methods refused when turned on. */
static bool parse_options(const cJSON *opts, api_request *r, char *message, size_t size, const char **param) {
    if (!opts || cJSON_IsNull(opts))
        return true;
    if (!cJSON_IsObject(opts))
        return api_fail(message, size, param, "options", "'%s' must be an object", NULL);
    static const struct { const char *key, *label; double off; } unsupported[] = {
        { "mirostat", "options.mirostat", 0 }, { "tfs_z", "options.tfs_z", 1 }, { "typical_p", "options.typical_p", 1 },
        { "mirostat_tau", NULL, 0 }, { "mirostat_eta", NULL, 0 },
    };
    static const char *const known[] = { "temperature", "top_k", "top_p", "min_p", "seed", "num_ctx", "num_predict",
                                         "stop", "repeat_penalty", "repeat_last_n", "presence_penalty",
                                         "frequency_penalty" };
    const cJSON *o;
    cJSON_ArrayForEach(o, opts) {
        bool ok = is_load_hint(o->string);
        for (size_t i = 0; !ok && i < sizeof known / sizeof known[0]; i++)
            ok = strcmp(o->string, known[i]) == 0;
        for (size_t i = 0; !ok && i < sizeof unsupported / sizeof unsupported[0]; i++) {
            if (strcmp(o->string, unsupported[i].key) != 0)
                continue;
            ok = !unsupported[i].label || cJSON_IsNull(o) || (cJSON_IsNumber(o) && o->valuedouble == unsupported[i].off);
            if (!ok) {
                snprintf(message, size, "'%s' is a sampling method brasa does not have: leave it out (or %g)",
                         unsupported[i].label, unsupported[i].off);
                *param = unsupported[i].label;
                return false;
            }
        }
        if (!ok) {
            snprintf(message, size, "'options.%.64s' is not an option brasa knows", o->string);
            *param = "options";
            return false;
        }
    }
    int64_t v = 0;
    bool present = false;
    brasa_sampler_params *sp = &r->sampling;
    if (!api_get_float(opts, "temperature", "options.temperature", 0, 100, false, &sp->temperature, message, size, param) ||
        !api_get_float(opts, "top_p", "options.top_p", 0, 1, false, &sp->top_p, message, size, param) ||
        !api_get_float(opts, "min_p", "options.min_p", 0, 1, false, &sp->min_p, message, size, param) ||
        !api_get_float(opts, "repeat_penalty", "options.repeat_penalty", 0, 100, false, &sp->repeat_penalty, message,
                       size, param) ||
        !api_get_float(opts, "presence_penalty", "options.presence_penalty", -100, 100, false, &sp->presence_penalty,
                       message, size, param) ||
        !api_get_float(opts, "frequency_penalty", "options.frequency_penalty", -100, 100, false,
                       &sp->frequency_penalty, message, size, param))
        return false;
    if (sp->top_p == 0)
        sp->top_p = 1; /* Ollama reads 0 as off */
    if (!api_get_int(opts, "top_k", "options.top_k", 0, INT32_MAX, &v, &present, message, size, param))
        return false;
    if (present)
        sp->top_k = (int32_t)v;
    if (!api_get_int(opts, "repeat_last_n", "options.repeat_last_n", -1, INT32_MAX, &v, &present, message, size, param))
        return false;
    if (present)
        sp->penalty_last_n = v == -1 ? INT32_MAX : (int32_t)v; /* -1: the whole context */
    if (!api_get_int(opts, "seed", "options.seed", INT64_MIN / 2, INT64_MAX / 2, &v, &present, message, size, param))
        return false;
    if (present)
        sp->seed = v < 0 ? BRASA_SEED_RANDOM : (uint64_t)v;
    if (!api_get_int(opts, "num_ctx", "options.num_ctx", 1, INT32_MAX, &v, &present, message, size, param))
        return false;
    if (present)
        r->ctx_limit = (int32_t)v;
    if (!api_get_int(opts, "num_predict", "options.num_predict", -2, INT32_MAX, &v, &present, message, size, param))
        return false;
    if (present && v > 0)
        r->max_tokens = (int32_t)v;
    if (present && v == 0) {
        snprintf(message, size, "'options.num_predict' 0 generates nothing: give a positive count, or -1 for no limit");
        *param = "options.num_predict";
        return false;
    }
    return api_get_stop(cJSON_GetObjectItemCaseSensitive(opts, "stop"), "options.stop", API_MAX_STOP, r, message, size,
                        param);
}

/* Ollama's messages hold images as base64 and tool calls with their arguments as objects; the
 * templates take the latter as they are. */
static bool check_no_images(const cJSON *msgs, char *message, size_t size, const char **param) {
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const cJSON *images = cJSON_GetObjectItemCaseSensitive(m, "images");
        if (images && !cJSON_IsNull(images) && !(cJSON_IsArray(images) && cJSON_GetArraySize(images) == 0))
            return api_fail(message, size, param, "messages",
                            "'%s' holds images, and brasa runs text models only: send text", NULL);
    }
    return true;
}

static bool ollama_parse(const api_endpoint *ep, const char *body, size_t len, api_request *r, char *message,
                         size_t size, const char **param) {
    memset(r, 0, sizeof *r);
    *param = NULL;
    r->kind = API_CHAT;
    r->keep_alive = -1;
    r->logprobs = -1;
    r->enable_thinking = r->show_thinking = true;
    r->stream = true; /* Ollama streams unless told not to */
    r->parallel_tool_calls = true;
    r->sampling = brasa_sampler_default_params();
    r->sampling.temperature = 0.8f;
    r->sampling.top_k = 40;
    r->sampling.top_p = 0.9f;
    r->sampling.min_p = 0.0f;
    r->sampling.repeat_penalty = 1.1f;
    r->sampling.penalty_last_n = 64;
    const cJSON *root = api_body_object(body, len, &r->json, message, size);
    if (!root)
        return false;
    api_owned *own = r->json;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsString(model) || !model->valuestring[0])
        return api_fail(message, size, param, "model", "'%s' is required: the name of a model", NULL);
    r->model = model->valuestring;
    if (!api_get_bool(root, "stream", NULL, &r->stream, message, size, param))
        return false;
    if (!parse_keep_alive(cJSON_GetObjectItemCaseSensitive(root, "keep_alive"), &r->keep_alive))
        return api_fail(message, size, param, "keep_alive",
                        "'%s' must be a duration (\"5m\", \"1h\", \"-1\") or a number of seconds", NULL);
    const cJSON *think = cJSON_GetObjectItemCaseSensitive(root, "think");
    if (think && !cJSON_IsNull(think)) {
        /* an explicit choice reaches the template as enable_thinking (some templates read it either way) */
        bool ok = true;
        if (cJSON_IsBool(think)) {
            r->enable_thinking = r->show_thinking = cJSON_IsTrue(think);
            ok = r->enable_thinking ? api_set_kwarg(own, r, "enable_thinking", cJSON_CreateTrue()) : true;
        } else if (cJSON_IsString(think) && (strcmp(think->valuestring, "low") == 0 ||
                                             strcmp(think->valuestring, "medium") == 0 ||
                                             strcmp(think->valuestring, "high") == 0)) {
            /* gpt-oss's reasoning effort, a variable its template reads */
            ok = api_set_kwarg(own, r, "enable_thinking", cJSON_CreateTrue()) &&
                 api_set_kwarg(own, r, "reasoning_effort", cJSON_CreateString(think->valuestring));
        } else {
            return api_fail(message, size, param, "think", "'%s' must be true, false, \"low\", \"medium\" or \"high\"",
                            NULL);
        }
        if (!ok)
            return api_fail(message, size, param, "think", "out of memory", NULL);
    }
    bool want = false;
    int64_t v = 0;
    bool present = false;
    if (!api_get_bool(root, "logprobs", NULL, &want, message, size, param) ||
        !api_get_int(root, "top_logprobs", NULL, 0, API_MAX_TOP_LOGPROBS, &v, &present, message, size, param))
        return false;
    r->logprobs = want ? (int32_t)(present ? v : 0) : -1;
    if (!parse_options(cJSON_GetObjectItemCaseSensitive(root, "options"), r, message, size, param))
        return false;
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (format && !cJSON_IsNull(format) && !(cJSON_IsString(format) && format->valuestring[0] == '\0')) {
        if (cJSON_IsString(format) && strcmp(format->valuestring, "json") == 0)
            r->schema_json = "{\"type\":\"object\"}";
        else if (!cJSON_IsObject(format))
            return api_fail(message, size, param, "format", "'%s' must be \"json\" or a JSON Schema object", NULL);
        else if (!api_take_schema(format, "format", r, own, message, size, param))
            return false;
    }
    if (is_generate(ep)) {
        static const char *const refused[] = { "suffix", "template", "context", "images" };
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, refused[i]);
            if (f && !cJSON_IsNull(f) && !(cJSON_IsString(f) && !f->valuestring[0]) &&
                !(cJSON_IsArray(f) && cJSON_GetArraySize(f) == 0))
                return api_fail(message, size, param, refused[i],
                                "'%s' is not supported by brasa (fill-in-the-middle, Go templates, a previous "
                                "context and images are not): send the whole prompt", NULL);
        }
        const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(root, "prompt");
        const cJSON *system = cJSON_GetObjectItemCaseSensitive(root, "system");
        if (prompt && !cJSON_IsNull(prompt) && !cJSON_IsString(prompt))
            return api_fail(message, size, param, "prompt", "'%s' must be a string", NULL);
        if (system && !cJSON_IsNull(system) && !cJSON_IsString(system))
            return api_fail(message, size, param, "system", "'%s' must be a string", NULL);
        if (!api_get_bool(root, "raw", NULL, &r->raw, message, size, param))
            return false;
        if (!cJSON_IsString(prompt) || !prompt->valuestring[0])
            return true; /* a load request */
        if (r->raw) {
            r->kind = API_COMPLETION;
            r->prompt = prompt->valuestring;
            return true;
        }
        /* templated as a chat of the system text and the prompt, as Ollama does */
        cJSON *chat = api_own_tree(own, cJSON_CreateObject());
        cJSON *msgs = chat ? cJSON_AddArrayToObject(chat, "messages") : NULL;
        if (!msgs)
            return api_fail(message, size, param, "prompt", "out of memory", NULL);
        if (cJSON_IsString(system) && system->valuestring[0]) {
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "role", "system");
            api_add_text(m, "content", system->valuestring);
            cJSON_AddItemToArray(msgs, m);
        }
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "user");
        api_add_text(m, "content", prompt->valuestring);
        cJSON_AddItemToArray(msgs, m);
        return api_check_messages(chat, "prompt", r, own, message, size, param);
    }
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!msgs || cJSON_IsNull(msgs) || (cJSON_IsArray(msgs) && cJSON_GetArraySize(msgs) == 0))
        return true; /* a load request */
    if (cJSON_IsArray(msgs) && !check_no_images(msgs, message, size, param))
        return false;
    if (!api_check_messages(root, "messages", r, own, message, size, param) ||
        !api_check_tools(root, r, own, message, size, param))
        return false;
    return true;
}

/* The fields every reply object starts with. */
static cJSON *head(const api_reply *r) {
    cJSON *root = cJSON_CreateObject();
    char when[48];
    api_iso_time((double)r->created, when, sizeof when);
    api_add_text(root, "model", r->model);
    api_add_text(root, "created_at", when);
    return root;
}

static double ns(double seconds) {
    return floor(seconds * 1e9);
}

static cJSON *logprobs_json(const api_message *m) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < m->n_logprobs; i++) {
        const api_token_logprobs *t = &m->logprobs[i];
        cJSON *e = cJSON_CreateObject(), *top = cJSON_CreateArray();
        cJSON_AddItemToObject(e, "token", api_text(t->chosen.text, t->chosen.len));
        cJSON_AddNumberToObject(e, "logprob", isfinite(t->chosen.logprob) ? t->chosen.logprob : -9999.0);
        for (int32_t k = 0; k < t->n_top; k++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToObject(o, "token", api_text(t->top[k].text, t->top[k].len));
            cJSON_AddNumberToObject(o, "logprob", isfinite(t->top[k].logprob) ? t->top[k].logprob : -9999.0);
            cJSON_AddItemToArray(top, o);
        }
        cJSON_AddItemToObject(e, "top_logprobs", top);
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

/* One reply object: a chat's message or a generation's response, done or not. */
static bool write_object(const api_reply *r, const api_message *m, const api_end *end, buf *out) {
    cJSON *root = head(r);
    if (!root)
        return false;
    if (r->kind == API_CHAT) {
        cJSON *msg = cJSON_CreateObject();
        cJSON_AddStringToObject(msg, "role", "assistant");
        cJSON_AddItemToObject(msg, "content", api_text(m->content, m->content_len));
        if (m->reasoning_len)
            cJSON_AddItemToObject(msg, "thinking", api_text(m->reasoning, m->reasoning_len));
        if (m->n_calls) {
            cJSON *calls = cJSON_AddArrayToObject(msg, "tool_calls");
            for (size_t i = 0; i < m->n_calls; i++) {
                cJSON *c = cJSON_CreateObject(), *fn = cJSON_CreateObject();
                cJSON_AddItemToObject(fn, "name", api_text(m->calls[i].name, strlen(m->calls[i].name)));
                cJSON_AddItemToObject(fn, "arguments", api_arguments_object(m->calls[i].arguments));
                cJSON_AddItemToObject(c, "function", fn);
                cJSON_AddItemToArray(calls, c);
            }
        }
        cJSON_AddItemToObject(root, "message", msg);
    } else {
        cJSON_AddItemToObject(root, "response", api_text(m->content, m->content_len));
        if (m->reasoning_len)
            cJSON_AddItemToObject(root, "thinking", api_text(m->reasoning, m->reasoning_len));
    }
    if (m->want_logprobs && m->n_logprobs)
        cJSON_AddItemToObject(root, "logprobs", logprobs_json(m));
    cJSON_AddBoolToObject(root, "done", end != NULL);
    if (end) {
        api_add_text(root, "done_reason", strcmp(end->finish, "tool_calls") == 0 ? "stop" : end->finish);
        cJSON_AddNumberToObject(root, "total_duration", ns(end->total_seconds));
        cJSON_AddNumberToObject(root, "load_duration", ns(end->load_seconds));
        cJSON_AddNumberToObject(root, "prompt_eval_count", end->prompt_tokens);
        cJSON_AddNumberToObject(root, "prompt_eval_duration", ns(end->prompt_seconds));
        cJSON_AddNumberToObject(root, "eval_count", end->completion_tokens);
        cJSON_AddNumberToObject(root, "eval_duration", ns(end->generate_seconds));
    }
    return api_emit(root, "", "", out);
}

static bool ollama_whole(api_reply *r, const api_message *m, const api_end *end, buf *out) {
    return write_object(r, m, end, out);
}

static bool ollama_chunk(api_reply *r, const api_message *m, buf *out) {
    return write_object(r, m, NULL, out) && buf_append(out, "\n", 1);
}

static bool ollama_end(api_reply *r, const api_end *end, buf *out) {
    const api_message none = { 0 };
    return write_object(r, &none, end, out) && buf_append(out, "\n", 1);
}

static bool ollama_error(int status, const char *message, const char *param, const char *code, buf *out) {
    (void)status;
    (void)param;
    (void)code;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return false;
    cJSON_AddItemToObject(root, "error", api_text(message, strlen(message)));
    return api_emit(root, "", "", out);
}

static bool ollama_stream_error(api_reply *r, const char *message, buf *out) {
    (void)r;
    return ollama_error(500, message, NULL, NULL, out) && buf_append(out, "\n", 1);
}

/* {"model", "input": a string or strings, "truncate", "dimensions", "options", "keep_alive"} */
static bool ollama_parse_embed(const char *body, size_t len, api_embed_request *r, char *message, size_t size,
                               const char **param) {
    memset(r, 0, sizeof *r);
    *param = NULL;
    r->keep_alive = -1;
    r->truncate = true;
    const cJSON *root = api_body_object(body, len, &r->json, message, size);
    if (!root)
        return false;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsString(model) || !model->valuestring[0])
        return api_fail(message, size, param, "model", "'%s' is required: the name of a model", NULL);
    r->model = model->valuestring;
    int64_t v = 0;
    bool present = false;
    if (!api_get_bool(root, "truncate", NULL, &r->truncate, message, size, param) ||
        !api_get_int(root, "dimensions", NULL, 1, 65536, &v, &present, message, size, param))
        return false;
    r->dimensions = present ? (int32_t)v : 0;
    if (!parse_keep_alive(cJSON_GetObjectItemCaseSensitive(root, "keep_alive"), &r->keep_alive))
        return api_fail(message, size, param, "keep_alive",
                        "'%s' must be a duration (\"5m\", \"1h\", \"-1\") or a number of seconds", NULL);
    /* an embedding takes no sampling options: only the load-time hints (and num_ctx, the context the
     * model loads with, which the server's flags decide) */
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(root, "options");
    if (opts && !cJSON_IsNull(opts)) {
        if (!cJSON_IsObject(opts))
            return api_fail(message, size, param, "options", "'%s' must be an object", NULL);
        const cJSON *o;
        cJSON_ArrayForEach(o, opts) {
            if (!is_load_hint(o->string) && strcmp(o->string, "num_ctx") != 0) {
                snprintf(message, size, "'options.%.64s' does not apply to embeddings", o->string);
                *param = "options";
                return false;
            }
        }
    }
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(root, "input");
    if (cJSON_IsArray(input)) {
        const cJSON *item;
        cJSON_ArrayForEach(item, input) {
            if (!cJSON_IsString(item))
                return api_fail(message, size, param, "input", "'%s' must be a string or an array of strings", NULL);
        }
    } else if (input && !cJSON_IsString(input) && !cJSON_IsNull(input)) {
        return api_fail(message, size, param, "input", "'%s' must be a string or an array of strings", NULL);
    }
    return api_take_inputs(input, "input", r, r->json, message, size, param);
}

static bool ollama_embeddings(const api_embed_request *rq, const char *model, const float *vectors, size_t n,
                              size_t dim, int32_t prompt_tokens, double seconds, buf *out) {
    (void)rq;
    cJSON *all;
    cJSON *root = api_object_with_array("embeddings", &all);
    if (!root)
        return false;
    api_add_text(root, "model", model);
    for (size_t i = 0; i < n; i++) {
        cJSON_AddItemToArray(all, api_floats(vectors + i * dim, dim));
    }
    cJSON_AddNumberToObject(root, "total_duration", ns(seconds));
    cJSON_AddNumberToObject(root, "load_duration", 0);
    cJSON_AddNumberToObject(root, "prompt_eval_count", prompt_tokens);
    return api_emit(root, "", "", out);
}

/* "134.5M", "1.5B": how Ollama writes a parameter count. */
static void parameter_size(int64_t n, char *out, size_t size) {
    if (n >= 1000000000)
        snprintf(out, size, "%.1fB", (double)n / 1e9);
    else
        snprintf(out, size, "%.1fM", (double)n / 1e6);
}

static cJSON *details(const api_model_info *m) {
    cJSON *d = cJSON_CreateObject(), *families = cJSON_CreateArray();
    const char *family = m->desc ? m->desc->architecture : "";
    char params[32] = "";
    if (m->desc)
        parameter_size(m->desc->n_params, params, sizeof params);
    cJSON_AddStringToObject(d, "parent_model", "");
    cJSON_AddStringToObject(d, "format", "gguf");
    api_add_text(d, "family", family);
    cJSON_AddItemToArray(families, cJSON_CreateString(family));
    cJSON_AddItemToObject(d, "families", families);
    api_add_text(d, "parameter_size", params);
    api_add_text(d, "quantization_level", m->quant ? m->quant : "");
    return d;
}

/* model_info: the GGUF keys Ollama shows, from the model's description. */
static cJSON *model_info_json(const brasa_model_desc *d) {
    cJSON *o = cJSON_CreateObject();
    if (!d)
        return o;
    char key[96];
    api_add_text(o, "general.architecture", d->architecture);
    cJSON_AddNumberToObject(o, "general.parameter_count", (double)d->n_params);
    static const struct { const char *suffix; size_t offset; } keys[] = {
        { "context_length", offsetof(brasa_model_desc, n_ctx_train) },
        { "embedding_length", offsetof(brasa_model_desc, n_embd) },
        { "block_count", offsetof(brasa_model_desc, n_layer) },
        { "feed_forward_length", offsetof(brasa_model_desc, n_ff) },
        { "attention.head_count", offsetof(brasa_model_desc, n_head) },
        { "attention.head_count_kv", offsetof(brasa_model_desc, n_head_kv) },
        { "expert_count", offsetof(brasa_model_desc, n_expert) },
        { "expert_used_count", offsetof(brasa_model_desc, n_expert_used) },
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int32_t v;
        memcpy(&v, (const char *)d + keys[i].offset, sizeof v);
        if (v == 0)
            continue;
        snprintf(key, sizeof key, "%s.%s", d->architecture, keys[i].suffix);
        cJSON_AddNumberToObject(o, key, v);
    }
    cJSON_AddNumberToObject(o, "tokenizer.ggml.vocab_size", d->n_vocab);
    return o;
}

static cJSON *capabilities(const api_model_info *m) {
    cJSON *a = cJSON_CreateArray();
    if (m->embedding) {
        cJSON_AddItemToArray(a, cJSON_CreateString("embedding"));
        return a;
    }
    cJSON_AddItemToArray(a, cJSON_CreateString("completion"));
    if (m->tools)
        cJSON_AddItemToArray(a, cJSON_CreateString("tools"));
    if (m->thinking)
        cJSON_AddItemToArray(a, cJSON_CreateString("thinking"));
    return a;
}

static cJSON *model_entry(api_action action, const api_model_info *m) {
    cJSON *e = cJSON_CreateObject();
    char when[48];
    api_add_text(e, "name", m->name);
    api_add_text(e, "model", m->name);
    if (action == API_RUNNING) {
        api_iso_time(m->expires ? (double)m->expires : 253402300799.0 /* 9999-12-31: never */, when, sizeof when);
        cJSON_AddNumberToObject(e, "size", (double)m->memory_bytes);
        cJSON_AddNumberToObject(e, "size_vram", 0);
        api_add_text(e, "expires_at", when);
        cJSON_AddNumberToObject(e, "context_length", m->n_ctx);
    } else {
        api_iso_time((double)m->modified, when, sizeof when);
        api_add_text(e, "modified_at", when);
        cJSON_AddNumberToObject(e, "size", (double)m->file_bytes);
    }
    cJSON_AddItemToObject(e, "details", details(m));
    return e;
}

static bool ollama_models(api_action action, const api_model_info *models, size_t n, int64_t started, buf *out) {
    (void)started;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return false;
    if (action == API_VERSION) {
        api_add_text(root, "version", BRASA_VERSION_STRING);
        return api_emit(root, "", "", out);
    }
    if (action == API_SHOW && n > 0) {
        const api_model_info *m = &models[0];
        char when[48], params[160];
        api_iso_time((double)m->modified, when, sizeof when);
        cJSON_AddStringToObject(root, "license", "");
        cJSON_AddStringToObject(root, "modelfile", "");
        snprintf(params, sizeof params, "num_ctx %d", m->n_ctx);
        api_add_text(root, "parameters", params);
        api_add_text(root, "template", m->desc && m->desc->chat_template ? m->desc->chat_template : "");
        cJSON_AddItemToObject(root, "details", details(m));
        cJSON_AddItemToObject(root, "model_info", model_info_json(m->desc));
        cJSON_AddItemToObject(root, "capabilities", capabilities(m));
        api_add_text(root, "modified_at", when);
        return api_emit(root, "", "", out);
    }
    cJSON *list = cJSON_AddArrayToObject(root, "models");
    for (size_t i = 0; list && i < n; i++)
        if (action != API_RUNNING || models[i].loaded)
            cJSON_AddItemToArray(list, model_entry(action, &models[i]));
    return api_emit(root, "", "", out);
}

static const api_endpoint ollama_endpoints[] = {
    { "POST", "/api/chat", API_GENERATE, API_CHAT },
    { "POST", "/api/generate", API_GENERATE, API_COMPLETION },
    { "POST", "/api/embed", API_EMBED, API_CHAT },
    { "GET", "/api/tags", API_MODELS, API_CHAT },
    { "GET", "/api/ps", API_RUNNING, API_CHAT },
    { "POST", "/api/show", API_SHOW, API_CHAT },
    { "GET", "/api/version", API_VERSION, API_CHAT },
};

const api_dialect api_ollama = {
    .name = "ollama",
    .endpoints = ollama_endpoints,
    .n_endpoints = sizeof ollama_endpoints / sizeof ollama_endpoints[0],
    .stream_type = "application/x-ndjson",
    .parse = ollama_parse,
    .parse_embed = ollama_parse_embed,
    .whole = ollama_whole,
    .chunk = ollama_chunk,
    .end = ollama_end,
    .stream_error = ollama_stream_error,
    .error = ollama_error,
    .embeddings = ollama_embeddings,
    .models = ollama_models,
};
