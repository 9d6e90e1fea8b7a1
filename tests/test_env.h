/* test_env.h: the tests' one way to set an environment variable (forcing a kernel path, an
 * activation mode, a cache folder) on POSIX and Windows. The value is UTF-8 (set through the wide
 * API on Windows, so a folder with accents arrives whole); NULL removes the variable. Include it
 * after a _POSIX_C_SOURCE of 200112L or later. */
#ifndef BRASA_TEST_ENV_H
#define BRASA_TEST_ENV_H

#include <stdlib.h>
#ifdef _WIN32
#include <wchar.h>
#include <windows.h>
#endif

static inline void set_env(const char *name, const char *value) {
#ifdef _WIN32
    wchar_t wname[64], wvalue[1024] = L"";
    MultiByteToWideChar(CP_UTF8, 0, name, -1, wname, 64);
    if (value)
        MultiByteToWideChar(CP_UTF8, 0, value, -1, wvalue, 1024);
    _wputenv_s(wname, wvalue); /* an empty value removes it */
#else
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
#endif
}

#endif
