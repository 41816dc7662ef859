#!/usr/bin/env python3
"""tests/gen/gen.py - random, well-formed .cdsl programs for differential testing.

Every program is a pure function of one integer seed. A program is built from a template (a
collective written from known-good phases: an entry handshake, a data phase, an exit
handshake, in switch / ring / mesh / pull / recursive-doubling shapes, or two phases composed
into an allreduce; and over packets, docs/language.md section 8: one-shot exchanges as in
stdlib/*_ll.cdsl, packets mixed with puts, a ring, a relay and recursive doubling over packets,
one-way shifts and broadcasts with their answers), dressed with changes that keep it correct (stronger memory orders, data
operations split into per-chunk loops, phases moved into defs, extra barrier rounds, equal
branches on `rank`), and then, for most seeds, given one injected bug (a mutation: a dropped
wait, a weakened order, a moved signal, an off-by-one chunk, an extra early switch arrival, a
switch operation whose source overlaps its destination; for packets: a one-way sender's answer
dropped (the slot rule), a receive into the wrong chunk, swapped with another or moved above its
send, what reads a received buffer moved above the receive, a send moved above what writes its
source, the relay's round made relaxed (a receive publishes nothing else), a size changed),
sometimes on one rank only. A packets mutation is given a packets template.

The first lines of each program say how it was made, so that a failure can be read:
    // gen: seed=123 template=ag_ring(put) mutation=move_signal: ...
    // expect: accept | reject (what a sound and complete checker should say; informational)
    // args: -n 4 -D chunks=2        (the arguments after the file, for cdslc and cdslrun)
    // size-chunks: 8                (chunks in the larger of input/output: the run size unit)

Used by tests/gen/diff.py (import) and from the command line:
    tests/gen/gen.py 123                 # print the program of seed 123
    tests/gen/gen.py 1 100 -o DIR        # write seeds 1..100 to DIR/g<seed>.cdsl
Python 3, standard library only.
"""
import argparse
import copy
import os
import random
import re
import sys

# ---- expressions ------------------------------------------------------------------------------

def par(e):
    e = str(e)
    return e if re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*|[0-9]+', e) else '(' + e + ')'


def mul(a, b):
    a, b = str(a), str(b)
    if b == '1':
        return a
    if a == '1':
        return b
    if a == '0' or b == '0':
        return '0'
    return par(a) + ' * ' + par(b)


def add(a, b):
    a, b = str(a), str(b)
    if b == '0':
        return a
    if a == '0':
        return b
    return a + ' + ' + par(b)


class Ref:
    """buf[lo .. lo + cnt] (or buf[lo] when cnt is 1): cnt chunks from chunk lo."""

    def __init__(self, buf, lo, cnt):
        self.buf, self.lo, self.cnt = buf, str(lo), str(cnt)

    def text(self):
        if self.cnt == '1':
            return '%s[%s]' % (self.buf, self.lo)
        return '%s[%s .. %s]' % (self.buf, self.lo, add(self.lo, self.cnt))


def blk(buf, i, C):
    """Block i of width C: chunks i*C .. (i+1)*C."""
    return Ref(buf, mul(i, C), C)

# ---- statements -------------------------------------------------------------------------------

class Sig:
    def __init__(self, ch, order, grp, explicit=False):
        self.ch, self.order, self.grp, self.explicit = ch, order, grp, explicit


class Wait:
    def __init__(self, ch, order, grp, explicit=False):
        self.ch, self.order, self.grp, self.explicit = ch, order, grp, explicit


class Op:
    """copy/reduce (local), put/get (peer channel ch), store/sreduce/sreduce_store (switch)."""

    def __init__(self, op, dst, src, src2=None, ch=None):
        # own copies of the operands, so that a mutation of one changes only that one
        self.op, self.ch = op, ch
        self.dst, self.src, self.src2 = copy.copy(dst), copy.copy(src), copy.copy(src2)


class Pk:
    """peer(p).send_packets(ref) (kind 'send') or peer(p).recv_packets(ref) (kind 'recv')."""

    def __init__(self, kind, ch, ref, grp=None):
        self.kind, self.ch, self.ref, self.grp = kind, ch, copy.copy(ref), grp


class Let:
    def __init__(self, name, expr, idx=False):
        self.name, self.expr, self.idx = name, expr, idx


class For:
    def __init__(self, var, lo, hi, body):
        self.var, self.lo, self.hi, self.body = var, str(lo), str(hi), body


class If:
    def __init__(self, cond, then, els=None):
        self.cond, self.then, self.els = cond, then, els or []


class Call:
    def __init__(self, name, args):
        self.name, self.args = name, [str(a) for a in args]


class Comment:
    def __init__(self, text):
        self.text = text


class Def:
    def __init__(self, name, params, body):
        self.name, self.params, self.body = name, params, body


OPNAME = {'store': 'switch.store', 'sreduce': 'switch.reduce', 'sreduce_store': 'switch.reduce_store'}


def neg(cond):
    m = re.fullmatch(r'!\((.*)\)', cond)
    if m and m.group(1).count('(') == m.group(1).count(')'):
        return m.group(1)
    return '!(%s)' % cond


def emit_stmts(stmts, ind, out):
    pad = '    ' * ind
    for s in stmts:
        if isinstance(s, Sig):
            o = '' if (s.order == 'release' and not s.explicit) else s.order
            out.append('%s%s.signal(%s);' % (pad, s.ch, o))
        elif isinstance(s, Wait):
            o = '' if (s.order == 'acquire' and not s.explicit) else s.order
            out.append('%s%s.wait(%s);' % (pad, s.ch, o))
        elif isinstance(s, Op):
            args = [s.dst.text(), s.src.text()] + ([s.src2.text()] if s.src2 else [])
            if s.op in ('copy', 'reduce'):
                name = s.op
            elif s.op in ('put', 'get'):
                name = '%s.%s' % (s.ch, s.op)
            else:
                name = OPNAME[s.op]
            out.append('%s%s(%s);' % (pad, name, ', '.join(args)))
        elif isinstance(s, Pk):
            out.append('%s%s.%s_packets(%s);' % (pad, s.ch, s.kind, s.ref.text()))
        elif isinstance(s, Let):
            out.append('%slet %s = %s;' % (pad, s.name, s.expr))
        elif isinstance(s, For):
            out.append('%sfor %s in %s .. %s {' % (pad, s.var, s.lo, s.hi))
            emit_stmts(s.body, ind + 1, out)
            out.append(pad + '}')
        elif isinstance(s, If):
            if not s.then:
                out.append('%sif %s {' % (pad, neg(s.cond)))
                emit_stmts(s.els, ind + 1, out)
                out.append(pad + '}')
                continue
            out.append('%sif %s {' % (pad, s.cond))
            emit_stmts(s.then, ind + 1, out)
            if len(s.els) == 1 and isinstance(s.els[0], If) and s.els[0].then:
                # else if: the nested if printed on the else line
                sub = []
                emit_stmts(s.els, ind, sub)
                out.append(pad + '} else ' + sub[0].lstrip())
                out.extend(sub[1:])
                continue
            if s.els:
                out.append(pad + '} else {')
                emit_stmts(s.els, ind + 1, out)
            out.append(pad + '}')
        elif isinstance(s, Call):
            out.append('%s%s(%s);' % (pad, s.name, ', '.join(s.args)))
        elif isinstance(s, Comment):
            out.append('%s// %s' % (pad, s.text))
        else:
            raise TypeError(s)


def children(s):
    if isinstance(s, For):
        return [s.body]
    if isinstance(s, If):
        return [s.then, s.els]
    return []


def leaves(s):
    """Every simple statement inside s (s itself if it is one)."""
    kids = children(s)
    if not kids:
        yield s
        return
    for lst in kids:
        for t in lst:
            yield from leaves(t)


def only(s, cls):
    """Whether every synchronisation or data leaf of s is a cls, and there is one."""
    ls = [x for x in leaves(s) if isinstance(x, (Sig, Wait, Op, Call, Pk))]
    return bool(ls) and all(isinstance(x, cls) for x in ls)


def has(s, cls):
    return any(isinstance(x, cls) for x in leaves(s))

# ---- the program --------------------------------------------------------------------------

