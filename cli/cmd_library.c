/* cmd_library.c: the model library on the command line: `brasa pull`, `brasa list`, `brasa rm`, and
 * cli_model_path(), through which every command takes a model name (OWNER/REPO[:QUANT]) where it
 * takes a file. A pull lists the repo on the hub, picks the model (src/tools/library.c), records its
 * manifest, downloads each file (src/tools/hub.h), checks its sha256 and renames it into place. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "core/buf.h"
#include "core/sha256.h"
#include "platform/platform.h"
#include "tools/hub.h"
#include "tools/library.h"

#define DEFAULT_ENDPOINT "https://huggingface.co"
#define LISTING_MAX_BYTES (16u << 20)

static const char pull_usage[] =
    "Usage: brasa pull OWNER/REPO[:QUANT] [--offline] [--json]\n"
    "\n"
    "Downloads a GGUF model from the Hugging Face hub into the model library and prints its path.\n"
    "QUANT picks the quantization (Q4_K_M, Q8_0, ..., any case); without it, Q4_K_M when the repo has\n"
    "it, else the repo's only model. Each file's sha256 is checked against the one the hub publishes;\n"
    "an interrupted pull resumes where it stopped; a split model comes whole (every part).\n"
    "Every command takes such a name where it takes a model file, and pulls it first when missing.\n"
    "\n"
    "  --offline   use only what the library holds (also HF_HUB_OFFLINE=1 or BRASA_OFFLINE=1)\n"
    "  --json      {\"name\", \"quant\", \"path\", \"size\", \"files\": [...], \"downloaded\", ...}\n"
    "\n"
    "Environment: HF_TOKEN (private and gated repos), HF_ENDPOINT (another hub or a mirror, default\n"
    "https://huggingface.co), BRASA_MODELS (the library's folder; default: the cache folder's\n"
    "models, ~/.cache/brasa/models or %LOCALAPPDATA%\\brasa\\models).\n";

static const char list_usage[] =
    "Usage: brasa list [--json]\n"
    "\n"
    "Lists the models of the library: name, quant, size, when it was pulled and its file. A pull that\n"
    "did not finish shows how much is there; `brasa pull NAME` resumes it, `brasa rm NAME` removes it.\n"
    "\n"
    "  --json   [{\"name\", \"quant\", \"size\", \"path\", \"modified\", \"complete\", \"files\": [...]}, ...]\n";

static const char rm_usage[] =
    "Usage: brasa rm OWNER/REPO[:QUANT]\n"
    "\n"
    "Removes a model of the library: its files (a pull's partial ones too) and the folders left empty.\n"
    "Without QUANT, the model the name means (the one `brasa pull OWNER/REPO` gave, or the repo's only\n"
    "one in the library).\n";

/* ---- where the hub is, and whether to go there -------------------------------------------------- */

/* Whether an environment variable says yes as huggingface_hub reads it: 1, true, yes, on. */
static bool env_true(const char *name) {
    char v[16];
    if (!plat_env(name, v, sizeof v))
        return false;
    for (char *p = v; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "on") == 0;
}

static const char *offline_reason(bool flag) {
    return flag ? "--offline" : env_true("HF_HUB_OFFLINE") ? "HF_HUB_OFFLINE" : env_true("BRASA_OFFLINE") ? "BRASA_OFFLINE" : NULL;
}

/* $HF_ENDPOINT (an http:// or https:// address, trailing slashes dropped) or the hub. */
static bool hub_endpoint(char *out, size_t size) {
    if (!plat_env("HF_ENDPOINT", out, size)) {
        snprintf(out, size, "%s", DEFAULT_ENDPOINT);
        return true;
    }
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '/')
        out[--n] = '\0';
    if (strncmp(out, "http://", 7) != 0 && strncmp(out, "https://", 8) != 0) {
        cli_fail("HF_ENDPOINT must be an http:// or https:// address, not '%s'", out);
        return false;
    }
    for (const char *p = out; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f) {
            cli_fail("HF_ENDPOINT holds a space or a control character");
            return false;
        }
    return true;
}

