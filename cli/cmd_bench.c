/* cmd_bench.c: `brasa bench`: prompt processing (ppN) and token generation (tgN) speed in tokens/s,
 * mean ± standard deviation over repetitions after a warm-up, swept over lists of sizes and thread
 * counts, held against the machine's limits: decode against its memory bandwidth, prefill against
 * its kernels' integer product peak (both measured once and kept in the cache). Load and
 * tokenization are not timed; tokens are random ids (seeded), as llama-bench does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "platform/platform.h"
#include "tools/devices.h"
#include "tools/measured.h"

static const char usage[] =
    "Usage: brasa bench -m MODEL [-p LIST] [-n LIST] [-s LIST] [-r N] [-t LIST] [-b N] [--kv-type T]\n"
    "                   [--device DEV] [--gpu-layers N|auto|all] [--json-schema FILE] [--remeasure]\n"
    "                   [--json]\n"
    "\n"
    "Measures prompt processing (ppN: N prompt tokens at once) and token generation (tgN: N tokens\n"
    "one at a time) in tokens/s, as mean ± sd over N repetitions after a warm-up. LISTs are\n"
    "comma-separated and swept (-p 128,512 -t 1,2). Decode is also shown as a share of its limit, the\n"
    "measured memory bandwidth / weight bytes read per token; prefill as a share of its own, the\n"
    "measured int8 multiply-add peak of the CPU kernels / multiply-adds per token in the layers'\n"
    "products. Both figures are measured once and kept in the cache directory.\n"
    "\n"
    "  -m, --model FILE   the GGUF model\n"
    "  -p LIST            prompt sizes (default 512; 0 skips)\n"
    "  -n LIST            generation lengths (default 128; 0 skips)\n"
    "  -s LIST            sequences generating together, one token each per step (continuous\n"
    "                     batching, as brasa serve --parallel; default 1): tgN xS counts all tokens\n"
    "  -r N               repetitions (default 5)\n"
    "  -t LIST            thread counts (default: one per core)\n"
    "  -b N               prompt tokens per forward pass (default 64)\n"
    "  --kv-type T        KV cache: f16 (default) or f32\n"
    "  --device DEV       cpu (default), cuda, hip, cuda:N, hip:N\n"
    "  --split S          under mpirun -n N: the layers' shares per process, e.g. 3,1 (default: by memory)\n"
    "  --gpu-layers N     with a GPU: auto (default, what fits), all, or the last N layers\n"
    "  --json-schema FILE also time generation with sampling (tgN sampled: temperature 0.8, top-k 40)\n"
    "                     and with sampling held to this JSON Schema (tgN schema), alternating\n"
    "                     the two in each repetition: what grammar-constrained output costs\n"
    "  --remeasure        measure the bandwidth and the int8 peak again (and keep the new figures)\n"
    "  --json             one JSON document on standard output\n";

#define MAX_LIST 16

typedef struct int_list {
    int64_t v[MAX_LIST];
    int n;
} int_list;

static bool parse_list(const char *s, int64_t lo, int64_t hi, int_list *out) {
    out->n = 0;
    char word[32];
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (len == 0 || len >= sizeof word || out->n == MAX_LIST)
            return false;
        memcpy(word, s, len);
        word[len] = '\0';
        if (!cli_parse_i64(word, lo, hi, &out->v[out->n++]))
            return false;
        s += len + (comma ? 1 : 0);
        if (comma && !*s)
            return false;
    }
    return out->n > 0;
}

typedef struct result {
    char test[32];
    int threads;
    int sequences;
    int n_tokens;
    double mean, sd;
} result;

static void mean_sd(const double *x, int n, double *mean, double *sd) {
    double s = 0, ss = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    *mean = s / n;
    for (int i = 0; i < n; i++)
        ss += (x[i] - *mean) * (x[i] - *mean);
    *sd = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
}

static void progress(bool on, const char *test, int threads, int rep, int reps) {
    if (on) {
        fprintf(stderr, "\r%-8s threads %-3d repetition %d/%d   ", test, threads, rep, reps);
        fflush(stderr);
    }
}

/* Times n steps of s sequences decoding one token each together (brasa_seq_decode_step). */
static bool run_steps(brasa_context *c, const brasa_token *tokens, int64_t n_tokens, int n, int s, double *seconds,
                      brasa_error *err) {
    brasa_context_reset(c);
    int32_t seqs[256];
    brasa_token step[256];
    for (int j = 0; j < s; j++) {
        seqs[j] = j;
        if (brasa_seq_decode(c, j, tokens + j, 1, NULL, err) != BRASA_OK) /* untimed first tokens */
            return false;
    }
    double t0 = plat_time_seconds();
    for (int i = 1; i <= n; i++) {
        for (int j = 0; j < s; j++)
            step[j] = tokens[((int64_t)i * s + j) % n_tokens];
        if (brasa_seq_decode_step(c, seqs, step, (size_t)s, err) != BRASA_OK)
            return false;
    }
    *seconds = plat_time_seconds() - t0;
    return true;
}

