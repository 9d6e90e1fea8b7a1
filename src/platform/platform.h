/* platform.h: the few operating-system services brasa needs, one implementation file per platform
 * (posix.c, win32.c), so no #ifdef leaks into the engine. */
#ifndef BRASA_PLATFORM_H
#define BRASA_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"

/* A read-only mapping of a whole file. An empty file maps to data == NULL, size == 0. */
typedef struct plat_map {
    const uint8_t *data;
    uint64_t size;
    void *handle; /* platform private */
} plat_map;

brasa_status plat_map_open(const char *path, plat_map *map, brasa_error *err);
void plat_map_close(plat_map *map);

/* Whether the stream (0 stdin, 1 stdout, 2 stderr) is an interactive terminal. */
bool plat_is_terminal(int fd);

/* Prepares the console for UTF-8 output (a no-op where it already is). */
void plat_console_init(void);

#endif
