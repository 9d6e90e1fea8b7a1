/* library.c: the model library of library.h: names, the hub's listing read into the models a repo
 * offers, picking one by quant, and the manifests of pulled models. Everything that comes from the
 * hub or from disk is checked before it names a file, since a file name from the hub becomes a path
 * here (no absolute paths, no "..", no backslashes). */
#include "tools/library.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/json.h"
#include "platform/platform.h"

#define MANIFEST_SUFFIX ".manifest"
#define MANIFEST_MAX_BYTES (1u << 20)
#define LISTING_MAX_FILES 100000

/* ---- small string helpers (ASCII only: names are ASCII, and the locale must not matter) ------------ */

static char lower(char c) {
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static char upper(char c) {
    return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

static bool equal_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (lower(*a) != lower(*b))
            return false;
    return *a == *b;
}

static bool ends_with_nocase(const char *s, size_t len, const char *suffix) {
    const size_t n = strlen(suffix);
    if (n > len)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower(s[len - n + i]) != lower(suffix[i]))
            return false;
    return true;
}

static bool contains_nocase(const char *s, const char *part) {
    const size_t n = strlen(s), k = strlen(part);
    for (size_t i = 0; i + k <= n; i++)
        if (ends_with_nocase(s, i + k, part))
            return true;
    return false;
}

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '_' || c == '.';
}

static bool is_hex(const char *s, size_t n) {
    if (strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_digit(s[i]) && !(lower(s[i]) >= 'a' && lower(s[i]) <= 'f'))
            return false;
    return true;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* ---- names ------------------------------------------------------------------------------------- */

/* An owner's or a repo's name against the hub's rules; NULL when it keeps them, else which it breaks. */
static const char *name_part_problem(const char *s, size_t n) {
    if (n == 0)
        return "is empty";
    if (n > LIBRARY_PART_MAX)
        return "is longer than 96 characters";
    for (size_t i = 0; i < n; i++)
        if (!is_name_char(s[i]))
            return "may hold only letters, digits, '-', '_' and '.'";
    if (s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
        return "must not start or end with '-' or '.'";
    for (size_t i = 0; i + 1 < n; i++)
        if ((s[i] == '-' && s[i + 1] == '-') || (s[i] == '.' && s[i + 1] == '.'))
            return "must not hold '--' or '..'";
    return NULL;
}

brasa_status library_name_parse(const char *text, library_name *out, brasa_error *err) {
    memset(out, 0, sizeof *out);
    static const char example[] = "expected OWNER/REPO[:QUANT], such as Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M";
    if (!text || !text[0])
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "an empty model name: %s", example);
    const size_t len = strlen(text);
    if (len > LIBRARY_NAME_TEXT_MAX)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "a model name of %zu bytes is too long: %s", len, example);
    const char *slash = strchr(text, '/');
    const char *colon = strchr(text, ':');
    if (!slash || (colon && colon < slash))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "'%s' is not a model name: %s", text, example);
    const size_t owner_len = (size_t)(slash - text);
    const char *repo = slash + 1;
    const size_t repo_len = colon ? (size_t)(colon - repo) : strlen(repo);
    const char *why = name_part_problem(text, owner_len);
    if (why)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "'%s': the owner %s (%s)", text, why, example);
    if (memchr(repo, '/', repo_len))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "'%s': a name has one '/' (%s)", text, example);
    if ((why = name_part_problem(repo, repo_len)) != NULL)
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "'%s': the repo name %s (%s)", text, why, example);
    if (colon) {
        const char *quant = colon + 1;
        const size_t n = strlen(quant);
        if (n == 0)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "'%s': nothing after ':' (a quant such as Q4_K_M)", text);
        if (n > LIBRARY_QUANT_MAX)
            return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "'%s': the quant is longer than %d characters", text,
                           LIBRARY_QUANT_MAX);
        for (size_t i = 0; i < n; i++)
            if (!is_name_char(quant[i]))
                return err_set(err, BRASA_ERR_INVALID_ARGUMENT,
                               "'%s': the quant may hold only letters, digits, '-', '_' and '.' (such as Q4_K_M)",
                               text);
        memcpy(out->quant, quant, n + 1);
    }
    memcpy(out->owner, text, owner_len);
    memcpy(out->repo, repo, repo_len);
    return BRASA_OK;
}

void library_name_format(const library_name *n, char *out, size_t size) {
    snprintf(out, size, "%s/%s%s%s", n->owner, n->repo, n->quant[0] ? ":" : "", n->quant);
}

bool library_looks_like_path(const char *arg) {
    const size_t n = strlen(arg);
    const char *slash = strchr(arg, '/');
    return n == 0 || (ends_with_nocase(arg, n, ".gguf") && !strchr(arg, ':')) || arg[0] == '/' || arg[0] == '.' || arg[0] == '~' ||
           strchr(arg, '\\') != NULL || (n >= 2 && arg[1] == ':') || (slash && strchr(slash + 1, '/'));
}

/* ---- sizes, for messages ---------------------------------------------------------------------- */

