/*
 * mscclpp_read.c - what every part of the MSCCL++ importer uses to read a plan: errors at the
 * JSON value they are about, typed field access, the plan's buffer sizes and the names of its
 * channel types. The importer's three files (mscclpp_import.c, mscclpp_decode.c,
 * mscclpp_map.c) call in here; nothing here calls them.
 */
#include "mscclpp_read.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- Messages and fields ------------------------------------------------------------------- */

void msc_error(Msc *m, const json_t *at, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(m->d, json_pos_loc(m->jp, at), "%s", msg);
}

void msc_unsupported(Msc *m, const MscOp *op, const char *why, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, why);
    vsnprintf(msg, sizeof msg, why, ap);
    va_end(ap);
    diag_error(m->d, json_pos_loc(m->jp, op->name_at ? op->name_at : op->at),
               "not supported: %s at gpu %d, threadblock %d, op %d: %s", op->name, m->rank, m->tb, m->k, msg);
}

const char *msc_type_name(json_type t)
{
    switch (t) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "true or false";
    case JSON_NULL: return "null";
    }
    return "?";
}

static bool type_is(const json_t *v, json_type t)
{
    if (t == JSON_TRUE || t == JSON_FALSE)
        return json_is_boolean(v);
    if (t == JSON_REAL || t == JSON_INTEGER)
        return json_is_number(v);
    return json_typeof(v) == t;
}

const json_t *msc_field(Msc *m, const json_t *obj, const char *key, json_type type, bool required, const char *what)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            msc_error(m, obj, "%s has no \"%s\"", what, key);
        return NULL;
    }
    if (!type_is(v, type)) {
        msc_error(m, v, "\"%s\" of %s must be %s, not %s", key, what, msc_type_name(type), msc_type_name(json_typeof(v)));
        return NULL;
    }
    return v;
}

bool msc_int(Msc *m, const json_t *obj, const char *key, long long lo, long long hi, bool required, long long dflt,
             long long *out, const char *what)
{
    const json_t *v = json_object_get(obj, key);
    *out = dflt;
    if (!v) {
        if (required)
            msc_error(m, obj, "%s has no \"%s\"", what, key);
        return !required;
    }
    if (!json_pos_int(v, lo, hi, out)) {
        msc_error(m, v, "\"%s\" of %s must be a whole number from %lld to %lld", key, what, lo, hi);
        return false;
    }
    return true;
}

bool msc_optional_list(Msc *m, const json_t *obj, const char *key, const char *what, const json_t **out)
{
    *out = msc_field(m, obj, key, JSON_ARRAY, false, what);
    return *out || !json_object_get(obj, key);
}

int msc_buf_chunks(const Msc *m, char type)
{
    const MscGpu *g = &m->gpu[0];
    return type == 'i' ? g->in : type == 'o' ? g->out : g->scratch;
}

/* ---- Channels ------------------------------------------------------------------------------ */

const char *msc_chan_name(MscChan c)
{
    static const char *const names[] = {"memory", "port", "switch", "none"};
    return c < MSC_NCHAN ? names[c] : "?";
}

MscChan msc_chan_parse(const char *s, bool old)
{
    if (!s)
        return MSC_NCHAN;
    if (!strcmp(s, "memory") || (old && !strcmp(s, "sm")))
        return MSC_MEMORY;
    if (!strcmp(s, "port") || (old && !strcmp(s, "proxy")))
        return MSC_PORT;
    if ((!old && !strcmp(s, "switch")) || (old && !strcmp(s, "nvls")))
        return MSC_SWITCH;
    if (!strcmp(s, "none"))
        return MSC_NONE;
    return MSC_NCHAN;
}