/* Times one test: pp (all tokens in one decode call) or tg (one token per call). */
static bool run_test(brasa_context *c, const brasa_token *tokens, int n, bool generation, double *seconds,
                     brasa_error *err) {
    brasa_context_reset(c);
    if (generation) {
        if (brasa_decode(c, tokens, 1, NULL, err) != BRASA_OK) /* an untimed first token */
            return false;
        double t0 = plat_time_seconds();
        for (int i = 1; i <= n; i++)
            if (brasa_decode(c, tokens + i, 1, NULL, err) != BRASA_OK)
                return false;
        *seconds = plat_time_seconds() - t0;
        return true;
    }
    double t0 = plat_time_seconds();
    if (brasa_decode(c, tokens, (size_t)n, NULL, err) != BRASA_OK)
        return false;
    *seconds = plat_time_seconds() - t0;
    return true;
}

/* Times n tokens generated by sampling: each sampled token is the next one decoded (an end of
 * generation starts the sampler's output over, so a constraint begins a new value). */
static bool run_sampled(brasa_context *c, const brasa_model *m, brasa_sampler *s, const brasa_token *tokens, int n,
                        double *seconds, brasa_error *err) {
    brasa_context_reset(c);
    brasa_sampler_reset(s);
    if (brasa_decode(c, tokens, 1, NULL, err) != BRASA_OK)
        return false;
    const int32_t n_vocab = brasa_logits_size(c);
    double t0 = plat_time_seconds();
    for (int i = 1; i <= n; i++) {
        brasa_token t = brasa_sampler_sample(s, brasa_logits(c), n_vocab);
        if (t == BRASA_TOKEN_NONE) {
            snprintf(err->message, sizeof err->message, "out of memory while sampling");
            return false;
        }
        if (brasa_token_is_eog(m, t))
            brasa_sampler_reset(s);
        if (brasa_decode(c, &t, 1, NULL, err) != BRASA_OK)
            return false;
    }
    *seconds = plat_time_seconds() - t0;
    return true;
}

