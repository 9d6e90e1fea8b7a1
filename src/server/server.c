/* server.c: the HTTP side of `brasa serve` on libmicrohttpd: routes, the API key, body limits,
 * OpenAI-shaped errors, whole and streamed (server-sent events) replies read from scheduler jobs,
 * reasoning and tool calls kept apart from the answer (reply.c), output held to a JSON Schema or a
 * forced tool call (a brasa_constraint per request), log-probabilities, cancellation when a
 * client goes away, the device lock and the shutdown sequence. */
#include "server/server.h"

#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "brasa.h"
#include "core/buf.h"
#include "core/json.h"
#include "engine/toolcall.h"
#include "platform/platform.h"
#include "server/api.h"
#include "server/metrics.h"
#include "server/reply.h"
#include "server/sched.h"

#define READ_WAIT_SECONDS 0.1
#define DRAIN_SECONDS 30.0
#define FLUSH_SECONDS 5.0 /* after the drain, for replies still being written */

typedef struct server {
    const srv_config *cfg;
    brasa_model *model;
    sched *sched;
    metrics *metrics;
    char model_id[256];
    int64_t started;
    volatile int32_t draining;
    volatile int32_t next_id;
    volatile int32_t open_requests; /* requests whose reply is not yet fully handed to the socket */
} server;

typedef enum route { R_NONE, R_PAGE, R_HEALTH, R_METRICS, R_MODELS, R_CHAT, R_COMPLETIONS } route;

/* One HTTP request, from its first byte to the end of its reply. */
typedef struct conn {
    server *srv;
    route route;
    struct MHD_Connection *mhd;
    buf body;
    bool too_large;
    int status;             /* for the metrics */
    sched_job *job;
    api_reply reply;
    char id[48];
    bool include_usage, first_chunk, ended;
    buf out;                /* SSE bytes not yet handed to the server library */
    size_t out_pos;
    reply rp;               /* the job's text into reasoning, content and tool calls */
    bool rp_ready;
    bool want_logprobs;
    sched_logprobs lp;      /* read from the job, not yet sent */
    api_token_logprobs *lp_api; /* lp as the API writes them, and their tokens' text */
    size_t lp_api_cap;
    buf lp_text;
} conn;

static const char *route_label(route r) {
    return r == R_CHAT ? "chat" : r == R_COMPLETIONS ? "completions" : r == R_MODELS ? "models" : "other";
}

static enum MHD_Result send_bytes(conn *c, int status, const char *type, const char *data, size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    if (status == 405)
        MHD_add_response_header(r, "Allow", c->route == R_CHAT || c->route == R_COMPLETIONS ? "POST, OPTIONS" : "GET, OPTIONS");
    if (status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (status == 503)
        MHD_add_response_header(r, "Retry-After", "1");
    const enum MHD_Result res = MHD_queue_response(c->mhd, (unsigned)status, r);
    MHD_destroy_response(r);
    c->status = status;
    return res;
}

static enum MHD_Result send_error(conn *c, int status, const char *type, const char *param, const char *code,
                                  const char *fmt, ...) {
    char message[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    buf b = { 0 };
    enum MHD_Result res = MHD_NO;
    if (api_error_json(message, type, param, code, &b))
        res = send_bytes(c, status, "application/json", b.data, b.len);
    buf_free(&b);
    return res;
}

/* Compares without an early exit, so the time taken says nothing about where a guess went wrong. */
static bool same_secret(const char *a, const char *b) {
    const size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < lb; i++)
        diff |= (unsigned char)(a[i < la ? i : 0] ^ b[i]);
    return diff == 0;
}

static bool authorized(conn *c) {
    const char *key = c->srv->cfg->api_key;
    if (!key || c->route == R_HEALTH || c->route == R_PAGE)
        return true;
    const char *h = MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND, "Authorization");
    return h && strncmp(h, "Bearer ", 7) == 0 && same_secret(h + 7, key);
}

