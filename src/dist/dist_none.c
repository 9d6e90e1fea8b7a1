/* dist_none.c: the group of one process, for builds without MPI. It still looks at the launchers'
 * environment, so that `mpirun -n 2 brasa ...` of such a build says so instead of running the
 * whole model twice side by side. */
#include "dist/dist.h"

#include <stdlib.h>

#include "core/error.h"

bool dist_available(void) {
    return false;
}

/* The number of processes a launcher started, from the variables Open MPI, MPICH/Intel MPI/MS-MPI
 * and PMIx set (0 when none is set). */
static long launched_size(void) {
    static const char *const names[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return strtol(v, NULL, 10);
    }
    return 0;
}

brasa_status dist_start(brasa_error *err) {
    if (launched_size() > 1)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "started as one of %ld processes, but this brasa was built without MPI: "
                       "install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin) and build again",
                       launched_size());
    return BRASA_OK;
}

void dist_stop(void) {}

_Noreturn void dist_abort(int code) {
    exit(code);
}

int dist_rank(void) {
    return 0;
}

int dist_size(void) {
    return 1;
}

const char *dist_host(void) {
    return "";
}

brasa_status dist_send(int to, dist_tag tag, const void *data, size_t bytes, brasa_error *err) {
    (void)tag;
    (void)data;
    (void)bytes;
    return err_set(err, BRASA_ERR_INTERNAL, "no process %d: this process is alone", to);
}

brasa_status dist_send_nowait(int to, dist_tag tag, const void *data, size_t bytes, brasa_error *err) {
    return dist_send(to, tag, data, bytes, err);
}

brasa_status dist_recv(int from, dist_tag tag, void *data, size_t cap, size_t *got, brasa_error *err) {
    (void)tag;
    (void)data;
    (void)cap;
    (void)got;
    return err_set(err, BRASA_ERR_INTERNAL, "no process %d: this process is alone", from);
}

brasa_status dist_peek(int from, dist_tag tag, size_t *bytes, brasa_error *err) {
    (void)tag;
    (void)bytes;
    return err_set(err, BRASA_ERR_INTERNAL, "no process %d: this process is alone", from);
}
