/* cmd_doctor.c: `brasa doctor`: this machine (CPU, memory, GPUs through the vendor runtimes),
 * which brasa backends load and, for what is missing, the reason and the fix; then the largest
 * popular models that fit, with their expected speed. */
#include <stdlib.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/gpu_loader.h"
#include "cli.h"
#include "platform/platform.h"
#include "tool_args.h"
#include "models/arch.h"
#include "tools/catalog.h"
#include "tools/probe.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define DOCTOR_CTX 8192 /* the context the model list is sized for */
#define DOCTOR_LIST 5   /* models listed per device */

static const char doctor_usage[] =
    "Usage: brasa doctor [--json] [--devices FILE] [--remeasure]\n"
    "\n"
    "What this machine has (CPU, memory, GPUs found through the NVIDIA and AMD runtimes, loaded at\n"
    "run time) and what brasa can do with it: which backends load, what to fix for the others,\n"
    "and the largest popular models that fit, with their expected speeds.\n"
    "\n"
    "The memory bandwidth is measured once and kept in brasa's cache directory ($BRASA_CACHE_DIR,\n"
    "else $XDG_CACHE_HOME/brasa or ~/.cache/brasa; %LOCALAPPDATA%\\brasa on Windows) for fit, doctor\n"
    "and cost; --remeasure measures it again and keeps the new figure.\n";

/* One model of the catalog at the best quantization that fits a device whole. */
typedef struct fitting {
    const catalog_model *model;
    const catalog_quant *quant;
    fit_result r;
} fitting;

/* The DOCTOR_LIST largest catalog models brasa runs that fit d at DOCTOR_CTX, each at its best
 * quantization, with n_threads CPU threads' scratch. */
static int models_that_fit(const devtab_device *d, int32_t n_threads, fitting *out) {
    fit_model *m = malloc(sizeof *m);
    if (!m)
        return 0;
    int n = 0;
    for (size_t i = catalog_count(); i-- > 0 && n < DOCTOR_LIST;) {
        const catalog_model *c = catalog_get(i);
        if (!arch_find(c->arch))
            continue; /* recommend only what runs */
        for (size_t q = catalog_quant_count(); q-- > 0;) {
            const catalog_quant *quant = catalog_quant_get(q);
            brasa_error err;
            fit_request req = { DOCTOR_CTX, 1, cli_default_kv(d, -1), n_threads };
            fit_result r;
            const double active = c->active_params < c->params ? c->active_params : 0;
            if (fit_model_from_desc(c->params, quant->bits, active, m, &err) != BRASA_OK ||
                fit_plan(m, &req, d, &r, &err) != BRASA_OK || !r.fits)
                continue;
            out[n++] = (fitting){ c, quant, r };
            break;
        }
    }
    free(m);
    return n;
}

static const char *yes(bool b) { return b ? "true" : "false"; }

/* Whether brasa's GPU backend `name` is usable here, and what it found or why not (the module
 * missing from this build, its runtime library missing, no device, no kernels for the device). */
static bool gpu_backend_status(const char *name, char *detail, size_t size) {
    char why[1200];
    bk_gpu_backend *b = bk_gpu_open(name, why, sizeof why);
    if (!b) {
        snprintf(detail, size, "%s", why);
        return false;
    }
    const bk_gpu_module *m = bk_gpu_module_of(b);
    const int n = m->device_count(why, sizeof why);
    if (n < 0) {
        snprintf(detail, size, "module %s loads (kernels for %s); %s", bk_gpu_path(b), m->targets, why);
        return false;
    }
    bk_gpu_info info;
    brasa_error e;
    bk_device *dev = NULL;
    if (m->device_create(0, &dev, &e) != BRASA_OK) {
        snprintf(detail, size, "%s", e.message);
        return false;
    }
    const bool ok = m->device_info(0, &info, &e) == BRASA_OK;
    m->device_free(dev);
    if (!ok) {
        snprintf(detail, size, "%s", e.message);
        return false;
    }
    snprintf(detail, size, "%d device%s; device 0: %s (%s, %d-lane warps, %.1f GiB, %.1f GiB free); kernels for %s", n,
             n == 1 ? "" : "s", info.name, info.arch, info.warp, (double)info.total_bytes / 1073741824.0,
             (double)info.free_bytes / 1073741824.0, m->targets);
    return true;
}

