/*
 * chans.c - the channels table (chans.def) and the lookups the front end makes in it: a keyword
 * to its channel, and the channels listed for a message.
 */
#include "chans.h"

#include <stdio.h>
#include <string.h>

static const ChanInfo chans[CH_COUNT] = {
#define CHAN(id, keyword, rank, what, note, listed) [CH_##id] = {CH_##id, keyword, rank, what, note, listed},
#include "chans.def"
#undef CHAN
};

const ChanInfo *chan_info(IrChan c)
{
    return (unsigned)c < CH_COUNT ? &chans[c] : &chans[CH_LOCAL];
}

const ChanInfo *chan_by_keyword(const char *s, size_t len)
{
    for (int c = 0; c < CH_COUNT; c++)
        if (chans[c].keyword && strlen(chans[c].keyword) == len && !memcmp(chans[c].keyword, s, len))
            return &chans[c];
    return NULL;
}

int chan_written(IrChan *out)
{
    int n = 0;
    for (int order = 1; order <= CH_COUNT; order++)
        for (int c = 0; c < CH_COUNT; c++)
            if (chans[c].keyword && chans[c].listed == order)
                out[n++] = (IrChan)c;
    return n;
}

const char *chan_list(bool as_value, const char *sep, const char *last, char *buf, size_t size)
{
    IrChan written[CH_COUNT];
    int n = chan_written(written);
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < size; i++) {
        const ChanInfo *c = &chans[written[i]];
        const char *join = i == 0 ? "" : i == n - 1 ? last : sep;
        int w;
        if (c->rank)
            w = snprintf(buf + at, size - at, "%s%s(%s)", join, c->keyword, as_value ? "..." : "R");
        else if (as_value)
            w = snprintf(buf + at, size - at, "%s%s", join, c->keyword);
        else
            w = snprintf(buf + at, size - at, "%s'%s'%s%s%s", join, c->keyword, c->note ? " (" : "",
                         c->note ? c->note : "", c->note ? ")" : "");
        at += w > 0 ? (size_t)w : 0;
    }
    return buf;
}
