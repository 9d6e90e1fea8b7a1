/* server.c: the HTTP side of `brasa serve` on libmicrohttpd: routes made from the API dialects'
 * tables (api.h: OpenAI, Ollama, Anthropic) and the server's own pages, the API key, body limits,
 * errors in the dialect's shape, whole and streamed replies read from scheduler jobs, reasoning and
 * tool calls kept apart from the answer (reply.c), output held to a JSON Schema or a forced tool
 * call (a brasa_constraint per request), log-probabilities, embeddings, cancellation when a client
 * goes away, the device lock and the shutdown sequence. */
#include "server/server.h"

#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "brasa.h"
#include "core/buf.h"
#include "core/error.h"
#include "core/json.h"
#include "engine/reply_parts.h"
#include "engine/toolcall.h"
#include "platform/platform.h"
#include "server/api.h"
#include "server/metrics.h"
#include "server/registry.h"
#include "server/reply.h"
#include "server/sched.h"

#define READ_WAIT_SECONDS 0.1
#define DRAIN_SECONDS 30.0
#define FLUSH_SECONDS 5.0 /* after the drain, for replies still being written */

/* The API dialects this server speaks; a request goes to the first whose table has its path (a
 * dialect's marker header, such as Anthropic's "anthropic-version", wins a path two share). */
static const struct {
    const api_dialect *dialect;
    const char *marker_header; /* may be NULL */
} dialects[] = {
    { &api_openai, NULL },
    { &api_ollama, NULL },
    { &api_anthropic, "anthropic-version" },
};
#define N_DIALECTS (sizeof dialects / sizeof dialects[0])

typedef struct server {
    const srv_config *cfg;
    registry *reg;                  /* the models, loaded on demand */
    metrics *metrics;
    int64_t started;
    volatile int32_t draining;
    volatile int32_t next_id;
    volatile int32_t open_requests; /* requests whose reply is not yet fully handed to the socket */
} server;

/* The server's own pages, beside the dialects' endpoints. */
typedef enum page { P_NONE, P_WEB, P_HEALTH, P_METRICS } page;

/* One HTTP request, from its first byte to the end of its reply. */
typedef struct conn {
    server *srv;
    page page;
    const api_dialect *dialect;     /* always set: the error shape */
    const api_endpoint *ep;         /* NULL for the server's own pages */
    struct MHD_Connection *mhd;
    reg_model *m;           /* the model the request uses, held until its end (take_model) */
    double keep_alive;      /* the request's keep-alive for it, or < 0 */
    buf body;
    bool too_large;
    int status;             /* for the metrics */
    sched_job *job;
    api_request rq;         /* kept until the end: the reply names its stop strings */
    api_reply reply;
    char id[48];
    bool ended;
    double t_start, t_first;
    buf out;                /* stream bytes not yet handed to the server library */
    size_t out_pos;
    reply rp;               /* the job's text into reasoning, content and tool calls */
    bool rp_ready;
    bool want_logprobs;
    sched_logprobs lp;      /* read from the job, not yet sent */
    api_token_logprobs *lp_api; /* lp as the API writes them, and their tokens' text */
    size_t lp_api_cap;
    buf lp_text;
} conn;

static const char *route_label(const conn *c) {
    if (!c->ep)
        return "other";
    switch (c->ep->action) {
    case API_GENERATE: return c->ep->kind == API_CHAT ? "chat" : "completions";
    case API_COUNT_TOKENS: return "count_tokens";
    case API_EMBED: return "embeddings";
    default: return "models";
    }
}

