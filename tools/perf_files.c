/*
 * perf_files.c - cdsl-perf's results files (-F FILE): JSON (jansson) or CSV, by extension.
 *
 * Both hold what a later reader needs to trust or plot a figure: the tool and library version,
 * when and where it ran, the program, backend, devices and driver, the settings, and per row
 * and placement the time, algbw, busbw (null/empty on the sim: not measurements), the wrong
 * element count and the first wrong element (rank, output chunk, element, expected, got).
 * JSON is one object (format "cdsl-perf results 1"); CSV is one line per row and placement,
 * every line carrying the run's description, so that rows of several files can be joined.
 * The file is written beside its name and renamed over it, so that a reader never sees half.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"
#include "perf_types.h"

static const char *const placement_name[2] = {"out_of_place", "in_place"};

static const char *extension(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) ? dot + 1 : "";
}

bool perf_file_kind_ok(const char *path)
{
    return !strcmp(extension(path), "json") || !strcmp(extension(path), "csv");
}

static const char *cell_status(const PerfCell *c)
{
    if (!c->ran)
        return "not run";
    if (c->status == CDSL_ERR_VERIFY)
        return "wrong";
    if (c->status)
        return "failed";
    return c->checked ? "verified" : "not checked";
}

static char *driver_text(const PerfReport *r, char *buf, size_t len)
{
    int v = r->nranks ? r->devices[0].driver_version : 0;
    if (v)
        snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10);
    else
        snprintf(buf, len, "%s", "");
    return buf;
}

/* ---- JSON ---------------------------------------------------------------------------------------- */

/* The file is a jansson tree written by json_dumpf (two spaces a level, keys in order), so that
 * every string is escaped in one place. Text from the user or the machine (paths, the command
 * line, names) is first made safe for a terminal as every message shows it (cdsl_escape:
 * "\x1b" stands for ESC, a byte that is not UTF-8 for itself), which also makes it the valid
 * UTF-8 that JSON needs. Figures are rounded as the CSV prints them (the time to the
 * nanosecond, six significant digits of bandwidth), so fifteen digits print them without
 * noise. Out of memory anywhere makes a NULL that makes the root NULL (json_pack's "o"). */

static json_t *text(const char *s)
{
    if (!s)
        return json_null();
    size_t n = cdsl_escape(s, NULL, 0) + 1;
    char *shown = malloc(n);
    if (!shown)
        return NULL;
    cdsl_escape(s, shown, n);
    json_t *j = json_string(shown);
    free(shown);
    return j;
}

static json_t *figure(bool have, const char *fmt, double v)
{
    char printed[64];
    snprintf(printed, sizeof printed, fmt, v);
    return have && isfinite(v) ? json_real(strtod(printed, NULL)) : json_null();   /* JSON has no NaN */
}

static json_t *count_or_null(bool have, unsigned long long v)
{
    return have ? json_integer((json_int_t)v) : json_null();
}

static json_t *json_first_wrong(const PerfCell *c)
{
    if (!c->checked || !c->check.wrong)
        return json_null();
    return json_pack("{s:i, s:I, s:I, s:o, s:o, s:b}", "rank", c->check.rank, "chunk", (json_int_t)c->check.chunk,
                     "element", (json_int_t)c->check.element, "expected", text(c->check.expected), "got",
                     text(c->check.got), "never_written", c->check.never_written);
}

static json_t *json_cell(const PerfReport *r, const PerfCell *c)
{
    if (!c->ran)
        return json_null();
    bool timed = r->measured && (c->status == CDSL_OK || c->status == CDSL_ERR_VERIFY);
    bool counted = c->checked && (c->status == CDSL_OK || c->status == CDSL_ERR_VERIFY);
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:s}", "time_us", figure(timed, "%.3f", c->us), "algbw_gbs",
                     figure(timed, "%.6g", c->algbw), "busbw_gbs", figure(timed, "%.6g", c->busbw), "wrong",
                     count_or_null(counted, c->check.wrong), "first_wrong", json_first_wrong(c), "status",
                     cell_status(c));
}

