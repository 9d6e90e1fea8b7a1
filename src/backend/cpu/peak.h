/* peak.h: the integer product peak of a CPU kernel path: how many 8-bit multiply-adds a second its
 * product instruction retires on every thread at once. Prefill is bound by that arithmetic as
 * decode is by memory bandwidth, so `brasa bench` holds prompt speed against it. */
#ifndef BRASA_CPU_PEAK_H
#define BRASA_CPU_PEAK_H

#include "backend/cpu/kernels.h"
#include "brasa.h"
#include "core/pool.h"

/* Runs the product loop of kernel table k's path on all of p's threads at once, for about a
 * quarter of a second, and gives the best pass's int8 multiply-adds per second. k comes from
 * cpu_kernels_select, so this CPU runs it; a path this build has no loop for is an error. */
brasa_status cpu_int8_peak(const cpu_kernels *k, pool *p, double *macs_per_second, brasa_error *err);

#endif
