/* win32.c: the platform layer on Windows (file mappings, console code page). Paths are UTF-8 and
 * converted to UTF-16 so that names with accents open. */
#include "platform/platform.h"

#include <fcntl.h>
#include <io.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <winsock2.h>
#include <windows.h>
#include <psapi.h>
#include <shellapi.h>
#include <wchar.h>

#include "core/error.h"

static wchar_t *utf8_to_wide(const char *s) {
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    if (n <= 0)
        return NULL;
    wchar_t *w = malloc((size_t)n * sizeof *w);
    if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
        free(w);
        w = NULL;
    }
    return w;
}

brasa_status plat_map_open(const char *path, plat_map *map, brasa_error *err) {
    map->data = NULL;
    map->size = 0;
    map->handle = NULL;
    wchar_t *wpath = utf8_to_wide(path);
    if (!wpath)
        return err_set(err, BRASA_ERR_IO, "cannot open: the path is not valid UTF-8");
    HANDLE file = CreateFileW(wpath, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING,
                              FILE_ATTRIBUTE_NORMAL, NULL);
    free(wpath);
    if (file == INVALID_HANDLE_VALUE)
        return err_set(err, BRASA_ERR_IO, "cannot open (Windows error %lu)", (unsigned long)GetLastError());
    LARGE_INTEGER size;
    if (!GetFileSizeEx(file, &size)) {
        CloseHandle(file);
        return err_set(err, BRASA_ERR_IO, "cannot get the file size");
    }
    if (size.QuadPart > 0) {
        if ((unsigned long long)size.QuadPart > (unsigned long long)SIZE_MAX) {
            CloseHandle(file);
            return err_set(err, BRASA_ERR_IO, "file too large to map on this system");
        }
        HANDLE mapping = CreateFileMappingW(file, NULL, PAGE_READONLY, 0, 0, NULL);
        if (!mapping) {
            CloseHandle(file);
            return err_set(err, BRASA_ERR_IO, "cannot map (Windows error %lu)", (unsigned long)GetLastError());
        }
        void *p = MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0);
        CloseHandle(mapping); /* the view keeps the mapping alive */
        if (!p) {
            CloseHandle(file);
            return err_set(err, BRASA_ERR_IO, "cannot map a view (Windows error %lu)", (unsigned long)GetLastError());
        }
        map->data = p;
        map->size = (uint64_t)size.QuadPart;
    }
    CloseHandle(file);
    return BRASA_OK;
}

void plat_map_close(plat_map *map) {
    if (map && map->data)
        UnmapViewOfFile(map->data);
    if (map) {
        map->data = NULL;
        map->size = 0;
    }
}

bool plat_is_terminal(int fd) {
    return _isatty(fd) != 0;
}

#ifndef ENABLE_VIRTUAL_TERMINAL_PROCESSING
#define ENABLE_VIRTUAL_TERMINAL_PROCESSING 0x0004
#endif

bool plat_terminal_styles(int fd) {
    const char *no_color = getenv("NO_COLOR");
    if (_isatty(fd) == 0 || (no_color && no_color[0]) || (fd != 1 && fd != 2))
        return false;
    HANDLE h = GetStdHandle(fd == 2 ? STD_ERROR_HANDLE : STD_OUTPUT_HANDLE);
    DWORD mode = 0;
    return h != INVALID_HANDLE_VALUE && GetConsoleMode(h, &mode) &&
           ((mode & ENABLE_VIRTUAL_TERMINAL_PROCESSING) || SetConsoleMode(h, mode | ENABLE_VIRTUAL_TERMINAL_PROCESSING));
}

void plat_console_init(void) {
    SetConsoleOutputCP(CP_UTF8);
    SetConsoleCP(CP_UTF8);
    /* the text brasa prints is the model's bytes: a pipe gets them unchanged, without CR before each LF
     * (a console takes LF as a new line either way) */
    _setmode(_fileno(stdout), _O_BINARY);
    _setmode(_fileno(stderr), _O_BINARY);
}

static char *wide_to_utf8(const wchar_t *w) {
    const int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
    if (n <= 0)
        return NULL;
    char *s = malloc((size_t)n);
    if (s && WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL) != n) {
        free(s);
        s = NULL;
    }
    return s;
}

