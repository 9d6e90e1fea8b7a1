/* cmd_serve.c: `brasa serve`: the flags of the OpenAI-compatible server, checked, then srv_run. */
#include <stdlib.h>

#include "cli.h"
#include "server/server.h"

#define MAX_MODELS 64

static const char usage[] =
    "Usage: brasa serve -m MODEL [-m MODEL ...] [--models-dir DIR] [--keep-alive DURATION]\n"
    "                   [--max-memory GB] [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N] [--threads N]\n"
    "                   [--api-key KEY | --no-auth] [--timeout S] [--queue N] [--max-body BYTES]\n"
    "                   [--kv-type f16|f32] [--device DEV] [--gpu-layers N|auto|all]\n"
    "                   [--chat-template-file FILE] [--split SHARES]\n"
    "\n"
    "Serves the model over HTTP in three APIs: OpenAI's (/v1/chat/completions, /v1/completions,\n"
    "/v1/embeddings, /v1/models), Ollama's (/api/chat, /api/generate, /api/embed, /api/tags, /api/ps,\n"
    "/api/show, /api/version) and Anthropic's (/v1/messages, /v1/messages/count_tokens); with /health,\n"
    "/metrics and a chat page at /. Up to --parallel requests (default 4) decode\n"
    "together; each has a context of --ctx tokens (default 4096), its keys and values in f16 unless\n"
    "--kv-type f32. --device (cpu, cuda, hip, cuda:N, hip:N) chooses where the model runs; one server\n"
    "owns a device; on a GPU, --gpu-layers puts all, N, or as many layers as fit (auto, the default)\n"
    "there. Binding to an address other than loopback needs --api-key (or --no-auth); clients send it\n"
    "as 'Authorization: Bearer KEY' or 'x-api-key: KEY'. The key is also\n"
    "read from BRASA_API_KEY. Chats are rendered with the model's own template (tools, JSON output and\n"
    "logprobs as each API has them), or with the Jinja template in --chat-template-file.\n"
    "MODEL is a GGUF file or a library name (OWNER/REPO[:QUANT], see brasa pull). With several -m or\n"
    "--models-dir (every .gguf there), a request's \"model\" picks one by its file name (without\n"
    ".gguf); models load on first use and unload when idle for --keep-alive (default 5m; one model:\n"
    "never) or when another needs the memory (--max-memory, default 90% of what is free at the start).\n"
    "SIGINT or SIGTERM stops it after the requests in flight. Under mpirun -n N the model's layers\n"
    "are split over the N processes (by memory, or --split shares such as 3,1): process 0 serves.\n";

/* "300", "300s", "5m", "1h", "-1" (forever) into seconds; false when it is none of these. */
static bool parse_duration(const char *v, double *out) {
    char *end;
    const double n = strtod(v, &end);
    if (end == v || n != n)
        return false;
    const double unit = strcmp(end, "") == 0 || strcmp(end, "s") == 0 ? 1 : strcmp(end, "m") == 0 ? 60
                        : strcmp(end, "h") == 0 ? 3600 : 0;
    if (unit == 0)
        return false;
    *out = n < 0 ? 1e18 : n * unit;
    return true;
}

