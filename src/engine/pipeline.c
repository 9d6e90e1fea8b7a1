/* pipeline.c: the pipeline's messages (see pipeline.h). Control messages go down the chain, each
 * process handing on what it got before acting on it, so that every process sees them in the
 * order process 0 sent them; a step's rows follow its header on the same link; the other
 * processes' reports and the last one's rows go straight to process 0. */
#include "engine/pipeline.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/sha256.h"
#include "dist/dist.h"
#include "engine/context.h"
#include "model/model.h"
#include "platform/platform.h"

enum { PIPE_CREATE = 1, PIPE_STEP, PIPE_COPY, PIPE_FREE, PIPE_END, PIPE_PING };

/* The largest message a round trip of the link takes (brasa_group_link_seconds). */
#define PIPE_PING_MAX ((size_t)64 << 20)

/* A control message. What follows it in the same message: a step's runs (n_segs pipe_seg), or
 * CREATE's plan (a pipe_plan), so that the header every step carries stays small. */
typedef struct pipe_msg {
    int32_t op;
    int32_t n_segs;            /* STEP */
    int64_t n, first;          /* STEP; PING: n bytes follow on the rows' link */
    int32_t src, dst, len;     /* COPY: sequence src's first len positions to dst */
    int32_t n_ctx, n_batch, n_threads, n_seq, kv_type; /* CREATE: the context's params */
} pipe_msg;
static_assert(sizeof(pipe_msg) % 8 == 0, "a step's runs follow its message aligned");

/* What a process tells process 0: after opening the model (ok, its file and memory), and after
 * making its part of a context (ok, why). */
typedef struct pipe_report {
    int32_t ok, status; /* status: a brasa_status, when not ok */
    char why[512]; /* as brasa_error's message */
    uint64_t file_size, memory, memory_total; /* the machine's available and total memory */
    uint8_t header_hash[32];
    char host[64];
} pipe_report;

/* Process 0's knowledge of the others: process-wide, as the group is. */
static struct {
    bool heard;  /* their reports on opening the model are in */
    bool ended;
    pipe_report opened[PIPE_PROCESSES_MAX];
} lead;

bool pipe_active(void) {
    return dist_size() > 1;
}

/* The file's identity: its size and a hash of everything before its tensor data (header, metadata,
 * tensor table: names, types, shapes, offsets). */
static void model_identity(const brasa_model *m, uint64_t *size, uint8_t hash[32]) {
    sha256_ctx h;
    sha256_init(&h);
    sha256_update(&h, gguf_image(m->file), (size_t)gguf_data_offset(m->file));
    sha256_final(&h, hash);
    *size = gguf_file_size(m->file);
}

static const char *host_of(int r) {
    return lead.opened[r].host[0] ? lead.opened[r].host : "?";
}

/* The others' reports on opening the model, once; process 0's own machine and memory beside them. */
static brasa_status hear_opened(brasa_error *err) {
    if (!lead.heard) {
        snprintf(lead.opened[0].host, sizeof lead.opened[0].host, "%s", dist_host());
        plat_memory(&lead.opened[0].memory_total, &lead.opened[0].memory);
    }
    for (int r = 1; !lead.heard && r < dist_size(); r++) {
        brasa_status st = dist_recv(r, DIST_TAG_REPLY, &lead.opened[r], sizeof lead.opened[r], NULL, err);
        if (st != BRASA_OK)
            return st;
        lead.opened[r].why[sizeof lead.opened[r].why - 1] = '\0';
        lead.opened[r].host[sizeof lead.opened[r].host - 1] = '\0';
    }
    lead.heard = true;
    return BRASA_OK;
}

/* The processes of the group on process r's machine, which share its memory. */
static int processes_on_host_of(int r) {
    int k = 0;
    for (int i = 0; i < dist_size(); i++)
        k += strcmp(lead.opened[i].host, lead.opened[r].host) == 0;
    return k > 0 ? k : 1;
}

