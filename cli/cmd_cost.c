/* cmd_cost.c: `brasa cost`: owning a machine against paying a cloud API per token, for the same
 * workload, with every assumption printed beside its value. */
#include <math.h>
#include <stdlib.h>

#include "cli.h"
#include "tool_args.h"
#include "tools/cost.h"
#include "platform/platform.h"

/* Defaults, each printed when used. API prices: the list prices of a small frontier model
 * (GPT-4.1 mini, 2025) per million tokens; electricity: a European household tariff. */
#define DEFAULT_TOKENS_PER_DAY 2e6
#define DEFAULT_YEARS 3.0
#define DEFAULT_KWH_PRICE 0.30
#define DEFAULT_OUTPUT_SHARE 0.25
#define DEFAULT_API_IN 0.40
#define DEFAULT_API_OUT 1.60
#define DEFAULT_USD_PER_EUR 1.16 /* December 2026, roughly */
#define DEFAULT_CTX 4096

static const char cost_usage[] =
    "Usage: brasa cost [--device NAME] (-m MODEL.gguf | --params N --bits B | --bench FILE.json) [OPTIONS]\n"
    "\n"
    "What running a workload locally costs (the machine plus its electricity) against a cloud API's\n"
    "per-token prices for the same tokens; the ratio and the break-even volume.\n"
    "\n"
    "Options (defaults in brackets):\n"
    "  --device NAME         a device of `brasa fit --compare`, or 'cpu' [auto]\n"
    "  --tokens-per-day N    prompt + generated tokens a day [2000000]\n"
    "  --output-share F      generated share of those tokens, 0..1 [0.25]\n"
    "  --years Y             period [3]\n"
    "  --price P             what the machine costs, in its currency [the table's street price]\n"
    "  --watts W             power while working [the table's figure]\n"
    "  --kwh-price P         electricity per kWh, in the machine's currency [0.30]\n"
    "  --api-price-in X      USD per million prompt tokens [0.40]\n"
    "  --api-price-out Y     USD per million generated tokens [1.60]\n"
    "  --usd-per-unit R      value of the machine's currency in USD [EUR: 1.16, USD: 1]\n"
    "  --bench FILE.json     speeds measured by `brasa bench --json` instead of expected ones\n"
    "  --active N, --ctx N   for expected speeds: active parameters (MoE), context [4096]\n"
    "  --devices FILE        more devices (see brasa fit --help)\n"
    "  --json                machine-readable output\n";

/* The tokens/s of the largest pp test and of a tg test in a `brasa bench --json` file. */
static bool bench_speeds(const char *path, double *prefill, double *decode, char *why, size_t why_size) {
    size_t len = 0;
    FILE *f = plat_fopen(path, "rb");
    if (!f) {
        snprintf(why, why_size, "%s: cannot open", path);
        return false;
    }
    char *text = malloc(1 << 20);
    if (text)
        len = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    if (!text) {
        snprintf(why, why_size, "out of memory");
        return false;
    }
    text[len] = '\0';
    long best_pp = -1;
    *prefill = *decode = 0;
    for (const char *p = text; (p = strstr(p, "\"test\": \"")) != NULL;) {
        p += 9;
        if (!p[0] || !p[1])
            break;
        char kind[3] = { p[0], p[1], 0 };
        const long n = strtol(p + 2, NULL, 10); /* "pp512": the prompt length */
        const char *next = strstr(p, "\"test\": \""), *mean = strstr(p, "\"mean\": ");
        if (!mean || (next && mean > next))
            continue;
        const double v = strtod(mean + 8, NULL);
        if (!(v > 0) || !isfinite(v))
            continue;
        if (strcmp(kind, "pp") == 0 && n > best_pp) {
            best_pp = n;
            *prefill = v;
        } else if (strcmp(kind, "tg") == 0) {
            *decode = v;
        }
    }
    free(text);
    if (*prefill <= 0 || *decode <= 0) {
        snprintf(why, why_size, "%s: no pp and tg results with tokens_per_second (write it with brasa bench --json)", path);
        return false;
    }
    return true;
}

typedef struct option_value {
    const char *name;
    double lo, hi;
    double *value;
    bool given;
} option_value;

/* Whether the user gave the option called name. */
static bool given(const option_value *opts, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(opts[i].name, name) == 0)
            return opts[i].given;
    return false;
}

