/* test_int8_peak: brasa_measure_int8_peak measures the kernel path the CPU backend would run: for
 * every path (forced with BRASA_CPU_KERNELS) this CPU supports, a positive, plausible figure under
 * that path's name; a path it lacks is the selection's error. Where the x86 paths all run, the
 * wider instruction measures more: avx512vnni (64 multiply-adds per vpdpbusd) above avx2 (32 per
 * vpmaddubsw, and a vpmaddwd beside it) above scalar (one per imul), each by more than 1.5x, far
 * inside the expected 2x and 10x or more. Figures are printed, never thresholds on speed beyond that. */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels.h"
#include "brasa.h"
#include "../test_env.h"

int main(void) {
    const char *paths[] = { "scalar", "avx2", "avx512vnni", "neon", "neon-dotprod" };
    double got[5] = { 0 };
    int failed = 0, measured = 0;
    for (int i = 0; i < 5; i++) {
        set_env("BRASA_CPU_KERNELS", paths[i]);
        const cpu_kernels *k;
        brasa_error err;
        const bool supported = cpu_kernels_select(&k, &err) == BRASA_OK;
        char name[32] = "";
        double macs = 0;
        /* one thread: the figure of one core, undisturbed by whatever else runs on the machine */
        const brasa_status st = brasa_measure_int8_peak(1, &macs, name, sizeof name, &err);
        if (!supported) {
            if (st == BRASA_OK) {
                printf("FAIL %s: measured (%.3g) though the selection refuses it\n", paths[i], macs);
                failed++;
            } else {
                printf("skip %s: %s\n", paths[i], err.message);
            }
            continue;
        }
        if (st != BRASA_OK || strcmp(name, paths[i]) != 0 || !(macs > 1e7 && macs < 1e14)) {
            printf("FAIL %s: status %d, path '%s', %.3g multiply-adds/s (%s)\n", paths[i], (int)st, name, macs,
                   st != BRASA_OK ? err.message : "");
            failed++;
            continue;
        }
        printf("ok   %s: %.2f G int8 multiply-adds/s on one thread\n", paths[i], macs / 1e9);
        got[i] = macs;
        measured++;
    }
    if (got[0] > 0 && got[1] > 0 && got[2] > 0 && !(got[2] > 1.5 * got[1] && got[1] > 1.5 * got[0])) {
        printf("FAIL ordering: avx512vnni %.3g, avx2 %.3g, scalar %.3g\n", got[2], got[1], got[0]);
        failed++;
    }
    double bad = 0;
    brasa_error err;
    if (brasa_measure_int8_peak(-1, &bad, NULL, 0, &err) != BRASA_ERR_INVALID_ARGUMENT) {
        printf("FAIL a negative thread count is not refused\n");
        failed++;
    }
    printf("%d paths measured, %d failures\n", measured, failed);
    return failed || measured == 0 ? 1 : 0;
}