/* The memory process r may count on: its machine's available memory shared with the group's other
 * processes there (0: unknown). */
static uint64_t process_memory(int r) {
    return lead.opened[r].memory / (uint64_t)processes_on_host_of(r);
}

/* Parses split: n positive numbers separated by commas into share. */
static brasa_status parse_split(const char *split, int n, double *share, brasa_error *err) {
    const char *s = split;
    for (int r = 0; r < n; r++) {
        char *end = NULL;
        share[r] = strtod(s, &end);
        if (end == s || !(share[r] > 0.0) || share[r] > 1e9)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--split \"%s\": each of the %d processes needs a positive share", split, n);
        s = end;
        if (r + 1 < n && *s++ != ',')
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--split \"%s\": %d shares separated by commas, one per process", split, n);
    }
    if (*s)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--split \"%s\": %d shares separated by commas, one per process", split, n);
    return BRASA_OK;
}

void pipe_share_layers(const uint64_t *layer_bytes, int32_t n_layer, uint64_t head, const double *share, pipe_plan *out) {
    const int n = out->n;
    const int32_t L = n_layer;
    double total = (double)head, done = (double)head, sum = 0.0;
    for (int32_t il = 0; il < L; il++)
        total += (double)layer_bytes[il];
    for (int r = 0; r < n; r++)
        sum += share[r];
    int r = 0;
    double until = total * share[0] / sum;
    out->first[0] = 0;
    for (int32_t il = 0; il < L; il++) {
        const double b = (double)layer_bytes[il];
        if (r + 1 < n && il > out->first[r] && (L - il <= n - 1 - r || done + b / 2 > until)) {
            out->end[r] = il;
            r++;
            out->first[r] = il;
            until += total * share[r] / sum;
        }
        done += b;
    }
    out->end[r] = L;
}

brasa_status pipe_plan_layers(const brasa_model *m, const char *split, pipe_plan *out, brasa_error *err) {
    const int n = dist_size();
    const int32_t L = m->hp.n_layer;
    if (n < 2 || n > PIPE_PROCESSES_MAX)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "%d processes: a pipeline takes 2 to %d", n, PIPE_PROCESSES_MAX);
    if (n > L)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%d processes for %d layers: each process needs a layer at least", n, (int)L);
    brasa_status st = hear_opened(err);
    if (st != BRASA_OK)
        return st;
    uint64_t size = 0;
    uint8_t hash[32];
    model_identity(m, &size, hash);
    for (int r = 1; r < n; r++) {
        const pipe_report *o = &lead.opened[r];
        if (!o->ok)
            return err_set(err, BRASA_ERR_IO, "process %d (on %s): %s", r, host_of(r), o->why);
        if (o->file_size != size || memcmp(o->header_hash, hash, sizeof hash) != 0)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "process %d (on %s) opened a different model file (%llu bytes "
                           "against %llu here, or another header): every host needs the same file",
                           r, host_of(r), (unsigned long long)o->file_size, (unsigned long long)size);
    }
    uint64_t memory[PIPE_PROCESSES_MAX];
    bool known = true;
    for (int r = 0; r < n; r++) {
        memory[r] = process_memory(r);
        known = known && memory[r] > 0;
    }
    /* shares: by --split, else by each process's available memory (equal where one is unknown) */
    double share[PIPE_PROCESSES_MAX] = { 0 };
    if (split && *split) {
        st = parse_split(split, n, share, err);
        if (st != BRASA_OK)
            return st;
    } else {
        for (int r = 0; r < n; r++)
            share[r] = known ? (double)memory[r] : 1.0;
    }
    out->n = n;
    const arch_weights *w = &m->weights;
    uint64_t layer_bytes[ARCH_MAX_LAYERS];
    for (int32_t il = 0; il < L && il < ARCH_MAX_LAYERS; il++)
        layer_bytes[il] = arch_layer_bytes(&w->layers[il]);
    uint64_t head = bk_bytes(&w->tok_embd) + bk_bytes(&w->output_norm);
    if (w->output.data != w->tok_embd.data)
        head += bk_bytes(&w->output);
    /* the layers' bytes shared out, so that equal shares run equal work; where process 0 then
     * lacks the memory for its part and the head, the head counts in its share */
    for (int with_head = 0; with_head < 2; with_head++) {
        pipe_share_layers(layer_bytes, L, with_head ? head : 0, share, out);
        int r = 0;
        uint64_t bytes = 0;
        for (; r < n; r++) {
            bytes = r == 0 ? head : 0;
            for (int32_t il = out->first[r]; il < out->end[r]; il++)
                bytes += layer_bytes[il];
            if (memory[r] && bytes > memory[r])
                break;
        }
        if (r == n)
            return BRASA_OK;
        if (with_head)
            return err_set(err, BRASA_ERR_NO_MEMORY, "the model does not fit: process %d (on %s) would hold %.1f GB of "
                           "weights with %.1f GB available (more processes, or other --split shares)", r,
                           host_of(r), (double)bytes / 1e9, (double)memory[r] / 1e9);
    }
    return BRASA_OK;
}

