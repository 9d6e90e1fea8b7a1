/* cost.h: what a local machine costs against a cloud API for the same tokens: purchase plus the
 * electricity for the hours the workload keeps it busy (at its prefill and decode speeds), over a
 * period, against per-token prices; the ratio, and the daily volume where the two break even. */
#ifndef BRASA_TOOLS_COST_H
#define BRASA_TOOLS_COST_H

#include <stdbool.h>

#include "brasa.h"

typedef struct cost_inputs {
    double price;          /* the machine, in its currency */
    double watts;          /* drawn while it works on the workload */
    double kwh_price;      /* electricity, in the machine's currency per kWh */
    double tokens_per_day; /* prompt and generated tokens together */
    double output_share;   /* the generated part of them, 0..1 */
    double years;
    double api_price_in, api_price_out; /* USD per million prompt / generated tokens */
    double usd_per_unit;   /* one unit of the machine's currency in USD (1 for USD) */
    double prefill_tps, decode_tps;     /* the machine's speeds on the workload's model */
} cost_inputs;

typedef struct cost_result {
    double days;
    double hours_per_day;        /* busy hours the workload needs */
    bool over_capacity;          /* more than 24 of them: one machine cannot keep up */
    double energy_kwh;           /* over the period */
    double electricity, local_total; /* in the machine's currency */
    double api_total;            /* the same tokens from the API, in the machine's currency */
    double ratio;                /* api_total / local_total */
    double local_per_million;    /* electricity only, per million tokens */
    double api_per_million;
    bool breaks_even;            /* false when electricity alone costs more per token than the API */
    double break_even_tokens_per_day;
} cost_result;

/* Checks every input (a clear error for zero, negative and absurd values) and computes. */
brasa_status cost_compute(const cost_inputs *in, cost_result *out, brasa_error *err);

#endif