class Prog:
    def __init__(self, seed, rng, n, coll, cval, use_param):
        self.seed, self.rng, self.n, self.coll = seed, rng, n, coll
        self.cval = cval                      # chunks per block, as run
        self.C = 'chunks' if use_param else '1'
        self.params = []                      # (name, default)
        self.defines = []                     # -D name=value
        self.custom = None                    # (input size expr, output size expr, largest)
        self.scratch = []                     # (name, size expr)
        self.defs = []
        self.body = []
        self.template = ''
        self.variants = []
        self.mutation = 'none'
        self.detail = ''
        self.expect = 'accept'
        self.ngrp = 0
        self.nfresh = 0
        self.harmless = False                 # a mutation that may leave it correct
        self.want_pk = False                  # a packets mutation is coming: packets templates
        if use_param:
            default = cval if rng.random() < 0.5 else rng.choice([1, 2, 3, 4])
            self.params.append(('chunks', default))
            if default != cval:
                self.defines.append('chunks=%d' % cval)

    # helpers for templates
    def coin(self, p=0.5):
        return self.rng.random() < p

    def grp(self, kind):
        self.ngrp += 1
        return '%s%d' % (kind, self.ngrp)

    def fresh(self, base):
        self.nfresh += 1
        return '%s%d' % (base, self.nfresh)

    def buf(self, base, size):
        name = self.fresh(base)
        self.scratch.append((name, size))
        return name

    def sig(self, ch, order, grp):
        return Sig(ch, order, grp, explicit=self.coin(0.3))

    def wait(self, ch, order, grp):
        return Wait(ch, order, grp, explicit=self.coin(0.3))

    def largest(self):
        if self.coll == 'barrier':
            return 0
        if self.coll == 'custom':
            return self.custom[2]
        return self.n * self.cval

    def args(self):
        a = ['-n', str(self.n)]
        for d in self.defines:
            a += ['-D', d]
        return a

    def name(self):
        return 'g%d_%s' % (self.seed, re.sub(r'[^A-Za-z0-9_]', '_', self.template.split('(')[0]))

    def text(self):
        out = ['// gen: seed=%d template=%s%s mutation=%s%s' % (
            self.seed, self.template, ''.join(' +' + v for v in self.variants), self.mutation,
            (': ' + self.detail) if self.detail else ''),
            '// expect: ' + self.expect,
            '// args: ' + ' '.join(self.args()),
            '// size-chunks: %d' % self.largest()]
        for d in self.defs:
            out.append('def %s(%s) {' % (d.name, ', '.join(d.params)))
            emit_stmts(d.body, 1, out)
            out.append('}')
        ps = '(%s)' % ', '.join('%s = %d' % p for p in self.params) if self.params else ''
        out.append('program %s%s implements %s {' % (self.name(), ps, self.coll))
        if self.custom:
            out.append('    input[%s];' % self.custom[0])
            out.append('    output[%s];' % self.custom[1])
        for name, size in self.scratch:
            out.append('    scratch %s[%s];' % (name, size))
        emit_stmts(self.body, 1, out)
        out.append('}')
        return '\n'.join(out) + '\n'

    def lists(self):
        """Every statement list: the program body, def bodies, and every nested block."""
        res = []

        def walk(lst):
            res.append(lst)
            for s in lst:
                for kid in children(s):
                    walk(kid)
        walk(self.body)
        for d in self.defs:
            walk(d.body)
        return res

# ---- channels and phases ------------------------------------------------------------------

def ring_peers(g, body):
    """next/prev channels: named with let (or spelled out at each use)."""
    nx, pv = 'peer((rank + 1) % nranks)', 'peer((rank + nranks - 1) % nranks)'
    if g.coin(0.7):
        body += [Let('next', nx), Let('prev', pv)]
        return 'next', 'prev'
    return nx, pv


def mesh(g, make, var=None):
    """A loop over every other rank p, with make('peer(p)', 'p') as its body."""
    var = var or g.fresh('p')
    if g.coin(0.3):   # rotated order: rank+1, rank+2, ...
        s = g.fresh('s')
        return For(s, 1, 'nranks', [Let(var, '(rank + %s) %% nranks' % s)] + make('peer(%s)' % var, var))
    return For(var, 0, 'nranks', [If('%s != rank' % var, make('peer(%s)' % var, var))])


def mesh_handshake(g, sorder, worder, kind):
    gr = g.grp(kind)
    return [mesh(g, lambda ch, p: [g.sig(ch, sorder, gr)]),
            mesh(g, lambda ch, p: [g.wait(ch, worder, gr)])]


def switch_round(g, sorder, worder, kind):
    gr = g.grp(kind)
    return [g.sig('switch', sorder, gr), g.wait('switch', worder, gr)]


# The orders of a handshake that publishes nothing: relaxed, sometimes strengthened (which is
# always correct, and gives the weakening mutations something to find).
def sorder_entry(g):
    return 'release' if g.coin(0.15) else 'relaxed'


def worder_entry(g):
    return 'acquire' if g.coin(0.15) else 'relaxed'


def maybe_def(g, stmts, what, C=None):
    """Moves stmts into a def called here (when they use only rank, nranks and C)."""
    if not g.coin(0.3):
        return stmts
    name = g.fresh(what)
    params, args = [], []
    if C is not None and C != '1':
        params, args = ['k'], [C]
        stmts = subst_C(stmts, C, 'k')
    g.defs.append(Def(name, params, stmts))
    return [Call(name, args)]


def subst_C(stmts, C, k):
    stmts = copy.deepcopy(stmts)
    pat = re.compile(r'\b%s\b' % re.escape(C))

    def fix(s):
        for attr in ('lo', 'hi', 'expr', 'cond', 'cnt'):
            if hasattr(s, attr) and isinstance(getattr(s, attr), str):
                setattr(s, attr, pat.sub(k, getattr(s, attr)))
        if isinstance(s, (Op, Pk)):
            for r in ((s.ref,) if isinstance(s, Pk) else (s.dst, s.src, s.src2)):
                if r:
                    r.lo, r.cnt = pat.sub(k, r.lo), pat.sub(k, r.cnt)
        for kid in children(s):
            for t in kid:
                fix(t)
    for s in stmts:
        fix(s)
    return stmts

# allgather phases: own(r) is rank r's block (C chunks) to deliver into output block r of every
# rank; own_written says it is written during the program (not the input).

def ag_switch(g, own, own_written):
    C = g.C
    body = []
    src = own('rank')
    if g.coin(0.25):
        st = g.buf('stage', C)
        body.append(Op('copy', Ref(st, 0, C), src))
        src = Ref(st, 0, C)
        g.variants.append('stage')
    body += switch_round(g, sorder_entry(g), worder_entry(g), 'entry')
    if g.coin(0.3) and C != '1':
        i = g.fresh('i')
        body.append(For(i, 0, C, [Op('store', Ref('output', add(mul('rank', C), i), 1),
                                      Ref(src.buf, add(src.lo, i), 1))]))
    else:
        body.append(Op('store', blk('output', 'rank', C), src))
    body += switch_round(g, 'release', 'acquire', 'exit')
    return body


def ag_switch_overlap(g, style):
    """Allgather through the switch whose store's source overlaps its destination on the
    executing rank. Symbolically (reading all before writing) each is an allgather; sim and the
    GPUs move data piece by piece. Needs C >= 3 for the shifted styles to overlap."""
    C = g.C
    base = mul('rank', C)
    body = switch_round(g, 'relaxed', 'relaxed', 'entry')
    if style == 'exact':
        body += [Op('copy', blk('output', 'rank', C), Ref('input', 0, C)),
                 Op('store', blk('output', 'rank', C), blk('output', 'rank', C))]
    elif style == 'backward':   # dst above src: a forward pass reads what it already wrote
        cm = C + ' - 1'
        body += [Op('copy', Ref('output', base, cm), Ref('input', 1, cm)),
                 Op('store', Ref('output', add(base, 1), cm), Ref('output', base, cm)),
                 Op('store', Ref('output', base, 1), Ref('input', 0, 1))]
    else:                       # forward: dst below src
        cm = C + ' - 1'
        body += [Op('copy', Ref('output', add(base, 1), cm), Ref('input', 0, cm)),
                 Op('store', Ref('output', base, cm), Ref('output', add(base, 1), cm)),
                 Op('store', Ref('output', add(base, cm), 1), Ref('input', cm, 1))]
    body += switch_round(g, 'release', 'acquire', 'exit')
    return body


def ar_switch_overlap(g, op, style):
    """Allreduce through a scratch of one slot of C+1 chunks per rank: every rank fills every
    slot from its input, then rank r sums slot r over every rank with a switch.reduce (or
    reduce_store) whose destination is that slot shifted by one chunk: it overlaps the source
    on the executing rank (reduce_store: on every rank) once C >= 2."""
    C = g.C
    w = C + ' + 1'
    s = g.buf('slots', mul('nranks', w))
    slot = lambda r: mul(r, w)
    lo = lambda r: add(slot(r), 1) if style == 'backward' else slot(r)       # sum
    hi = lambda r: slot(r) if style == 'backward' else add(slot(r), 1)       # inputs
    if style == 'exact':
        lo = hi = slot
    p = g.fresh('p')
    body = [For(p, 0, 'nranks', [Op('copy', Ref(s, hi(p), C), blk('input', p, C))])]
    body += switch_round(g, 'release', 'acquire', 'entry')
    if op == 'sreduce':
        body += [Op('sreduce', Ref(s, lo('rank'), C), Ref(s, hi('rank'), C)),
                 Op('store', blk('output', 'rank', C), Ref(s, lo('rank'), C))]
        return body + switch_round(g, 'release', 'acquire', 'exit')
    body.append(Op('sreduce_store', Ref(s, lo('rank'), C), Ref(s, hi('rank'), C)))
    body += switch_round(g, 'release', 'acquire', 'exit')
    q = g.fresh('p')
    body.append(For(q, 0, 'nranks', [Op('copy', blk('output', q, C), Ref(s, lo(q), C))]))
    return body


