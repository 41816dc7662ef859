/*
 * cli.h - what cdslc and cdslrun share on the command line: getopt_long's table for the options
 * that compile a program and the reading of their values, the program argument (a file, "-"
 * for standard input, or the name of a stdlib program), --list, and bad usage reported the
 * same way ("TOOL: error: ...", exit 2). Header-only, so that tools/ keeps one .c per tool;
 * cdsl-perf, whose options are nccl-tests', takes its --list and its advice on names from here.
 * The names of backends and flavours come from the library (cdsl_list_name), in help texts
 * through the placeholders of cli_help, so that no tool keeps a list of its own.
 *
 * Conventions are getopt_long's: "-n8", "-n 8", "--nranks 8", "--nranks=8", options before or
 * after the program, "--" ends the options, "-" is standard input. A long option may be
 * shortened to any prefix that names one option only.
 */
#ifndef CDSL_CLI_H
#define CDSL_CLI_H

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cdsl.h"

#define CLI_TEXT_OF(x) #x
#define CLI_NUMBER_TEXT(x) CLI_TEXT_OF(x)

enum {
    CLI_MAX_LIST = 256,
    CLI_MAX_STDIN = 64 << 20,   /* the library's limit on one file */
    /* getopt_long codes of the options without a short form (after every char). */
    CLI_PROGRAM = 256, CLI_COLOR, CLI_CHECK_MEMORY, CLI_CHECK_STEPS, CLI_LIST, CLI_VERSION, CLI_HELP, CLI_IN_PLACE,
    CLI_TOOL_FIRST = 300        /* each tool's own codes from here */
};

/* The options every tool that compiles takes; a tool's table starts with these. */
#define CLI_COMPILE_SHORT "n:D:I:W:f:wh"
#define CLI_COMPILE_LONG                                                                                \
    {"nranks", required_argument, NULL, 'n'}, {"define", required_argument, NULL, 'D'},               \
        {"program", required_argument, NULL, CLI_PROGRAM}, {"color", required_argument, NULL, CLI_COLOR}, \
        {"check-memory", required_argument, NULL, CLI_CHECK_MEMORY},                                    \
        {"check-steps", required_argument, NULL, CLI_CHECK_STEPS}, {"list", no_argument, NULL, CLI_LIST}, \
        {"in-place", no_argument, NULL, CLI_IN_PLACE},                                                  \
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, CLI_VERSION}

/* The environment, for both tools' --help: every variable the tools and the library read,
 * briefly (docs/environment.md has each one's meaning and default). */
#define CLI_ENVIRONMENT_HELP                                                                              \
    "environment (docs/environment.md says what each means and its default):\n"                          \
    "  CDSL_PATH            folders for imports and for programs named without a path\n"                 \
    "  CDSL_CACHE_DIR       the JIT cache (else $XDG_CACHE_HOME/cdsl, else $HOME/.cache/cdsl;\n"          \
    "                       used only when yours and not writable by others)\n"                           \
    "  CDSL_NO_CACHE=1, CDSL_CACHE_MAXSIZE (else CUDA_CACHE_MAXSIZE; 256 MiB), CDSL_CACHE_VERBOSE=1\n"     \
    "  CDSL_DEBUG=INFO|TRACE, CDSL_DEBUG_FILE   backend, placement, NVRTC, cache and step times\n"       \
    "  CDSL_PROGRESS_AFTER  seconds before long work shows progress on a terminal (1)\n"                 \
    "  NO_COLOR             no colour in diagnostics\n"                                                   \
    "  CUDA_HOME            a CUDA toolkit to find NVRTC in (after the library path)\n"                   \
    "  CDSL_CE=auto|on|off, CDSL_CE_MIN_BYTES, CDSL_CE_LANES, CDSL_CE_SYNC=memops|events\n"              \
    "                       p2p's copy-engine path for programs without reductions\n"                    \
    "  CDSL_NVLS, NCCL_NVLS_ENABLE, NVSHMEM_DISABLE_NVLS, TORCH_SYMM_MEM_DISABLE_MULTICAST\n"             \
    "                       any of them set to off refuses the nvls backend\n"                           \
    "  CDSL_GPU_BLOCKS, CDSL_GPU_THREADS, CDSL_NO_GRAPH=1   the GPU backends' launches\n"                 \
    "  CDSL_ENGINE, CDSL_TIMEOUT, CDSL_NCCL_LIB   one process per rank (the library's per-rank API,\n"   \
    "                       python3 -m cdsl.selftest; docs/multiprocess.md), not the tools\n"

