#!/bin/bash
# tests/api/python_misuse.sh - the Python package (python/cdsl) used wrongly: every case raises a
# Python exception, and none reaches the library with a pointer it no longer holds.
#   - a RankComm after close(): run, status, buffer, buffer_bytes, alloc, engine, device raise
#     cdsl.Error ("... is closed"), each in a process of its own (a crash is exit 139);
#   - close() from another thread while runs go on: it waits for the running call, later calls
#     raise, nothing crashes;
#   - two ranks as threads of one process (NCCL's thread per GPU) sharing one Program: their
#     alloc and run, collectives, finish; neither holds the Program while it waits for the other;
#   - a closed Program: name, collective, nranks, chunk_bytes, and a run of it, raise cdsl.Error;
#   - a path, include folder, program name or define with a NUL byte: ValueError, before the
#     library would read the path cut at the NUL;
#   - a failing call's cdsl.Error carries the library's message (cdsl_rank_get_last_error) and
#     status; a failed RankComm the thread's last error (cdsl_rank_get_last_error(NULL));
#   - an unknown engine or flavour: ValueError with the library's lists (cdsl_list_name).
# PYROOT and CDSL_LIB choose the package and the library (default: this checkout's).
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/common.bash
PY=${PYTHON:-/usr/bin/python3}
if ! [ -x "$PY" ]; then echo "[SKIP] python_misuse: needs python3 (Debian: python3)"; exit 0; fi
export PYTHONPATH=${PYROOT:-$PWD/python} CDSL_LIB=${CDSL_LIB:-$PWD/build/libcdsl.so} CDSL_STDLIB=$PWD/stdlib
[ -f "$CDSL_LIB" ] || { fail "python_misuse: $CDSL_LIB exists" "make first"; exit 1; }
AG=$PWD/stdlib/allgather_mesh.cdsl

# case NAME PYTHON-BODY: the body runs after the setup below; it prints "ok" when it behaved.
case_py() {
    local name=$1 out rc
    out=$(timeout 60 "$PY" - "$AG" "$tmp" 2>&1 <<EOF
import sys, threading, cdsl
AG, TMP = sys.argv[1], sys.argv[2]
def closed_comm():
    c = cdsl.RankComm(1, cdsl.get_unique_id("sim"), 0)
    c.close()
    return c
def raises(f, kind=cdsl.Error, text="closed"):
    try:
        f()
    except kind as e:
        return text in str(e)
    return False
$2
EOF
    ); rc=$?
    if [ $rc = 0 ] && [ "$(echo "$out" | tail -1)" = ok ]; then pass "$name"
    else fail "$name" "exit $rc: $(echo "$out" | tail -3 | tr '\n' ' ')"; fi
}

for call in 'c.run(p, "f32", 64)' 'c.status()' 'c.buffer(0)' 'c.alloc(p, 64)' 'c.buffer_bytes(0)' 'c.engine' 'c.device'; do
    case_py "a closed RankComm: $call raises cdsl.Error" "
p = cdsl.Program(AG, 1)
c = closed_comm()
print('ok' if raises(lambda: $call) else 'no exception')"
done

case_py "close() twice, and with, are harmless" "
c = closed_comm(); c.close()
with cdsl.RankComm(1, cdsl.get_unique_id('sim'), 0) as d:
    pass
print('ok' if raises(lambda: d.status()) else 'no exception')"

case_py "close() from another thread waits for the running call; later calls raise" "
p = cdsl.Program(AG, 1)
c = cdsl.RankComm(1, cdsl.get_unique_id('sim'), 0)
chunk = p.chunk_bytes(4096)
seen = []
started = threading.Event()
def runs():
    try:
        for i in range(100000):
            c.run(p, 'f32', chunk)
            c.status()
            started.set()
    except cdsl.Error as e:
        seen.append(str(e))
t = threading.Thread(target=runs)
t.start()
started.wait(30)
c.close()
t.join(60)
print('ok' if seen and 'closed' in seen[0] and not t.is_alive() else 'runs ended with %r' % seen)"

