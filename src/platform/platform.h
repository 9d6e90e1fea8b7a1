/* platform.h: the few operating-system services brasa needs, one implementation file per platform
 * (posix.c, win32.c), so no #ifdef leaks into the engine. */
#ifndef BRASA_PLATFORM_H
#define BRASA_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "brasa.h"

/* A read-only mapping of a whole file. An empty file maps to data == NULL, size == 0. */
typedef struct plat_map {
    const uint8_t *data;
    uint64_t size;
    void *handle; /* platform private */
} plat_map;

brasa_status plat_map_open(const char *path, plat_map *map, brasa_error *err);
void plat_map_close(plat_map *map);

/* Whether the stream (0 stdin, 1 stdout, 2 stderr) is an interactive terminal. */
bool plat_is_terminal(int fd);

/* Whether the stream (1 stdout, 2 stderr) is a terminal that shows ANSI styles (dim, reset): not
 * with NO_COLOR set or TERM=dumb; a Windows console is asked to take them (virtual terminal
 * processing), which consoles before Windows 10 refuse. */
bool plat_terminal_styles(int fd);

/* Prepares the console for UTF-8 output (a no-op where it already is). */
void plat_console_init(void);

/* Replaces the program's arguments with UTF-8 ones. On Windows main() receives them in the ANSI code
 * page, which cannot hold most of Unicode, so they are read again from the wide command line; the
 * strings live until the process ends. Elsewhere the bytes given are kept. */
void plat_args_utf8(int *argc, char ***argv);

/* fopen for a UTF-8 path (through the wide API on Windows, so names with accents open). */
FILE *plat_fopen(const char *path, const char *mode);

/* Writes UTF-8 text to stdout or stderr. A Windows console gets it through its wide-character API,
 * so accents show whatever its code page; a pipe or file gets the UTF-8 bytes unchanged. A sequence
 * cut between two calls (streamed tokens do that) is held back until it is complete. */
void plat_write_text(FILE *stream, const char *text, size_t len);

/* The per-user cache directory: $BRASA_CACHE_DIR when set, else $XDG_CACHE_HOME/brasa or
 * ~/.cache/brasa (Linux), %LOCALAPPDATA%\brasa (Windows); created, with its parents, on first use.
 * Returns false when there is none or it cannot be made. */
bool plat_cache_dir(char *out, size_t size);

/* An environment variable's value as UTF-8 (read through the wide API on Windows, so a folder with
 * accents survives). False when it is unset, empty, or longer than size - 1 bytes. */
bool plat_env(const char *name, char *out, size_t size);

/* Writes a whole file so that readers see the old content or the new, never a part: the bytes go to
 * a temporary file beside it, reach the disk, and then replace the file in one rename. */
brasa_status plat_write_file_atomic(const char *path, const void *data, size_t len, brasa_error *err);

/* Files and folders, for the model library (paths UTF-8, '/' accepted everywhere). */
/* The separator the system writes in paths ('/', or '\\' on Windows), for paths shown to people. */
char plat_path_separator(void);
/* Makes a folder and its missing parents (on POSIX the last one private to the user, as the cache
 * folder is); true when it is a folder afterwards. */
bool plat_make_dirs(const char *path);
typedef struct plat_file_info {
    bool exists, is_dir;
    uint64_t size;    /* bytes, for a file */
    int64_t modified; /* seconds since 1970-01-01 UTC */
} plat_file_info;
/* What is at path; info->exists false when nothing is (or it cannot be looked at). */
void plat_file_info_of(const char *path, plat_file_info *info);
/* Calls fn for each entry of a folder (not "." or ".."), in no particular order, until fn returns
 * false. Returns false when the folder cannot be read. */
bool plat_list_dir(const char *path, bool (*fn)(const char *name, bool is_dir, void *user), void *user);
bool plat_remove_file(const char *path);
bool plat_remove_dir(const char *path); /* an empty folder only */
/* Renames a file, replacing to when it exists, in one step on the same volume. */
bool plat_rename(const char *from, const char *to);
/* Flushes a stream opened for writing and waits until its bytes are on the disk. */
bool plat_file_sync(FILE *f);

/* Threads, for the compute pool. A thread runs fn(arg) once. */
typedef struct plat_thread plat_thread;
brasa_status plat_thread_start(plat_thread **out, void (*fn)(void *), void *arg, brasa_error *err);
void plat_thread_join(plat_thread *t); /* waits for the thread and frees it */

