/* devices.h: the device table behind `brasa fit` and `brasa cost`: memory, bandwidth, compute,
 * power and a street price (with its date and currency) for the cards and boxes people choose
 * between, plus devices a user adds from a file. Figures are the vendors' specifications; prices
 * are typical asking prices on the date given, to be checked before buying. */
#ifndef BRASA_TOOLS_DEVICES_H
#define BRASA_TOOLS_DEVICES_H

#include <stdbool.h>
#include <stddef.h>

#include "brasa.h"
#include "tools/measured.h"

typedef enum devtab_kind {
    DEVTAB_GPU,     /* a discrete card with its own memory */
    DEVTAB_UNIFIED, /* CPU and GPU share one large memory (Ryzen AI Max, DGX Spark, Apple) */
    DEVTAB_CPU      /* no GPU: the CPU backend */
} devtab_kind;

typedef struct devtab_device {
    char name[128];        /* "RX 6800 XT" */
    char vendor[16];       /* "AMD", "NVIDIA", "Apple", "CPU" */
    devtab_kind kind;
    double memory_gib;     /* memory the device has (GiB; a "16 GB" card has 16 GiB) */
    double bandwidth_gbs;  /* memory bandwidth, GB/s */
    double tflops;         /* dense FP16 TFLOPS with FP32 accumulation (CPUs: 8-bit integer TOPS) */
    double watts;          /* board (or system) power under an inference load */
    double price;          /* typical street price; 0 when unknown */
    char currency[4];      /* "EUR", "USD" */
    char price_date[8];    /* "2026-11" */
    char note[96];         /* where the price comes from, or "" */
    double available_gib;  /* memory free for a model right now, when measured (this machine); else 0 */
    double prefill_eff;    /* share of tflops prefill reaches, where measured for the kernels; else 0 */
    bool measured;         /* bandwidth (and memory) measured on this machine */
} devtab_device;

typedef struct devtab devtab;

/* The built-in table. Returns NULL only when out of memory. */
devtab *devtab_create(void);
void devtab_free(devtab *t);

/* Adds (or, by the same name, replaces) devices from an INI-style file: one [Name] section per
 * device with kind, memory_gb, bandwidth_gbs and optionally tflops, watts, price, currency,
 * price_date, vendor, note. Errors name the line. */
brasa_status devtab_load_file(devtab *t, const char *path, brasa_error *err);
/* Adds this machine's CPU as "cpu": its memory and its read bandwidth, measured (about a second) or,
 * unless remeasure, the figure kept in the cache from an earlier run on this machine. */
brasa_status devtab_add_this_cpu(devtab *t, bool remeasure, brasa_error *err);
/* How the "cpu" device's bandwidth was obtained; NULL before devtab_add_this_cpu. */
const measured_bandwidth *devtab_cpu_bandwidth(const devtab *t);
/* Adds (or replaces) one device. */
brasa_status devtab_add(devtab *t, const devtab_device *d, brasa_error *err);

size_t devtab_count(const devtab *t);
const devtab_device *devtab_get(const devtab *t, size_t i);
/* Finds a device by name, ignoring case, spaces, dashes and a vendor prefix ("rx6800xt",
 * "AMD RX 6800 XT"); NULL when none matches. */
const devtab_device *devtab_find(const devtab *t, const char *name);
/* The table's device whose name appears in a runtime's longer name ("AMD Radeon RX 6800 XT",
 * "NVIDIA GeForce RTX 4090"): the longest such match, or NULL. */
const devtab_device *devtab_match(const devtab *t, const char *runtime_name);
/* The names, comma-separated, for error messages. */
void devtab_names(const devtab *t, char *out, size_t size);

/* The memory a model may take on the device: what is left after the driver, the display or the
 * operating system take their share. */
double devtab_usable_bytes(const devtab_device *d);
const char *devtab_kind_name(devtab_kind kind);

#endif
