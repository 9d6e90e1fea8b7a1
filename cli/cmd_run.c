/* cmd_run.c: `brasa run` (one prompt, streamed answer, speeds on stderr) and `brasa chat` (an
 * interactive conversation in the terminal; Ctrl-C stops the reply, not the program). A reply in a
 * format that reasons shows its thinking apart from its answer, and its tool calls as such; the
 * reply is split as the server splits it (engine/reply_parts.h). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/buf.h"
#include "engine/reply_parts.h"
#include "gen_options.h"
#include "platform/platform.h"

static const char run_usage_head[] =
    "Usage: brasa run -m MODEL -p PROMPT [options]\n"
    "\n"
    "Generates text after PROMPT (or - for standard input) and streams it to standard output; the\n"
    "prompt and generation speeds go to standard error. Control tokens written in a raw prompt are\n"
    "recognized. With --chat the prompt is one user message in the model's chat format.\n"
    "\n"
    "With a format that reasons (qwen3, gpt-oss), the model's thinking is shown apart from its answer:\n"
    "dimmed before it on a terminal; when standard output is not a terminal it gets the answer alone\n"
    "and the thinking goes to standard error, after a line \"thinking:\". A tool call that gpt-oss\n"
    "writes is shown as a line \"[tool call] NAME ARGUMENTS\", not as answer.\n"
    "\n"
    "  -p, --prompt TEXT       the prompt\n"
    "  --chat                  format the prompt as a chat turn\n"
    "  --system TEXT           with --chat: a system message\n";

static const char chat_usage_head[] =
    "Usage: brasa chat -m MODEL [--system TEXT] [options]\n"
    "\n"
    "An interactive chat in the terminal, in the model's chat format. Type a message and press\n"
    "Enter; Ctrl-C stops the current reply (at the prompt it quits); /reset starts over; /exit or\n"
    "end of input leaves. With a format that reasons (qwen3, gpt-oss), the model's thinking is shown\n"
    "apart from its answer, as `brasa run --chat` shows it, and the conversation keeps only the answers.\n"
    "\n"
    "  --system TEXT           a system message\n";

static char run_usage[4096], chat_usage[4096];

static void build_usages(void) {
    snprintf(run_usage, sizeof run_usage, "%s%s", run_usage_head, gen_options_help);
    snprintf(chat_usage, sizeof chat_usage, "%s%s", chat_usage_head, gen_options_help);
}

static bool print_text(const char *text, size_t len, void *user) {
    (void)user;
    plat_write_text(stdout, text, len);
    fflush(stdout);
    return true;
}

/* A reply on its way to the screen, split into its parts: the reasoning dimmed on a terminal (or,
 * when stdout is not one, on stderr after a "thinking:" line, so that a pipeline reads the answer
 * alone), the answer on stdout and, for a chat's history, in *answer, a tool call as a line of its
 * own on stdout (the chat offers no tools, but gpt-oss may still call one). */
typedef struct reply_view {
    reply_parts parts;
    bool tty, styles;    /* stdout is a terminal; it shows ANSI styles */
    bool show_reasoning; /* false with --no-think: what a model reasons anyway (gpt-oss) is hidden */
    bool thinking;       /* reasoning shown, the answer not yet begun */
    bool newline_last;   /* the reasoning shown so far ends with a newline */
    bool answer_open;    /* stdout's last line (answer text) is not ended */
    bool call_last;      /* the last thing shown on stdout is a tool call's line */
    buf *answer;         /* may be NULL */
} reply_view;

static void end_thinking(reply_view *v) {
    if (!v->thinking)
        return;
    v->thinking = false;
    FILE *to = v->tty ? stdout : stderr;
    if (v->styles)
        fputs("\x1b[0m", to);
    fputs(v->newline_last ? "\n" : "\n\n", to); /* a blank line before the answer */
    fflush(to);
}

/* Ends the answer's line on stdout, for what is shown after it. */
static void end_answer_line(reply_view *v) {
    if (v->answer_open)
        fputc('\n', stdout);
    v->answer_open = false;
}

