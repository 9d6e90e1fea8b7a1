/* probe.h: what GPUs this machine has, found through the vendors' runtimes loaded at run time
 * (never linked: a brasa built on a machine without CUDA or ROCm still runs everywhere) and, on
 * Linux, the kernel's KFD topology for AMD cards. Each runtime that does not load, each device
 * file the user cannot open and each missing environment override is reported with its fix.
 *
 * For tests and unusual installs: BRASA_CUDA_LIBRARY and BRASA_HIP_LIBRARY name the library to
 * load, BRASA_SYSFS_ROOT a directory standing in for /sys, BRASA_DEV_ROOT one for /dev. */
#ifndef BRASA_TOOLS_PROBE_H
#define BRASA_TOOLS_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#define PROBE_MAX_GPUS 16
#define PROBE_MAX_NOTES 16

typedef struct probe_gpu {
    char vendor[16];          /* "NVIDIA", "AMD" */
    char name[128];
    char arch[32];            /* "gfx1030", "sm_89", or "" when unknown */
    uint64_t memory_total, memory_free; /* bytes; free 0 when unknown */
    bool unified;             /* shares system memory (integrated, APU) */
    double bandwidth_gbs;     /* from the memory clock and bus width, 0 when unknown */
    char source[32];          /* "CUDA driver", "HIP runtime", "KFD topology" */
} probe_gpu;

typedef struct probe_runtime {
    char name[32];            /* "CUDA driver", "HIP runtime" */
    char library[256];        /* the library loaded, or the ones tried */
    bool loaded;
    char version[32];         /* "12.4", "6.2" */
    char problem[512];        /* why it is not usable, or "" */
    char fix[256];            /* the one-line fix, or "" */
} probe_runtime;

typedef struct probe_note {
    char problem[256];
    char fix[256];
} probe_note;

typedef struct probe_report {
    probe_runtime cuda, hip;
    char kernel_driver[96];   /* "nvidia 550.54.14", "amdgpu (in Linux 6.1.0)", or "" */
    probe_gpu gpus[PROBE_MAX_GPUS];
    int n_gpus;
    probe_note notes[PROBE_MAX_NOTES]; /* device access, environment overrides */
    int n_notes;
} probe_report;

/* Looks for GPUs; never fails (what it cannot find is in the report). */
void probe_gpus(probe_report *r);

/* The HSA_OVERRIDE_GFX_VERSION value a gfx target without its own ROCm kernels runs with (RDNA2
 * and RDNA3 variants share the code of gfx1030 and gfx1100), or NULL when it needs none. */
const char *probe_gfx_override(const char *arch);

#endif
