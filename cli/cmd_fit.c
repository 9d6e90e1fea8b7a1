/* cmd_fit.c: `brasa fit`: whether a model fits a device, the longest context, the layer split when
 * it does not, and the expected speeds; `--compare` for every device in the table. Also the
 * device helpers `brasa cost` and `brasa doctor` share. */
#include <math.h>
#include <stdlib.h>

#include "cli.h"
#include "platform/platform.h"
#include "tool_args.h"
#include "tools/catalog.h"
#include "tools/fit.h"
#include "tools/probe.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static const char fit_usage[] =
    "Usage: brasa fit MODEL.gguf [OPTIONS]\n"
    "       brasa fit --params 120B --bits 4.25 [--active 5.1B] [OPTIONS]\n"
    "\n"
    "Will the model fit, at what context, split how, and how fast will it go. Reads only the\n"
    "file's header; a description uses the shape of the nearest well-known model.\n"
    "\n"
    "Options:\n"
    "  --device NAME       a device of the table (see --compare), 'cpu' for this machine, or\n"
    "                      'auto' (default): the largest GPU found, else this machine's CPU\n"
    "  --ctx N             context per sequence (default: the trained context, at most 4096)\n"
    "  --kv-type T         f32, f16 or q8_0 (default: f16, as brasa runs it)\n"
    "  --parallel N        sequences served at once, each with its own cache (default 1)\n"
    "  --threads N         CPU threads (their scratch; default: one per physical core)\n"
    "  --devices FILE      add devices from an INI file ([Name], kind, memory_gb, bandwidth_gbs, ...)\n"
    "  --compare           every device: fits or not, longest context, speeds, memory per price\n"
    "  --hosts LIST        a pipeline over several machines (mpirun --host ...), each as fast as\n"
    "                      --device with its own memory: NAME:MEMORY,... in GiB (a:128G,b:128G):\n"
    "                      which layers go where, whether it fits, how fast; under mpirun without\n"
    "                      --hosts (mpirun --host a,b -n 2 brasa fit MODEL), the processes'\n"
    "                      machines, their memory measured\n"
    "  --json              machine-readable output; 'fits' is at the top level\n";

