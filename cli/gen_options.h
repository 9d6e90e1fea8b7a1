/* gen_options.h: the options that every generating command shares (model, context, threads,
 * sampling, chat format, stop strings), parsed in one place so run, chat and serve agree. */
#ifndef BRASA_CLI_GEN_OPTIONS_H
#define BRASA_CLI_GEN_OPTIONS_H

#include <stdbool.h>

#include "brasa.h"

#define GEN_MAX_STOP 16

typedef struct gen_options {
    const char *model_path;
    const char *prompt;
    const char *system;
    const char *chat_format;
    const char *chat_template_file; /* a Jinja template to use instead of the model's */
    bool chat;
    bool think;        /* formats that reason: let the model think first (--think, the default) */
    bool think_given;  /* --think or --no-think was given */
    int32_t n_predict;
    brasa_context_params ctx;
    brasa_sampler_params sampling;
    const char *stop[GEN_MAX_STOP + 1];
    int n_stop;
} gen_options;

void gen_options_defaults(gen_options *o);

/* Tries to take argv[*i] (and its value) as a shared option. Returns 1 when taken (advancing *i),
 * 0 when the option is not a shared one, -1 after printing a usage error. */
int gen_options_parse(gen_options *o, const char *cmd, const char *usage, int argc, char **argv, int *i);

/* The options' help text, for the commands' usage. */
extern const char gen_options_help[];

/* The template file's text (caller frees), or NULL without one; *failed after printing why. */
char *gen_chat_template(const gen_options *o, bool *failed);

/* Opens the model (with progress on a terminal), a context and a sampler; prints errors. */
bool gen_open(const gen_options *o, brasa_model **model, brasa_context **ctx, brasa_sampler **sampler);

#endif
