/* cmd_tune.c: `brasa tune`: measures a GPU's product variants on a model's weight shapes and
 * keeps the fastest in the tuning cache, which later runs on that device read at start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "platform/platform.h"

static const char usage[] =
    "Usage: brasa tune -m MODEL --device DEV [--gpu-layers N|auto|all] [--prefill-tokens N] [-r N] [--json]\n"
    "\n"
    "Measures each variant of the GPU's matrix products (lanes per row and warps per block for\n"
    "decode; tile size, float or int8 for prefill) on the model's own weight shapes, and stores the\n"
    "fastest in the tuning cache of the user's cache directory, keyed by the device's name,\n"
    "architecture and driver and by brasa's version. Every later run, bench or serve on that device\n"
    "uses the stored choices from its first token; without them a rule picks a variant with no\n"
    "delay. Run it again after a driver or brasa update (the old file is then ignored).\n"
    "\n"
    "  -m, --model FILE      the GGUF model\n"
    "  --device DEV          cuda, hip, cuda:N or hip:N\n"
    "  --gpu-layers N        the layers whose weights are measured: auto (default), all or N\n"
    "  --prefill-tokens N    tokens of the prefill products measured (default 512)\n"
    "  -r N                  runs per variant after a warm-up (default 10)\n"
    "  --json                one JSON document on standard output\n";

static void print_report(const brasa_tune_report *r, const char *backend, int32_t stored_before, bool json) {
    if (json) {
        printf("{\"backend\": ");
        json_cstr(stdout, backend);
        printf(", \"stored_before\": %d, \"cache_path\": ", stored_before);
        json_cstr(stdout, r->cache_path);
        printf(", \"cache_problem\": ");
        json_cstr(stdout, r->cache_problem);
        printf(", \"shapes\": [");
        for (int i = 0; i < r->n_shapes; i++) {
            const brasa_tune_shape *s = &r->shapes[i];
            printf("%s{\"kind\": \"%s\", \"type\": \"%s\", \"n_out\": %lld, \"n_in\": %lld, \"before\": ", i ? ", " : "", s->kind,
                   s->type, (long long)s->n_out, (long long)s->n_in);
            json_cstr(stdout, s->before);
            printf(", \"before_us\": %.3f, \"best\": ", s->before_us);
            json_cstr(stdout, s->best);
            printf(", \"best_us\": %.3f}", s->best_us);
        }
        printf("]}\n");
        return;
    }
    printf("device     %s\n", backend);
    printf("before     %d choices from the tuning cache, the rule for the rest\n\n", stored_before);
    printf("| %-7s | %-5s | %-13s | %-26s | %10s | %-26s | %10s |\n", "kind", "type", "shape", "before", "us", "best", "us");
    printf("|---------|-------|---------------|----------------------------|------------|----------------------------|------------|\n");
    for (int i = 0; i < r->n_shapes; i++) {
        const brasa_tune_shape *s = &r->shapes[i];
        char shape[32];
        snprintf(shape, sizeof shape, "%lldx%lld", (long long)s->n_out, (long long)s->n_in);
        printf("| %-7s | %-5s | %-13s | %-26s | %10.1f | %-26s | %10.1f |\n", s->kind, s->type, shape, s->before, s->before_us,
               s->best, s->best_us);
    }
    if (r->cache_path[0])
        printf("\nstored in %s\n", r->cache_path);
    else
        printf("\nnot stored: %s\n", r->cache_problem);
}

int cmd_tune(int argc, char **argv) {
    const char *model_path = NULL;
    brasa_context_params cp = brasa_context_default_params();
    brasa_tune_params tp = brasa_tune_default_params();
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t n;
        if (cli_is_help(a)) {
            fputs(usage, stdout);
            return CLI_OK;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
            continue;
        }
        if (!v)
            return cli_usage_error("tune", usage, "%s needs a value", a);
        i++;
        if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0)
            model_path = v;
        else if (strcmp(a, "--device") == 0)
            cp.device = v;
        else if (strcmp(a, "--gpu-layers") == 0) {
            if (!cli_parse_gpu_layers(v, &cp.gpu_layers))
                return cli_usage_error("tune", usage, "--gpu-layers is auto, all or a number of layers, not '%s'", v);
        } else if (strcmp(a, "--prefill-tokens") == 0) {
            if (!cli_parse_i64(v, 16, 8192, &n))
                return cli_usage_error("tune", usage, "--prefill-tokens is a number from 16 to 8192, not '%s'", v);
            tp.prefill_tokens = (int32_t)n;
        } else if (strcmp(a, "-r") == 0) {
            if (!cli_parse_i64(v, 1, 1000, &n))
                return cli_usage_error("tune", usage, "-r is a number of runs from 1 to 1000, not '%s'", v);
            tp.repetitions = (int32_t)n;
        } else {
            return cli_usage_error("tune", usage, "unknown option '%s'", a);
        }
    }
    if (!model_path)
        return cli_usage_error("tune", usage, "missing -m MODEL");
    if (!cp.device || strcmp(cp.device, "cpu") == 0)
        return cli_usage_error("tune", usage, "--device names the GPU to tune (cuda, hip, cuda:N, hip:N)");
    brasa_model *m = cli_open_model(model_path);
    if (!m)
        return CLI_FAILED;
    const bool tty = plat_is_terminal(2);
    if (tty) {
        cp.progress = cli_progress;
        cp.progress_user_data = (void *)"preparing weights";
        tp.progress = cli_progress;
        tp.progress_user_data = (void *)"measuring variants";
    }
    brasa_error err;
    brasa_context *c = NULL;
    brasa_tune_report *report = malloc(sizeof *report);
    int rc = CLI_OK;
    if (!report) {
        rc = cli_fail("out of memory");
    } else if (brasa_context_create(m, &cp, &c, &err) != BRASA_OK) {
        rc = cli_fail("%s: %s", model_path, err.message);
    } else {
        const char *note = NULL;
        const int32_t stored = brasa_context_tuning(c, &note);
        if (note && note[0])
            fprintf(stderr, "brasa tune: warning: %s\n", note);
        if (brasa_context_tune(c, &tp, report, &err) != BRASA_OK)
            rc = cli_fail("%s", err.message);
        else
            print_report(report, brasa_context_backend(c), stored, json);
    }
    free(report);
    brasa_context_free(c);
    brasa_model_free(m);
    return rc;
}