def ag_switch_staggered(g, own, own_written):
    """Half the ranks store in round 2, the rest in round 3."""
    C = g.C
    cond = g.rng.choice(['rank % 2 == 0', 'rank < nranks / 2', 'rank == 0', 'rank != nranks - 1'])
    g.variants.append('groups ' + cond)
    g.stagger = cond
    body = switch_round(g, 'relaxed', 'relaxed', 'entry')
    body.append(If(cond, [Op('store', blk('output', 'rank', C), own('rank'))]))
    body += switch_round(g, 'release', 'acquire', 'publish')
    body.append(If(cond, [], [Op('store', blk('output', 'rank', C), own('rank'))]))
    body += switch_round(g, 'release', 'acquire', 'exit')
    return body


def ag_mixed(g, own, own_written):
    """Entry over peer channels, data through the switch, exit on the switch."""
    C = g.C
    body = mesh_handshake(g, sorder_entry(g), worder_entry(g), 'entry')
    body.append(Op('store', blk('output', 'rank', C), own('rank')))
    body += switch_round(g, 'release', 'acquire', 'exit')
    return body


def copy_own(g, own):
    o = own('rank')
    if o.buf == 'output':
        return []
    return [Op('copy', blk('output', 'rank', g.C), o)]


def ag_ring(g, own, own_written):
    C = g.C
    style = g.rng.choice(['put', 'put', 'slot', 'get'])
    g.variants.append('ring ' + style)
    body = []
    nx, pv = ring_peers(g, body)
    body += copy_own(g, own)
    out = lambda c: blk('output', c, C)
    if style == 'get':
        # pull ring: at step s, next may fetch my block (rank - s); I fetch block (rank-1-s)
        gp = g.grp('publish')
        loop = [Let('c', '(rank + nranks - 1 - step) % nranks', idx=True),
                g.sig(nx, 'release', gp), g.wait(pv, 'acquire', gp),
                Op('get', out('c'), out('c'), ch=pv)]
        body.append(For('step', 0, 'nranks - 1', loop))
        gr = g.grp('exit')
        body += [g.sig(pv, sorder_entry(g), gr), g.wait(nx, worder_entry(g), gr)]
        return body
    gr = g.grp('entry')
    body += [g.sig(pv, sorder_entry(g), gr), g.wait(nx, worder_entry(g), gr)]
    gp = g.grp('publish')
    loop = [Let('c', '(rank + nranks - step) % nranks', idx=True)]
    if style == 'put':
        loop += [Op('put', out('c'), out('c'), ch=nx), g.sig(nx, 'release', gp), g.wait(pv, 'acquire', gp)]
    else:
        slot = g.buf('slot', C)
        gr2 = g.grp('reuse')
        loop += [Op('put', Ref(slot, 0, C), out('c'), ch=nx), g.sig(nx, 'release', gp),
                 g.wait(pv, 'acquire', gp),
                 Op('copy', out('(c + nranks - 1) % nranks'), Ref(slot, 0, C)),
                 g.sig(pv, sorder_entry(g), gr2), g.wait(nx, worder_entry(g), gr2)]
    body.append(For('step', 0, 'nranks - 1', loop))
    return body


def ag_mesh(g, own, own_written):
    C = g.C
    body = copy_own(g, own)
    body += maybe_def(g, mesh_handshake(g, sorder_entry(g), worder_entry(g), 'entry'), 'entry')
    src = own('rank') if g.coin() else blk('output', 'rank', C)
    gp = g.grp('publish')
    if g.coin(0.3):
        g.variants.append('fused')
        body.append(mesh(g, lambda ch, p: [Op('put', blk('output', 'rank', C), src, ch=ch),
                                           g.sig(ch, 'release', gp)]))
    else:
        body.append(mesh(g, lambda ch, p: [Op('put', blk('output', 'rank', C), src, ch=ch)]))
        body.append(mesh(g, lambda ch, p: [g.sig(ch, 'release', gp)]))
    body.append(mesh(g, lambda ch, p: [g.wait(ch, 'acquire', gp)]))
    return body


def ag_pull(g, own, own_written):
    C = g.C
    body = copy_own(g, own)
    # the peers read what I wrote in the program: then the entry must publish it
    s_e = 'release' if own_written else sorder_entry(g)
    w_e = 'acquire' if own_written else worder_entry(g)
    body += mesh_handshake(g, s_e, w_e, 'entry')
    body.append(mesh(g, lambda ch, p: [Op('get', blk('output', p, C), own(p), ch=ch)]))
    body += maybe_def(g, mesh_handshake(g, sorder_entry(g), worder_entry(g), 'exit'), 'done')
    return body


def rd_exchange(g, own, prefix, exchange):
    """Recursive doubling (n a power of two): a def of (d[, k]) that lets bit, other and mine,
    then exchange(k)'s statements, called once per distance d = 1, 2, 4, ... after this rank's
    own block is in place."""
    C = g.C
    name = g.fresh(prefix)
    params = ['d'] + (['k'] if C != '1' else [])
    k = 'k' if C != '1' else '1'
    lets = [Let('bit', '(rank / d) % 2'), Let('other', 'peer(rank + d - 2 * d * bit)'),
            Let('mine', '(rank / d) * d', idx=True)]
    g.defs.append(Def(name, params, lets + exchange(k)))
    body = copy_own(g, own) or []
    d = 1
    while d < g.n:
        body.append(Call(name, [d] + ([C] if C != '1' else [])))
        d *= 2
    return body


def ag_rd(g, own, own_written):
    """Recursive doubling: swap the block gathered so far at distance d."""
    def exchange(k):
        ge, gp = g.grp('entry'), g.grp('publish')
        return [g.sig('other', sorder_entry(g), ge), g.wait('other', worder_entry(g), ge),
                Op('put', Ref('output', mul('mine', k), mul('d', k)), Ref('output', mul('mine', k), mul('d', k)),
                   ch='other'),
                g.sig('other', 'release', gp), g.wait('other', 'acquire', gp)]
    return rd_exchange(g, own, 'exchange', exchange)

# reduce-scatter phases: leave the sum over every rank of input block `rank` in dst (C chunks,
# this rank's own buffer).

def rs_switch(g, dst):
    C = g.C
    body = switch_round(g, sorder_entry(g), worder_entry(g), 'entry')
    body.append(Op('sreduce', dst, blk('input', 'rank', C)))
    o = g.rng.choice(['relaxed', 'relaxed', 'strong'])
    body += switch_round(g, 'release' if o == 'strong' else 'relaxed',
                         'acquire' if o == 'strong' else 'relaxed', 'exit')
    return body


def rs_switch_rs(g, dst):
    """reduce_store every rank's slot into a scratch on every rank, then copy mine out."""
    C = g.C
    tmp = g.buf('sum', mul('nranks', C))
    body = switch_round(g, sorder_entry(g), worder_entry(g), 'entry')
    body.append(Op('sreduce_store', blk(tmp, 'rank', C), blk('input', 'rank', C)))
    body += switch_round(g, 'release', 'acquire', 'exit')
    body.append(Op('copy', dst, blk(tmp, 'rank', C)))
    return body


def rs_ring(g, dst):
    C = g.C
    inbox = g.buf('inbox', mul('nranks', C))
    acc = g.buf('acc', C)
    body = []
    nx, pv = ring_peers(g, body)
    gr = g.grp('entry')
    body += [g.sig(pv, sorder_entry(g), gr), g.wait(nx, worder_entry(g), gr)]
    gp = g.grp('publish')
    loop = [Let('send', '(rank + nranks - 1 - step) % nranks', idx=True),
            Let('recv', '(rank + nranks - 2 - step) % nranks', idx=True),
            If('step == 0', [Op('put', blk(inbox, 'step', C), blk('input', 'send', C), ch=nx)],
               [Op('put', blk(inbox, 'step', C), Ref(acc, 0, C), ch=nx)]),
            g.sig(nx, 'release', gp), g.wait(pv, 'acquire', gp),
            Op('reduce', Ref(acc, 0, C), blk(inbox, 'step', C), blk('input', 'recv', C))]
    body.append(For('step', 0, 'nranks - 1', loop))
    body.append(Op('copy', dst, Ref(acc, 0, C)))
    return body


def local_sum(g, dst, recv):
    """dst = my input block + recv block p for every other p."""
    C = g.C
    return [Op('copy', dst, blk('input', 'rank', C)),
            mesh(g, lambda ch, p: [Op('reduce', dst, dst, blk(recv, p, C))])]


def rs_mesh_get(g, dst):
    C = g.C
    recv = g.buf('recv', mul('nranks', C))
    body = mesh_handshake(g, sorder_entry(g), worder_entry(g), 'entry')
    body.append(mesh(g, lambda ch, p: [Op('get', blk(recv, p, C), blk('input', 'rank', C), ch=ch)]))
    body += mesh_handshake(g, sorder_entry(g), worder_entry(g), 'exit')
    return body + local_sum(g, dst, recv)