void plat_args_utf8(int *argc, char ***argv) {
    int n = 0;
    wchar_t **wide = CommandLineToArgvW(GetCommandLineW(), &n);
    if (!wide)
        return;
    char **utf8 = calloc((size_t)n + 1, sizeof *utf8);
    bool ok = utf8 != NULL;
    for (int i = 0; ok && i < n; i++)
        ok = (utf8[i] = wide_to_utf8(wide[i])) != NULL;
    LocalFree(wide);
    if (!ok) { /* out of memory: the ANSI arguments are still better than none */
        for (int i = 0; utf8 && i < n; i++)
            free(utf8[i]);
        free(utf8);
        return;
    }
    *argc = n;
    *argv = utf8;
}

FILE *plat_fopen(const char *path, const char *mode) {
    wchar_t *wpath = utf8_to_wide(path), *wmode = utf8_to_wide(mode);
    FILE *f = wpath && wmode ? _wfopen(wpath, wmode) : NULL;
    free(wpath);
    free(wmode);
    return f;
}

/* The bytes of a UTF-8 sequence that a call left incomplete, per stream (stdout, stderr): the console
 * is one per process, so this is process state by nature. */
static struct { char bytes[4]; size_t n; } console_pending[2];

/* How many bytes at the end of s[0..len) start a sequence that is not complete yet. */
static size_t incomplete_tail(const char *s, size_t len) {
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        const unsigned char c = (unsigned char)s[len - back];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: look further back for the lead */
        const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > back ? back : 0;
    }
    return 0;
}

void plat_write_text(FILE *stream, const char *text, size_t len) {
    const int which = stream == stderr ? 1 : stream == stdout ? 0 : -1;
    HANDLE h = which < 0 ? INVALID_HANDLE_VALUE : GetStdHandle(which ? STD_ERROR_HANDLE : STD_OUTPUT_HANDLE);
    DWORD mode = 0;
    if (which < 0 || h == INVALID_HANDLE_VALUE || !GetConsoleMode(h, &mode)) {
        fwrite(text, 1, len, stream); /* a pipe or a file: the UTF-8 bytes as they are */
        return;
    }
    fflush(stream); /* what printf buffered comes first */
    size_t have = console_pending[which].n;
    char *all = malloc(have + len);
    wchar_t *wide = malloc((have + len + 1) * sizeof *wide);
    if (!all || !wide) {
        free(all);
        free(wide);
        fwrite(text, 1, len, stream);
        return;
    }
    memcpy(all, console_pending[which].bytes, have);
    memcpy(all + have, text, len);
    have += len;
    const size_t keep = incomplete_tail(all, have);
    memcpy(console_pending[which].bytes, all + have - keep, keep);
    console_pending[which].n = keep;
    const size_t complete = have - keep;
    /* invalid bytes become U+FFFD rather than stopping the conversion */
    const int n = complete ? MultiByteToWideChar(CP_UTF8, 0, all, (int)complete, wide, (int)complete + 1) : 0;
    DWORD put = 0;
    if (n > 0)
        WriteConsoleW(h, wide, (DWORD)n, &put, NULL);
    free(all);
    free(wide);
}

struct plat_thread {
    HANDLE handle;
    void (*fn)(void *);
    void *arg;
};

static DWORD WINAPI thread_main(LPVOID p) {
    plat_thread *t = p;
    t->fn(t->arg);
    return 0;
}

brasa_status plat_thread_start(plat_thread **out, void (*fn)(void *), void *arg, brasa_error *err) {
    plat_thread *t = malloc(sizeof *t);
    if (!t)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory starting a thread");
    t->fn = fn;
    t->arg = arg;
    t->handle = CreateThread(NULL, 0, thread_main, t, 0, NULL);
    if (!t->handle) {
        free(t);
        return err_set(err, BRASA_ERR_INTERNAL, "cannot start a thread (Windows error %lu)", (unsigned long)GetLastError());
    }
    *out = t;
    return BRASA_OK;
}

void plat_thread_join(plat_thread *t) {
    if (!t)
        return;
    WaitForSingleObject(t->handle, INFINITE);
    CloseHandle(t->handle);
    free(t);
}

struct plat_mutex { CRITICAL_SECTION cs; };
struct plat_cond { CONDITION_VARIABLE cv; };

plat_mutex *plat_mutex_create(void) {
    plat_mutex *m = malloc(sizeof *m);
    if (m)
        InitializeCriticalSection(&m->cs);
    return m;
}