static bool view_event(toolcall_event kind, const char *text, size_t len, const toolcall_call *call, void *user) {
    reply_view *v = user;
    if (kind == TOOLCALL_REASONING) {
        if (!v->show_reasoning)
            return true;
        FILE *to = v->tty ? stdout : stderr;
        if (!v->thinking) {
            if (v->tty)
                end_answer_line(v);
            v->thinking = true;
            fputs(v->styles ? "\x1b[2mthinking:\n" : "thinking:\n", to);
        }
        plat_write_text(to, text, len);
        fflush(to);
        v->newline_last = text[len - 1] == '\n';
        return true;
    }
    end_thinking(v);
    if (kind == TOOLCALL_CALL) {
        end_answer_line(v);
        fputs("[tool call] ", stdout);
        plat_write_text(stdout, call->name, strlen(call->name));
        fputc(' ', stdout);
        plat_write_text(stdout, call->arguments, strlen(call->arguments));
        fputc('\n', stdout);
        fflush(stdout);
        v->call_last = true;
        return true;
    }
    v->call_last = false;
    if (v->answer)
        buf_append(v->answer, text, len);
    v->answer_open = text[len - 1] != '\n';
    return print_text(text, len, NULL);
}

/* start and format: how the reply begins and the parser it needs (reply_parts.h). */
static bool view_init(reply_view *v, brasa_chat_reasoning start, toolcall_format format, bool show_reasoning,
                      buf *answer) {
    memset(v, 0, sizeof *v);
    v->tty = plat_is_terminal(1);
    v->styles = v->tty && plat_terminal_styles(1);
    v->show_reasoning = show_reasoning;
    v->answer = answer;
    return reply_parts_init(&v->parts, start, format, NULL, view_event, v, NULL) == BRASA_OK;
}

/* The reply ended (or was stopped): what the readers held back, and the terminal's style back. */
static void view_finish(reply_view *v) {
    reply_parts_finish(&v->parts);
    end_thinking(v);
}

static bool view_text(const char *text, size_t len, void *user) {
    reply_view *v = user;
    return reply_parts_push(&v->parts, text, len);
}

/* The parser a chat's reply needs (no tools are offered: only harmony has one), and the text the
 * engine must hand out for it (a parser reads control tokens' text). */
static toolcall_format reply_format(const brasa_model *m, const brasa_chat_params *cp) {
    return reply_parts_format(reply_parts_template_format(m, cp), false);
}

static unsigned detokenize_flags(toolcall_format format) {
    return format != TOOLCALL_NONE ? BRASA_DETOKENIZE_SPECIAL : BRASA_DETOKENIZE_DEFAULT;
}

static void print_speed(const brasa_generate_stats *s) {
    fprintf(stderr, "\nprompt: %d tokens in %.2f s (%.1f tokens/s); generation: %d tokens in %.2f s (%.1f tokens/s)\n",
            s->n_prompt, s->prompt_seconds, s->prompt_seconds > 0 ? s->n_prompt / s->prompt_seconds : 0.0,
            s->n_generated, s->generate_seconds,
            s->generate_seconds > 0 ? s->n_generated / s->generate_seconds : 0.0);
}

/* Tokenizes with a growing buffer. */
static brasa_token *tokenize_all(const brasa_model *m, const char *text, size_t len, unsigned flags, size_t *n,
                                 brasa_error *err) {
    brasa_status st = brasa_tokenize(m, text, len, flags, NULL, 0, n, err);
    if (st != BRASA_ERR_BUFFER_TOO_SMALL && st != BRASA_OK)
        return NULL;
    brasa_token *t = malloc((*n ? *n : 1) * sizeof *t);
    if (t && brasa_tokenize(m, text, len, flags, t, *n, n, err) != BRASA_OK) {
        free(t);
        t = NULL;
    }
    return t;
}

static brasa_token *chat_tokens(const brasa_model *m, const brasa_chat_params *cp, const brasa_chat_message *msgs,
                                size_t n_msgs, size_t *n, brasa_error *err) {
    brasa_status st = brasa_chat_tokenize_with(m, msgs, n_msgs, cp, NULL, 0, n, err);
    if (st != BRASA_ERR_BUFFER_TOO_SMALL && st != BRASA_OK)
        return NULL;
    brasa_token *t = malloc((*n ? *n : 1) * sizeof *t);
    if (t && brasa_chat_tokenize_with(m, msgs, n_msgs, cp, t, *n, n, err) != BRASA_OK) {
        free(t);
        t = NULL;
    }
    return t;
}

