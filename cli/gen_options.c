/* gen_options.c: parsing and validating the shared generation options; opening what they name. */
#include "gen_options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "platform/platform.h"

const char gen_options_help[] =
    "  -m, --model FILE        the GGUF model (or a name, OWNER/REPO[:QUANT]: see brasa pull)\n"
    "  -n, --n-predict N       most tokens to generate (default 256)\n"
    "  --ctx N                 context size in tokens (default: trained size, at most 4096)\n"
    "  --threads N             compute threads (default: one per core)\n"
    "  --batch N               prompt tokens evaluated at once (default 64)\n"
    "  --kv-type T             KV cache: f16 (default, half the memory) or f32\n"
    "  --split S               under mpirun -n N: the layers' shares per process, e.g. 3,1 (default: by memory)\n"
    "  --device DEV            cpu (default), cuda, hip, or cuda:N / hip:N: the GPU backend modules\n"
    "                          load at run time; `brasa doctor` says which are usable\n"
    "  --gpu-layers N          with a GPU device: auto (default: as many as its free memory holds),\n"
    "                          all, or N of the last layers; the CPU runs the rest\n"
    "  --temp T                temperature; 0 is greedy (default 0.8)\n"
    "  --top-k K               keep the K most likely tokens; 0 is off (default 40)\n"
    "  --top-p P               nucleus sampling; 1 is off (default 0.95)\n"
    "  --min-p P               drop tokens below P times the best; 0 is off (default 0.05)\n"
    "  --repeat-penalty R      penalize recent tokens; 1 is off (default 1)\n"
    "  --presence-penalty P    subtract P from recent tokens' logits (default 0)\n"
    "  --frequency-penalty P   subtract P per repetition (default 0)\n"
    "  --seed S                reproducible sampling (default: random)\n"
    "  --stop TEXT             stop when TEXT appears (repeatable)\n"
    "  --chat-template-file F  format chats with the Jinja template in F instead of the model's own\n"
    "  --chat-format NAME      a built-in format instead of the template: chatml, gemma, llama3 or\n"
    "                          qwen3 (default: the model's template; built-in only without one)\n"
    "  --think, --no-think     with a format that reasons (qwen3): let the model think before it\n"
    "                          answers (default), or answer at once; gpt-oss always reasons, and\n"
    "                          --no-think hides it\n";

char *gen_chat_template(const gen_options *o, bool *failed) {
    *failed = false;
    if (!o->chat_template_file)
        return NULL;
    size_t len;
    char *text = cli_read_file(o->chat_template_file, CLI_MAX_TEMPLATE_BYTES, &len);
    *failed = text == NULL;
    return text;
}

void gen_options_defaults(gen_options *o) {
    memset(o, 0, sizeof *o);
    o->n_predict = 256;
    o->think = true;
    o->ctx = brasa_context_default_params();
    o->sampling = brasa_sampler_default_params();
}

static bool parse_float(const char *s, float lo, float hi, float *out) {
    if (!s || !*s)
        return false;
    char *end;
    double v = strtod(s, &end);
    if (*end != '\0' || !isfinite(v) || v < lo || v > hi)
        return false;
    *out = (float)v;
    return true;
}

