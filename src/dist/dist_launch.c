/* dist_launch.c: what an MPI launcher tells the processes it starts, read the same way by the
 * builds with and without MPI (dist.h). */
#include <stdlib.h>

#include "dist/dist.h"

long dist_launched_size(void) {
    static const char *const names[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return strtol(v, NULL, 10);
    }
    return 0;
}