static volatile int interrupted;

static brasa_chat_params chat_params(const gen_options *o, const char *chat_template) {
    brasa_chat_params cp = brasa_chat_default_params();
    cp.format = o->chat_format;
    cp.template_text = chat_template;
    cp.enable_thinking = o->think;
    return cp;
}

int cmd_run(int argc, char **argv) {
    build_usages();
    gen_options o;
    gen_options_defaults(&o);
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(run_usage, stdout);
            return CLI_OK;
        }
        if (strcmp(argv[i], "--chat") == 0) {
            o.chat = true;
            continue;
        }
        int r = gen_options_parse(&o, "run", run_usage, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (r == 0)
            return cli_usage_error("run", run_usage, "unknown option '%s'", argv[i]);
    }
    if (!o.model_path)
        return cli_usage_error("run", run_usage, "missing -m MODEL");
    if (!o.prompt)
        return cli_usage_error("run", run_usage, "missing -p PROMPT");
    if (o.system && !o.chat)
        return cli_usage_error("run", run_usage, "--system needs --chat");
    if (o.think_given && !o.chat)
        return cli_usage_error("run", run_usage, "%s needs --chat", o.think ? "--think" : "--no-think");
    char *stdin_text = NULL;
    size_t prompt_len = strlen(o.prompt);
    if (strcmp(o.prompt, "-") == 0) {
        stdin_text = cli_read_stdin(&prompt_len);
        if (!stdin_text)
            return cli_fail("cannot read standard input");
        o.prompt = stdin_text;
    }
    if (prompt_len == 0) {
        free(stdin_text);
        return cli_fail("the prompt is empty: give some text with -p");
    }
    bool failed;
    char *chat_template = gen_chat_template(&o, &failed);
    brasa_model *m;
    brasa_context *c;
    brasa_sampler *s;
    if (failed || !gen_open(&o, &m, &c, &s)) {
        free(chat_template);
        free(stdin_text);
        return CLI_FAILED;
    }
    brasa_error err;
    size_t n = 0;
    brasa_token *tokens = NULL;
    const brasa_chat_params cp = chat_params(&o, chat_template);
    const toolcall_format format = o.chat ? reply_format(m, &cp) : TOOLCALL_NONE;
    reply_view view;
    const bool viewing = view_init(&view, o.chat ? brasa_chat_reasoning_start(m, &cp) : BRASA_REASONING_NONE,
                                   format, o.think, NULL);
    if (!viewing) {
        /* (out of memory: said below) */
    } else if (o.chat) {
        brasa_chat_message msgs[2];
        size_t k = 0;
        if (o.system)
            msgs[k++] = (brasa_chat_message){ "system", o.system };
        msgs[k++] = (brasa_chat_message){ "user", o.prompt };
        tokens = chat_tokens(m, &cp, msgs, k, &n, &err);
    } else {
        tokens = tokenize_all(m, o.prompt, prompt_len, BRASA_TOKENIZE_ADD_BOS | BRASA_TOKENIZE_PARSE_SPECIAL, &n, &err);
    }
    int rc = CLI_OK;
    if (!tokens) {
        rc = cli_fail("%s", viewing ? err.message : "out of memory");
    } else {
        brasa_generate_params gp = brasa_generate_default_params();
        gp.n_predict = o.n_predict;
        gp.stop = o.n_stop ? o.stop : NULL;
        gp.detokenize_flags = detokenize_flags(format);
        gp.on_text = view_text;
        gp.user_data = &view;
        gp.abort_flag = &interrupted;
        brasa_generate_stats stats;
        plat_interrupt_install(&interrupted);
        brasa_status st = brasa_generate(c, s, tokens, n, &gp, &stats, &err);
        plat_interrupt_remove();
        view_finish(&view);
        if (st != BRASA_OK) {
            rc = cli_fail("%s", err.message);
        } else {
            print_speed(&stats);
            if (stats.stop_reason == BRASA_STOP_CONTEXT)
                fprintf(stderr, "stopped: the context of %d tokens is full (use --ctx for more)\n", brasa_context_size(c));
            if (stats.stop_reason == BRASA_STOP_ABORTED)
                rc = CLI_FAILED;
        }
    }
    reply_parts_free(&view.parts);
    free(tokens);
    free(stdin_text);
    free(chat_template);
    brasa_sampler_free(s);
    brasa_context_free(c);
    brasa_model_free(m);
    return rc;
}