static const char *finish_name(sched_finish f) {
    return f == SCHED_LENGTH ? "length" : "stop";
}

static bool peer_gone(conn *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c->mhd, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci && plat_socket_peer_closed((int)ci->connect_fd);
}

/* The log-probabilities read so far, as the API writes them (token texts in c->lp_text). */
static bool logprobs_view(conn *c, api_message *m) {
    m->want_logprobs = c->want_logprobs;
    if (!c->want_logprobs || c->lp.len == 0)
        return true;
    if (c->lp.len > c->lp_api_cap) {
        api_token_logprobs *p = realloc(c->lp_api, c->lp.len * sizeof *p);
        if (!p)
            return false;
        c->lp_api = p;
        c->lp_api_cap = c->lp.len;
    }
    /* texts first (the buffer may move while it grows), pointers after */
    c->lp_text.len = 0;
    size_t *at = calloc(c->lp.len * 21, sizeof *at);
    bool ok = at != NULL;
    for (size_t i = 0; ok && i < c->lp.len; i++) {
        const sched_logprob *r = &c->lp.data[i];
        for (int32_t k = -1; ok && k < r->n_top; k++) {
            char piece[256];
            size_t len = 0;
            const brasa_token t = k < 0 ? r->token : r->top[k].token;
            if (brasa_detokenize(c->srv->model, &t, 1, BRASA_DETOKENIZE_SPECIAL, piece, sizeof piece, &len, NULL) != BRASA_OK)
                len = 0;
            at[i * 21 + (size_t)(k + 1)] = c->lp_text.len;
            ok = buf_append(&c->lp_text, piece, len < sizeof piece ? len : 0);
        }
    }
    for (size_t i = 0; ok && i < c->lp.len; i++) {
        const sched_logprob *r = &c->lp.data[i];
        api_token_logprobs *o = &c->lp_api[i];
        const size_t *pos = at + i * 21;
        size_t end = i + 1 < c->lp.len ? at[(i + 1) * 21] : c->lp_text.len;
        for (int32_t k = -1; k < r->n_top; k++) {
            const size_t from = pos[k + 1], to = k + 1 < r->n_top ? pos[k + 2] : end;
            const api_logprob v = { c->lp_text.data + from, to - from, k < 0 ? r->logprob : r->top[k].logprob };
            if (k < 0)
                o->chosen = v;
            else
                o->top[k] = v;
        }
        o->n_top = r->n_top;
    }
    free(at);
    m->logprobs = c->lp_api;
    m->n_logprobs = ok ? c->lp.len : 0;
    return ok;
}

/* An SSE chunk of what came since the last one, when anything did. */
static bool send_parts(conn *c) {
    api_message m;
    reply_take(&c->rp, &m);
    if (!logprobs_view(c, &m))
        return false;
    bool ok = true;
    if (m.content_len || m.reasoning_len || m.n_calls || m.n_logprobs) {
        ok = api_chunk_sse(&c->reply, c->first_chunk, &m, NULL, &c->out);
        c->first_chunk = false;
    }
    reply_taken(&c->rp);
    c->lp.len = 0;
    return ok;
}

static const char *finish_reason(const conn *c, sched_finish f) {
    return f == SCHED_STOP && c->rp.n_calls > 0 ? "tool_calls" : finish_name(f);
}