/* A path of the repo in a URL: each byte outside RFC 3986's unreserved set (and '/') as %XX. */
static bool url_path(const char *path, char *out, size_t size) {
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        const bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                           *p == '-' || *p == '_' || *p == '.' || *p == '~' || *p == '/';
        if (k + 4 >= size)
            return false;
        if (plain) {
            out[k++] = (char)*p;
        } else {
            out[k++] = '%';
            out[k++] = hex[*p >> 4];
            out[k++] = hex[*p & 15];
        }
    }
    out[k] = '\0';
    return true;
}

/* ---- progress ---------------------------------------------------------------------------------- */

typedef struct pull_view {
    bool terminal;        /* a progress bar on stderr */
    const char *file;     /* the file being downloaded */
    size_t index, count;  /* which of the model's files */
    double started;
    uint64_t first_seen;  /* bytes the file had when this download started (a resume) */
    bool seen;
} pull_view;

static void format_bytes(uint64_t bytes, char *out, size_t size) {
    const double b = (double)bytes;
    if (b >= 1e9)
        snprintf(out, size, "%.2f GB", b / 1e9);
    else if (b >= 1e6)
        snprintf(out, size, "%.1f MB", b / 1e6);
    else if (b >= 1e3)
        snprintf(out, size, "%.1f kB", b / 1e3);
    else
        snprintf(out, size, "%" PRIu64 " B", bytes);
}

static const char *base_of(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void on_progress(uint64_t done, uint64_t total, void *user) {
    pull_view *v = user;
    const double now = plat_time_seconds();
    if (!v->seen) {
        v->seen = true;
        v->first_seen = done;
        v->started = now;
    }
    if (!v->terminal)
        return;
    const double elapsed = now - v->started;
    const double rate = elapsed > 0.2 ? (double)(done - v->first_seen) / elapsed : 0.0;
    char have[32], all[32], eta[32] = "";
    format_bytes(done, have, sizeof have);
    format_bytes(total, all, sizeof all);
    if (rate > 0 && total > done) {
        const uint64_t s = (uint64_t)((double)(total - done) / rate);
        snprintf(eta, sizeof eta, "  ETA %" PRIu64 ":%02" PRIu64 ":%02" PRIu64, s / 3600, s / 60 % 60, s % 60);
    }
    const int percent = total ? (int)((double)done * 100.0 / (double)total) : 100;
    char count[32] = "";
    if (v->count > 1)
        snprintf(count, sizeof count, " (%zu/%zu)", v->index + 1, v->count);
    /* the file's name cut to keep the line within 79 columns, padded so it covers the last one */
    char line[160];
    snprintf(line, sizeof line, "%.28s%s %3d%%  %s / %s  %.1f MB/s%s", base_of(v->file), count, percent, have, all,
             rate / 1e6, eta);
    fprintf(stderr, "\r%-79.79s", line);
    fflush(stderr);
}

/* Blanks the progress line (plain spaces: no terminal escape needed). */
static void clear_line(void) {
    fprintf(stderr, "\r%79s\r", "");
}

static void on_note(const char *text, void *user) {
    pull_view *v = user;
    if (v->terminal)
        clear_line();
    fprintf(stderr, "brasa: %s\n", text);
}

/* ---- pulling ----------------------------------------------------------------------------------- */

typedef struct pull_result {
    char path[LIBRARY_PATH_MAX]; /* the first file */
    library_name name;           /* as stored: the hub's spelling, the model's quant */
    library_model model;
    uint64_t downloaded;
    double seconds;
    bool up_to_date;
} pull_result;

/* The repo's entries in the library; NULL after printing why. */
static library_entry *scan_repo(const char *models_dir, const library_name *n, size_t *count) {
    library_entry *entries = NULL;
    brasa_error err;
    if (library_scan(models_dir, n, &entries, count, &err) != BRASA_OK) {
        cli_fail("%s", err.message);
        return NULL;
    }
    if (!entries) { /* none: an empty array all the same, so that NULL means failure */
        *count = 0;
        entries = calloc(1, sizeof *entries);
    }
    return entries;
}

/* How an HTTP status from the hub reads, for a repo or a file. */
static int hub_refused(const char *what, long status, const char *url) {
    if (status == 401)
        return cli_fail("%s: the hub refused it (401): the repo does not exist, or it is private or gated: check "
                        "the name, or set HF_TOKEN to a token with access", what);
    if (status == 403)
        return cli_fail("%s: forbidden (403): HF_TOKEN has no access to it (a gated model: accept its terms on its "
                        "page first)", what);
    if (status == 404)
        return cli_fail("%s: not found on the hub (404 from %s)", what, url);
    return cli_fail("%s: the hub answered HTTP %ld (%s)", what, status, url);
}

/* Whether two names are the same to the hub, which ignores case (they are ASCII). */
static bool same_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        const char x = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
        const char y = *b >= 'A' && *b <= 'Z' ? (char)(*b - 'A' + 'a') : *b;
        if (x != y)
            return false;
    }
    return *a == *b;
}