def rs_mesh_put(g, dst):
    C = g.C
    recv = g.buf('recv', mul('nranks', C))
    body = mesh_handshake(g, sorder_entry(g), worder_entry(g), 'entry')
    gp = g.grp('publish')
    body.append(mesh(g, lambda ch, p: [Op('put', blk(recv, 'rank', C), blk('input', p, C), ch=ch)]))
    body.append(mesh(g, lambda ch, p: [g.sig(ch, 'release', gp)]))
    body.append(mesh(g, lambda ch, p: [g.wait(ch, 'acquire', gp)]))
    return body + local_sum(g, dst, recv)

# packets phases (docs/language.md section 8): a send reads its source when it runs, the k-th
# receive from p takes p's k-th send to this rank, a receive orders but publishes nothing else,
# and every sender must hear from each of its readers before it ends (the slot rule).

def pk_style(g, big=False):
    """How one transfer of a block is cut into packet operations, the same on both sides:
    whole, halves (1 chunk, then the rest: sizes differ) or one operation per chunk."""
    ok = ['whole', 'whole']
    if big or g.cval >= 2:
        ok += ['halves', 'chunks']
    st = g.rng.choice(ok)
    if st != 'whole':
        g.variants.append('packets ' + st)
    return st


def pk_ops(g, kind, ch, ref, style, grp=None):
    """The packet operations of one transfer of ref (kind: send or recv) in this style."""
    if style == 'whole':
        return [Pk(kind, ch, ref, grp)]
    if style == 'halves':
        rest = ref.cnt + ' - 1'
        return [Pk(kind, ch, Ref(ref.buf, ref.lo, 1), grp),
                Pk(kind, ch, Ref(ref.buf, add(ref.lo, 1), rest), grp)]
    i = g.fresh('i')
    return [For(i, 0, ref.cnt, [Pk(kind, ch, Ref(ref.buf, add(ref.lo, i), 1), grp)])]


def pk_exchange(g, src_of, dst_of, style):
    """Every rank sends src_of(p) to every other p and receives p's into dst_of(p): split (all
    sends, then all receives, either in a def) or fused (step s: send to rank+s, receive from
    rank-s, so that no receive waits on a rank that is itself receiving first)."""
    if g.coin(0.3):
        g.variants.append('fused')
        s = g.fresh('s')
        to, fr = g.fresh('to'), g.fresh('fr')
        return [For(s, 1, 'nranks', [Let(to, '(rank + %s) %% nranks' % s), Let(fr, '(rank + nranks - %s) %% nranks' % s)] +
                    pk_ops(g, 'send', 'peer(%s)' % to, src_of(to), style) +
                    pk_ops(g, 'recv', 'peer(%s)' % fr, dst_of(fr), style))]
    sends = [mesh(g, lambda ch, p: pk_ops(g, 'send', ch, src_of(p), style))]
    recvs = [mesh(g, lambda ch, p: pk_ops(g, 'recv', ch, dst_of(p), style))]
    return sends, recvs


def ag_packets(g, own, own_written):
    """One-shot allgather over packets (allgather_ll): send my block to every peer, receive
    theirs into output."""
    C = g.C
    style = pk_style(g)
    cp = copy_own(g, own)
    src = blk('output', 'rank', C) if cp and g.coin(0.3) else own('rank')
    stage, later = [], []
    if g.coin(0.2):
        # sent from a stage written again after the sends: a receive gets the value at the send
        g.variants.append('stage overwritten')
        st = Ref(g.buf('stage', C), 0, C)
        stage = [Op('copy', st, own('rank'))]
        later = [Op('reduce', st, own('rank'), own('rank'))]
        src = st
    r = pk_exchange(g, lambda p: src, lambda p: blk('output', p, C), style)
    if not isinstance(r, tuple):
        return stage + cp + r + later
    sends, recvs = r
    sends = maybe_def(g, sends, 'send', C)
    recvs = maybe_def(g, recvs, 'recv', C)
    if src.buf != 'output' and g.coin(0.5):
        return stage + sends + later + cp + recvs          # the stdlib's order: the copy between
    return stage + cp + sends + later + recvs


def ag_pk_mixed(g, own, own_written):
    """Packets carry some of the data, put/signal/wait the rest: either chunk 0 of each block
    by packets and the rest by put (C >= 2), or pairs with (rank + p) % 3 == 1 by packets and the
    others by put."""
    C = g.C
    body = copy_own(g, own)
    src = own('rank')
    body += mesh_handshake(g, sorder_entry(g), worder_entry(g), 'entry')
    gp = g.grp('publish')
    if g.cval >= 2 and g.coin(0.5):
        g.variants.append('mixed chunks')
        rest = C + ' - 1'
        gp = g.grp('pkpub')       # the put's own publication: the packets after it publish nothing
        send = Pk('send', 'CH', Ref(src.buf, src.lo, 1))
        put = Op('put', Ref('output', add(mul('rank', C), 1), rest), Ref(src.buf, add(src.lo, 1), rest), ch='CH')
        first = [put, send] if g.coin() else [send, put]
        if first[0] is put:
            g.variants.append('put first')

        def pair(ch, p):
            ops = copy.deepcopy(first)
            for o in ops:
                o.ch = ch
            return ops + [g.sig(ch, 'release', gp)]
        body.append(mesh(g, pair))
        body.append(mesh(g, lambda ch, p: [Pk('recv', ch, Ref('output', mul(p, C), 1))]))
        body.append(mesh(g, lambda ch, p: [g.wait(ch, 'acquire', gp)]))
        return body
    g.variants.append('mixed pairs')
    cond = lambda p: '(rank + %s) %% 3 == 1' % p      # both ways alike; with 2 ranks all packets
    body.append(mesh(g, lambda ch, p: [If(cond(p), [Pk('send', ch, src)],
                                          [Op('put', blk('output', 'rank', C), src, ch=ch), g.sig(ch, 'release', gp)])]))
    body.append(mesh(g, lambda ch, p: [If(cond(p), [Pk('recv', ch, blk('output', p, C))], [g.wait(ch, 'acquire', gp)])]))
    return body


def ag_pk_ring(g, own, own_written):
    """Ring allgather over packets: at step s send block rank-s to next, receive block
    rank-s-1 from prev. One-way pairs (for n > 2): prev must answer next, by a signal
    or by packets back."""
    C = g.C
    body = []
    nx, pv = ring_peers(g, body)
    body += copy_own(g, own)
    out = lambda c: blk('output', c, C)
    loop = [Let('c', '(rank + nranks - step) % nranks', idx=True),
            Pk('send', nx, out('c')), Pk('recv', pv, out('(c + nranks - 1) % nranks'))]
    body.append(For('step', 0, 'nranks - 1', loop))
    return body + pk_answer(g, nx, pv)


def pk_answer(g, nx, pv):
    """The answer of a one-way sender: the reader pv... tells its sender (nx is whom I send to,
    pv whom I read from): a relaxed signal, or packets back."""
    if g.coin(0.6):
        g.variants.append('answer signal')
        gr = g.grp('answer')
        return [g.sig(pv, sorder_entry(g), gr), g.wait(nx, worder_entry(g), gr)]
    g.variants.append('answer packets')
    ack = g.buf('ack', 1)
    gr = g.grp('answer')
    return [Pk('send', pv, Ref('output', 0, 1), gr), Pk('recv', nx, Ref(ack, 0, 1), gr)]


def ag_pk_relay(g, own, own_written):
    """Block r travels to r+1 as packets, then every other rank gets it from r+1 after a
    release/acquire round: the receive publishes nothing, r+1's release publishes what its
    receive wrote."""
    C = g.C
    body = []
    nx, pv = ring_peers(g, body)
    body += copy_own(g, own)
    src = blk('output', 'rank', C) if own('rank').buf != 'output' or g.coin() else own('rank')
    body += [Pk('send', nx, src), Pk('recv', pv, blk('output', '(rank + nranks - 1) % nranks', C))]
    gp = g.grp('relay')
    body.append(mesh(g, lambda ch, p: [g.sig(ch, 'release', gp)]))
    body.append(mesh(g, lambda ch, p: [g.wait(ch, 'acquire', gp)]))
    b = lambda p: blk('output', '(%s + nranks - 1) %% nranks' % p, C)
    body.append(mesh(g, lambda ch, p: [If('%s != (rank + 1) %% nranks' % p, [Op('get', b(p), b(p), ch=ch)])]))
    body += maybe_def(g, mesh_handshake(g, sorder_entry(g), worder_entry(g), 'exit'), 'done')
    return body


def ag_pk_rd(g, own, own_written):
    """Recursive doubling over packets, in a def called once per distance."""
    return rd_exchange(g, own, 'xchg', lambda k: [
        Let('theirs', 'mine + d - 2 * d * bit', idx=True),
        Pk('send', 'other', Ref('output', mul('mine', k), mul('d', k))),
        Pk('recv', 'other', Ref('output', mul('theirs', k), mul('d', k)))])


