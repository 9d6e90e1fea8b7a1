/* library.h: the model library. A model is named as on the Hugging Face hub, OWNER/REPO[:QUANT]; the
 * hub's listing of a repo is read into the GGUF models it offers (split files grouped, in part
 * order) and one is picked by its quantization; pulled models live under the models folder as
 * <owner>/<repo>/<file as the hub names it>, each with a manifest (<first file>.manifest, JSON: the
 * files, sizes and sha256s) that `brasa list`, `brasa rm` and name resolution read. No network here:
 * the downloads are hub.h's, and `brasa pull` (cli/cmd_library.c) puts the two together.
 *
 *     library_name n;
 *     if (library_name_parse("Qwen/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m", &n, &err) != BRASA_OK) ...
 *     library_listing l;   // from GET {endpoint}/api/models/Qwen/Qwen2.5-0.5B-Instruct-GGUF?blobs=true
 *     if (library_listing_parse(body, len, &l, &err) == BRASA_OK &&
 *         library_pick(l.models, l.n_models, n.quant, &i, &err) == BRASA_OK)
 *         ... l.models[i].parts[0].path is "qwen2.5-0.5b-instruct-q4_k_m.gguf" ...
 */
#ifndef BRASA_TOOLS_LIBRARY_H
#define BRASA_TOOLS_LIBRARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "brasa.h"

#define LIBRARY_PART_MAX 96       /* the hub's limit on an owner's or a repo's name */
#define LIBRARY_QUANT_MAX 96
#define LIBRARY_NAME_TEXT_MAX (2 * LIBRARY_PART_MAX + LIBRARY_QUANT_MAX + 3)
#define LIBRARY_FILE_PATH_MAX 1024 /* a file's path inside a repo */
#define LIBRARY_PATH_MAX 4096      /* a path on this machine */

/* ---- Names ------------------------------------------------------------------------------------- */

typedef struct library_name {
    char owner[LIBRARY_PART_MAX + 1];
    char repo[LIBRARY_PART_MAX + 1];
    char quant[LIBRARY_QUANT_MAX + 1]; /* "" when the name gives none: the repo's default */
} library_name;

/* Parses OWNER/REPO[:QUANT]. Owner and repo follow the hub's rules: 1 to 96 of A-Z a-z 0-9 - _ .,
 * not starting or ending with - or ., no "--" or "..". QUANT: 1 to 96 of A-Z a-z 0-9 - _ . (matched
 * without regard to case). The error says which rule the text breaks. */
brasa_status library_name_parse(const char *text, library_name *out, brasa_error *err);
/* "owner/repo", or "owner/repo:QUANT" when the name has a quant. */
void library_name_format(const library_name *n, char *out, size_t size);
/* Whether a command's MODEL argument is a file path and never a name: it ends in .gguf without a ':'
 * (OWNER/REPO:FILE.gguf is a name), starts with / . ~ or a drive letter, or holds a backslash or more
 * than one /. Anything else that parses as a
 * name is one unless a file of that path exists (the caller checks that first). */
bool library_looks_like_path(const char *arg);

/* ---- What a repo offers -------------------------------------------------------------------------- */

typedef struct library_file {
    char *path;                 /* inside the repo, as the hub names it (folders allowed, checked) */
    uint64_t size;
    char sha256[65];            /* lowercase hex; "" when the hub publishes none (not an LFS file) */
} library_file;

typedef struct library_model {
    char quant[LIBRARY_QUANT_MAX + 1]; /* read from the file name ("Q4_K_M"), "" when it has none */
    library_file *parts;               /* one file, or every part of a split model in order */
    size_t n_parts;
    uint64_t size;                     /* all parts */
} library_model;

typedef struct library_listing {
    library_name id;          /* the repo as the hub spells it ("id"), owner "" when it gave none */
    char commit[41];          /* the revision listed (40 hex digits), "" when the hub gave none */
    library_model *models;
    size_t n_models;
    size_t n_skipped;         /* GGUF files that are no model to pick: projectors, incomplete splits,
                                 names brasa will not write to disk */
} library_listing;