static void format_size(uint64_t bytes, char *out, size_t size) {
    const double b = (double)bytes;
    if (b >= 1e9)
        snprintf(out, size, "%.1f GB", b / 1e9);
    else if (b >= 1e6)
        snprintf(out, size, "%.1f MB", b / 1e6);
    else if (b >= 1e3)
        snprintf(out, size, "%.1f kB", b / 1e3);
    else
        snprintf(out, size, "%llu B", (unsigned long long)bytes);
}

/* ---- file names from the hub -------------------------------------------------------------------- */

/* Whether a path from the hub (or a manifest) may become a path here: relative, '/'-separated, no
 * empty, "." or ".." component, no backslash, colon or control character, at most 1024 bytes. */
static bool safe_repo_path(const char *p, size_t len) {
    if (len == 0 || len > LIBRARY_FILE_PATH_MAX || strlen(p) != len || p[0] == '/' || p[len - 1] == '/')
        return false;
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)p[i];
        if (c < 0x20 || c == 0x7f || c == '\\' || c == ':' || c == '*' || c == '?' || c == '"' || c == '<' ||
            c == '>' || c == '|')
            return false;
    }
    const char *s = p;
    while (*s) {
        const char *end = strchr(s, '/');
        const size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return false;
        s += n + (end ? 1 : 0);
    }
    return true;
}

/* A GGUF file's name read as "<stem>-00002-of-00005.gguf" (llama.cpp's gguf-split naming, five
 * digits each) or "<stem>.gguf". */
typedef struct split_name {
    size_t stem_len; /* of the whole path */
    unsigned index, count; /* 0, 0 when not split */
} split_name;

static split_name read_split(const char *path) {
    split_name s = { 0, 0, 0 };
    const size_t n = strlen(path);
    s.stem_len = n >= 5 ? n - 5 : 0; /* ".gguf" */
    static const char pattern[] = "-DDDDD-of-DDDDD";
    const size_t pn = sizeof pattern - 1;
    if (s.stem_len < pn + 1)
        return s;
    const char *tail = path + s.stem_len - pn;
    unsigned index = 0, count = 0;
    for (size_t i = 0; i < pn; i++) {
        if (pattern[i] == 'D') {
            if (!is_digit(tail[i]))
                return s;
            if (i < 6)
                index = index * 10 + (unsigned)(tail[i] - '0');
            else
                count = count * 10 + (unsigned)(tail[i] - '0');
        } else if (tail[i] != pattern[i]) {
            return s;
        }
    }
    if (index == 0 || count == 0 || index > count)
        return s;
    s.stem_len -= pn;
    s.index = index;
    s.count = count;
    return s;
}

/* Whether a token of a file name names a quantization: Q4_K_M, IQ2_XXS, TQ1_0, F16, BF16, MXFP4... */
static bool quant_token(const char *t, size_t n) {
    char u[8] = { 0 };
    for (size_t i = 0; i < n && i < sizeof u - 1; i++)
        u[i] = upper(t[i]);
    if (n >= 2 && u[0] == 'Q' && is_digit(u[1]))
        return true;
    if (n >= 3 && (u[0] == 'I' || u[0] == 'T') && u[1] == 'Q' && is_digit(u[2]))
        return true;
    if (n >= 4 && memcmp(u, "MXFP", 4) == 0)
        return true;
    return (n == 3 && (memcmp(u, "F16", 3) == 0 || memcmp(u, "F32", 3) == 0 || memcmp(u, "F64", 3) == 0)) ||
           (n == 4 && memcmp(u, "BF16", 4) == 0);
}

/* The quant a model's file name carries: its last token (split at '-' and '.') that names one, in
 * capitals; "" when none does. */
static void quant_of(const char *path, char *out) {
    const split_name s = read_split(path);
    const char *stem = base_name(path);
    const size_t end = s.stem_len - (size_t)(stem - path);
    out[0] = '\0';
    size_t i = 0;
    while (i < end) {
        size_t j = i;
        while (j < end && stem[j] != '-' && stem[j] != '.')
            j++;
        if (j > i && j - i <= LIBRARY_QUANT_MAX && quant_token(stem + i, j - i)) {
            for (size_t k = 0; k < j - i; k++)
                out[k] = upper(stem[i + k]);
            out[j - i] = '\0';
        }
        i = j + 1;
    }
}

/* ---- the listing ------------------------------------------------------------------------------- */

static void files_free(library_file *files, size_t n) {
    for (size_t i = 0; files && i < n; i++)
        free(files[i].path);
    free(files);
}

void library_model_free(library_model *m) {
    if (!m)
        return;
    files_free(m->parts, m->n_parts);
    memset(m, 0, sizeof *m);
}

