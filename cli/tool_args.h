/* tool_args.h: what `brasa fit`, `brasa cost` and `brasa doctor` share (defined in cmd_fit.c):
 * the device table with this machine and the user's file, picking a device by name or by what the
 * probe finds, and reading a model from a file or a description. */
#ifndef BRASA_CLI_TOOL_ARGS_H
#define BRASA_CLI_TOOL_ARGS_H

#include <stdbool.h>
#include <stdio.h>

#include "tools/devices.h"
#include "tools/fit.h"
#include "tools/probe.h"

/* Parses a finite number within [lo, hi]. */
bool cli_parse_f64(const char *s, double lo, double hi, double *out);
/* The built-in table, with this machine's CPU (measured) when asked and a user file when given;
 * NULL after printing the error. */
devtab *cli_devices(const char *user_file, bool with_cpu, bool remeasure);
/* A GPU the probe found, with the table's figures where its name matches one. */
void cli_device_of_gpu(const devtab *t, const probe_gpu *g, devtab_device *d);
/* By name, or "auto"/NULL: the GPU with the most memory, else "cpu". False after printing. */
bool cli_pick_device(const devtab *t, const char *name, devtab_device *out);
/* --kv-type's value (FIT_KV_*), or -2 when it is none. */
int cli_kv_type(const char *s);
/* The KV type asked for (kv_choice >= 0), or the device's default: f32 on the CPU, f16 on GPUs. */
fit_kv_type cli_default_kv(const devtab_device *d, int kv_choice);
/* The model from a file or from --params/--bits/--active; false with *rc set after printing. */
bool cli_model_of(const char *path, const char *params, const char *bits, const char *active, fit_model *m,
                  const char *cmd, const char *usage, int *rc);
/* "1.23 GiB" or "45.6 MiB". */
void cli_print_bytes(FILE *out, double bytes);

#endif