void plat_mutex_free(plat_mutex *m) {
    if (m) {
        DeleteCriticalSection(&m->cs);
        free(m);
    }
}

void plat_mutex_lock(plat_mutex *m) { EnterCriticalSection(&m->cs); }
void plat_mutex_unlock(plat_mutex *m) { LeaveCriticalSection(&m->cs); }

plat_cond *plat_cond_create(void) {
    plat_cond *c = malloc(sizeof *c);
    if (c)
        InitializeConditionVariable(&c->cv);
    return c;
}

void plat_cond_free(plat_cond *c) { free(c); }
void plat_cond_wait(plat_cond *c, plat_mutex *m) { SleepConditionVariableCS(&c->cv, &m->cs, INFINITE); }
void plat_cond_broadcast(plat_cond *c) { WakeAllConditionVariable(&c->cv); }
void plat_cond_timedwait(plat_cond *c, plat_mutex *m, double seconds) {
    SleepConditionVariableCS(&c->cv, &m->cs, seconds > 0 ? (DWORD)(seconds * 1000.0) : 0);
}

int plat_cpu_count(void) {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwNumberOfProcessors > 0 ? (int)si.dwNumberOfProcessors : 1;
}

static volatile int *interrupt_flag;

static BOOL WINAPI on_console_event(DWORD type) {
    if (type == CTRL_C_EVENT && interrupt_flag) {
        *interrupt_flag = 1;
        return TRUE;
    }
    return FALSE;
}

void plat_interrupt_install(volatile int *flag) {
    interrupt_flag = flag;
    SetConsoleCtrlHandler(on_console_event, TRUE);
}

void plat_interrupt_remove(void) {
    SetConsoleCtrlHandler(on_console_event, FALSE);
    interrupt_flag = NULL;
}

static BOOL WINAPI on_terminate_event(DWORD type) {
    if (interrupt_flag && (type == CTRL_C_EVENT || type == CTRL_BREAK_EVENT || type == CTRL_CLOSE_EVENT)) {
        *interrupt_flag = 1;
        return TRUE;
    }
    return FALSE;
}

void plat_terminate_install(volatile int *flag) {
    interrupt_flag = flag;
    SetConsoleCtrlHandler(on_terminate_event, TRUE);
}

/* Makes a folder and its missing parents (a wide path; both separators accepted). */
static bool make_dirs_wide(wchar_t *path) {
    for (wchar_t *p = path; *p; p++) {
        if ((*p != L'\\' && *p != L'/') || p == path || p[-1] == L':')
            continue;
        const wchar_t sep = *p;
        *p = L'\0';
        CreateDirectoryW(path, NULL);
        *p = sep;
    }
    CreateDirectoryW(path, NULL);
    const DWORD attr = GetFileAttributesW(path);
    return attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY);
}

/* base (an environment variable's wide value) + suffix, created, as UTF-8 in out */
static bool dir_under(const wchar_t *base, const wchar_t *suffix, char *out, size_t size) {
    wchar_t path[1024];
    if (!base || !base[0] || wcslen(base) + wcslen(suffix) >= sizeof path / sizeof *path)
        return false;
    wcscpy(path, base);
    wcscat(path, suffix);
    if (!make_dirs_wide(path))
        return false;
    const int n = WideCharToMultiByte(CP_UTF8, 0, path, -1, out, (int)size, NULL, NULL);
    return n > 0;
}

bool plat_runtime_dir(char *out, size_t size) {
    const wchar_t *base = _wgetenv(L"LOCALAPPDATA");
    if (!base || !base[0])
        base = _wgetenv(L"TEMP");
    return dir_under(base, L"\\brasa\\run", out, size);
}

bool plat_cache_dir(char *out, size_t size) {
    const wchar_t *own = _wgetenv(L"BRASA_CACHE_DIR");
    if (own && own[0])
        return dir_under(own, L"", out, size);
    return dir_under(_wgetenv(L"LOCALAPPDATA"), L"\\brasa", out, size);
}