/* Sends a control message and what follows it (tail_bytes of tail) to process 1. */
static brasa_status send_down(const pipe_msg *msg, const void *tail, size_t tail_bytes, brasa_error *err) {
    const size_t bytes = sizeof *msg + tail_bytes;
    char stack[sizeof *msg + (sizeof(pipe_plan) > 64 * sizeof(pipe_seg) ? sizeof(pipe_plan) : 64 * sizeof(pipe_seg))];
    char *buf = bytes <= sizeof stack ? stack : malloc(bytes);
    if (!buf)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    memcpy(buf, msg, sizeof *msg);
    if (tail_bytes)
        memcpy(buf + sizeof *msg, tail, tail_bytes);
    brasa_status st = dist_send(1, DIST_TAG_CONTROL, buf, bytes, err);
    if (buf != stack)
        free(buf);
    return st;
}

brasa_status pipe_contexts_create(const brasa_context_params *params, const pipe_plan *plan, brasa_error *err) {
    pipe_msg msg = { .op = PIPE_CREATE, .n_ctx = params->n_ctx, .n_batch = params->n_batch, .n_threads = params->n_threads,
                     .n_seq = params->n_seq, .kv_type = params->kv_type };
    brasa_status st = send_down(&msg, plan, sizeof *plan, err);
    /* every process answers, so that none is left waiting whatever the first error */
    brasa_status first = st;
    char why[sizeof lead.opened[0].why + 64] = "";
    for (int r = 1; st == BRASA_OK && r < dist_size(); r++) {
        pipe_report rep;
        brasa_status rs = dist_recv(r, DIST_TAG_REPLY, &rep, sizeof rep, NULL, err);
        if (rs != BRASA_OK)
            return rs;
        rep.why[sizeof rep.why - 1] = '\0';
        if (!rep.ok && first == BRASA_OK) {
            first = rep.status < 0 ? (brasa_status)rep.status : BRASA_ERR_INTERNAL;
            snprintf(why, sizeof why, "process %d (on %s): %s", r, host_of(r), rep.why);
        }
    }
    if (first != BRASA_OK && why[0])
        err_set(err, first, "%s", why);
    return first;
}

void pipe_contexts_free(void) {
    const pipe_msg msg = { .op = PIPE_FREE };
    brasa_error err;
    if (send_down(&msg, NULL, 0, &err) != BRASA_OK)
        dist_abort(1);
}

brasa_status pipe_seq_copy(int32_t src, int32_t dst, int32_t n, brasa_error *err) {
    const pipe_msg msg = { .op = PIPE_COPY, .src = src, .dst = dst, .len = n };
    return send_down(&msg, NULL, 0, err);
}

