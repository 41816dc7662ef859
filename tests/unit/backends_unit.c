/*
 * backends_unit.c - the registry of backends and engines (runtime/engines/backends.c) against what it
 * promises, without a GPU.
 *
 * Every row is found by its name and by its public enum value in its own world, and the
 * public functions (cdsl_backend_name/parse, cdsl_engine_name/parse, cdsl_list_name) give the
 * same answers as the rows; a row has the ops of its world and no other; a row with device
 * code names a device header the library embeds (what NVRTC gets) and is its own flavour;
 * "auto" tries the documented order (cdsl.h: p2p, else sim; nccl, ipc, else sim) and always
 * ends at a row that needs nothing of the machine. A row added without one of these breaks
 * here rather than in a tool's message.
 */
#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "emit.h"

static int failures;

static void expect(const char *what, int ok)
{
    printf(ok ? "[PASS] %s\n" : "[FAIL] %s\n", what);
    failures += !ok;
}

static const char *name_of(RtWorld w, int id)
{
    return w == RT_ALL_RANKS ? cdsl_backend_name((cdsl_backend)id) : cdsl_engine_name((cdsl_engine)id);
}

static int parse(RtWorld w, const char *name, int *id)
{
    cdsl_backend b;
    cdsl_engine e;
    int st = w == RT_ALL_RANKS ? cdsl_backend_parse(name, &b) : cdsl_engine_parse(name, &e);
    *id = w == RT_ALL_RANKS ? (int)b : (int)e;
    return st;
}

/* Every row of world w: found, named and parsed the same everywhere, listed in order. */
static void check_world(RtWorld w, cdsl_list list, const char *label)
{
    int rows = 0, found = 1, named = 1, listed = 1, ops = 1, unique = 1;
    const RtBackend *b;
    for (int i = 0; (b = rt_backend_at(w, i)); i++, rows++) {
        const char *name = name_of(w, b->id);
        int id = -99;
        found &= rt_backend_find(w, b->name) == b && rt_backend_of(w, b->id) == b;
        named &= !strcmp(name, b->name) && parse(w, b->name, &id) == CDSL_OK && id == b->id;
        listed &= cdsl_list_name(list, i) && !strcmp(cdsl_list_name(list, i), b->name);
        ops &= w == RT_ALL_RANKS ? b->ops && !b->rank_ops : b->rank_ops && !b->ops;
        for (int k = 0; k < i; k++)
            unique &= strcmp(rt_backend_at(w, k)->name, b->name) && rt_backend_at(w, k)->id != b->id;
    }
    char what[160];
    snprintf(what, sizeof what, "%s: %d rows, each found by name and by value", label, rows);
    expect(what, rows > 0 && found);
    snprintf(what, sizeof what, "%s: the public name and parse functions read the rows", label);
    expect(what, named);
    snprintf(what, sizeof what, "%s: cdsl_list_name lists the rows in order, then NULL", label);
    expect(what, listed && !cdsl_list_name(list, rows));
    snprintf(what, sizeof what, "%s: each row has the ops of its world only", label);
    expect(what, ops);
    snprintf(what, sizeof what, "%s: names and values are unique", label);
    expect(what, unique);
    int id = 7;
    snprintf(what, sizeof what, "%s: unknown names and values are refused", label);
    expect(what, !rt_backend_find(w, "cpu") && !rt_backend_find(w, NULL) && !rt_backend_of(w, 99) &&
                     parse(w, "cpu", &id) == CDSL_ERR_USAGE);
}

/* The names "auto" tries in world w, joined by spaces; and whether the last needs nothing. */
static void auto_order(RtWorld w, char *out, size_t size, int *ends_free)
{
    const RtBackend *b = NULL;
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; (b = rt_backend_auto(w, i)); i++) {
        len += (size_t)snprintf(out + len, size - len, "%s%s", i ? " " : "", b->name);
        *ends_free = b->flags == 0 || b->flags == RT_ONE_HOST;
    }
}

static void check_flavours(void)
{
    int n = 0, ok = 1, embedded = 1, gpu = 1;
    const RtBackend *f;
    for (; (f = rt_flavour_at(n)); n++) {
        ok &= f->world == RT_ALL_RANKS && f->flavour == f->id && rt_flavour_of(f->id) == f &&
              cdsl_list_name(CDSL_LIST_FLAVOURS, n) && !strcmp(cdsl_list_name(CDSL_LIST_FLAVOURS, n), f->name);
        embedded &= emit_header(f->device_header, strlen(f->device_header)) != NULL;
        gpu &= (f->flags & RT_GPU) != 0;
    }
    ok &= n > 0 && !cdsl_list_name(CDSL_LIST_FLAVOURS, n);
    expect("flavours: each is a backend whose device code is its own, listed in order", ok);
    expect("flavours: each device header is one the library embeds", embedded);
    expect("flavours: each runs on GPUs", gpu);
    const RtBackend *b;
    int none = 1;
    for (int i = 0; (b = rt_backend_at(RT_ALL_RANKS, i)); i++)
        none &= b->device_header ? 1 : b->flavour == RT_FLAVOUR_NONE && !rt_flavour_of(b->id);
    expect("a backend without a device header is no flavour", none);
}

int main(void)
{
    check_world(RT_ALL_RANKS, CDSL_LIST_BACKENDS, "backends");
    check_world(RT_PER_RANK, CDSL_LIST_ENGINES, "engines");
    check_flavours();

    char order[128];
    int free_end = 0;
    auto_order(RT_ALL_RANKS, order, sizeof order, &free_end);
    expect("backends: auto tries p2p, then sim", !strcmp(order, "p2p sim") && free_end);
    free_end = 0;
    auto_order(RT_PER_RANK, order, sizeof order, &free_end);
    expect("engines: auto takes nccl, ipc, then sim", !strcmp(order, "nccl ipc sim") && free_end);

    cdsl_engine e = CDSL_ENGINE_SIM;
    expect("engines: \"auto\" parses and is named, but is no row",
           cdsl_engine_parse("auto", &e) == CDSL_OK && e == CDSL_ENGINE_AUTO &&
               !strcmp(cdsl_engine_name(CDSL_ENGINE_AUTO), "auto") && !rt_backend_find(RT_PER_RANK, "auto"));
    expect("cdsl_list_name: an unknown list and a negative index name nothing",
           !cdsl_list_name((cdsl_list)99, 0) && !cdsl_list_name(CDSL_LIST_BACKENDS, -1));

    char buf[64], tiny[8];
    expect("rt_backend_names joins for a sentence",
           !strcmp(rt_backend_names(CDSL_LIST_BACKENDS, " or ", buf, sizeof buf), "sim, p2p or nvls") &&
               !strcmp(rt_backend_names(CDSL_LIST_ENGINES, ", ", buf, sizeof buf), "sim, ipc, nccl"));
    expect("rt_backend_names stops at the end of a small buffer",
           !strcmp(rt_backend_names(CDSL_LIST_BACKENDS, " or ", tiny, sizeof tiny), "sim, p2"));
    return failures != 0;
}
