/* dist_none.c: the group of one process, for builds without MPI. It still looks at the launchers'
 * environment, so that `mpirun -n 2 brasa ...` of such a build says so instead of running the
 * whole model twice side by side. */
#include "dist/dist.h"

#include <stdlib.h>

#include "core/error.h"

bool dist_available(void) {
    return false;
}

brasa_status dist_start(brasa_error *err) {
    if (dist_launched_size() > 1)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "started as one of %ld processes, but this brasa was built without MPI: "
                       "install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin) and build again",
                       dist_launched_size());
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