typedef struct plat_mutex plat_mutex;
typedef struct plat_cond plat_cond;
plat_mutex *plat_mutex_create(void);
void plat_mutex_free(plat_mutex *m);
void plat_mutex_lock(plat_mutex *m);
void plat_mutex_unlock(plat_mutex *m);
plat_cond *plat_cond_create(void);
void plat_cond_free(plat_cond *c);
void plat_cond_wait(plat_cond *c, plat_mutex *m);
void plat_cond_broadcast(plat_cond *c);
/* Waits at most `seconds` (or until woken; spurious wake-ups happen: callers re-check). */
void plat_cond_timedwait(plat_cond *c, plat_mutex *m, double seconds);

int plat_cpu_count(void);
/* Physical cores (hyper-threads counted once); the logical count where it cannot be told. */
int plat_physical_cores(void);
/* Whether this aarch64 CPU and OS run the ARMv8.2 dot-product instructions (false elsewhere). */
bool plat_arm_dotprod(void);

/* Sequentially consistent atomics on 32-bit integers, and the polite ways to wait: a pause hint
 * inside a spin loop, and giving the processor to another thread. */
int32_t plat_atomic_load(volatile int32_t *p);
void plat_atomic_store(volatile int32_t *p, int32_t v);
int32_t plat_atomic_add(volatile int32_t *p, int32_t delta); /* returns the new value */
void plat_cpu_relax(void);
void plat_yield(void);

/* Ctrl-C: while installed, an interrupt sets *flag to 1 instead of ending the program. */
void plat_interrupt_install(volatile int *flag);
void plat_interrupt_remove(void);

/* Service shutdown: while installed, SIGINT and SIGTERM (Ctrl-C, Ctrl-Break, console close on
 * Windows) set *flag to 1. Writes to closed sockets never kill the process. */
void plat_terminate_install(volatile int *flag);

/* The per-user runtime directory for locks ($XDG_RUNTIME_DIR, else a private folder in the temporary
 * directory), created when missing. Returns false when it cannot be made. */
bool plat_runtime_dir(char *out, size_t size);

/* An exclusive lock on a file, held until released or the process ends (a killed process leaves no
 * lock behind, only the file, whose PID *stale_pid then names). When another live process holds it,
 * returns BRASA_ERR_IO with *holder_pid set. The file holds the owner's PID. */
typedef struct plat_lock plat_lock;
brasa_status plat_lock_acquire(const char *path, plat_lock **out, long *holder_pid, long *stale_pid, brasa_error *err);
void plat_lock_release(plat_lock *lock);
long plat_pid(void);

/* Whether the peer of a connected socket has closed its side (checked without blocking or reading). */
bool plat_socket_peer_closed(int fd);

/* A numeric IPv4/IPv6 address (or "localhost") and port as a socket address in storage (cap
 * bytes); false when host is not such an address. loopback: whether it only reaches this machine. */
bool plat_sockaddr(const char *host, int port, void *storage, size_t cap, size_t *len, bool *ipv6, bool *loopback);

/* Closes a socket descriptor. */
void plat_socket_close(int fd);

/* Sleeps for about `seconds`. */
void plat_sleep(double seconds);

/* A hint that the pages of [p, p + n) will not be read for a long while: the system may drop them
 * from this process's resident memory (the mapped model file's pages, once the CPU backend keeps
 * its own copy of a weight). The data stays valid and is read back on the next access; a no-op
 * where the system has no such hint. Only whole pages inside the range are touched. */
void plat_pages_release(const void *p, size_t n);

/* The peak resident memory of this process in bytes (0 when unknown). */
uint64_t plat_peak_rss_bytes(void);

/* Monotonic time in seconds, for speed reports. */
double plat_time_seconds(void);

/* Dynamic loading, for vendor runtimes brasa must never link against (CUDA, HIP): a library
 * handle or NULL with the system's reason in why. */
typedef struct plat_lib plat_lib;
plat_lib *plat_lib_open(const char *name, char *why, size_t why_size);
void *plat_lib_symbol(plat_lib *lib, const char *name);
void plat_lib_close(plat_lib *lib);
/* How a loadable module's file name ends here: ".so", ".dll". */
const char *plat_module_suffix(void);
/* The directory of the running program (UTF-8, no trailing separator); false when unknown. */
bool plat_exe_dir(char *out, size_t size);

/* Physical memory in bytes: installed, and available to a new process without swapping (0 when
 * unknown). */
void plat_memory(uint64_t *total, uint64_t *available);

/* Whether a path exists and this process may read and write it (device files such as /dev/kfd). */
typedef enum plat_access { PLAT_ACCESS_MISSING, PLAT_ACCESS_DENIED, PLAT_ACCESS_OK } plat_access;
plat_access plat_path_access(const char *path);

/* The operating system's name and release, e.g. "Linux 6.1.0-18-amd64" or "Windows 10.0.19045". */
void plat_os_name(char *out, size_t size);

#endif
