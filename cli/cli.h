/* cli.h: what the command files share: the commands themselves, argument helpers, JSON output and
 * error reporting. Exit codes: 0 ok, 1 failed, 2 usage. */
#ifndef BRASA_CLI_H
#define BRASA_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "brasa.h"

enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_cost(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_serve(int argc, char **argv); /* when built with the server (BRASA_SERVER) */
int cmd_pull(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_rm(int argc, char **argv);

/* Prints "brasa CMD: message" and the command's usage to stderr; returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...);
/* Prints "brasa: message" to stderr; returns CLI_FAILED. */
int cli_fail(const char *fmt, ...);
/* A process of a pipeline other than process 0: serves the command's model (worker.c). */
int cli_worker(int argc, char **argv);
/* --model-dir FOLDER or HOST:FOLDER,...,[FOLDER] (model_dir.c): taken out of argv, this machine's
 * folder (host: its name, "" when unknown) kept for cli_model_path; false after printing why. */
bool cli_model_dir_take(int *argc, char **argv, const char *host);
/* The folder --model-dir gave this process ("" when none). */
const char *cli_model_dir(void);
bool cli_is_help(const char *arg);
/* Parses a whole decimal integer within [lo, hi]. */
bool cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* Parses a KV cache type, "f16" or "f32", into a brasa_kv_type. */
bool cli_parse_kv_type(const char *s, int32_t *out);
/* Parses --gpu-layers: "auto", "all" or a count (0: none) into brasa_context_params.gpu_layers. */
bool cli_parse_gpu_layers(const char *s, int32_t *out);
/* Reads all of stdin; returns a malloc'ed buffer (caller frees) or NULL on failure. */
char *cli_read_stdin(size_t *len);
/* Reads a text file of at most max bytes, NUL-terminated (caller frees); NULL after printing why. */
char *cli_read_file(const char *path, size_t max, size_t *len);
#define CLI_MAX_TEMPLATE_BYTES (1u << 20) /* a chat template or a messages file */
/* A progress callback (brasa_model_params, brasa_context_params, brasa_tune_params) that prints
 * "LABEL NN%" over itself on stderr and clears the line at 100%; user is the label. Pass it only
 * when stderr is a terminal. */
void cli_progress(float fraction, void *label);
/* What a command's MODEL argument names, as a file path (cmd_library.c): a file that exists is
 * itself; a model name (OWNER/REPO[:QUANT]) is the library's copy, pulled from the hub first (with
 * progress on a terminal) when the library lacks it, unless offline (HF_HUB_OFFLINE=1 or
 * BRASA_OFFLINE=1); anything else is returned as given, for the opener to report. Returns arg or
 * out (size bytes, LIBRARY_PATH_MAX is enough), or NULL after printing why ("brasa: NAME: ..."). */
const char *cli_model_path(const char *arg, char *out, size_t size);
#define CLI_MODEL_PATH_MAX 4096
/* Opens a model (a file or a name, through cli_model_path), printing the error as
 * "brasa: MODEL: message". */
brasa_model *cli_open_model(const char *path);

/* JSON output: a string value, escaped, with ill-formed UTF-8 replaced by U+FFFD. */
void json_string(FILE *out, const char *s, size_t len);
static inline void json_cstr(FILE *out, const char *s) {
    json_string(out, s ? s : "", s ? strlen(s) : 0);
}

#endif
