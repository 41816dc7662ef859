/*
 * eval.c - evaluating a program for every rank into straight-line operations.
 *
 * Values are integers, channels (a peer or the switch) and buffers; the environment is a
 * stack of bindings searched from the top, pushed by let, for and def calls and cut back at
 * the end of each block. Arithmetic is 64-bit and checked: overflow and division by zero are
 * errors at the operator. Work is bounded (EVAL_MAX_STEPS statements in all), so a loop of
 * 10^12 iterations is an error, not a hang.
 *
 * The loop variables and def calls around each operation are kept as its context string
 * ("step=2, in gather() called at 12:5"), rebuilt only when that stack changes.
 */
#include "eval.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"
#include "port_proxy.h"
#include "resolve.h"
#include "suggest.h"

enum { EVAL_MAX_STEPS = 50 * 1000 * 1000, EVAL_MAX_REPORTED = 64, CTX_MAX = 64 };

typedef enum VKind { V_INT, V_CHAN, V_BUF } VKind;

typedef struct Value {
    VKind kind;
    long long i;    /* V_INT: the value; V_CHAN: the rank at its other end (-1: none); V_BUF:
                       the buffer index */
    IrChan chan;    /* V_CHAN: which channel */
} Value;

typedef struct Binding {
    const char *name;
    Value v;
} Binding;

typedef struct CtxEntry {
    const char *var;        /* a loop variable, or NULL for a def call */
    long long val;
    const Stmt *call;
} CtxEntry;

typedef struct Eval {
    Arena *arena;
    Diag *diag;
    IrProgram *ir;
    const Decl *program;
    int rank;               /* -1 while evaluating declarations (rank-independent) */
    Binding *env;
    int nenv, cap;
    int nbase;              /* env[0 .. nbase): nranks and the buffers, visible everywhere */
    int floor;              /* inside a def: env[floor ..) are its own bindings */
    long long nops;
    CtxEntry ctx[CTX_MAX];
    int nctx;
    const char *ctx_text;   /* cached text of ctx; NULL when it must be rebuilt */
    bool ctx_dirty;
    long long steps;
    bool failed;            /* the current rank hit an error: stop evaluating it */
    PortProxies proxies;    /* the current rank's port channels' proxies (port_proxy.h) */
    Loc reported[EVAL_MAX_REPORTED];
    int nreported;
} Eval;

/* ---- errors ---------------------------------------------------------------------------- */

static const char *context(Eval *ev);

static bool seen(Eval *ev, Loc at)
{
    for (int i = 0; i < ev->nreported; i++)
        if (ev->reported[i].src == at.src && ev->reported[i].line == at.line && ev->reported[i].col == at.col)
            return true;
    if (ev->nreported < EVAL_MAX_REPORTED)
        ev->reported[ev->nreported++] = at;
    return false;
}

