/* sockaddr.c: plat_sockaddr, the one platform function whose code is the same on every system
 * (getaddrinfo is POSIX and Winsock alike); only the header that declares it differs. */
#ifndef _WIN32
#define _POSIX_C_SOURCE 200809L
#endif
#include "platform/platform.h"

#include <stdio.h>
#include <string.h>
#ifdef _WIN32
#include <winsock2.h>
#include <ws2tcpip.h>
#else
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#endif

bool plat_sockaddr(const char *host, int port, void *storage, size_t cap, size_t *len, bool *ipv6, bool *loopback) {
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    hints.ai_socktype = SOCK_STREAM;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    if (getaddrinfo(host, service, &hints, &res) != 0 || !res)
        return false;
    const bool ok = (size_t)res->ai_addrlen <= cap && (res->ai_family == AF_INET || res->ai_family == AF_INET6);
    if (ok) {
        memcpy(storage, res->ai_addr, (size_t)res->ai_addrlen);
        *len = (size_t)res->ai_addrlen;
        *ipv6 = res->ai_family == AF_INET6;
        if (*ipv6) {
            static const unsigned char one[16] = { [15] = 1 };
            *loopback = memcmp(&((const struct sockaddr_in6 *)res->ai_addr)->sin6_addr, one, 16) == 0;
        } else {
            *loopback = ((const unsigned char *)&((const struct sockaddr_in *)res->ai_addr)->sin_addr)[0] == 127;
        }
    }
    freeaddrinfo(res);
    return ok;
}
