/*
 * names.c - the names users type for element types, and the library version (the backends'
 * names are their rows', backends.c).
 *
 * The command-line tools and the JSON output use these spellings; parsing also accepts the
 * nccl-tests names (float, half, bfloat16, uint32, int32) so that flags can be copied over.
 */
#include <string.h>

#include "cdsl.h"

#ifndef CDSL_VERSION
#define CDSL_VERSION "unknown"
#endif

const char *cdsl_dtype_name(cdsl_dtype t)
{
    switch (t) {
    case CDSL_F32: return "f32";
    case CDSL_F16: return "f16";
    case CDSL_BF16: return "bf16";
    case CDSL_U32: return "u32";
    case CDSL_S32: return "s32";
    }
    return "?";
}

int cdsl_dtype_parse(const char *s, cdsl_dtype *out)
{
    static const struct {
        const char *name;
        cdsl_dtype t;
    } names[] = {
        {"f32", CDSL_F32},   {"f16", CDSL_F16},        {"bf16", CDSL_BF16},
        {"u32", CDSL_U32},   {"s32", CDSL_S32},        {"float", CDSL_F32},
        {"half", CDSL_F16},  {"bfloat16", CDSL_BF16},  {"uint32", CDSL_U32},
        {"int32", CDSL_S32},
    };
    for (size_t i = 0; s && out && i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].t;
            return CDSL_OK;
        }
    }
    return CDSL_ERR_USAGE;
}

size_t cdsl_dtype_size(cdsl_dtype t)
{
    return t == CDSL_F16 || t == CDSL_BF16 ? 2 : 4;
}

const char *cdsl_version(void)
{
    return CDSL_VERSION;
}