/* Appends v to *list; either NULL (out of memory) makes *list NULL, freed. */
static void append(json_t **list, json_t *v)
{
    if (*list && json_array_append_new(*list, v)) {
        json_decref(*list);
        *list = NULL;
    } else if (!*list) {
        json_decref(v);
    }
}

static json_t *json_devices(const PerfReport *r)
{
    json_t *list = json_array();
    for (int q = 0; q < r->nranks; q++) {
        const cdsl_device_info *d = &r->devices[q];
        char pci[32];
        snprintf(pci, sizeof pci, "%04x:%02x:%02x", (unsigned)d->pci_domain, (unsigned)d->pci_bus,
                 (unsigned)d->pci_device);
        append(&list, json_pack("{s:i, s:i, s:o, s:s}", "rank", q, "device", d->device, "name", text(d->name), "pci",
                                pci));
    }
    return list;
}

static json_t *json_config(const PerfReport *r)
{
    json_t *o = json_pack("{s:I, s:I}", "minimum_bytes", (json_int_t)r->min_bytes, "maximum_bytes",
                          (json_int_t)r->max_bytes);
    if (r->step_factor > 1)
        json_object_set_new(o, "step_factor", json_integer((json_int_t)r->step_factor));
    else
        json_object_set_new(o, "step_bytes", json_integer((json_int_t)r->step_bytes));
    json_t *rest = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "warmup_iters", r->warmup, "warmup_runs", r->warmup_runs,
                             "iterations", r->iters,
                             "validation", r->check, "graph", r->graph, "blocking", r->blocking);
    if (!rest || json_object_update(o, rest)) {   /* jansson keeps the order keys were added in */
        json_decref(o);
        o = NULL;
    }
    json_decref(rest);
    return o;
}

static json_t *json_program(const PerfReport *r)
{
    return json_pack("{s:o, s:o, s:o, s:i, s:i, s:o}", "name", text(r->program), "file", text(r->file),
                     "collective", text(r->collective), "nranks", r->nranks, "chunks", r->chunks,
                     "in_place_unsupported", text(r->in_place_unsupported));
}

static json_t *json_rows(const PerfReport *r)
{
    json_t *list = json_array();
    for (int i = 0; i < r->nrows; i++) {
        const PerfRow *row = &r->rows[i];
        append(&list, json_pack("{s:I, s:I, s:s, s:o, s:i, s:o, s:o}", "size", (json_int_t)row->size, "count",
                                (json_int_t)row->count, "type", perf_type_name(row->dtype), "redop", text(r->redop),
                                "root", r->root, placement_name[0], json_cell(r, &row->cell[0]), placement_name[1],
                                json_cell(r, &row->cell[1])));
    }
    return list;
}

static json_t *json_command(const PerfReport *r)
{
    json_t *list = json_array();
    for (int i = 0; i < r->argc; i++)
        append(&list, text(r->argv[i]));
    return list;
}

static char *json_text(const PerfReport *r)
{
    char driver[32];
    json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:b, s:o, s:o, s:o, s:o, "
                          "s:{s:i, s:b}, s:{s:o}, s:i}",
                          "format", "cdsl-perf results 1", "tool", "cdsl-perf", "version", text(cdsl_version()),
                          "timestamp", text(r->timestamp), "host", text(r->host), "command", json_command(r),
                          "program", json_program(r), "backend", text(r->backend), "ranks_per_gpu",
                          r->ranks_per_gpu, "measured", r->measured, "driver",
                          text(*driver_text(r, driver, sizeof driver) ? driver : NULL), "devices", json_devices(r),
                          "config", json_config(r), "results", json_rows(r), "out_of_bounds", "count", r->errors,
                          "okay", r->errors == 0, "average_bus_bandwidth", "bandwidth",
                          figure(r->measured, "%.6g", r->avg_busbw), "exit", r->exit_status);
    char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(o);
    return s;
}

/* ---- CSV ------------------------------------------------------------------------------------------- */