static enum MHD_Result send_bytes(conn *c, int status, const char *type, const char *data, size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    if (status == 405)
        MHD_add_response_header(r, "Allow", c->ep && strcmp(c->ep->method, "POST") == 0 ? "POST, OPTIONS" : "GET, HEAD, OPTIONS");
    if (status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (status == 503)
        MHD_add_response_header(r, "Retry-After", "1");
    const enum MHD_Result res = MHD_queue_response(c->mhd, (unsigned)status, r);
    MHD_destroy_response(r);
    c->status = status;
    return res;
}

/* An error in the request's dialect: param names the field at fault (or NULL), code is OpenAI's. */
static enum MHD_Result send_error(conn *c, int status, const char *param, const char *code, const char *fmt, ...) {
    char message[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    buf b = { 0 };
    enum MHD_Result res = MHD_NO;
    if (c->dialect->error(status, message, param, code, &b))
        res = send_bytes(c, status, "application/json", b.data, b.len);
    buf_free(&b);
    return res;
}

static enum MHD_Result send_json(conn *c, bool ok, buf *b) {
    const enum MHD_Result res = ok ? send_bytes(c, 200, "application/json", b->data, b->len)
                                   : send_error(c, 503, NULL, NULL, "out of memory");
    buf_free(b);
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

/* The key as OpenAI's clients send it (Authorization: Bearer) or Anthropic's (x-api-key). */
static bool authorized(conn *c) {
    const char *key = c->srv->cfg->api_key;
    if (!key || c->page == P_HEALTH || c->page == P_WEB)
        return true;
    const char *h = MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND, "Authorization");
    const char *x = MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND, "x-api-key");
    return (h && strncmp(h, "Bearer ", 7) == 0 && same_secret(h + 7, key)) || (x && same_secret(x, key));
}

static const char *finish_name(const conn *c, sched_finish f) {
    return f == SCHED_LENGTH ? "length" : c->rp.n_calls > 0 ? "tool_calls" : "stop";
}

static api_end end_of(const conn *c, const sched_progress *pr) {
    const double now = plat_time_seconds();
    api_end e = { finish_name(c, pr->finish), NULL, pr->n_prompt, pr->n_generated, 0, 0, 0, now - c->t_start };
    if (pr->stop_index >= 0 && pr->stop_index < API_MAX_STOP)
        e.stop_string = c->rq.stop[pr->stop_index];
    e.prompt_seconds = c->t_first > 0 ? c->t_first - c->t_start : e.total_seconds;
    e.generate_seconds = c->t_first > 0 ? now - c->t_first : 0;
    return e;
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
            if (brasa_detokenize(c->m->model, &t, 1, BRASA_DETOKENIZE_SPECIAL, piece, sizeof piece, &len, NULL) != BRASA_OK)
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

/* A stream event of what came since the last one, when anything did. */
static bool send_parts(conn *c) {
    api_message m;
    reply_take(&c->rp, &m);
    if (!logprobs_view(c, &m))
        return false;
    bool ok = true;
    if (m.content_len || m.reasoning_len || m.n_calls || m.n_logprobs)
        ok = c->dialect->chunk(&c->reply, &m, &c->out);
    reply_taken(&c->rp);
    c->lp.len = 0;
    return ok;
}

/* The streamed reply: the dialect's events made from the job's text as it arrives. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *dst, size_t max) {
    (void)pos;
    conn *c = cls;
    while (c->out_pos == c->out.len) {
        c->out.len = c->out_pos = 0;
        if (c->ended)
            return MHD_CONTENT_READER_END_OF_STREAM;
        buf text = { 0 };
        sched_progress pr;
        if (!sched_job_read(c->m->sched, c->job, READ_WAIT_SECONDS, &text, c->want_logprobs ? &c->lp : NULL, &pr)) {
            buf_free(&text);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (text.len && c->t_first == 0)
            c->t_first = plat_time_seconds();
        bool ok = reply_push(&c->rp, text.data, text.len);
        if (pr.finish != SCHED_RUNNING)
            ok = reply_finish(&c->rp) && ok;
        ok = ok && send_parts(c);
        buf_free(&text);
        if (pr.finish == SCHED_FAILED || pr.finish == SCHED_CANCELLED) {
            ok = ok && c->dialect->stream_error(&c->reply, pr.finish == SCHED_FAILED ? pr.error : "the server is shutting down",
                                                &c->out);
            c->ended = true;
        } else if (pr.finish != SCHED_RUNNING) {
            const api_end e = end_of(c, &pr);
            ok = ok && c->dialect->end(&c->reply, &e, &c->out);
            c->ended = true;
        } else if (c->out.len == 0 && peer_gone(c)) {
            sched_job_cancel(c->m->sched, c->job);
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

/* The context a request may fill: the slot's, or less when the request asks (Ollama's num_ctx). */
static int32_t context_of(const conn *c) {
    const int32_t ctx = c->srv->cfg->ctx;
    return c->rq.ctx_limit > 0 && c->rq.ctx_limit < ctx ? c->rq.ctx_limit : ctx;
}

/* Turns a checked request into prompt tokens; false after sending the error. */
static bool request_tokens(conn *c, const brasa_chat_params *cp, brasa_token **tokens, size_t *n, enum MHD_Result *res) {
    server *s = c->srv;
    const api_request *rq = &c->rq;
    const int32_t ctx = context_of(c);
    const size_t cap = (size_t)s->cfg->ctx + 1;
    *tokens = malloc(cap * sizeof **tokens);
    if (!*tokens) {
        *res = send_error(c, 503, NULL, NULL, "out of memory");
        return false;
    }
    brasa_error err;
    brasa_status st;
    if (rq->kind == API_CHAT)
        st = brasa_chat_tokenize_json(c->m->model, rq->messages_json, strlen(rq->messages_json), cp, *tokens, cap, n, &err);
    else
        st = brasa_tokenize(c->m->model, rq->prompt, strlen(rq->prompt), rq->raw ? 0 : BRASA_TOKENIZE_ADD_BOS, *tokens,
                            cap, n, &err);
    if (st == BRASA_OK && c->ep->action == API_COUNT_TOKENS)
        return true;
    if (st == BRASA_OK && *n >= (size_t)ctx)
        st = BRASA_ERR_BUFFER_TOO_SMALL;
    if (st == BRASA_ERR_BUFFER_TOO_SMALL) {
        *res = send_error(c, 400, rq->kind == API_CHAT ? "messages" : "prompt", "context_length_exceeded",
                          "the prompt is %zu tokens, but the context holds %d (including the reply): shorten it%s", *n,
                          ctx, ctx < s->cfg->ctx ? " or ask for a larger context" : " or start the server with a larger --ctx");
        return false;
    }
    if (st != BRASA_OK) {
        *res = send_error(c, 400, rq->kind == API_CHAT ? "messages" : "prompt", NULL, "%s", err.message);
        return false;
    }
    return true;
}

/* What a chat's output is held to: the tool-call syntax of the template (a 400 when tools are
 * offered to a template without tool support), and a constraint for a forced call or a
 * response_format. A constrained reply starts with what the constraint allows, so a model's
 * thinking is turned off for it. False after sending the error. */
static bool plan_output(conn *c, const api_request *rq, brasa_chat_params *cp, toolcall_format *format,
                        brasa_constraint **constraint, enum MHD_Result *res) {
    const toolcall_format f = reply_parts_template_format(c->m->model, cp);
    *format = reply_parts_format(f, rq->tools_json != NULL);
    if (rq->tools_json && f == TOOLCALL_NONE) {
        *res = send_error(c, 400, "tools", NULL,
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
            st = brasa_constraint_create(c->m->model, prefix.data, schema.data, suffix.data, constraint, &err);
        json_free(tools);
        buf_free(&prefix);
        buf_free(&schema);
        buf_free(&suffix);
    } else {
        st = brasa_constraint_create(c->m->model, NULL, rq->schema_json, NULL, constraint, &err);
    }
    if (st == BRASA_ERR_NO_MEMORY) {
        *res = send_error(c, 503, NULL, NULL, "out of memory");
        return false;
    }
    if (st != BRASA_OK) {
        *res = send_error(c, 400, forced ? "tool_choice" : "response_format", NULL, "%s",
                          err.message);
        return false;
    }
    cp->enable_thinking = false;
    return true;
}

static bool take_model(conn *c, const char *name, double keep_alive, enum MHD_Result *res);

/* Ollama's way to load a model: a chat with no messages or a generation with no prompt answers at
 * once, done, with nothing generated. */
static bool is_load_request(const conn *c) {
    return c->dialect == &api_ollama && c->rq.messages_json == NULL && c->rq.prompt == NULL;
}

static enum MHD_Result handle_generation(conn *c) {
    server *s = c->srv;
    char message[400];
    const char *param = NULL;
    api_request *rq = &c->rq;
    if (!c->dialect->parse(c->ep, c->body.data ? c->body.data : "", c->body.len, rq, message, sizeof message, &param))
        return send_error(c, 400, param, NULL, "%s", message);
    enum MHD_Result res = MHD_NO;
    if (!take_model(c, rq->model, rq->keep_alive, &res))
        return res;
    if (!c->m->sched && c->ep->action == API_GENERATE)
        return send_error(c, 400, "model", NULL, "%s is an embedding model: it makes vectors (/v1/embeddings, "
                          "/api/embed), not text", c->m->name);
    if (rq->ctx_limit > s->cfg->ctx)
        return send_error(c, 400, c->dialect == &api_ollama ? "options.num_ctx" : "num_ctx", NULL,
                          "%s asks for a context of %d tokens, but this server's slots hold %d: ask for at most "
                          "that, or start the server with a larger --ctx",
                          c->dialect == &api_ollama ? "options.num_ctx" : "num_ctx", rq->ctx_limit, s->cfg->ctx);
    snprintf(c->id, sizeof c->id, "%08x%04x", (unsigned)s->started, (unsigned)plat_atomic_add(&s->next_id, 1));
    c->reply = (api_reply){ c->ep->kind, c->id, c->m->name, (int64_t)time(NULL), 0, rq->include_usage, false, -1, 0, 0 };
    if (is_load_request(c)) { /* loaded now; keep_alive 0 unloads it after this reply */
        buf b = { 0 };
        const api_end e = { rq->keep_alive == 0 ? "unload" : "load", NULL, 0, 0, 0, 0, 0, 0 };
        const api_message none = { 0 };
        return send_json(c, c->dialect->whole(&c->reply, &none, &e, &b), &b);
    }
    brasa_token *tokens = NULL;
    size_t n = 0;
    brasa_chat_params cp = brasa_chat_default_params();
    cp.enable_thinking = rq->enable_thinking;
    cp.kwargs_json = rq->kwargs_json;
    cp.tools_json = rq->tools_json;
    cp.template_text = s->cfg->chat_template;
    brasa_constraint *constraint = NULL;
    toolcall_format format = TOOLCALL_NONE;
    if (rq->kind == API_CHAT && !plan_output(c, rq, &cp, &format, &constraint, &res))
        return res;
    if (rq->kind == API_COMPLETION && rq->schema_json) {
        brasa_error err;
        const brasa_status st = brasa_constraint_create(c->m->model, NULL, rq->schema_json, NULL, &constraint, &err);
        if (st != BRASA_OK)
            return st == BRASA_ERR_NO_MEMORY ? send_error(c, 503, NULL, NULL, "out of memory")
                                             : send_error(c, 400, "format", NULL, "%s", err.message);
    }
    if (!request_tokens(c, &cp, &tokens, &n, &res)) {
        free(tokens);
        brasa_constraint_free(constraint);
        return res;
    }
    if (c->ep->action == API_COUNT_TOKENS) {
        free(tokens);
        brasa_constraint_free(constraint);
        buf b = { 0 };
        return send_json(c, c->dialect->count((int32_t)n, &b), &b);
    }
    c->reply.prompt_tokens = (int32_t)n;
    brasa_error err;
    const brasa_chat_reasoning start = rq->kind == API_CHAT ? brasa_chat_reasoning_start(c->m->model, &cp) : BRASA_REASONING_NONE;
    if (reply_init(&c->rp, start, format, rq->tools_json, rq->parallel_tool_calls, c->id, &err) != BRASA_OK) {
        free(tokens);
        brasa_constraint_free(constraint);
        return send_error(c, 400, "tools", NULL, "%s", err.message);
    }
    c->rp.drop_reasoning = !rq->show_thinking;
    c->rp_ready = true;
    c->want_logprobs = rq->logprobs >= 0;
    const int32_t room = context_of(c) - (int32_t)n;
    sched_job_params jp = { tokens, n, rq->max_tokens > 0 && rq->max_tokens < room ? rq->max_tokens : room, rq->sampling,
                            rq->stop, constraint, rq->logprobs, format != TOOLCALL_NONE, 0, NULL, NULL };
    /* a reasoning budget closes the block in the reply's own format; under a constraint (a forced
     * call, a schema) the output is the constraint's from its first token, so nothing reasons */
    if (rq->think_budget > 0 && !constraint) {
        if (format == TOOLCALL_HARMONY) {
            jp.think_open = "<|channel|>analysis<|message|>";
            jp.think_close = "<|end|><|start|>assistant<|channel|>final<|message|>";
        } else if (start != BRASA_REASONING_NONE) {
            jp.think_open = start == BRASA_REASONING_OPEN ? "" : "<think>";
            jp.think_close = "\n</think>\n\n";
        }
        jp.think_budget = jp.think_close ? rq->think_budget : 0;
    }
    c->job = plat_atomic_load(&s->draining) ? NULL : sched_submit(c->m->sched, &jp);
    if (plat_atomic_load(&s->draining))
        brasa_constraint_free(constraint); /* not submitted: still ours */
    free(tokens);
    if (!c->job)
        return send_error(c, 503, NULL, "queue_full",
                          plat_atomic_load(&s->draining) ? "the server is shutting down"
                                                         : "the server is busy: %d requests are already waiting",
                          s->cfg->max_queue);
    if (rq->stream) {
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_reader, c, NULL);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, "Content-Type", c->dialect->stream_type);
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
        const size_t before = text.len;
        if (!sched_job_read(c->m->sched, c->job, READ_WAIT_SECONDS, &text, c->want_logprobs ? &c->lp : NULL, &pr)) {
            buf_free(&text);
            sched_job_cancel(c->m->sched, c->job);
            return send_error(c, 503, NULL, NULL, "out of memory");
        }
        if (text.len > before && c->t_first == 0)
            c->t_first = plat_time_seconds();
        if (pr.finish != SCHED_RUNNING)
            break;
        if (peer_gone(c)) {
            sched_job_cancel(c->m->sched, c->job);
            buf_free(&text);
            return MHD_NO;
        }
    }
    if (pr.finish == SCHED_FAILED)
        res = send_error(c, 500, NULL, NULL, "generation failed: %s", pr.error);
    else if (pr.finish == SCHED_CANCELLED)
        res = send_error(c, 503, NULL, NULL, "the server is shutting down");
    else {
        buf b = { 0 };
        api_message m;
        bool ok = reply_push(&c->rp, text.data, text.len) && reply_finish(&c->rp);
        reply_take(&c->rp, &m);
        ok = ok && logprobs_view(c, &m);
        const api_end e = end_of(c, &pr);
        res = send_json(c, ok && c->dialect->whole(&c->reply, &m, &e, &b), &b);
    }
    buf_free(&text);
    return res;
}

static api_model_info model_info(server *s, size_t i) {
    const reg_model *m = reg_at(s->reg, i);
    bool loaded = false;
    double expires = -1;
    reg_snapshot(s->reg, i, &loaded, &expires);
    /* a loaded model's expiry in wall-clock seconds */
    const int64_t expires_at = expires < 0 ? 0 : (int64_t)time(NULL) + (int64_t)(expires - plat_time_seconds());
    return (api_model_info){ .name = m->name, .desc = &m->header, .file_bytes = m->file.size,
                             .modified = m->file.modified ? m->file.modified : s->started, .quant = m->quant,
                             .loaded = loaded, .expires = expires_at, .memory_bytes = m->need_bytes,
                             .n_ctx = s->cfg->ctx, .tools = m->tools, .thinking = m->thinking,
                             .embedding = m->header.is_embedding };
}

/* GET listings and Ollama's show (POST, with the model's name in the body). */
static enum MHD_Result handle_models(conn *c) {
    server *s = c->srv;
    const size_t n = reg_count(s->reg);
    api_model_info *infos = calloc(n, sizeof *infos);
    if (!infos)
        return send_error(c, 503, NULL, NULL, "out of memory");
    size_t k = 0;
    if (c->ep->action == API_SHOW) {
        char name[256];
        if (!api_body_model(c->body.data ? c->body.data : "", c->body.len, name, sizeof name)) {
            free(infos);
            return send_error(c, 400, "model", NULL, "'model' is required: the name of a model this server has");
        }
        const reg_model *m = reg_find(s->reg, name);
        for (size_t i = 0; m && i < n; i++)
            if (reg_at(s->reg, i) == m)
                infos[k++] = model_info(s, i);
        if (k == 0) {
            free(infos);
            return send_error(c, 404, "model", "model_not_found", "model '%.200s' not found", name);
        }
    } else {
        for (size_t i = 0; i < n; i++)
            infos[k++] = model_info(s, i);
    }
    buf b = { 0 };
    const bool ok = c->dialect->models(c->ep->action, infos, k, s->started, &b);
    free(infos);
    return send_json(c, ok, &b);
}

/* The model a request names, loaded and held by the connection until its end; false after
 * sending the error (an unknown name, a failed load). */
static bool take_model(conn *c, const char *name, double keep_alive, enum MHD_Result *res) {
    server *s = c->srv;
    reg_model *m = reg_find(s->reg, name);
    if (!m) {
        *res = send_error(c, 404, "model", "model_not_found", "model '%.200s' not found: this server has %zu models "
                          "(GET /v1/models lists them)", name ? name : "", reg_count(s->reg));
        return false;
    }
    brasa_error err;
    if (reg_acquire(s->reg, m, &err) != BRASA_OK) {
        *res = send_error(c, 503, NULL, NULL, "%s", err.message);
        return false;
    }
    c->m = m;
    c->keep_alive = keep_alive;
    return true;
}

/* The embeddings context, made on first use; under embed_mu. */
static bool embed_context(server *s, reg_model *m, brasa_error *err) {
    if (m->embed_ctx)
        return true;
    brasa_context_params cp = brasa_context_default_params(); /* n_ctx 0: the model's trained length */
    cp.n_threads = s->cfg->threads;
    return brasa_context_create(m->model, &cp, &m->embed_ctx, err) == BRASA_OK;
}

/* Embeddings of the request's inputs, pooled as the model says and normalized, all in one batch. */
static enum MHD_Result handle_embeddings(conn *c) {
    server *s = c->srv;
    char message[400];
    const char *param = NULL;
    api_embed_request rq;
    if (!c->dialect->parse_embed(c->body.data ? c->body.data : "", c->body.len, &rq, message, sizeof message, &param)) {
        api_embed_request_free(&rq);
        return send_error(c, 400, param, NULL, "%s", message);
    }
    enum MHD_Result res;
    if (!take_model(c, rq.model, rq.keep_alive, &res)) {
        api_embed_request_free(&rq);
        return res;
    }
    const int32_t dim = c->m->desc.embedding_dim;
    if (!c->m->desc.is_embedding) {
        res = send_error(c, 400, "model", NULL, "%s is not an embedding model (its file sets no pooling type): serve "
                         "one, such as a BERT model like all-MiniLM-L6-v2 in GGUF", c->m->name);
    } else if (rq.dimensions && rq.dimensions != dim) {
        res = send_error(c, 400, "dimensions", NULL, "this model's embeddings have %d dimensions, and it was not "
                         "trained to be cut shorter: leave 'dimensions' out", dim);
    } else {
        const double t0 = plat_time_seconds();
        brasa_token **inputs = calloc(rq.n_texts, sizeof *inputs);
        size_t *lengths = calloc(rq.n_texts, sizeof *lengths);
        float *vectors = malloc(rq.n_texts * (size_t)dim * sizeof *vectors);
        brasa_error err = { 0 };
        int status = 0;
        int64_t total = 0;
        plat_mutex_lock(c->m->embed_mu);
        if (!inputs || !lengths || !vectors) {
            status = 503;
            snprintf(err.message, sizeof err.message, "out of memory");
        } else if (!embed_context(s, c->m, &err)) {
            status = 500;
        }
        const size_t ctx = c->m->embed_ctx ? (size_t)brasa_context_size(c->m->embed_ctx) : 0;
        for (size_t i = 0; status == 0 && i < rq.n_texts; i++) {
            size_t n = 0;
            if (rq.token_inputs[i]) {
                n = rq.n_token_inputs[i];
                for (size_t k = 0; k < n && status == 0; k++)
                    if (rq.token_inputs[i][k] >= c->m->desc.n_vocab) {
                        status = 400;
                        snprintf(err.message, sizeof err.message, "input %zu holds token %d, outside the vocabulary "
                                 "(0 to %d)", i, rq.token_inputs[i][k], c->m->desc.n_vocab - 1);
                    }
                if (status == 0 && (inputs[i] = malloc((n ? n : 1) * sizeof **inputs)))
                    memcpy(inputs[i], rq.token_inputs[i], n * sizeof **inputs);
            } else {
                size_t cap = ctx + 64;
                inputs[i] = malloc(cap * sizeof **inputs);
                brasa_status st = inputs[i] ? brasa_tokenize(c->m->model, rq.texts[i], strlen(rq.texts[i]),
                                                             BRASA_TOKENIZE_ADD_BOS, inputs[i], cap, &n, &err)
                                            : BRASA_ERR_NO_MEMORY;
                if (st == BRASA_ERR_BUFFER_TOO_SMALL) { /* longer than the context: cut or refused below */
                    brasa_token *more = realloc(inputs[i], n * sizeof *more);
                    if (more) {
                        inputs[i] = more;
                        cap = n;
                        st = brasa_tokenize(c->m->model, rq.texts[i], strlen(rq.texts[i]), BRASA_TOKENIZE_ADD_BOS,
                                            inputs[i], cap, &n, &err);
                    } else {
                        st = BRASA_ERR_NO_MEMORY;
                    }
                }
                if (st != BRASA_OK) {
                    status = st == BRASA_ERR_NO_MEMORY ? 503 : 400;
                    if (st == BRASA_ERR_NO_MEMORY)
                        snprintf(err.message, sizeof err.message, "out of memory");
                }
            }
            if (status == 0 && !inputs[i]) {
                status = 503;
                snprintf(err.message, sizeof err.message, "out of memory");
            }
            if (status == 0 && n > ctx) {
                if (rq.truncate) {
                    n = ctx;
                } else {
                    status = 400;
                    snprintf(err.message, sizeof err.message, "input %zu is %zu tokens, and this model's context holds "
                             "%zu: shorten it%s", i, n, ctx, c->dialect == &api_ollama ? " (or truncate it)" : "");
                }
            }
            lengths[i] = n;
            total += (int64_t)n;
        }
        if (status == 0) {
            const brasa_status st = brasa_embed_batch(c->m->embed_ctx, (const brasa_token *const *)inputs, lengths,
                                                      rq.n_texts, vectors, rq.n_texts * (size_t)dim, &err);
            status = st == BRASA_OK ? 0 : st == BRASA_ERR_NO_MEMORY ? 503 : st == BRASA_ERR_INVALID_ARGUMENT ? 400 : 500;
        }
        plat_mutex_unlock(c->m->embed_mu);
        if (status == 0) {
            buf b = { 0 };
            res = send_json(c, c->dialect->embeddings(&rq, c->m->name, vectors, rq.n_texts, (size_t)dim,
                                                      (int32_t)total, plat_time_seconds() - t0, &b), &b);
        } else {
            res = send_error(c, status, status == 400 ? "input" : NULL, NULL, "%s", err.message);
        }
        for (size_t i = 0; inputs && i < rq.n_texts; i++)
            free(inputs[i]);
        free(inputs);
        free(lengths);
        free(vectors);
    }
    api_embed_request_free(&rq);
    return res;
}

static enum MHD_Result handle_page(conn *c) {
    server *s = c->srv;
    buf b = { 0 };
    int queued = 0, active = 0;
    reg_counts(s->reg, &queued, &active);
    switch (c->page) {
    case P_WEB:
        return send_bytes(c, 200, "text/html; charset=utf-8", srv_webui_html, strlen(srv_webui_html));
    case P_HEALTH: {
        char text[160];
        const int n = snprintf(text, sizeof text, "{\"status\":\"%s\",\"slots\":%d,\"active\":%d,\"queued\":%d}",
                               plat_atomic_load(&s->draining) ? "stopping" : "ok", s->cfg->parallel, active, queued);
        return send_bytes(c, plat_atomic_load(&s->draining) ? 503 : 200, "application/json", text, (size_t)n);
    }
    default: {
        const bool ok = metrics_render(s->metrics, queued, active, s->cfg->parallel, &b);
        const enum MHD_Result res = ok ? send_bytes(c, 200, "text/plain; version=0.0.4", b.data, b.len)
                                       : send_error(c, 503, NULL, NULL, "out of memory");
        buf_free(&b);
        return res;
    }
    }
}

/* The first path segment of url and path are the same ("/api/..." and "/api/tags"). */
static bool same_first_segment(const char *url, const char *path) {
    const char *a = strchr(url + 1, '/'), *b = strchr(path + 1, '/');
    const size_t la = a ? (size_t)(a - url) : strlen(url), lb = b ? (size_t)(b - path) : strlen(path);
    return la == lb && strncmp(url, path, la) == 0;
}

/* Finds the request's page or endpoint, and the dialect its errors are written in. Returns false
 * when the path is known but not for this method (c->ep is then the endpoint of that path). */
static bool resolve(conn *c, const char *url, const char *method) {
    static const struct { const char *path; page p; } pages[] = {
        { "/", P_WEB }, { "/health", P_HEALTH }, { "/metrics", P_METRICS },
    };
    c->dialect = &api_openai;
    const bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        if (strcmp(url, pages[i].path) == 0) {
            c->page = pages[i].p;
            return get;
        }
    const api_dialect *guess = NULL;
    bool method_ok = false;
    for (size_t d = 0; d < N_DIALECTS; d++) {
        const api_dialect *dl = dialects[d].dialect;
        const bool marked = dialects[d].marker_header &&
                            MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND, dialects[d].marker_header);
        for (size_t i = 0; i < dl->n_endpoints; i++) {
            const api_endpoint *ep = &dl->endpoints[i];
            if ((!guess || marked) && same_first_segment(url, ep->path))
                guess = dl;
            if (strcmp(url, ep->path) != 0)
                continue;
            const bool ok = strcmp(method, ep->method) == 0 || (get && strcmp(ep->method, "GET") == 0);
            /* a marked dialect takes over a path another dialect also has; else the first match stays */
            if (!c->ep || marked || (ok && !method_ok)) {
                c->ep = ep;
                c->dialect = dl;
                method_ok = ok;
            }
        }
    }
    if (!c->ep && guess)
        c->dialect = guess;
    return c->ep && method_ok;
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
        c->t_start = plat_time_seconds();
        *state = c;
        plat_atomic_add(&s->open_requests, 1);
        const bool method_ok = resolve(c, url, method);
        if (strcmp(method, "OPTIONS") == 0) {
            struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
            MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
            MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                    "Authorization, Content-Type, x-api-key, anthropic-version, anthropic-beta");
            const enum MHD_Result res = MHD_queue_response(mhd, 204, r);
            MHD_destroy_response(r);
            c->status = 204;
            return res;
        }
        if (c->page == P_NONE && !c->ep)
            return send_error(c, 404, NULL, "not_found", "no route %.200s %.200s", method, url);
        if (!method_ok)
            return send_error(c, 405, NULL, "method_not_allowed", "%.20s is not allowed on %.200s", method, url);
        if (!authorized(c))
            return send_error(c, 401, NULL, "invalid_api_key",
                              "a valid API key is required: send 'Authorization: Bearer KEY' (or 'x-api-key: KEY')");
        if (c->page != P_NONE)
            return handle_page(c);
        if (strcmp(c->ep->method, "GET") == 0)
            return handle_models(c);
        const char *length = MHD_lookup_connection_value(mhd, MHD_HEADER_KIND, "Content-Length");
        if (length && strtoull(length, NULL, 10) > s->cfg->max_body)
            return send_error(c, 413, NULL, "body_too_large", "the body is over %zu bytes", s->cfg->max_body);
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
    if (c->too_large)
        return send_error(c, 413, NULL, "body_too_large", "the body is over %zu bytes", s->cfg->max_body);
    switch (c->ep->action) {
    case API_GENERATE:
    case API_COUNT_TOKENS:
        return handle_generation(c);
    case API_EMBED:
        return handle_embeddings(c);
    default:
        return handle_models(c);
    }
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
            sched_job_cancel(c->m->sched, c->job); /* the client went away, or a write failed */
        sched_job_release(c->m->sched, c->job);
    }
    if (c->m)
        reg_release(s->reg, c->m, c->keep_alive);
    api_request_free(&c->rq);
    metrics_request(s->metrics, route_label(c), c->status ? c->status : 499);
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
    s.metrics = metrics_create();
    if (!s.metrics) {
        fprintf(stderr, "brasa serve: out of memory\n");
        goto out;
    }
    /* the models: the -m files, or every GGUF of --models-dir */
    char **found = NULL;
    size_t n_found = 0;
    if (cfg->models_dir && reg_scan_dir(cfg->models_dir, &found, &n_found, &err) != BRASA_OK) {
        fprintf(stderr, "brasa serve: --models-dir %s\n", err.message);
        goto out;
    }
    uint64_t total = 0, available = 0;
    plat_memory(&total, &available);
    const bool several = n_found + cfg->n_models > 1;
    reg_config rc = {
        .sched = { .n_slots = cfg->parallel, .n_ctx = cfg->ctx, .n_threads = cfg->threads, .kv_type = cfg->kv_type,
                   .device = cfg->device, .split = cfg->split, .gpu_layers = cfg->gpu_layers, .progress = upload_progress,
                   .max_queue = cfg->max_queue, .metrics = s.metrics },
        .chat_template = cfg->chat_template,
        /* what is free now, less a margin for the rest of the system, unless given */
        .budget_bytes = cfg->max_memory > 0 ? cfg->max_memory : available ? available / 10 * 9 : UINT64_MAX,
        .keep_alive = cfg->keep_alive >= 0 ? cfg->keep_alive : several ? 300.0 : REG_FOREVER,
        .progress = load_progress,
    };
    const char **paths = malloc((n_found + cfg->n_models + 1) * sizeof *paths);
    if (paths) {
        for (size_t i = 0; i < cfg->n_models; i++)
            paths[i] = cfg->model_paths[i];
        for (size_t i = 0; i < n_found; i++)
            paths[cfg->n_models + i] = found[i];
    }
    const brasa_status rst = paths ? reg_create(&rc, paths, n_found + cfg->n_models, &s.reg, &err)
                                   : err_set(&err, BRASA_ERR_NO_MEMORY, "out of memory");
    free(paths);
    for (size_t i = 0; i < n_found; i++)
        free(found[i]);
    free(found);
    if (rst != BRASA_OK) {
        fprintf(stderr, "brasa serve: %s\n", err.message);
        goto out;
    }
    /* a server of one model loads it now, so that a model that cannot run fails at the start */
    reg_model *first = reg_find(s.reg, NULL);
    if (!several && reg_acquire(s.reg, first, &err) != BRASA_OK) {
        fprintf(stderr, "brasa serve: %s: %s\n", first->path, err.message);
        goto out;
    }
    if (!several)
        reg_release(s.reg, first, -1);
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
    char what[300];
    if (several) {
        snprintf(what, sizeof what, "%zu models (loaded on first use, within %.1f GB)", reg_count(s.reg),
                 (double)rc.budget_bytes / 1e9);
    } else {
        const sched *sc = first->sched;
        if (sc && sched_tuning_note(sc)[0])
            fprintf(stderr, "brasa serve: warning: %s\n", sched_tuning_note(sc));
        snprintf(what, sizeof what, "%s on %s", first->name, sc ? sched_backend(sc) : "cpu");
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "brasa serve: %s, %d slots of %d tokens; listening on http://%s%s%s:%u/ (Ctrl-C stops)\n", what,
            cfg->parallel, cfg->ctx, ipv6 ? "[" : "", cfg->host, ipv6 ? "]" : "", di ? (unsigned)di->port : (unsigned)cfg->port);
    fflush(stderr);
    while (!stop) {
        plat_sleep(0.1);
        reg_tick(s.reg); /* models idle past their keep-alive go */
    }
    /* stop accepting, let what runs finish, then end the rest */
    fprintf(stderr, "brasa serve: stopping: no new connections; finishing the requests in flight\n");
    plat_atomic_store(&s.draining, 1);
    const MHD_socket listener = MHD_quiesce_daemon(d);
    if (listener != MHD_INVALID_SOCKET)
        plat_socket_close((int)listener);
    if (!reg_drain(s.reg, DRAIN_SECONDS))
        fprintf(stderr, "brasa serve: requests still running after %.0f s are ended\n", DRAIN_SECONDS);
    /* A finished job may still have its last events (the finish reason, [DONE]) waiting in the connection's
     * thread; stopping the daemon now would cut them off. Wait, briefly, until every reply has been written. */
    const double flush_until = plat_time_seconds() + FLUSH_SECONDS;
    while (plat_atomic_load(&s.open_requests) > 0 && plat_time_seconds() < flush_until)
        plat_sleep(0.02);
    reg_stop(s.reg);
    MHD_stop_daemon(d);
    d = NULL;
    status = 0;
    fprintf(stderr, "brasa serve: stopped\n");
out:
    if (d)
        MHD_stop_daemon(d);
    reg_free(s.reg);
    metrics_free(s.metrics);
    plat_lock_release(lock);
    return status;
}