/* The streamed reply: SSE events made from the job's text as it arrives. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *dst, size_t max) {
    (void)pos;
    conn *c = cls;
    server *s = c->srv;
    while (c->out_pos == c->out.len) {
        c->out.len = c->out_pos = 0;
        if (c->ended)
            return MHD_CONTENT_READER_END_OF_STREAM;
        buf text = { 0 };
        sched_progress pr;
        if (!sched_job_read(s->sched, c->job, READ_WAIT_SECONDS, &text, c->want_logprobs ? &c->lp : NULL, &pr)) {
            buf_free(&text);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        bool ok = reply_push(&c->rp, text.data, text.len);
        if (pr.finish != SCHED_RUNNING)
            ok = reply_finish(&c->rp) && ok;
        ok = ok && send_parts(c);
        buf_free(&text);
        if (pr.finish == SCHED_FAILED || pr.finish == SCHED_CANCELLED) {
            const char *msg = pr.finish == SCHED_FAILED ? pr.error : "the server is shutting down";
            ok = ok && buf_append(&c->out, "data: ", 6) &&
                 api_error_json(msg, pr.finish == SCHED_FAILED ? "server_error" : "unavailable", NULL, NULL, &c->out) &&
                 buf_append(&c->out, "\n\ndata: [DONE]\n\n", 16);
            c->ended = true;
        } else if (pr.finish != SCHED_RUNNING) {
            const api_message none = { .want_logprobs = c->want_logprobs };
            ok = ok && api_chunk_sse(&c->reply, c->first_chunk, &none, finish_reason(c, pr.finish), &c->out);
            if (c->include_usage)
                ok = ok && api_usage_sse(&c->reply, pr.n_prompt, pr.n_generated, &c->out);
            ok = ok && buf_append(&c->out, "data: [DONE]\n\n", 14);
            c->ended = true;
        } else if (c->out.len == 0 && peer_gone(c)) {
            sched_job_cancel(s->sched, c->job);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (!ok)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    const size_t n = c->out.len - c->out_pos < max ? c->out.len - c->out_pos : max;
    memcpy(dst, c->out.data + c->out_pos, n);
    c->out_pos += n;
    return (ssize_t)n;
}

/* Turns a checked request into prompt tokens; false after sending the error. */
static bool request_tokens(conn *c, const api_request *rq, const brasa_chat_params *cp, brasa_token **tokens, size_t *n,
                           enum MHD_Result *res) {
    server *s = c->srv;
    const size_t cap = (size_t)s->cfg->ctx + 1;
    *tokens = malloc(cap * sizeof **tokens);
    if (!*tokens) {
        *res = send_error(c, 503, "unavailable", NULL, NULL, "out of memory");
        return false;
    }
    brasa_error err;
    brasa_status st;
    if (rq->kind == API_CHAT)
        st = brasa_chat_tokenize_json(s->model, rq->messages_json, strlen(rq->messages_json), cp, *tokens, cap, n, &err);
    else
        st = brasa_tokenize(s->model, rq->prompt, strlen(rq->prompt), BRASA_TOKENIZE_ADD_BOS, *tokens, cap, n, &err);
    if (st == BRASA_OK && *n >= (size_t)s->cfg->ctx)
        st = BRASA_ERR_BUFFER_TOO_SMALL;
    if (st == BRASA_ERR_BUFFER_TOO_SMALL) {
        *res = send_error(c, 400, "invalid_request_error", rq->kind == API_CHAT ? "messages" : "prompt",
                          "context_length_exceeded",
                          "the prompt is %zu tokens, but this server's context holds %d (including the reply): "
                          "shorten it or start the server with a larger --ctx", *n, s->cfg->ctx);
        return false;
    }
    if (st != BRASA_OK) {
        *res = send_error(c, 400, "invalid_request_error", rq->kind == API_CHAT ? "messages" : "prompt", NULL, "%s",
                          err.message);
        return false;
    }
    return true;
}

/* The template that renders this chat (as brasa_chat_render picks it), for the calls' syntax. */
static const char *chat_template_of(const server *s, const brasa_chat_params *cp) {
    brasa_model_desc d;
    brasa_model_describe(s->model, &d);
    if (cp->template_text)
        return cp->template_text;
    return cp->tools_json && d.chat_template_tool_use ? d.chat_template_tool_use : d.chat_template;
}

/* What a chat's output is held to: the tool-call syntax of the template (a 400 when tools are
 * offered to a template without tool support), and a constraint for a forced call or a
 * response_format. A constrained reply starts with what the constraint allows, so a model's
 * thinking is turned off for it. False after sending the error. */