brasa_status pipe_step_send(const pipe_step *s, const void *rows, size_t row_bytes, brasa_error *err) {
    const pipe_msg msg = { .op = PIPE_STEP, .n_segs = s->n_segs, .n = s->n, .first = s->first };
    brasa_status st = send_down(&msg, s->segs, (size_t)s->n_segs * sizeof *s->segs, err);
    if (st == BRASA_OK)
        st = dist_send(1, DIST_TAG_ROWS, rows, (size_t)s->n * row_bytes, err);
    return st;
}

brasa_status pipe_rows_back(const pipe_step *s, void *rows, size_t row_bytes, brasa_error *err) {
    if (s->first >= s->n)
        return BRASA_OK; /* no logits wanted: nothing comes back, and process 0 goes on at once */
    const size_t bytes = (size_t)(s->n - s->first) * row_bytes;
    return dist_recv(dist_size() - 1, DIST_TAG_ROWS, (char *)rows + (size_t)s->first * row_bytes, bytes, NULL, err);
}

void pipe_finish(void) {
    if (!pipe_active() || lead.ended || dist_rank() != 0)
        return;
    lead.ended = true;
    const pipe_msg msg = { .op = PIPE_END };
    brasa_error err;
    if (send_down(&msg, NULL, 0, &err) != BRASA_OK)
        dist_abort(1);
}

/* ---- the other processes ---- */

/* A stage's hand-offs: rows in from the process before; out to the next with the step's header,
 * or, from the last, the wanted rows back to process 0. */
typedef struct stage_link {
    const void *msg; /* the step's control message as received, handed on unchanged */
    size_t msg_bytes;
} stage_link;

static brasa_status stage_in(const pipe_step *s, void *rows, size_t row_bytes, void *user, brasa_error *err) {
    (void)user;
    return dist_recv(dist_rank() - 1, DIST_TAG_ROWS, rows, (size_t)s->n * row_bytes, NULL, err);
}

static brasa_status stage_out(const pipe_step *s, const void *rows, size_t row_bytes, void *user, brasa_error *err) {
    const stage_link *link = user;
    const int r = dist_rank();
    if (r + 1 < dist_size()) {
        brasa_status st = dist_send(r + 1, DIST_TAG_CONTROL, link->msg, link->msg_bytes, err);
        if (st == BRASA_OK)
            st = dist_send(r + 1, DIST_TAG_ROWS, rows, (size_t)s->n * row_bytes, err);
        return st;
    }
    if (s->first >= s->n)
        return BRASA_OK;
    /* without waiting for process 0 to take them: it may be sending this chain its next step */
    return dist_send_nowait(0, DIST_TAG_ROWS, (const char *)rows + (size_t)s->first * row_bytes,
                            (size_t)(s->n - s->first) * row_bytes, err);
}

/* Ends the group after an error in a step or a copy, which leaves the pipeline's state unknown. */
static _Noreturn void fail(const brasa_error *err) {
    fprintf(stderr, "brasa: process %d (on %s): %s\n", dist_rank(), dist_host(), err->message);
    dist_abort(1);
}