/* An error at `at`, once per position, with the rank and loop context appended. */
static void ev_error(Eval *ev, Loc at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void ev_error(Eval *ev, Loc at, const char *fmt, ...)
{
    ev->failed = true;
    if (seen(ev, at)) {
        ev->diag->nerrors += ev->diag->nerrors == 0;   /* still an error, just not printed again */
        return;
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *ctx = context(ev);
    if (ev->rank < 0)
        diag_error(ev->diag, at, "%s", msg);
    else if (ctx)
        diag_error(ev->diag, at, "%s (on rank %d, %s)", msg, ev->rank, ctx);
    else
        diag_error(ev->diag, at, "%s (on rank %d)", msg, ev->rank);
}

/* ---- environment and context -------------------------------------------------------------- */

static void bind(Eval *ev, const char *name, Value v)
{
    if (ev->nenv == ev->cap) {
        int cap = ev->cap ? ev->cap * 2 : 64;
        ev->env = arena_grow(ev->arena, ev->env, (size_t)ev->nenv, (size_t)cap, sizeof *ev->env);
        ev->cap = cap;
    }
    ev->env[ev->nenv++] = (Binding){name, v};
}

static bool lookup(Eval *ev, const char *name, Value *out)
{
    for (int i = ev->nenv - 1; i >= 0; i--) {
        if (i == ev->floor - 1)
            i = ev->nbase - 1;   /* inside a def: skip the caller's bindings */
        if (i >= 0 && !strcmp(ev->env[i].name, name)) {
            *out = ev->env[i].v;
            return true;
        }
    }
    return false;
}

static bool push_ctx(Eval *ev, Loc at, CtxEntry e)
{
    if (ev->nctx == CTX_MAX) {
        ev_error(ev, at, "loops and calls nested more than %d deep", CTX_MAX);
        return false;
    }
    ev->ctx[ev->nctx++] = e;
    ev->ctx_dirty = true;
    return true;
}

static void pop_ctx(Eval *ev)
{
    ev->nctx--;
    ev->ctx_dirty = true;
}

static const char *context(Eval *ev)
{
    if (!ev->ctx_dirty)
        return ev->ctx_text;
    ev->ctx_dirty = false;
    ev->ctx_text = NULL;
    if (ev->nctx == 0)
        return NULL;
    char buf[1024];
    size_t n = 0;
    for (int i = 0; i < ev->nctx && n < sizeof buf - 64; i++) {
        const CtxEntry *c = &ev->ctx[i];
        const char *sep = n ? ", " : "";
        if (c->var)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s=%lld", sep, c->var, c->val);
        else
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%sin %s() called at %d:%d", sep, c->call->name,
                                  c->call->name_loc.line, c->call->name_loc.col);
        if (n >= sizeof buf - 64) {   /* snprintf returns what it would have written: clamp */
            n = sizeof buf - 64;
            n += (size_t)snprintf(buf + n, sizeof buf - n, ", ...");
            break;
        }
    }
    ev->ctx_text = arena_strndup(ev->arena, buf, n);
    return ev->ctx_text;
}

/* ---- expressions ------------------------------------------------------------------------ */

static bool eval_expr(Eval *ev, const Expr *e, Value *out);

static const char *kind_name(Value v)
{
    switch (v.kind) {
    case V_INT: return "an integer";
    case V_CHAN: return chan_info(v.chan)->what;
    case V_BUF: return "a buffer";
    }
    return "?";
}

static bool eval_int(Eval *ev, const Expr *e, long long *out)
{
    Value v;
    if (!eval_expr(ev, e, &v))
        return false;
    if (v.kind != V_INT) {
        ev_error(ev, e->loc, "expected an integer here, but this is %s", kind_name(v));
        return false;
    }
    *out = v.i;
    return true;
}

static bool arith(Eval *ev, const Expr *e, long long a, long long b, long long *r)
{
    bool overflow = false;
    switch (e->op) {
    case TK_PLUS: overflow = __builtin_add_overflow(a, b, r); break;
    case TK_MINUS: overflow = __builtin_sub_overflow(a, b, r); break;
    case TK_STAR: overflow = __builtin_mul_overflow(a, b, r); break;
    case TK_SLASH:
    case TK_PERCENT:
        if (b == 0) {
            ev_error(ev, e->loc, "%s by zero", e->op == TK_SLASH ? "division" : "modulo");
            return false;
        }
        overflow = a == (-0x7fffffffffffffffLL - 1) && b == -1;
        if (!overflow)
            *r = e->op == TK_SLASH ? a / b : a % b;
        break;
    case TK_EQ: *r = a == b; break;
    case TK_NE: *r = a != b; break;
    case TK_LT: *r = a < b; break;
    case TK_LE: *r = a <= b; break;
    case TK_GT: *r = a > b; break;
    case TK_GE: *r = a >= b; break;
    }
    if (overflow) {
        ev_error(ev, e->loc, "integer overflow in %lld and %lld", a, b);
        return false;
    }
    return true;
}

static bool eval_binary(Eval *ev, const Expr *e, Value *out)
{
    long long a, b;
    if (!eval_int(ev, e->lhs, &a))
        return false;
    *out = (Value){V_INT, 0, CH_LOCAL};
    if (e->op == TK_AND || e->op == TK_OR) {   /* short-circuit, as users expect */
        if ((e->op == TK_AND) != (a != 0)) {
            out->i = a != 0;
            return true;
        }
        if (!eval_int(ev, e->rhs, &b))
            return false;
        out->i = b != 0;
        return true;
    }
    if (!eval_int(ev, e->rhs, &b))
        return false;
    return arith(ev, e, a, b, &out->i);
}

/* A channel by its row (chans.def); one written with a rank, keyword(R), is the channel to
 * that other rank. */
static bool eval_chan(Eval *ev, const Expr *e, Value *out)
{
    const ChanInfo *c = chan_by_keyword(e->name, strlen(e->name));
    long long p = -1;
    if (c->rank) {
        if (!eval_int(ev, e->lhs, &p))
            return false;
        if (ev->rank >= 0 && p == ev->rank) {
            ev_error(ev, e->loc, "%s(%lld) is this rank itself; a rank has no channel to itself", c->keyword, p);
            return false;
        }
        if (p < 0 || p >= ev->ir->nranks) {
            ev_error(ev, e->loc, "%s(%lld) is outside 0 .. %d (nranks is %d)", c->keyword, p, ev->ir->nranks - 1,
                     ev->ir->nranks);
            return false;
        }
    }
    *out = (Value){V_CHAN, p, c->id};
    return true;
}

static bool eval_name(Eval *ev, const Expr *e, Value *out)
{
    if (lookup(ev, e->name, out))
        return true;
    if (!strcmp(e->name, "rank")) {
        if (ev->rank < 0) {
            ev_error(ev, e->loc, "'rank' cannot be used here: this value must be the same on every rank");
            return false;
        }
        *out = (Value){V_INT, ev->rank, CH_LOCAL};
        return true;
    }
    ev_error(ev, e->loc, "'%s' has no value here", e->name);
    return false;
}

static bool eval_expr(Eval *ev, const Expr *e, Value *out)
{
    switch (e->kind) {
    case E_INT: *out = (Value){V_INT, e->ival, CH_LOCAL}; return true;
    case E_NAME: return eval_name(ev, e, out);
    case E_CHAN: return eval_chan(ev, e, out);
    case E_BINARY: return eval_binary(ev, e, out);
    case E_UNARY: {
        long long a;
        if (!eval_int(ev, e->lhs, &a))
            return false;
        if (e->op == TK_NOT) {
            *out = (Value){V_INT, !a, CH_LOCAL};
            return true;
        }
        if (a == (-0x7fffffffffffffffLL - 1)) {
            ev_error(ev, e->loc, "integer overflow in -(%lld)", a);
            return false;
        }
        *out = (Value){V_INT, -a, CH_LOCAL};
        return true;
    }
    case E_INDEX:
        ev_error(ev, e->loc, "a chunk reference is not a value; it can only be an operand of an operation");
        return false;
    }
    return false;
}

/* ---- chunk references ------------------------------------------------------------------- */

static bool eval_buffer(Eval *ev, const Expr *e, int *buf)
{
    Value v;
    Expr name = {.kind = E_NAME, .loc = e->loc, .name = e->name};
    if (!eval_name(ev, &name, &v))
        return false;
    if (v.kind != V_BUF) {
        ev_error(ev, e->loc, "'%s' is %s, not a buffer", e->name, kind_name(v));
        return false;
    }
    *buf = (int)v.i;
    return true;
}

static bool check_bounds(Eval *ev, const Expr *e, IrRange r, long long lo, long long hi)
{
    const IrBuf *b = &ev->ir->bufs[r.buf];
    if (hi < lo) {
        ev_error(ev, e->loc, "negative chunk range %s[%lld .. %lld]", b->name, lo, hi);
        return false;
    }
    if (hi == lo) {
        ev_error(ev, e->loc, "empty chunk range %s[%lld .. %lld]", b->name, lo, hi);
        return false;
    }
    if (lo < 0 || hi > b->nchunks) {
        if (!e->rhs)
            ev_error(ev, e->loc, "chunk %s[%lld] is outside the buffer, which has %d chunk%s", b->name, lo,
                     b->nchunks, b->nchunks == 1 ? "" : "s");
        else
            ev_error(ev, e->loc, "chunks %s[%lld .. %lld] reach outside the buffer, which has %d chunk%s", b->name,
                     lo, hi, b->nchunks, b->nchunks == 1 ? "" : "s");
        return false;
    }
    return true;
}

/* buf[i], buf[i .. j], or a whole buffer by name. */
static bool eval_range(Eval *ev, const Expr *e, IrRange *out)
{
    if (e->kind == E_NAME) {
        Value v;
        if (!eval_expr(ev, e, &v))
            return false;
        if (v.kind != V_BUF) {
            ev_error(ev, e->loc, "expected chunks of a buffer here, but this is %s", kind_name(v));
            return false;
        }
        *out = (IrRange){(int)v.i, 0, ev->ir->bufs[v.i].nchunks};
        if (out->count == 0) {
            ev_error(ev, e->loc, "buffer %s has no chunks", e->name);
            return false;
        }
        return true;
    }
    if (e->kind != E_INDEX) {
        ev_error(ev, e->loc, "expected chunks of a buffer here, e.g. output[rank]");
        return false;
    }
    long long lo, hi;
    if (!eval_buffer(ev, e, &out->buf) || !eval_int(ev, e->lhs, &lo))
        return false;
    hi = lo + 1;
    if (e->rhs && !eval_int(ev, e->rhs, &hi))
        return false;
    if (!check_bounds(ev, e, (IrRange){out->buf, 0, 0}, lo, hi))
        return false;
    out->first = (int)lo;
    out->count = (int)(hi - lo);
    return true;
}

static bool overlap(IrRange a, IrRange b)
{
    return a.buf == b.buf && a.first < b.first + b.count && b.first < a.first + a.count;
}

static void range_text(Eval *ev, IrRange r, char *buf, size_t n)
{
    const char *name = ev->ir->bufs[r.buf].name;
    if (r.count == 1)
        snprintf(buf, n, "%s[%d]", name, r.first);
    else
        snprintf(buf, n, "%s[%d .. %d]", name, r.first, r.first + r.count);
}

static bool same_count(Eval *ev, const Stmt *s, const char *what, IrRange dst, IrRange src, int argi)
{
    if (dst.count == src.count)
        return true;
    ev_error(ev, s->args.items[argi]->loc, "%s: operands have different sizes: the destination has %d chunk%s, this one %d",
             what, dst.count, dst.count == 1 ? "" : "s", src.count);
    return false;
}

/* ---- operations --------------------------------------------------------------------------- */

static void emit(Eval *ev, const Stmt *s, IrOp op)
{
    if (op.dst.buf < 0 && op.src.buf < 0)
        op.dst.buf = op.src.buf = op.src2.buf = -1;
    op.loc = s->name_loc;
    op.ctx = context(ev);
    if (++ev->nops > IR_MAX_OPS_TOTAL) {
        ev_error(ev, s->name_loc, "the program is too large: more than %d operations over all ranks",
                 IR_MAX_OPS_TOTAL);
        return;
    }
    ir_append(ev->ir, ev->rank, op);
}

/* A port channel's operation, as the block's request and its proxy's work (port_proxy.h); the
   op table says which (a put writes, a signal signals, a wait waits, a flush is neither). One
   port channel joins two ranks in .cdsl, so its pairing ordinal is 0. */
static void emit_port(Eval *ev, const Stmt *s, const IrOpInfo *in, IrOp op)
{
    IrOp issue = op;
    issue.loc = s->name_loc;
    issue.ctx = context(ev);
    ev->nops += 3;
    if (ev->nops > IR_MAX_OPS_TOTAL) {
        ev_error(ev, s->name_loc, "the program is too large: more than %d operations over all ranks",
                 IR_MAX_OPS_TOTAL);
        return;
    }
    if (in->sync == SYNC_WAIT)
        port_wait(ev->ir, ev->rank, issue, op.peer, 0);
    else {
        IrOp put = op;
        put.kind = IR_PUT;
        put.chan = 0;
        if (!port_request(ev->ir, &ev->proxies, issue, op.peer, 0,
                          in->dst.on != ON_NONE ? PORT_PUT : in->sync == SYNC_SIGNAL ? PORT_SIGNAL : PORT_FLUSH, &put))
            ev_error(ev, s->name_loc, "more than %d port channels on one rank", IR_PORT_MAX_PROXIES);
    }
}

static IrOp new_op(IrKind k)
{
    IrOp op;
    memset(&op, 0, sizeof op);
    op.kind = k;
    op.peer = -1;
    op.dst.buf = op.src.buf = op.src2.buf = -1;
    return op;
}

/* The input belongs to the caller, as NCCL's send buffer does: the collective only reads it.
 * The checker assumes every run starts from the caller's input (the start event), and the
 * runtime never restores it, so a write into any rank's input would make the next run (or the
 * caller's next use) see other data. */
static bool input_read_only(Eval *ev, const Stmt *s, const char *what, IrRange dst)
{
    if (dst.buf != IR_INPUT)
        return true;
    char a[64];
    range_text(ev, dst, a, sizeof a);
    ev_error(ev, s->args.items[0]->loc,
             "%s: the destination %s is the collective's input, which is read-only (write into output or a "
             "scratch buffer)",
             what, a);
    return false;
}

static bool eval_operands(Eval *ev, const Stmt *s, const char *what, IrOp *op, int n)
{
    IrRange *slots[3] = {&op->dst, &op->src, &op->src2};
    for (int i = 0; i < n; i++)
        if (!eval_range(ev, s->args.items[i], slots[i]))
            return false;
    if (!input_read_only(ev, s, what, op->dst))
        return false;
    for (int i = 1; i < n; i++)
        if (!same_count(ev, s, what, op->dst, *slots[i], i))
            return false;
    return true;
}

/* ---- in place ----------------------------------------------------------------------------- */

/* In place (ir_in_place), the aliased buffer is a part of the holder on every rank: operands
 * that name it are moved into the holder, at the place it occupies on the rank that owns the
 * operand, so that no later phase sees two names for one piece of memory (rule 1 sees a write
 * to the holder as a write to the input, rule 3 an overlap through the alias, rule 4 the
 * holder's part starting out as the input). An operand the switch reaches on every rank is
 * refused when that place differs from rank to rank: one multicast address cannot stand for
 * it. *orig keeps the operands as written, for messages. */
static const char *holder_slot_text(Eval *ev, int holder)
{
    const char *h = ev->ir->bufs[holder].name;
    int C = ev->ir->chunks;
    if (C == 1)
        return arena_printf(ev->arena, "%s[r] on rank r", h);
    return arena_printf(ev->arena, "%s[r*%d .. (r+1)*%d] on rank r", h, C, C);
}

/* owner: the rank whose copy of the operand the operation touches; -1: every rank's. */
static bool alias_operand(Eval *ev, const Stmt *s, const char *what, int argi, IrRange *r, int owner)
{
    int aliased, holder;
    if (r->buf < 0 || !ir_in_place(ev->ir, &aliased, &holder) || r->buf != aliased)
        return true;
    if (owner < 0 && coll_alias_per_rank(coll_info(ev->ir->coll), ev->ir->chunks) && ev->ir->nranks > 1) {
        char a[64];
        range_text(ev, *r, a, sizeof a);
        ev_error(ev, s->args.items[argi]->loc,
                 "%s: the switch %s %s on every rank, but in place each rank's %s is its own part of its %s (%s), "
                 "a different place on each rank: this program cannot run in place",
                 what, argi == 0 ? "writes" : "reads", a, ev->ir->bufs[aliased].name, ev->ir->bufs[holder].name,
                 holder_slot_text(ev, holder));
        return false;
    }
    *r = (IrRange){holder, ir_in_place_first(ev->ir, owner < 0 ? 0 : owner) + r->first, r->count};
    return true;
}

static bool in_place_operands(Eval *ev, const Stmt *s, const char *what, IrOp *op)
{
    const IrOpInfo *in = ir_op_info(op->kind);
    int me = ev->rank;
    return alias_operand(ev, s, what, 0, &op->dst, ir_owner(in->dst.on, op, me)) &&
           alias_operand(ev, s, what, 1, &op->src, ir_owner(in->src.on, op, me)) &&
           alias_operand(ev, s, what, 2, &op->src2, ir_owner(in->src2.on, op, me));
}

/* A copy that in place reads and writes the same chunks (allgather's copy(output[rank],
 * input[0])) moves nothing: it is left out, as NCCL skips its local copy in place. */
static bool copy_in_place_identity(const Eval *ev, const IrOp *op, const IrOp *orig)
{
    return ev->ir->in_place && ir_is_local_copy(op->kind) && op->dst.buf == op->src.buf &&
           op->dst.first == op->src.first && (orig->dst.buf != op->dst.buf || orig->src.buf != op->src.buf);
}

/* The operand as the program wrote it, and where it is in place when that differs. */
static void operand_text(Eval *ev, IrRange now, IrRange orig, char *buf, size_t n)
{
    char a[64], b[64];
    range_text(ev, orig, a, sizeof a);
    if (orig.buf == now.buf) {
        snprintf(buf, n, "%s", a);
        return;
    }
    range_text(ev, now, b, sizeof b);
    snprintf(buf, n, "%s (%s in place)", a, b);
}

/* Rule 3's overlap check, for every operation that reads and writes the executing rank's own
 * memory: copy and reduce, and the switch operations, whose destination (store) or source
 * (reduce) includes the executing rank's copy. Data moves piece by piece, on the GPUs and in
 * sim alike, so a source that overlaps its destination at another offset would be read after
 * part of it was overwritten. The one overlap allowed is exact, element-wise in place (the same
 * chunks at the same place: every element is read by the thread that then writes it), for the
 * element-wise operations; a copy may not overlap at all (docs/language.md). */
static bool no_overlap(Eval *ev, const Stmt *s, const char *what, const IrOp *op, const IrOp *orig, bool in_place_ok)
{
    const IrRange *srcs[2] = {&op->src, &op->src2}, *orig_srcs[2] = {&orig->src, &orig->src2};
    for (int i = 0; i < 2 && srcs[i]->buf >= 0; i++) {
        IrRange src = *srcs[i];
        bool in_place = in_place_ok && src.first == op->dst.first && src.buf == op->dst.buf;
        if (!overlap(op->dst, src) || in_place)
            continue;
        char a[160], b[160];
        operand_text(ev, op->dst, orig->dst, a, sizeof a);
        operand_text(ev, src, *orig_srcs[i], b, sizeof b);
        ev_error(ev, s->args.items[i + 1]->loc, "%s: source %s and destination %s overlap", what, b, a);
        return false;
    }
    return true;
}

static bool eval_channel(Eval *ev, const Expr *e, Value *out)
{
    if (!eval_expr(ev, e, out))
        return false;
    if (out->kind != V_CHAN) {
        char list[160];
        ev_error(ev, e->loc, "expected a channel (%s), but this is %s", chan_list(true, ", ", " or ", list, sizeof list),
                 kind_name(*out));
        return false;
    }
    return true;
}

static bool order_name(const char *name)
{
    return !strcmp(name, "relaxed") || !strcmp(name, "release") || !strcmp(name, "acquire");
}

static bool order_relaxed(const Stmt *s)
{
    return s->args.n == 1 && !strcmp(s->args.items[0]->name, "relaxed");
}

/* send_packets(src) / recv_packets(dst): one range each; the slot the packets travel through
 * is not user memory. The receive writes dst (so never the input, and in place its operand
 * moves like any other); the send only reads src. Packet ops are always relaxed: the flags in
 * the packets carry that one transfer's data and order nothing else (docs/language.md). */
static bool eval_packets(Eval *ev, const Stmt *s, const IrOpInfo *in, IrOp *op)
{
    op->relaxed = in->order == ORDER_RELAXED;
    op->chan = IR_PKT_CHAN;
    bool writes = in->dst.on != ON_NONE;
    IrRange *r = writes ? &op->dst : &op->src;
    if (!eval_range(ev, s->args.items[0], r))
        return false;
    if (writes && !input_read_only(ev, s, in->name, op->dst))
        return false;
    return alias_operand(ev, s, in->name, 0, r, ev->rank);
}

/* Reads and writes the executing rank's own memory (its own copy counts, through the switch). */
static bool touches_own_twice(const IrOpInfo *in)
{
    return (in->dst.on == ON_SELF || in->dst.on == ON_ALL) && (in->src.on == ON_SELF || in->src.on == ON_ALL);
}

/* One operation as the op table describes it (`peer` -1: none): its operands in order (dst,
 * src, src2), rule 3 on them, in place moved into the holder. */
static void eval_op(Eval *ev, const Stmt *s, const IrOpInfo *in, int peer)
{
    IrOp op = new_op(in->kind);
    op.peer = peer;
    if (ir_takes_order(in->kind)) {
        op.relaxed = order_relaxed(s);
    } else if (ir_is_packet(in->kind)) {
        if (!eval_packets(ev, s, in, &op))
            return;
    } else {
        if (!eval_operands(ev, s, in->name, &op, ir_op_arity(in)))
            return;
        IrOp orig = op;
        if (!in_place_operands(ev, s, in->name, &op) || copy_in_place_identity(ev, &op, &orig))
            return;
        if (touches_own_twice(in) && !no_overlap(ev, s, in->name, &op, &orig, !ir_is_local_copy(in->kind)))
            return;
    }
    if (in->chan == CH_PORT)
        emit_port(ev, s, in, op);
    else
        emit(ev, s, op);
}

/* copy(...) and reduce(...): resolve.c made sure the name is one. */
static void eval_local(Eval *ev, const Stmt *s)
{
    const IrOpInfo *in = ir_op_by_method(CH_LOCAL, s->name);
    if (in)
        eval_op(ev, s, in, -1);
}

/* A let-bound channel's operation with the wrong arguments: resolve.c could not tell which
   channel it is (it says the same where the channel is written out). */
static void named_channel_arity(Eval *ev, const Stmt *s, const IrOpInfo *in)
{
    const Expr *a = s->args.n ? s->args.items[0] : NULL;
    int want = ir_op_arity(in);
    if (s->args.n == 1 && a->kind == E_NAME && order_name(a->name))
        ev_error(ev, a->loc, "%s takes no memory order%s", in->name, in->sync == SYNC_WAIT ? ": it always acquires"
                 : in->sync == SYNC_SIGNAL ? ": it always releases" : "");
    else
        ev_error(ev, s->name_loc, "%s takes %d argument%s, not %d", in->name, want, want == 1 ? "" : "s", s->args.n);
}

static void eval_method(Eval *ev, const Stmt *s)
{
    Value ch;
    if (!eval_channel(ev, s->channel, &ch))
        return;
    const char *on = chan_info(ch.chan)->what;
    const IrOpInfo *in = ir_op_by_method(ch.chan, s->name);
    IrChan written[CH_COUNT];
    int n = chan_written(written);
    for (int i = 0; i < n && !in; i++) {
        const IrOpInfo *other = ir_op_by_method(written[i], s->name);
        if (other) {
            ev_error(ev, s->name_loc, "%s is an operation of %s, not of %s", s->name, chan_info(written[i])->what, on);
            return;
        }
    }
    if (!in)
        ev_error(ev, s->name_loc, "%s is not an operation of %s", s->name, on);
    else if (!ir_takes_order(in->kind) && s->args.n != ir_op_arity(in))
        named_channel_arity(ev, s, in); /* resolve.c checked this where the channel was written out */
    else
        eval_op(ev, s, in, (int)ch.i);
}

/* ---- statements --------------------------------------------------------------------------- */

static void eval_stmts(Eval *ev, const StmtList *l);

static bool budget(Eval *ev, const Stmt *s)
{
    if (++ev->steps <= EVAL_MAX_STEPS)
        return true;
    ev_error(ev, s->loc, "evaluation is too large: more than %d statements evaluated in all (a loop too long?)",
             EVAL_MAX_STEPS);
    return false;
}

static void eval_for(Eval *ev, const Stmt *s)
{
    long long lo, hi;
    if (!eval_int(ev, s->value, &lo) || !eval_int(ev, s->hi, &hi))
        return;
    if (hi < lo) {
        ev_error(ev, s->value->loc, "negative range %lld .. %lld", lo, hi);
        return;
    }
    if (!push_ctx(ev, s->loc, (CtxEntry){s->name, lo, NULL}))
        return;
    for (long long i = lo; i < hi && !ev->failed; i++) {
        int mark = ev->nenv;
        bind(ev, s->name, (Value){V_INT, i, CH_LOCAL});
        ev->ctx[ev->nctx - 1].val = i;
        ev->ctx_dirty = true;
        eval_stmts(ev, &s->body);
        ev->nenv = mark;
        if (!budget(ev, s))
            break;
    }
    pop_ctx(ev);
}

static void eval_call(Eval *ev, const Stmt *s)
{
    const Decl *def = s->target;
    if (!def) {
        eval_local(ev, s);
        return;
    }
    int n = def->nparams;
    long long *args = ARENA_ARRAY(ev->arena, long long, (size_t)n + 1);
    for (int i = 0; i < n; i++)
        if (!eval_int(ev, s->args.items[i], &args[i]))
            return;
    if (!push_ctx(ev, s->loc, (CtxEntry){NULL, 0, s}))
        return;
    /* A def sees its parameters and the program's buffers, not the caller's locals: lookups
     * stop at the floor, then fall back to the base bindings. */
    int mark = ev->nenv, floor = ev->floor;
    ev->floor = ev->nenv;
    for (int i = 0; i < n; i++)
        bind(ev, def->params[i].name, (Value){V_INT, args[i], CH_LOCAL});
    eval_stmts(ev, &def->body);
    ev->nenv = mark;
    ev->floor = floor;
    pop_ctx(ev);
}

static void eval_stmt(Eval *ev, const Stmt *s)
{
    if (!budget(ev, s))
        return;
    switch (s->kind) {
    case S_LET: {
        Value v;
        if (eval_expr(ev, s->value, &v))
            bind(ev, s->name, v);
        return;
    }
    case S_FOR: eval_for(ev, s); return;
    case S_IF: {
        long long c;
        if (!eval_int(ev, s->value, &c))
            return;
        int mark = ev->nenv;
        eval_stmts(ev, c ? &s->body : &s->orelse);
        ev->nenv = mark;
        return;
    }
    case S_CALL: eval_call(ev, s); return;
    case S_METHOD: eval_method(ev, s); return;
    case S_SCRATCH:
    case S_BUFFER: return;   /* declared before evaluation (declare_buffers) */
    }
}

static void eval_stmts(Eval *ev, const StmtList *l)
{
    int mark = ev->nenv;
    for (int i = 0; i < l->n && !ev->failed; i++)
        eval_stmt(ev, l->items[i]);
    ev->nenv = mark;
}

/* ---- declarations: parameters, -D, buffers ------------------------------------------------ */

static bool parse_define(const char *text, const char **name, size_t *len, long long *value)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text)
        return false;
    /* As the language writes integers: decimal or 0x hex, an optional minus, nothing else
     * (strtoll alone would take octal, leading blanks and a plus sign). */
    const char *digits = eq + 1 + (eq[1] == '-');
    bool hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    if (!(hex ? isxdigit((unsigned char)digits[2]) : isdigit((unsigned char)digits[0])))
        return false;
    char *end;
    errno = 0;
    *value = strtoll(eq + 1, &end, hex ? 16 : 10);
    if (*end || errno)
        return false;
    *name = text;
    *len = (size_t)(eq - text);
    return true;
}

