/* hub.h: HTTP for the model library: a GET into memory (the hub's listing) and a file download that
 * resumes what a part file holds with a Range request, retries a dropped connection with backoff and
 * hashes every byte of the file as it goes. libcurl does the HTTP (hub_curl.c); a build without it
 * gets hub_none.c, whose functions fail saying how to get it. Used by the program, not the library:
 * libbrasa itself never touches the network. */
#ifndef BRASA_TOOLS_HUB_H
#define BRASA_TOOLS_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"
#include "core/buf.h"
#include "core/sha256.h"

typedef struct hub_client {
    const char *token;      /* sent as "Authorization: Bearer TOKEN" when not NULL (checked: no
                               control characters) */
    const char *user_agent;
    int max_attempts;       /* tries of a download in a row that bring no byte before giving up */
    double first_wait_s;    /* the wait before the second try; doubled before each later one */
    /* Called as bytes arrive (about ten times a second, and once at the end): the file's bytes so
     * far and its size. */
    void (*progress)(uint64_t done, uint64_t total, void *user);
    /* Called with a line for the user: a dropped connection and the retry to come. */
    void (*note)(const char *text, void *user);
    void *user;
} hub_client;

hub_client hub_client_defaults(void);

/* Whether this build can download; when not, why and what to install, in why. */
bool hub_available(char *why, size_t size);

/* GETs url (following redirects) into body (replaced; at most max bytes), with the answer's status
 * in *http_status (0 when none came). A status other than 200 is not an error here: the caller
 * words it; failing to reach the server at all is (BRASA_ERR_IO). */
brasa_status hub_get(const hub_client *c, const char *url, size_t max, buf *body, long *http_status, brasa_error *err);

/* Downloads url into part_path until it holds exactly size bytes: what the file holds already is
 * kept and the rest asked for with a Range request (a server that ignores it sends the whole file,
 * which then replaces the part); a connection that drops or stalls is resumed the same way, after a
 * wait, up to max_attempts tries in a row without progress. digest receives the SHA-256 of the whole
 * file. An HTTP error status ends it at once with *http_status set (404, 401...), as does a server
 * that sends more than size bytes. The part file stays on failure, for the next try to resume. */
brasa_status hub_download(const hub_client *c, const char *url, const char *part_path, uint64_t size,
                          uint8_t digest[SHA256_BYTES], long *http_status, brasa_error *err);

#endif