/* Reads the hub's answer to GET /api/models/OWNER/REPO?blobs=true: {"sha": ..., "siblings":
 * [{"rfilename", "size", "lfs": {"sha256", "size"}}, ...]}. Untrusted: every field is checked; files
 * that are not GGUF are ignored. Split files (NAME-00001-of-00003.gguf) become one model when every
 * part is there. On success the caller frees with library_listing_free. */
brasa_status library_listing_parse(const char *json, size_t len, library_listing *out, brasa_error *err);
void library_listing_free(library_listing *l);

/* Picks a model by quant: a model whose quant is that one (any case), else the one model whose file
 * name (without .gguf and the split suffix) ends in -QUANT or .QUANT, or is QUANT (a whole file name,
 * .gguf and all, picks its model). Without a quant: Q4_K_M when
 * there is one, else the only model. The error lists the choices ("Q4_K_M (x-Q4_K_M.gguf,
 * 1.1 GB), ...") when none or several fit. */
brasa_status library_pick(const library_model *models, size_t n_models, const char *quant, size_t *chosen,
                          brasa_error *err);
/* Whether models[chosen] is what library_pick gives without a quant. */
bool library_is_default(const library_model *models, size_t n_models, size_t chosen);

/* A copy of m (its own allocations); false when out of memory. Free with library_model_free. */
bool library_model_copy(const library_model *m, library_model *out);
void library_model_free(library_model *m);

/* ---- The models on this machine ---------------------------------------------------------------- */

/* The models folder: $BRASA_MODELS, else the cache folder's "models" (platform.h), created when
 * missing. False when there is none. */
bool library_models_dir(char *out, size_t size);
/* <models>/<owner>/<repo>, created when create is set. */
brasa_status library_repo_dir(const char *models_dir, const library_name *n, bool create, char *out, size_t size,
                              brasa_error *err);
/* Where a part lives: <repo dir>/<part path>, its folders created when create is set. */
brasa_status library_part_path(const char *repo_dir, const library_file *part, bool create, char *out, size_t size,
                               brasa_error *err);

typedef struct library_entry {
    library_name name;        /* quant: the model's own ("" when its file name has none) */
    library_model model;
    bool is_default;          /* pulled as what OWNER/REPO without a quant means */
    bool complete;            /* every part is on disk with its size */
    uint64_t bytes_present;   /* of the parts, finished or partly downloaded */
    int64_t modified;         /* when the manifest was written (seconds since 1970, UTC) */
    char commit[41];
    char repo_dir[LIBRARY_PATH_MAX];
    char first_path[LIBRARY_PATH_MAX]; /* the file a model opens from: the first part */
} library_entry;

/* Writes the manifest of a model being pulled (before the download, so an interrupted pull can be
 * listed and removed) or pulled, replacing any earlier one in one step. */
brasa_status library_write_manifest(const char *repo_dir, const library_name *name, const library_model *m,
                                    const char *commit, bool is_default, brasa_error *err);
/* The models of the library, from their manifests: all of them (repo == NULL) or one repo's (its
 * owner and repo; the quant is not looked at), sorted by name. Manifests that do not read are skipped.
 * Free with library_entries_free. */
brasa_status library_scan(const char *models_dir, const library_name *repo, library_entry **out, size_t *n,
                          brasa_error *err);
void library_entries_free(library_entry *entries, size_t n);
/* What a name means among a repo's entries: with a quant, as library_pick; without, the entry marked
 * default, else (only_default false) the only one. *found false (and no error) when nothing fits and
 * the name may still be pulled; an error when the name is ambiguous here. */
brasa_status library_find(const library_entry *entries, size_t n, const library_name *name, bool only_default,
                          size_t *chosen, bool *found, brasa_error *err);
/* Removes an entry's files (finished and partial), its manifest, and the folders inside the repo's
 * folder left empty. */
brasa_status library_remove(const library_entry *e, brasa_error *err);
/* Removes a repo's folder when nothing but its pull lock (".lock", not held) is left in it, and then
 * its owner's when that is empty. */
void library_tidy_repo_dir(const char *repo_dir);

#endif
