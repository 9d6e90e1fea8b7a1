/* main.c: the brasa program: dispatches to one command per file (cmd_*.c). */
#include <string.h>

#include "cli.h"
#include "platform/platform.h"

static const char usage[] =
    "Usage: brasa COMMAND [OPTIONS]\n"
    "\n"
    "brasa runs GGUF language models locally.\n"
    "\n"
    "Commands:\n"
    "  info MODEL          describe a model file: architecture, shape, tokenizer, tensors\n"
    "  tokenize -m MODEL   turn text into token ids\n"
    "  detokenize -m MODEL turn token ids into text\n"
    "  run -m MODEL -p TXT generate text after a prompt\n"
    "  chat -m MODEL       talk with a model in the terminal\n"
    "  bench -m MODEL      measure prompt and generation speed (tokens/s)\n"
    "  fit MODEL           will it fit a device, at what context, how fast (--compare: every device)\n"
    "  doctor              what this machine has and what brasa can do with it\n"
    "  cost                what local inference costs against a cloud API\n"
    "  tune -m MODEL       measure a GPU's kernel variants for a model and keep the fastest\n"
#ifdef BRASA_SERVER
    "  serve -m MODEL      serve an OpenAI-compatible API and a chat page over HTTP\n"
#endif
    "\n"
    "Run 'brasa COMMAND --help' for a command's options.\n";

int main(int argc, char **argv) {
    plat_args_utf8(&argc, &argv);
    plat_console_init();
    if (argc < 2) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (cli_is_help(cmd)) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("brasa %s\n", BRASA_VERSION_STRING);
        return CLI_OK;
    }
    if (strcmp(cmd, "info") == 0)
        return cmd_info(argc - 1, argv + 1);
    if (strcmp(cmd, "tokenize") == 0)
        return cmd_tokenize(argc - 1, argv + 1);
    if (strcmp(cmd, "detokenize") == 0)
        return cmd_detokenize(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "chat") == 0)
        return cmd_chat(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "fit") == 0)
        return cmd_fit(argc - 1, argv + 1);
    if (strcmp(cmd, "doctor") == 0)
        return cmd_doctor(argc - 1, argv + 1);
    if (strcmp(cmd, "cost") == 0)
        return cmd_cost(argc - 1, argv + 1);
    if (strcmp(cmd, "tune") == 0)
        return cmd_tune(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0) {
#ifdef BRASA_SERVER
        return cmd_serve(argc - 1, argv + 1);
#else
        fprintf(stderr, "brasa: this build has no server: build it with libmicrohttpd and cJSON installed\n");
        return CLI_FAILED;
#endif
    }
    fprintf(stderr, "brasa: unknown command '%s'\n\n%s", cmd, usage);
    return CLI_USAGE;
}
