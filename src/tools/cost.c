/* cost.c: total cost of ownership against per-token API prices (see cost.h). */
#include "tools/cost.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

static bool within(double v, double lo, double hi) {
    return isfinite(v) && v >= lo && v <= hi;
}

brasa_status cost_compute(const cost_inputs *in, cost_result *out, brasa_error *err) {
    memset(out, 0, sizeof *out);
    if (!within(in->tokens_per_day, 1, 1e12))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--tokens-per-day must be between 1 and 1e12, not %g "
                       "(with no tokens there is nothing to compare)", in->tokens_per_day);
    if (!within(in->years, 1.0 / 365, 30))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--years must be between one day (0.003) and 30, not %g", in->years);
    if (!within(in->price, 0, 1e9))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--price must be between 0 and 1e9, not %g", in->price);
    if (!within(in->watts, 0, 1e5))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--watts must be between 0 and 100000, not %g", in->watts);
    if (!within(in->kwh_price, 0, 10))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--kwh-price must be between 0 and 10 per kWh, not %g", in->kwh_price);
    if (!within(in->output_share, 0, 1))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "--output-share must be between 0 and 1, not %g", in->output_share);
    if (!within(in->api_price_in, 0, 1e4) || !within(in->api_price_out, 0, 1e4))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "API prices must be between 0 and 10000 USD per million tokens");
    if (in->api_price_in == 0 && in->api_price_out == 0)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "an API that costs nothing cannot be beaten: give --api-price-in/--api-price-out");
    if (!within(in->usd_per_unit, 1e-3, 1e3))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "the exchange rate must be between 0.001 and 1000 USD per unit, not %g",
                       in->usd_per_unit);
    if (!within(in->prefill_tps, 1e-3, 1e9) || !within(in->decode_tps, 1e-3, 1e9))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "speeds must be above 0 tokens/s (prefill %g, decode %g)",
                       in->prefill_tps, in->decode_tps);

    const double out_share = in->output_share, in_share = 1 - out_share;
    /* seconds of work per token of the workload: prompt tokens at prefill speed, the rest at decode */
    const double seconds_per_token = in_share / in->prefill_tps + out_share / in->decode_tps;
    const double kwh_per_token = seconds_per_token / 3600 * in->watts / 1000;
    const double electricity_per_token = kwh_per_token * in->kwh_price;
    const double api_per_token = (in_share * in->api_price_in + out_share * in->api_price_out) / 1e6 / in->usd_per_unit;

    out->days = in->years * 365;
    const double tokens = in->tokens_per_day * out->days;
    out->hours_per_day = in->tokens_per_day * seconds_per_token / 3600;
    out->over_capacity = out->hours_per_day > 24;
    out->energy_kwh = kwh_per_token * tokens;
    out->electricity = electricity_per_token * tokens;
    out->local_total = in->price + out->electricity;
    out->api_total = api_per_token * tokens;
    out->ratio = out->local_total > 0 ? out->api_total / out->local_total : INFINITY;
    out->local_per_million = electricity_per_token * 1e6;
    out->api_per_million = api_per_token * 1e6;
    /* price + e * T = a * T over the period's T tokens */
    out->breaks_even = api_per_token > electricity_per_token;
    if (out->breaks_even)
        out->break_even_tokens_per_day = in->price / (api_per_token - electricity_per_token) / out->days;
    return BRASA_OK;
}
