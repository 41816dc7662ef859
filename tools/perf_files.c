/*
 * perf_files.c - cdsl-perf's results files (-F FILE): JSON (cJSON) or CSV, by extension.
 *
 * Both hold what a later reader needs to trust or plot a figure: the tool and library version,
 * when and where it ran, the program, backend, devices and driver, the settings, and per row
 * and placement the time, algbw, busbw (null/empty on the sim: not measurements), the wrong
 * element count and the first wrong element (rank, output chunk, element, expected, got).
 * JSON is one object (format "cdsl-perf results 1"); CSV is one line per row and placement,
 * every line carrying the run's description, so that rows of several files can be joined.
 * The file is written beside its name and renamed over it, so that a reader never sees half.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

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

static cJSON *json_number_or_null(bool have, double v)
{
    return have ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *json_first_wrong(const PerfCell *c)
{
    if (!c->checked || !c->check.wrong)
        return cJSON_CreateNull();
    cJSON *w = cJSON_CreateObject();
    cJSON_AddNumberToObject(w, "rank", c->check.rank);
    cJSON_AddNumberToObject(w, "chunk", (double)c->check.chunk);
    cJSON_AddNumberToObject(w, "element", (double)c->check.element);
    cJSON_AddStringToObject(w, "expected", c->check.expected);
    cJSON_AddStringToObject(w, "got", c->check.got);
    cJSON_AddBoolToObject(w, "never_written", c->check.never_written);
    return w;
}

static cJSON *json_cell(const PerfReport *r, const PerfCell *c)
{
    if (!c->ran)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    bool timed = r->measured && (c->status == CDSL_OK || c->status == CDSL_ERR_VERIFY);
    cJSON_AddItemToObject(o, "time_us", json_number_or_null(timed, c->us));
    cJSON_AddItemToObject(o, "algbw_gbs", json_number_or_null(timed, c->algbw));
    cJSON_AddItemToObject(o, "busbw_gbs", json_number_or_null(timed, c->busbw));
    bool counted = c->checked && (c->status == CDSL_OK || c->status == CDSL_ERR_VERIFY);
    cJSON_AddItemToObject(o, "wrong", json_number_or_null(counted, (double)c->check.wrong));
    cJSON_AddItemToObject(o, "first_wrong", json_first_wrong(c));
    cJSON_AddStringToObject(o, "status", cell_status(c));
    return o;
}

static cJSON *json_devices(const PerfReport *r)
{
    cJSON *list = cJSON_CreateArray();
    for (int q = 0; q < r->nranks; q++) {
        const cdsl_device_info *d = &r->devices[q];
        char pci[32];
        snprintf(pci, sizeof pci, "%04x:%02x:%02x", (unsigned)d->pci_domain, (unsigned)d->pci_bus,
                 (unsigned)d->pci_device);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "rank", q);
        cJSON_AddNumberToObject(o, "device", d->device);
        cJSON_AddStringToObject(o, "name", d->name);
        cJSON_AddStringToObject(o, "pci", pci);
        cJSON_AddItemToArray(list, o);
    }
    return list;
}

static cJSON *json_config(const PerfReport *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "minimum_bytes", (double)r->min_bytes);
    cJSON_AddNumberToObject(o, "maximum_bytes", (double)r->max_bytes);
    if (r->step_factor > 1)
        cJSON_AddNumberToObject(o, "step_factor", (double)r->step_factor);
    else
        cJSON_AddNumberToObject(o, "step_bytes", (double)r->step_bytes);
    cJSON_AddNumberToObject(o, "warmup_iters", r->warmup);
    cJSON_AddNumberToObject(o, "iterations", r->iters);
    cJSON_AddNumberToObject(o, "validation", r->check);
    cJSON_AddNumberToObject(o, "graph", r->graph);
    cJSON_AddNumberToObject(o, "blocking", r->blocking);
    return o;
}

static cJSON *json_program(const PerfReport *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", r->program);
    cJSON_AddStringToObject(o, "file", r->file);
    cJSON_AddStringToObject(o, "collective", r->collective);
    cJSON_AddNumberToObject(o, "nranks", r->nranks);
    cJSON_AddNumberToObject(o, "chunks", r->chunks);
    cJSON_AddItemToObject(o, "in_place_unsupported",
                          r->in_place_unsupported ? cJSON_CreateString(r->in_place_unsupported) : cJSON_CreateNull());
    return o;
}

static cJSON *json_rows(const PerfReport *r)
{
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; i < r->nrows; i++) {
        const PerfRow *row = &r->rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "size", (double)row->size);
        cJSON_AddNumberToObject(o, "count", (double)row->count);
        cJSON_AddStringToObject(o, "type", perf_type_name(row->dtype));
        cJSON_AddStringToObject(o, "redop", r->redop);
        cJSON_AddNumberToObject(o, "root", -1);
        for (int k = 0; k < 2; k++)
            cJSON_AddItemToObject(o, placement_name[k], json_cell(r, &row->cell[k]));
        cJSON_AddItemToArray(list, o);
    }
    return list;
}

static char *json_text(const PerfReport *r)
{
    char driver[32];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", "cdsl-perf results 1");
    cJSON_AddStringToObject(o, "tool", "cdsl-perf");
    cJSON_AddStringToObject(o, "version", cdsl_version());
    cJSON_AddStringToObject(o, "timestamp", r->timestamp);
    cJSON_AddStringToObject(o, "host", r->host);
    cJSON *argv = cJSON_CreateArray();
    for (int i = 0; i < r->argc; i++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(r->argv[i]));
    cJSON_AddItemToObject(o, "command", argv);
    cJSON_AddItemToObject(o, "program", json_program(r));
    cJSON_AddStringToObject(o, "backend", r->backend);
    cJSON_AddNumberToObject(o, "ranks_per_gpu", r->ranks_per_gpu);
    cJSON_AddBoolToObject(o, "measured", r->measured);
    cJSON_AddItemToObject(o, "driver", *driver_text(r, driver, sizeof driver) ? cJSON_CreateString(driver) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "devices", json_devices(r));
    cJSON_AddItemToObject(o, "config", json_config(r));
    cJSON_AddItemToObject(o, "results", json_rows(r));
    cJSON *oob = cJSON_AddObjectToObject(o, "out_of_bounds");
    cJSON_AddNumberToObject(oob, "count", r->errors);
    cJSON_AddBoolToObject(oob, "okay", r->errors == 0);
    cJSON *bw = cJSON_AddObjectToObject(o, "average_bus_bandwidth");
    cJSON_AddItemToObject(bw, "bandwidth", json_number_or_null(r->measured, r->avg_busbw));
    cJSON_AddNumberToObject(o, "exit", r->exit_status);
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    return text;
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
    const char *v[CSV_NCOLS] = {
        "cdsl-perf", cdsl_version(), r->timestamp, r->host, r->program, r->collective, r->file, r->backend,
        num[0], num[1], r->nranks ? r->devices[0].name : "", driver_text(r, driver, sizeof driver),
        r->measured ? "yes" : "no", num[2], num[3], perf_type_name(row->dtype), r->redop, "-1",
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
