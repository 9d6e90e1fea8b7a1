/* posix.c: the platform layer on Linux, macOS and other POSIX systems (mmap, isatty). */
#define _POSIX_C_SOURCE 200809L
#include "platform/platform.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>
#if defined(__linux__) && defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include "core/error.h"

brasa_status plat_map_open(const char *path, plat_map *map, brasa_error *err) {
    map->data = NULL;
    map->size = 0;
    map->handle = NULL;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return err_set(err, BRASA_ERR_IO, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return err_set(err, BRASA_ERR_IO, "cannot stat: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(err, BRASA_ERR_IO, "not a regular file");
    }
    if (st.st_size > 0) {
        if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
            close(fd);
            return err_set(err, BRASA_ERR_IO, "file too large to map on this system");
        }
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return err_set(err, BRASA_ERR_IO, "cannot map: %s", strerror(e));
        }
        map->data = p;
        map->size = (uint64_t)st.st_size;
    }
    close(fd); /* the mapping keeps the file alive */
    return BRASA_OK;
}

void plat_map_close(plat_map *map) {
    if (map && map->data)
        munmap((void *)map->data, (size_t)map->size);
    if (map) {
        map->data = NULL;
        map->size = 0;
    }
}

bool plat_is_terminal(int fd) {
    return isatty(fd) == 1;
}

bool plat_terminal_styles(int fd) {
    const char *term = getenv("TERM"), *no_color = getenv("NO_COLOR");
    return isatty(fd) == 1 && !(no_color && no_color[0]) && !(term && strcmp(term, "dumb") == 0);
}

void plat_console_init(void) {
}

void plat_args_utf8(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
}

FILE *plat_fopen(const char *path, const char *mode) {
    return fopen(path, mode);
}

void plat_write_text(FILE *stream, const char *text, size_t len) {
    fwrite(text, 1, len, stream);
}