static bool plan_output(conn *c, const api_request *rq, brasa_chat_params *cp, toolcall_format *format,
                        brasa_constraint **constraint, enum MHD_Result *res) {
    server *s = c->srv;
    const toolcall_format f = toolcall_detect(chat_template_of(s, cp));
    *format = rq->tools_json || f == TOOLCALL_HARMONY ? f : TOOLCALL_NONE;
    if (rq->tools_json && f == TOOLCALL_NONE) {
        *res = send_error(c, 400, "invalid_request_error", "tools", NULL,
                          "this model's chat template has no tool support (or writes calls in a syntax brasa does not "
                          "read): give a template that does with --chat-template-file, or send no tools");
        return false;
    }
    const bool forced = rq->tools_json && (rq->tool_choice == API_TOOLS_REQUIRED || rq->tool_choice == API_TOOLS_NAMED);
    if (!forced && !rq->schema_json)
        return true;
    brasa_error err;
    brasa_status st;
    if (forced) {
        json_doc *tools = NULL;
        buf prefix = { 0 }, schema = { 0 }, suffix = { 0 };
        st = json_parse(rq->tools_json, strlen(rq->tools_json), &tools, &err);
        if (st == BRASA_OK)
            st = toolcall_constraint(f, json_root(tools), rq->tool_choice == API_TOOLS_NAMED ? rq->tool_name : NULL,
                                     &prefix, &schema, &suffix, &err);
        if (st == BRASA_OK)
            st = brasa_constraint_create(s->model, prefix.data, schema.data, suffix.data, constraint, &err);
        json_free(tools);
        buf_free(&prefix);
        buf_free(&schema);
        buf_free(&suffix);
    } else {
        st = brasa_constraint_create(s->model, NULL, rq->schema_json, NULL, constraint, &err);
    }
    if (st == BRASA_ERR_NO_MEMORY) {
        *res = send_error(c, 503, "unavailable", NULL, NULL, "out of memory");
        return false;
    }
    if (st != BRASA_OK) {
        *res = send_error(c, 400, "invalid_request_error", forced ? "tool_choice" : "response_format", NULL, "%s",
                          err.message);
        return false;
    }
    cp->enable_thinking = false;
    return true;
}

