/*
 * happens_before.h - happens-before facts shared by the checker's passes (happens_before.c, sync_schedule.c, data_races.c, postcondition.c,
 * order.c, happens_before_dot.c) and the CheckResult that check_program returns.
 *
 * Events: rank r's start (index -1), its ops 0..nops-1, its end (index nops). Program order
 * is per unit (ir.h: a thread block of an imported plan; the whole rank in a .cdsl program,
 * where units and ranks coincide): the rank's start precedes the first op of each of its
 * units, each unit's ops follow one another, and each unit's last op precedes the rank's end.
 * hb_match pairs every wait with its signal (the k-th wait on rank r's channel c from p with
 * p's k-th signal to r on c; switch ops by round; a barrier's k-th uses by its blocks form
 * one meeting). sync_schedule.c simulates all units and records one schedule consistent with those
 * edges. happens_before.c replays that schedule with two vector clocks per unit: EXEC (program order
 * plus every edge) and SYNC (program order plus release -> acquire edges; barriers are both).
 * A clock component is a time: 0 = nothing of that unit known, 1 = its rank's start, op i of
 * the rank's list = i + 2. Clocks only change at waits, so a unit shares one clock between
 * waits and a signal just points at it (copy on write, reference counted, recycled through a
 * free list).
 */
#ifndef CDSL_HAPPENS_BEFORE_H
#define CDSL_HAPPENS_BEFORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "ir.h"
#include "chunk_runs.h"

typedef struct HbEv {
    int rank, idx; /* idx -1: the rank's start; nops: its end */
} HbEv;

/* splitmix64's finaliser: every key bit reaches the low bits (hash tables take those). */
static inline uint64_t hb_mix64(uint64_t h)
{
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    return h ^ (h >> 31);
}

static inline uint32_t hb_time(int idx) { return (uint32_t)(idx + 2); }
enum { HB_START_TIME = 1, HB_MAX_REPORTS = 10 };
enum { HB_JOIN_STEP = 16 }; /* clock entries joined per budget step (joins are vectorised) */

/* A barrier of a rank: the thread blocks that use its id; their k-th uses meet. */
typedef struct HbBarrier {
    int rank, id;
    int want;        /* blocks the plan says meet there (IrOp.blocks) */
    int *units, nunits; /* the units that use it */
    int **uses, *nuses; /* [m][k]: the op (index in the rank's list) of member m's k-th use */
} HbBarrier;

typedef struct HbFacts {
    const IrProgram *p;
    int n;
    int nunits;      /* units of program order over all ranks: n for a .cdsl program */
    int *rank_unit;  /* [n + 1]: rank r's units are rank_unit[r] .. rank_unit[r + 1] - 1 */
    int *unit_rank;  /* [nunits] */
    int *unit_first, *unit_end; /* [nunits]: the unit's ops, [first, end) of its rank's list */
    int *sw_unit;    /* [n]: the unit that makes the rank's switch arrivals and waits */
    HbBarrier *bars; /* every (rank, barrier id) used */
    int nbars;
    int **partner;  /* [r][i] SIGNAL: index of the matching WAIT on rank peer; WAIT: of the
                       matching SIGNAL; -1 when there is none. BARRIER: its HbBarrier. */
    int **ordinal;  /* [r][i] SIGNAL/WAIT: 0-based position among r's ops of that kind, peer
                       and channel; SW_SIGNAL/SW_WAIT: the switch round; BARRIER: the
                       meeting (k-th use of the barrier by this unit) */
    int **sw_sig, *nsw_sig;   /* [r][k]: index of rank r's k-th switch signal */
    int **sw_wait, *nsw_wait; /* [r][k]: index of rank r's k-th switch wait */
    int nrounds;              /* the most switch signals any rank makes */
    size_t nops_total;
} HbFacts;

static inline int hb_unit(const HbFacts *f, int rank, int idx)
{
    return f->rank_unit[rank] + f->p->ranks[rank].ops[idx].tb;
}

/* sync_schedule.c's simulation: one schedule that respects every matched edge. */
typedef struct HbRun {
    HbEv *sched;
    size_t nsched;
    int *pc;         /* [unit] the unit's next op in its rank's list: its end when the unit
                        ended, else it is blocked at ops[pc] */
    bool all_ended;
} HbRun;

/* Rank r ran to its end: every one of its units did. */
bool hb_rank_ended(const HbFacts *f, const HbRun *run, int r);

/* A vector clock; `refs` while in use, `next` while on the free list. */
typedef struct HbClock {
    union {
        int refs;
        struct HbClock *next;
    } u;
    uint32_t v[];
} HbClock;

/* A unit's clock as seen at one moment: its own component is `now` (unit -1: none). */
typedef struct HbView {
    const uint32_t *v;
    int unit;
    uint32_t now;
} HbView;

static inline uint32_t hb_get(HbView w, int q) { return q == w.unit ? w.now : w.v[q]; }

