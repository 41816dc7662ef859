/*
 * mscclpp_map.h - a decoded plan op to IR ops (mscclpp_map.c).
 */
#ifndef CDSL_MSCCLPP_MAP_H
#define CDSL_MSCCLPP_MAP_H

#include "mscclpp_read.h"

/* The IR ops of a decoded op, appended to rank m->rank's list. */
void msc_map(Msc *m, const MscOp *op);

#endif
