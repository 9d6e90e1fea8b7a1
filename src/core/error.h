/* error.h: filling a brasa_error. Every fallible internal function takes a brasa_error * (which may
 * be NULL) and returns the status it set, so a failure is reported once, where it is understood. */
#ifndef BRASA_CORE_ERROR_H
#define BRASA_CORE_ERROR_H

#include "brasa.h"

#if defined(__MINGW32__)
/* MinGW's C99 printf (see __USE_MINGW_ANSI_STDIO in cmake/warnings.cmake) knows %zu and %lld */
#define ERR_PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__) || defined(__clang__)
#define ERR_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ERR_PRINTF(f, a)
#endif

/* Sets err (when not NULL) to status and a printf-formatted message; returns status. */
brasa_status err_set(brasa_error *err, brasa_status status, const char *fmt, ...) ERR_PRINTF(3, 4);

void err_clear(brasa_error *err);

#endif
