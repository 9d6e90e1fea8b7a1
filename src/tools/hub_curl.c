/* hub_curl.c: hub.h over libcurl. A download is a loop of attempts: each asks for the bytes the part
 * file lacks (Range: bytes=N-), appends what comes while hashing it, and checks that a 206 answer
 * starts where it was asked to; a dropped or stalled connection is another attempt after a wait. The
 * hash covers the whole file because the bytes already on disk are read and hashed once first. */
#include "tools/hub.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "platform/platform.h"

#define CONNECT_TIMEOUT_S 30L
#define STALL_SECONDS 60L     /* below one byte a second for this long: the connection is dropped */
#define LISTING_TIMEOUT_S 120L
#define MAX_WAIT_S 30.0

hub_client hub_client_defaults(void) {
    hub_client c = { 0 };
    c.user_agent = "brasa/" BRASA_VERSION_STRING;
    c.max_attempts = 5;
    c.first_wait_s = 1.0;
    return c;
}

bool hub_available(char *why, size_t size) {
    if (size)
        why[0] = '\0';
    return true;
}

static bool global_ready(brasa_error *err) {
    static bool ready;
    if (ready)
        return true;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        err_set(err, BRASA_ERR_INTERNAL, "libcurl did not start");
        return false;
    }
    /* libcurl's (and its TLS library's) global state goes when the program ends, so a leak checker
     * sees nothing left behind */
    atexit(curl_global_cleanup);
    ready = true;
    return true;
}

/* A handle with what every request shares: redirects (the hub sends file downloads to a CDN),
 * http(s) only, the token, timeouts. *headers is to be freed with curl_slist_free_all. */
static CURL *open_handle(const hub_client *c, const char *url, char *errbuf, struct curl_slist **headers,
                         brasa_error *err) {
    *headers = NULL;
    if (c->token) {
        for (const char *p = c->token; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) {
                err_set(err, BRASA_ERR_INVALID_ARGUMENT, "HF_TOKEN holds a control character: it cannot be sent");
                return NULL;
            }
    }
    if (!global_ready(err))
        return NULL;
    CURL *h = curl_easy_init();
    if (!h) {
        err_set(err, BRASA_ERR_NO_MEMORY, "libcurl could not make a handle");
        return NULL;
    }
    if (c->token) {
        const size_t n = strlen(c->token) + 32;
        char *line = malloc(n);
        struct curl_slist *list = line ? (snprintf(line, n, "Authorization: Bearer %s", c->token),
                                          curl_slist_append(NULL, line))
                                       : NULL;
        free(line);
        if (!list) {
            curl_easy_cleanup(h);
            err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
            return NULL;
        }
        *headers = list;
        /* curl leaves this header out when a redirect goes to another host (CURLOPT_UNRESTRICTED_AUTH
         * stays off), so the token never reaches the CDN */
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
    }
    errbuf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent ? c->user_agent : "brasa");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, STALL_SECONDS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    return h;
}

static const char *curl_reason(CURLcode code, const char *errbuf) {
    return errbuf[0] ? errbuf : curl_easy_strerror(code);
}

/* ---- GET into memory ------------------------------------------------------------------------- */

typedef struct memory_sink {
    buf *body;
    size_t max;
    bool too_big, no_memory;
} memory_sink;

static size_t to_memory(char *data, size_t one, size_t n, void *user) {
    memory_sink *s = user;
    const size_t bytes = one * n;
    if (s->body->len + bytes > s->max) {
        s->too_big = true;
        return 0;
    }
    if (!buf_append(s->body, data, bytes)) {
        s->no_memory = true;
        return 0;
    }
    return bytes;
}

brasa_status hub_get(const hub_client *c, const char *url, size_t max, buf *body, long *http_status, brasa_error *err) {
    *http_status = 0;
    body->len = 0;
    char errbuf[CURL_ERROR_SIZE];
    struct curl_slist *headers;
    CURL *h = open_handle(c, url, errbuf, &headers, err);
    if (!h)
        return err ? err->status : BRASA_ERR_IO;
    memory_sink sink = { body, max, false, false };
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_memory);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, LISTING_TIMEOUT_S);
    const CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, http_status);
    brasa_status st = BRASA_OK;
    if (sink.too_big)
        st = err_set(err, BRASA_ERR_FORMAT, "%s: the answer is over %zu bytes", url, max);
    else if (sink.no_memory)
        st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory reading %s", url);
    else if (rc != CURLE_OK)
        st = err_set(err, BRASA_ERR_IO, "cannot reach %s: %s", url, curl_reason(rc, errbuf));
    curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    return st;
}

/* ---- downloads --------------------------------------------------------------------------------- */

