/* dist_mpi.c: the group of processes over MPI. MPI is started only when a launcher (mpirun,
 * mpiexec) made this process one of several: a process started alone never touches MPI, so the
 * same program runs as before without a launcher. One thread at a time calls MPI (the program's,
 * or a server's scheduler thread: MPI_THREAD_SERIALIZED); the compute threads never communicate. MPI's default error handler ends
 * the whole job when a process dies or a link drops, which is the behaviour wanted: no process is
 * left waiting on a peer that is gone. */
#ifndef _WIN32
#define _POSIX_C_SOURCE 200809L /* setenv */
#endif
#include "dist/dist.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* A dist_send_nowait send in flight, with its copy of the bytes. */
typedef struct pending_send {
    MPI_Request request;
    void *copy;
    size_t cap;
} pending_send;

static struct {
    bool started;
    int rank, size;
    char host[MPI_MAX_PROCESSOR_NAME];
    pending_send sends[DIST_SENDS_IN_FLIGHT]; /* oldest first */
    int n_sends;
} group = { .size = 1 };

/* Waits until the oldest send in flight has arrived. */
static brasa_status finish_oldest_send(brasa_error *err) {
    const int rc = MPI_Wait(&group.sends[0].request, MPI_STATUS_IGNORE);
    void *copy = group.sends[0].copy;
    const size_t cap = group.sends[0].cap;
    for (int i = 1; i < group.n_sends; i++)
        group.sends[i - 1] = group.sends[i];
    group.n_sends--;
    group.sends[group.n_sends].copy = copy; /* its buffer, reused by a later send */
    group.sends[group.n_sends].cap = cap;
    if (rc != MPI_SUCCESS)
        return err_set(err, BRASA_ERR_IO, "a message to another process failed");
    return BRASA_OK;
}

bool dist_available(void) {
    return true;
}

brasa_status dist_start(brasa_error *err) {
    if (group.started || dist_launched_size() <= 1)
        return BRASA_OK;
    int provided = 0;
#ifndef _WIN32
    /* Open MPI: a process waiting on a message yields its core rather than spin. It waits while
     * the others compute, beside its own compute threads, and with every core busy a spinning
     * wait also starves the kernel's network work: two processes over TCP on 2 cores took 6 ms a
     * round trip and decoded SmolLM2 at 117 tokens/s, yielding 0.03 ms and 281. The user's own
     * setting stays. */
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
#endif
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return err_set(err, BRASA_ERR_IO, "MPI would not start");
    group.started = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &group.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &group.size);
    int len = 0;
    if (MPI_Get_processor_name(group.host, &len) != MPI_SUCCESS)
        group.host[0] = '\0';
    if (provided < MPI_THREAD_SERIALIZED) {
        dist_stop();
        return err_set(err, BRASA_ERR_UNSUPPORTED, "this MPI library does not take calls from more than one thread "
                       "(MPI_THREAD_SERIALIZED), which a server's scheduler thread makes");
    }
    return BRASA_OK;
}

void dist_stop(void) {
    brasa_error err;
    while (group.n_sends > 0)
        (void)finish_oldest_send(&err);
    for (int i = 0; i < DIST_SENDS_IN_FLIGHT; i++) {
        free(group.sends[i].copy);
        group.sends[i].copy = NULL;
        group.sends[i].cap = 0;
    }
    if (group.started)
        MPI_Finalize();
    group.started = false;
    group.rank = 0;
    group.size = 1;
}

_Noreturn void dist_abort(int code) {
    if (group.started)
        MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

int dist_rank(void) {
    return group.rank;
}

int dist_size(void) {
    return group.size;
}

const char *dist_host(void) {
    return group.host;
}

static brasa_status check_peer(int peer, brasa_error *err) {
    if (!group.started || peer < 0 || peer >= group.size || peer == group.rank)
        return err_set(err, BRASA_ERR_INTERNAL, "no process %d to talk to (this is %d of %d)", peer, group.rank, group.size);
    return BRASA_OK;
}

/* A send of bytes to `to` is possible. */
static brasa_status check_send(int to, size_t bytes, brasa_error *err) {
    brasa_status st = check_peer(to, err);
    if (st == BRASA_OK && bytes > INT_MAX)
        st = err_set(err, BRASA_ERR_INTERNAL, "a message of %zu bytes is more than MPI sends at once", bytes);
    return st;
}

brasa_status dist_send(int to, dist_tag tag, const void *data, size_t bytes, brasa_error *err) {
    brasa_status st = check_send(to, bytes, err);
    if (st != BRASA_OK)
        return st;
    if (MPI_Send(data, (int)bytes, MPI_BYTE, to, (int)tag, MPI_COMM_WORLD) != MPI_SUCCESS)
        return err_set(err, BRASA_ERR_IO, "sending %zu bytes to process %d failed", bytes, to);
    return BRASA_OK;
}

brasa_status dist_send_nowait(int to, dist_tag tag, const void *data, size_t bytes, brasa_error *err) {
    brasa_status st = check_send(to, bytes, err);
    if (st != BRASA_OK)
        return st;
    if (group.n_sends == DIST_SENDS_IN_FLIGHT && (st = finish_oldest_send(err)) != BRASA_OK)
        return st;
    pending_send *s = &group.sends[group.n_sends];
    if (s->cap < bytes) {
        void *grown = realloc(s->copy, bytes ? bytes : 1);
        if (!grown)
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory for a message of %zu bytes", bytes);
        s->copy = grown;
        s->cap = bytes;
    }
    memcpy(s->copy, data, bytes);
    if (MPI_Isend(s->copy, (int)bytes, MPI_BYTE, to, (int)tag, MPI_COMM_WORLD, &s->request) != MPI_SUCCESS)
        return err_set(err, BRASA_ERR_IO, "sending %zu bytes to process %d failed", bytes, to);
    group.n_sends++;
    return BRASA_OK;
}

brasa_status dist_peek(int from, dist_tag tag, size_t *bytes, brasa_error *err) {
    brasa_status st = check_peer(from, err);
    if (st != BRASA_OK)
        return st;
    MPI_Status s;
    int count = 0;
    if (MPI_Probe(from, (int)tag, MPI_COMM_WORLD, &s) != MPI_SUCCESS || MPI_Get_count(&s, MPI_BYTE, &count) != MPI_SUCCESS)
        return err_set(err, BRASA_ERR_IO, "waiting for a message from process %d failed", from);
    *bytes = (size_t)count;
    return BRASA_OK;
}

brasa_status dist_recv(int from, dist_tag tag, void *data, size_t cap, size_t *got, brasa_error *err) {
    size_t bytes = 0;
    brasa_status st = dist_peek(from, tag, &bytes, err);
    if (st != BRASA_OK)
        return st;
    if (bytes > cap)
        return err_set(err, BRASA_ERR_INTERNAL, "process %d sent %zu bytes where at most %zu were expected", from, bytes, cap);
    if (MPI_Recv(data, (int)bytes, MPI_BYTE, from, (int)tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return err_set(err, BRASA_ERR_IO, "receiving from process %d failed", from);
    if (got)
        *got = bytes;
    return BRASA_OK;
}
