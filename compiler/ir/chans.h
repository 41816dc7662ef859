/*
 * chans.h - the channels table (chans.def) as C: the IrChan enum and one ChanInfo per row, which
 * the lexer, the parser, resolve.c and eval.c read instead of naming each channel (chans.c).
 */
#ifndef CDSL_CHANS_H
#define CDSL_CHANS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum IrChan {
#define CHAN(id, ...) CH_##id,
#include "chans.def"
#undef CHAN
    CH_COUNT
} IrChan;

typedef struct ChanInfo {
    IrChan id;
    const char *keyword;    /* NULL: not written in .cdsl */
    bool rank;              /* written keyword(R) */
    const char *what;       /* "the switch" */
    const char *note;       /* "NVLS", or NULL */
    int listed;             /* order in lists of the channels; 0: never listed */
} ChanInfo;

const ChanInfo *chan_info(IrChan c);
/* The channel written as the first len bytes of s, or NULL. */
const ChanInfo *chan_by_keyword(const char *s, size_t len);
/* The channels written in .cdsl, in their listed order: out holds CH_COUNT; returns how many. */
int chan_written(IrChan *out);
/* The channels as messages list them, joined with sep and, before the last, last:
   as_value 0: "'switch' (NVLS) and peer(R)"; 1: "switch or peer(...)". buf holds size bytes. */
const char *chan_list(bool as_value, const char *sep, const char *last, char *buf, size_t size);

#endif