bool library_model_copy(const library_model *m, library_model *out) {
    memset(out, 0, sizeof *out);
    memcpy(out->quant, m->quant, sizeof out->quant);
    out->size = m->size;
    out->parts = calloc(m->n_parts ? m->n_parts : 1, sizeof *out->parts);
    if (!out->parts)
        return false;
    for (size_t i = 0; i < m->n_parts; i++) {
        out->parts[i] = m->parts[i];
        out->parts[i].path = malloc(strlen(m->parts[i].path) + 1);
        if (!out->parts[i].path) {
            files_free(out->parts, i);
            out->parts = NULL;
            return false;
        }
        strcpy(out->parts[i].path, m->parts[i].path);
    }
    out->n_parts = m->n_parts;
    return true;
}

void library_listing_free(library_listing *l) {
    if (!l)
        return;
    for (size_t i = 0; i < l->n_models; i++)
        library_model_free(&l->models[i]);
    free(l->models);
    memset(l, 0, sizeof *l);
}

static bool json_u64(const json_value *v, uint64_t *out) {
    if (!v || v->type != JSON_NUMBER || !v->is_integer || v->integer < 0)
        return false;
    *out = (uint64_t)v->integer;
    return true;
}

/* Sorting the listing's GGUF files: by stem, then split count, then part index, so that a split
 * model's parts sit together and in order. */
static int compare_files(const void *pa, const void *pb) {
    const library_file *a = pa, *b = pb;
    const split_name sa = read_split(a->path), sb = read_split(b->path);
    const size_t n = sa.stem_len < sb.stem_len ? sa.stem_len : sb.stem_len;
    const int c = memcmp(a->path, b->path, n);
    if (c != 0)
        return c;
    if (sa.stem_len != sb.stem_len)
        return sa.stem_len < sb.stem_len ? -1 : 1;
    if (sa.count != sb.count)
        return sa.count < sb.count ? -1 : 1;
    if (sa.index != sb.index)
        return sa.index < sb.index ? -1 : 1;
    return strcmp(a->path, b->path);
}

/* One file of the listing read from a sibling; false when it is no model file brasa takes (*skipped
 * set when it is GGUF all the same). */
static bool read_sibling(const json_value *sib, library_file *f, bool *skipped) {
    *skipped = false;
    const json_value *name = json_get(sib, "rfilename");
    if (!name || name->type != JSON_STRING || !ends_with_nocase(name->str, name->len, ".gguf"))
        return false;
    *skipped = true;
    if (!safe_repo_path(name->str, name->len) || contains_nocase(base_name(name->str), "mmproj"))
        return false;
    const json_value *lfs = json_get(sib, "lfs");
    uint64_t size = 0;
    f->sha256[0] = '\0';
    if (lfs && lfs->type == JSON_OBJECT) {
        const json_value *sha = json_get(lfs, "sha256");
        if (!json_u64(json_get(lfs, "size"), &size) || !sha || sha->type != JSON_STRING || !is_hex(sha->str, 64))
            return false;
        for (size_t i = 0; i < 64; i++)
            f->sha256[i] = lower(sha->str[i]);
        f->sha256[64] = '\0';
    } else if (!json_u64(json_get(sib, "size"), &size)) {
        return false; /* without a size nothing could be checked or resumed */
    }
    f->size = size;
    f->path = malloc(name->len + 1);
    if (!f->path)
        return false;
    memcpy(f->path, name->str, name->len + 1);
    *skipped = false;
    return true;
}

/* Groups the sorted files into models: a plain file alone, a split one with every part 1..count. */
static brasa_status group_models(library_file *files, size_t n, library_listing *out, brasa_error *err) {
    out->models = calloc(n ? n : 1, sizeof *out->models);
    if (!out->models)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory reading the hub's listing");
    size_t i = 0;
    const char *previous_plain = NULL; /* the last plain file taken (a model owns it now) */
    while (i < n) {
        const split_name s = read_split(files[i].path);
        size_t run = 1;
        while (i + run < n) {
            const split_name t = read_split(files[i + run].path);
            if (t.stem_len != s.stem_len || t.count != s.count || memcmp(files[i].path, files[i + run].path, s.stem_len) != 0)
                break;
            if (s.count == 0) /* the same plain name twice: keep one */
                break;
            run++;
        }
        if (s.count == 0 && previous_plain && strcmp(previous_plain, files[i].path) == 0) {
            free(files[i].path);
            files[i].path = NULL;
            out->n_skipped++;
            i++;
            continue;
        }
        bool whole = (s.count == 0 && run == 1) || run == s.count;
        uint64_t size = 0;
        for (size_t k = 0; whole && k < run; k++) /* parts 1..count in order, sizes that add up */
            whole = (s.count == 0 || read_split(files[i + k].path).index == k + 1) &&
                    ck_add_u64(size, files[i + k].size, &size);
        if (!whole) {
            for (size_t k = 0; k < run; k++) {
                free(files[i + k].path);
                files[i + k].path = NULL;
            }
            out->n_skipped += run;
            i += run;
            continue;
        }
        library_model *m = &out->models[out->n_models];
        m->parts = calloc(run, sizeof *m->parts);
        if (!m->parts)
            return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory reading the hub's listing");
        for (size_t k = 0; k < run; k++) {
            m->parts[k] = files[i + k];
            files[i + k].path = NULL; /* the model owns it now */
        }
        m->size = size;
        m->n_parts = run;
        if (s.count == 0)
            previous_plain = m->parts[0].path;
        quant_of(m->parts[0].path, m->quant);
        out->n_models++;
        i += run;
    }
    return BRASA_OK;
}

