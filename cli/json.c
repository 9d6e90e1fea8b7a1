/* json.c: writing JSON strings correctly: escapes, control characters, and model-supplied text that
 * may not be valid UTF-8 (which JSON cannot carry). */
#include <string.h>

#include "cli.h"
#include "core/utf8.h"
#include "platform/platform.h"

void json_string(FILE *out, const char *s, size_t len) {
    fputc('"', out);
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc((int)c, out);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': fputs("\\n", out); break;
            case '\r': fputs("\\r", out); break;
            case '\t': fputs("\\t", out); break;
            default: fprintf(out, "\\u%04x", c); break;
            }
            i++;
        } else if (c < 0x80) {
            fputc((int)c, out);
            i++;
        } else {
            uint32_t cp;
            int k = utf8_decode(p + i, len - i, &cp);
            if (k < 0) {
                fputs("\\ufffd", out);
                i += (size_t)-k;
            } else {
                plat_write_text(out, (const char *)p + i, (size_t)k);
                i += (size_t)k;
            }
        }
    }
    fputc('"', out);
}
