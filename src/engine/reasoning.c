/* reasoning.c: the streaming reasoning/answer splitter (see reasoning.h). A tag being matched is
 * held as a count: its bytes are the tag's own, so nothing needs copying until the match fails. */
#include "engine/reasoning.h"

#include <string.h>

#include "core/utf8.h"

enum { ST_OPENING, ST_THOUGHT, ST_AFTER_CLOSE, ST_ANSWER };

static const char open_tag[] = "<think>";
static const char close_tag[] = "</think>";
#define OPEN_LEN (sizeof open_tag - 1)
#define CLOSE_LEN (sizeof close_tag - 1)

void reasoning_init(reasoning_splitter *s, brasa_chat_reasoning start, reasoning_emit_fn emit, void *user_data) {
    memset(s, 0, sizeof *s);
    s->state = start == BRASA_REASONING_OPEN ? ST_THOUGHT : start == BRASA_REASONING_LEADING ? ST_OPENING : ST_ANSWER;
    s->emit = emit;
    s->user_data = user_data;
}

static bool send(reasoning_splitter *s, reasoning_part part, const char *text, size_t len) {
    if (len > 0 && !s->stopped && !s->emit(part, text, len, s->user_data))
        s->stopped = true;
    return !s->stopped;
}

/* How many bytes at the end of p[0..n) start a character that the next bytes could complete. */
static size_t incomplete_tail(const char *p, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        const unsigned char b = (unsigned char)p[n - k];
        if ((b & 0xC0) == 0x80)
            continue; /* a continuation byte: its lead is further back */
        const size_t need = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 1;
        uint32_t cp;
        return need > k && utf8_decode((const unsigned char *)p + n - k, k, &cp) == -(int)k ? k : 0;
    }
    return 0;
}

static bool flush_partial(reasoning_splitter *s) {
    const size_t n = s->n_partial;
    s->n_partial = 0;
    return send(s, s->partial_part, s->partial, n);
}

/* Hands text of one part on, keeping an incomplete last character for the next piece of the
 * same part. */
static bool out(reasoning_splitter *s, reasoning_part part, const char *text, size_t len) {
    if (len == 0)
        return !s->stopped;
    if (s->n_partial > 0 && s->partial_part != part && !flush_partial(s))
        return false;
    /* complete a held character with the first bytes of this piece (or learn that it cannot be) */
    while (s->n_partial > 0 && len > 0) {
        s->partial[s->n_partial++] = *text++;
        len--;
        uint32_t cp;
        const int k = utf8_decode((const unsigned char *)s->partial, s->n_partial, &cp);
        if (k == -(int)s->n_partial && s->n_partial < 4)
            continue; /* still a valid start */
        if (k < 0 && -k < (int)s->n_partial) { /* ill-formed: out as it is, the last byte read again */
            s->n_partial--;
            text--;
            len++;
        }
        if (!flush_partial(s))
            return false;
    }
    if (s->n_partial > 0)
        return true; /* every byte went to the held character, still incomplete */
    const size_t tail = incomplete_tail(text, len);
    if (!send(s, part, text, len - tail))
        return false;
    memcpy(s->partial, text + len - tail, tail);
    s->n_partial = tail;
    s->partial_part = part;
    return true;
}

/* Where tag starts in text[0..n), or n; *partial is the length of a proper prefix of the tag that
 * ends the text (when the tag itself is not found). */
static size_t find_tag(const char *text, size_t n, const char *tag, size_t tag_len, size_t *partial) {
    *partial = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] != '<')
            continue;
        const size_t avail = n - i < tag_len ? n - i : tag_len;
        if (memcmp(text + i, tag, avail) != 0)
            continue;
        if (avail == tag_len)
            return i;
        *partial = avail; /* the text ends inside a possible tag */
        return n;
    }
    return n;
}

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool reasoning_push(reasoning_splitter *s, const char *text, size_t len) {
    size_t i = 0;
    while (i < len && !s->stopped) {
        switch (s->state) {
        case ST_OPENING: { /* the reply so far is open_tag[0..matched) */
            while (i < len && s->matched < OPEN_LEN && text[i] == open_tag[s->matched]) {
                s->matched++;
                i++;
            }
            if (s->matched == OPEN_LEN) {
                s->matched = 0;
                s->state = ST_THOUGHT;
            } else if (i < len) { /* no block: what was held is the answer's start */
                s->state = ST_ANSWER;
                const size_t held = s->matched;
                s->matched = 0;
                out(s, REASONING_ANSWER, open_tag, held);
            }
            break;
        }
        case ST_THOUGHT: {
            if (s->matched > 0) { /* a close tag begun in an earlier chunk: go on matching it */
                size_t k = 0;
                while (s->matched + k < CLOSE_LEN && i + k < len && text[i + k] == close_tag[s->matched + k])
                    k++;
                if (s->matched + k == CLOSE_LEN) {
                    s->matched = 0;
                    s->state = ST_AFTER_CLOSE;
                    i += k;
                    break;
                }
                if (i + k == len) {
                    s->matched += k;
                    i = len;
                    break;
                }
                /* not the tag after all: its start was reasoning; text[i..] has no '<' up to the
                 * mismatch, so scanning it afresh cannot miss a tag */
                const size_t held = s->matched;
                s->matched = 0;
                if (!out(s, REASONING_THOUGHT, close_tag, held))
                    break;
            }
            size_t partial;
            const size_t at = find_tag(text + i, len - i, close_tag, CLOSE_LEN, &partial);
            if (!out(s, REASONING_THOUGHT, text + i, at - partial))
                break;
            if (at < len - i) {
                i += at + CLOSE_LEN;
                s->state = ST_AFTER_CLOSE;
            } else {
                s->matched = partial;
                i = len;
            }
            break;
        }
        case ST_AFTER_CLOSE:
            while (i < len && is_space(text[i]))
                i++;
            if (i < len)
                s->state = ST_ANSWER;
            break;
        default:
            out(s, REASONING_ANSWER, text + i, len - i);
            i = len;
            break;
        }
    }
    return !s->stopped;
}

bool reasoning_finish(reasoning_splitter *s) {
    const size_t held = s->matched;
    s->matched = 0;
    if (s->state == ST_OPENING)
        out(s, REASONING_ANSWER, open_tag, held);
    else if (s->state == ST_THOUGHT)
        out(s, REASONING_THOUGHT, close_tag, held);
    if (s->n_partial > 0)
        flush_partial(s);
    return !s->stopped;
}