bool cli_parse_f64(const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

devtab *cli_devices(const char *user_file, bool with_cpu, bool remeasure) {
    devtab *t = devtab_create();
    if (!t) {
        cli_fail("out of memory");
        return NULL;
    }
    brasa_error err;
    if (with_cpu) {
        if (plat_is_terminal(2))
            fprintf(stderr, "measuring this machine's memory bandwidth...\r");
        if (devtab_add_this_cpu(t, remeasure, &err) != BRASA_OK) {
            cli_fail("%s", err.message);
            devtab_free(t);
            return NULL;
        }
        if (plat_is_terminal(2))
            fprintf(stderr, "%60s\r", "");
    }
    if (user_file && devtab_load_file(t, user_file, &err) != BRASA_OK) {
        cli_fail("%s", err.message);
        devtab_free(t);
        return NULL;
    }
    return t;
}

/* A GPU the probe found, described with the table's figures where its name matches. */
void cli_device_of_gpu(const devtab *t, const probe_gpu *g, devtab_device *d) {
    const devtab_device *known = devtab_match(t, g->name);
    memset(d, 0, sizeof *d);
    if (known)
        *d = *known;
    snprintf(d->name, sizeof d->name, "%s", g->name);
    snprintf(d->vendor, sizeof d->vendor, "%s", g->vendor);
    d->kind = g->unified ? DEVTAB_UNIFIED : DEVTAB_GPU;
    if (g->memory_total)
        d->memory_gib = (double)g->memory_total / GIB;
    if (g->memory_free)
        d->available_gib = (double)g->memory_free / GIB;
    if (g->bandwidth_gbs > 0)
        d->bandwidth_gbs = g->bandwidth_gbs;
    if (d->bandwidth_gbs <= 0)
        d->bandwidth_gbs = 256; /* neither the table nor the runtime knows: a mid-range card */
    if (d->tflops <= 0)
        d->tflops = 20;
    d->measured = true;
    snprintf(d->note, sizeof d->note, "found by the %s%s", g->source, known ? "; speeds from the table" : "; speeds assumed");
}

bool cli_pick_device(const devtab *t, const char *name, devtab_device *out) {
    if (!name || strcmp(name, "auto") == 0) {
        probe_report r;
        probe_gpus(&r);
        int best = -1;
        for (int i = 0; i < r.n_gpus; i++)
            if (best < 0 || r.gpus[i].memory_total > r.gpus[best].memory_total)
                best = i;
        if (best >= 0) {
            cli_device_of_gpu(t, &r.gpus[best], out);
            return true;
        }
        name = "cpu";
    }
    const devtab_device *d = devtab_find(t, name);
    if (!d) {
        char names[2048];
        devtab_names(t, names, sizeof names);
        cli_fail("unknown device '%s'; known: %s (or 'auto'; add your own with --devices FILE)", name, names);
        return false;
    }
    *out = *d;
    return true;
}

void cli_print_bytes(FILE *out, double bytes) {
    if (bytes >= GIB)
        fprintf(out, "%.2f GiB", bytes / GIB);
    else
        fprintf(out, "%.1f MiB", bytes / (1024.0 * 1024.0));
}

static void print_device(const devtab_device *d) {
    printf("device    %s (%s, ", d->name, devtab_kind_name(d->kind));
    cli_print_bytes(stdout, d->memory_gib * GIB);
    printf(", %.0f GB/s%s; ", d->bandwidth_gbs, d->measured && d->kind == DEVTAB_CPU ? " measured" : "");
    cli_print_bytes(stdout, devtab_usable_bytes(d));
    printf(" usable)\n");
}

static void print_plan(const fit_model *m, const devtab_device *d, const fit_result *r) {
    printf("model     %s (%s, %.2f B parameters%s)\n", m->name[0] ? m->name : "(unnamed)", m->arch, m->n_params / 1e9,
           m->from_file ? ", from the file's header" : "");
    if (m->shape_note[0])
        printf("          %s\n", m->shape_note);
    print_device(d);
    printf("context   %d tokens x %d sequence%s, KV cache %s\n\n", r->req.n_ctx, r->req.n_parallel,
           r->req.n_parallel == 1 ? "" : "s", fit_kv_name(r->req.kv_type));
    const struct { const char *what; uint64_t bytes; } rows[] = {
        { "weights", r->weights }, { "KV cache", r->kv }, { "compute buffers", r->compute }, { "runtime", r->overhead },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        printf("  %-16s ", rows[i].what);
        cli_print_bytes(stdout, (double)rows[i].bytes);
        printf("\n");
    }
    if (m->embd_separate) {
        printf("  (input embeddings, ");
        cli_print_bytes(stdout, (double)m->embd_bytes);
        printf(", stay mapped in system memory: a row is read per token)\n");
    }
    printf("  %-16s ", "total");
    cli_print_bytes(stdout, (double)r->total);
    printf(" of ");
    cli_print_bytes(stdout, r->usable);
    printf(" usable: %s\n\n", r->fits ? "fits" : "does NOT fit");
    if (r->max_ctx > 0)
        printf("longest context that fits: %d tokens%s\n", r->max_ctx,
               m->hp.n_ctx_train > 0 && r->max_ctx == m->hp.n_ctx_train ? " (the whole trained context)" : "");
    else
        printf("longest context that fits: none, the weights alone are too large\n");
    if (!r->fits && d->kind == DEVTAB_GPU) {
        printf("split: %d of %d layers on the GPU (", r->gpu_layers, m->hp.n_layer);
        cli_print_bytes(stdout, (double)r->device_bytes);
        printf(" of weights), the rest in system memory (");
        cli_print_bytes(stdout, (double)r->host_bytes);
        printf(" of weights, ");
        cli_print_bytes(stdout, (double)r->host_total);
        printf(" with their KV cache); run it with --gpu-layers %d (or auto)\n", r->gpu_layers);
    }
    printf("expected speed: decode %.1f tokens/s (short context) to %.1f (full context); prefill %.0f tokens/s\n",
           r->decode_tps, r->decode_tps_full, r->prefill_tps);
    printf("  from %.0f GB/s x %.2f efficiency over %.2f GB per token; %.1f %s x %.2f over %.2f G operations per token\n",
           d->bandwidth_gbs, r->decode_eff, (double)m->bytes_per_token / 1e9, d->tflops,
           d->kind == DEVTAB_CPU ? "TOPS (8-bit, at an assumed 3 GHz)" : "TFLOPS", r->prefill_eff, 2 * m->n_params_active / 1e9);
    if (!r->fits && d->kind == DEVTAB_GPU)
        printf("  layers in system memory at %.0f GB/s and %.0f TOPS (an assumed desktop host)\n", FIT_HOST_BANDWIDTH_GBS,
               FIT_HOST_TOPS);
}

static void json_plan(const fit_model *m, const devtab_device *d, const fit_result *r) {
    printf("{\"fits\": %s, \"model\": {\"name\": ", r->fits ? "true" : "false");
    json_cstr(stdout, m->name);
    printf(", \"architecture\": ");
    json_cstr(stdout, m->arch);
    printf(", \"from_file\": %s, \"n_params\": %.0f, \"n_params_active\": %.0f, \"n_layer\": %d, \"n_head_kv\": %d, "
           "\"head_dim\": %d, \"sliding_window\": %d, \"n_ctx_train\": %d, \"bytes_per_token\": %llu, \"shape_note\": ",
           m->from_file ? "true" : "false", m->n_params, m->n_params_active, m->hp.n_layer, m->hp.n_head_kv, m->hp.head_dim,
           m->hp.sliding_window, m->hp.n_ctx_train, (unsigned long long)m->bytes_per_token);
    json_cstr(stdout, m->shape_note);
    printf("}, \"device\": {\"name\": ");
    json_cstr(stdout, d->name);
    printf(", \"kind\": \"%s\", \"memory_bytes\": %.0f, \"usable_bytes\": %.0f, \"bandwidth_gbs\": %.3f, \"tflops\": %.3f}",
           devtab_kind_name(d->kind), d->memory_gib * GIB, r->usable, d->bandwidth_gbs, d->tflops);
    printf(", \"context\": %d, \"parallel\": %d, \"kv_type\": \"%s\"", r->req.n_ctx, r->req.n_parallel, fit_kv_name(r->req.kv_type));
    printf(", \"memory\": {\"weights_bytes\": %llu, \"kv_cache_bytes\": %llu, \"compute_bytes\": %llu, \"overhead_bytes\": %llu, "
           "\"total_bytes\": %llu}",
           (unsigned long long)r->weights, (unsigned long long)r->kv, (unsigned long long)r->compute,
           (unsigned long long)r->overhead, (unsigned long long)r->total);
    printf(", \"max_context\": %d, \"n_layer\": %d, \"gpu_layers\": %d, \"split\": {\"device_weight_bytes\": %llu, "
           "\"host_weight_bytes\": %llu, \"host_total_bytes\": %llu}, \"input_embeddings_bytes\": %llu, "
           "\"input_embeddings_in_system_memory\": %s",
           r->max_ctx, m->hp.n_layer, r->gpu_layers, (unsigned long long)r->device_bytes, (unsigned long long)r->host_bytes,
           (unsigned long long)r->host_total, (unsigned long long)m->embd_bytes, m->embd_separate ? "true" : "false");
    printf(", \"speed\": {\"decode_tokens_per_second\": %.3f, \"decode_tokens_per_second_full_context\": %.3f, "
           "\"prefill_tokens_per_second\": %.3f, \"decode_efficiency\": %.2f, \"prefill_efficiency\": %.2f}}\n",
           r->decode_tps, r->decode_tps_full, r->prefill_tps, r->decode_eff, r->prefill_eff);
}

/* `fit --hosts`: the pipeline's plan, host by host. */
static int plan_hosts(const fit_model *m, const devtab_device *d, const fit_request *req, const fit_host *hosts, int n,
                      bool measured, bool json) {
    fit_hosts_result *r = malloc(sizeof *r);
    brasa_error err;
    if (!r)
        return cli_fail("out of memory");
    if (fit_plan_hosts(m, req, d, hosts, n, r, &err) != BRASA_OK) {
        free(r);
        return cli_fail("%s", err.message);
    }
    if (json) {
        printf("{\"fits\": %s, \"model\": ", r->fits ? "true" : "false");
        json_cstr(stdout, m->name);
        printf(", \"n_layer\": %d, \"device\": ", m->hp.n_layer);
        json_cstr(stdout, d->name);
        printf(", \"context\": %d, \"parallel\": %d, \"measured\": %s, \"hosts\": [", r->req.n_ctx, r->req.n_parallel,
               measured ? "true" : "false");
        for (int i = 0; i < n; i++) {
            printf("%s{\"name\": ", i ? ", " : "");
            json_cstr(stdout, hosts[i].name);
            printf(", \"memory_bytes\": %.0f, \"available_bytes\": %.0f, \"first_layer\": %d, \"end_layer\": %d, \"weights_bytes\": %llu, "
                   "\"kv_cache_bytes\": %llu, \"total_bytes\": %llu, \"usable_bytes\": %.0f, \"fits\": %s}",
                   hosts[i].memory_gib * GIB, hosts[i].available_gib * GIB, r->host[i].first, r->host[i].end, (unsigned long long)r->host[i].weights,
                   (unsigned long long)r->host[i].kv, (unsigned long long)r->host[i].total, r->host[i].usable,
                   r->host[i].fits ? "true" : "false");
        }
        printf("], \"speed\": {\"decode_tokens_per_second\": %.3f, \"prefill_tokens_per_second\": %.3f}}\n", r->decode_tps,
               r->prefill_tps);
    } else {
        printf("model     %s (%s, %.2f B parameters, %d layers)\n", m->name[0] ? m->name : "(unnamed)", m->arch,
               m->n_params / 1e9, m->hp.n_layer);
        printf("pipeline  %d %s, each as fast as %s; context %d tokens x %d sequence%s, KV cache %s\n\n", n,
               measured ? "processes (their memory measured through MPI)" : "hosts", d->name, r->req.n_ctx, r->req.n_parallel, r->req.n_parallel == 1 ? "" : "s", fit_kv_name(r->req.kv_type));
        for (int i = 0; i < n; i++) {
            printf("  %-12s layers %d-%d%s: ", hosts[i].name, r->host[i].first, r->host[i].end - 1,
                   i == 0 ? " and the embeddings and head" : "");
            cli_print_bytes(stdout, (double)r->host[i].total);
            printf(" of ");
            cli_print_bytes(stdout, r->host[i].usable);
            printf(" usable (weights ");
            cli_print_bytes(stdout, (double)r->host[i].weights);
            printf(", KV ");
            cli_print_bytes(stdout, (double)r->host[i].kv);
            printf("): %s\n", r->host[i].fits ? "fits" : "does NOT fit");
        }
        printf("\n%s; expected speed: decode %.1f tokens/s, prefill %.0f tokens/s (the links not counted)\n",
               r->fits ? "fits" : "does NOT fit", r->decode_tps, r->prefill_tps);
        if (r->fits) {
            printf("run it: mpirun --host ");
            for (int i = 0; i < n; i++)
                printf("%s%s", i ? "," : "", hosts[i].name);
            printf(" -n %d brasa serve -m MODEL (the same file on every host)\n", n);
        }
    }
    free(r);
    return CLI_OK; /* "does not fit" is the answer, not a failure (as for one device) */
}

/* The hosts of the processes an MPI launcher started (mpirun -n N brasa fit ...), each measuring
 * its machine: processes on one machine share its memory. */
static bool measured_hosts(fit_host *hosts, int *n) {
    brasa_group_host got[FIT_HOSTS_MAX];
    brasa_error err;
    if (brasa_group_size() > FIT_HOSTS_MAX) {
        cli_fail("%d processes: fit plans at most %d", brasa_group_size(), FIT_HOSTS_MAX);
        return false;
    }
    if (brasa_group_hosts(got, FIT_HOSTS_MAX, &err) != BRASA_OK) {
        cli_fail("%s", err.message);
        return false;
    }
    *n = brasa_group_size();
    for (int i = 0; i < *n; i++) {
        if (got[i].memory_total == 0) {
            cli_fail("process %d (on %s) could not measure its memory: give --hosts NAME:MEMORY,...", i, got[i].name);
            return false;
        }
        _Static_assert(sizeof hosts[i].name == sizeof got[i].name, "a host's name fits");
        memcpy(hosts[i].name, got[i].name, sizeof hosts[i].name);
        hosts[i].name[sizeof hosts[i].name - 1] = '\0';
        hosts[i].memory_gib = (double)got[i].memory_total / got[i].processes_on_host / GIB;
        hosts[i].available_gib = (double)got[i].memory_available / got[i].processes_on_host / GIB;
    }
    return true;
}

fit_kv_type cli_default_kv(const devtab_device *d, int kv_choice) {
    if (kv_choice >= 0)
        return (fit_kv_type)kv_choice;
    (void)d; /* every backend keeps keys and values in f16 unless told otherwise */
    return FIT_KV_F16;
}

static int compare(const fit_model *m, const devtab *t, const fit_request *base, int kv_choice, bool json) {
    if (json) {
        printf("{\"model\": ");
        json_cstr(stdout, m->name);
        printf(", \"context\": %d, \"devices\": [", base->n_ctx);
    } else {
        printf("model %s, %.2f B parameters, %.2f GiB of weights\n\n", m->name[0] ? m->name : m->arch, m->n_params / 1e9,
               (double)m->weight_bytes / GIB);
        printf("%-20s %-8s %9s  %-5s %10s %8s %9s %9s  %-22s %s\n", "device", "kind", "memory", "fits", "max ctx",
               "layers", "decode", "prefill", "price", "GiB per 1000");
    }
    brasa_error err;
    for (size_t i = 0; i < devtab_count(t); i++) {
        const devtab_device *d = devtab_get(t, i);
        fit_request req = *base;
        req.kv_type = cli_default_kv(d, kv_choice);
        fit_result r;
        if (fit_plan(m, &req, d, &r, &err) != BRASA_OK) {
            if (json)
                printf("]}\n");
            return cli_fail("%s", err.message);
        }
        const double per_1000 = d->price > 0 ? d->memory_gib / d->price * 1000 : 0;
        if (json) {
            printf("%s{\"name\": ", i ? ", " : "");
            json_cstr(stdout, d->name);
            printf(", \"kind\": \"%s\", \"memory_bytes\": %.0f, \"fits\": %s, \"max_context\": %d, \"gpu_layers\": %d, "
                   "\"decode_tokens_per_second\": %.3f, \"prefill_tokens_per_second\": %.3f, \"price\": %.2f, \"currency\": ",
                   devtab_kind_name(d->kind), d->memory_gib * GIB, r.fits ? "true" : "false", r.max_ctx, r.gpu_layers,
                   r.decode_tps, r.prefill_tps, d->price);
            json_cstr(stdout, d->currency);
            printf(", \"price_date\": ");
            json_cstr(stdout, d->price_date);
            printf(", \"gib_per_1000\": %.3f}", per_1000);
        } else {
            char price[48] = "-", mem[32], layers[24];
            if (d->price > 0)
                snprintf(price, sizeof price, "%.0f %s (%s)", d->price, d->currency, d->price_date);
            snprintf(mem, sizeof mem, "%.0f GiB", d->memory_gib);
            snprintf(layers, sizeof layers, "%d/%d", r.gpu_layers, m->hp.n_layer);
            printf("%-20s %-8s %9s  %-5s %10d %8s %9.1f %9.0f  %-22s ", d->name, devtab_kind_name(d->kind), mem,
                   r.fits ? "yes" : "no", r.max_ctx, d->kind == DEVTAB_GPU ? layers : "-", r.decode_tps, r.prefill_tps, price);
            if (per_1000 > 0)
                printf("%.1f %s\n", per_1000, d->currency);
            else
                printf("-\n");
        }
    }
    if (json)
        printf("]}\n");
    else
        printf("\ndecode and prefill in tokens/s (decode with a short context); layers: on the GPU when it does not fit whole\n");
    return CLI_OK;
}

int cli_kv_type(const char *s) {
    if (strcmp(s, "f32") == 0)
        return FIT_KV_F32;
    if (strcmp(s, "f16") == 0)
        return FIT_KV_F16;
    if (strcmp(s, "q8_0") == 0)
        return FIT_KV_Q8_0;
    return -2;
}

bool cli_model_of(const char *path, const char *params, const char *bits, const char *active, fit_model *m,
                  const char *cmd, const char *usage, int *rc) {
    brasa_error err;
    if (path && params) {
        *rc = cli_usage_error(cmd, usage, "give a model file or --params, not both");
        return false;
    }
    char resolved[CLI_MODEL_PATH_MAX];
    if (path && !(path = cli_model_path(path, resolved, sizeof resolved))) { /* a file, or a model name */
        *rc = CLI_FAILED;
        return false;
    }
    if (path) {
        if (fit_model_from_file(path, m, &err) != BRASA_OK) {
            *rc = cli_fail("%s", err.message);
            return false;
        }
        return true;
    }
    double p = 0, b = 0, a = 0;
    if (!params || !bits) {
        *rc = cli_usage_error(cmd, usage, "a model file, or --params and --bits, is required");
        return false;
    }
    if (!fit_parse_count(params, &p)) {
        *rc = cli_usage_error(cmd, usage, "--params takes a count such as 7B, 1.5B or 270M, not '%s'", params);
        return false;
    }
    if (!cli_parse_f64(bits, 1, 32, &b)) {
        *rc = cli_usage_error(cmd, usage, "--bits takes bits per weight between 1 and 32, not '%s'", bits);
        return false;
    }
    if (active && !fit_parse_count(active, &a)) {
        *rc = cli_usage_error(cmd, usage, "--active takes a count such as 5.1B, not '%s'", active);
        return false;
    }
    if (fit_model_from_desc(p, b, a, m, &err) != BRASA_OK) {
        *rc = cli_usage_error(cmd, usage, "%s", err.message);
        return false;
    }
    return true;
}

int cmd_fit(int argc, char **argv) {
    const char *path = NULL, *params = NULL, *bits = NULL, *active = NULL, *device = NULL, *devices_file = NULL;
    bool json = false, want_compare = false;
    int kv_choice = -1;
    fit_request req = { 0, 1, FIT_KV_F32, 0 };
    fit_host hosts[FIT_HOSTS_MAX];
    int n_hosts = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool has_value = i + 1 < argc;
        int64_t v;
        if (cli_is_help(a)) {
            fputs(fit_usage, stdout);
            return CLI_OK;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--compare") == 0) {
            want_compare = true;
        } else if (!has_value && a[0] == '-' && a[1] == '-') {
            return cli_usage_error("fit", fit_usage, "%s needs a value", a);
        } else if (strcmp(a, "--params") == 0) {
            params = argv[++i];
        } else if (strcmp(a, "--bits") == 0) {
            bits = argv[++i];
        } else if (strcmp(a, "--active") == 0) {
            active = argv[++i];
        } else if (strcmp(a, "--device") == 0) {
            device = argv[++i];
        } else if (strcmp(a, "--hosts") == 0) {
            char why[200];
            if (!fit_parse_hosts(argv[++i], hosts, &n_hosts, why, sizeof why))
                return cli_usage_error("fit", fit_usage, "--hosts '%s': %s", argv[i], why);
        } else if (strcmp(a, "--devices") == 0) {
            devices_file = argv[++i];
        } else if (strcmp(a, "--kv-type") == 0) {
            kv_choice = cli_kv_type(argv[++i]);
            if (kv_choice < 0)
                return cli_usage_error("fit", fit_usage, "--kv-type is f32, f16 or q8_0, not '%s'", argv[i]);
        } else if (strcmp(a, "--ctx") == 0) {
            if (!cli_parse_i64(argv[++i], 1, 1 << 22, &v))
                return cli_usage_error("fit", fit_usage, "--ctx takes 1..%d tokens, not '%s'", 1 << 22, argv[i]);
            req.n_ctx = (int32_t)v;
        } else if (strcmp(a, "--parallel") == 0) {
            if (!cli_parse_i64(argv[++i], 1, 256, &v))
                return cli_usage_error("fit", fit_usage, "--parallel takes 1..256 sequences, not '%s'", argv[i]);
            req.n_parallel = (int32_t)v;
        } else if (strcmp(a, "--threads") == 0) {
            if (!cli_parse_i64(argv[++i], 1, 1024, &v))
                return cli_usage_error("fit", fit_usage, "--threads takes 1..1024, not '%s'", argv[i]);
            req.n_threads = (int32_t)v;
        } else if (a[0] == '-') {
            return cli_usage_error("fit", fit_usage, "unknown option '%s'", a);
        } else if (!path) {
            path = a;
        } else {
            return cli_usage_error("fit", fit_usage, "one model at a time ('%s' and '%s')", path, a);
        }
    }
    int rc = CLI_OK;
    fit_model *m = malloc(sizeof *m);
    if (!m)
        return cli_fail("out of memory");
    if (!cli_model_of(path, params, bits, active, m, "fit", fit_usage, &rc)) {
        free(m);
        return rc;
    }
    const bool need_cpu = want_compare || !device || strcmp(device, "auto") == 0 || strcmp(device, "cpu") == 0;
    devtab *t = cli_devices(devices_file, need_cpu, false);
    if (!t) {
        free(m);
        return CLI_FAILED;
    }
    if (want_compare) {
        rc = compare(m, t, &req, kv_choice, json);
    } else if (n_hosts > 0 || brasa_group_size() > 1) {
        /* --hosts, else the processes mpirun started, measured */
        const bool measured = n_hosts == 0;
        devtab_device d;
        if (!cli_pick_device(t, device, &d) || (measured && !measured_hosts(hosts, &n_hosts))) {
            rc = CLI_FAILED;
        } else {
            req.kv_type = cli_default_kv(&d, kv_choice);
            rc = plan_hosts(m, &d, &req, hosts, n_hosts, measured, json);
        }
    } else {
        devtab_device d;
        fit_result r;
        brasa_error err;
        if (!cli_pick_device(t, device, &d)) {
            rc = CLI_FAILED;
        } else {
            req.kv_type = cli_default_kv(&d, kv_choice);
            if (fit_plan(m, &req, &d, &r, &err) != BRASA_OK)
                rc = cli_fail("%s", err.message);
            else if (json)
                json_plan(m, &d, &r);
            else
                print_plan(m, &d, &r);
        }
    }
    devtab_free(t);
    free(m);
    return rc;
}
