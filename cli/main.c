/* main.c: the brasa program: dispatches to one command per file (cmd_*.c) through one table, which
 * also makes the usage text. */
#include <string.h>

#include "cli.h"
#include "platform/platform.h"

#ifndef BRASA_SERVER
static int cmd_serve_missing(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "brasa: this build has no server: build it with libmicrohttpd and cJSON installed\n");
    return CLI_FAILED;
}
#endif

/* opens_model: the command takes a model file (a relative path --model-dir applies to) */
static const struct {
    const char *name, *synopsis, *help;
    int (*run)(int argc, char **argv);
    bool opens_model;
} commands[] = {
    { "info", "info MODEL", "describe a model file: architecture, shape, tokenizer, tensors", cmd_info, true },
    { "tokenize", "tokenize -m MODEL", "turn text into token ids", cmd_tokenize, true },
    { "detokenize", "detokenize -m MODEL", "turn token ids into text", cmd_detokenize, true },
    { "embed", "embed -m MODEL TEXT", "the embedding vector of a text (embedding models such as bert)", cmd_embed, true },
    { "template", "template MODEL", "print the prompt a model's chat template makes of messages", cmd_template, true },
    { "run", "run -m MODEL -p TXT", "generate text after a prompt", cmd_run, true },
    { "chat", "chat -m MODEL", "talk with a model in the terminal", cmd_chat, true },
    { "bench", "bench -m MODEL", "measure prompt and generation speed (tokens/s)", cmd_bench, true },
    { "fit", "fit MODEL", "will it fit a device, at what context, how fast (--compare: every device)", cmd_fit, true },
    { "doctor", "doctor", "what this machine has and what brasa can do with it", cmd_doctor, false },
    { "cost", "cost", "what local inference costs against a cloud API", cmd_cost, false },
    { "tune", "tune -m MODEL", "measure a GPU's kernel variants for a model and keep the fastest", cmd_tune, true },
    { "pull", "pull OWNER/REPO[:Q]", "download a GGUF model from Hugging Face into the library", cmd_pull, false },
    { "list", "list", "the models in the library: name, quant, size, path", cmd_list, false },
    { "rm", "rm OWNER/REPO[:Q]", "remove a model from the library", cmd_rm, false },
#ifdef BRASA_SERVER
    { "serve", "serve -m MODEL", "serve an OpenAI-compatible API and a chat page over HTTP", cmd_serve, true },
#else
    { "serve", NULL, NULL, cmd_serve_missing, true }, /* not listed: the build has no server */
#endif
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void print_usage(FILE *out) {
    fputs("Usage: brasa COMMAND [OPTIONS]\n\nbrasa runs GGUF language models locally.\n\nCommands:\n", out);
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (commands[i].synopsis)
            fprintf(out, "  %-20s%s\n", commands[i].synopsis, commands[i].help);
    fputs("\nMODEL is a GGUF file or a Hugging Face name, OWNER/REPO[:QUANT], pulled when missing.\n"
          "--model-dir FOLDER, or HOST:FOLDER,...[,FOLDER] (each machine of an mpirun its own), is\n"
          "where a model's relative path is looked up, for every command that opens a model.\n"
          "Run 'brasa COMMAND --help' for a command's options.\n", out);
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (cli_is_help(cmd)) {
        print_usage(stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("brasa %s\n", BRASA_VERSION_STRING);
        return CLI_OK;
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(cmd, commands[i].name) != 0)
            continue;
        if (cli_model_dir()[0] && !commands[i].opens_model) {
            fprintf(stderr, "brasa %s: --model-dir is for the commands that open a model file\n", cmd);
            return CLI_USAGE;
        }
        return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "brasa: unknown command '%s'\n\n", cmd);
    print_usage(stderr);
    return CLI_USAGE;
}

/* Started by an MPI launcher as one of several processes, process 0 runs the command and every
 * other serves it a share of the model's layers (worker.c); alone, the command runs as it is. */
int main(int argc, char **argv) {
    plat_args_utf8(&argc, &argv);
    plat_console_init();
    brasa_error err;
    int rank = 0;
    if (brasa_group_start(&rank, NULL, &err) != BRASA_OK) {
        fprintf(stderr, "brasa: %s\n", err.message);
        return CLI_FAILED;
    }
    int rc;
    if (!cli_model_dir_take(&argc, argv, brasa_group_host_name()))
        rc = rank > 0 ? (brasa_group_serve(NULL, "its --model-dir is wrong (its own message says how)") ? CLI_FAILED : CLI_OK)
                      : CLI_USAGE;
    else
        rc = rank > 0 ? cli_worker(argc - 1, argv + 1) : dispatch(argc, argv);
    brasa_group_stop();
    return rc;
}