def rs_packets(g, dst):
    """One-shot reduce-scatter over packets: send p its block, receive mine from each p, sum."""
    C = g.C
    got = g.buf('got', mul('nranks', C))
    style = pk_style(g)
    r = pk_exchange(g, lambda p: blk('input', p, C), lambda p: blk(got, p, C), style)
    body = r if not isinstance(r, tuple) else maybe_def(g, r[0], 'send', C) + maybe_def(g, r[1], 'recv', C)
    return body + local_sum(g, dst, got)


def ar_packets(g):
    """One-shot allreduce over packets (allreduce_ll): every rank sends its whole input."""
    C = g.C
    all_ = mul('nranks', C)
    got = g.buf('got', mul('nranks', all_))
    style = pk_style(g, big=g.n >= 2)
    body = pk_exchange(g, lambda p: Ref('input', 0, all_), lambda p: Ref(got, mul(p, all_), all_), style)
    if isinstance(body, tuple):
        body = body[0] + body[1]
    out = Ref('output', 0, all_)
    body.append(Op('copy', out, Ref('input', 0, all_)))
    body.append(mesh(g, lambda ch, p: [Op('reduce', out, out, Ref(got, mul(p, all_), all_))]))
    return body


def custom_pk_oneway(g):
    """Packets one way, answered: a shift to next, or a broadcast from a root."""
    C = g.C
    g.custom = (C, C, g.cval)
    if g.coin(0.5):
        g.template = 'custom_pk_shift'
        body = []
        nx, pv = ring_peers(g, body)
        body += [Pk('send', nx, Ref('input', 0, C)), Pk('recv', pv, Ref('output', 0, C))]
        return body + pk_answer(g, nx, pv)
    g.template = 'custom_pk_bcast'
    root = g.rng.randrange(g.n)
    gr = g.grp('answer')
    return [If('rank == %d' % root,
               [mesh(g, lambda ch, p: [Pk('send', ch, Ref('input', 0, C))]),
                Op('copy', Ref('output', 0, C), Ref('input', 0, C)),
                mesh(g, lambda ch, p: [g.wait(ch, worder_entry(g), gr)])],
               [Pk('recv', 'peer(%d)' % root, Ref('output', 0, C)),
                g.sig('peer(%d)' % root, sorder_entry(g), gr)])]

# ---- templates ----------------------------------------------------------------------------

def pow2(n):
    return n & (n - 1) == 0

AG_PHASES = [('switch', ag_switch, 1), ('staggered', ag_switch_staggered, 1), ('mixed', ag_mixed, 1),
             ('ring', ag_ring, 2), ('mesh', ag_mesh, 1), ('pull', ag_pull, 1), ('rd', ag_rd, 1),
             ('packets', ag_packets, 1), ('pk_mixed', ag_pk_mixed, 1), ('pk_ring', ag_pk_ring, 2),
             ('pk_relay', ag_pk_relay, 2), ('pk_rd', ag_pk_rd, 1)]
RS_PHASES = [('switch', rs_switch, 1), ('switch_rs', rs_switch_rs, 1), ('ring', rs_ring, 2),
             ('mesh_get', rs_mesh_get, 1), ('mesh_put', rs_mesh_put, 1), ('packets', rs_packets, 1)]


def ok_phase(name, nmin, n):
    return n >= nmin and (not name.endswith('rd') or pow2(n))


def is_pk(name):
    return name == 'packets' or name.startswith('pk_')


def phases(g, table):
    """The phases that fit n; only packets ones when a packets mutation is to be injected."""
    ok = [p for p in table if ok_phase(p[0], p[2], g.n)]
    return [p for p in ok if is_pk(p[0])] if g.want_pk else ok


# every packets template (diff.py's coverage check wants each within seeds 1..3000)
PK_TEMPLATES = ['stage overwritten', 'put first', 'ag_packets', 'ag_pk_mixed', 'ag_pk_ring', 'ag_pk_relay', 'ag_pk_rd', 'rs_packets', 'ar_ll',
                'ar_packets+', '+packets', 'custom_pk_shift', 'custom_pk_bcast', 'packets halves',
                'packets chunks', 'fused', 'answer signal', 'answer packets', 'mixed chunks', 'mixed pairs']


def t_allgather(g):
    name, fn, _ = g.rng.choice(phases(g, AG_PHASES))
    g.template = 'ag_' + name
    return fn(g, lambda r: Ref('input', 0, g.C), False)


def t_reducescatter(g):
    name, fn, _ = g.rng.choice(phases(g, RS_PHASES))
    g.template = 'rs_' + name
    return fn(g, Ref('output', 0, g.C))


def t_allreduce(g):
    C = g.C
    kind = g.rng.choice(['packets', 'compose'] if g.want_pk else
                        ['oneshot', 'twoshot', 'reduce_all', 'packets', 'compose', 'compose', 'compose'])
    if kind == 'packets':
        g.template = 'ar_ll'
        return ar_packets(g)
    if kind == 'oneshot':
        g.template = 'ar_oneshot'
        body = switch_round(g, sorder_entry(g), worder_entry(g), 'entry')
        body.append(Op('sreduce_store', blk('output', 'rank', C), blk('input', 'rank', C)))
        return body + switch_round(g, 'release', 'acquire', 'exit')
    if kind == 'twoshot':
        g.template = 'ar_twoshot'
        part = g.buf('part', C)
        body = switch_round(g, sorder_entry(g), worder_entry(g), 'entry')
        body += [Op('sreduce', Ref(part, 0, C), blk('input', 'rank', C)),
                 Op('store', blk('output', 'rank', C), Ref(part, 0, C))]
        return body + switch_round(g, 'release', 'acquire', 'exit')
    if kind == 'reduce_all':
        g.template = 'ar_reduce_all'
        all_ = mul('nranks', C)
        body = switch_round(g, sorder_entry(g), worder_entry(g), 'entry')
        body.append(Op('sreduce', Ref('output', 0, all_), Ref('input', 0, all_)))
        return body + switch_round(g, 'relaxed', 'relaxed', 'exit')
    rs = [p for p in RS_PHASES if ok_phase(p[0], p[2], g.n)]
    ag = [p for p in AG_PHASES if ok_phase(p[0], p[2], g.n)]
    rname, rfn, _ = g.rng.choice(rs)
    aname, afn, _ = g.rng.choice(ag)
    if g.want_pk and not is_pk(rname) and not is_pk(aname):
        aname, afn, _ = g.rng.choice(phases(g, AG_PHASES))
    g.template = 'ar_%s+%s' % (rname, aname)
    if aname in ('switch', 'staggered', 'mixed') or g.coin(0.3):
        part = g.buf('part', C)       # a switch store must not read what it writes
        res, own = Ref(part, 0, C), (lambda r: Ref(part, 0, C))
    else:
        res, own = blk('output', 'rank', C), (lambda r: blk('output', r, C))
    return rfn(g, res) + afn(g, own, True)


def t_barrier(g):
    kind = g.rng.choice(['switch', 'mesh', 'dissemination', 'central'])
    g.template = 'barrier_' + kind
    if kind == 'switch':
        s, w = g.rng.choice([('relaxed', 'relaxed'), ('release', 'acquire'), ('relaxed', 'acquire')])
        return switch_round(g, s, w, 'entry')
    if kind == 'mesh':
        return mesh_handshake(g, sorder_entry(g), worder_entry(g), 'entry')
    if kind == 'dissemination':
        body, d = [], 1
        while d < g.n:
            gr = g.grp('round')
            body += [g.sig('peer((rank + %d) %% nranks)' % d, sorder_entry(g), gr),
                     g.wait('peer((rank + nranks - %d) %% nranks)' % d, worder_entry(g), gr)]
            d *= 2
        return body
    root = g.rng.randrange(g.n)
    g1, g2 = g.grp('arrive'), g.grp('release')
    return [If('rank != %d' % root, [g.sig('peer(%d)' % root, sorder_entry(g), g1),
                                      g.wait('peer(%d)' % root, worder_entry(g), g2)],
               [mesh(g, lambda ch, p: [g.wait(ch, worder_entry(g), g1)]),
                mesh(g, lambda ch, p: [g.sig(ch, sorder_entry(g), g2)])])]


def t_custom(g):
    C = g.C
    kinds = ['shift', 'bcast_switch', 'gather', 'pk_oneway', 'pk_oneway'] if g.n > 1 else ['bcast_switch']
    kind = g.rng.choice(['pk_oneway'] if g.want_pk and g.n > 1 else kinds)
    if kind == 'pk_oneway':
        return custom_pk_oneway(g)
    g.template = 'custom_' + kind
    if kind == 'shift':
        g.custom = (C, C, g.cval)
        body = []
        nx, pv = ring_peers(g, body)
        gr, gp = g.grp('entry'), g.grp('publish')
        return body + [g.sig(pv, sorder_entry(g), gr), g.wait(nx, worder_entry(g), gr),
                       Op('put', Ref('output', 0, C), Ref('input', 0, C), ch=nx),
                       g.sig(nx, 'release', gp), g.wait(pv, 'acquire', gp)]
    root = g.rng.randrange(g.n)
    if kind == 'bcast_switch':
        g.custom = (C, C, g.cval)
        body = switch_round(g, sorder_entry(g), worder_entry(g), 'entry')
        body.append(If('rank == %d' % root, [Op('store', Ref('output', 0, C), Ref('input', 0, C))]))
        return body + switch_round(g, 'release', 'acquire', 'exit')
    g.custom = (C, mul('nranks', C), g.n * g.cval)
    ge, gp = g.grp('entry'), g.grp('publish')
    ch = 'peer(%d)' % root
    return [If('rank == %d' % root,
               [Op('copy', blk('output', 'rank', C), Ref('input', 0, C)),
                mesh(g, lambda c, p: [g.sig(c, sorder_entry(g), ge)]),
                mesh(g, lambda c, p: [g.wait(c, 'acquire', gp)])],
               [g.wait(ch, worder_entry(g), ge),
                Op('put', blk('output', 'rank', C), Ref('input', 0, C), ch=ch),
                g.sig(ch, 'release', gp)])]