/* ---- chat ---- */

typedef struct conversation {
    brasa_chat_message *msgs;
    size_t n, cap;
    buf reply;                 /* the answer of the reply being generated (without its reasoning) */
    reply_view view;
    brasa_token *in_ctx;       /* the tokens the context holds */
    size_t n_in_ctx, cap_in_ctx;
} conversation;

static bool add_message(conversation *cv, const char *role, const char *content, size_t len) {
    if (cv->n == cv->cap) {
        size_t cap = cv->cap ? cv->cap * 2 : 16;
        brasa_chat_message *p = realloc(cv->msgs, cap * sizeof *p);
        if (!p)
            return false;
        cv->msgs = p;
        cv->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return false;
    memcpy(copy, content, len);
    copy[len] = '\0';
    cv->msgs[cv->n].role = role;
    cv->msgs[cv->n].content = copy; /* the conversation owns it now: clear_messages frees it */
    cv->n++;
    return true;
}

static void clear_messages(conversation *cv, size_t keep) {
    while (cv->n > keep)
        free((char *)cv->msgs[--cv->n].content);
}

static bool remember_token(conversation *cv, brasa_token t) {
    if (cv->n_in_ctx == cv->cap_in_ctx || !cv->in_ctx) {
        size_t cap = cv->cap_in_ctx ? cv->cap_in_ctx * 2 : 256;
        brasa_token *p = realloc(cv->in_ctx, cap * sizeof *p);
        if (!p)
            return false;
        cv->in_ctx = p;
        cv->cap_in_ctx = cap;
    }
    cv->in_ctx[cv->n_in_ctx++] = t;
    return true;
}

static bool chat_text(const char *text, size_t len, void *user) {
    conversation *cv = user;
    return view_text(text, len, &cv->view);
}

static void chat_token(brasa_token t, void *user) {
    remember_token(user, t);
}

/* Reads one line from stdin (without the newline); NULL at end of input. */
static char *read_line(size_t *len) {
    buf b = { 0 };
    int ch;
    while ((ch = fgetc(stdin)) != EOF && ch != '\n') {
        char c = (char)ch;
        if (!buf_append(&b, &c, 1)) {
            buf_free(&b);
            return NULL;
        }
    }
    if (ch == EOF && b.len == 0) {
        buf_free(&b);
        return NULL;
    }
    if (b.len && b.data[b.len - 1] == '\r')
        b.len--;
    if (!buf_append(&b, "", 1)) {
        buf_free(&b);
        return NULL;
    }
    *len = b.len - 1;
    return b.data;
}

int cmd_chat(int argc, char **argv) {
    build_usages();
    gen_options o;
    gen_options_defaults(&o);
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(chat_usage, stdout);
            return CLI_OK;
        }
        int r = gen_options_parse(&o, "chat", chat_usage, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (r == 0 || o.prompt)
            return cli_usage_error("chat", chat_usage, "unknown option '%s'", argv[i]);
    }
    if (!o.model_path)
        return cli_usage_error("chat", chat_usage, "missing -m MODEL");
    bool failed;
    char *chat_template = gen_chat_template(&o, &failed);
    brasa_model *m;
    brasa_context *c;
    brasa_sampler *s;
    if (failed || !gen_open(&o, &m, &c, &s)) {
        free(chat_template);
        return CLI_FAILED;
    }
    brasa_error err;
    const brasa_chat_params cp = chat_params(&o, chat_template);
    brasa_model_desc desc;
    brasa_model_describe(m, &desc);
    const char *format = o.chat_format                    ? o.chat_format
                         : chat_template || desc.chat_template ? "its template"
                                                               : brasa_chat_format_detect(m);
    if (!format) {
        free(chat_template);
        brasa_sampler_free(s);
        brasa_context_free(c);
        brasa_model_free(m);
        return cli_fail("this model has no chat template and brasa recognizes no format: give one with "
                        "--chat-template-file, or choose --chat-format (%s)", brasa_chat_format_names());
    }
    const bool tty = plat_is_terminal(0);
    conversation cv = { 0 };
    size_t keep = 0;
    if (o.system) {
        add_message(&cv, "system", o.system, strlen(o.system));
        keep = 1;
    }
    const brasa_chat_reasoning reasoning = brasa_chat_reasoning_start(m, &cp);
    const toolcall_format reply_syntax = reply_format(m, &cp);
    const bool reasons = reasoning != BRASA_REASONING_NONE || reply_syntax == TOOLCALL_HARMONY;
    if (tty)
        fprintf(stderr, "brasa chat (chat format: %s%s): /exit to leave, /reset to start over, Ctrl-C stops a reply\n", format,
                !reasons ? "" : o.think ? ", thinking on" : ", thinking off");
    int rc = CLI_OK;
    for (;;) {
        if (tty) {
            fputs("\n> ", stdout);
            fflush(stdout);
        }
        size_t len;
        char *line = read_line(&len);
        if (!line || strcmp(line, "/exit") == 0) {
            free(line);
            break;
        }
        if (strcmp(line, "/reset") == 0) {
            clear_messages(&cv, keep);
            brasa_context_reset(c);
            cv.n_in_ctx = 0;
            free(line);
            continue;
        }
        if (len == 0) {
            free(line);
            continue;
        }
        bool ok = add_message(&cv, "user", line, len);
        free(line);
        size_t n = 0;
        brasa_token *tokens = ok ? chat_tokens(m, &cp, cv.msgs, cv.n, &n, &err) : NULL;
        if (!tokens) {
            rc = cli_fail("%s", ok ? err.message : "out of memory");
            break;
        }
        /* reuse what the context already holds of this conversation */
        size_t same = 0;
        while (same < cv.n_in_ctx && same + 1 < n && cv.in_ctx[same] == tokens[same])
            same++;
        brasa_context_truncate(c, (int32_t)same);
        same = (size_t)brasa_context_used(c); /* a sliding-window ring may not rewind that far */
        cv.n_in_ctx = same;
        for (size_t i = same; i < n; i++)
            remember_token(&cv, tokens[i]);
        cv.reply.len = 0;
        if (!view_init(&cv.view, reasoning, reply_syntax, o.think, &cv.reply)) {
            free(tokens);
            rc = cli_fail("out of memory");
            break;
        }
        brasa_generate_params gp = brasa_generate_default_params();
        gp.n_predict = o.n_predict;
        gp.stop = o.n_stop ? o.stop : NULL;
        gp.detokenize_flags = detokenize_flags(reply_syntax);
        gp.on_text = chat_text;
        gp.on_token = chat_token;
        gp.user_data = &cv;
        interrupted = 0;
        gp.abort_flag = &interrupted;
        brasa_generate_stats stats;
        plat_interrupt_install(&interrupted);
        brasa_status st = brasa_generate(c, s, tokens + same, n - same, &gp, &stats, &err);
        plat_interrupt_remove();
        view_finish(&cv.view);
        reply_parts_free(&cv.view.parts);
        free(tokens);
        if (st == BRASA_CONTEXT_FULL || (st == BRASA_OK && stats.stop_reason == BRASA_STOP_CONTEXT)) {
            fprintf(stderr, "\n[the context of %d tokens is full: /reset to start over, or use --ctx]\n",
                    brasa_context_size(c));
            if (st != BRASA_OK) {
                clear_messages(&cv, cv.n - 1); /* drop the message that did not fit */
                brasa_context_reset(c);
                cv.n_in_ctx = 0;
                continue;
            }
        } else if (st != BRASA_OK) {
            rc = cli_fail("%s", err.message);
            break;
        }
        if (!cv.view.call_last) /* (a call's line is ended already) */
            fputc('\n', stdout);
        if (stats.stop_reason == BRASA_STOP_ABORTED && tty)
            fprintf(stderr, "[stopped]\n");
        if (!add_message(&cv, "assistant", cv.reply.data ? cv.reply.data : "", cv.reply.len)) {
            rc = cli_fail("out of memory");
            break;
        }
    }
    clear_messages(&cv, 0);
    free(cv.msgs);
    free(cv.in_ctx);
    buf_free(&cv.reply);
    free(chat_template);
    brasa_sampler_free(s);
    brasa_context_free(c);
    brasa_model_free(m);
    return rc;
}
