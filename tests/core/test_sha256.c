/* SHA-256 gives the digests of FIPS 180-4's examples (NIST's "Example Algorithms" values: "abc", the
 * empty message, the 448- and 896-bit messages, a million 'a's), the same digest however the input is
 * cut into updates, and, for every length from 0 to 1000 bytes (every padding case), the digests
 * Python's hashlib gives: their SHA-256 taken together is the constant below, computed with
 *   h = hashlib.sha256()
 *   for n in range(1001): h.update(hashlib.sha256(bytes((i * 31 + 7) & 255 for i in range(n))).digest())
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sha256.h"

static int failures;
#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
            failures++;                                          \
        }                                                        \
    } while (0)

static void check_vector(const char *text, const char *want) {
    char hex[SHA256_HEX_BYTES];
    sha256_hex(text, strlen(text), hex);
    CHECK(strcmp(hex, want) == 0, "sha256(\"%.20s...\") = %s, want %s", text, hex, want);
}

int main(void) {
    check_vector("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_vector("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_vector("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    check_vector("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                 "mnopqrstnopqrstu",
                 "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");

    /* a million 'a's, fed in pieces of awkward sizes */
    sha256_ctx c;
    uint8_t digest[SHA256_BYTES];
    char hex[SHA256_HEX_BYTES];
    static char a[1000];
    memset(a, 'a', sizeof a);
    sha256_init(&c);
    for (size_t done = 0, step = 1; done < 1000000; done += step, step = step % 997 + 1) {
        if (step > 1000000 - done)
            step = 1000000 - done;
        sha256_update(&c, a, step);
    }
    sha256_final(&c, digest);
    sha256_to_hex(digest, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
          "a million 'a's: %s", hex);

    /* every length 0..1000, whole and cut at every third byte, against hashlib */
    static uint8_t data[1000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)((i * 31 + 7) & 255);
    sha256_ctx all;
    sha256_init(&all);
    for (size_t n = 0; n <= sizeof data; n++) {
        uint8_t whole[SHA256_BYTES], pieces[SHA256_BYTES];
        sha256_init(&c);
        sha256_update(&c, data, n);
        sha256_final(&c, whole);
        sha256_init(&c);
        for (size_t at = 0; at < n; at += 3)
            sha256_update(&c, data + at, n - at < 3 ? n - at : 3);
        sha256_final(&c, pieces);
        CHECK(memcmp(whole, pieces, SHA256_BYTES) == 0, "length %zu: the digest depends on how the input is cut", n);
        sha256_update(&all, whole, SHA256_BYTES);
    }
    sha256_final(&all, digest);
    sha256_to_hex(digest, hex);
    CHECK(strcmp(hex, "75f6f4ccb9c35ea63b599e5b15c8509817fbd81b782ce3560aab2a53397c35d9") == 0,
          "the digests of lengths 0..1000 differ from hashlib's: %s", hex);

    if (failures)
        return 1;
    printf("sha256: FIPS 180-4 examples, a million 'a's, lengths 0..1000 as hashlib: ok\n");
    return 0;
}