TEMPLATES = [('allgather', t_allgather, 4), ('reducescatter', t_reducescatter, 3),
             ('allreduce', t_allreduce, 4), ('barrier', t_barrier, 1), ('custom', t_custom, 1)]

# ---- dressing that keeps a program correct ------------------------------------------------

def dress(g):
    # split a data operation over C chunks into a per-chunk loop
    if g.C != '1':
        for lst in g.lists():
            for i, s in enumerate(lst):
                if isinstance(s, Op) and g.coin(0.15) and s.dst.cnt == g.C and s.src.cnt == g.C and \
                        (s.src2 is None or s.src2.cnt == g.C):
                    v = g.fresh('i')
                    t = copy.deepcopy(s)
                    for r in (t.dst, t.src, t.src2):
                        if r:
                            r.lo, r.cnt = add(r.lo, v), '1'
                    lst[i] = For(v, 0, g.C, [t])
                    g.variants.append('per-chunk')
    # the same statement in both branches of an if on rank
    for lst in g.lists():
        for i, s in enumerate(lst):
            if isinstance(s, (Op, Sig, Wait, Pk)) and g.coin(0.06):
                if g.coin(0.5):
                    lst[i] = If(g.rng.choice(['rank % 2 == 0', 'rank == 0', 'rank < nranks / 2']),
                                [s], [copy.deepcopy(s)])
                else:
                    lst[i] = If('rank == 0', [s], [If('rank == nranks - 1 || rank == 1', [copy.deepcopy(s)],
                                                       [copy.deepcopy(s)])])
                g.variants.append('if-both')
    # extra barrier rounds at the end
    if g.coin(0.2):
        if g.coin(0.5):
            g.params.append(('rounds', g.rng.choice([1, 2])))
            r = 'rounds'
        else:
            r = str(g.rng.choice([1, 2]))
        gr = g.grp('extra')
        g.body.append(For(g.fresh('r'), 0, r, [g.sig('switch', 'relaxed', gr), g.wait('switch', 'relaxed', gr)]))
        g.variants.append('extra rounds')
    elif g.coin(0.1) and g.n > 1:
        g.body += mesh_handshake(g, 'relaxed', 'relaxed', 'extra')
        g.variants.append('extra mesh round')

# ---- mutations ----------------------------------------------------------------------------

def sites(g, pred):
    return [(lst, i) for lst in g.lists() for i, s in enumerate(lst) if pred(s)]


def one_rank(g, lst, i, mutated, label):
    """Applies a mutation to one rank only (sometimes): if rank == k { mutated } else { original }."""
    if g.n > 1 and g.coin(0.3):
        k = g.rng.randrange(g.n)
        lst[i] = If('rank == %d' % k, mutated, [lst[i]])
        return label + ' on rank %d' % k
    lst[i:i + 1] = mutated
    return label


def describe(s):
    out = []
    emit_stmts([s], 0, out)
    return out[0].strip().rstrip('{').strip()


def m_drop(cls, what):
    def m(g):
        c = sites(g, lambda s: only(s, cls))
        if not c:
            return None
        lst, i = g.rng.choice(c)
        return one_rank(g, lst, i, [], 'dropped %s `%s`' % (what, describe(lst[i])))
    return m


def m_drop_handshake(g):
    grps = sorted({x.grp for lst in g.lists() for s in lst for x in leaves(s) if isinstance(x, (Sig, Wait))})
    if not grps:
        return None
    gr = g.rng.choice(grps)

    def prune(lst):
        keep = []
        for s in lst:
            if isinstance(s, (Sig, Wait)) and s.grp == gr:
                continue
            for kid in children(s):
                kid[:] = prune(kid)
            if children(s) and not [x for x in leaves(s) if not isinstance(x, (Let, Comment, For, If))]:
                continue
            keep.append(s)
        return keep
    g.body[:] = prune(g.body)
    for d in g.defs:
        d.body[:] = prune(d.body)
    return 'dropped every signal and wait of handshake %s' % re.sub(r'\d+$', '', gr)


def m_drop_pair(g):
    """One pair of ranks skips one mesh handshake with each other, consistently on both sides:
    the synchronisation still matches, one ordering is gone."""
    if g.n < 3:
        return None
    pat = re.compile(r'^peer\(([A-Za-z_][A-Za-z0-9_]*)\)$')
    found = {}
    for lst in g.lists():
        for i, s in enumerate(lst):
            if isinstance(s, (Sig, Wait)) and pat.match(s.ch):
                found.setdefault(s.grp, []).append((lst, i))
    grps = sorted(k for k, v in found.items() if len(v) >= 2)
    if not grps:
        return None
    gr = g.rng.choice(grps)
    a, b = g.rng.sample(range(g.n), 2)
    for lst, i in found[gr]:
        v = pat.match(lst[i].ch).group(1)
        lst[i] = If('!(rank == %d && %s == %d || rank == %d && %s == %d)' % (a, v, b, b, v, a), [lst[i]])
    return 'ranks %d and %d skip handshake %s with each other' % (a, b, re.sub(r'\d+$', '', gr))


def m_weaken(cls, strong):
    def m(g):
        c = sites(g, lambda s: isinstance(s, cls) and s.order == strong)
        if not c:
            return None
        lst, i = g.rng.choice(c)
        t = copy.deepcopy(lst[i])
        t.order, t.explicit = 'relaxed', True
        return one_rank(g, lst, i, [t], '%s -> relaxed at `%s`' % (strong, describe(lst[i])))
    return m


def m_move_signal(g):
    c = []
    for lst in g.lists():
        for i, s in enumerate(lst):
            if not only(s, Sig):
                continue
            j = i - 1
            while j >= 0 and not has(lst[j], Wait) and not has(lst[j], Op) and not has(lst[j], Call):
                j -= 1
            if j >= 0 and has(lst[j], Op) and not has(lst[j], Wait):
                c.append((lst, i, j))
    if not c:
        return None
    lst, i, j = g.rng.choice(c)
    s = lst.pop(i)
    what = describe(s)
    lst.insert(j, s)
    return 'signal `%s` moved above `%s`' % (what, describe(lst[j + 1]))


def m_move_data_up(g):
    """A data operation moved above the wait that orders it after its peer's entry or data."""
    c = []
    for lst in g.lists():
        for i, s in enumerate(lst):
            if not only(s, Op) or not any(x.op in ('put', 'get', 'store', 'sreduce', 'sreduce_store', 'reduce', 'copy')
                                          for x in leaves(s) if isinstance(x, Op)):
                continue
            j = i - 1
            while j >= 0 and not has(lst[j], Wait) and not has(lst[j], Call):
                j -= 1
            if j >= 0 and only(lst[j], Wait):
                c.append((lst, i, j))
    if not c:
        return None
    lst, i, j = g.rng.choice(c)
    s = lst.pop(i)
    lst.insert(j, s)
    return '`%s` moved above wait `%s`' % (describe(s), describe(lst[j + 1]))


def m_off_by_one(g):
    refs = [(s, a) for lst in g.lists() for s in lst if isinstance(s, Op) for a in ('dst', 'src', 'src2')
            if getattr(s, a)]
    lets = sites(g, lambda s: isinstance(s, Let) and s.idx)
    if lets and g.coin(0.6):
        lst, i = g.rng.choice(lets)
        t = copy.deepcopy(lst[i])
        d = g.rng.choice(['1', 'nranks - 1'])
        t.expr = '(%s + %s) %% nranks' % (t.expr, d)
        return one_rank(g, lst, i, [t], '`let %s` off by %s' % (t.name, '+1' if d == '1' else '-1'))
    if not refs:
        return None
    s, a = g.rng.choice(refs)
    r = getattr(s, a)
    before = r.text()
    r.lo = '%s - 1' % r.lo if r.lo != '0' and g.coin() else add(r.lo, 1)
    return '%s of `%s` off by one: %s -> %s' % (a, describe(s), before, r.text())


def switch_pairs(lst):
    return [i for i in range(len(lst) - 1)
            if isinstance(lst[i], Sig) and lst[i].ch == 'switch' and isinstance(lst[i + 1], Wait)
            and lst[i + 1].ch == 'switch']