/* The manifest's entry for a model (its first file), if the library has one. */
static const library_entry *entry_of(const library_entry *entries, size_t n, const library_model *m) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(entries[i].model.parts[0].path, m->parts[0].path) == 0)
            return &entries[i];
    return NULL;
}

/* Whether the library's copy of part i is the hub's: on disk whole, with the sha256 published now. */
static bool part_current(const library_entry *old, const library_model *m, size_t i, const char *final_path) {
    if (!old || i >= old->model.n_parts || strcmp(old->model.parts[i].path, m->parts[i].path) != 0 ||
        strcmp(old->model.parts[i].sha256, m->parts[i].sha256) != 0 || old->model.parts[i].size != m->parts[i].size)
        return false;
    plat_file_info info;
    plat_file_info_of(final_path, &info);
    return info.exists && !info.is_dir && info.size == m->parts[i].size;
}

/* Downloads one part into place; CLI_OK or after printing why. */
static int download_part(const hub_client *c, const char *endpoint, const library_name *n, const char *revision,
                         const library_file *f, const char *final_path, bool stale_part, pull_view *view,
                         uint64_t *downloaded) {
    char part[LIBRARY_PATH_MAX + 8], escaped[3 * LIBRARY_FILE_PATH_MAX + 1], url[LIBRARY_PATH_MAX * 2];
    snprintf(part, sizeof part, "%s.part", final_path);
    if (stale_part) /* a partial download of the file as it was before the hub changed it */
        plat_remove_file(part);
    if (!url_path(f->path, escaped, sizeof escaped) ||
        snprintf(url, sizeof url, "%s/%s/%s/resolve/%s/%s", endpoint, n->owner, n->repo, revision, escaped) >= (int)sizeof url)
        return cli_fail("%s: the address is too long", f->path);
    plat_file_info before;
    plat_file_info_of(part, &before);
    view->file = f->path;
    view->seen = false;
    uint8_t digest[SHA256_BYTES];
    long status = 0;
    brasa_error err;
    const brasa_status st = hub_download(c, url, part, f->size, digest, &status, &err);
    if (view->terminal)
        clear_line();
    plat_file_info after;
    plat_file_info_of(part, &after);
    /* (a server that ignored the range sent the whole file again) */
    *downloaded += after.size >= before.size ? after.size - before.size : after.size;
    if (st != BRASA_OK) {
        if (status)
            return hub_refused(f->path, status, url);
        return cli_fail("%s", err.message);
    }
    char hex[SHA256_HEX_BYTES];
    sha256_to_hex(digest, hex);
    if (f->sha256[0] && strcmp(hex, f->sha256) != 0) {
        plat_remove_file(part);
        return cli_fail("%s: the download's sha256 is %s, but the hub publishes %s: the file was removed; run the "
                        "pull again (if it fails again, the hub or a proxy serves another file)", f->path, hex, f->sha256);
    }
    if (!f->sha256[0])
        fprintf(stderr, "brasa: warning: the hub publishes no sha256 for %s (not stored with Git LFS): only its size "
                "was checked\n", f->path);
    if (!plat_rename(part, final_path))
        return cli_fail("cannot rename %s to %s", part, final_path);
    if (view->terminal) {
        char bytes[32];
        format_bytes(f->size, bytes, sizeof bytes);
        fprintf(stderr, "%s  %s  sha256 %s\n", f->path, bytes, f->sha256[0] ? "ok" : "not published");
    }
    return CLI_OK;
}

