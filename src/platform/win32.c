/* win32.c: the platform layer on Windows (file mappings, console code page). Paths are UTF-8 and
 * converted to UTF-16 so that names with accents open. */
#include "platform/platform.h"

#include <io.h>
#include <stdlib.h>
#include <windows.h>

#include "core/error.h"

static wchar_t *utf8_to_wide(const char *s) {
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    if (n <= 0)
        return NULL;
    wchar_t *w = malloc((size_t)n * sizeof *w);
    if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
        free(w);
        w = NULL;
    }
    return w;
}

brasa_status plat_map_open(const char *path, plat_map *map, brasa_error *err) {
    map->data = NULL;
    map->size = 0;
    map->handle = NULL;
    wchar_t *wpath = utf8_to_wide(path);
    if (!wpath)
        return err_set(err, BRASA_ERR_IO, "cannot open: the path is not valid UTF-8");
    HANDLE file = CreateFileW(wpath, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING,
                              FILE_ATTRIBUTE_NORMAL, NULL);
    free(wpath);
    if (file == INVALID_HANDLE_VALUE)
        return err_set(err, BRASA_ERR_IO, "cannot open (Windows error %lu)", (unsigned long)GetLastError());
    LARGE_INTEGER size;
    if (!GetFileSizeEx(file, &size)) {
        CloseHandle(file);
        return err_set(err, BRASA_ERR_IO, "cannot get the file size");
    }
    if (size.QuadPart > 0) {
        if ((unsigned long long)size.QuadPart > (unsigned long long)SIZE_MAX) {
            CloseHandle(file);
            return err_set(err, BRASA_ERR_IO, "file too large to map on this system");
        }
        HANDLE mapping = CreateFileMappingW(file, NULL, PAGE_READONLY, 0, 0, NULL);
        if (!mapping) {
            CloseHandle(file);
            return err_set(err, BRASA_ERR_IO, "cannot map (Windows error %lu)", (unsigned long)GetLastError());
        }
        void *p = MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0);
        CloseHandle(mapping); /* the view keeps the mapping alive */
        if (!p) {
            CloseHandle(file);
            return err_set(err, BRASA_ERR_IO, "cannot map a view (Windows error %lu)", (unsigned long)GetLastError());
        }
        map->data = p;
        map->size = (uint64_t)size.QuadPart;
    }
    CloseHandle(file);
    return BRASA_OK;
}

void plat_map_close(plat_map *map) {
    if (map && map->data)
        UnmapViewOfFile(map->data);
    if (map) {
        map->data = NULL;
        map->size = 0;
    }
}

bool plat_is_terminal(int fd) {
    return _isatty(fd) != 0;
}

void plat_console_init(void) {
    SetConsoleOutputCP(CP_UTF8);
    SetConsoleCP(CP_UTF8);
}