static enum MHD_Result handle_generation(conn *c) {
    server *s = c->srv;
    if (c->too_large)
        return send_error(c, 413, "invalid_request_error", NULL, "body_too_large", "the body is over %zu bytes",
                          s->cfg->max_body);
    api_request rq;
    char message[400];
    const char *param = NULL;
    const api_kind kind = c->route == R_CHAT ? API_CHAT : API_COMPLETION;
    if (!api_parse(kind, c->body.data ? c->body.data : "", c->body.len, &rq, message, sizeof message, &param)) {
        api_request_free(&rq);
        return send_error(c, 400, "invalid_request_error", param, NULL, "%s", message);
    }
    enum MHD_Result res = MHD_NO;
    brasa_token *tokens = NULL;
    size_t n = 0;
    brasa_chat_params cp = brasa_chat_default_params();
    cp.enable_thinking = rq.enable_thinking;
    cp.kwargs_json = rq.kwargs_json;
    cp.tools_json = rq.tools_json;
    cp.template_text = s->cfg->chat_template;
    brasa_constraint *constraint = NULL;
    toolcall_format format = TOOLCALL_NONE;
    if (kind == API_CHAT && !plan_output(c, &rq, &cp, &format, &constraint, &res)) {
        api_request_free(&rq);
        return res;
    }
    if (!request_tokens(c, &rq, &cp, &tokens, &n, &res)) {
        free(tokens);
        brasa_constraint_free(constraint);
        api_request_free(&rq);
        return res;
    }
    snprintf(c->id, sizeof c->id, "%s-%08x%04x", kind == API_CHAT ? "chatcmpl" : "cmpl", (unsigned)s->started,
             (unsigned)plat_atomic_add(&s->next_id, 1));
    brasa_error err;
    if (reply_init(&c->rp, kind == API_CHAT ? brasa_chat_reasoning_start(s->model, &cp) : BRASA_REASONING_NONE, format,
                   rq.tools_json, rq.parallel_tool_calls, strchr(c->id, '-') + 1 /* the id after its "chatcmpl-" or "cmpl-" */, &err) != BRASA_OK) {
        free(tokens);
        brasa_constraint_free(constraint);
        api_request_free(&rq);
        return send_error(c, 400, "invalid_request_error", "tools", NULL, "%s", err.message);
    }
    c->rp_ready = true;
    c->want_logprobs = rq.logprobs >= 0;
    const int32_t room = s->cfg->ctx - (int32_t)n;
    sched_job_params jp = { tokens, n, rq.max_tokens > 0 && rq.max_tokens < room ? rq.max_tokens : room, rq.sampling,
                            rq.stop, constraint, rq.logprobs, format != TOOLCALL_NONE };
    c->job = plat_atomic_load(&s->draining) ? NULL : sched_submit(s->sched, &jp);
    if (plat_atomic_load(&s->draining))
        brasa_constraint_free(constraint); /* not submitted: still ours */
    free(tokens);
    const bool stream = rq.stream;
    c->include_usage = rq.include_usage;
    api_request_free(&rq);
    if (!c->job)
        return send_error(c, 503, "unavailable", NULL, "queue_full",
                          plat_atomic_load(&s->draining) ? "the server is shutting down"
                                                         : "the server is busy: %d requests are already waiting",
                          s->cfg->max_queue);
    c->reply = (api_reply){ kind, c->id, s->model_id, (int64_t)time(NULL) };
    c->first_chunk = true;
    if (stream) {
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_reader, c, NULL);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, "Content-Type", "text/event-stream; charset=utf-8");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        MHD_add_response_header(r, "X-Accel-Buffering", "no");
        MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
        res = MHD_queue_response(c->mhd, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        c->status = 200;
        return res;
    }
    /* a whole reply: wait for the job, and give up its slot if the client leaves meanwhile */
    buf text = { 0 };
    sched_progress pr;
    for (;;) {
        if (!sched_job_read(s->sched, c->job, READ_WAIT_SECONDS, &text, c->want_logprobs ? &c->lp : NULL, &pr)) {
            buf_free(&text);
            sched_job_cancel(s->sched, c->job);
            return send_error(c, 503, "unavailable", NULL, NULL, "out of memory");
        }
        if (pr.finish != SCHED_RUNNING)
            break;
        if (peer_gone(c)) {
            sched_job_cancel(s->sched, c->job);
            buf_free(&text);
            return MHD_NO;
        }
    }
    if (pr.finish == SCHED_FAILED)
        res = send_error(c, 500, "server_error", NULL, NULL, "generation failed: %s", pr.error);
    else if (pr.finish == SCHED_CANCELLED)
        res = send_error(c, 503, "unavailable", NULL, NULL, "the server is shutting down");
    else {
        buf b = { 0 };
        api_message m;
        bool ok = reply_push(&c->rp, text.data, text.len) && reply_finish(&c->rp);
        reply_take(&c->rp, &m);
        ok = ok && logprobs_view(c, &m);
        res = ok && api_completion_json(&c->reply, &m, finish_reason(c, pr.finish), pr.n_prompt, pr.n_generated, &b)
                  ? send_bytes(c, 200, "application/json", b.data, b.len)
                  : send_error(c, 503, "unavailable", NULL, NULL, "out of memory");
        buf_free(&b);
    }
    buf_free(&text);
    return res;
}