/* A field, quoted when it holds a comma, a quote or a line break (RFC 4180). */
static void csv_field(FILE *f, const char *s, bool last)
{
    if (strpbrk(s, ",\"\r\n")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

static const char *const csv_columns[] = {
    "tool", "version", "timestamp", "host", "program", "collective", "file", "backend", "nranks", "ranks_per_gpu",
    "device", "driver", "measured", "size", "count", "type", "redop", "root", "placement", "time_us", "algbw_gbs",
    "busbw_gbs", "wrong", "first_wrong_rank", "first_wrong_chunk", "first_wrong_element", "first_wrong_expected",
    "first_wrong_got", "status",
};
enum { CSV_NCOLS = sizeof csv_columns / sizeof *csv_columns };

static void csv_line(FILE *f, const PerfReport *r, const PerfRow *row, int k)
{
    const PerfCell *c = &row->cell[k];
    bool timed = c->ran && r->measured && (c->status == CDSL_OK || c->status == CDSL_ERR_VERIFY);
    bool counted = c->ran && c->checked && (c->status == CDSL_OK || c->status == CDSL_ERR_VERIFY);
    bool first = counted && c->check.wrong;
    char num[16][64], driver[32];
    memset(num, 0, sizeof num);
    snprintf(num[0], 64, "%d", r->nranks);
    snprintf(num[1], 64, "%d", r->ranks_per_gpu);
    snprintf(num[2], 64, "%zu", row->size);
    snprintf(num[3], 64, "%zu", row->count);
    if (timed) {
        snprintf(num[4], 64, "%.3f", c->us);
        snprintf(num[5], 64, "%.6g", c->algbw);
        snprintf(num[6], 64, "%.6g", c->busbw);
    }
    if (counted)
        snprintf(num[7], 64, "%llu", c->check.wrong);
    if (first) {
        snprintf(num[8], 64, "%d", c->check.rank);
        snprintf(num[9], 64, "%zu", c->check.chunk);
        snprintf(num[10], 64, "%zu", c->check.element);
        snprintf(num[11], 64, "%.40s%s", c->check.got, c->check.never_written ? " (never written)" : "");
    }
    char root[16];
    snprintf(root, sizeof root, "%d", r->root);
    const char *v[CSV_NCOLS] = {
        "cdsl-perf", cdsl_version(), r->timestamp, r->host, r->program, r->collective, r->file, r->backend,
        num[0], num[1], r->nranks ? r->devices[0].name : "", driver_text(r, driver, sizeof driver),
        r->measured ? "yes" : "no", num[2], num[3], perf_type_name(row->dtype), r->redop, root,
        k ? "in-place" : "out-of-place", num[4], num[5], num[6], num[7], num[8], num[9], num[10],
        first ? c->check.expected : "", num[11], cell_status(c),
    };
    for (int i = 0; i < CSV_NCOLS; i++)
        csv_field(f, v[i], i == CSV_NCOLS - 1);
}

static void csv_write(FILE *f, const PerfReport *r)
{
    for (int i = 0; i < CSV_NCOLS; i++)
        csv_field(f, csv_columns[i], i == CSV_NCOLS - 1);
    for (int i = 0; i < r->nrows; i++)
        for (int k = 0; k < 2; k++)
            csv_line(f, r, &r->rows[i], k);
}

/* ---- the file ---------------------------------------------------------------------------------------- */

static int file_error(FILE *err, const char *path, const char *what)
{
    fprintf(err, "cdsl-perf: error: cannot %s the results file %s: %s\n", what, path, strerror(errno ? errno : EIO));
    return 2;
}

int perf_write_file(const PerfReport *r, const char *path, FILE *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return file_error(err, path, "write");
    }
    char *json = NULL;
    if (!strcmp(extension(path), "json") && !(json = json_text(r))) {
        errno = ENOMEM;
        return file_error(err, path, "write");
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(json);
        return file_error(err, path, "create");
    }
    if (json)
        fprintf(f, "%s\n", json);
    else
        csv_write(f, r);
    free(json);
    bool bad = fflush(f) != 0 || ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        errno = e;
        return file_error(err, path, "write");
    }
    return 0;
}
