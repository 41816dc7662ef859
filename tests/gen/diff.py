#!/usr/bin/env python3
"""tests/gen/diff.py - the differential tester: the checker's verdict against what runs.

For each program of tests/gen/gen.py (seeds START .. START+COUNT-1) it takes the checker's
verdict (`cdslc prog -n N`: 0 accepted, 1 rejected) and runs the program on the sim backend
without the checker (`cdslrun --unchecked --backend sim --seed S --jitter J --size Z`, sizes
chosen so that chunks move in several 256 KiB pieces, several jitter seeds, sometimes two
iterations and other element types; a program with packets also one small run of 24, where a
packet sender that need not hear from its reader runs two launches ahead). The property:

    whatever the checker accepts verifies under every seed (exit 0);
    whatever sim shows wrong (exit 5) or stuck (exit 4) was rejected.

A correct-by-construction program (mutation none) that the checker rejects is reported too (a
generator bug, or the checker refusing a correct program). Then every kept reproducer
tests/gen/found/*.cdsl is checked with the same property. Disagreements whose cause is being
fixed are listed in tests/gen/found/KNOWN (a found test's name, or `mutation:NAME` for a class
of generated programs) and reported as [SKIP] with the reason while they still disagree.

Output: one `[PASS]`/`[FAIL]`/`[SKIP]` line per check (tests/run.sh counts them), for each
disagreement the kept file and the exact commands that reproduce it, and the verdict mix
(accepted/rejected per mutation, and what sim made of the rejected ones).

    tests/gen/diff.sh                              # the suite's bounded run (make test)
    tests/gen/diff.sh --count 5000 --seeds 8       # a long campaign (add --jobs 2, nice)
    tests/gen/diff.sh --asan --count 2000          # also the ASan/UBSan cdslc: same verdict
    tests/gen/diff.sh --start 700 --count 1 -v     # one program, verbosely
    tests/gen/diff.sh --backend p2p --count 200 --ranks-per-gpu 2   # on a GPU machine
The p2p mode runs only the programs the checker accepts (p2p refuses unchecked ones), each
under several sizes, element types and iterations, and requires every run to verify; it sets
the NVLS-off environment variables and stops at once, saying why, where no GPU can run p2p.
"""
import argparse
import collections
import concurrent.futures
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True   # no __pycache__ in the tree
sys.path.insert(0, HERE)
import gen  # noqa: E402

CDSLC = os.environ.get('CDSLC', os.path.join(ROOT, 'build', 'cdslc'))
CDSLRUN = os.environ.get('CDSLRUN', os.path.join(ROOT, 'build', 'cdslrun'))
ASAN_CDSLC = os.environ.get('ASAN_CDSLC', os.path.join(ROOT, 'build', 'asan', 'cdslc'))
# A sanitizer's report must not read as "rejected" (exit 1).
ASAN_ENV = dict(os.environ, ASAN_OPTIONS='detect_leaks=1:exitcode=99', UBSAN_OPTIONS='halt_on_error=1:exitcode=98')
NVLS_OFF = {'CDSL_NVLS': '0', 'NCCL_NVLS_ENABLE': '0', 'NVSHMEM_DISABLE_NVLS': '1',
            'TORCH_SYMM_MEM_DISABLE_MULTICAST': '1'}
SIM_BLOCK = 256 * 1024
SPIN_ACCEPTED = 20000      # polls without progress (about a second) before a wait gives up
SPIN_REJECTED = 4000       # rejected programs often hang on purpose: give up sooner
RUN_EXITS = {0: 'verified', 1: 'program error', 4: 'a wait gave up', 5: 'wrong result'}

out_lock = threading.Lock()
failed = [False]


def say(line):
    with out_lock:
        failed[0] = failed[0] or line.startswith('[FAIL]')
        print(line, flush=True)