int cmd_serve(int argc, char **argv) {
    srv_config cfg = { .host = "127.0.0.1", .port = 8080, .parallel = 4, .ctx = 4096, .timeout_s = 30,
                       .max_queue = 64, .max_body = 8u << 20 };
    const char *template_path = NULL;
    const char *models[MAX_MODELS];
    size_t n_models = 0;
    cfg.keep_alive = -1;
    const char *env_key = getenv("BRASA_API_KEY");
    if (env_key && env_key[0])
        cfg.api_key = env_key;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t n;
        if (cli_is_help(a)) {
            fputs(usage, stdout);
            return CLI_OK;
        } else if (strcmp(a, "--no-auth") == 0) {
            cfg.no_auth = true;
            continue;
        }
        if (!v)
            return cli_usage_error("serve", usage, "%s needs a value", a);
        i++;
        if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0) {
            if (n_models == MAX_MODELS)
                return cli_usage_error("serve", usage, "at most %d -m models (put more in --models-dir)", MAX_MODELS);
            models[n_models++] = v;
        } else if (strcmp(a, "--models-dir") == 0)
            cfg.models_dir = v;
        else if (strcmp(a, "--keep-alive") == 0) {
            if (!parse_duration(v, &cfg.keep_alive))
                return cli_usage_error("serve", usage, "--keep-alive is seconds or 30s, 5m, 1h, or -1 (forever), not '%s'", v);
        } else if (strcmp(a, "--max-memory") == 0) {
            char *end;
            const double gb = strtod(v, &end);
            if (end == v || *end || !(gb > 0) || gb > 1e6)
                return cli_usage_error("serve", usage, "--max-memory is a number of GB, not '%s'", v);
            cfg.max_memory = (uint64_t)(gb * 1e9);
        } else if (strcmp(a, "--host") == 0)
            cfg.host = v;
        else if (strcmp(a, "--chat-template-file") == 0)
            template_path = v;
        else if (strcmp(a, "--api-key") == 0) {
            if (!v[0])
                return cli_usage_error("serve", usage, "--api-key must not be empty");
            cfg.api_key = v;
        } else if (strcmp(a, "--port") == 0 && cli_parse_i64(v, 0, 65535, &n))
            cfg.port = (int)n;
        else if (strcmp(a, "--parallel") == 0 && cli_parse_i64(v, 1, 64, &n))
            cfg.parallel = (int)n;
        else if (strcmp(a, "--ctx") == 0 && cli_parse_i64(v, 16, 1 << 20, &n))
            cfg.ctx = (int)n;
        else if (strcmp(a, "--threads") == 0 && cli_parse_i64(v, 1, 1024, &n))
            cfg.threads = (int)n;
        else if (strcmp(a, "--kv-type") == 0) {
            if (!cli_parse_kv_type(v, &cfg.kv_type))
                return cli_usage_error("serve", usage, "--kv-type is f16 or f32, not '%s'", v);
        }
        else if (strcmp(a, "--device") == 0) {
            /* letters, digits and one ':', so that it names a lock file as it is */
            if (!*v || strlen(v) > 24 || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789:") != strlen(v) ||
                v[0] == ':' || (strchr(v, ':') && strchr(v, ':') != strrchr(v, ':')))
                return cli_usage_error("serve", usage, "--device is cpu, cuda, hip, cuda:N or hip:N, not '%s'", v);
            cfg.device = v;
        } else if (strcmp(a, "--split") == 0) {
            if (!v[0])
                return cli_usage_error("serve", usage, "--split needs shares, one per process: 3,1");
            cfg.split = v;
        }
        else if (strcmp(a, "--gpu-layers") == 0) {
            if (!cli_parse_gpu_layers(v, &cfg.gpu_layers))
                return cli_usage_error("serve", usage, "--gpu-layers is auto, all or a number of layers, not '%s'", v);
        }
        else if (strcmp(a, "--timeout") == 0 && cli_parse_i64(v, 1, 3600, &n))
            cfg.timeout_s = (int)n;
        else if (strcmp(a, "--queue") == 0 && cli_parse_i64(v, 0, 4096, &n))
            cfg.max_queue = (int)n;
        else if (strcmp(a, "--max-body") == 0 && cli_parse_i64(v, 1024, (int64_t)1 << 30, &n))
            cfg.max_body = (size_t)n;
        else if (strcmp(a, "--port") == 0 || strcmp(a, "--parallel") == 0 || strcmp(a, "--ctx") == 0 ||
                 strcmp(a, "--threads") == 0 || strcmp(a, "--timeout") == 0 || strcmp(a, "--queue") == 0 ||
                 strcmp(a, "--max-body") == 0)
            return cli_usage_error("serve", usage, "%s: '%s' is not a number in range "
                                   "(--port 0-65535, --parallel 1-64, --ctx 16-1048576, --threads 1-1024, "
                                   "--timeout 1-3600, --queue 0-4096, --max-body 1024-1073741824)", a, v);
        else
            return cli_usage_error("serve", usage, "unknown option '%s'", a);
    }
    if (n_models == 0 && !cfg.models_dir)
        return cli_usage_error("serve", usage, "-m MODEL (or --models-dir DIR) is required");
    /* library names become the files they name (pulled first when missing) */
    static char resolved[MAX_MODELS][CLI_MODEL_PATH_MAX];
    const char *paths[MAX_MODELS];
    for (size_t i = 0; i < n_models; i++)
        if (!(paths[i] = cli_model_path(models[i], resolved[i], sizeof resolved[i])))
            return CLI_FAILED;
    cfg.model_paths = paths;
    cfg.n_models = n_models;
    char *chat_template = NULL;
    size_t len;
    if (template_path && !(chat_template = cli_read_file(template_path, CLI_MAX_TEMPLATE_BYTES, &len)))
        return CLI_FAILED;
    cfg.chat_template = chat_template;
    const int rc = srv_run(&cfg);
    free(chat_template);
    return rc;
}
