/* stream.c: stop strings over streamed text (see stream.h). */
#include "engine/stream.h"

#include <string.h>

/* Length of the longest suffix of s that is a proper prefix of some stop string. */
static size_t held_back(const char *s, size_t n, const char *const *stop) {
    size_t best = 0;
    for (size_t k = 0; stop && stop[k]; k++) {
        size_t len = strlen(stop[k]);
        for (size_t l = len - 1 < n ? len - 1 : n; l > best; l--)
            if (memcmp(s + n - l, stop[k], l) == 0) {
                best = l;
                break;
            }
    }
    return best;
}

static void emit(gen_stream *s, size_t n) {
    if (n > 0 && s->on_text && !s->on_text(s->pending.data, n, s->user_data))
        s->stopped = true;
    if (s->pending.len > n)
        memmove(s->pending.data, s->pending.data + n, s->pending.len - n);
    s->pending.len -= n;
}

bool gen_stream_push(gen_stream *s, const char *text, size_t n) {
    if (!buf_append(&s->pending, text, n))
        return false;
    const char *const *stop = s->stop;
    size_t cut = s->pending.len;
    int which = -1;
    for (size_t k = 0; stop && stop[k]; k++) {
        size_t len = strlen(stop[k]);
        if (len == 0 || len > s->pending.len)
            continue;
        for (size_t i = 0; i + len <= s->pending.len; i++)
            if (memcmp(s->pending.data + i, stop[k], len) == 0) {
                if (i < cut) {
                    cut = i;
                    which = (int)k;
                }
                break;
            }
    }
    if (cut < s->pending.len) {
        s->matched = true;
        s->matched_index = which;
        s->pending.len = cut;
        emit(s, cut);
        return true;
    }
    emit(s, s->pending.len - held_back(s->pending.data, s->pending.len, stop));
    return true;
}

void gen_stream_flush(gen_stream *s) {
    emit(s, s->pending.len);
}

void gen_stream_free(gen_stream *s) {
    buf_free(&s->pending);
}