/* What the shared options set. */
typedef struct CliCompile {
    cdsl_compile_opts opts;
    const char *defines[CLI_MAX_LIST];
    const char *includes[CLI_MAX_LIST];
    bool have_n;
    const char *n_text;         /* -n as written, for messages */
    const char *input;          /* the program argument as typed; NULL: none yet */
    bool by_name;               /* input named no file: opts.path is the stdlib program found */
    char found[PATH_MAX];
    char *stdin_text;           /* "-": standard input, read whole (free it) */
    bool list, help, version;
} CliCompile;

/* "TOOL: error: <fmt with arg>" and a pointer to --help, on stderr; returns 2 (bad usage).
 * arg is the user's text: shown escaped (cdsl_escape), cut at 1 KiB. */
static inline int cli_usage(const char *tool, const char *fmt, const char *arg)
{
    char shown[1024];
    cdsl_escape(arg, shown, sizeof shown);
    fprintf(stderr, "%s: error: ", tool);
    fprintf(stderr, fmt, shown);
    fprintf(stderr, "\n(see %s --help)\n", tool);
    return 2;
}

/* The names of one of the library's lists joined for a sentence: "sim, p2p or nvls" with
 * sep ", " and last " or ". buf holds size bytes; returns buf. */
static inline const char *cli_names(cdsl_list list, const char *sep, const char *last, char *buf, size_t size)
{
    size_t len = 0;
    const char *name;
    buf[0] = 0;
    for (int i = 0; (name = cdsl_list_name(list, i)) && len < size; i++) {
        int n = snprintf(buf + len, size - len, "%s%s", i == 0 ? "" : cdsl_list_name(list, i + 1) ? sep : last, name);
        len += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

/* "TOOL: error: WHAT a, b or c, not 'ARG'": a name that is not in one of the library's lists. */
static inline int cli_usage_names(const char *tool, const char *what, cdsl_list list, const char *arg)
{
    char names[256], fmt[512];
    snprintf(fmt, sizeof fmt, "%s %s, not '%%s'", what, cli_names(list, ", ", " or ", names, sizeof names));
    return cli_usage(tool, fmt, arg);
}

/* Whether name is one of the library's list. */
static inline bool cli_named(cdsl_list list, const char *name)
{
    const char *n;
    for (int i = 0; (n = cdsl_list_name(list, i)); i++)
        if (!strcmp(n, name))
            return true;
    return false;
}

/* A help text on out, its placeholders replaced by the library's names: @BACKENDS@ by
 * "sim, p2p or nvls", @FLAVOURS@ by "p2p|nvls". */
static inline void cli_help(const char *text, FILE *out)
{
    static const struct {
        const char *mark;
        cdsl_list list;
        const char *sep, *last;
    } marks[] = {{"@BACKENDS@", CDSL_LIST_BACKENDS, ", ", " or "}, {"@FLAVOURS@", CDSL_LIST_FLAVOURS, "|", "|"}};
    char names[256];
    while (*text) {
        size_t k = 0, n = sizeof marks / sizeof marks[0];
        while (k < n && strncmp(text, marks[k].mark, strlen(marks[k].mark)))
            k++;
        if (k < n) {
            fputs(cli_names(marks[k].list, marks[k].sep, marks[k].last, names, sizeof names), out);
            text += strlen(marks[k].mark);
        } else {
            fputc(*text++, out);
        }
    }
}

static inline void cli_defaults(CliCompile *c)
{
    memset(c, 0, sizeof *c);
    c->opts.color = -1;
    c->opts.progress = -1;
    c->opts.stop_after = CDSL_STAGE_CHECK;
}

static inline bool cli_parse_long(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || isspace((unsigned char)*s) || *s == '+' || *end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* "512M", "4G", "65536": a positive count, with an optional K, M or G (powers of 1024). */
static inline bool cli_parse_count(const char *s, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (!isdigit((unsigned char)*s) || *end || errno || v == 0 || v > (ULLONG_MAX >> shift))
        return false;
    *out = v << shift;
    return true;
}

/* NAME=INTEGER, as the language writes both: an identifier, then decimal or 0x hex with an
 * optional minus. Whether the program has such a parameter is the library's to say. */
static inline bool cli_define_ok(const char *d)
{
    const char *eq = strchr(d, '=');
    if (!eq || eq == d || !(isalpha((unsigned char)*d) || *d == '_'))
        return false;
    for (const char *c = d; c < eq; c++)
        if (!isalnum((unsigned char)*c) && *c != '_')
            return false;
    const char *v = eq + 1 + (eq[1] == '-');
    bool hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
    const char *digits = hex ? v + 2 : v;
    if (!*digits)
        return false;
    for (const char *c = digits; *c; c++)
        if (!(hex ? isxdigit((unsigned char)*c) : isdigit((unsigned char)*c)))
            return false;
    errno = 0;
    (void)strtoll(eq + 1, NULL, hex ? 16 : 10);
    return errno == 0;
}

static inline int cli_add(const char *tool, const char **list, int *n, const char *v, const char *flag)
{
    if (*n == CLI_MAX_LIST)
        return cli_usage(tool, "too many %s options", flag);
    list[(*n)++] = v;
    return 0;
}

/* -W...: a warning family on or off, all of them, or warnings as errors (gcc's spellings). */
static inline int cli_warning_option(CliCompile *c, const char *tool, const char *v)
{
    static const struct { const char *name; unsigned bit; } families[] = {
        {"unused", CDSL_WARN_UNUSED},
        {"redundant-barrier", CDSL_WARN_REDUNDANT_BARRIER},
        {"stronger-order", CDSL_WARN_STRONGER_ORDER},
        {"writes-input", CDSL_WARN_WRITES_INPUT},
    };
    bool no = !strncmp(v, "no-", 3);
    const char *name = no ? v + 3 : v;
    if (!strcmp(name, "error")) {
        c->opts.warnings_as_errors = !no;
        return 0;
    }
    if (!strcmp(v, "all")) {
        c->opts.warnings_off = 0;
        return 0;
    }
    for (size_t i = 0; i < sizeof families / sizeof *families; i++)
        if (!strcmp(name, families[i].name)) {
            c->opts.warnings_off = no ? c->opts.warnings_off | families[i].bit : c->opts.warnings_off & ~families[i].bit;
            return 0;
        }
    char typed[256];
    snprintf(typed, sizeof typed, "-W%s", v);
    return cli_usage(tool, "unknown warning option '%s' (there are -Wunused, -Wredundant-barrier, -Wstronger-order, "
                     "-Wwrites-input, -Wall, -Werror and their -Wno- forms)", typed);
}

/* -f...: -fdiagnostics-format=text|json. */
static inline int cli_f_option(CliCompile *c, const char *tool, const char *v)
{
    const char *key = "diagnostics-format=";
    char typed[256];
    snprintf(typed, sizeof typed, "-f%s", v);
    if (strncmp(v, key, strlen(key)))
        return cli_usage(tool, "unknown option '%s'", typed);
    const char *format = v + strlen(key);
    if (!strcmp(format, "json"))
        c->opts.diag_format = CDSL_DIAG_JSON;
    else if (!strcmp(format, "text"))
        c->opts.diag_format = CDSL_DIAG_TEXT;
    else
        return cli_usage(tool, "-fdiagnostics-format is text or json, not '%s'", format);
    return 0;
}

/* One of the shared options: 0 when taken, 2 after a usage message, -1 when it is not one. */
static inline int cli_compile_option(CliCompile *c, const char *tool, int opt, const char *v)
{
    long long n;
    unsigned long long u;
    switch (opt) {
    case 'n':
        c->have_n = true;
        c->n_text = v;
        if (!cli_parse_long(v, INT_MIN, INT_MAX, &n))
            return cli_usage(tool, "-n expects a number of ranks (1 .. " CLI_NUMBER_TEXT(CDSL_MAX_RANKS) "), not '%s'", v);
        c->opts.nranks = (int)n;
        return 0;
    case 'D':
        if (!cli_define_ok(v))
            return cli_usage(tool, "-D %s: expected NAME=INTEGER (e.g. -D chunks=4)", v);
        return cli_add(tool, c->defines, &c->opts.ndefines, v, "-D");
    case 'I': return cli_add(tool, c->includes, &c->opts.ninclude_dirs, v, "-I");
    case CLI_PROGRAM: c->opts.program = v; return 0;
    case CLI_COLOR:
        if (strcmp(v, "auto") && strcmp(v, "always") && strcmp(v, "never"))
            return cli_usage(tool, "--color is auto, always or never, not '%s'", v);
        c->opts.color = !strcmp(v, "auto") ? -1 : !strcmp(v, "always");
        return 0;
    case CLI_CHECK_MEMORY:
        if (!cli_parse_count(v, &u) || u > SIZE_MAX)
            return cli_usage(tool, "--check-memory expects a size such as 512M or 4G, not '%s'", v);
        c->opts.check_memory = (size_t)u;
        return 0;
    case CLI_CHECK_STEPS:
        if (!cli_parse_count(v, &c->opts.check_steps))
            return cli_usage(tool, "--check-steps expects a positive number, not '%s'", v);
        return 0;
    case 'W': return cli_warning_option(c, tool, v);
    case 'w': c->opts.warnings_off = CDSL_WARN_ALL; return 0;
    case 'f': return cli_f_option(c, tool, v);
    case CLI_IN_PLACE: c->opts.in_place = 1; return 0;
    case CLI_LIST: c->list = true; return 0;
    case 'h': c->help = true; return 0;
    case CLI_VERSION: c->version = true; return 0;
    }
    return -1;
}

/* The program argument; "-" is standard input. */
static inline int cli_input(CliCompile *c, const char *tool, const char *arg)
{
    if (c->input)
        return cli_usage(tool, "more than one input file ('%s')", arg);
    c->input = arg;
    return 0;
}

/* What getopt_long could not take: an unknown option, or one without its value. The option as
 * typed is argv[optind - 1] (getopt_long has moved past it). */
static inline int cli_bad_option(const char *tool, int opt, char **argv)
{
    const char *typed = optind > 0 ? argv[optind - 1] : "";
    char shortopt[3] = {'-', (char)optopt, 0};
    if (opt == ':')
        return cli_usage(tool, "%s needs a value", optopt && optopt < 256 && typed[1] != '-' ? shortopt : typed);
    if (optopt && optopt < 256 && typed[1] != '-')
        return cli_usage(tool, "unknown option '%s'", shortopt);
    return cli_usage(tool, "unknown option '%s'", typed);
}

/* An option given an empty value ("--arch=", "-o ''"): named as typed, without the "=". */
static inline int cli_empty_value(const char *tool, const char *typed)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(typed, "="), typed);
    return cli_usage(tool, "%s needs a value", name);
}

/* Standard input, read whole, as the program's text (named "<stdin>"; imports are looked up
 * from the current folder). */
static inline int cli_read_stdin(CliCompile *c, const char *tool)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    for (size_t got = 1; buf && got;) {
        if (len == cap && cap <= CLI_MAX_STDIN) {
            char *more = realloc(buf, cap * 2 + 1);
            if (!more)
                break;
            buf = more;
            cap *= 2;
        }
        got = len < cap ? fread(buf + len, 1, cap - len, stdin) : 0;
        len += got;
    }
    if (!buf || ferror(stdin) || len > CLI_MAX_STDIN) {
        fprintf(stderr, "%s: error: cannot read the program from standard input: %s\n", tool,
                !buf ? strerror(ENOMEM) : ferror(stdin) ? strerror(errno ? errno : EIO) : "larger than 64 MiB");
        free(buf);
        return 3;
    }
    buf[len] = 0;
    if (memchr(buf, 0, len)) {
        fprintf(stderr, "%s: error: <stdin>: a NUL byte at offset %zu; a program is text\n", tool,
                (size_t)((char *)memchr(buf, 0, len) - buf));
        free(buf);
        return 1;
    }
    c->stdin_text = buf;
    c->opts.source = buf;
    c->opts.path = "<stdin>";
    return 0;
}