/* The -D value for parameter name, if any (the last one given wins). */
static bool define_for(Eval *ev, const EvalOptions *opt, const char *name, long long *value)
{
    bool found = false;
    for (int i = 0; i < opt->ndefines; i++) {
        const char *n;
        size_t len;
        long long v;
        if (parse_define(opt->defines[i], &n, &len, &v) && strlen(name) == len && !strncmp(n, name, len)) {
            *value = v;
            found = true;
        }
    }
    (void)ev;
    return found;
}

static bool check_defines(Eval *ev, const EvalOptions *opt)
{
    const Decl *p = ev->program;
    for (int i = 0; i < opt->ndefines; i++) {
        const char *n;
        size_t len;
        long long v;
        if (!parse_define(opt->defines[i], &n, &len, &v)) {
            diag_usage(ev->diag, "define '%s': expected name=integer", opt->defines[i]);
            return false;
        }
        bool known = len == 4 && !strncmp(n, "root", 4) && coll_has_root(coll_info(ev->ir->coll));
        for (int k = 0; k < p->nparams; k++)
            known |= strlen(p->params[k].name) == len && !strncmp(p->params[k].name, n, len);
        if (!known) {
            const char **names = ARENA_ARRAY(ev->arena, const char *, (size_t)p->nparams + 1);
            for (int k = 0; k < p->nparams; k++)
                names[k] = p->params[k].name;
            char buf[128];
            const char *typo = arena_strndup(ev->arena, n, len);
            diag_usage(ev->diag, "define '%s': program '%s' has no parameter '%s'%s", typo, p->name, typo,
                       suggest_text(typo, names, p->nparams, buf, sizeof buf));
            return false;
        }
    }
    return true;
}