/* When a failed pull left none of the model's bytes, its manifest goes too (and the folders). */
static void forget_if_empty(const char *models_dir, const library_name *n, const library_model *m, const char *repo_dir) {
    size_t count = 0;
    library_entry *entries = scan_repo(models_dir, n, &count);
    const library_entry *e = entries ? entry_of(entries, count, m) : NULL;
    if (e && e->bytes_present == 0 && library_remove(e, NULL) == BRASA_OK)
        library_tidy_repo_dir(repo_dir);
    library_entries_free(entries, count);
}

/* Lists the repo on the hub, picks the model, downloads what the library lacks (every part of a split
 * model: brasa opens it from the first). */
static int pull_from_hub(const char *models_dir, const library_name *asked, bool show_progress,
                         const char *announce, pull_result *out) {
    char why[512], endpoint[1024], token[4096], url[2048], shown[LIBRARY_NAME_TEXT_MAX + 1];
    library_name_format(asked, shown, sizeof shown);
    if (!hub_available(why, sizeof why))
        return cli_fail("%s: %s", shown, why);
    if (!hub_endpoint(endpoint, sizeof endpoint))
        return CLI_FAILED;
    if (announce)
        fprintf(stderr, "brasa: %s is no file and not in the library: pulling it from %s\n", announce, endpoint);
    hub_client c = hub_client_defaults();
    c.token = plat_env("HF_TOKEN", token, sizeof token) ? token : NULL;
    pull_view view = { show_progress && plat_is_terminal(2), NULL, 0, 0, 0, 0, false };
    c.progress = on_progress;
    c.note = on_note;
    c.user = &view;

    snprintf(url, sizeof url, "%s/api/models/%s/%s?blobs=true", endpoint, asked->owner, asked->repo);
    buf body = { 0 };
    long status = 0;
    brasa_error err;
    if (hub_get(&c, url, LISTING_MAX_BYTES, &body, &status, &err) != BRASA_OK) {
        buf_free(&body);
        return cli_fail("%s: %s (brasa --offline uses the library alone)", shown, err.message);
    }
    if (status != 200) {
        buf_free(&body);
        char repo[2 * LIBRARY_PART_MAX + 2];
        snprintf(repo, sizeof repo, "%s/%s", asked->owner, asked->repo);
        return hub_refused(repo, status, url);
    }
    library_listing listing;
    brasa_status st = library_listing_parse(body.data ? body.data : "", body.len, &listing, &err);
    buf_free(&body);
    if (st != BRASA_OK)
        return cli_fail("%s: %s", shown, err.message);
    size_t chosen;
    if (library_pick(listing.models, listing.n_models, asked->quant, &chosen, &err) != BRASA_OK) {
        library_listing_free(&listing);
        return cli_fail("%s: %s", shown, err.message);
    }
    library_model *m = &listing.models[chosen];
    /* stored as the hub spells the repo, under the quant the model's file names */
    library_name name = *asked;
    if (listing.id.owner[0] && same_nocase(listing.id.owner, asked->owner) && same_nocase(listing.id.repo, asked->repo)) {
        memcpy(name.owner, listing.id.owner, sizeof name.owner);
        memcpy(name.repo, listing.id.repo, sizeof name.repo);
    }
    memcpy(name.quant, m->quant, sizeof name.quant);
    const bool is_default = library_is_default(listing.models, listing.n_models, chosen);
    const char *revision = listing.commit[0] ? listing.commit : "main";

    char repo_dir[LIBRARY_PATH_MAX] = "", lock_path[LIBRARY_PATH_MAX + 8];
    plat_lock *lock = NULL;
    long holder = 0, stale = 0;
    int rc = CLI_OK;
    size_t n_old = 0;
    library_entry *old_entries = NULL;
    if (library_repo_dir(models_dir, &name, true, repo_dir, sizeof repo_dir, &err) != BRASA_OK) {
        rc = cli_fail("%s", err.message);
        goto done;
    }
    snprintf(lock_path, sizeof lock_path, "%s%c.lock", repo_dir, plat_path_separator());
    if (plat_lock_acquire(lock_path, &lock, &holder, &stale, &err) != BRASA_OK) {
        rc = holder ? cli_fail("%s: another brasa (process %ld) is pulling into %s: wait for it", shown, holder, repo_dir)
                    : cli_fail("%s", err.message);
        goto done;
    }
    if (!(old_entries = scan_repo(models_dir, &name, &n_old))) {
        rc = CLI_FAILED;
        goto done;
    }
    const library_entry *old = entry_of(old_entries, n_old, m);
    /* the manifest first, so that an interrupted pull shows in `brasa list` and `brasa rm` removes it */
    if (library_write_manifest(repo_dir, &name, m, listing.commit, is_default || (old && old->is_default), &err) !=
        BRASA_OK) {
        rc = cli_fail("%s", err.message);
        goto done;
    }
    const double t0 = plat_time_seconds();
    bool fetched_any = false;
    view.count = m->n_parts;
    for (size_t i = 0; i < m->n_parts && rc == CLI_OK; i++) {
        char final_path[LIBRARY_PATH_MAX];
        if (library_part_path(repo_dir, &m->parts[i], true, final_path, sizeof final_path, &err) != BRASA_OK) {
            rc = cli_fail("%s", err.message);
            break;
        }
        if (i == 0)
            snprintf(out->path, sizeof out->path, "%s", final_path);
        if (part_current(old, m, i, final_path))
            continue;
        const bool stale_part = old && i < old->model.n_parts && strcmp(old->model.parts[i].sha256, m->parts[i].sha256) != 0;
        view.index = i;
        fetched_any = true;
        rc = download_part(&c, endpoint, &name, revision, &m->parts[i], final_path, stale_part, &view, &out->downloaded);
    }
    out->seconds = plat_time_seconds() - t0;
    out->up_to_date = !fetched_any;
    out->name = name;
    if (rc == CLI_OK && !library_model_copy(m, &out->model))
        rc = cli_fail("out of memory");
    if (rc != CLI_OK)
        forget_if_empty(models_dir, &name, m, repo_dir);
    /* one default per repo: what the name without a quant means is what the hub says now */
    for (size_t i = 0; rc == CLI_OK && is_default && i < n_old; i++)
        if (old_entries[i].is_default && &old_entries[i] != old)
            library_write_manifest(old_entries[i].repo_dir, &old_entries[i].name, &old_entries[i].model,
                                   old_entries[i].commit, false, NULL);
done:
    library_entries_free(old_entries, n_old);
    plat_lock_release(lock);
    if (rc != CLI_OK && repo_dir[0])
        library_tidy_repo_dir(repo_dir);
    library_listing_free(&listing);
    return rc;
}