/* The program argument made into opts.path (or opts.source): a file as named; "-", standard
 * input; a name that is no file and has no '/', the stdlib program of that name
 * (cdsl_find_program). A name found nowhere stays as typed: the library says it cannot read it. */
static inline int cli_resolve_input(CliCompile *c, const char *tool)
{
    struct stat st;
    if (!strcmp(c->input, "-"))
        return cli_read_stdin(c, tool);
    c->opts.path = c->input;
    if (stat(c->input, &st) != 0 && !strchr(c->input, '/') &&
        cdsl_find_program(c->input, c->found, sizeof c->found) == CDSL_OK) {
        c->opts.path = c->found;
        c->by_name = true;
    }
    c->opts.defines = c->defines;
    c->opts.include_dirs = c->includes;
    return 0;
}

/* Whether path names the file st describes: the same device and inode, as gcc compares an
 * output with its input (so also through another spelling or a hard link). */
static inline bool cli_same_file(const char *path, const struct stat *st)
{
    struct stat other;
    return path && stat(path, &other) == 0 && other.st_dev == st->st_dev && other.st_ino == st->st_ino;
}

/* After a failed compile of the program argument input, not found by name: when it is a bare
 * name that is no file either, where the names are (every tool that takes one has --list). */
static inline void cli_name_advice(const char *tool, const char *input)
{
    struct stat st;
    char shown[1024];
    if (!input || strchr(input, '/') || stat(input, &st) == 0)
        return;
    cdsl_escape(input, shown, sizeof shown);
    fprintf(stderr, "%s: note: '%s' is not a stdlib program either (%s --list shows them)\n", tool, shown, tool);
}