def m_extra_switch_arrival(g):
    """Two switch.signal()s before the matching wait; the extra arrival's wait comes last."""
    c = switch_pairs(g.body)
    if not c:
        return None
    i = g.rng.choice(c)
    o = g.rng.choice(['relaxed', 'release'])
    g.body.insert(i + 1, Sig('switch', o, 'extra', True))
    g.body.append(Wait('switch', g.rng.choice(['relaxed', 'acquire']), 'extra', True))
    return 'extra switch.signal(%s) after `%s`, its wait at the end' % (o, describe(g.body[i]))


def m_early_switch_arrival(g):
    """On some ranks, the next round's switch arrival is made before this round's wait."""
    c = []
    for i in switch_pairs(g.body):
        nxt = [j for j in range(i + 2, len(g.body)) if isinstance(g.body[j], Sig) and g.body[j].ch == 'switch']
        if nxt:
            c.append((i, nxt[0]))
    if not c:
        return None
    i, j = g.rng.choice(c)
    cond = getattr(g, 'stagger', None)
    cond = neg(cond) if cond and g.coin(0.8) else g.rng.choice(
        ['rank % 2 == 1', 'rank == 0', 'rank != 0', 'rank >= nranks / 2'])
    moved = g.body[j]
    g.body[j] = If(cond, [], [moved])
    g.body.insert(i + 1, If(cond, [copy.deepcopy(moved)]))
    return 'ranks with %s make round %s\'s arrival `%s` before round %s\'s wait' % (
        cond, 'k+1', describe(moved), 'k')


def m_swap_sig_wait(g):
    c = [(lst, i) for lst in g.lists() for i in range(len(lst) - 1)
         if only(lst[i], Sig) and only(lst[i + 1], Wait)]
    if not c:
        return None
    lst, i = g.rng.choice(c)
    lst[i], lst[i + 1] = lst[i + 1], lst[i]
    return 'wait `%s` moved above signal `%s`' % (describe(lst[i]), describe(lst[i + 1]))


def m_skip_rank(g):
    c = sites(g, lambda s: isinstance(s, Op))
    if not c or g.n < 2:
        return None
    lst, i = g.rng.choice(c)
    k = g.rng.randrange(g.n)
    what = describe(lst[i])
    lst[i] = If('rank != %d' % k, [lst[i]])
    return 'rank %d skips `%s`' % (k, what)


def m_extra_signal(g):
    c = sites(g, lambda s: only(s, Sig))
    if not c:
        return None
    lst, i = g.rng.choice(c)
    what = describe(lst[i])
    lst.insert(i + 1, copy.deepcopy(lst[i]))
    return 'signal `%s` made twice' % what


def m_loop_bound(g):
    """A loop that runs one step too many or too few."""
    c = sites(g, lambda s: isinstance(s, For) and has(s, Op) or isinstance(s, For) and has(s, Sig))
    if not c:
        return None
    lst, i = g.rng.choice(c)
    t = copy.deepcopy(lst[i])
    before = describe(t)
    t.hi = g.rng.choice(['%s + 1', '%s - 1']) % t.hi
    return one_rank(g, lst, i, [t], 'loop bound off by one: `%s` -> `%s`' % (before, describe(t)))


def m_wrong_peer(g):
    """A channel to the neighbour after next."""
    pat = re.compile(r'rank \+ 1\)|rank \+ nranks - 1\)')
    c = sites(g, lambda s: isinstance(s, Let) and 'peer(' in s.expr and pat.search(s.expr) or
              isinstance(s, (Sig, Wait, Op)) and s.ch and pat.search(s.ch))
    if not c:
        return None
    lst, i = g.rng.choice(c)
    t = copy.deepcopy(lst[i])
    fix = lambda e: pat.sub(lambda m: m.group(0).replace('1', '2'), e)
    if isinstance(t, Let):
        t.expr = fix(t.expr)
    else:
        t.ch = fix(t.ch)
    return one_rank(g, lst, i, [t], 'wrong peer: `%s` -> `%s`' % (describe(lst[i]), describe(t)))


def m_write_input(g):
    """After everything, this rank reuses its input as scratch: right for this run, but the
    runtime runs a program several times on inputs filled once."""
    C = g.C
    if g.coll == 'allgather':
        src = blk('output', '(rank + 1) % nranks', C)
    elif g.coll == 'reducescatter':
        src = Ref('output', 0, C)
    elif g.coll == 'allreduce':
        src = blk('output', 'rank', C)
    else:
        return None
    dst = Ref('input', 0, C) if g.coll == 'allgather' else blk('input', 'rank', C)
    if g.coin(0.3):
        g.body.append(Op('reduce', dst, copy.copy(dst), src))
    else:
        g.body.append(Op('copy', dst, src))
    return 'the input overwritten at the end: `%s`' % describe(g.body[-1])


# ---- packets mutations --------------------------------------------------------------------

def pk_leaves(s, kind=None):
    return [x for x in leaves(s) if isinstance(x, Pk) and (kind is None or x.kind == kind)]


def only_pk(s, kind):
    """s is packet operations of this kind only (with lets): a receive, a loop of sends, ..."""
    ls = [x for x in leaves(s) if not isinstance(x, (Let, Comment))]
    return bool(ls) and all(isinstance(x, Pk) and x.kind == kind for x in ls)


def m_pk_drop_answer(g):
    """The answer of a one-way sender dropped on both sides (its signal and wait, or its packets
    back): the sender may run two launches ahead of its reader (the slot rule)."""
    grps = sorted({x.grp for lst in g.lists() for s in lst for x in leaves(s)
                   if isinstance(x, (Sig, Wait, Pk)) and x.grp and x.grp.startswith('answer')})
    if not grps:
        return None
    gr = g.rng.choice(grps)

    def prune(lst):
        keep = []
        for s in lst:
            if isinstance(s, (Sig, Wait, Pk)) and s.grp == gr:
                continue
            for kid in children(s):
                kid[:] = prune(kid)
            if children(s) and not [x for x in leaves(s) if not isinstance(x, (Let, Comment, For, If))]:
                continue      # a loop or if left empty
            keep.append(s)
        return keep
    g.body[:] = prune(g.body)
    for d in g.defs:
        d.body[:] = prune(d.body)
    if 'pk_ring' in g.template:
        # r's last receive comes after a chain of n-1 receives that starts at r+1's first send
        g.harmless = True
        return 'dropped the answer to the ring\'s packet senders (the ring\'s chain answers)'
    if g.n == 2 and 'bcast' not in g.template:
        g.harmless = True        # next is prev: the packets each way answer each other
        return 'dropped the answer to the one-way packet sender (none needed with 2 ranks)'
    if any(v.startswith('extra') for v in g.variants):
        g.harmless = True        # the extra rounds at the end order every rank before every end
        return 'dropped the answer to the one-way packet sender (the extra rounds at the end answer)'
    return 'dropped the answer to the one-way packet sender'


def m_pk_recv_wrong_chunk(g):
    c = [x for lst in g.lists() for s in lst if isinstance(s, Pk) and s.kind == 'recv' for x in [s]]
    if not c:
        return None
    s = g.rng.choice(c)
    before = s.ref.text()
    s.ref.lo = '%s - 1' % par(s.ref.lo) if s.ref.lo != '0' and g.coin() else add(s.ref.lo, 1)
    return 'receive into the wrong chunk: `%s` -> %s' % (before, s.ref.text())


def m_pk_swap_recvs(g):
    """Two receives from one peer swapped (sizes differ, or the data lands swapped), or a
    receive moved above the send before it (every rank receives first: deadlock)."""
    two = [(lst, i) for lst in g.lists() for i in range(len(lst) - 1)
           if isinstance(lst[i], Pk) and isinstance(lst[i + 1], Pk) and lst[i].kind == lst[i + 1].kind == 'recv'
           and lst[i].ch == lst[i + 1].ch]
    if two and g.coin(0.6):
        lst, i = g.rng.choice(two)
        lst[i], lst[i + 1] = lst[i + 1], lst[i]
        return 'receives swapped: `%s` now after `%s`' % (describe(lst[i + 1]), describe(lst[i]))
    sr = [(lst, i) for lst in g.lists() for i in range(1, len(lst))
          if only_pk(lst[i], 'recv') and only_pk(lst[i - 1], 'send')]
    if not sr:
        return None
    lst, i = g.rng.choice(sr)
    # with a send before the pair (halves, fused), the moved receive may take what that one sent
    g.harmless = any(pk_leaves(lst[k], 'send') for k in range(i - 1))
    lst[i - 1], lst[i] = lst[i], lst[i - 1]
    return 'receive `%s` moved above send `%s`' % (describe(lst[i - 1]), describe(lst[i]))


def writes(s):
    return {x.dst.buf for x in leaves(s) if isinstance(x, Op) and x.op != 'put'} | \
        {x.ref.buf for x in leaves(s) if isinstance(x, Pk) and x.kind == 'recv'}


def reads(s):
    return {r.buf for x in leaves(s) if isinstance(x, Op) and x.op != 'get' for r in (x.src, x.src2) if r} | \
        {x.ref.buf for x in leaves(s) if isinstance(x, Pk) and x.kind == 'send'}