brasa_status library_listing_parse(const char *json, size_t len, library_listing *out, brasa_error *err) {
    memset(out, 0, sizeof *out);
    json_doc *doc = NULL;
    brasa_error jerr;
    if (json_parse(json, len, &doc, &jerr) != BRASA_OK)
        return err_set(err, BRASA_ERR_FORMAT, "the hub's listing is not JSON: %s", jerr.message);
    const json_value *root = json_root(doc);
    const json_value *siblings = json_get(root, "siblings");
    brasa_status st = BRASA_OK;
    library_file *files = NULL;
    size_t n_files = 0;
    if (!siblings || siblings->type != JSON_ARRAY) {
        st = err_set(err, BRASA_ERR_FORMAT, "the hub's listing has no list of files (\"siblings\")");
        goto done;
    }
    if (siblings->len > LISTING_MAX_FILES) {
        st = err_set(err, BRASA_ERR_FORMAT, "the hub's listing has %zu files, over the %d brasa reads", siblings->len,
                     LISTING_MAX_FILES);
        goto done;
    }
    const json_value *id = json_get(root, "id");
    if (!id || id->type != JSON_STRING || strlen(id->str) != id->len ||
        library_name_parse(id->str, &out->id, NULL) != BRASA_OK || out->id.quant[0])
        memset(&out->id, 0, sizeof out->id);
    const json_value *sha = json_get(root, "sha");
    if (sha && sha->type == JSON_STRING && is_hex(sha->str, 40))
        for (size_t i = 0; i <= 40; i++)
            out->commit[i] = lower(sha->str[i]);
    files = calloc(siblings->len ? siblings->len : 1, sizeof *files);
    if (!files) {
        st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory reading the hub's listing");
        goto done;
    }
    for (size_t i = 0; i < siblings->len; i++) {
        bool skipped = false;
        if (siblings->items[i].type == JSON_OBJECT && read_sibling(&siblings->items[i], &files[n_files], &skipped))
            n_files++;
        else if (skipped)
            out->n_skipped++;
    }
    qsort(files, n_files, sizeof *files, compare_files);
    st = group_models(files, n_files, out, err);
done:
    files_free(files, n_files);
    json_free(doc);
    if (st != BRASA_OK)
        library_listing_free(out);
    return st;
}

/* ---- picking ----------------------------------------------------------------------------------- */

/* Whether a model's file name (without the split suffix and .gguf) ends in QUANT after '-', '.' or
 * '/', or is QUANT. */
static bool name_ends_in(const library_model *m, const char *quant) {
    const char *path = m->parts[0].path;
    const size_t stem = read_split(path).stem_len;
    const size_t n = strlen(quant);
    if (n == 0 || n > stem || !ends_with_nocase(path, stem, quant))
        return false;
    const size_t at = stem - n;
    return at == 0 || path[at - 1] == '-' || path[at - 1] == '.' || path[at - 1] == '/';
}

/* The models a quant picks: those of that quant, else those whose name ends in it; n_fit of them,
 * the first in *chosen. */
static void fits(const library_model *models, size_t n, const char *quant, size_t *chosen, size_t *n_fit) {
    *n_fit = 0;
    char stem[LIBRARY_QUANT_MAX + 1]; /* a whole file name picks too: its .gguf is not compared */
    const size_t len = strlen(quant);
    if (len > 5 && len <= LIBRARY_QUANT_MAX && ends_with_nocase(quant, len, ".gguf")) {
        memcpy(stem, quant, len - 5);
        stem[len - 5] = '\0';
        quant = stem;
    }
    for (int pass = 0; pass < 2 && *n_fit == 0; pass++)
        for (size_t i = 0; i < n; i++)
            if (pass == 0 ? (models[i].quant[0] && equal_nocase(models[i].quant, quant)) : name_ends_in(&models[i], quant))
                if ((*n_fit)++ == 0)
                    *chosen = i;
}

/* "Q4_K_M (name.gguf, 1.1 GB), ..." for the models (only those of quant when only is given), cut to
 * fit a message. */
static void list_choices(const library_model *models, size_t n, const char *only, char *out, size_t size) {
    size_t used = 0, shown = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (only && !(equal_nocase(models[i].quant, only) || name_ends_in(&models[i], only)))
            continue;
        char bytes[32], one[320];
        format_size(models[i].size, bytes, sizeof bytes);
        const char *file = base_name(models[i].parts[0].path);
        if (models[i].n_parts > 1)
            snprintf(one, sizeof one, "%s%s (%.160s, %zu parts, %s)", shown ? ", " : "",
                     models[i].quant[0] ? models[i].quant : "?", file, models[i].n_parts, bytes);
        else
            snprintf(one, sizeof one, "%s%s (%.160s, %s)", shown ? ", " : "", models[i].quant[0] ? models[i].quant : "?",
                     file, bytes);
        if (used + strlen(one) + 24 >= size) {
            snprintf(out + used, size - used, ", and %zu more", n - i);
            return;
        }
        memcpy(out + used, one, strlen(one) + 1);
        used += strlen(one);
        shown++;
    }
}