static inline void cli_input_advice(const CliCompile *c, const char *tool)
{
    if (!c->stdin_text && !c->by_name)
        cli_name_advice(tool, c->input);
}

/* Every argument: the shared options here, the tool's own through own(arg, option, value)
 * (0: taken; otherwise the exit status after a message), the program argument. own_short
 * holds the tool's own short options. 0, or 2 after a usage message. */
static inline int cli_parse(CliCompile *c, const char *tool, int argc, char **argv, const char *own_short,
                            const struct option *longs, int (*own)(void *arg, int opt, const char *v), void *arg)
{
    char shorts[64];
    snprintf(shorts, sizeof shorts, "-:%s%s", CLI_COMPILE_SHORT, own_short);
    int opt, rc = 0;
    opterr = 0;
    while (!rc && (opt = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        if (opt == 1)
            rc = cli_input(c, tool, optarg);
        else if (opt == '?' || opt == ':')
            rc = cli_bad_option(tool, opt, argv);
        else if (optarg && !*optarg)
            rc = cli_empty_value(tool, argv[optind - 1]);
        else if ((rc = cli_compile_option(c, tool, opt, optarg)) < 0)
            rc = own(arg, opt, optarg);
    }
    for (int i = optind; !rc && i < argc; i++)   /* after "--" */
        rc = cli_input(c, tool, argv[i]);
    return rc;
}

static inline int cli_list(const char *tool);

/* --help, --version or --list, when one was asked for: done, with *status the exit status. */
static inline bool cli_answered(const CliCompile *c, const char *tool, const char *usage, int *status)
{
    *status = 0;
    if (c->help) {
        cli_help(usage, stdout);
        fputs("\n" CLI_ENVIRONMENT_HELP, stdout);
    } else if (c->version) {
        printf("%s %s\n", tool, cdsl_version());
    } else if (c->list) {
        *status = cli_list(tool);
    }
    return c->help || c->version || c->list;
}

/* ---- --list: the stdlib's programs, their collectives, and the first line of each file's
 * first comment. ---- */

static inline int cli_name_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What the file at path does: the first sentence of its first comment (the "//" lines it
 * starts with, joined), or "" when it starts with code. */
static inline void cli_first_comment(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    char line[512];
    size_t len = 0;
    *out = 0;
    while (f && fgets(line, sizeof line, f) && len + 1 < size) {
        const char *t = line + strspn(line, " \t");
        if (strncmp(t, "//", 2))
            break;   /* code, or the blank line after the comment */
        t += 2 + strspn(t + 2, " \t");
        len += (size_t)snprintf(out + len, size - len, "%s%.*s", len ? " " : "", (int)strcspn(t, "\r\n"), t);
    }
    if (f)
        fclose(f);
    char *stop = strstr(out, ". ");
    if (stop)
        stop[1] = 0;
}

/* One line per program: NAME  COLLECTIVE  DESCRIPTION. */
static inline void cli_list_one(const char *dir, const char *file, FILE *quiet)
{
    char path[PATH_MAX + 256], about[256], name[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(name, sizeof name, "%.*s", (int)(strlen(file) - 5), file);
    cdsl_compile_opts o = {.path = path, .nranks = 1, .stop_after = CDSL_STAGE_PARSE, .diag = quiet};
    cdsl_program *p = NULL;
    cdsl_compile(&o, &p);
    const char *coll = cdsl_program_collective(p);
    cli_first_comment(path, about, sizeof about);
    char shown_name[256], shown_about[512];
    cdsl_escape(name, shown_name, sizeof shown_name);
    cdsl_escape(about, shown_about, sizeof shown_about);
    printf("%-24s %-14s %s\n", shown_name, coll ? coll : "?", shown_about);
    cdsl_program_destroy(p);
}

static inline int cli_list(const char *tool)
{
    char dir[PATH_MAX];
    if (cdsl_stdlib_dir(dir, sizeof dir) != CDSL_OK) {
        fprintf(stderr, "%s: error: no stdlib folder found (installed, or beside %s)\n", tool, tool);
        return 3;
    }
    DIR *d = opendir(dir);
    char *names[CLI_MAX_LIST];
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) && n < CLI_MAX_LIST;) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".cdsl") && (names[n] = strdup(e->d_name)))
            n++;
    }
    if (d)
        closedir(d);
    qsort(names, (size_t)n, sizeof *names, cli_name_order);
    FILE *quiet = fopen("/dev/null", "w");
    for (int i = 0; i < n; i++) {
        cli_list_one(dir, names[i], quiet);
        free(names[i]);
    }
    if (quiet)
        fclose(quiet);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 3;
}

#endif
