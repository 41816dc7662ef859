/*
 * load.c - files in, AstUnit out: reading, size limits, and imports.
 *
 * Files are read whole into the arena with a NUL appended (the lexer's sentinel). Anything
 * that is not a readable regular file, or larger than LOAD_MAX_BYTES, is refused with a
 * message before the lexer sees it (the program's own file unreadable is a usage error, an
 * import's an error at the import). Imports are followed depth-first; files are identified by
 * their real path, so two spellings of one file load it once, and a file that imports itself
 * (directly or through others) is reported with the whole chain.
 */
#include "load.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdsl.h"
#include "parse.h"

#ifndef CDSL_STDLIB_DIR
#define CDSL_STDLIB_DIR "/usr/local/share/cdsl/stdlib"
#endif

typedef struct Loader {
    Arena *arena;
    Diag *diag;
    const LoadOptions *opt;
    AstUnit *unit;
    const char *real[LOAD_MAX_FILES];   /* real path of each loaded file, by unit index */
    const char *stack[LOAD_MAX_FILES];  /* real paths being loaded now (for cycles) */
    const char *shown[LOAD_MAX_FILES];  /* the same files as the user named them */
    Loc stack_at[LOAD_MAX_FILES];       /* the import that started each */
    int depth;
    char real_buf[PATH_MAX];            /* realpath()'s answer, copied at once: not on the
                                           stack, which holds one load_file per import level */
    char found_buf[PATH_MAX];           /* an import's path while it is looked up */
} Loader;

/* The main file given as text (cdsl_compile_opts.source): path only names it. */
static Source *given_source(Loader *ld, const char *path, const char *text)
{
    size_t len = strlen(text);
    if (len > LOAD_MAX_BYTES) {
        diag_fatal(ld->diag, "'%s' is too large (%zu bytes; the limit is %d MiB)", path, len, LOAD_MAX_BYTES >> 20);
        return NULL;
    }
    Source *src = ARENA_NEW(ld->arena, Source);
    src->path = arena_strdup(ld->arena, path);
    src->text = arena_strndup(ld->arena, text, len);
    src->len = len;
    src->arena = ld->arena;
    return src;
}

/* A file that cannot be read: an import's is an error at the import; the program's own file
 * is an error in the caller's arguments (CDSL_ERR_USAGE), as it names nothing to compile. */
static Source *cannot_read(Loader *ld, const char *path, Loc from, const char *why)
{
    if (from.src)
        diag_error(ld->diag, from, "cannot read '%s': %s", path, why);
    else
        diag_usage(ld->diag, "cannot read '%s': %s", path, why);
    return NULL;
}