brasa_status library_pick(const library_model *models, size_t n_models, const char *quant, size_t *chosen,
                          brasa_error *err) {
    char choices[400];
    if (n_models == 0)
        return err_set(err, BRASA_ERR_UNSUPPORTED, "it holds no GGUF model file");
    size_t n_fit = 0;
    if (!quant || !quant[0]) {
        fits(models, n_models, "Q4_K_M", chosen, &n_fit);
        if (n_fit == 1 && equal_nocase(models[*chosen].quant, "Q4_K_M"))
            return BRASA_OK;
        if (n_models == 1) {
            *chosen = 0;
            return BRASA_OK;
        }
        list_choices(models, n_models, NULL, choices, sizeof choices);
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "it holds %zu GGUF models: add one's quant to the name (NAME:QUANT): %s",
                       n_models, choices);
    }
    fits(models, n_models, quant, chosen, &n_fit);
    if (n_fit == 1)
        return BRASA_OK;
    if (n_fit > 1) {
        list_choices(models, n_models, quant, choices, sizeof choices);
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT,
                       "%s fits %zu models: give more of the file name as the quant (the part after the model's "
                       "name): %s", quant, n_fit, choices);
    }
    list_choices(models, n_models, NULL, choices, sizeof choices);
    return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "no %s here; it holds: %s", quant, choices);
}

bool library_is_default(const library_model *models, size_t n_models, size_t chosen) {
    size_t pick;
    return library_pick(models, n_models, NULL, &pick, NULL) == BRASA_OK && pick == chosen;
}

/* ---- folders ----------------------------------------------------------------------------------- */

static bool join(char *out, size_t size, const char *a, const char *b) {
    const int n = snprintf(out, size, "%s%c%s", a, plat_path_separator(), b);
    return n > 0 && (size_t)n < size;
}

bool library_models_dir(char *out, size_t size) {
    char cache[LIBRARY_PATH_MAX];
    if (plat_env("BRASA_MODELS", out, size))
        return plat_make_dirs(out);
    return plat_cache_dir(cache, sizeof cache) && join(out, size, cache, "models") && plat_make_dirs(out);
}

brasa_status library_repo_dir(const char *models_dir, const library_name *n, bool create, char *out, size_t size,
                              brasa_error *err) {
    char owner[LIBRARY_PATH_MAX];
    if (!join(owner, sizeof owner, models_dir, n->owner) || !join(out, size, owner, n->repo))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: the path is too long", models_dir);
    if (create && !plat_make_dirs(out))
        return err_set(err, BRASA_ERR_IO, "cannot make the folder %s", out);
    return BRASA_OK;
}

brasa_status library_part_path(const char *repo_dir, const library_file *part, bool create, char *out, size_t size,
                               brasa_error *err) {
    if (!safe_repo_path(part->path, strlen(part->path)))
        return err_set(err, BRASA_ERR_FORMAT, "'%.200s' is no file name brasa will write", part->path);
    if (!join(out, size, repo_dir, part->path))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: the path is too long", repo_dir);
    const char sep = plat_path_separator();
    const size_t base = strlen(repo_dir) + 1;
    char *last = NULL;
    for (char *p = out + base; *p; p++)
        if (*p == '/') {
            *p = sep;
            last = p;
        }
    if (create && last) {
        *last = '\0';
        const bool made = plat_make_dirs(out);
        *last = sep;
        if (!made)
            return err_set(err, BRASA_ERR_IO, "cannot make the folder for %s", out);
    }
    return BRASA_OK;
}

/* <repo dir>/<first part's path, '%' and '/' escaped>.manifest */
static bool manifest_path(const char *repo_dir, const library_model *m, char *out, size_t size) {
    char name[3 * LIBRARY_FILE_PATH_MAX + sizeof MANIFEST_SUFFIX];
    size_t k = 0;
    for (const char *p = m->parts[0].path; *p; p++) {
        if (k + 3 + sizeof MANIFEST_SUFFIX > sizeof name)
            return false;
        if (*p == '/' || *p == '%') {
            name[k] = '%';
            name[k + 1] = '2';
            name[k + 2] = *p == '/' ? 'F' : '5';
            k += 3;
        } else {
            name[k++] = *p;
        }
    }
    memcpy(name + k, MANIFEST_SUFFIX, sizeof MANIFEST_SUFFIX);
    return join(out, size, repo_dir, name);
}

/* ---- manifests --------------------------------------------------------------------------------- */

static bool put(buf *b, const char *text) {
    return buf_append(b, text, strlen(text));
}

static bool put_string(buf *b, const char *text) {
    return json_write_string(b, text, strlen(text));
}

