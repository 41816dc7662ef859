/*
 * emit_headers.c - how an emitted program meets the device library (runtime/device/, .cuh files).
 *
 * The emitted program is short: it defines the macros that choose the rank count, flavour,
 * element type (and, for an imported plan, its counters and thread blocks), then #includes
 * "cdsl_device.cuh". The headers themselves are embedded in libcdsl by the build
 * (build/gen/device_headers.c, emit_device_headers[]); the JIT hands them to NVRTC as named
 * headers and puts their text in the cache key, and emit_paste_headers() writes the one-file
 * form for nvcc (cdslc --emit-cuda --standalone). emit_cu_name() is the file name NVRTC is
 * told, which the emitted #line directives name when they leave the .cdsl lines.
 */
#include "emit_headers.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "emit_target.h"

enum { EMIT_INLINE_CALLS = 24 };

/* Helper calls (data operations, waits, plan barriers) in the code of rank (-1: every rank). */
static long helper_calls(const IrProgram *p, int rank)
{
    long n = 0;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; (rank < 0 || r == rank) && i < p->ranks[r].nops; i++) {
            IrKind k = p->ranks[r].ops[i].kind;
            n += ir_is_data(k) || k == IR_WAIT || k == IR_SW_WAIT || k == IR_BARRIER || k == IR_SEM_ACQUIRE;
        }
    return n;
}

/* The macros of one (nranks, flavour, element type), then the library, then a check that the
   device's argument block has the host's size (pointer width, padding). A small program has
   its helpers inlined (CDSL_INLINE): NVRTC's time grows with the inlined calls, about 0.1 s per
   ten of them, so beyond EMIT_INLINE_CALLS they stay out of line, compiled once. */
void emit_include(EmitBuf *b, const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, bool plan, int rank)
{
    emit_printf(b, "#define CDSL_NRANKS %d\n", p->nranks);
    emit_printf(b, "#define CDSL_FLAVOUR_%s 1\n", flavour == CDSL_BACKEND_NVLS ? "NVLS" : "P2P");
    emit_printf(b, "#define CDSL_ELEM_");
    for (const char *c = emit_dtype(dtype)->name; *c; c++)
        emit_printf(b, "%c", toupper((unsigned char)*c));
    emit_puts(b, " 1\n");
    if (plan)
        emit_printf(b, "#define CDSL_PLAN 1\n#define CDSL_PLAN_CHANNELS %d  // channels per pair of ranks: the runtime "
                    "allocates CDSL_SYNC_WORDS(CDSL_NRANKS, %d) sync words\n", ir_plan_channels(p),
                    ir_plan_channels(p));
    long calls = helper_calls(p, rank);
    if (calls <= EMIT_INLINE_CALLS)
        emit_printf(b, "#define CDSL_INLINE 1  // %ld helper calls: inlined\n", calls);
    emit_puts(b, "#include \"cdsl_device.cuh\"  // runtime/device/: the device library\n");
    emit_printf(b, "static_assert(sizeof(CdslArgs) == %zu, \"CdslArgs differs from the host's runtime/abi.h\");\n\n",
                sizeof(CdslArgs));
}

const EmitHeader *emit_header(const char *name, size_t len)
{
    for (const EmitHeader *h = emit_device_headers; h->name; h++)
        if (strlen(h->name) == len && !strncmp(h->name, name, len))
            return h;
    return NULL;
}

/* The header a line `#include "NAME"` (spaces allowed) names, if it is one of ours. */
static const EmitHeader *included(const char *line, const char *end)
{
    const char *s = line;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    if (end - s < 10 || strncmp(s, "#include", 8))
        return NULL;
    s += 8;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    const char *q = s < end && *s == '"' ? memchr(s + 1, '"', (size_t)(end - s - 1)) : NULL;
    return q ? emit_header(s + 1, (size_t)(q - s - 1)) : NULL;
}

typedef struct Paste {
    char *s;
    size_t len, cap;
    bool done[64];   /* headers already pasted (their guards would make a second copy empty) */
    bool oom;
} Paste;

static void add(Paste *o, const char *s, size_t n)
{
    if (o->oom)
        return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 1 << 16;
        while (cap < o->len + n + 1)
            cap *= 2;
        char *t = realloc(o->s, cap);
        if (!t) {
            o->oom = true;
            return;
        }
        o->s = t;
        o->cap = cap;
    }
    memcpy(o->s + o->len, s, n);
    o->len += n;
    o->s[o->len] = 0;
}

/* Copy text, each of our #include lines replaced by the header (recursively, each once). */
static void paste(Paste *o, const char *text)
{
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        const EmitHeader *h = included(line, end);
        if (h) {
            size_t k = (size_t)(h - emit_device_headers);
            add(o, "// ---- ", 8);
            add(o, h->name, strlen(h->name));
            static const char tail[] = " (pasted in: the standalone form) ----\n";
            add(o, tail, sizeof tail - 1);
            if (k < sizeof o->done && !o->done[k]) {
                o->done[k] = true;
                paste(o, h->text);
            }
        } else {
            add(o, line, (size_t)(end - line) + (nl != NULL));
        }
        line = nl ? nl + 1 : end;
    }
}

char *emit_paste_headers(const char *src)
{
    Paste o = {0};
    add(&o, "", 0);
    paste(&o, src);
    if (o.oom) {
        free(o.s);
        return NULL;
    }
    return o.s;
}

/* "allgather_mesh_p2p_f32.cu": plain characters only, since it is also a #line file name, and
 * at most EMIT_CU_NAME_MAX of them, as for every name that reaches the source: the program's
 * name is cut to make room for the rest, which says what the file holds. */
void emit_cu_name(char *buf, size_t size, const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, int rank)
{
    char rest[32];
    int nrest = snprintf(rest, sizeof rest, "_%s_%s%s.cu", flavour == CDSL_BACKEND_NVLS ? "nvls" : "p2p",
                         emit_dtype(dtype)->name, rank >= 0 ? "_rank" : "");
    snprintf(buf, size, "%.*s%s", EMIT_CU_NAME_MAX - nrest, p->name ? p->name : "program", rest);
    for (char *c = buf; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '.')
            *c = '_';
}
