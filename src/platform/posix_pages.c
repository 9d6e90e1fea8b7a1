/* posix_pages.c: the page-residency hint, apart from posix.c because madvise and its Linux-only
 * advice need the system's extensions, which posix.c keeps off to stay within POSIX. */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "platform/platform.h"

void plat_pages_release(const void *p, size_t n) {
#ifdef MADV_PAGEOUT
    /* non-destructive, unlike MADV_DONTNEED: private anonymous memory is kept (or swapped), and a
     * file mapping's clean pages are dropped and read again from the file when next touched */
    const long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || !p)
        return;
    const uintptr_t lo = ((uintptr_t)p + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
    const uintptr_t hi = ((uintptr_t)p + n) / (uintptr_t)page * (uintptr_t)page;
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_PAGEOUT); /* only a hint: an old kernel says EINVAL */
#else
    (void)p;
    (void)n;
#endif
}