static enum MHD_Result handle_get(conn *c) {
    server *s = c->srv;
    buf b = { 0 };
    enum MHD_Result res;
    int queued = 0, active = 0;
    if (c->route == R_HEALTH || c->route == R_METRICS)
        sched_counts(s->sched, &queued, &active);
    switch (c->route) {
    case R_PAGE:
        return send_bytes(c, 200, "text/html; charset=utf-8", srv_webui_html, strlen(srv_webui_html));
    case R_HEALTH: {
        char text[160];
        const int n = snprintf(text, sizeof text, "{\"status\":\"%s\",\"slots\":%d,\"active\":%d,\"queued\":%d}",
                               plat_atomic_load(&s->draining) ? "stopping" : "ok", s->cfg->parallel, active, queued);
        return send_bytes(c, plat_atomic_load(&s->draining) ? 503 : 200, "application/json", text, (size_t)n);
    }
    case R_METRICS:
        res = metrics_render(s->metrics, queued, active, s->cfg->parallel, &b)
                  ? send_bytes(c, 200, "text/plain; version=0.0.4", b.data, b.len)
                  : send_error(c, 503, "unavailable", NULL, NULL, "out of memory");
        break;
    default:
        res = api_models_json(s->model_id, s->started, &b) ? send_bytes(c, 200, "application/json", b.data, b.len)
                                                            : send_error(c, 503, "unavailable", NULL, NULL, "out of memory");
        break;
    }
    buf_free(&b);
    return res;
}

static route route_of(const char *url) {
    static const struct { const char *path; route r; } table[] = {
        { "/", R_PAGE }, { "/health", R_HEALTH }, { "/metrics", R_METRICS }, { "/v1/models", R_MODELS },
        { "/v1/chat/completions", R_CHAT }, { "/v1/completions", R_COMPLETIONS },
        { "/chat/completions", R_CHAT }, { "/completions", R_COMPLETIONS }, { "/models", R_MODELS },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(url, table[i].path) == 0)
            return table[i].r;
    return R_NONE;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mhd, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state) {
    (void)version;
    server *s = cls;
    conn *c = *state;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return MHD_NO;
        c->srv = s;
        c->mhd = mhd;
        c->route = route_of(url);
        *state = c;
        plat_atomic_add(&s->open_requests, 1);
        const bool post = c->route == R_CHAT || c->route == R_COMPLETIONS;
        if (strcmp(method, "OPTIONS") == 0) {
            struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
            MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
            MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
            const enum MHD_Result res = MHD_queue_response(mhd, 204, r);
            MHD_destroy_response(r);
            c->status = 204;
            return res;
        }
        if (c->route == R_NONE)
            return send_error(c, 404, "invalid_request_error", NULL, "not_found", "no route %.200s %.200s", method, url);
        if (strcmp(method, post ? "POST" : "GET") != 0 && !(!post && strcmp(method, "HEAD") == 0))
            return send_error(c, 405, "invalid_request_error", NULL, "method_not_allowed", "%.20s is not allowed on %.200s",
                              method, url);
        if (!authorized(c))
            return send_error(c, 401, "invalid_request_error", NULL, "invalid_api_key",
                              "a valid API key is required: send 'Authorization: Bearer KEY'");
        if (!post)
            return handle_get(c);
        const char *length = MHD_lookup_connection_value(mhd, MHD_HEADER_KIND, "Content-Length");
        if (length && strtoull(length, NULL, 10) > s->cfg->max_body)
            return send_error(c, 413, "invalid_request_error", NULL, "body_too_large", "the body is over %zu bytes",
                              s->cfg->max_body);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (c->too_large || c->body.len + *upload_size > s->cfg->max_body)
            c->too_large = true;
        else if (!buf_append(&c->body, upload, *upload_size))
            c->too_large = true;
        *upload_size = 0;
        return MHD_YES;
    }
    if (c->status)
        return MHD_YES; /* answered already */
    return handle_generation(c);
}