typedef struct transfer {
    const hub_client *c;
    CURL *h;
    const char *path;
    FILE *file;           /* the part file, appended to */
    sha256_ctx sha;       /* of the file's bytes 0..have */
    uint64_t have, size;
    uint64_t asked_from;  /* where this attempt's Range starts (0: the whole file) */
    bool body_started;    /* the final answer's first bytes have been looked at */
    bool discard;         /* an error status: its body is not the file's */
    bool range_seen;      /* the final answer carries a Content-Range */
    uint64_t range_start;
    bool too_long, write_failed, bad_range;
    double last_progress;
} transfer;

static bool header_is(const char *line, size_t n, const char *name) {
    const size_t k = strlen(name);
    if (n < k)
        return false;
    for (size_t i = 0; i < k; i++) {
        char a = line[i];
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (a != name[i])
            return false;
    }
    return true;
}

/* Header lines of every answer on the way (redirects included): each status line starts afresh, so
 * what is kept is the final answer's Content-Range ("bytes START-END/TOTAL"). */
static size_t on_header(char *line, size_t one, size_t n, void *user) {
    transfer *t = user;
    const size_t bytes = one * n;
    if (header_is(line, bytes, "http/")) {
        t->range_seen = false;
    } else if (header_is(line, bytes, "content-range:")) {
        const char *p = line + 14;
        const char *end = line + bytes;
        while (p < end && *p == ' ')
            p++;
        if (end - p > 6 && memcmp(p, "bytes ", 6) == 0) {
            uint64_t v = 0;
            bool digits = false;
            for (p += 6; p < end && *p >= '0' && *p <= '9' && v < UINT64_MAX / 10 - 10; p++, digits = true)
                v = v * 10 + (uint64_t)(*p - '0');
            t->range_seen = digits && p < end && *p == '-';
            t->range_start = v;
        }
    }
    return bytes;
}

static bool restart_file(transfer *t) {
    fclose(t->file);
    t->file = plat_fopen(t->path, "wb");
    t->have = 0;
    sha256_init(&t->sha);
    return t->file != NULL;
}

static void report(transfer *t, bool always) {
    if (!t->c->progress)
        return;
    const double now = plat_time_seconds();
    if (always || now - t->last_progress >= 0.1) {
        t->last_progress = now;
        t->c->progress(t->have, t->size, t->c->user);
    }
}

static size_t on_body(char *data, size_t one, size_t n, void *user) {
    transfer *t = user;
    const size_t bytes = one * n;
    if (!t->body_started) {
        t->body_started = true;
        long status = 0;
        curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &status);
        if (status == 206) {
            if (!t->range_seen || t->range_start != t->asked_from) {
                t->bad_range = true; /* bytes from elsewhere in the file: not to be appended */
                return 0;
            }
        } else if (status == 200) {
            if (t->asked_from > 0 && !restart_file(t)) { /* the server sends the whole file */
                t->write_failed = true;
                return 0;
            }
        } else {
            t->discard = true;
        }
    }
    if (t->discard)
        return bytes;
    if (bytes > t->size - t->have) {
        t->too_long = true;
        return 0;
    }
    if (fwrite(data, 1, bytes, t->file) != bytes) {
        t->write_failed = true;
        return 0;
    }
    sha256_update(&t->sha, data, bytes);
    t->have += bytes;
    report(t, false);
    return bytes;
}