typedef struct HbReplay {
    const HbFacts *f;
    Arena *arena;
    int n;                  /* clock components: the units */
    HbClock **exec, **sync; /* [u] current clocks */
    uint32_t *now;          /* [u] time of u's last event */
    HbClock ***sig_exec, ***sig_sync; /* [r][i] clocks carried by a peer signal until consumed */
    HbClock **rnd_exec, **rnd_sync;   /* [k] join over the round's signals (release ones) */
    int *rnd_waits;                   /* [k] waits done for round k, to recycle its clocks */
    HbClock **bar_clock;              /* [b] the meeting of barrier b now being replayed */
    int *bar_left;                    /* [b] its members still to replay it */
    HbClock *free_list;
    CheckBudget *budget;              /* clocks are charged to it */
    Loc at;                           /* the op being replayed, for the budget's message */
} HbReplay;

typedef enum RaceKind {
    RACE_WW,     /* a write, then a write not SYNC-ordered after it */
    RACE_WR,     /* a write, then a read not SYNC-ordered after it */
    RACE_RW,     /* a read, then a write not EXEC-ordered after it */
    RACE_START,  /* a remote access not EXEC-ordered after the owner's start */
    RACE_END_W,  /* a remote write not SYNC-ordered before the owner's end */
    RACE_END_R,  /* a remote read not EXEC-ordered before the owner's end */
} RaceKind;

typedef struct CheckRace {
    RaceKind kind;
    HbEv a, b;            /* a before b in the schedule; boundaries as start/end events */
    bool a_write, b_write;
    int owner, buf, first, count; /* the chunks both touch */
    bool exec_ordered;    /* an execution path exists, only visibility is missing */
} CheckRace;

typedef struct CheckCycle {
    HbEv *waits; /* waits[j] waits for waits[j+1]'s rank (cyclically) */
    int len;
} CheckCycle;

struct CheckResult {
    IrProgram *p;
    HbFacts hb;
    HbRun run;
    HbReplay replay;     /* final clocks after the race pass (valid when replayed) */
    bool replayed;
    CheckRace *races;
    int nraces;
    CheckCycle *cycles;
    int ncycles;
    HbEv *early;         /* switch signals that may arrive ahead of their round (switch_rounds.c) */
    int nearly;
    CheckBudget budget;  /* what checking may spend (check_program's limits) */
    /* scratch for hb_relaxed_edge, made on demand */
    int *bfs_dist, *bfs_parent, *bfs_queue;
    size_t *bfs_base;
    size_t *bfs_pos;      /* [node] position in the schedule (ends: SIZE_MAX) */
    int *bfs_best;        /* [2k], [2k+1]: best offer so far to round k's acquire / relaxed waits */
    unsigned *bfs_seen;   /* [k]: the search that set bfs_best[2k..2k+1] */
    unsigned bfs_search;
};
typedef struct CheckResult CheckResult;

/* happens_before.c */
void hb_match(const IrProgram *p, HbFacts *f);
void hb_replay_init(HbReplay *rp, const HbFacts *f, Arena *a, CheckBudget *b);
void hb_replay_step(HbReplay *rp, int rank, int idx); /* after op idx of rank ran */
HbView hb_exec_view(const HbReplay *rp, int unit);
HbView hb_sync_view(const HbReplay *rp, int unit);
/* Rank q's end, as the join of its units' clocks (one unit: its own view). The clock, when
   one is made, is released with hb_end_view_done. */
HbView hb_end_view(HbReplay *rp, int q, bool sync, HbClock **made);
void hb_end_view_done(HbReplay *rp, HbClock *made);
/* Whether the view knows rank q's start (some unit of q is in it). */
bool hb_knows_start(const HbFacts *f, HbView v, int q);
/* Keeping a clock (data_races.c's read sets keep the reader's EXEC clock): the rank copies it
   before changing it while it is kept. NULL is ignored. */
void hb_clock_retain(HbClock *c);
void hb_clock_release(HbReplay *rp, HbClock *c);
bool hb_strong(const IrOp *sig, const IrOp *wait);
/* A path from `from` to `to` (program order and signal -> wait edges) with as few relaxed
   edges as possible. Returns how many it has (-1: no path) and its first relaxed edge. */
int hb_relaxed_edge(CheckResult *r, HbEv from, HbEv to, HbEv *sig, HbEv *wait);

/* sync_schedule.c: the schedule the rules replay (rule 2 reports from it) */
void sync_simulate(const HbFacts *f, Arena *a, HbRun *run);

/* The rules, one per row of rules.def, all with one signature (check.c runs them). */
#define RULE(name, function, when, basis) void function(CheckResult *r, Diag *d);
#include "rules.def"
#undef RULE

/* order.c: the memory a data op touches, for the code generator's passes (order.c, partition.c):
   up to three operands (dst, src, a reduce's src2), each with the rank that owns it (-1: every
   rank, through the switch), its buffer and range, and the path it is reached by: path >= 0 is
   the peer whose pointer is used; PATH_PACKETS a packet op's local operand, which the threads
   take one 4-byte word each (cdsl_packets.cuh), not in the data ops' 16-byte packs. Returns how
   many (0 for a signal or wait). */
enum { PATH_PACKETS = -3, PATH_LOCAL = -2, PATH_SWITCH = -1 };

typedef struct Sig { /* how a chunk is reached: the path and the operand's range */
    int path, first, count;
} Sig;

typedef struct Touch {
    int owner; /* -1: every rank */
    int buf;
    Sig sig;
    bool write;
} Touch;

int op_touches(const IrOp *op, int rank, Touch out[3]);

#endif
