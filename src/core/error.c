/* error.c: formatting error messages and naming status codes. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>

brasa_status err_set(brasa_error *err, brasa_status status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

void err_clear(brasa_error *err) {
    if (err) {
        err->status = BRASA_OK;
        err->message[0] = '\0';
    }
}

const char *brasa_status_str(brasa_status status) {
    switch (status) {
    case BRASA_OK: return "ok";
    case BRASA_ERR_INVALID_ARGUMENT: return "invalid argument";
    case BRASA_ERR_IO: return "input/output error";
    case BRASA_ERR_FORMAT: return "corrupt model file";
    case BRASA_ERR_UNSUPPORTED: return "unsupported";
    case BRASA_ERR_NO_MEMORY: return "out of memory";
    case BRASA_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    case BRASA_ERR_INTERNAL: return "internal error";
    case BRASA_CONTEXT_FULL: return "context full";
    case BRASA_ABORTED: return "aborted";
    }
    return "unknown status";
}
