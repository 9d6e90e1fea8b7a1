/* dist.h: the processes one model runs across, as the engine sees them: how many there are, which
 * one this is, and ordered messages of bytes between two of them. MPI (Open MPI, MPICH, MS-MPI) does
 * the launching and the transport where the build found it (dist_mpi.c); otherwise the group is
 * this process alone (dist_none.c). brasa opens no port of its own for this. The group is
 * process-wide state, like MPI's own: started once by the program, before any model. */
#ifndef BRASA_DIST_DIST_H
#define BRASA_DIST_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include "brasa.h"

/* Whether this build can run across processes. */
bool dist_available(void);
/* The number of processes a launcher started, from the variables Open MPI, MPICH/Intel MPI/MS-MPI
 * and PMIx set (0 when none is set: a process started alone). dist_launch.c, for both builds. */
long dist_launched_size(void);

/* Joins the group when an MPI launcher started this process among several (its environment says
 * so); a process started alone stays a group of one. An error when a launcher started several
 * copies of a build without MPI, which would otherwise each run the whole model on its own. */
brasa_status dist_start(brasa_error *err);
/* Leaves the group (MPI_Finalize); nothing for a group of one. */
void dist_stop(void);
/* Ends every process of the group at once with status code, after an error that leaves the
 * pipeline's state unknown (a message this process cannot act on). */
_Noreturn void dist_abort(int code);

int dist_rank(void); /* 0 .. dist_size() - 1; 0 alone */
int dist_size(void); /* 1 alone */
/* The name of the machine this process runs on ("" when unknown). */
const char *dist_host(void);

/* Kinds of message: each receive names the one it waits for, so that replies and hand-offs of
 * rows never match a receive meant for the other. */
typedef enum dist_tag {
    DIST_TAG_CONTROL = 1, /* a pipeline message (pipeline.h), rank r to r + 1 */
    DIST_TAG_ROWS = 2,    /* the residual stream's rows that go with a step */
    DIST_TAG_REPLY = 3,   /* a process's answer to rank 0 */
} dist_tag;

/* Sends bytes to rank `to`; returns when the buffer may be reused. */
brasa_status dist_send(int to, dist_tag tag, const void *data, size_t bytes, brasa_error *err);
/* As dist_send, but returns at once with a copy of the bytes on its way, so that two processes
 * sending to each other cannot each wait for the other to receive (the last process of a
 * pipeline sending rows back to process 0 while process 0 sends it the next step). At most
 * DIST_SENDS_IN_FLIGHT such sends are pending; one more first waits for the oldest to arrive. */
#define DIST_SENDS_IN_FLIGHT 2
brasa_status dist_send_nowait(int to, dist_tag tag, const void *data, size_t bytes, brasa_error *err);

/* Receives the next message of tag from rank `from` into data (at most cap bytes; more is an
 * error); *got, when not NULL, is its size. */
brasa_status dist_recv(int from, dist_tag tag, void *data, size_t cap, size_t *got, brasa_error *err);
/* The size of the next message of tag from `from`, waiting for it without receiving it. */
brasa_status dist_peek(int from, dist_tag tag, size_t *bytes, brasa_error *err);

#endif