brasa_status plat_write_file_atomic(const char *path, const void *data, size_t len, brasa_error *err) {
    char tmp[4096];
    const int n = snprintf(tmp, sizeof tmp, "%s.tmp-%lu", path, (unsigned long)GetCurrentProcessId());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: path too long", path);
    wchar_t *wtmp = utf8_to_wide(tmp), *wpath = utf8_to_wide(path);
    brasa_status st = BRASA_OK;
    if (!wtmp || !wpath) {
        st = err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: the path is not valid UTF-8", path);
        goto out;
    }
    HANDLE f = CreateFileW(wtmp, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    if (f == INVALID_HANDLE_VALUE) {
        st = err_set(err, BRASA_ERR_IO, "cannot write %s (error %lu)", tmp, (unsigned long)GetLastError());
        goto out;
    }
    const uint8_t *p = data;
    size_t done = 0;
    while (done < len) {
        const DWORD chunk = len - done > (1u << 30) ? (1u << 30) : (DWORD)(len - done);
        DWORD put = 0;
        if (!WriteFile(f, p + done, chunk, &put, NULL) || put == 0)
            break;
        done += put;
    }
    /* on the disk before the rename makes it the file */
    const bool ok = done == len && FlushFileBuffers(f);
    CloseHandle(f);
    if (!ok || !MoveFileExW(wtmp, wpath, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
        st = err_set(err, BRASA_ERR_IO, "cannot write %s (error %lu)", path, (unsigned long)GetLastError());
        DeleteFileW(wtmp);
    }
out:
    free(wtmp);
    free(wpath);
    return st;
}

bool plat_env(const char *name, char *out, size_t size) {
    wchar_t *wname = utf8_to_wide(name);
    const wchar_t *v = wname ? _wgetenv(wname) : NULL;
    free(wname);
    if (!v || !v[0] || size > INT_MAX)
        return false;
    return WideCharToMultiByte(CP_UTF8, 0, v, -1, out, (int)size, NULL, NULL) > 0;
}

char plat_path_separator(void) {
    return '\\';
}

bool plat_make_dirs(const char *path) {
    wchar_t *w = utf8_to_wide(path);
    const bool ok = w && w[0] && make_dirs_wide(w);
    free(w);
    return ok;
}

/* FILETIME (100 ns steps since 1601) to seconds since 1970 */
static int64_t unix_seconds(FILETIME t) {
    const uint64_t ticks = (uint64_t)t.dwHighDateTime << 32 | t.dwLowDateTime;
    return (int64_t)(ticks / 10000000u) - INT64_C(11644473600);
}

void plat_file_info_of(const char *path, plat_file_info *info) {
    memset(info, 0, sizeof *info);
    wchar_t *w = utf8_to_wide(path);
    WIN32_FILE_ATTRIBUTE_DATA a;
    if (w && GetFileAttributesExW(w, GetFileExInfoStandard, &a)) {
        info->exists = true;
        info->is_dir = (a.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
        info->size = (uint64_t)a.nFileSizeHigh << 32 | a.nFileSizeLow;
        info->modified = unix_seconds(a.ftLastWriteTime);
    }
    free(w);
}

bool plat_list_dir(const char *path, bool (*fn)(const char *name, bool is_dir, void *user), void *user) {
    char pattern[4096];
    const int n = snprintf(pattern, sizeof pattern, "%s\\*", path);
    wchar_t *w = n > 0 && (size_t)n < sizeof pattern ? utf8_to_wide(pattern) : NULL;
    WIN32_FIND_DATAW found;
    HANDLE h = w ? FindFirstFileW(w, &found) : INVALID_HANDLE_VALUE;
    free(w);
    if (h == INVALID_HANDLE_VALUE)
        return false;
    do {
        if (wcscmp(found.cFileName, L".") == 0 || wcscmp(found.cFileName, L"..") == 0)
            continue;
        char *name = wide_to_utf8(found.cFileName);
        const bool go_on = !name || fn(name, (found.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0, user);
        free(name);
        if (!go_on)
            break;
    } while (FindNextFileW(h, &found));
    FindClose(h);
    return true;
}

bool plat_remove_file(const char *path) {
    wchar_t *w = utf8_to_wide(path);
    const bool ok = w && DeleteFileW(w);
    free(w);
    return ok;
}

bool plat_remove_dir(const char *path) {
    wchar_t *w = utf8_to_wide(path);
    const bool ok = w && RemoveDirectoryW(w);
    free(w);
    return ok;
}

bool plat_rename(const char *from, const char *to) {
    wchar_t *wfrom = utf8_to_wide(from), *wto = utf8_to_wide(to);
    const bool ok = wfrom && wto && MoveFileExW(wfrom, wto, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH);
    free(wfrom);
    free(wto);
    return ok;
}

bool plat_file_sync(FILE *f) {
    return fflush(f) == 0 && FlushFileBuffers((HANDLE)_get_osfhandle(_fileno(f)));
}

struct plat_lock { HANDLE file; };

static long read_pid(HANDLE f) {
    char text[32] = { 0 };
    DWORD got = 0;
    OVERLAPPED at = { 0 };
    if (!ReadFile(f, text, sizeof text - 1, &got, &at))
        return 0;
    return strtol(text, NULL, 10);
}

brasa_status plat_lock_acquire(const char *path, plat_lock **out, long *holder_pid, long *stale_pid, brasa_error *err) {
    *out = NULL;
    *holder_pid = *stale_pid = 0;
    /* share-none while held: a second opener fails, and the handle closes with the process */
    wchar_t *wpath = utf8_to_wide(path);
    if (!wpath)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: the path is not valid UTF-8", path);
    HANDLE f = CreateFileW(wpath, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ, NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL,
                           NULL);
    if (f == INVALID_HANDLE_VALUE) {
        HANDLE r = CreateFileW(wpath, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING, 0, NULL);
        free(wpath);
        if (r != INVALID_HANDLE_VALUE) {
            *holder_pid = read_pid(r);
            CloseHandle(r);
        }
        return err_set(err, BRASA_ERR_IO, "%s is held by process %ld", path, *holder_pid);
    }
    free(wpath);
    *stale_pid = read_pid(f);
    char text[32];
    const int n = snprintf(text, sizeof text, "%ld\r\n", (long)GetCurrentProcessId());
    DWORD put = 0;
    SetFilePointer(f, 0, NULL, FILE_BEGIN);
    SetEndOfFile(f);
    if (!WriteFile(f, text, (DWORD)n, &put, NULL) || put != (DWORD)n) {
        CloseHandle(f);
        return err_set(err, BRASA_ERR_IO, "cannot write the lock file %s", path);
    }
    plat_lock *l = malloc(sizeof *l);
    if (!l) {
        CloseHandle(f);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
    }
    l->file = f;
    *out = l;
    return BRASA_OK;
}

void plat_lock_release(plat_lock *l) {
    if (!l)
        return;
    SetFilePointer(l->file, 0, NULL, FILE_BEGIN);
    SetEndOfFile(l->file);
    CloseHandle(l->file);
    free(l);
}

long plat_pid(void) {
    return (long)GetCurrentProcessId();
}

bool plat_socket_peer_closed(int fd) {
    const SOCKET s = (SOCKET)fd;
    fd_set set;
    FD_ZERO(&set);
    FD_SET(s, &set);
    struct timeval tv = { 0, 0 };
    if (select(0, &set, NULL, NULL, &tv) != 1)
        return false;
    char c;
    return recv(s, &c, 1, MSG_PEEK) <= 0;
}

void plat_socket_close(int fd) {
    closesocket((SOCKET)fd);
}

void plat_sleep(double seconds) {
    Sleep(seconds > 0 ? (DWORD)(seconds * 1000.0) : 0);
}

double plat_time_seconds(void) {
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
}

void plat_pages_release(const void *p, size_t n) {
    /* unlocking pages that are not locked takes them out of the working set (documented for
     * VirtualUnlock), without discarding them: the view of the file reads them back when touched */
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    const uintptr_t page = si.dwPageSize ? si.dwPageSize : 4096;
    if (!p)
        return;
    const uintptr_t lo = ((uintptr_t)p + page - 1) / page * page, hi = ((uintptr_t)p + n) / page * page;
    if (hi > lo)
        (void)VirtualUnlock((void *)lo, hi - lo);
}

uint64_t plat_peak_rss_bytes(void) {
    PROCESS_MEMORY_COUNTERS pmc;
    if (!K32GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof pmc))
        return 0;
    return (uint64_t)pmc.PeakWorkingSetSize;
}

int32_t plat_atomic_load(volatile int32_t *p) { return (int32_t)InterlockedCompareExchange((volatile LONG *)p, 0, 0); }
void plat_atomic_store(volatile int32_t *p, int32_t v) { InterlockedExchange((volatile LONG *)p, (LONG)v); }
int32_t plat_atomic_add(volatile int32_t *p, int32_t d) { return (int32_t)InterlockedAdd((volatile LONG *)p, (LONG)d); }
void plat_cpu_relax(void) { YieldProcessor(); }
void plat_yield(void) { SwitchToThread(); }

int plat_physical_cores(void) {
    DWORD bytes = 0;
    GetLogicalProcessorInformation(NULL, &bytes);
    SYSTEM_LOGICAL_PROCESSOR_INFORMATION *info = bytes ? malloc(bytes) : NULL;
    int cores = 0;
    if (info && GetLogicalProcessorInformation(info, &bytes)) {
        for (DWORD i = 0; i < bytes / sizeof *info; i++)
            cores += info[i].Relationship == RelationProcessorCore;
    }
    free(info);
    return cores > 0 ? cores : plat_cpu_count();
}

bool plat_arm_dotprod(void) {
#if defined(_M_ARM64) || defined(__aarch64__)
    return IsProcessorFeaturePresent(43) != 0; /* PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE */
#else
    return false;
#endif
}

struct plat_lib {
    HMODULE handle;
};

plat_lib *plat_lib_open(const char *name, char *why, size_t why_size) {
    wchar_t wname[1024];
    if (!MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, name, -1, wname, 1024)) {
        snprintf(why, why_size, "invalid library name");
        return NULL;
    }
    HMODULE h = LoadLibraryExW(wname, NULL, 0);
    if (!h) {
        snprintf(why, why_size, "LoadLibrary failed (error %lu)", (unsigned long)GetLastError());
        return NULL;
    }
    plat_lib *lib = malloc(sizeof *lib);
    if (!lib) {
        FreeLibrary(h);
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    lib->handle = h;
    return lib;
}

void *plat_lib_symbol(plat_lib *lib, const char *name) {
    if (!lib)
        return NULL;
    FARPROC p = GetProcAddress(lib->handle, name);
    void *out;
    memcpy(&out, &p, sizeof out); /* function to object pointer, as GetProcAddress users must */
    return out;
}

void plat_lib_close(plat_lib *lib) {
    if (!lib)
        return;
    FreeLibrary(lib->handle);
    free(lib);
}

void plat_memory(uint64_t *total, uint64_t *available) {
    MEMORYSTATUSEX ms;
    ms.dwLength = sizeof ms;
    if (GlobalMemoryStatusEx(&ms)) {
        *total = (uint64_t)ms.ullTotalPhys;
        *available = (uint64_t)ms.ullAvailPhys;
    } else {
        *total = *available = 0;
    }
}

void plat_os_name(char *out, size_t size) {
    /* GetVersionEx lies to unmanifested programs; RtlGetVersion from ntdll tells the truth */
    typedef LONG(WINAPI * rtl_get_version)(OSVERSIONINFOW *);
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    FARPROC p = ntdll ? GetProcAddress(ntdll, "RtlGetVersion") : NULL;
    OSVERSIONINFOW v;
    memset(&v, 0, sizeof v);
    v.dwOSVersionInfoSize = sizeof v;
    rtl_get_version get = NULL;
    memcpy(&get, &p, sizeof get);
    if (get && get(&v) == 0)
        snprintf(out, size, "Windows %lu.%lu.%lu", (unsigned long)v.dwMajorVersion, (unsigned long)v.dwMinorVersion,
                 (unsigned long)v.dwBuildNumber);
    else
        snprintf(out, size, "Windows");
}

plat_access plat_path_access(const char *path) {
    wchar_t wpath[1024];
    if (!MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, wpath, 1024))
        return PLAT_ACCESS_MISSING;
    DWORD attr = GetFileAttributesW(wpath);
    if (attr == INVALID_FILE_ATTRIBUTES)
        return PLAT_ACCESS_MISSING;
    return (attr & FILE_ATTRIBUTE_READONLY) ? PLAT_ACCESS_DENIED : PLAT_ACCESS_OK;
}

const char *plat_module_suffix(void) { return ".dll"; }

bool plat_exe_dir(char *out, size_t size) {
    wchar_t wpath[4096];
    const DWORD n = GetModuleFileNameW(NULL, wpath, 4096);
    if (n == 0 || n >= 4096)
        return false;
    char *path = wide_to_utf8(wpath);
    if (!path)
        return false;
    char *sep = strrchr(path, '\\');
    const bool ok = sep && (size_t)(sep - path) < size;
    if (ok) {
        *sep = '\0';
        snprintf(out, size, "%s", path);
    }
    free(path);
    return ok;
}