brasa_status library_write_manifest(const char *repo_dir, const library_name *name, const library_model *m,
                                    const char *commit, bool is_default, brasa_error *err) {
    char path[LIBRARY_PATH_MAX];
    if (m->n_parts == 0 || !manifest_path(repo_dir, m, path, sizeof path))
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: the path is too long", repo_dir);
    buf b = { 0 };
    bool ok = put(&b, "{\"brasa_manifest\": 1, \"owner\": ") && put_string(&b, name->owner) && put(&b, ", \"repo\": ") &&
              put_string(&b, name->repo) && put(&b, ", \"quant\": ") && put_string(&b, m->quant) &&
              put(&b, ", \"commit\": ") && put_string(&b, commit ? commit : "") &&
              put(&b, is_default ? ", \"default\": true,\n \"files\": [" : ", \"default\": false,\n \"files\": [");
    for (size_t i = 0; ok && i < m->n_parts; i++) {
        char size[64];
        snprintf(size, sizeof size, ", \"size\": %llu, \"sha256\": ", (unsigned long long)m->parts[i].size);
        ok = put(&b, i ? ",\n  {\"path\": " : "\n  {\"path\": ") && put_string(&b, m->parts[i].path) && put(&b, size) &&
             put_string(&b, m->parts[i].sha256) && put(&b, "}");
    }
    ok = ok && put(&b, "]}\n");
    brasa_status st = ok ? plat_write_file_atomic(path, b.data, b.len, err)
                         : err_set(err, BRASA_ERR_NO_MEMORY, "out of memory writing a manifest");
    buf_free(&b);
    return st;
}

static bool json_string_into(const json_value *v, char *out, size_t size) {
    if (!v || v->type != JSON_STRING || v->len >= size || strlen(v->str) != v->len)
        return false;
    memcpy(out, v->str, v->len + 1);
    return true;
}

/* An entry from a manifest's text; false when it is not one brasa wrote (or it was tampered with so
 * that it would name files outside the repo's folder). */
static bool read_manifest(const char *text, size_t len, const char *repo_dir, library_entry *e) {
    json_doc *doc = NULL;
    if (json_parse(text, len, &doc, NULL) != BRASA_OK)
        return false;
    const json_value *root = json_root(doc);
    const json_value *files = json_get(root, "files");
    const json_value *def = json_get(root, "default");
    bool ok = json_string_into(json_get(root, "owner"), e->name.owner, sizeof e->name.owner) &&
              json_string_into(json_get(root, "repo"), e->name.repo, sizeof e->name.repo) &&
              json_string_into(json_get(root, "quant"), e->model.quant, sizeof e->model.quant) &&
              json_string_into(json_get(root, "commit"), e->commit, sizeof e->commit) &&
              !name_part_problem(e->name.owner, strlen(e->name.owner)) &&
              !name_part_problem(e->name.repo, strlen(e->name.repo)) && files && files->type == JSON_ARRAY &&
              files->len > 0 && files->len <= 100000 && def && (def->type == JSON_TRUE || def->type == JSON_FALSE);
    if (ok) {
        e->is_default = def->type == JSON_TRUE;
        for (const char *q = e->model.quant; *q; q++)
            ok = ok && is_name_char(*q);
        e->model.parts = calloc(files->len, sizeof *e->model.parts);
        ok = ok && e->model.parts;
    }
    for (size_t i = 0; ok && i < files->len; i++) {
        const json_value *f = &files->items[i];
        const json_value *path = json_get(f, "path");
        library_file *part = &e->model.parts[i];
        ok = path && path->type == JSON_STRING && safe_repo_path(path->str, path->len) &&
             json_u64(json_get(f, "size"), &part->size) &&
             json_string_into(json_get(f, "sha256"), part->sha256, sizeof part->sha256) &&
             (!part->sha256[0] || is_hex(part->sha256, 64)) && (part->path = malloc(path->len + 1)) != NULL;
        if (ok) {
            memcpy(part->path, path->str, path->len + 1);
            e->model.n_parts = i + 1;
            ok = e->model.size <= UINT64_MAX - part->size;
            e->model.size += part->size;
        }
    }
    json_free(doc);
    memcpy(e->name.quant, e->model.quant, sizeof e->name.quant);
    ok = ok && strlen(repo_dir) < sizeof e->repo_dir &&
         library_part_path(repo_dir, &e->model.parts[0], false, e->first_path, sizeof e->first_path, NULL) == BRASA_OK;
    if (ok)
        memcpy(e->repo_dir, repo_dir, strlen(repo_dir) + 1);
    return ok;
}

/* Whether each part is on disk whole, and how many of the parts' bytes are there (finished files,
 * and .part files of a download under way). */