/* mkdir -p: each missing component made in turn; the last one private to the user */
static bool make_dirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        const bool ok = mkdir(path, 0755) == 0 || errno == EEXIST;
        *p = '/';
        if (!ok)
            return false;
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return false;
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool plat_cache_dir(char *out, size_t size) {
    const char *own = getenv("BRASA_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (own && own[0])
        n = snprintf(out, size, "%s", own);
    else if (xdg && xdg[0] == '/') /* the spec says a relative value is to be ignored */
        n = snprintf(out, size, "%s/brasa", xdg);
    else if (home && home[0] == '/')
        n = snprintf(out, size, "%s/.cache/brasa", home);
    else
        return false;
    if (n < 0 || (size_t)n >= size)
        return false;
    while (n > 1 && out[n - 1] == '/')
        out[--n] = '\0';
    return make_dirs(out);
}

brasa_status plat_write_file_atomic(const char *path, const void *data, size_t len, brasa_error *err) {
    char tmp[4096];
    const int n = snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: path too long", path);
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return err_set(err, BRASA_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    const uint8_t *p = data;
    size_t done = 0;
    while (done < len) {
        const ssize_t w = write(fd, p + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    /* the data must be on the disk before the rename makes it the file, or a crash could leave an
     * empty file under the real name */
    const bool ok = done == len && fsync(fd) == 0;
    const int saved = errno;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        const int why = ok ? errno : saved;
        unlink(tmp);
        return err_set(err, BRASA_ERR_IO, "cannot write %s: %s", path, strerror(why));
    }
    return BRASA_OK;
}

bool plat_env(const char *name, char *out, size_t size) {
    const char *v = getenv(name);
    const size_t n = v ? strlen(v) : 0;
    if (n == 0 || n >= size)
        return false;
    memcpy(out, v, n + 1);
    return true;
}

char plat_path_separator(void) {
    return '/';
}

bool plat_make_dirs(const char *path) {
    char copy[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof copy)
        return false;
    memcpy(copy, path, n + 1);
    while (n > 1 && copy[n - 1] == '/')
        copy[--n] = '\0';
    return make_dirs(copy);
}

void plat_file_info_of(const char *path, plat_file_info *info) {
    struct stat st;
    memset(info, 0, sizeof *info);
    if (stat(path, &st) != 0)
        return;
    info->exists = true;
    info->is_dir = S_ISDIR(st.st_mode);
    info->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    info->modified = (int64_t)st.st_mtime;
}

bool plat_list_dir(const char *path, bool (*fn)(const char *name, bool is_dir, void *user), void *user) {
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *e;
    char full[4096];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        /* d_type is not filled on every file system: ask stat then */
        const int n = snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        struct stat st;
        const bool is_dir = n > 0 && (size_t)n < sizeof full && stat(full, &st) == 0 && S_ISDIR(st.st_mode);
        if (!fn(e->d_name, is_dir, user))
            break;
    }
    closedir(d);
    return true;
}

bool plat_remove_file(const char *path) {
    return unlink(path) == 0;
}

bool plat_remove_dir(const char *path) {
    return rmdir(path) == 0;
}

bool plat_rename(const char *from, const char *to) {
    return rename(from, to) == 0;
}

bool plat_file_sync(FILE *f) {
    return fflush(f) == 0 && fsync(fileno(f)) == 0;
}

struct plat_thread {
    pthread_t id;
    void (*fn)(void *);
    void *arg;
};

static void *thread_main(void *p) {
    plat_thread *t = p;
    t->fn(t->arg);
    return NULL;
}

brasa_status plat_thread_start(plat_thread **out, void (*fn)(void *), void *arg, brasa_error *err) {
    plat_thread *t = malloc(sizeof *t);
    if (!t)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory starting a thread");
    t->fn = fn;
    t->arg = arg;
    int e = pthread_create(&t->id, NULL, thread_main, t);
    if (e != 0) {
        free(t);
        return err_set(err, BRASA_ERR_INTERNAL, "cannot start a thread: %s", strerror(e));
    }
    *out = t;
    return BRASA_OK;
}

void plat_thread_join(plat_thread *t) {
    if (!t)
        return;
    pthread_join(t->id, NULL);
    free(t);
}

struct plat_mutex { pthread_mutex_t m; };
struct plat_cond { pthread_cond_t c; };

plat_mutex *plat_mutex_create(void) {
    plat_mutex *m = malloc(sizeof *m);
    if (m && pthread_mutex_init(&m->m, NULL) != 0) {
        free(m);
        m = NULL;
    }
    return m;
}

void plat_mutex_free(plat_mutex *m) {
    if (m) {
        pthread_mutex_destroy(&m->m);
        free(m);
    }
}

void plat_mutex_lock(plat_mutex *m) { pthread_mutex_lock(&m->m); }
void plat_mutex_unlock(plat_mutex *m) { pthread_mutex_unlock(&m->m); }

plat_cond *plat_cond_create(void) {
    plat_cond *c = malloc(sizeof *c);
    if (c && pthread_cond_init(&c->c, NULL) != 0) {
        free(c);
        c = NULL;
    }
    return c;
}

void plat_cond_free(plat_cond *c) {
    if (c) {
        pthread_cond_destroy(&c->c);
        free(c);
    }
}

void plat_cond_wait(plat_cond *c, plat_mutex *m) { pthread_cond_wait(&c->c, &m->m); }
void plat_cond_broadcast(plat_cond *c) { pthread_cond_broadcast(&c->c); }

void plat_cond_timedwait(plat_cond *c, plat_mutex *m, double seconds) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    const long long ns = (long long)ts.tv_nsec + (long long)(seconds * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    pthread_cond_timedwait(&c->c, &m->m, &ts);
}

int plat_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The one piece of process-wide state: a signal handler can only reach a global. */
static volatile int *interrupt_flag;

static void on_interrupt(int sig) {
    (void)sig;
    if (interrupt_flag)
        *interrupt_flag = 1;
}

static void catch_signal(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

void plat_interrupt_install(volatile int *flag) {
    interrupt_flag = flag;
    catch_signal(SIGINT);
}

void plat_interrupt_remove(void) {
    signal(SIGINT, SIG_DFL);
    interrupt_flag = NULL;
}

void plat_terminate_install(volatile int *flag) {
    interrupt_flag = flag;
    catch_signal(SIGINT);
    catch_signal(SIGTERM);
    signal(SIGPIPE, SIG_IGN);
}

bool plat_runtime_dir(char *out, size_t size) {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(out, size, "%s/brasa", xdg);
    else
        n = snprintf(out, size, "/tmp/brasa-%ld", (long)getuid());
    if (n < 0 || (size_t)n >= size)
        return false;
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return false;
    struct stat st;
    /* a folder in /tmp that someone else made must not be trusted */
    return stat(out, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid();
}

struct plat_lock { int fd; };

static long read_pid(int fd) {
    char text[32] = { 0 };
    if (pread(fd, text, sizeof text - 1, 0) <= 0)
        return 0;
    return strtol(text, NULL, 10);
}

brasa_status plat_lock_acquire(const char *path, plat_lock **out, long *holder_pid, long *stale_pid, brasa_error *err) {
    *out = NULL;
    *holder_pid = *stale_pid = 0;
    const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return err_set(err, BRASA_ERR_IO, "cannot open the lock file %s: %s", path, strerror(errno));
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, F_SETLK, &fl) != 0) {
        *holder_pid = read_pid(fd);
        close(fd);
        return err_set(err, BRASA_ERR_IO, "%s is held by process %ld", path, *holder_pid);
    }
    *stale_pid = read_pid(fd); /* a PID left by a process that died holding the lock */
    char text[32];
    const int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
        close(fd);
        return err_set(err, BRASA_ERR_IO, "cannot write the lock file %s: %s", path, strerror(errno));
    }
    plat_lock *l = malloc(sizeof *l);
    if (!l) {
        close(fd);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    l->fd = fd;
    *out = l;
    return BRASA_OK;
}

void plat_lock_release(plat_lock *l) {
    if (!l)
        return;
    if (ftruncate(l->fd, 0) != 0) {
        /* the lock goes with the descriptor either way; an old PID in the file is only a hint */
    }
    close(l->fd);
    free(l);
}

long plat_pid(void) {
    return (long)getpid();
}

bool plat_socket_peer_closed(int fd) {
    char c;
    const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void plat_socket_close(int fd) {
    close(fd);
}

void plat_sleep(double seconds) {
    struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
    nanosleep(&ts, NULL);
}

double plat_time_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t plat_peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
#if defined(__APPLE__)
    return (uint64_t)ru.ru_maxrss; /* bytes on macOS */
#else
    return (uint64_t)ru.ru_maxrss * 1024u; /* kilobytes on Linux and the BSDs */
#endif
}

int32_t plat_atomic_load(volatile int32_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
void plat_atomic_store(volatile int32_t *p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
int32_t plat_atomic_add(volatile int32_t *p, int32_t d) { return __atomic_add_fetch(p, d, __ATOMIC_SEQ_CST); }

void plat_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

void plat_yield(void) {
    sched_yield();
}

/* Linux: distinct (package, core) pairs in sysfs. Elsewhere, the logical count. */
int plat_physical_cores(void) {
    int logical = plat_cpu_count();
    int seen = 0;
    long ids[1024];
    for (int cpu = 0; cpu < logical && cpu < 1024; cpu++) {
        char path[128];
        long core = -1, package = -1;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
        FILE *f = fopen(path, "r");
        if (!f || fscanf(f, "%ld", &core) != 1) {
            if (f)
                fclose(f);
            return logical;
        }
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
        f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%ld", &package) != 1)
                package = 0;
            fclose(f);
        }
        long id = package * 65536 + core;
        bool known = false;
        for (int k = 0; k < seen && !known; k++)
            known = ids[k] == id;
        if (!known)
            ids[seen++] = id;
    }
    return seen > 0 ? seen : logical;
}

bool plat_arm_dotprod(void) {
#if defined(__linux__) && defined(__aarch64__)
    return (getauxval(AT_HWCAP) & (1ul << 20)) != 0; /* HWCAP_ASIMDDP */
#elif defined(__APPLE__) && defined(__aarch64__)
    return true; /* every Apple core has it */
#else
    return false;
#endif
}

struct plat_lib {
    void *handle;
};

plat_lib *plat_lib_open(const char *name, char *why, size_t why_size) {
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s", e ? e : "cannot be loaded");
        return NULL;
    }
    plat_lib *lib = malloc(sizeof *lib);
    if (!lib) {
        dlclose(h);
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    lib->handle = h;
    return lib;
}

void *plat_lib_symbol(plat_lib *lib, const char *name) {
    return lib ? dlsym(lib->handle, name) : NULL;
}

void plat_lib_close(plat_lib *lib) {
    if (!lib)
        return;
    dlclose(lib->handle);
    free(lib);
}

void plat_memory(uint64_t *total, uint64_t *available) {
    *total = *available = 0;
#if defined(__linux__)
    /* MemAvailable is the kernel's own estimate of what can be had without swapping */
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f)) {
            if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
                *total = (uint64_t)kb * 1024u;
            else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
                *available = (uint64_t)kb * 1024u;
        }
        fclose(f);
    }
#endif
    if (*total == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0)
            *total = (uint64_t)pages * (uint64_t)page;
    }
}

void plat_os_name(char *out, size_t size) {
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(out, size, "%s %s", u.sysname, u.release);
    else
        snprintf(out, size, "POSIX");
}

plat_access plat_path_access(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0)
        return PLAT_ACCESS_MISSING;
    return access(path, R_OK | W_OK) == 0 ? PLAT_ACCESS_OK : PLAT_ACCESS_DENIED;
}

const char *plat_module_suffix(void) { return ".so"; }

bool plat_exe_dir(char *out, size_t size) {
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0)
        return false;
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= size)
        return false;
    *slash = '\0';
    snprintf(out, size, "%s", slash == path ? "/" : path);
    return true;
}