/* The library's copy of a name, when complete; otherwise (offline) a message. found: the library has
 * it whole, *out filled. */
static int from_library(const char *models_dir, const library_name *n, const char *offline, bool *found,
                        pull_result *out) {
    char shown[LIBRARY_NAME_TEXT_MAX + 1];
    library_name_format(n, shown, sizeof shown);
    *found = false;
    size_t count = 0, chosen = 0;
    library_entry *entries = scan_repo(models_dir, n, &count);
    if (!entries)
        return CLI_FAILED;
    bool have = false;
    brasa_error err;
    int rc = CLI_OK;
    /* online, a name without a quant means what the hub's default is, which only a model pulled as the
     * default is known to be; offline, the library's only model of the repo will do */
    if (library_find(entries, count, n, !offline, &chosen, &have, &err) != BRASA_OK) {
        rc = cli_fail("%s: %s", shown, err.message);
    } else if (have && entries[chosen].complete) {
        const library_entry *e = &entries[chosen];
        snprintf(out->path, sizeof out->path, "%s", e->first_path);
        out->name = e->name;
        out->up_to_date = true;
        if (!library_model_copy(&e->model, &out->model))
            rc = cli_fail("out of memory");
        *found = rc == CLI_OK;
    } else if (offline && have) {
        char present[32], size[32];
        format_bytes(entries[chosen].bytes_present, present, sizeof present);
        format_bytes(entries[chosen].model.size, size, sizeof size);
        rc = cli_fail("%s: only %s of %s was downloaded, and brasa is offline (%s): run `brasa pull %s` when online "
                      "to finish it", shown, present, size, offline, shown);
    } else if (offline) {
        rc = cli_fail("%s: not in the library (%s), and brasa is offline (%s): run `brasa pull %s` when online "
                      "(`brasa list` shows what the library holds)", shown, models_dir, offline, shown);
    }
    library_entries_free(entries, count);
    return rc;
}