/* Hashes what the part file holds already (a download resumed), setting t->have. */
static brasa_status hash_existing(transfer *t, brasa_error *err) {
    sha256_init(&t->sha);
    t->have = 0;
    FILE *f = plat_fopen(t->path, "rb");
    if (!f)
        return BRASA_OK; /* nothing yet */
    unsigned char *chunk = malloc(1u << 16);
    if (!chunk) {
        fclose(f);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    size_t n;
    while (t->have < t->size && (n = fread(chunk, 1, 1u << 16, f)) > 0) {
        if (n > t->size - t->have)
            n = (size_t)(t->size - t->have);
        sha256_update(&t->sha, chunk, n);
        t->have += n;
    }
    const bool failed = ferror(f) != 0;
    free(chunk);
    fclose(f);
    if (failed)
        return err_set(err, BRASA_ERR_IO, "cannot read %s", t->path);
    return BRASA_OK;
}

/* Whether retrying can help after this libcurl result. */
static bool transient(CURLcode rc) {
    switch (rc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_TOO_MANY_REDIRECTS:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_FILESIZE_EXCEEDED:
    case CURLE_PEER_FAILED_VERIFICATION:
        return false;
    default:
        return true;
    }
}

brasa_status hub_download(const hub_client *c, const char *url, const char *part_path, uint64_t size,
                          uint8_t digest[SHA256_BYTES], long *http_status, brasa_error *err) {
    *http_status = 0;
    transfer t;
    memset(&t, 0, sizeof t);
    t.c = c;
    t.path = part_path;
    t.size = size;
    brasa_status st = hash_existing(&t, err);
    if (st != BRASA_OK)
        return st;
    /* a part file longer than the file (a hub that changed it) starts over */
    t.file = plat_fopen(part_path, "ab");
    plat_file_info info;
    plat_file_info_of(part_path, &info);
    if (t.file && info.size > size && !restart_file(&t))
        t.file = NULL;
    if (!t.file)
        return err_set(err, BRASA_ERR_IO, "cannot write %s", part_path);
    char errbuf[CURL_ERROR_SIZE];
    struct curl_slist *headers = NULL;
    t.h = open_handle(c, url, errbuf, &headers, err);
    if (!t.h) {
        fclose(t.file);
        return err ? err->status : BRASA_ERR_IO;
    }
    curl_easy_setopt(t.h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(t.h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(t.h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(t.h, CURLOPT_HEADERDATA, &t);
    report(&t, true);
    int fruitless = 0; /* tries in a row that brought no byte */
    double wait = c->first_wait_s;
    while (t.have < size) {
        char range[48];
        snprintf(range, sizeof range, "%llu-", (unsigned long long)t.have);
        curl_easy_setopt(t.h, CURLOPT_RANGE, t.have > 0 ? range : NULL);
        t.asked_from = t.have;
        t.body_started = t.discard = t.range_seen = t.bad_range = false;
        const uint64_t before = t.have;
        const CURLcode rc = curl_easy_perform(t.h);
        long status = 0;
        curl_easy_getinfo(t.h, CURLINFO_RESPONSE_CODE, &status);
        char why[CURL_ERROR_SIZE + 64];
        if (t.write_failed) {
            st = err_set(err, BRASA_ERR_IO, "cannot write %s (is the disk full?)", part_path);
            break;
        }
        if (t.too_long) {
            st = err_set(err, BRASA_ERR_FORMAT, "%s: the server sent more than the %llu bytes the hub lists", url,
                         (unsigned long long)size);
            break;
        }
        if (t.bad_range || status == 416) {
            /* a range answer that does not fit what is on disk: the next try takes the whole file */
            if (!restart_file(&t)) {
                st = err_set(err, BRASA_ERR_IO, "cannot write %s", part_path);
                break;
            }
            snprintf(why, sizeof why, "the server answered a different range than asked");
        } else if (rc == CURLE_OK && (status == 200 || status == 206)) {
            if (t.have == size)
                break;
            snprintf(why, sizeof why, "the answer ended after %llu of %llu bytes", (unsigned long long)t.have,
                     (unsigned long long)size);
        } else if (rc == CURLE_OK && status != 429 && status < 500) {
            *http_status = status;
            st = err_set(err, BRASA_ERR_IO, "%s: HTTP %ld", url, status);
            break;
        } else if (rc == CURLE_OK) {
            snprintf(why, sizeof why, "HTTP %ld from the server", status);
        } else if (!transient(rc)) {
            st = err_set(err, BRASA_ERR_IO, "cannot download %s: %s", url, curl_reason(rc, errbuf));
            break;
        } else {
            snprintf(why, sizeof why, "%s", curl_reason(rc, errbuf));
        }
        fflush(t.file);
        if (t.have > before) {
            fruitless = 0;
            wait = c->first_wait_s;
        }
        if (++fruitless >= (c->max_attempts > 0 ? c->max_attempts : 1)) {
            st = err_set(err, BRASA_ERR_IO, "cannot download %s: %s (%d tries without progress; run it again to "
                         "resume)", url, why, fruitless);
            break;
        }
        if (c->note) {
            char line[CURL_ERROR_SIZE + 256];
            snprintf(line, sizeof line, "the download stopped at byte %llu of %llu (%s); resuming in %.0f s",
                     (unsigned long long)t.have, (unsigned long long)size, why, wait);
            c->note(line, c->user);
        }
        plat_sleep(wait);
        wait = wait * 2 > MAX_WAIT_S ? MAX_WAIT_S : wait * 2;
    }
    curl_easy_cleanup(t.h);
    curl_slist_free_all(headers);
    if (st == BRASA_OK) {
        report(&t, true);
        if (!plat_file_sync(t.file))
            st = err_set(err, BRASA_ERR_IO, "cannot write %s (is the disk full?)", part_path);
        sha256_final(&t.sha, digest);
    }
    if (t.file && fclose(t.file) != 0 && st == BRASA_OK)
        st = err_set(err, BRASA_ERR_IO, "cannot write %s", part_path);
    return st;
}