int gen_options_parse(gen_options *o, const char *cmd, const char *usage, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    int64_t n;
    float f;
#define NEED_VALUE()                                                                                \
    do {                                                                                            \
        if (!v) {                                                                                   \
            cli_usage_error(cmd, usage, "%s needs a value", a);                                     \
            return -1;                                                                              \
        }                                                                                           \
        (*i)++;                                                                                     \
    } while (0)
#define BAD(what)                                                                                   \
    do {                                                                                            \
        cli_usage_error(cmd, usage, "%s '%s': %s", a, v, what);                                     \
        return -1;                                                                                  \
    } while (0)
    if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0) {
        NEED_VALUE();
        o->model_path = v;
    } else if (strcmp(a, "-p") == 0 || strcmp(a, "--prompt") == 0) {
        NEED_VALUE();
        o->prompt = v;
    } else if (strcmp(a, "--system") == 0) {
        NEED_VALUE();
        o->system = v;
    } else if (strcmp(a, "--chat-format") == 0) {
        NEED_VALUE();
        o->chat_format = v;
    } else if (strcmp(a, "--chat-template-file") == 0) {
        NEED_VALUE();
        o->chat_template_file = v;
    } else if (strcmp(a, "--think") == 0 || strcmp(a, "--no-think") == 0) {
        o->think = strcmp(a, "--think") == 0;
        o->think_given = true;
    } else if (strcmp(a, "-n") == 0 || strcmp(a, "--n-predict") == 0) {
        NEED_VALUE();
        if (!cli_parse_i64(v, 1, 1 << 24, &n))
            BAD("must be a whole number of tokens, at least 1");
        o->n_predict = (int32_t)n;
    } else if (strcmp(a, "--ctx") == 0) {
        NEED_VALUE();
        if (!cli_parse_i64(v, 1, 1 << 22, &n))
            BAD("must be a whole number of tokens from 1 to 4194304");
        o->ctx.n_ctx = (int32_t)n;
    } else if (strcmp(a, "--threads") == 0 || strcmp(a, "-t") == 0) {
        NEED_VALUE();
        if (!cli_parse_i64(v, 1, 1024, &n))
            BAD("must be from 1 to 1024");
        o->ctx.n_threads = (int32_t)n;
    } else if (strcmp(a, "--batch") == 0) {
        NEED_VALUE();
        if (!cli_parse_i64(v, 1, 4096, &n))
            BAD("must be from 1 to 4096");
        o->ctx.n_batch = (int32_t)n;
    } else if (strcmp(a, "--split") == 0) {
        NEED_VALUE();
        if (!v[0])
            BAD("must be shares, one per process: 3,1");
        o->ctx.pipeline_split = v; /* checked against the processes when the context opens */
    } else if (strcmp(a, "--kv-type") == 0) {
        NEED_VALUE();
        if (!cli_parse_kv_type(v, &o->ctx.kv_type))
            BAD("must be f16 or f32");
    } else if (strcmp(a, "--device") == 0) {
        NEED_VALUE();
        o->ctx.device = v; /* checked when the context opens it, which names what is wrong */
    } else if (strcmp(a, "--gpu-layers") == 0) {
        NEED_VALUE();
        if (!cli_parse_gpu_layers(v, &o->ctx.gpu_layers))
            BAD("must be auto, all or a number of layers");
    } else if (strcmp(a, "--temp") == 0) {
        NEED_VALUE();
        if (!parse_float(v, 0.0f, 100.0f, &o->sampling.temperature))
            BAD("must be a number from 0 to 100");
    } else if (strcmp(a, "--top-k") == 0) {
        NEED_VALUE();
        if (!cli_parse_i64(v, 0, 1 << 24, &n))
            BAD("must be a whole number, 0 or more");
        o->sampling.top_k = (int32_t)n;
    } else if (strcmp(a, "--top-p") == 0) {
        NEED_VALUE();
        if (!parse_float(v, 0.0f, 1.0f, &f) || f <= 0.0f)
            BAD("must be above 0 and at most 1");
        o->sampling.top_p = f;
    } else if (strcmp(a, "--min-p") == 0) {
        NEED_VALUE();
        if (!parse_float(v, 0.0f, 1.0f, &f) || f >= 1.0f)
            BAD("must be at least 0 and below 1");
        o->sampling.min_p = f;
    } else if (strcmp(a, "--repeat-penalty") == 0) {
        NEED_VALUE();
        if (!parse_float(v, 0.0f, 10.0f, &f) || f <= 0.0f)
            BAD("must be above 0 and at most 10");
        o->sampling.repeat_penalty = f;
    } else if (strcmp(a, "--presence-penalty") == 0) {
        NEED_VALUE();
        if (!parse_float(v, -10.0f, 10.0f, &o->sampling.presence_penalty))
            BAD("must be from -10 to 10");
    } else if (strcmp(a, "--frequency-penalty") == 0) {
        NEED_VALUE();
        if (!parse_float(v, -10.0f, 10.0f, &o->sampling.frequency_penalty))
            BAD("must be from -10 to 10");
    } else if (strcmp(a, "--seed") == 0) {
        NEED_VALUE();
        if (!cli_parse_i64(v, 0, INT64_MAX, &n))
            BAD("must be a whole number, 0 or more");
        o->sampling.seed = (uint64_t)n;
    } else if (strcmp(a, "--stop") == 0) {
        NEED_VALUE();
        if (!v[0])
            BAD("must not be empty");
        if (o->n_stop == GEN_MAX_STOP)
            BAD("too many stop strings (16 at most)");
        o->stop[o->n_stop++] = v;
    } else {
        return 0;
    }
    return 1;
#undef NEED_VALUE
#undef BAD
}

bool gen_open(const gen_options *o, brasa_model **model, brasa_context **ctx, brasa_sampler **sampler) {
    *model = NULL;
    *ctx = NULL;
    *sampler = NULL;
    brasa_error err;
    brasa_model_params mp = brasa_model_default_params();
    brasa_context_params cp = o->ctx;
    if (plat_is_terminal(2)) {
        mp.progress = cli_progress;
        mp.progress_user_data = (void *)"loading";
        cp.progress = cli_progress;
        cp.progress_user_data = (void *)"preparing weights";
    }
    char resolved[CLI_MODEL_PATH_MAX];
    const char *path = cli_model_path(o->model_path, resolved, sizeof resolved); /* a file, or a model name */
    if (!path)
        return false;
    if (brasa_model_open(path, &mp, model, &err) != BRASA_OK) {
        cli_fail("%s: %s", o->model_path, err.message);
        return false;
    }
    if (brasa_context_create(*model, &cp, ctx, &err) != BRASA_OK ||
        brasa_sampler_create(&o->sampling, sampler, &err) != BRASA_OK) {
        cli_fail("%s: %s", o->model_path, err.message);
        brasa_context_free(*ctx);
        brasa_model_free(*model);
        *model = NULL;
        *ctx = NULL;
        return false;
    }
    const char *note = NULL;
    brasa_context_tuning(*ctx, &note);
    if (note[0])
        fprintf(stderr, "brasa: warning: %s\n", note);
    return true;
}
