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
#include <sys/resource.h>
#include <sys/stat.h>
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

void plat_console_init(void) {
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

void plat_interrupt_install(volatile int *flag) {
    interrupt_flag = flag;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

void plat_interrupt_remove(void) {
    signal(SIGINT, SIG_DFL);
    interrupt_flag = NULL;
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