def run(cmd, timeout, env=None):
    """(exit status, stdout + stderr) of cmd; 124 when it ran past timeout."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b'') + (e.stderr or b'')
        return 124, text.decode(errors='replace') if isinstance(text, bytes) else text


def quote(cmd):
    return ' '.join(shlex.quote(c) for c in cmd)


def first_error(text):
    lines = [l for l in text.splitlines() if 'error' in l and 'warning' not in l]
    return (lines or [l for l in text.splitlines() if l.strip()] or [''])[0].strip()

# ---- run parameters ---------------------------------------------------------------------

def sim_runs(seed, n, largest, count, packets=False):
    """`count` deterministic sim runs for program `seed`: jitter seed, size, jitter, dtype, iters.
    Chunks are mostly over one 256 KiB piece, so that a chunk moves in several pieces; a
    buffer holds at most 32 MiB / n (the suite's time goes into moving bytes). A program with
    packets has its last run small and of many iterations: a sender that may run two launches
    ahead of its reader (the slot rule) shows only over several launches (a rejected one, of
    one run, gets that run as a second)."""
    rng = random.Random(seed * 1000003 + 17)
    cap = (32 << 20) // max(n, 1)
    runs = []
    if packets and count == 1:
        count = 2
    for k in range(count):
        if largest == 0:
            size = 4096
        else:
            chunk = rng.choice([1 << 20, 3 * SIM_BLOCK + 12, 300 * 1024, SIM_BLOCK, 4100])
            if k == 0:
                chunk = 1 << 20
            chunk = min(chunk, cap // largest) // 4 * 4
            size = max(chunk, 4) * largest
        many = packets and k == count - 1 and k > 0
        if many:
            size = 1024 * max(largest, 1)
        runs.append(['--seed', str(rng.randrange(1, 1 << 30)), '--size', str(size),
                     '--jitter', str(rng.choice([5, 20, 50])),
                     '--dtype', rng.choice(['f32', 'f32', 'f32', 'u32', 's32', 'f16', 'bf16']),
                     '--iters', str(24 if many else 2 if k == 0 else rng.choice([1, 1, 2]))])
    return runs


def p2p_runs(seed, count, rpg):
    rng = random.Random(seed * 1000003 + 29)
    runs = []
    for k in range(count):
        lo, hi = rng.choice([('4K', '64M'), ('1K', '1M'), ('1M', '256M'), ('64K', '16M')])
        runs.append(['--sizes', '%s:%s:4' % (lo, hi), '--iters', str(rng.choice([1, 3])),
                     '--dtype', 'f32' if k == 0 else rng.choice(['f32', 'u32', 'f16', 'bf16', 's32']),
                     '--ranks-per-gpu', str(rpg)])
    return runs

# ---- KNOWN --------------------------------------------------------------------------------

def read_known(path):
    known = {}
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line and not line.startswith('#'):
                name, _, why = line.partition(' ')
                known[name] = why.strip()
    return known

# ---- one program --------------------------------------------------------------------------

class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_mut = collections.defaultdict(collections.Counter)
        self.total = collections.Counter()
        self.fails = 0
        self.known = collections.Counter()

    def add(self, mut, key):
        with self.lock:
            self.by_mut[mut][key] += 1
            self.total[key] += 1


class Ctx:
    def __init__(self, a, keep, known, stats):
        self.a, self.keep, self.known, self.stats = a, keep, known, stats


def judge_sim(c, path, args, runs, spin, accepted):
    """Runs on sim; returns (outcome, run args, output) of the first run that is not verified,
    or ('verified', None, '')."""
    for extra in runs:
        cmd = [CDSLRUN, path] + args + ['--unchecked', '--backend', 'sim'] + extra
        rc, text = run(cmd + ['--spin-limit', str(spin)], 120)
        if rc == 4 and accepted:
            # a wait gave up on a program the checker accepts: is it really stuck, or was this
            # machine just slow? Once more with the default bound (5 s without progress).
            rc, text = run(cmd, 120)
        if rc != 0:
            return rc, extra, text
    return 0, None, ''


def checker_verdict(a, path, args):
    """cdslc's exit status and output, and what is wrong with them (None: 0 or 1, and with
    --asan the sanitized build agrees)."""
    crc, cout = run([CDSLC, path] + args, 120)
    if crc not in (0, 1):
        return crc, cout, 'cdslc exit %d: %s' % (crc, first_error(cout))
    if a.asan:
        arc, aout = run([ASAN_CDSLC, path] + args, 300, env=ASAN_ENV)
        if arc != crc:
            return crc, cout, 'the ASan/UBSan cdslc exits %d, the plain one %d: %s' % (arc, crc, first_error(aout))
    return crc, cout, None


def check_program(c, seed):
    a = c.a
    g = gen.generate(seed, max_n=a.max_n)
    text = g.text()
    path = os.path.join(c.keep, 'g%d.cdsl' % seed)
    with open(path, 'w') as f:
        f.write(text)
    args = g.args()
    label = 'gen seed=%d n=%d %s %s' % (seed, g.n, g.template, g.mutation)
    crc, cout, problem = checker_verdict(a, path, args)
    extra = None
    if problem:
        c.stats.add(g.mutation, 'checker crashed')
    elif a.backend == 'p2p':
        return check_p2p(c, g, seed, path, args, crc, label)
    else:
        accepted = crc == 0
        runs = sim_runs(seed, g.n, g.largest(), a.seeds if accepted else a.rejected_seeds, '_packets(' in text)
        rrc, extra, rout = judge_sim(c, path, args, runs, SPIN_ACCEPTED if accepted else SPIN_REJECTED, accepted)
        what = RUN_EXITS.get(rrc, 'exit %d' % rrc) if runs else 'not run'
        c.stats.add(g.mutation, ('accepted, ' if accepted else 'rejected, sim ') + what)
        if rrc not in RUN_EXITS:
            problem = 'cdslrun --unchecked ended with exit %d: %s' % (rrc, first_error(rout))
        elif accepted and rrc != 0:
            problem = 'checker accepts, sim: %s: %s' % (what, first_error(rout))
        elif not accepted and rrc == 1 and 'error' not in cout:
            problem = 'cdslc rejects silently'
        elif crc == 1 and g.mutation == 'none':
            problem = 'a correct-by-construction program is rejected: %s' % first_error(cout)
            extra = None
    if not problem:
        if a.verbose:
            say('[PASS] %s' % label)
        os.unlink(path)
        return
    key = 'mutation:' + g.mutation
    reproduce = [quote([CDSLC, path] + args)]
    if extra:
        reproduce.append(quote([CDSLRUN, path] + args + ['--unchecked', '--backend', 'sim'] + extra))
    if key in c.known and 'checker accepts' in problem:
        with c.stats.lock:
            c.stats.known[g.mutation] += 1
        if a.verbose:
            say('[SKIP] %s: known (%s): %s' % (label, c.known[key], problem))
            say('    reproduce: ' + ' && '.join(reproduce))
        elif not a.keep:
            os.unlink(path)
        return
    with c.stats.lock:
        c.stats.fails += 1
    say('[FAIL] %s: %s\n    kept: %s (from: tests/gen/gen.py %d)\n    reproduce: %s' % (
        label, problem, path, seed, '\n               '.join(reproduce)))


def check_p2p(c, g, seed, path, args, crc, label):
    if crc != 0:
        c.stats.add(g.mutation, 'rejected (not run on p2p)')
        os.unlink(path)
        return
    for extra in p2p_runs(seed, c.a.seeds, c.a.ranks_per_gpu):
        cmd = [CDSLRUN, path] + args + ['--backend', 'p2p'] + extra
        rc, text = run(cmd, 600)
        if rc == 3:
            say('[FAIL] %s: p2p cannot run here (exit 3): %s' % (label, first_error(text)))
            raise SystemExit(3)
        if rc != 0:
            c.stats.add(g.mutation, 'accepted, p2p ' + RUN_EXITS.get(rc, 'exit %d' % rc))
            key = 'mutation:' + g.mutation
            if key in c.known:
                with c.stats.lock:
                    c.stats.known[g.mutation] += 1
                say('[SKIP] %s: known (%s): p2p %s\n    reproduce: %s' % (
                    label, c.known[key], first_error(text), quote(cmd)))
                return
            with c.stats.lock:
                c.stats.fails += 1
            say('[FAIL] %s: checker accepts, p2p: %s\n    kept: %s\n    reproduce: %s' % (
                label, first_error(text), path, quote(cmd)))
            return
    c.stats.add(g.mutation, 'accepted, p2p verified')
    if c.a.verbose:
        say('[PASS] %s' % label)
    os.unlink(path)

# ---- kept reproducers ---------------------------------------------------------------------

def header(path, key):
    for line in open(path):
        if line.startswith('// %s:' % key):
            return line.split(':', 1)[1].strip()
    return None


def check_found(c):
    fdir = os.path.join(HERE, 'found')
    if not os.path.isdir(fdir):
        return
    for name in sorted(os.listdir(fdir)):
        if not name.endswith('.cdsl'):
            continue
        path = os.path.join(fdir, name)
        rel = os.path.relpath(path, ROOT)
        test = name[:-5]
        args = shlex.split(header(path, 'args') or '-n 2')
        n = int(args[args.index('-n') + 1]) if '-n' in args else 2
        if n > c.a.max_n:
            say('[SKIP] found/%s: needs %d ranks, this run goes up to %d' % (test, n, c.a.max_n))
            continue
        crc, cout, problem = checker_verdict(c.a, path, args)
        if problem:
            say('[FAIL] found/%s: %s' % (test, problem))
            continue
        why = None
        if crc == 0:
            extra = shlex.split(header(path, 'run') or '')
            if c.a.backend == 'p2p':
                cmds = [[CDSLRUN, rel] + args + ['--backend', 'p2p', '--ranks-per-gpu', str(c.a.ranks_per_gpu),
                                                 '--iters', '3'] + extra]
            else:
                seeds = (header(path, 'seeds') or '1 2 3').split()
                cmds = [[CDSLRUN, rel] + args + ['--unchecked', '--backend', 'sim', '--seed', s, '--jitter', '20'] +
                        extra for s in seeds]
            for cmd in cmds:
                rc, text = run(cmd, 300)
                if rc != 0:
                    why = 'checker accepts, %s: %s\n    reproduce: %s' % (
                        RUN_EXITS.get(rc, 'exit %d' % rc), first_error(text), quote(cmd))
                    break
        if why is None:
            note = (' (listed in found/KNOWN, but agrees here: remove the line once its fix has landed)'
                    if test in c.known else '')
            say('[PASS] found/%s: %s%s' % (test, 'rejected by the checker' if crc else 'verifies', note))
        elif test in c.known:
            say('[SKIP] found/%s: known (%s): %s' % (test, c.known[test], why.split('\n')[0]))
        else:
            say('[FAIL] found/%s: %s' % (test, why))

# ---- p2p preconditions ----------------------------------------------------------------------

def gpu_count(a):
    if a.gpus:
        return a.gpus, ''
    if shutil.which('nvidia-smi'):
        rc, text = run(['nvidia-smi', '-L'], 60)
        n = sum(1 for l in text.splitlines() if l.startswith('GPU '))
        if rc == 0 and n:
            return n, ''
        return 0, 'nvidia-smi -L lists no GPU: ' + first_error(text)
    return 0, 'no nvidia-smi on this machine (pass --gpus G if there are GPUs)'


def p2p_probe(a, keep):
    probe = os.path.join(keep, 'probe.cdsl')
    with open(probe, 'w') as f:
        f.write('program probe implements barrier {\n    switch.signal(relaxed);\n    switch.wait(relaxed);\n}\n')
    rc, text = run([CDSLRUN, probe, '-n', '1', '--backend', 'p2p', '--size', '4K'], 300)
    return rc, text

def coverage(max_n, seeds=3000):
    """Whether the first `seeds` programs use every collective, rank count, data operation,
    channel operation and mutation (generation only: a fraction of a second)."""
    seen = set()
    for s in range(1, seeds + 1):
        g = gen.generate(s, max_n)
        text = g.text()
        seen |= {'coll ' + g.coll, 'n=%d' % g.n, 'mutation ' + g.mutation}
        made = text.split('\n', 1)[0].split(' mutation=')[0]       # template and variants
        seen |= {'template ' + t for t in gen.PK_TEMPLATES if t in made}
        seen |= {'op ' + w for w in re.findall(r'(?:switch|peer\([^)]*\)|next|prev|other)\.(\w+)\(', text)}
        body = text.split('\n', 4)[-1]
        seen |= {'stmt ' + w for w in ('for', 'let', 'if', 'else', 'def', 'scratch') if re.search(r'\b%s\b' % w, body)}
        seen |= {'stmt ' + w for w in ('copy', 'reduce') if re.search(r'^ *%s\(' % w, body, re.M)}
        if any(d.startswith('chunks=') for d in g.defines):
            seen.add('-D chunks')
    want = ({'coll ' + c for c, _, _ in gen.TEMPLATES} | {'n=%d' % n for n in range(1, max_n + 1)} |
            {'mutation ' + m for m, _, _ in gen.MUTATIONS} | {'mutation none', '-D chunks'} |
            {'op ' + o for o in ('store', 'reduce', 'reduce_store', 'signal', 'wait', 'put', 'get',
                                 'send_packets', 'recv_packets')} |
            {'template ' + t for t in gen.PK_TEMPLATES} |
            {'stmt ' + w for w in ('for', 'let', 'if', 'else', 'def', 'scratch', 'copy', 'reduce')})
    if max_n < 3:
        want.discard('mutation drop_pair')      # needs a third rank
    missing = sorted(want - seen)
    if missing:
        return '[FAIL] gen: seeds 1..%d never use %s' % (seeds, ', '.join(missing))
    return '[PASS] gen: seeds 1..%d use every collective, 1..%d ranks, every operation and mutation' % (
        seeds, max_n)


# ---- main ---------------------------------------------------------------------------------

def summary(c, first, count):
    t = c.stats.total
    acc = sum(v for k, v in t.items() if k.startswith('accepted'))
    rej = sum(v for k, v in t.items() if k.startswith('rejected'))
    say('gen: %d programs (seeds %d..%d, %s): %d accepted, %d rejected' % (
        count, first, first + count - 1, c.a.backend, acc, rej))
    for k in sorted(t):
        say('gen:   %-34s %d' % (k, t[k]))
    say('gen: by mutation (accepted/rejected; what sim made of the rejected ones):')
    for m in sorted(c.stats.by_mut):
        row = c.stats.by_mut[m]
        a_ = sum(v for k, v in row.items() if k.startswith('accepted'))
        r_ = sum(v for k, v in row.items() if k.startswith('rejected'))
        sim = ', '.join('%s %d' % (k[len('rejected, sim '):], v) for k, v in sorted(row.items())
                        if k.startswith('rejected, sim '))
        bad = ', '.join('%s %d' % (k[len('accepted, '):], v) for k, v in sorted(row.items())
                        if k.startswith('accepted') and not k.endswith(('verified', 'not run')))
        say('gen:   %-22s %4d/%-4d %s%s' % (m, a_, r_, sim, ('  [accepted, then: ' + bad + ']') if bad else ''))
    if c.stats.known:
        say('gen: known disagreements (found/KNOWN): %s' % ', '.join(
            '%s %d' % kv for kv in sorted(c.stats.known.items())))
    return acc, rej


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--count', type=int, default=80, help='programs to generate (default 80)')
    ap.add_argument('--start', type=int, default=1, help='first generator seed (default 1)')
    ap.add_argument('--seeds', type=int, default=3,
                    help='sim jitter seeds per accepted program; p2p: runs per program (default 3)')
    ap.add_argument('--rejected-seeds', type=int, default=1,
                    help='sim seeds per rejected program (informational; default 1)')
    ap.add_argument('--backend', choices=['sim', 'p2p'], default='sim')
    ap.add_argument('--ranks-per-gpu', type=int, default=1, help='p2p: ranks on each GPU')
    ap.add_argument('--gpus', type=int, default=0, help='p2p: GPUs to use (default: nvidia-smi -L)')
    ap.add_argument('--max-n', type=int, default=9, help='largest rank count (default 9)')
    ap.add_argument('--jobs', '-j', type=int, default=1, help='programs checked at once (default 1)')
    ap.add_argument('--keep', help='folder for disagreeing programs (default: a new temporary one)')
    ap.add_argument('--no-found', action='store_true', help='skip tests/gen/found')
    ap.add_argument('--found-only', action='store_true', help='only tests/gen/found')
    ap.add_argument('--asan', action='store_true',
                    help='also check each program with the ASan/UBSan cdslc (make asan): same verdict, no report')
    ap.add_argument('-v', '--verbose', action='store_true', help='a line per program')
    a = ap.parse_args(argv)
    for tool in (CDSLC, CDSLRUN) + ((ASAN_CDSLC,) if a.asan else ()):
        if not os.access(tool, os.X_OK):
            print('diff.py: %s not built (make)' % tool, file=sys.stderr)
            return 2
    keep = a.keep or tempfile.mkdtemp(prefix='cdsl-gen-')
    os.makedirs(keep, exist_ok=True)
    known = read_known(os.path.join(HERE, 'found', 'KNOWN'))
    c = Ctx(a, keep, known, Stats())
    if a.backend == 'p2p':
        os.environ.update(NVLS_OFF)
        gpus, why = gpu_count(a)
        rc, text = p2p_probe(a, keep)
        if rc != 0 or not gpus:
            print('[FAIL] gen p2p: the p2p backend cannot run on this machine: %s' % (
                first_error(text) if rc != 0 else why), flush=True)
            return 3
        a.max_n = min(a.max_n, gpus * a.ranks_per_gpu)
        say('gen: p2p on %d GPU%s, %d rank%s per GPU: programs of 1..%d ranks' % (
            gpus, '' if gpus == 1 else 's', a.ranks_per_gpu, '' if a.ranks_per_gpu == 1 else 's', a.max_n))
    if not a.found_only:
        say('gen: programs kept in %s when they disagree' % keep)
        # the generator must be a function of the seed, or nothing it finds can be reproduced:
        # the same text here and in another process with another string hash seed
        last = a.start + min(a.count, 20) - 1
        here = ''.join(gen.generate(s, a.max_n).text() for s in range(a.start, last + 1))
        rc, there = run([sys.executable, os.path.join(HERE, 'gen.py'), str(a.start), str(last),
                         '--max-n', str(a.max_n)], 120, env=dict(os.environ, PYTHONHASHSEED='12345'))
        same = rc == 0 and here == there
        say('[%s] gen: the generator is deterministic' % ('PASS' if same else 'FAIL'))
        say(coverage(a.max_n))
        seeds = range(a.start, a.start + a.count)
        done = [0]

        def one(s):
            check_program(c, s)
            with c.stats.lock:
                done[0] += 1
                if a.count >= 1000 and done[0] % 500 == 0:
                    say('gen: %d of %d programs checked, %d disagreements' % (done[0], a.count, c.stats.fails))
        if a.jobs > 1:
            with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
                list(ex.map(one, seeds))
        else:
            for s in seeds:
                one(s)
        acc, rej = summary(c, a.start, a.count)
        if c.stats.fails == 0:
            say('[PASS] gen: %d programs, the checker and %s agree' % (a.count, a.backend))
        if a.backend == 'sim' and a.count >= 40 and a.seeds and a.rejected_seeds:
            caught = sum(v for k, v in c.stats.total.items() if k in ('rejected, sim wrong result',
                                                                      'rejected, sim a wait gave up'))
            ok = acc > 0 and rej > 0 and caught > 0
            say('[%s] gen: the mix exercises both sides (%d accepted, %d rejected, %d of those caught by sim)' % (
                'PASS' if ok else 'FAIL', acc, rej, caught))
    if not a.no_found:
        check_found(c)
    if not a.keep and not os.listdir(keep):
        os.rmdir(keep)
    return 1 if failed[0] else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
