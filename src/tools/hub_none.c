/* hub_none.c: hub.h in a build without libcurl: nothing is downloaded, and every call says what to
 * install. The rest of the model library (names, the models already pulled) works the same. */
#include "tools/hub.h"

#include <stdio.h>

#include "core/error.h"

#define HUB_MISSING "this build of brasa cannot download: it was built without libcurl (Debian and Ubuntu: " \
                    "apt-get install libcurl4-openssl-dev; MSYS2: pacman -S mingw-w64-x86_64-curl; vcpkg: "     \
                    "vcpkg install curl), then configure and build again"

hub_client hub_client_defaults(void) {
    hub_client c = { 0 };
    c.user_agent = "brasa/" BRASA_VERSION_STRING;
    c.max_attempts = 5;
    c.first_wait_s = 1.0;
    return c;
}

bool hub_available(char *why, size_t size) {
    snprintf(why, size, "%s", HUB_MISSING);
    return false;
}

brasa_status hub_get(const hub_client *c, const char *url, size_t max, buf *body, long *http_status, brasa_error *err) {
    (void)c;
    (void)url;
    (void)max;
    (void)body;
    *http_status = 0;
    return err_set(err, BRASA_ERR_UNSUPPORTED, "%s", HUB_MISSING);
}

brasa_status hub_download(const hub_client *c, const char *url, const char *part_path, uint64_t size,
                          uint8_t digest[SHA256_BYTES], long *http_status, brasa_error *err) {
    (void)c;
    (void)url;
    (void)part_path;
    (void)size;
    (void)digest;
    *http_status = 0;
    return err_set(err, BRASA_ERR_UNSUPPORTED, "%s", HUB_MISSING);
}