/* Whether a path starts at a root (/x, \\x, C:\x, C:/x) rather than in the current folder. */
static bool is_absolute(const char *p) {
    return p[0] == '/' || p[0] == '\\' || (p[0] && p[1] == ':' && (p[2] == '\\' || p[2] == '/'));
}

const char *cli_model_path(const char *arg, char *out, size_t size) {
    /* --model-dir: a relative path is this machine's folder's file */
    const char *dir = cli_model_dir();
    if (dir[0] && !is_absolute(arg)) {
        plat_file_info in_dir;
        if ((size_t)snprintf(out, size, "%s/%s", dir, arg) >= size) {
            cli_fail("%s/%s: the path is too long", dir, arg);
            return NULL;
        }
        plat_file_info_of(out, &in_dir);
        if (in_dir.exists && !in_dir.is_dir)
            return out;
        library_name name;
        if (library_looks_like_path(arg) || library_name_parse(arg, &name, NULL) != BRASA_OK) {
            cli_fail("%s: not in %s (--model-dir)", arg, dir);
            return NULL;
        }
    }
    plat_file_info info;
    plat_file_info_of(arg, &info);
    library_name n;
    /* a file that is there wins; what is no name goes to the opener as it is, to fail there as a path */
    if ((info.exists && !info.is_dir) || library_looks_like_path(arg) || library_name_parse(arg, &n, NULL) != BRASA_OK)
        return arg;
    char models_dir[LIBRARY_PATH_MAX];
    if (!library_models_dir(models_dir, sizeof models_dir)) {
        cli_fail("%s: no file of that name, and no folder for the model library (set BRASA_MODELS)", arg);
        return NULL;
    }
    const char *offline = offline_reason(false);
    pull_result r;
    memset(&r, 0, sizeof r);
    bool found = false;
    int rc = from_library(models_dir, &n, offline, &found, &r);
    if (rc == CLI_OK && !found) {
        rc = pull_from_hub(models_dir, &n, true, arg, &r);
        if (rc == CLI_OK && !plat_is_terminal(2)) {
            char bytes[32];
            format_bytes(r.model.size, bytes, sizeof bytes);
            fprintf(stderr, "brasa: pulled %s (%s, sha256 checked) to %s\n", arg, bytes, r.path);
        }
    }
    library_model_free(&r.model);
    if (rc != CLI_OK)
        return NULL;
    if (strlen(r.path) >= size) {
        cli_fail("%s: the path is too long", r.path);
        return NULL;
    }
    memcpy(out, r.path, strlen(r.path) + 1);
    return out;
}

/* ---- the commands ------------------------------------------------------------------------------ */

static void json_files(const library_model *m, const char *repo_dir) {
    printf("[");
    for (size_t i = 0; i < m->n_parts; i++) {
        char path[LIBRARY_PATH_MAX];
        printf("%s{\"file\": ", i ? ", " : "");
        json_cstr(stdout, m->parts[i].path);
        if (repo_dir && library_part_path(repo_dir, &m->parts[i], false, path, sizeof path, NULL) == BRASA_OK) {
            printf(", \"path\": ");
            json_cstr(stdout, path);
        }
        printf(", \"size\": %" PRIu64 ", \"sha256\": ", m->parts[i].size);
        json_cstr(stdout, m->parts[i].sha256);
        printf("}");
    }
    printf("]");
}

