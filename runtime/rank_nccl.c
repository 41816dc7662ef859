/* placeholder */
#include "rank.h"
static int stub_init(cdsl_rank_comm *r, const RtId *id) { (void)id; rt_error(r->log, "not yet"); return CDSL_ERR_SYSTEM; }
static void stub_destroy(cdsl_rank_comm *r) { (void)r; }
const RtRankOps rt_engine_nccl = { .name = "nccl", .init = stub_init, .destroy = stub_destroy };