int pipe_worker_run(const brasa_model *m, const char *why) {
    const int r = dist_rank();
    brasa_error err = { 0 };
    pipe_report opened = { .ok = m != NULL };
    snprintf(opened.why, sizeof opened.why, "%s", m ? "" : why);
    snprintf(opened.host, sizeof opened.host, "%s", dist_host());
    if (m)
        model_identity(m, &opened.file_size, opened.header_hash);
    plat_memory(&opened.memory_total, &opened.memory);
    if (dist_send(0, DIST_TAG_REPLY, &opened, sizeof opened, &err) != BRASA_OK)
        fail(&err);
    brasa_context *c = NULL;
    size_t cap = sizeof(pipe_msg) + 64 * sizeof(pipe_seg);
    char *buf = malloc(cap);
    if (!buf) {
        err_set(&err, BRASA_ERR_NO_MEMORY, "out of memory");
        fail(&err);
    }
    for (;;) {
        size_t bytes = 0;
        if (dist_peek(r - 1, DIST_TAG_CONTROL, &bytes, &err) != BRASA_OK)
            fail(&err);
        if (bytes > cap) {
            char *grown = realloc(buf, bytes);
            if (!grown) {
                err_set(&err, BRASA_ERR_NO_MEMORY, "out of memory for a message of %zu bytes", bytes);
                fail(&err);
            }
            buf = grown;
            cap = bytes;
        }
        if (dist_recv(r - 1, DIST_TAG_CONTROL, buf, cap, &bytes, &err) != BRASA_OK)
            fail(&err);
        pipe_msg msg;
        if (bytes < sizeof msg) {
            err_set(&err, BRASA_ERR_INTERNAL, "a message of %zu bytes is no pipeline message", bytes);
            fail(&err);
        }
        memcpy(&msg, buf, sizeof msg);
        /* everything but a step goes on down the chain first; a step, after this stage */
        if (msg.op != PIPE_STEP && r + 1 < dist_size() && dist_send(r + 1, DIST_TAG_CONTROL, buf, bytes, &err) != BRASA_OK)
            fail(&err);
        switch (msg.op) {
        case PIPE_END:
            brasa_context_free(c);
            free(buf);
            return 0;
        case PIPE_CREATE: {
            if (bytes != sizeof msg + sizeof(pipe_plan)) {
                err_set(&err, BRASA_ERR_INTERNAL, "a context's plan in a message of %zu bytes", bytes);
                fail(&err);
            }
            brasa_context_free(c);
            c = NULL;
            brasa_context_params p = brasa_context_default_params();
            p.n_ctx = msg.n_ctx;
            p.n_batch = msg.n_batch;
            p.n_threads = msg.n_threads;
            p.n_seq = msg.n_seq;
            p.kv_type = msg.kv_type;
            pipe_report made = { .ok = 1 };
            pipe_plan plan;
            memcpy(&plan, buf + sizeof msg, sizeof plan);
            if (!m) {
                made.ok = 0;
                made.status = BRASA_ERR_IO;
                snprintf(made.why, sizeof made.why, "%s", why);
            } else if (plan.n != dist_size() || plan.first[r] < 0 || plan.end[r] <= plan.first[r] ||
                       plan.end[r] > m->hp.n_layer) {
                made.ok = 0;
                made.status = BRASA_ERR_INTERNAL;
                snprintf(made.why, sizeof made.why, "no layers of the model's %d for this process in the plan", (int)m->hp.n_layer);
            } else if ((made.status = ctx_create_stage(m, &p, plan.first[r], plan.end[r], &c, &err)) != BRASA_OK) {
                made.ok = 0;
                snprintf(made.why, sizeof made.why, "%s", err.message);
                c = NULL;
            }
            if (dist_send(0, DIST_TAG_REPLY, &made, sizeof made, &err) != BRASA_OK)
                fail(&err);
            break;
        }
        case PIPE_FREE:
            brasa_context_free(c);
            c = NULL;
            break;
        case PIPE_PING: { /* the bytes on, or back to process 0 from the last */
            if (msg.n < 1 || (size_t)msg.n > PIPE_PING_MAX) {
                err_set(&err, BRASA_ERR_INTERNAL, "a round trip of %lld bytes", (long long)msg.n);
                fail(&err);
            }
            char *bytes_in = malloc((size_t)msg.n);
            if (!bytes_in || dist_recv(r - 1, DIST_TAG_ROWS, bytes_in, (size_t)msg.n, NULL, &err) != BRASA_OK ||
                dist_send(r + 1 < dist_size() ? r + 1 : 0, DIST_TAG_ROWS, bytes_in, (size_t)msg.n, &err) != BRASA_OK) {
                if (!bytes_in)
                    err_set(&err, BRASA_ERR_NO_MEMORY, "out of memory");
                fail(&err);
            }
            free(bytes_in);
            break;
        }
        case PIPE_COPY:
            if (!c)
                break;
            if (ctx_stage_copy(c, msg.src, msg.dst, msg.len, &err) != BRASA_OK)
                fail(&err);
            break;
        case PIPE_STEP: {
            if (msg.n_segs < 1 || bytes != sizeof msg + (size_t)msg.n_segs * sizeof(pipe_seg)) {
                err_set(&err, BRASA_ERR_INTERNAL, "a step of %d runs in a message of %zu bytes", msg.n_segs, bytes);
                fail(&err);
            }
            if (!c) {
                err_set(&err, BRASA_ERR_INTERNAL, "a step before any context");
                fail(&err);
            }
            /* the runs follow the message in the (allocated, so aligned) buffer; sizeof msg is a
             * multiple of 8 */
            const pipe_step s = { msg.n, msg.first, msg.n_segs, (const pipe_seg *)(const void *)(buf + sizeof msg) };
            stage_link link = { buf, bytes };
            const ctx_stage_io io = { stage_in, stage_out, &link };
            const brasa_status st = ctx_stage_step(c, &s, &io, &err);
            if (st != BRASA_OK)
                fail(&err);
            break;
        }
        default:
            err_set(&err, BRASA_ERR_INTERNAL, "a pipeline message of unknown kind %d", msg.op);
            fail(&err);
        }
    }
}