/* A broadcast's or reduce's root: the name `root`, bound like nranks (visible in defs too), from
 * -D root=R or 0. The program is compiled, and checked, for that one root. */
static bool bind_root(Eval *ev, const EvalOptions *opt)
{
    const Decl *p = ev->program;
    ev->ir->root = -1;
    if (!coll_has_root(coll_info(ev->ir->coll)))
        return true;
    for (int i = 0; i < p->nparams; i++)
        if (!strcmp(p->params[i].name, "root")) {
            ev_error(ev, p->params[i].loc, "a %s's root is not a parameter: every %s program has the name 'root', "
                     "set with -D root=R (0 when not given)", ev->ir->coll_name, ev->ir->coll_name);
            return false;
        }
    long long v = 0;
    if (define_for(ev, opt, "root", &v) && (v < 0 || v >= opt->nranks)) {
        diag_usage(ev->diag, "define 'root=%lld': the root must be a rank, 0 to %d", v, opt->nranks - 1);
        return false;
    }
    ev->ir->root = (int)v;
    bind(ev, "root", (Value){V_INT, v, CH_LOCAL});
    return true;
}

/* Parameters are bound once, for all ranks; a parameter named `chunks` sets C. */
static bool bind_params(Eval *ev, const EvalOptions *opt)
{
    const Decl *p = ev->program;
    ev->ir->chunks = 1;
    for (int i = 0; i < p->nparams; i++) {
        long long v;
        bool given = define_for(ev, opt, p->params[i].name, &v);
        if (!given && !eval_int(ev, p->params[i].init, &v))
            return false;
        bind(ev, p->params[i].name, (Value){V_INT, v, CH_LOCAL});
        if (!strcmp(p->params[i].name, "chunks")) {
            if (v < 1 || v > IR_MAX_CHUNKS) {
                if (given)   /* the command line is wrong, not the declaration */
                    diag_usage(ev->diag, "define 'chunks=%lld': chunks must be between 1 and %d", v, IR_MAX_CHUNKS);
                else
                    ev_error(ev, p->params[i].loc, "chunks must be between 1 and %d, not %lld", IR_MAX_CHUNKS, v);
                return false;
            }
            ev->ir->chunks = (int)v;
        }
    }
    return true;
}

