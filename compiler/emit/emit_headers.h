/*
 * emit_headers.h - how an emitted program meets the device library (runtime/device/ .cuh files
 * and runtime/abi.h), embedded in libcdsl by the build (build/gen/device_headers.c), each under
 * the name the programs #include: the #include with its macros, the one-file form for nvcc, and
 * the file name NVRTC is told.
 */
#ifndef CDSL_EMIT_HEADERS_H
#define CDSL_EMIT_HEADERS_H

#include <stdbool.h>
#include <stddef.h>

#include "cdsl.h"
#include "emit_buf.h"
#include "ir.h"

typedef struct EmitHeader {
    const char *name;   /* "cdsl_device.cuh" */
    const char *text;
} EmitHeader;

extern const EmitHeader emit_device_headers[];   /* ends with {NULL, NULL} */
const EmitHeader *emit_header(const char *name, size_t len);
/* The macros choosing rank count, flavour, element type (and the plan's counters; inlined
 * helpers when the code of rank, -1 for every rank, makes few calls), then #include
 * "cdsl_device.cuh". */
void emit_include(EmitBuf *b, const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, bool plan, int rank);
/* src with each #include of one of the headers replaced by its text (recursively): one file
 * that nvcc compiles alone. malloc'd; NULL when out of memory. */
char *emit_paste_headers(const char *src);
/* The file name NVRTC is told for this source, "allgather_mesh_p2p_f32.cu" (rank >= 0 adds
 * "_rank"), [A-Za-z0-9_.] and at most EMIT_CU_NAME_MAX characters (buf holds at least one
 * more); the emitted #line directives name it when they go back to the source's own lines. */
enum { EMIT_CU_NAME_MAX = 64 };
void emit_cu_name(char *buf, size_t size, const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, int rank);

#endif