int cmd_doctor(int argc, char **argv) {
    bool json = false, remeasure = false;
    const char *devices_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(doctor_usage, stdout);
            return CLI_OK;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--remeasure") == 0) {
            remeasure = true;
        } else if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc) {
            devices_file = argv[++i];
        } else {
            return cli_usage_error("doctor", doctor_usage, "unknown option '%s'", argv[i]);
        }
    }
    devtab *t = cli_devices(devices_file, true, remeasure);
    if (!t)
        return CLI_FAILED;
    const devtab_device *cpu = devtab_find(t, "cpu");
    const measured_bandwidth *mb = devtab_cpu_bandwidth(t);
    char os[96], features[128];
    plat_os_name(os, sizeof os);
    brasa_cpu_features(features, sizeof features);
    uint64_t total = 0, avail = 0;
    plat_memory(&total, &avail);
    brasa_error err;
    bk_device *dev = NULL;
    char kernels[64] = "";
    const bool cpu_ok = bk_cpu_create(1, &dev, &err) == BRASA_OK;
    if (cpu_ok)
        snprintf(kernels, sizeof kernels, "%s", bk_cpu_kernels_name(dev));
    bk_cpu_free(dev);
    probe_report pr;
    probe_gpus(&pr);

    /* every device found, as the table describes it, then this machine's CPU */
    devtab_device found[PROBE_MAX_GPUS + 1];
    int n_found = 0;
    for (int i = 0; i < pr.n_gpus; i++)
        if (pr.gpus[i].memory_total > 0)
            cli_device_of_gpu(t, &pr.gpus[i], &found[n_found++]);
    found[n_found++] = *cpu;

    if (json) {
        printf("{\"os\": ");
        json_cstr(stdout, os);
        printf(", \"cpu\": {\"physical_cores\": %d, \"logical_cpus\": %d, \"features\": ", brasa_cpu_count(), plat_cpu_count());
        json_cstr(stdout, features);
        printf(", \"kernels\": ");
        json_cstr(stdout, kernels);
        printf("}, \"memory\": {\"total_bytes\": %llu, \"available_bytes\": %llu, \"bandwidth_gbs\": %.3f",
               (unsigned long long)total, (unsigned long long)avail, cpu->bandwidth_gbs);
        printf(", \"bandwidth_measured_at\": %lld, \"bandwidth_from_cache\": %s, \"cache_file\": ",
               (long long)mb->measured_at, yes(mb->from_cache));
        if (mb->cache_path[0])
            json_cstr(stdout, mb->cache_path);
        else
            printf("null");
        printf(", \"cache_problem\": ");
        if (mb->cache_problem[0])
            json_cstr(stdout, mb->cache_problem);
        else
            printf("null");
        printf("}");
        printf(", \"gpus\": [");
        for (int i = 0; i < pr.n_gpus; i++) {
            const probe_gpu *g = &pr.gpus[i];
            printf("%s{\"vendor\": ", i ? ", " : "");
            json_cstr(stdout, g->vendor);
            printf(", \"name\": ");
            json_cstr(stdout, g->name);
            printf(", \"arch\": ");
            json_cstr(stdout, g->arch);
            printf(", \"memory_total_bytes\": %llu, \"memory_free_bytes\": %llu, \"unified\": %s, \"bandwidth_gbs\": %.1f, "
                   "\"found_by\": ",
                   (unsigned long long)g->memory_total, (unsigned long long)g->memory_free, yes(g->unified), g->bandwidth_gbs);
            json_cstr(stdout, g->source);
            printf("}");
        }
        printf("], \"kernel_driver\": ");
        json_cstr(stdout, pr.kernel_driver);
        printf(", \"runtimes\": [");
        const probe_runtime *rts[2] = { &pr.cuda, &pr.hip };
        for (int i = 0; i < 2; i++) {
            printf("%s{\"name\": ", i ? ", " : "");
            json_cstr(stdout, rts[i]->name);
            printf(", \"loaded\": %s, \"library\": ", yes(rts[i]->loaded));
            json_cstr(stdout, rts[i]->library);
            printf(", \"version\": ");
            json_cstr(stdout, rts[i]->version);
            printf(", \"problem\": ");
            json_cstr(stdout, rts[i]->problem);
            printf(", \"fix\": ");
            json_cstr(stdout, rts[i]->fix);
            printf("}");
        }
        printf("], \"backends\": [{\"name\": \"cpu\", \"loads\": %s, \"detail\": ", yes(cpu_ok));
        json_cstr(stdout, cpu_ok ? kernels : err.message);
        printf("}");
        for (int i = 0; i < BK_GPU_BACKENDS; i++) {
            char detail[1600];
            const bool loads = gpu_backend_status(bk_gpu_backend_names[i], detail, sizeof detail);
            printf(", {\"name\": \"%s\", \"loads\": %s, \"detail\": ", bk_gpu_backend_names[i], yes(loads));
            json_cstr(stdout, detail);
            printf("}");
        }
        printf("]");
        printf(", \"notes\": [");
        for (int i = 0; i < pr.n_notes; i++) {
            printf("%s{\"problem\": ", i ? ", " : "");
            json_cstr(stdout, pr.notes[i].problem);
            printf(", \"fix\": ");
            json_cstr(stdout, pr.notes[i].fix);
            printf("}");
        }
        printf("], \"fits\": [");
        for (int k = 0; k < n_found; k++) {
            fitting list[DOCTOR_LIST];
            const int n = models_that_fit(&found[k], brasa_cpu_count(), list);
            printf("%s{\"device\": ", k ? ", " : "");
            json_cstr(stdout, found[k].name);
            printf(", \"usable_bytes\": %.0f, \"context\": %d, \"models\": [", devtab_usable_bytes(&found[k]), DOCTOR_CTX);
            for (int i = 0; i < n; i++) {
                printf("%s{\"name\": ", i ? ", " : "");
                json_cstr(stdout, list[i].model->name);
                printf(", \"architecture\": ");
                json_cstr(stdout, list[i].model->arch);
                printf(", \"quant\": \"%s\", \"total_bytes\": %llu, \"decode_tokens_per_second\": %.3f, "
                       "\"prefill_tokens_per_second\": %.3f}",
                       list[i].quant->name, (unsigned long long)list[i].r.total, list[i].r.decode_tps, list[i].r.prefill_tps);
            }
            printf("]}");
        }
        printf("]}\n");
        devtab_free(t);
        return CLI_OK;
    }

    printf("system     %s\n", os);
    printf("CPU        %d physical cores, %d logical; %s; brasa's kernels: %s\n", brasa_cpu_count(), plat_cpu_count(),
           features, cpu_ok ? kernels : "none");
    printf("memory     ");
    cli_print_bytes(stdout, (double)total);
    printf(", ");
    cli_print_bytes(stdout, (double)avail);
    char when[32] = "?";
    const time_t at = (time_t)mb->measured_at;
    const struct tm *tm = localtime(&at);
    if (tm)
        strftime(when, sizeof when, "%Y-%m-%d %H:%M", tm);
    printf(" available; %.1f GB/s read bandwidth (measured %s%s)\n", cpu->bandwidth_gbs, mb->from_cache ? "" : "now, ",
           when);
    if (mb->cache_path[0])
        printf("           kept in %s%s\n\n", mb->cache_path, mb->from_cache ? " (--remeasure measures again)" : "");
    else
        printf("           not kept: %s\n\n", mb->cache_problem);
    printf("GPUs\n");
    if (pr.n_gpus == 0)
        printf("  none found\n");
    for (int i = 0; i < pr.n_gpus; i++) {
        const probe_gpu *g = &pr.gpus[i];
        printf("  %s %s%s%s, ", g->vendor, g->name, g->arch[0] ? ", " : "", g->arch);
        cli_print_bytes(stdout, (double)g->memory_total);
        if (g->memory_free) {
            printf(" (");
            cli_print_bytes(stdout, (double)g->memory_free);
            printf(" free)");
        }
        printf(", %s", g->unified ? "unified memory" : "discrete");
        if (g->bandwidth_gbs > 0)
            printf(", %.0f GB/s", g->bandwidth_gbs);
        printf(" [%s]\n", g->source);
    }
    if (pr.kernel_driver[0])
        printf("  kernel driver: %s\n", pr.kernel_driver);
    printf("\nruntimes (loaded at run time, never linked)\n");
    const probe_runtime *rts[2] = { &pr.cuda, &pr.hip };
    for (int i = 0; i < 2; i++) {
        const probe_runtime *rt = rts[i];
        if (rt->loaded && !rt->problem[0])
            printf("  %-12s %s, version %s\n", rt->name, rt->library, rt->version[0] ? rt->version : "unknown");
        else
            printf("  %-12s %s\n  %-12s fix: %s\n", rt->name, rt->problem, "", rt->fix);
    }
    printf("\nbrasa backends\n");
    printf("  %-12s %s\n", "cpu", cpu_ok ? "loads" : err.message);
    if (cpu_ok)
        printf("  %-12s kernels %s\n", "", kernels);
    for (int i = 0; i < BK_GPU_BACKENDS; i++) {
        char detail[1600];
        const bool loads = gpu_backend_status(bk_gpu_backend_names[i], detail, sizeof detail);
        printf("  %-12s %s%s\n", bk_gpu_backend_names[i], loads ? "loads: " : "", detail);
    }
    if (pr.n_notes) {
        printf("\nto fix\n");
        for (int i = 0; i < pr.n_notes; i++)
            printf("  %s\n    fix: %s\n", pr.notes[i].problem, pr.notes[i].fix);
    }
    for (int k = 0; k < n_found; k++) {
        fitting list[DOCTOR_LIST];
        const int n = models_that_fit(&found[k], brasa_cpu_count(), list);
        printf("\nlargest popular models that fit %s (", found[k].name);
        cli_print_bytes(stdout, devtab_usable_bytes(&found[k]));
        printf(" usable, %d-token context)\n", DOCTOR_CTX);
        if (n == 0)
            printf("  none of the catalog's models\n");
        for (int i = 0; i < n; i++) {
            printf("  %-32s %-7s ", list[i].model->name, list[i].quant->name);
            cli_print_bytes(stdout, (double)list[i].r.total);
            printf("   decode ~%.1f tokens/s, prefill ~%.0f tokens/s%s\n", list[i].r.decode_tps, list[i].r.prefill_tps,
                   found[k].kind == DEVTAB_CPU ? "" : " (once brasa's GPU backend exists)");
        }
    }
    printf("\n(`brasa fit MODEL.gguf` for a file you have; `brasa fit --compare` for every device)\n");
    devtab_free(t);
    return CLI_OK;
}