/* ---- the public calls ---- */

brasa_status brasa_group_start(int *rank, int *size, brasa_error *err) {
    brasa_status st = dist_start(err);
    if (rank)
        *rank = dist_rank();
    if (size)
        *size = dist_size();
    return st;
}

int brasa_group_serve(const brasa_model *model, const char *why_not) {
    if (dist_rank() == 0) {
        fprintf(stderr, "brasa: brasa_group_serve is for the processes other than 0\n");
        return 1;
    }
    return pipe_worker_run(model, why_not ? why_not : "it could not open the model");
}

void brasa_group_stop(void) {
    pipe_finish();
    dist_stop();
}

int brasa_group_size(void) {
    return dist_size();
}

const char *brasa_group_host_name(void) {
    return dist_host();
}

brasa_status brasa_group_hosts(brasa_group_host *out, int n, brasa_error *err) {
    if (dist_rank() != 0 || n < dist_size())
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "the group's hosts are for process 0, with room for %d", dist_size());
    brasa_status st = hear_opened(err);
    if (st != BRASA_OK)
        return st;
    for (int r = 0; r < dist_size(); r++) {
        brasa_group_host *h = &out[r];
        memset(h, 0, sizeof *h);
        snprintf(h->name, sizeof h->name, "%s", host_of(r));
        h->memory_total = lead.opened[r].memory_total;
        h->memory_available = lead.opened[r].memory;
        h->processes_on_host = processes_on_host_of(r);
    }
    return BRASA_OK;
}

brasa_status brasa_group_link_seconds(size_t bytes, int rounds, double *seconds, brasa_error *err) {
    *seconds = 0.0;
    if (!pipe_active() || dist_rank() != 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "a round trip of the link is for process 0 of several");
    if (bytes < 1 || bytes > PIPE_PING_MAX || rounds < 1)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "a round trip of %zu bytes (1 to %zu), %d times", bytes, PIPE_PING_MAX,
                       rounds);
    char *out = calloc(1, bytes), *back = malloc(bytes);
    brasa_status st = out && back ? BRASA_OK : err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    const pipe_msg msg = { .op = PIPE_PING, .n = (int64_t)bytes };
    for (int i = 0; i < rounds && st == BRASA_OK; i++) {
        const double t0 = plat_time_seconds();
        st = send_down(&msg, NULL, 0, err);
        if (st == BRASA_OK)
            st = dist_send(1, DIST_TAG_ROWS, out, bytes, err);
        if (st == BRASA_OK)
            st = dist_recv(dist_size() - 1, DIST_TAG_ROWS, back, bytes, NULL, err);
        const double t = plat_time_seconds() - t0;
        if (st == BRASA_OK && (i == 0 || t < *seconds))
            *seconds = t;
    }
    free(out);
    free(back);
    return st;
}
