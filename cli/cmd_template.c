/* cmd_template.c: `brasa template`: the exact prompt a model's chat template makes of a
 * conversation (messages and tools from JSON files, as OpenAI's API takes them), for people
 * debugging a model's formatting. Prints the rendered text and nothing else. */
#include <stdlib.h>

#include "cli.h"

static const char usage[] =
    "Usage: brasa template MODEL --messages FILE.json [--tools FILE.json] [--no-generation-prompt]\n"
    "                      [--chat-template-file FILE] [--kwargs JSON] [--no-think] [--chat-format NAME]\n"
    "\n"
    "Prints exactly the prompt the model's chat template (or --chat-template-file's) renders from the\n"
    "messages (a JSON array of {\"role\", \"content\", \"tool_calls\", ...}) and tools (a JSON array of\n"
    "OpenAI function tools), with the generation prompt unless --no-generation-prompt; nothing is\n"
    "added, not even a final newline. --kwargs passes more template variables (a JSON object);\n"
    "--no-think sets enable_thinking to false. The model file may also be given with -m.\n";

int cmd_template(int argc, char **argv) {
    const char *model_path = NULL, *messages_path = NULL, *tools_path = NULL, *template_path = NULL;
    const char *kwargs = NULL, *format = NULL;
    bool generation_prompt = true, think = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            fputs(usage, stdout);
            return CLI_OK;
        }
        if (strcmp(a, "--no-generation-prompt") == 0) {
            generation_prompt = false;
            continue;
        }
        if (strcmp(a, "--no-think") == 0) {
            think = false;
            continue;
        }
        if (a[0] != '-') {
            if (model_path)
                return cli_usage_error("template", usage, "one model only ('%s' and '%s')", model_path, a);
            model_path = a;
            continue;
        }
        const char **slot = strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0 ? &model_path
                            : strcmp(a, "--messages") == 0                    ? &messages_path
                            : strcmp(a, "--tools") == 0                       ? &tools_path
                            : strcmp(a, "--chat-template-file") == 0          ? &template_path
                            : strcmp(a, "--kwargs") == 0                      ? &kwargs
                            : strcmp(a, "--chat-format") == 0                 ? &format
                                                                              : NULL;
        if (!slot)
            return cli_usage_error("template", usage, "unknown option '%s'", a);
        if (!v)
            return cli_usage_error("template", usage, "%s needs a value", a);
        *slot = v;
        i++;
    }
    if (!model_path)
        return cli_usage_error("template", usage, "missing MODEL");
    if (!messages_path)
        return cli_usage_error("template", usage, "missing --messages FILE.json");
    size_t messages_len = 0, len = 0;
    char *messages = NULL, *tools = NULL, *chat_template = NULL, *text = NULL;
    int rc = CLI_FAILED;
    brasa_model *m = NULL;
    if (!(messages = cli_read_file(messages_path, CLI_MAX_TEMPLATE_BYTES, &messages_len)) ||
        (tools_path && !(tools = cli_read_file(tools_path, CLI_MAX_TEMPLATE_BYTES, &len))) ||
        (template_path && !(chat_template = cli_read_file(template_path, CLI_MAX_TEMPLATE_BYTES, &len))) ||
        !(m = cli_open_model(model_path)))
        goto done;
    brasa_chat_params cp = brasa_chat_default_params();
    cp.format = format;
    cp.template_text = chat_template;
    cp.tools_json = tools;
    cp.kwargs_json = kwargs;
    cp.add_generation_prompt = generation_prompt;
    cp.enable_thinking = think;
    brasa_error err;
    size_t need = 0;
    brasa_status st = brasa_chat_render(m, messages, messages_len, &cp, NULL, 0, &need, &err);
    if (st == BRASA_ERR_BUFFER_TOO_SMALL || (st == BRASA_OK && need > 0)) {
        text = malloc(need);
        st = text ? brasa_chat_render(m, messages, messages_len, &cp, text, need, &need, &err) : BRASA_ERR_NO_MEMORY;
        if (!text)
            snprintf(err.message, sizeof err.message, "out of memory");
    }
    if (st != BRASA_OK) {
        cli_fail("%s", err.message);
        goto done;
    }
    if (need > 0 && fwrite(text, 1, need, stdout) != need) {
        cli_fail("cannot write the prompt");
        goto done;
    }
    rc = fflush(stdout) == 0 ? CLI_OK : CLI_FAILED;
done:
    free(messages);
    free(tools);
    free(chat_template);
    free(text);
    brasa_model_free(m);
    return rc;
}
