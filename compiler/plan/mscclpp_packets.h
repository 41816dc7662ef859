/*
 * mscclpp_packets.h - pairing a plan's packet reads with the packet writes they take, by
 * scratch address (mscclpp_packets.c).
 */
#ifndef CDSL_MSCCLPP_PACKETS_H
#define CDSL_MSCCLPP_PACKETS_H

#include "mscclpp_read.h"

/* Pairs every IR_MPKT_READ/REDUCE of the imported plan with the IR_MPKT_PUTs that wrote its
 * packets, splitting both into matched pieces (IrOp.match). False after an error: packets
 * written twice into one place in a launch, a read that no write feeds, scratch used as
 * packets and as plain data at once. True when the plan has no packets. */
bool msc_packets_pair(Msc *m);

#endif
