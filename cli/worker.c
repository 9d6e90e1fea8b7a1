/* worker.c: a process of a pipeline other than process 0 (mpirun -n N brasa run|chat|bench|serve
 * -m MODEL ...). Every process gets the same command line; this one opens the model it names, as
 * process 0 does, and then serves process 0's steps for its share of the layers
 * (brasa_group_serve) until process 0 ends. It prints only errors. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_worker(int argc, char **argv) {
    /* the launcher hands a Ctrl-C or a stop to every process: process 0 acts on it (a server
     * shuts down cleanly) and then ends this one, which must not die first */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    /* `fit` reads no weights: this process only reports its machine (brasa_group_hosts) */
    if (argc > 0 && argv[0] && strcmp(argv[0], "fit") == 0)
        return brasa_group_serve(NULL, "fit opens no model on the other processes") ? CLI_FAILED : CLI_OK;
    const char *arg = NULL;
    for (int i = 1; i + 1 < argc && !arg; i++)
        if (argv[i] && (strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "--model") == 0))
            arg = argv[i + 1];
    char why[600] = "";
    brasa_model *m = NULL;
    char resolved[CLI_MODEL_PATH_MAX];
    const char *path = arg ? cli_model_path(arg, resolved, sizeof resolved) : NULL;
    if (!arg) {
        snprintf(why, sizeof why, "its command line names no model (-m MODEL)");
    } else if (!path) {
        snprintf(why, sizeof why, "%s: not found", arg);
    } else {
        brasa_model_params mp = brasa_model_default_params();
        brasa_error err;
        if (brasa_model_open(path, &mp, &m, &err) != BRASA_OK)
            snprintf(why, sizeof why, "%s: %s", arg, err.message);
    }
    const int rc = brasa_group_serve(m, why);
    brasa_model_free(m);
    return rc ? CLI_FAILED : CLI_OK;
}