case_py "two ranks as threads of one process share one Program: alloc and run finish" "
p = cdsl.Program(AG, 2)
uid = cdsl.get_unique_id('sim')
chunk = p.chunk_bytes(4096)
done, errors = [], []
def rank(r):
    try:
        c = cdsl.RankComm(2, uid, r, timeout=20)
        for i in range(5):
            c.alloc(p, chunk)
            c.run(p, 'f32', chunk)
            c.status()
        c.close()
        done.append(r)
    except Exception as e:
        errors.append(repr(e))
ts = [threading.Thread(target=rank, args=(r,), daemon=True) for r in (0, 1)]
for t in ts: t.start()
for t in ts: t.join(30)
print('ok' if sorted(done) == [0, 1] else 'ranks finished %r, errors %r, still running %d' %
      (done, errors, sum(t.is_alive() for t in ts)))"

case_py "a closed Program: name, collective, nranks, chunk_bytes and a run of it raise cdsl.Error" "
p = cdsl.Program(AG, 1)
p.close(); p.close()
c = cdsl.RankComm(1, cdsl.get_unique_id('sim'), 0)
ok = all(raises(f) for f in (lambda: p.name, lambda: p.collective, lambda: p.nranks, lambda: p.chunk_bytes(4096),
                             lambda: p.buf_chunks(0), lambda: c.run(p, 'f32', 64), lambda: c.alloc(p, 64)))
print('ok' if ok else 'a closed program did not raise')"

mkdir -p "$tmp/inc"
cp "$AG" "$tmp/a"
case_py "a path with a NUL byte is refused with ValueError, not cut at the NUL" "
print('ok' if raises(lambda: cdsl.Program(TMP + '/a\0b', 2), ValueError, 'NUL') else 'compiled ' + TMP + '/a')"
case_py "an include folder, program name or define with a NUL byte is refused with ValueError" "
ok = raises(lambda: cdsl.Program(AG, 2, include_dirs=[TMP + '/inc\0x']), ValueError, 'NUL')
ok = ok and raises(lambda: cdsl.Program(AG, 2, program='allgather_mesh\0x'), ValueError, 'NUL')
ok = ok and raises(lambda: cdsl.Program(AG, 2, defines={'chunks': '1\0x'}), ValueError, 'NUL')
print('ok' if ok else 'not refused')"

case_py "a failing call raises cdsl.Error with the library's message and status" "
c = cdsl.RankComm(1, cdsl.get_unique_id('sim'), 0)
try:
    c.buffer(99)
    print('no exception')
except cdsl.Error as e:
    print('ok' if 'rank 0: there is no buffer 99' in str(e) and e.status == 'usage' else repr((str(e), e.status)))"

case_py "a RankComm that cannot start raises cdsl.Error with the library's message" "
try:
    cdsl.RankComm(1, bytes(256), 0)
    print('no exception')
except cdsl.Error as e:
    print('ok' if 'this is not a unique id' in str(e) else repr(str(e)))"

case_py "an unknown engine or flavour raises ValueError naming the library's own lists (cdsl_list_name)" "
import ctypes
lib = ctypes.CDLL(__import__('os').environ['CDSL_LIB'])
lib.cdsl_list_name.restype = ctypes.c_char_p
def names(which):
    out = []
    while lib.cdsl_list_name(which, len(out)) is not None:
        out.append(lib.cdsl_list_name(which, len(out)).decode())
    return out
engines, flavours = names(2), names(1)
ok = raises(lambda: cdsl.get_unique_id('cpu'), ValueError, 'one of ' + ', '.join(['auto'] + engines))
ok = ok and raises(lambda: cdsl.RankComm(1, cdsl.get_unique_id('sim'), 0, flavour='sim'), ValueError,
                   'flavour is ' + ', '.join(flavours[:-1]) + ' or ' + flavours[-1] + \", not 'sim'\")
print('ok' if ok and engines and len(flavours) > 1 else 'not refused with the lists %r %r' % (engines, flavours))"

exit $((failures != 0))