static void check_parts(library_entry *e) {
    e->complete = true;
    e->bytes_present = 0;
    for (size_t i = 0; i < e->model.n_parts; i++) {
        char path[LIBRARY_PATH_MAX], part[LIBRARY_PATH_MAX + 8];
        plat_file_info info;
        if (library_part_path(e->repo_dir, &e->model.parts[i], false, path, sizeof path, NULL) != BRASA_OK) {
            e->complete = false;
            continue;
        }
        plat_file_info_of(path, &info);
        if (info.exists && !info.is_dir && info.size == e->model.parts[i].size) {
            e->bytes_present += info.size;
            continue;
        }
        e->complete = false;
        snprintf(part, sizeof part, "%s.part", path);
        plat_file_info_of(part, &info);
        if (info.exists && !info.is_dir)
            e->bytes_present += info.size < e->model.parts[i].size ? info.size : e->model.parts[i].size;
    }
}

static char *read_small_file(const char *path, size_t max, size_t *len) {
    FILE *f = plat_fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = malloc(max + 1);
    size_t n = text ? fread(text, 1, max + 1, f) : 0;
    fclose(f);
    if (!text || n > max) {
        free(text);
        return NULL;
    }
    text[n] = '\0';
    *len = n;
    return text;
}

typedef struct scan_state {
    const library_name *only;
    char dir[LIBRARY_PATH_MAX];  /* the folder being listed */
    const char *owner, *repo;    /* the names of the folders above it */
    library_entry *entries;
    size_t n, cap;
    bool out_of_memory;
} scan_state;

static bool scan_manifest(const char *name, bool is_dir, void *user) {
    scan_state *s = user;
    const size_t n = strlen(name);
    if (is_dir || n <= sizeof MANIFEST_SUFFIX - 1 || strcmp(name + n - (sizeof MANIFEST_SUFFIX - 1), MANIFEST_SUFFIX) != 0)
        return true;
    char path[LIBRARY_PATH_MAX];
    size_t len;
    char *text = join(path, sizeof path, s->dir, name) ? read_small_file(path, MANIFEST_MAX_BYTES, &len) : NULL;
    if (!text)
        return true;
    if (s->n == s->cap) {
        const size_t cap = s->cap ? 2 * s->cap : 16;
        library_entry *grown = realloc(s->entries, cap * sizeof *grown);
        if (!grown) {
            free(text);
            s->out_of_memory = true;
            return false;
        }
        s->entries = grown;
        s->cap = cap;
    }
    library_entry *e = &s->entries[s->n];
    memset(e, 0, sizeof *e);
    /* the folders must be the ones the manifest names (in any case: the hub ignores case too) */
    if (read_manifest(text, len, s->dir, e) && equal_nocase(e->name.owner, s->owner) && equal_nocase(e->name.repo, s->repo)) {
        plat_file_info info;
        plat_file_info_of(path, &info);
        e->modified = info.modified;
        check_parts(e);
        s->n++;
    } else {
        library_model_free(&e->model);
    }
    free(text);
    return true;
}

static bool scan_repo(const char *name, bool is_dir, void *user) {
    scan_state *s = user;
    if (!is_dir || name_part_problem(name, strlen(name)) || (s->only && !equal_nocase(name, s->only->repo)))
        return true;
    char owner_dir[LIBRARY_PATH_MAX];
    memcpy(owner_dir, s->dir, sizeof owner_dir);
    if (join(s->dir, sizeof s->dir, owner_dir, name)) {
        s->repo = name;
        plat_list_dir(s->dir, scan_manifest, s);
    }
    memcpy(s->dir, owner_dir, sizeof owner_dir);
    return !s->out_of_memory;
}

static bool scan_owner(const char *name, bool is_dir, void *user) {
    scan_state *s = user;
    if (!is_dir || name_part_problem(name, strlen(name)) || (s->only && !equal_nocase(name, s->only->owner)))
        return true;
    char models_dir[LIBRARY_PATH_MAX];
    memcpy(models_dir, s->dir, sizeof models_dir);
    if (join(s->dir, sizeof s->dir, models_dir, name)) {
        s->owner = name;
        plat_list_dir(s->dir, scan_repo, s);
    }
    memcpy(s->dir, models_dir, sizeof models_dir);
    return !s->out_of_memory;
}

static int compare_entries(const void *pa, const void *pb) {
    const library_entry *a = pa, *b = pb;
    char na[LIBRARY_NAME_TEXT_MAX + 1], nb[LIBRARY_NAME_TEXT_MAX + 1];
    library_name_format(&a->name, na, sizeof na);
    library_name_format(&b->name, nb, sizeof nb);
    const int c = strcmp(na, nb);
    return c ? c : strcmp(a->model.parts[0].path, b->model.parts[0].path);
}

brasa_status library_scan(const char *models_dir, const library_name *repo, library_entry **out, size_t *n,
                          brasa_error *err) {
    *out = NULL;
    *n = 0;
    scan_state *s = calloc(1, sizeof *s);
    if (!s)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory listing the models");
    s->only = repo;
    if (strlen(models_dir) >= sizeof s->dir) {
        free(s);
        return err_set(err, BRASA_ERR_INVALID_ARGUMENT, "%s: the path is too long", models_dir);
    }
    memcpy(s->dir, models_dir, strlen(models_dir) + 1);
    plat_list_dir(models_dir, scan_owner, s); /* a folder not made yet holds no models */
    if (s->out_of_memory) {
        library_entries_free(s->entries, s->n);
        free(s);
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory listing the models");
    }
    if (s->n > 1)
        qsort(s->entries, s->n, sizeof *s->entries, compare_entries);
    *out = s->entries;
    *n = s->n;
    free(s);
    return BRASA_OK;
}