static bool add_buffer(Eval *ev, const char *name, long long nchunks, Loc at)
{
    if (nchunks < 0 || nchunks > IR_MAX_CHUNKS) {
        ev_error(ev, at, "buffer %s would have %lld chunks; the limit is 0 .. %d", name, nchunks, IR_MAX_CHUNKS);
        return false;
    }
    for (int b = 0; b < ev->ir->nbufs; b++)
        if (!strcmp(ev->ir->bufs[b].name, name)) {
            ev_error(ev, at, "buffer '%s' is declared twice", name);
            diag_note(ev->diag, ev->ir->bufs[b].loc, "first declared here");
            return false;
        }
    if (ev->ir->nbufs == IR_MAX_BUFS) {
        ev_error(ev, at, "too many buffers: input, output and at most %d scratch buffers", IR_MAX_BUFS - 2);
        return false;
    }
    ev->ir->bufs[ev->ir->nbufs++] = (IrBuf){name, (int)nchunks, at, false};
    return true;
}

/* input and output from the collective's table (or a custom program's declarations), then
 * scratch buffers; all sizes are the same on every rank. */
static bool declare_buffers(Eval *ev)
{
    IrProgram *ir = ev->ir;
    const CollInfo *ci = coll_info(ir->coll);
    bool custom = coll_declares_buffers(ci);
    long long in = custom ? 0 : ci->in(ir->nranks, ir->chunks), out = custom ? 0 : ci->out(ir->nranks, ir->chunks);
    const StmtList *body = &ev->program->body;
    Loc in_at = ev->program->loc, out_at = ev->program->loc;
    const Stmt *declared[2] = {NULL, NULL};
    for (int i = 0; i < body->n; i++) {
        const Stmt *s = body->items[i];
        if (s->kind != S_BUFFER)
            continue;
        bool is_in = !strcmp(s->name, "input");
        if (declared[!is_in] && custom) {
            ev_error(ev, s->name_loc, "%s is declared twice", s->name);
            diag_note(ev->diag, declared[!is_in]->name_loc, "first declared here");
            return false;
        }
        declared[!is_in] = s;
        *(is_in ? &in_at : &out_at) = s->name_loc;
        if ((!is_in && strcmp(s->name, "output")) || !custom) {
            ev_error(ev, s->name_loc, !custom
                                          ? "only a custom program declares input and output; %s fixes their sizes"
                                          : "a custom program declares only input[N] and output[N] this way; "
                                            "other buffers are 'scratch %s[N]'",
                     !custom ? ir->coll_name : s->name);
            return false;
        }
        if (!eval_int(ev, s->value, is_in ? &in : &out))
            return false;
    }
    if (!add_buffer(ev, "input", in, in_at) || !add_buffer(ev, "output", out, out_at))
        return false;
    for (int i = 0; i < body->n; i++) {
        const Stmt *s = body->items[i];
        long long size;
        if (s->kind == S_SCRATCH && (!eval_int(ev, s->value, &size) || !add_buffer(ev, s->name, size, s->name_loc)))
            return false;
    }
    for (int b = 0; b < ir->nbufs; b++)
        bind(ev, ir->bufs[b].name, (Value){V_BUF, b, CH_LOCAL});
    return true;
}

