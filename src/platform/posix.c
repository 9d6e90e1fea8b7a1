/* posix.c: the platform layer on Linux, macOS and other POSIX systems (mmap, isatty). */
#define _POSIX_C_SOURCE 200809L
#include "platform/platform.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

brasa_status plat_map_open(const char *path, plat_map *map, brasa_error *err) {
    map->data = NULL;
    map->size = 0;
    map->handle = NULL;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return err_set(err, BRASA_ERR_IO, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return err_set(err, BRASA_ERR_IO, "cannot stat: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(err, BRASA_ERR_IO, "not a regular file");
    }
    if (st.st_size > 0) {
        if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
            close(fd);
            return err_set(err, BRASA_ERR_IO, "file too large to map on this system");
        }
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return err_set(err, BRASA_ERR_IO, "cannot map: %s", strerror(e));
        }
        map->data = p;
        map->size = (uint64_t)st.st_size;
    }
    close(fd); /* the mapping keeps the file alive */
    return BRASA_OK;
}

void plat_map_close(plat_map *map) {
    if (map && map->data)
        munmap((void *)map->data, (size_t)map->size);
    if (map) {
        map->data = NULL;
        map->size = 0;
    }
}

bool plat_is_terminal(int fd) {
    return isatty(fd) == 1;
}

void plat_console_init(void) {
}