int cmd_cost(int argc, char **argv) {
    cost_inputs in = { 0, 0, DEFAULT_KWH_PRICE, DEFAULT_TOKENS_PER_DAY, DEFAULT_OUTPUT_SHARE, DEFAULT_YEARS,
                       DEFAULT_API_IN, DEFAULT_API_OUT, 0, 0, 0 };
    double price = -1, watts = -1, usd_per_unit = 0, ctx = DEFAULT_CTX;
    option_value opts[] = {
        { "--tokens-per-day", -1e300, 1e300, &in.tokens_per_day, false }, { "--years", -1e300, 1e300, &in.years, false },
        { "--kwh-price", -1e300, 1e300, &in.kwh_price, false }, { "--output-share", -1e300, 1e300, &in.output_share, false },
        { "--api-price-in", -1e300, 1e300, &in.api_price_in, false }, { "--api-price-out", -1e300, 1e300, &in.api_price_out, false },
        { "--price", -1e300, 1e300, &price, false }, { "--watts", -1e300, 1e300, &watts, false },
        { "--usd-per-unit", -1e300, 1e300, &usd_per_unit, false }, { "--ctx", 1, 1 << 22, &ctx, false },
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    const char *device = NULL, *devices_file = NULL, *bench = NULL, *path = NULL, *params = NULL, *bits = NULL, *active = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(cost_usage, stdout);
            return CLI_OK;
        }
        if (strcmp(a, "--json") == 0) {
            json = true;
            continue;
        }
        if (i + 1 >= argc)
            return cli_usage_error("cost", cost_usage, a[0] == '-' ? "%s needs a value" : "unexpected '%s'", a);
        const char *v = argv[++i];
        bool matched = false;
        for (size_t k = 0; k < n_opts && !matched; k++)
            if (strcmp(a, opts[k].name) == 0) {
                /* ranges are cost_compute's to judge, with its messages; here only "is it a number" */
                if (!cli_parse_f64(v, opts[k].lo, opts[k].hi, opts[k].value))
                    return cli_usage_error("cost", cost_usage, "%s takes a number, not '%s'", a, v);
                opts[k].given = matched = true;
            }
        if (matched)
            continue;
        if (strcmp(a, "--device") == 0)
            device = v;
        else if (strcmp(a, "--devices") == 0)
            devices_file = v;
        else if (strcmp(a, "--bench") == 0)
            bench = v;
        else if (strcmp(a, "-m") == 0 || strcmp(a, "--model") == 0)
            path = v;
        else if (strcmp(a, "--params") == 0)
            params = v;
        else if (strcmp(a, "--bits") == 0)
            bits = v;
        else if (strcmp(a, "--active") == 0)
            active = v;
        else
            return cli_usage_error("cost", cost_usage, "unknown option '%s'", a);
    }
    if (!bench && !path && !params)
        return cli_usage_error("cost", cost_usage, "the speeds come from a model (-m MODEL.gguf, or --params and --bits) "
                               "or from measurements (--bench FILE.json)");
    const bool need_cpu = !device || strcmp(device, "auto") == 0 || strcmp(device, "cpu") == 0;
    devtab *t = cli_devices(devices_file, need_cpu, false);
    if (!t)
        return CLI_FAILED;
    devtab_device d;
    int rc = CLI_OK;
    char speed_source[320] = "";
    brasa_error err;
    if (!cli_pick_device(t, device, &d)) {
        devtab_free(t);
        return CLI_FAILED;
    }
    devtab_free(t);
    if (bench) {
        char why[320];
        if (!bench_speeds(bench, &in.prefill_tps, &in.decode_tps, why, sizeof why))
            return cli_fail("%s", why);
        snprintf(speed_source, sizeof speed_source, "measured (%s)", bench);
    } else {
        fit_model *m = malloc(sizeof *m);
        if (!m)
            return cli_fail("out of memory");
        if (!cli_model_of(path, params, bits, active, m, "cost", cost_usage, &rc)) {
            free(m);
            return rc;
        }
        fit_request req = { (int32_t)ctx, 1, cli_default_kv(&d, -1), 0 };
        fit_result r;
        if (fit_plan(m, &req, &d, &r, &err) != BRASA_OK) {
            free(m);
            return cli_fail("%s", err.message);
        }
        in.prefill_tps = r.prefill_tps;
        in.decode_tps = r.decode_tps;
        snprintf(speed_source, sizeof speed_source, "expected by brasa fit for %s%s", m->name[0] ? m->name : m->arch,
                 r.fits ? "" : " (it does not fit whole: split with system memory)");
        free(m);
    }
    in.price = price >= 0 ? price : d.price;
    in.watts = watts >= 0 ? watts : d.watts;
    if (given(opts, n_opts, "--usd-per-unit"))
        in.usd_per_unit = usd_per_unit;
    else if (strcmp(d.currency, "USD") == 0)
        in.usd_per_unit = 1;
    else if (strcmp(d.currency, "EUR") == 0)
        in.usd_per_unit = DEFAULT_USD_PER_EUR;
    else
        return cli_fail("the device's prices are in %s: give --usd-per-unit (its value in USD)", d.currency);
    if (price < 0 && d.price <= 0)
        return cli_fail("the table has no price for %s: give --price", d.name);
    cost_result r;
    if (cost_compute(&in, &r, &err) != BRASA_OK)
        return cli_usage_error("cost", cost_usage, "%s", err.message);
    const char *cur = d.currency;
    if (json) {
        printf("{\"device\": ");
        json_cstr(stdout, d.name);
        printf(", \"currency\": ");
        json_cstr(stdout, cur);
        printf(", \"assumptions\": {\"price\": %.2f, \"watts\": %.1f, \"kwh_price\": %.4f, \"tokens_per_day\": %.0f, "
               "\"output_share\": %.4f, \"years\": %.4f, \"api_price_in_usd_per_million\": %.4f, "
               "\"api_price_out_usd_per_million\": %.4f, \"usd_per_unit\": %.4f, \"prefill_tokens_per_second\": %.3f, "
               "\"decode_tokens_per_second\": %.3f, \"speeds_from\": ",
               in.price, in.watts, in.kwh_price, in.tokens_per_day, in.output_share, in.years, in.api_price_in,
               in.api_price_out, in.usd_per_unit, in.prefill_tps, in.decode_tps);
        json_cstr(stdout, speed_source);
        printf("}, \"days\": %.2f, \"hours_per_day\": %.4f, \"over_capacity\": %s, \"energy_kwh\": %.4f, "
               "\"electricity\": %.4f, \"local_total\": %.4f, \"api_total\": %.4f, \"ratio\": %.6f, "
               "\"local_per_million\": %.6f, \"api_per_million\": %.6f, \"breaks_even\": %s, "
               "\"break_even_tokens_per_day\": %.2f}\n",
               r.days, r.hours_per_day, r.over_capacity ? "true" : "false", r.energy_kwh, r.electricity, r.local_total,
               r.api_total, isfinite(r.ratio) ? r.ratio : 1e300, r.local_per_million, r.api_per_million,
               r.breaks_even ? "true" : "false", r.break_even_tokens_per_day);
        return CLI_OK;
    }
    printf("assumptions\n");
    printf("  device          %s, %.0f %s%s\n", d.name, in.price, cur, price >= 0 ? " (--price)" : "");
    if (price < 0 && d.price_date[0])
        printf("                  typical street price in %s%s%s\n", d.price_date, d.note[0] ? "; " : "", d.note);
    printf("  power           %.0f W while working%s; idle hours not counted\n", in.watts,
           watts >= 0 ? " (--watts)" : " (the table's figure)");
    printf("  electricity     %.3f %s per kWh%s\n", in.kwh_price, cur, given(opts, n_opts, "--kwh-price") ? "" : " (default)");
    printf("  workload        %.0f tokens a day, %.0f%% of them generated, for %.3g years\n", in.tokens_per_day,
           in.output_share * 100, in.years);
    printf("  speeds          prefill %.1f, decode %.1f tokens/s, %s\n", in.prefill_tps, in.decode_tps, speed_source);
    printf("  cloud API       %.3f USD per million prompt tokens, %.3f per million generated%s\n", in.api_price_in,
           in.api_price_out,
           given(opts, n_opts, "--api-price-in") || given(opts, n_opts, "--api-price-out") ? "" : " (default: a small frontier model's list prices)");
    if (in.usd_per_unit != 1)
        printf("  exchange        1 %s = %.3f USD\n", cur, in.usd_per_unit);
    printf("\nresult over %.0f days\n", r.days);
    printf("  machine busy    %.2f hours a day%s\n", r.hours_per_day,
           r.over_capacity ? "  -- more than 24: one machine cannot keep up with this workload" : "");
    printf("  electricity     %.0f kWh, %.2f %s (%.4f %s per million tokens)\n", r.energy_kwh, r.electricity, cur,
           r.local_per_million, cur);
    printf("  local total     %.2f %s (machine + electricity)\n", r.local_total, cur);
    printf("  cloud total     %.2f %s (%.4f %s per million tokens)\n", r.api_total, cur, r.api_per_million, cur);
    if (isfinite(r.ratio))
        printf("  ratio           the cloud costs %.2fx the local machine\n", r.ratio);
    if (r.breaks_even)
        printf("  break-even      %.0f tokens a day over the period\n", r.break_even_tokens_per_day);
    else
        printf("  break-even      never: the electricity per token alone costs more than the API\n");
    return CLI_OK;
}