static bool has_nccl_in_place(const CollInfo *ci)
{
    return ci->in_place == COLL_IN_PLACE_NCCL;
}

/* In place is defined for the collectives whose input and output NCCL lets alias; a barrier
 * has no data, so it runs the same either way (colls.def's in_place). */
static bool check_in_place(Eval *ev, const EvalOptions *opt)
{
    const CollInfo *ci = coll_info(ev->ir->coll);
    if (!opt->in_place || ci->in_place == COLL_IN_PLACE_SAME)
        return true;
    if (!has_nccl_in_place(ci)) {
        char names[256];
        diag_fatal(ev->diag, "in place: program '%s' implements %s, whose input and output have no in-place form; "
                   "in place is for %s", ev->program->name, ci->name,
                   coll_list(has_nccl_in_place, " and ", names, sizeof names));
        return false;
    }
    ev->ir->in_place = true;
    return true;
}

static IrProgram *new_ir(Arena *a, const Decl *program, int nranks)
{
    IrProgram *ir = ARENA_NEW(a, IrProgram);
    ir->arena = a;
    ir->name = program->name;
    ir->loc = program->loc;
    ir->nranks = nranks;
    coll_find(program->collective, &ir->coll);
    ir->coll_name = ir_coll_name(ir->coll);
    ir->ranks = ARENA_ARRAY(a, IrSeq, (size_t)nranks);
    return ir;
}