static void on_completed(void *cls, struct MHD_Connection *mhd, void **state, enum MHD_RequestTerminationCode why) {
    (void)mhd;
    server *s = cls;
    conn *c = *state;
    if (!c)
        return;
    if (c->rp_ready)
        reply_free(&c->rp);
    free(c->lp.data);
    free(c->lp_api);
    buf_free(&c->lp_text);
    if (c->job) {
        if (why != MHD_REQUEST_TERMINATED_COMPLETED_OK)
            sched_job_cancel(s->sched, c->job); /* the client went away, or a write failed */
        sched_job_release(s->sched, c->job);
    }
    metrics_request(s->metrics, route_label(c->route), c->status ? c->status : 499);
    buf_free(&c->body);
    buf_free(&c->out);
    free(c);
    *state = NULL;
    plat_atomic_add(&s->open_requests, -1);
}

static void load_progress(float fraction, void *user) {
    (void)user;
    if (plat_is_terminal(2))
        fprintf(stderr, "\rloading the model: %3d%%%s", (int)(fraction * 100.0f), fraction >= 1.0f ? "\n" : "");
}

static void upload_progress(float fraction, void *user) {
    (void)user;
    if (plat_is_terminal(2))
        fprintf(stderr, "\rpreparing weights: %3d%%%s", (int)(fraction * 100.0f), fraction >= 1.0f ? "\n" : "");
}

/* The lock that makes this the only server of its device: <runtime dir>/serve-cpu.lock, or
 * serve-cuda-0.lock for "cuda" and "cuda:0" alike (the device string is checked by the caller). */
static plat_lock *take_device_lock(const char *device) {
    char dir[512], path[600], name[40] = "cpu";
    if (!plat_runtime_dir(dir, sizeof dir)) {
        fprintf(stderr, "brasa serve: no private runtime directory for the device lock (set XDG_RUNTIME_DIR)\n");
        return NULL;
    }
    if (device && *device && strcmp(device, "cpu") != 0) {
        snprintf(name, sizeof name, "%.30s%s", device, strchr(device, ':') ? "" : ":0");
        char *colon = strchr(name, ':');
        if (colon)
            *colon = '-';
    }
    snprintf(path, sizeof path, "%s/serve-%s.lock", dir, name);
    plat_lock *lock = NULL;
    long holder = 0, stale = 0;
    brasa_error err;
    if (plat_lock_acquire(path, &lock, &holder, &stale, &err) != BRASA_OK) {
        if (holder > 0)
            fprintf(stderr, "brasa serve: another brasa serve (PID %ld) already owns the %s device; stop it first "
                    "(lock: %s)\n", holder, name, path);
        else
            fprintf(stderr, "brasa serve: %s\n", err.message);
        return NULL;
    }
    if (stale > 0 && stale != plat_pid())
        fprintf(stderr, "brasa serve: took over the lock left by PID %ld, which is no longer running\n", stale);
    return lock;
}