static Source *read_source(Loader *ld, const char *path, Loc from)
{
    if (!from.src && ld->unit->nfiles == 0 && ld->opt->source)
        return given_source(ld, path, ld->opt->source);
    struct stat st;
    bool found = stat(path, &st) == 0;
    int err = errno;
    if (!found || !S_ISREG(st.st_mode))
        return cannot_read(ld, path, from, !found ? strerror(err) : "not a regular file");
    if (st.st_size > LOAD_MAX_BYTES) {
        diag_fatal(ld->diag, "'%s' is too large (%lld bytes; the limit is %d MiB)", path, (long long)st.st_size,
                   LOAD_MAX_BYTES >> 20);
        return NULL;
    }
    /* Everything allocated before the file is opened: running out of memory unwinds (arena.h)
     * and must not leave the FILE open. */
    char *text = arena_alloc(ld->arena, (size_t)st.st_size + 1);
    Source *src = ARENA_NEW(ld->arena, Source);
    src->path = arena_strdup(ld->arena, path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return cannot_read(ld, path, from, strerror(errno));
    size_t n = fread(text, 1, (size_t)st.st_size, f);
    fclose(f);
    src->text = text;
    src->len = n;
    src->arena = ld->arena;
    return src;
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* dir (dirlen bytes of it; none: the current folder) joined with name into out[PATH_MAX]:
 * true when that is a regular file. */
static bool file_in(const char *dir, size_t dirlen, const char *name, char *out)
{
    int n = dirlen ? snprintf(out, PATH_MAX, "%.*s/%s", (int)dirlen, dir, name) : snprintf(out, PATH_MAX, "%s", name);
    return n > 0 && n < PATH_MAX && is_file(out);
}

/* The stdlib beside the running tool: the checkout's stdlib/ or an installed tree's, so that
 * imports work wherever the tools were moved with their tree. Into out[PATH_MAX]. */
static bool checkout_stdlib(char *out)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = 0;
    for (int up = 0; up < 3; up++) {
        /* build/cdslc -> stdlib/ in a checkout; PREFIX/bin/cdslc -> PREFIX/share/cdsl/stdlib */
        if (snprintf(out, PATH_MAX, "%s/stdlib", exe) < PATH_MAX && is_dir(out))
            return true;
        if (snprintf(out, PATH_MAX, "%s/share/cdsl/stdlib", exe) < PATH_MAX && is_dir(out))
            return true;
        slash = strrchr(exe, '/');
        if (!slash)
            break;
        *slash = 0;
    }
    return false;
}

/* The stdlib folder in use: the installed one, else the one beside the running tool. */
static bool stdlib_dir(char *out)
{
    if (snprintf(out, PATH_MAX, "%s", CDSL_STDLIB_DIR) < PATH_MAX && is_dir(out))
        return true;
    return checkout_stdlib(out);
}

/* name in the search path after the importing file's folder: each -I folder, each folder of
 * $CDSL_PATH, the installed stdlib, the stdlib beside the tool. Into out[PATH_MAX]. */
static bool search_path(const LoadOptions *opt, const char *name, char *out)
{
    for (int i = 0; opt && i < opt->ninclude_dirs; i++)
        if (file_in(opt->include_dirs[i], strlen(opt->include_dirs[i]), name, out))
            return true;
    for (const char *env = getenv("CDSL_PATH"); env && *env;) {
        size_t len = strcspn(env, ":");
        if (len && file_in(env, len, name, out))
            return true;
        env += len + (env[len] == ':');
    }
    char dir[PATH_MAX];
    if (file_in(CDSL_STDLIB_DIR, strlen(CDSL_STDLIB_DIR), name, out))
        return true;
    return checkout_stdlib(dir) && file_in(dir, strlen(dir), name, out);
}

static const char *find_import(Loader *ld, const char *from_path, const char *name)
{
    char *found = ld->found_buf;
    if (name[0] == '/')
        return is_file(name) ? name : NULL;
    const char *slash = strrchr(from_path, '/');
    if (file_in(from_path, slash ? (size_t)(slash - from_path) : 0, name, found) ||
        search_path(ld->opt, name, found))
        return arena_strdup(ld->arena, found);
    return NULL;
}

int cdsl_find_program(const char *name, char *out, size_t size)
{
    char file[PATH_MAX], found[PATH_MAX];
    if (!name || !out || !*name || strchr(name, '/'))
        return CDSL_ERR_USAGE;
    size_t len = strlen(name);
    bool suffixed = len > 5 && !strcmp(name + len - 5, ".cdsl");
    if (snprintf(file, sizeof file, "%s%s", name, suffixed ? "" : ".cdsl") >= (int)sizeof file ||
        !search_path(NULL, file, found) || strlen(found) >= size)
        return CDSL_ERR_USAGE;
    strcpy(out, found);
    return CDSL_OK;
}

int cdsl_stdlib_dir(char *out, size_t size)
{
    char dir[PATH_MAX];
    if (!out || !stdlib_dir(dir) || strlen(dir) >= size)
        return CDSL_ERR_USAGE;
    strcpy(out, dir);
    return CDSL_OK;
}

static bool load_file(Loader *ld, const char *path, Loc from);

static bool load_imports(Loader *ld, AstFile *file)
{
    for (int i = 0; i < file->ndecls; i++) {
        Decl *d = file->decls[i];
        if (d->kind != D_IMPORT)
            continue;
        const char *found = find_import(ld, file->src->path, d->name);
        if (!found) {
            diag_error(ld->diag, d->name_loc, "cannot find import '%s'", d->name);
            diag_note(ld->diag, (Loc){0}, "searched beside the importing file, the include folders (-I), $CDSL_PATH and the stdlib");
            return false;
        }
        if (!load_file(ld, found, d->name_loc))
            return false;
    }
    return true;
}

static bool report_cycle(Loader *ld, int at, Loc from)
{
    diag_error(ld->diag, from, "import cycle: '%s' imports itself", ld->shown[at]);
    for (int k = at + 1; k < ld->depth; k++)
        diag_note(ld->diag, ld->stack_at[k], "through this import");
    return false;
}

/* The file's real path, in the arena (the path as given when it has none). */
static const char *real_path(Loader *ld, const char *path)
{
    return arena_strdup(ld->arena, realpath(path, ld->real_buf) ? ld->real_buf : path);
}

/* Recursive, one level per import: the frame is small (no path buffers), so that a chain of
 * LOAD_MAX_FILES files fits a host thread's stack of 1 MiB with room to spare. */
static bool load_file(Loader *ld, const char *path, Loc from)
{
    const char *real = real_path(ld, path);
    for (int k = 0; k < ld->depth; k++)
        if (!strcmp(ld->stack[k], real))
            return report_cycle(ld, k, from);
    for (int k = 0; k < ld->unit->nfiles; k++)
        if (!strcmp(ld->real[k], real))
            return true;   /* loaded already: imports are idempotent */
    if (ld->unit->nfiles == LOAD_MAX_FILES || ld->depth == LOAD_MAX_FILES) {
        diag_error(ld->diag, from, "too many imported files (the limit is %d)", LOAD_MAX_FILES);
        return false;
    }
    Source *src = read_source(ld, path, from);
    if (!src)
        return false;
    AstFile *file = parse_file(ld->arena, ld->diag, src);
    if (!file)
        return false;
    ld->real[ld->unit->nfiles] = real;
    ld->unit->files[ld->unit->nfiles++] = file;
    ld->stack[ld->depth] = ld->real[ld->unit->nfiles - 1];
    ld->shown[ld->depth] = src->path;
    ld->stack_at[ld->depth++] = from;
    bool ok = load_imports(ld, file);
    ld->depth--;
    return ok;
}

AstUnit *load_unit(Arena *a, Diag *d, const char *path, const LoadOptions *opt)
{
    Loader *ld = ARENA_NEW(a, Loader);
    ld->arena = a;
    ld->diag = d;
    ld->opt = opt;
    ld->unit = ARENA_NEW(a, AstUnit);
    ld->unit->files = ARENA_ARRAY(a, AstFile *, LOAD_MAX_FILES);
    return load_file(ld, path, (Loc){0}) ? ld->unit : NULL;
}