int cmd_bench(int argc, char **argv) {
    const char *model_path = NULL;
    int_list pp = { { 512 }, 1 }, tg = { { 128 }, 1 }, seqs = { { 1 }, 1 }, threads = { { brasa_cpu_count() }, 1 };
    int64_t reps = 5;
    bool json = false, remeasure = false;
    int32_t kv_type = BRASA_KV_F16;
    int64_t batch = 0;
    const char *device = NULL, *split = NULL;
    int32_t gpu_layers = BRASA_GPU_LAYERS_AUTO, gpu_layers_used = 0, tuned = 0;
    const char *schema_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            fputs(usage, stdout);
            return CLI_OK;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--remeasure") == 0) {
            remeasure = true;
        } else if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0) {
            if (!v)
                return cli_usage_error("bench", usage, "%s needs a FILE", a);
            model_path = argv[++i];
        } else if (strcmp(a, "-p") == 0 || strcmp(a, "-n") == 0 || strcmp(a, "-t") == 0 || strcmp(a, "-s") == 0) {
            int_list *l = a[1] == 'p' ? &pp : a[1] == 'n' ? &tg : a[1] == 's' ? &seqs : &threads;
            int64_t lo = a[1] == 't' || a[1] == 's' ? 1 : 0, hi = a[1] == 't' ? 1024 : a[1] == 's' ? 256 : 1 << 20;
            if (!v || !parse_list(v, lo, hi, l))
                return cli_usage_error("bench", usage, "%s needs a comma-separated list of numbers from %lld to %lld", a,
                                       (long long)lo, (long long)hi);
            i++;
        } else if (strcmp(a, "--json-schema") == 0) {
            if (!v)
                return cli_usage_error("bench", usage, "--json-schema needs a FILE");
            schema_path = argv[++i];
        } else if (strcmp(a, "--kv-type") == 0) {
            if (!v || !cli_parse_kv_type(v, &kv_type))
                return cli_usage_error("bench", usage, "--kv-type needs f16 or f32");
            i++;
        } else if (strcmp(a, "--split") == 0) {
            if (!v || !v[0])
                return cli_usage_error("bench", usage, "--split needs shares, one per process: 3,1");
            split = argv[++i];
        } else if (strcmp(a, "--device") == 0) {
            if (!v)
                return cli_usage_error("bench", usage, "--device needs cpu, cuda, hip, cuda:N or hip:N");
            device = argv[++i];
        } else if (strcmp(a, "--gpu-layers") == 0) {
            if (!v || !cli_parse_gpu_layers(v, &gpu_layers))
                return cli_usage_error("bench", usage, "--gpu-layers needs auto, all or a number of layers");
            i++;
        } else if (strcmp(a, "-b") == 0) {
            if (!v || !cli_parse_i64(v, 1, 4096, &batch))
                return cli_usage_error("bench", usage, "-b needs a number of tokens from 1 to 4096");
            i++;
        } else if (strcmp(a, "-r") == 0) {
            if (!v || !cli_parse_i64(v, 1, 1000, &reps))
                return cli_usage_error("bench", usage, "-r needs a number of repetitions from 1 to 1000");
            i++;
        } else {
            return cli_usage_error("bench", usage, "unknown option '%s'", a);
        }
    }
    if (!model_path)
        return cli_usage_error("bench", usage, "missing -m MODEL");
    int64_t max_pp = 0, max_tg = 0;
    for (int i = 0; i < pp.n; i++)
        max_pp = pp.v[i] > max_pp ? pp.v[i] : max_pp;
    for (int i = 0; i < tg.n; i++)
        max_tg = tg.v[i] > max_tg ? tg.v[i] : max_tg;
    if (max_pp == 0 && max_tg == 0)
        return cli_usage_error("bench", usage, "nothing to measure: -p and -n are both 0");

    size_t schema_len = 0;
    char *schema = schema_path ? cli_read_file(schema_path, CLI_MAX_TEMPLATE_BYTES, &schema_len) : NULL;
    if (schema_path && !schema)
        return CLI_FAILED;
    brasa_model *m = cli_open_model(model_path);
    if (!m) {
        free(schema);
        return CLI_FAILED;
    }
    brasa_constraint *constraint = NULL;
    brasa_sampler *free_sampler = NULL, *held_sampler = NULL;
    brasa_model_desc d;
    brasa_model_describe(m, &d);
    const bool tty = plat_is_terminal(2);
    brasa_error err;
    int rc = CLI_OK;
    const int64_t n_ctx = (max_pp > max_tg + 1 ? max_pp : max_tg + 1) + 8;
    brasa_token *tokens = malloc((size_t)n_ctx * sizeof *tokens);
    int64_t max_seqs = 1;
    for (int i = 0; i < seqs.n; i++)
        max_seqs = seqs.v[i] > max_seqs ? seqs.v[i] : max_seqs;
    result *results = calloc((size_t)(pp.n + tg.n * seqs.n + 2 * tg.n) * (size_t)threads.n, sizeof *results);
    double *samples = calloc((size_t)reps, sizeof *samples);
    int n_results = 0;
    char backend[320] = "cpu";
    double *held = calloc((size_t)reps, sizeof *held);
    if (!tokens || !results || !samples || !held) {
        rc = cli_fail("out of memory");
        goto done;
    }
    if (schema) {
        brasa_sampler_params sp = brasa_sampler_default_params();
        sp.seed = 7;
        if (brasa_constraint_create(m, NULL, schema, NULL, &constraint, &err) != BRASA_OK ||
            brasa_sampler_create(&sp, &free_sampler, &err) != BRASA_OK ||
            brasa_sampler_create(&sp, &held_sampler, &err) != BRASA_OK ||
            brasa_sampler_set_constraint(held_sampler, constraint, &err) != BRASA_OK) {
            rc = cli_fail("%s: %s", schema_path, err.message);
            goto done;
        }
    }
    uint64_t seed = 42;
    for (int64_t i = 0; i < n_ctx; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        tokens[i] = (brasa_token)((seed >> 33) % (uint64_t)(d.n_vocab > 0 ? d.n_vocab : 1));
    }
    for (int ti = 0; ti < threads.n && rc == CLI_OK; ti++) {
        brasa_context_params cp = brasa_context_default_params();
        cp.n_ctx = (int32_t)n_ctx;
        cp.n_threads = (int32_t)threads.v[ti];
        cp.n_seq = (int32_t)max_seqs;
        cp.kv_type = kv_type;
        cp.n_batch = (int32_t)batch;
        cp.device = device;
        cp.pipeline_split = split;
        cp.gpu_layers = gpu_layers;
        if (tty) {
            cp.progress = cli_progress;
            cp.progress_user_data = (void *)"preparing weights";
        }
        brasa_context *c = NULL;
        if (brasa_context_create(m, &cp, &c, &err) != BRASA_OK) {
            rc = cli_fail("%s: %s", model_path, err.message);
            break;
        }
        snprintf(backend, sizeof backend, "%s", brasa_context_backend(c));
        gpu_layers_used = brasa_context_gpu_layers(c);
        const char *note = NULL;
        tuned = brasa_context_tuning(c, &note);
        if (note && note[0] && ti == 0)
            fprintf(stderr, "brasa bench: warning: %s\n", note);
        /* the warm-up runs the longest prompt once (as llama-bench does): its first pass pays for
         * buffers, tables and the cache's first pages, which would otherwise land in one repetition */
        double warm;
        if (!run_test(c, tokens, max_pp > 8 ? (int)max_pp : 8, false, &warm, &err) || !run_test(c, tokens, 4, true, &warm, &err)) {
            rc = cli_fail("%s", err.message);
            brasa_context_free(c);
            break;
        }
        for (int kind = 0; kind < 2 && rc == CLI_OK; kind++) {
            const int_list *l = kind == 0 ? &pp : &tg;
            for (int k = 0; k < l->n * (kind == 0 ? 1 : seqs.n) && rc == CLI_OK; k++) {
                const int n = (int)l->v[kind == 0 ? k : k / seqs.n];
                const int n_seqs = kind == 0 ? 1 : (int)seqs.v[k % seqs.n];
                if (n == 0)
                    continue;
                result *r = &results[n_results];
                snprintf(r->test, sizeof r->test, "%s%d", kind == 0 ? "pp" : "tg", n);
                r->threads = (int)threads.v[ti];
                r->sequences = n_seqs;
                r->n_tokens = n * n_seqs;
                for (int64_t rep = 0; rep < reps; rep++) {
                    progress(tty, r->test, r->threads, (int)rep + 1, (int)reps);
                    double s = 0;
                    const bool ok = n_seqs > 1 ? run_steps(c, tokens, n_ctx, n, n_seqs, &s, &err)
                                               : run_test(c, tokens, n, kind == 1, &s, &err);
                    if (!ok) {
                        rc = cli_fail("%s", err.message);
                        break;
                    }
                    samples[rep] = s > 0 ? (double)n * n_seqs / s : 0.0;
                }
                if (rc == CLI_OK) {
                    mean_sd(samples, (int)reps, &r->mean, &r->sd);
                    n_results++;
                }
                if (rc == CLI_OK && kind == 1 && n_seqs == 1 && schema) {
                    /* sampled and schema-held generation, alternating within each repetition */
                    result *a = &results[n_results], *b = &results[n_results + 1];
                    *a = *r;
                    *b = *r;
                    snprintf(a->test, sizeof a->test, "tg%d sampled", n);
                    snprintf(b->test, sizeof b->test, "tg%d schema", n);
                    for (int64_t rep = 0; rep < reps && rc == CLI_OK; rep++) {
                        progress(tty, b->test, r->threads, (int)rep + 1, (int)reps);
                        double s1 = 0, s2 = 0;
                        if (!run_sampled(c, m, free_sampler, tokens, n, &s1, &err) ||
                            !run_sampled(c, m, held_sampler, tokens, n, &s2, &err))
                            rc = cli_fail("%s", err.message);
                        samples[rep] = s1 > 0 ? n / s1 : 0.0;
                        held[rep] = s2 > 0 ? n / s2 : 0.0;
                    }
                    if (rc == CLI_OK) {
                        mean_sd(samples, (int)reps, &a->mean, &a->sd);
                        mean_sd(held, (int)reps, &b->mean, &b->sd);
                        n_results += 2;
                    }
                }
            }
        }
        brasa_context_free(c);
    }
    if (tty)
        fprintf(stderr, "\r%60s\rbandwidth and int8 peak (from the cache, or measured)...", "");
    double bandwidth = 0.0, int8_peak = 0.0;
    const bool on_gpu = strncmp(backend, "cpu", 3) != 0;
    char bandwidth_source[160] = "measured", peak_source[200] = "measured", peak_path[32] = "";
    if (on_gpu) {
        /* a GPU's limit is its memory's: the specification of the card the runtime names */
        devtab *table = devtab_create();
        const devtab_device *dd = table ? devtab_match(table, backend) : NULL;
        if (dd) {
            bandwidth = dd->bandwidth_gbs;
            snprintf(bandwidth_source, sizeof bandwidth_source, "specification of %s", dd->name);
        } else {
            snprintf(bandwidth_source, sizeof bandwidth_source, "unknown: this GPU is not in the device table");
        }
        devtab_free(table);
        snprintf(peak_source, sizeof peak_source, "unknown: the products run on the GPU, where no CPU peak applies");
    } else if (rc == CLI_OK) {
        const char *kernels = backend + 4; /* "cpu/NAME": the kernels, which key the cached figures */
        measured_bandwidth mb;
        measured_peak mp;
        if (measured_memory_bandwidth(kernels, remeasure, &mb, &err) != BRASA_OK) {
            rc = cli_fail("%s", err.message);
        } else {
            bandwidth = mb.gbs;
            snprintf(bandwidth_source, sizeof bandwidth_source, "%s", mb.from_cache ? "cached" : "measured");
        }
        if (rc == CLI_OK && measured_int8_peak(kernels, remeasure, &mp, &err) == BRASA_OK) {
            int8_peak = mp.macs_per_second;
            snprintf(peak_path, sizeof peak_path, "%s", mp.path);
            snprintf(peak_source, sizeof peak_source, "%s", mp.from_cache ? "cached" : "measured");
        } else if (rc == CLI_OK) {
            snprintf(peak_source, sizeof peak_source, "unknown: %.180s", err.message);
        }
    }
    if (tty)
        fprintf(stderr, "\r%60s\r", "");
    if (rc != CLI_OK)
        goto done;

    char features[128];
    brasa_cpu_features(features, sizeof features);
    const double gb_per_token = (double)d.weight_bytes_per_token / 1e9;
    const double limit = gb_per_token > 0 ? bandwidth / gb_per_token : 0.0;
    /* prefill's limit: the layers' products only (brasa_model_desc.macs_per_token says what is left out) */
    const double macs_per_token = (double)d.macs_per_token;
    const double prefill_limit = int8_peak > 0 && macs_per_token > 0 ? int8_peak / macs_per_token : 0.0;
    const double peak_mb = (double)brasa_peak_memory_bytes() / 1e6;
    /* in a pipeline of processes: the hand-offs' own cost, a round trip through every process of
     * one token's row (a decode step) and of a prompt step's rows (64), with no computing */
    const int processes = brasa_group_size();
    double link_row = 0.0, link_step = 0.0;
    if (processes > 1 && rc == CLI_OK) {
        const size_t row = (size_t)d.n_embd * sizeof(float);
        if (brasa_group_link_seconds(row, 50, &link_row, &err) != BRASA_OK ||
            brasa_group_link_seconds(64 * row, 20, &link_step, &err) != BRASA_OK)
            rc = cli_fail("%s", err.message);
    }
    if (rc != CLI_OK)
        goto done;
    if (json) {
        printf("{\"model\": ");
        json_cstr(stdout, model_path);
        printf(", \"architecture\": ");
        json_cstr(stdout, d.architecture);
        printf(", \"n_params\": %lld, \"file_bytes\": %llu, \"weight_bytes_per_token\": %llu, \"macs_per_token\": %lld, "
               "\"backend\": ", (long long)d.n_params, (unsigned long long)d.file_bytes,
               (unsigned long long)d.weight_bytes_per_token, (long long)d.macs_per_token);
        json_cstr(stdout, backend);
        printf(", \"gpu_layers\": %d, \"n_layer\": %d, \"tuned_choices\": %d, \"kv_type\": \"%s\", \"cpu_features\": ",
               gpu_layers_used, d.n_layer, tuned, kv_type == BRASA_KV_F32 ? "f32" : "f16");
        json_cstr(stdout, features);
        printf(", \"repetitions\": %lld, \"bandwidth\": {\"gb_per_second\": %.3f, \"decode_limit_tokens_per_second\": %.3f, "
               "\"source\": ", (long long)reps, bandwidth, limit);
        json_cstr(stdout, bandwidth_source);
        printf("}, \"int8_peak\": {\"macs_per_second\": ");
        if (int8_peak > 0) {
            printf("%.0f, \"prefill_limit_tokens_per_second\": %.3f, \"path\": ", int8_peak, prefill_limit);
            json_cstr(stdout, peak_path);
        } else {
            printf("null, \"prefill_limit_tokens_per_second\": null, \"path\": null");
        }
        printf(", \"source\": ");
        json_cstr(stdout, peak_source);
        printf("}");
        if (processes > 1)
            printf(", \"pipeline\": {\"processes\": %d, \"link_round_trip_seconds\": {\"one_row\": %.6g, \"rows_of_64\": %.6g}}",
                   processes, link_row, link_step);
        printf(", \"peak_memory_bytes\": %llu, \"results\": [", (unsigned long long)brasa_peak_memory_bytes());
        for (int i = 0; i < n_results; i++) {
            const result *r = &results[i];
            printf("%s{\"test\": \"%s\", \"n_tokens\": %d, \"sequences\": %d, \"threads\": %d, \"backend\": ", i ? ", " : "",
                   r->test, r->n_tokens, r->sequences, r->threads);
            json_cstr(stdout, backend);
            printf(", \"tokens_per_second\": {\"mean\": %.4f, \"sd\": %.4f}", r->mean, r->sd);
            if (r->test[0] == 't' && limit > 0) /* of the weights read once per step, for all sequences */
                printf(", \"bandwidth_share\": %.4f", r->mean / r->sequences / limit);
            if (r->test[0] == 'p' && prefill_limit > 0)
                printf(", \"compute_share\": %.4f", r->mean / prefill_limit);
            if (processes > 1) /* the link's share of the time: one round trip per step */
                printf(", \"link_share\": %.4f", r->test[0] == 't' ? link_row * r->mean / r->sequences : link_step * r->mean / 64.0);
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("model      %s (%s, %.2f M parameters, %.2f MB)\n", model_path, d.architecture, (double)d.n_params / 1e6,
               (double)d.file_bytes / 1e6);
        printf("backend    %s%s, KV cache %s, CPU features: %s\n", backend,
               strstr(backend, "+q8") ? " (8-bit activations; BRASA_CPU_ACTIVATIONS=f32 for float)" : "",
               kv_type == BRASA_KV_F32 ? "f32" : "f16", features);
        if (on_gpu)
            printf("gpu        %d of %d layers; %d product choices from the tuning cache (brasa tune), the rule for the rest\n",
                   gpu_layers_used, d.n_layer, tuned);
        printf("memory     %.1f GB/s read bandwidth (%s); %.1f MB of weights per token: decode limit %.1f tokens/s\n",
               bandwidth, bandwidth_source, gb_per_token * 1e3, limit);
        if (int8_peak > 0)
            printf("compute    %.1f G int8 multiply-adds/s (%s, %s); %.3g G per token in the layers' products: prefill "
                   "limit %.0f tokens/s\n", int8_peak / 1e9, peak_path, peak_source, macs_per_token / 1e9, prefill_limit);
        else
            printf("compute    int8 peak %s; %.3g G multiply-adds per token in the layers' products\n", peak_source,
                   macs_per_token / 1e9);
        if (processes > 1)
            printf("pipeline   %d processes; a round trip of the link through all of them: %.0f us with one token's row, "
                   "%.2f ms with 64 (limits above: this machine's)\n", processes, link_row * 1e6, link_step * 1e3);
        printf("\n| %-13s | %7s | %20s | %16s |\n", "test", "threads", "tokens/s", "share of limit");
        printf("|---------------|---------|----------------------|------------------|\n");
        for (int i = 0; i < n_results; i++) {
            const result *r = &results[i];
            char share[32] = "";
            if (r->test[0] == 't' && limit > 0)
                snprintf(share, sizeof share, "%.0f%%", 100.0 * r->mean / r->sequences / limit);
            else if (r->test[0] == 'p' && prefill_limit > 0)
                snprintf(share, sizeof share, "%.0f%%", 100.0 * r->mean / prefill_limit);
            char speed[32], name[48];
            snprintf(speed, sizeof speed, "%.2f ± %.2f", r->mean, r->sd);
            if (r->sequences > 1)
                snprintf(name, sizeof name, "%s x%d", r->test, r->sequences);
            else
                snprintf(name, sizeof name, "%s", r->test);
            printf("| %-13s | %7d | %21s | %16s |\n", name, r->threads, speed, share); /* "±" is two bytes */
            if (processes > 1)
                printf("| %-13s |         | %19.1f%% | on the link      |\n", "",
                       100.0 * (r->test[0] == 't' ? link_row * r->mean / r->sequences : link_step * r->mean / 64.0));
            if (strstr(r->test, " schema") && i > 0 && results[i - 1].mean > 0)
                printf("| %-13s |         | %19.1f%% | of tg sampled    |\n", "", 100.0 * r->mean / results[i - 1].mean);
        }
        printf("\npeak memory %.0f MB, %lld repetitions after a warm-up\n", peak_mb, (long long)reps);
    }
done:
    free(tokens);
    free(results);
    free(samples);
    free(held);
    free(schema);
    brasa_sampler_free(free_sampler);
    brasa_sampler_free(held_sampler);
    brasa_constraint_free(constraint);
    brasa_model_free(m);
    return rc;
}