IrProgram *eval_program(Arena *a, Diag *d, const Decl *program, const EvalOptions *opt)
{
    Eval *ev = ARENA_NEW(a, Eval);
    ev->arena = a;
    ev->diag = d;
    ev->program = program;
    ev->rank = -1;
    ev->ir = new_ir(a, program, opt->nranks);
    if (!check_defines(ev, opt) || !check_in_place(ev, opt))
        return NULL;
    bind(ev, "nranks", (Value){V_INT, opt->nranks, CH_LOCAL});
    if (!bind_root(ev, opt))
        return NULL;
    IrProgram *ir = ev->ir;
    /* Buffers first (their sizes may use parameters), visible everywhere, even inside defs. */
    int params_at = ev->nenv;
    if (!bind_params(ev, opt))
        return NULL;
    int nparams = ev->nenv - params_at;
    if (!declare_buffers(ev))
        return NULL;
    /* Reorder so that env = [nranks, buffers..., params...]: the base (visible in defs) first. */
    Binding *params = ARENA_ARRAY(a, Binding, (size_t)nparams + 1);
    memcpy(params, ev->env + params_at, sizeof(Binding) * (size_t)nparams);
    memmove(ev->env + params_at, ev->env + params_at + nparams, sizeof(Binding) * (size_t)ir->nbufs);
    memcpy(ev->env + params_at + ir->nbufs, params, sizeof(Binding) * (size_t)nparams);
    ev->nbase = params_at + ir->nbufs;
    for (int r = 0; r < ir->nranks && d->nerrors < 10; r++) {
        ev->rank = r;
        ev->failed = false;
        ev->nctx = 0;
        ev->ctx_dirty = true;
        ev->proxies = (PortProxies){.rank = r};
        eval_stmts(ev, &program->body);
        port_finish(ir, &ev->proxies);
    }
    return d->nerrors ? NULL : ir;
}