int cmd_pull(int argc, char **argv) {
    const char *name_text = NULL;
    bool json = false, offline_flag = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(pull_usage, stdout);
            return CLI_OK;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--offline") == 0) {
            offline_flag = true;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("pull", pull_usage, "unknown option '%s'", a);
        } else if (name_text) {
            return cli_usage_error("pull", pull_usage, "one model at a time ('%s' and '%s')", name_text, a);
        } else {
            name_text = a;
        }
    }
    if (!name_text)
        return cli_usage_error("pull", pull_usage, "missing OWNER/REPO[:QUANT]");
    library_name n;
    brasa_error err;
    if (library_name_parse(name_text, &n, &err) != BRASA_OK)
        return cli_usage_error("pull", pull_usage, "%s", err.message);
    char models_dir[LIBRARY_PATH_MAX];
    if (!library_models_dir(models_dir, sizeof models_dir))
        return cli_fail("no folder for the model library: set BRASA_MODELS to one");
    const char *offline = offline_reason(offline_flag);
    pull_result r;
    memset(&r, 0, sizeof r);
    bool found = false;
    int rc = offline ? from_library(models_dir, &n, offline, &found, &r) : pull_from_hub(models_dir, &n, !json, NULL, &r);
    if (rc != CLI_OK)
        return rc;
    char shown[LIBRARY_NAME_TEXT_MAX + 1], bytes[32];
    library_name_format(&r.name, shown, sizeof shown);
    format_bytes(r.model.size, bytes, sizeof bytes);
    if (json) {
        printf("{\"name\": ");
        json_cstr(stdout, shown);
        printf(", \"quant\": ");
        json_cstr(stdout, r.model.quant);
        printf(", \"path\": ");
        json_cstr(stdout, r.path);
        printf(", \"size\": %" PRIu64 ", \"files\": ", r.model.size);
        json_files(&r.model, NULL);
        printf(", \"downloaded\": %" PRIu64 ", \"seconds\": %.3f, \"up_to_date\": %s, \"offline\": %s}\n", r.downloaded,
               r.seconds, r.up_to_date ? "true" : "false", offline ? "true" : "false");
    } else {
        printf("%s\n", r.path);
    }
    if (offline)
        fprintf(stderr, "brasa: %s is in the library (offline: not checked against the hub)\n", shown);
    else if (r.up_to_date)
        fprintf(stderr, "brasa: %s is up to date (%s)\n", shown, bytes);
    else {
        char got[32];
        format_bytes(r.downloaded, got, sizeof got);
        fprintf(stderr, "brasa: pulled %s: %s in %zu file%s, %s downloaded in %.1f s (%.1f MB/s), sha256 checked\n", shown,
                bytes, r.model.n_parts, r.model.n_parts == 1 ? "" : "s", got, r.seconds,
                r.seconds > 0 ? (double)r.downloaded / 1e6 / r.seconds : 0.0);
    }
    library_model_free(&r.model);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAILED;
}

