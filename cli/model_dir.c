/* model_dir.c: --model-dir, where each process finds its copy of a model file. mpirun starts every
 * process of a pipeline with the same command line, and the machines need not keep the file in the
 * same folder: the option gives one folder for every machine, or HOST:FOLDER pairs (with one plain
 * FOLDER for the machines not named), each process taking its own machine's. main() takes it out
 * of the command line before the command sees it; cli_model_path() then looks a relative model
 * path up in that folder. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "platform/platform.h"

static char chosen[CLI_MODEL_PATH_MAX]; /* this process's folder; "" when none was given */

const char *cli_model_dir(void) {
    return chosen;
}

/* Whether entry [s, s + n) is HOST:FOLDER rather than a folder: a colon after two characters at
 * least (a Windows drive, "C:\models", is a folder). */
static const char *host_colon(const char *s, size_t n) {
    const char *colon = memchr(s, ':', n);
    return colon && colon - s >= 2 ? colon : NULL;
}

/* Picks this host's folder from value into chosen; false after printing why. */
static bool choose(const char *value, const char *host) {
    const char *fallback = NULL, *mine = NULL;
    size_t fallback_len = 0, mine_len = 0;
    for (const char *p = value; *p;) {
        const char *comma = strchr(p, ',');
        const size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *colon = host_colon(p, n);
        if (n == 0 || (colon && (size_t)(colon - p) + 1 == n)) {
            cli_fail("--model-dir '%s': each entry is FOLDER or HOST:FOLDER, separated by commas", value);
            return false;
        }
        const bool plain = !colon, here = colon && host[0] && (size_t)(colon - p) == strlen(host) && memcmp(p, host, strlen(host)) == 0;
        if ((plain && fallback) || (here && mine)) {
            cli_fail("--model-dir '%s': two folders for %s", value, plain ? "the machines not named" : host);
            return false;
        }
        if (plain) {
            fallback = p;
            fallback_len = n;
        } else if (here) {
            mine = colon + 1;
            mine_len = n - (size_t)(colon - p) - 1;
        }
        p = comma ? comma + 1 : p + n;
    }
    const char *dir = mine ? mine : fallback;
    const size_t len = mine ? mine_len : fallback_len;
    if (!dir) {
        cli_fail("--model-dir '%s' names no folder for this machine (%s), and gives no plain FOLDER for the others", value,
                 host[0] ? host : "its name unknown");
        return false;
    }
    if (len >= sizeof chosen) {
        cli_fail("--model-dir: a folder of %zu characters is too long", len);
        return false;
    }
    memcpy(chosen, dir, len);
    chosen[len] = '\0';
    plat_file_info info;
    plat_file_info_of(chosen, &info);
    if (!info.exists || !info.is_dir) {
        cli_fail("--model-dir: %s (this machine's, %s) is no folder", chosen, host[0] ? host : "?");
        return false;
    }
    return true;
}

bool cli_model_dir_take(int *argc, char **argv, const char *host) {
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--model-dir") != 0)
            continue;
        if (i + 1 >= *argc) {
            cli_fail("--model-dir needs a value: FOLDER, or HOST:FOLDER,HOST:FOLDER,...");
            return false;
        }
        if (chosen[0]) {
            cli_fail("--model-dir given twice: one value names every machine's folder");
            return false;
        }
        if (!choose(argv[i + 1], host ? host : ""))
            return false;
        for (int j = i; j + 2 <= *argc; j++) /* the pair out, the terminating NULL with the rest */
            argv[j] = argv[j + 2];
        *argc -= 2;
        i--;
    }
    return true;
}