void library_entries_free(library_entry *entries, size_t n) {
    for (size_t i = 0; entries && i < n; i++)
        library_model_free(&entries[i].model);
    free(entries);
}

brasa_status library_find(const library_entry *entries, size_t n, const library_name *name, bool only_default,
                          size_t *chosen, bool *found, brasa_error *err) {
    *found = false;
    library_model *models = calloc(n ? n : 1, sizeof *models);
    size_t *index = calloc(n ? n : 1, sizeof *index);
    size_t n_models = 0;
    brasa_status st = BRASA_OK;
    if (!models || !index) {
        st = err_set(err, BRASA_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (equal_nocase(entries[i].name.owner, name->owner) && equal_nocase(entries[i].name.repo, name->repo)) {
            models[n_models] = entries[i].model; /* shallow: only read here */
            index[n_models++] = i;
        }
    if (name->quant[0]) {
        size_t pick = 0, n_fit;
        fits(models, n_models, name->quant, &pick, &n_fit);
        if (n_fit > 1) {
            st = library_pick(models, n_models, name->quant, &pick, err);
        } else if (n_fit == 1) {
            *chosen = index[pick];
            *found = true;
        }
        goto done;
    }
    size_t n_default = 0;
    for (size_t i = 0; i < n_models; i++)
        if (entries[index[i]].is_default && n_default++ == 0)
            *chosen = index[i];
    if (n_default == 1 || (n_default == 0 && !only_default && n_models == 1)) {
        if (n_default == 0)
            *chosen = index[0];
        *found = true;
    } else if (n_default > 1 || (!only_default && n_models > 1)) {
        char choices[400];
        list_choices(models, n_models, NULL, choices, sizeof choices);
        st = err_set(err, BRASA_ERR_INVALID_ARGUMENT,
                     "the library holds %zu models of it: add one's quant to the name (NAME:QUANT): %s", n_models,
                     choices);
    }
done:
    free(models);
    free(index);
    return st;
}

/* Removes the folders from the one holding path up to (not including) stop, while they are empty. */
static void remove_empty_dirs(char *path, const char *stop) {
    const size_t keep = strlen(stop);
    const char sep = plat_path_separator();
    for (;;) {
        char *cut = strrchr(path, sep);
        char *slash = strrchr(path, '/');
        if (slash && (!cut || slash > cut))
            cut = slash;
        if (!cut || (size_t)(cut - path) <= keep)
            return;
        *cut = '\0';
        if (!plat_remove_dir(path))
            return;
    }
}

static bool only_lock(const char *name, bool is_dir, void *user) {
    bool *other = user;
    if (is_dir || strcmp(name, ".lock") != 0)
        *other = true;
    return !*other;
}

brasa_status library_remove(const library_entry *e, brasa_error *err) {
    for (size_t i = 0; i < e->model.n_parts; i++) {
        char path[LIBRARY_PATH_MAX], part[LIBRARY_PATH_MAX + 8];
        if (library_part_path(e->repo_dir, &e->model.parts[i], false, path, sizeof path, err) != BRASA_OK)
            return BRASA_ERR_FORMAT;
        plat_file_info info;
        plat_file_info_of(path, &info);
        if (info.exists && !plat_remove_file(path))
            return err_set(err, BRASA_ERR_IO, "cannot remove %s", path);
        snprintf(part, sizeof part, "%s.part", path);
        plat_file_info_of(part, &info);
        if (info.exists && !plat_remove_file(part))
            return err_set(err, BRASA_ERR_IO, "cannot remove %s", part);
        remove_empty_dirs(path, e->repo_dir);
    }
    char manifest[LIBRARY_PATH_MAX];
    if (!manifest_path(e->repo_dir, &e->model, manifest, sizeof manifest) || !plat_remove_file(manifest))
        return err_set(err, BRASA_ERR_IO, "cannot remove the manifest in %s", e->repo_dir);
    return BRASA_OK;
}

void library_tidy_repo_dir(const char *repo_dir) {
    bool other = false;
    char dir[LIBRARY_PATH_MAX], lock[LIBRARY_PATH_MAX + 8];
    if (strlen(repo_dir) >= sizeof dir || !plat_list_dir(repo_dir, only_lock, &other) || other)
        return;
    snprintf(lock, sizeof lock, "%s%c.lock", repo_dir, plat_path_separator());
    plat_remove_file(lock);
    memcpy(dir, repo_dir, strlen(repo_dir) + 1);
    if (plat_remove_dir(dir)) {
        char *cut = strrchr(dir, plat_path_separator()); /* the owner's folder, when it is empty now */
        if (cut) {
            *cut = '\0';
            plat_remove_dir(dir);
        }
    }
}