static void format_time(int64_t t, bool iso, char *out, size_t size) {
    const time_t when = (time_t)t;
    const struct tm *tm = gmtime(&when);
    if (!tm || strftime(out, size, iso ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M", tm) == 0)
        snprintf(out, size, "?");
}

int cmd_list(int argc, char **argv) {
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(list_usage, stdout);
            return CLI_OK;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else {
            return cli_usage_error("list", list_usage, "unknown argument '%s'", argv[i]);
        }
    }
    char models_dir[LIBRARY_PATH_MAX];
    if (!library_models_dir(models_dir, sizeof models_dir))
        return cli_fail("no folder for the model library: set BRASA_MODELS to one");
    library_entry *entries = NULL;
    size_t n = 0;
    brasa_error err;
    if (library_scan(models_dir, NULL, &entries, &n, &err) != BRASA_OK)
        return cli_fail("%s", err.message);
    if (json) {
        printf("[");
        for (size_t i = 0; i < n; i++) {
            const library_entry *e = &entries[i];
            char name[LIBRARY_NAME_TEXT_MAX + 1], when[32];
            library_name_format(&e->name, name, sizeof name);
            format_time(e->modified, true, when, sizeof when);
            printf("%s\n  {\"name\": ", i ? "," : "");
            json_cstr(stdout, name);
            printf(", \"quant\": ");
            json_cstr(stdout, e->model.quant);
            printf(", \"size\": %" PRIu64 ", \"path\": ", e->model.size);
            json_cstr(stdout, e->first_path);
            printf(", \"modified\": \"%s\", \"complete\": %s, \"bytes_present\": %" PRIu64 ", \"default\": %s, \"commit\": ",
                   when, e->complete ? "true" : "false", e->bytes_present, e->is_default ? "true" : "false");
            json_cstr(stdout, e->commit);
            printf(", \"files\": ");
            json_files(&e->model, e->repo_dir);
            printf("}");
        }
        printf("%s]\n", n ? "\n" : "");
    } else if (n == 0) {
        printf("The library is empty (%s): `brasa pull OWNER/REPO[:QUANT]` adds a model.\n", models_dir);
    } else {
        printf("%-48s %-10s %-18s %-16s %s\n", "NAME", "QUANT", "SIZE", "MODIFIED", "PATH");
        for (size_t i = 0; i < n; i++) {
            const library_entry *e = &entries[i];
            char name[LIBRARY_NAME_TEXT_MAX + 1], size[48], when[32], bytes[32];
            library_name_format(&e->name, name, sizeof name);
            format_bytes(e->model.size, bytes, sizeof bytes);
            if (e->complete)
                snprintf(size, sizeof size, "%s", bytes);
            else
                snprintf(size, sizeof size, "%s (%d%%)", bytes,
                         e->model.size ? (int)((double)e->bytes_present * 100.0 / (double)e->model.size) : 0);
            format_time(e->modified, false, when, sizeof when);
            printf("%-48s %-10s %-18s %-16s %s%s\n", name, e->model.quant[0] ? e->model.quant : "-", size, when,
                   e->first_path, e->complete ? "" : "  (partial: `brasa pull` resumes it)");
        }
    }
    library_entries_free(entries, n);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAILED;
}

int cmd_rm(int argc, char **argv) {
    const char *name_text = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(rm_usage, stdout);
            return CLI_OK;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("rm", rm_usage, "unknown option '%s'", argv[i]);
        } else if (name_text) {
            return cli_usage_error("rm", rm_usage, "one model at a time ('%s' and '%s')", name_text, argv[i]);
        } else {
            name_text = argv[i];
        }
    }
    if (!name_text)
        return cli_usage_error("rm", rm_usage, "missing OWNER/REPO[:QUANT]");
    library_name n;
    brasa_error err;
    if (library_name_parse(name_text, &n, &err) != BRASA_OK)
        return cli_usage_error("rm", rm_usage, "%s", err.message);
    char models_dir[LIBRARY_PATH_MAX];
    if (!library_models_dir(models_dir, sizeof models_dir))
        return cli_fail("no folder for the model library: set BRASA_MODELS to one");
    size_t count = 0, chosen = 0;
    library_entry *entries = scan_repo(models_dir, &n, &count);
    if (!entries)
        return CLI_FAILED;
    bool found = false;
    int rc = CLI_OK;
    plat_lock *lock = NULL;
    if (library_find(entries, count, &n, false, &chosen, &found, &err) != BRASA_OK) {
        rc = cli_fail("%s: %s", name_text, err.message);
    } else if (!found) {
        rc = cli_fail("%s: not in the library (%s; `brasa list` shows what it holds)", name_text, models_dir);
    } else {
        const library_entry *e = &entries[chosen];
        char lock_path[LIBRARY_PATH_MAX + 8], shown[LIBRARY_NAME_TEXT_MAX + 1];
        long holder = 0, stale = 0;
        snprintf(lock_path, sizeof lock_path, "%s%c.lock", e->repo_dir, plat_path_separator());
        library_name_format(&e->name, shown, sizeof shown);
        if (plat_lock_acquire(lock_path, &lock, &holder, &stale, &err) != BRASA_OK)
            rc = holder ? cli_fail("%s: a brasa pull (process %ld) is writing into %s: wait for it", name_text, holder,
                                   e->repo_dir)
                        : cli_fail("%s", err.message);
        else if (library_remove(e, &err) != BRASA_OK)
            rc = cli_fail("%s: %s", name_text, err.message);
        else
            fprintf(stderr, "brasa: removed %s (%s)\n", shown, e->first_path);
        plat_lock_release(lock);
        library_tidy_repo_dir(e->repo_dir);
    }
    library_entries_free(entries, count);
    return rc;
}
