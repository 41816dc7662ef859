/*
 * mscclpp_decode.h - one op of an MSCCL++ plan, of either format generation, to an MscOp
 * (mscclpp_decode.c).
 */
#ifndef CDSL_MSCCLPP_DECODE_H
#define CDSL_MSCCLPP_DECODE_H

#include "mscclpp_read.h"

/* One op object to an MscOp; false after an error. */
bool msc_decode(Msc *m, const json_t *op, const MscBlock *blk, MscOp *out);

#endif