int srv_run(const srv_config *cfg) {
    union { struct sockaddr sa; char bytes[128]; } addr;
    size_t addr_len = 0;
    bool ipv6 = false, loopback = false;
    if (!plat_sockaddr(cfg->host, cfg->port, &addr, sizeof addr, &addr_len, &ipv6, &loopback)) {
        fprintf(stderr, "brasa serve: --host '%s' is not an IPv4 or IPv6 address (or localhost)\n", cfg->host);
        return 2;
    }
    if (!loopback && !cfg->api_key && !cfg->no_auth) {
        fprintf(stderr, "brasa serve: serving %s reaches other machines: give --api-key KEY, or --no-auth to serve "
                "without one\n", cfg->host);
        return 2;
    }
    if (!loopback && cfg->no_auth && !cfg->api_key)
        fprintf(stderr, "brasa serve: warning: anyone who can reach %s:%d can use this server (--no-auth)\n", cfg->host,
                cfg->port);
    plat_lock *lock = take_device_lock(cfg->device);
    if (!lock)
        return 1;
    volatile int stop = 0;
    plat_terminate_install(&stop);

    server s;
    memset(&s, 0, sizeof s);
    s.cfg = cfg;
    s.started = (int64_t)time(NULL);
    int status = 1;
    struct MHD_Daemon *d = NULL;
    brasa_error err;
    brasa_model_params mp = brasa_model_default_params();
    mp.progress = load_progress;
    s.metrics = metrics_create();
    if (!s.metrics) {
        fprintf(stderr, "brasa serve: out of memory\n");
        goto out;
    }
    if (brasa_model_open(cfg->model_path, &mp, &s.model, &err) != BRASA_OK) {
        fprintf(stderr, "brasa serve: %s: %s\n", cfg->model_path, err.message);
        goto out;
    }
    const char *base = strrchr(cfg->model_path, '/');
    const char *base2 = strrchr(cfg->model_path, '\\');
    base = base2 > base ? base2 : base;
    snprintf(s.model_id, sizeof s.model_id, "%s", base ? base + 1 : cfg->model_path);
    sched_config sc = { .n_slots = cfg->parallel, .n_ctx = cfg->ctx, .n_threads = cfg->threads, .kv_type = cfg->kv_type,
                        .device = cfg->device, .gpu_layers = cfg->gpu_layers, .progress = upload_progress,
                        .max_queue = cfg->max_queue, .metrics = s.metrics };
    if (sched_create(s.model, &sc, &s.sched, &err) != BRASA_OK) {
        fprintf(stderr, "brasa serve: %s\n", err.message);
        goto out;
    }
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | (ipv6 ? MHD_USE_IPv6 : 0),
                         (uint16_t)cfg->port, NULL, NULL, on_request, &s,
                         MHD_OPTION_SOCK_ADDR, &addr.sa,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->timeout_s,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(cfg->max_queue + cfg->parallel + 16),
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
                         MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s,
                         MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "brasa serve: cannot listen on %s:%d (in use, or not an address of this machine)\n", cfg->host,
                cfg->port);
        goto out;
    }
    if (sched_tuning_note(s.sched)[0])
        fprintf(stderr, "brasa serve: warning: %s\n", sched_tuning_note(s.sched));
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "brasa serve: %s on %s, %d slots of %d tokens; listening on http://%s%s%s:%u/ (Ctrl-C stops)\n",
            s.model_id, sched_backend(s.sched), cfg->parallel, cfg->ctx, ipv6 ? "[" : "", cfg->host, ipv6 ? "]" : "",
            di ? (unsigned)di->port : (unsigned)cfg->port);
    fflush(stderr);
    while (!stop)
        plat_sleep(0.1);
    /* stop accepting, let what runs finish, then end the rest */
    fprintf(stderr, "brasa serve: stopping: no new connections; finishing the requests in flight\n");
    plat_atomic_store(&s.draining, 1);
    const MHD_socket listener = MHD_quiesce_daemon(d);
    if (listener != MHD_INVALID_SOCKET)
        plat_socket_close((int)listener);
    if (!sched_drain(s.sched, DRAIN_SECONDS))
        fprintf(stderr, "brasa serve: requests still running after %.0f s are ended\n", DRAIN_SECONDS);
    /* A finished job may still have its last events (the finish reason, [DONE]) waiting in the connection's
     * thread; stopping the daemon now would cut them off. Wait, briefly, until every reply has been written. */
    const double flush_until = plat_time_seconds() + FLUSH_SECONDS;
    while (plat_atomic_load(&s.open_requests) > 0 && plat_time_seconds() < flush_until)
        plat_sleep(0.02);
    sched_stop(s.sched);
    MHD_stop_daemon(d);
    d = NULL;
    status = 0;
    fprintf(stderr, "brasa serve: stopped\n");
out:
    if (d)
        MHD_stop_daemon(d);
    sched_free(s.sched);
    brasa_model_free(s.model);
    metrics_free(s.metrics);
    plat_lock_release(lock);
    return status;
}