def m_pk_move_recv(g):
    """What reads a received buffer moved above the receive: it reads before the data came."""
    c = []
    for lst in g.lists():
        for i, s in enumerate(lst):
            if not only_pk(s, 'recv'):
                continue
            bufs = writes(s)
            for j in range(i + 1, len(lst)):
                if reads(lst[j]) & bufs and not has(lst[j], Wait) and not has(lst[j], Sig):
                    c.append((lst, i, j))
                    break
    if not c:
        return None
    lst, i, j = g.rng.choice(c)
    t = lst.pop(j)
    lst.insert(i, t)
    g.harmless = g.coll == 'custom'      # whose values nothing checks
    return '`%s` moved above receive `%s`' % (describe(t), describe(lst[i + 1]))


def m_pk_move_send(g):
    """A send moved above what writes its source: it sends the old value."""
    c = []
    for lst in g.lists():
        for i, s in enumerate(lst):
            if not only_pk(s, 'send'):
                continue
            bufs = {x.ref.buf for x in pk_leaves(s)}
            for j in range(i - 1, -1, -1):
                if has(lst[j], Wait) or has(lst[j], Pk) or has(lst[j], Call):
                    break
                if writes(lst[j]) & bufs:
                    c.append((lst, i, j))
                    break
            for j in range(i + 1, len(lst)):       # a write after the send (value at the send)
                if has(lst[j], Wait) or has(lst[j], Pk) or has(lst[j], Call):
                    break
                if writes(lst[j]) & bufs:
                    c.append((lst, i, j))
                    break
    if not c:
        return None
    lst, i, j = g.rng.choice(c)
    if j > i:
        t = lst.pop(j)
        lst.insert(i, t)
        return '`%s`, which writes the source of send `%s`, moved above it' % (describe(t), describe(lst[i + 1]))
    t = lst.pop(i)
    lst.insert(j, t)
    return 'send `%s` moved above `%s`, which writes its source' % (describe(t), describe(lst[j + 1]))


def m_pk_publish_nothing(g):
    """The relay's release round made relaxed: the third rank's get reads what the relay's
    receive wrote after a path of packets and relaxed signals only."""
    c = [x for lst in g.lists() for s in lst for x in leaves(s)
         if isinstance(x, Sig) and x.grp.startswith('relay')]
    if not c and 'put first' in g.variants:
        # packets after a put: without the put's own signal and wait, only the packets remain
        return m_drop_group(g, 'pkpub', 'the put before the packets loses its signal and wait: '
                            'the packets publish nothing else')
    if not c:
        return None
    for x in c:
        x.order, x.explicit = 'relaxed', True
    g.harmless = g.n == 2                # no third rank gets anything
    return 'the relay round signals relaxed: a receive publishes nothing, and nothing else does'


def m_drop_group(g, prefix, what):
    grps = {x.grp for lst in g.lists() for s in lst for x in leaves(s)
            if isinstance(x, (Sig, Wait)) and x.grp.startswith(prefix)}

    def prune(lst):
        keep = []
        for s in lst:
            if isinstance(s, (Sig, Wait)) and s.grp in grps:
                continue
            for kid in children(s):
                kid[:] = prune(kid)
            if children(s) and not [x for x in leaves(s) if not isinstance(x, (Let, Comment, For, If))]:
                continue
            keep.append(s)
        return keep
    g.body[:] = prune(g.body)
    for d in g.defs:
        d.body[:] = prune(d.body)
    return what


def m_pk_size(g):
    c = [s for lst in g.lists() for s in lst if isinstance(s, Pk)]
    if not c:
        return None
    s = g.rng.choice(c)
    before = describe(s)
    if s.ref.cnt not in ('1', '0') and g.coin():
        s.ref.cnt = s.ref.cnt + ' - 1' if not s.ref.cnt.endswith(' - 1') else s.ref.cnt[:-4]
    else:
        s.ref.cnt = add(s.ref.cnt, 1)
    return 'packet size changed: `%s` -> `%s`' % (before, describe(s))


MUTATIONS = [
    ('drop_wait', m_drop(Wait, 'wait'), 3),
    ('drop_signal', m_drop(Sig, 'signal'), 1),
    ('drop_handshake', m_drop_handshake, 3),
    ('drop_pair', m_drop_pair, 2),
    ('weaken_release', m_weaken(Sig, 'release'), 3),
    ('weaken_acquire', m_weaken(Wait, 'acquire'), 3),
    ('move_signal', m_move_signal, 4),
    ('move_data_up', m_move_data_up, 3),
    ('off_by_one', m_off_by_one, 4),
    ('extra_switch_arrival', m_extra_switch_arrival, 2),
    ('early_switch_arrival', m_early_switch_arrival, 2),
    ('switch_overlap', None, 2),
    ('swap_sig_wait', m_swap_sig_wait, 1),
    ('skip_rank', m_skip_rank, 2),
    ('extra_signal', m_extra_signal, 1),
    ('write_input', m_write_input, 1),
    ('loop_bound', m_loop_bound, 1),
    ('wrong_peer', m_wrong_peer, 1),
    ('pk_drop_answer', m_pk_drop_answer, 2),
    ('pk_recv_wrong_chunk', m_pk_recv_wrong_chunk, 2),
    ('pk_swap_recvs', m_pk_swap_recvs, 2),
    ('pk_move_recv', m_pk_move_recv, 2),
    ('pk_move_send', m_pk_move_send, 2),
    ('pk_publish_nothing', m_pk_publish_nothing, 1),
    ('pk_size', m_pk_size, 2),
]

# Mutations that may leave a program correct under the language's per-rank switch counting
# (the checker accepting them is then no bug today); each is still checked against sim.
MAYBE_HARMLESS = {'early_switch_arrival', 'extra_switch_arrival'}

# ---- one program --------------------------------------------------------------------------

def pick(rng, weighted):
    total = sum(w for *_, w in weighted)
    x = rng.uniform(0, total)
    for item in weighted:
        x -= item[-1]
        if x <= 0:
            return item
    return weighted[-1]


def generate(seed, max_n=9, mutate_p=0.6):
    """The program of this seed (a Prog), with n <= max_n."""
    rng = random.Random(seed)
    n = 1 if max_n == 1 or rng.random() < 0.05 else rng.randint(2, max_n)
    coll, fn, _ = pick(rng, TEMPLATES)
    mut = pick(rng, MUTATIONS) if rng.random() < mutate_p else None
    cval = rng.choice([1, 1, 2, 2, 3, 4])
    if mut and mut[0] == 'switch_overlap':
        coll = rng.choice(['allgather', 'allreduce'])
        cval = max(cval, 3 if coll == 'allgather' else 2)
        if n > 4:
            n = rng.randint(1, 4)
    use_param = cval != 1 or rng.random() < 0.3
    g = Prog(seed, rng, n, coll, cval, use_param)
    if mut and mut[0].startswith('pk_'):
        g.want_pk = True
        if n == 1 and max_n > 1:          # no packets move with one rank
            n = g.n = rng.randint(2, max_n)
        if coll == 'barrier' or coll == 'custom' and n == 1:
            coll, fn = 'allgather', t_allgather
            g.coll = coll
    if mut and mut[0] == 'switch_overlap':
        style = rng.choice(['backward', 'backward', 'forward', 'exact'])
        if coll == 'allgather':
            g.template = 'ag_switch_overlap(%s)' % style
            g.body = ag_switch_overlap(g, style)
            op = 'store'
        else:
            op = rng.choice(['sreduce', 'sreduce_store'])
            g.template = 'ar_%s_overlap(%s)' % (op, style)
            g.body = ar_switch_overlap(g, op, style)
        g.mutation, g.expect = 'switch_overlap', 'reject'
        g.detail = 'a %s reads chunks it writes on the same rank (%s)' % (OPNAME[op], style)
        return g
    g.body = fn(g)
    dress(g)
    if mut:
        rest = [m for m in MUTATIONS if m is not mut and m[1]]
        rng.shuffle(rest)     # when the chosen one finds no place, another one does
        for name, m, _ in [mut] + rest:
            if m is None or name.startswith('pk_') and g.n == 1:
                continue
            d = m(g)
            if d:
                g.mutation, g.detail = name, d
                g.expect = 'accept?' if name in MAYBE_HARMLESS or g.harmless else 'reject'
                break
    return g


def main(argv):
    ap = argparse.ArgumentParser(description='Print or write random .cdsl programs (see the file header).')
    ap.add_argument('first', type=int, help='seed (or first seed with LAST)')
    ap.add_argument('last', type=int, nargs='?', help='last seed, inclusive')
    ap.add_argument('-o', '--out', help='folder to write g<seed>.cdsl into')
    ap.add_argument('--max-n', type=int, default=9)
    a = ap.parse_args(argv)
    last = a.last if a.last is not None else a.first
    for s in range(a.first, last + 1):
        text = generate(s, a.max_n).text()
        if a.out:
            os.makedirs(a.out, exist_ok=True)
            with open(os.path.join(a.out, 'g%d.cdsl' % s), 'w') as f:
                f.write(text)
        else:
            sys.stdout.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
