"""python3 -m cdsl.selftest -n 4: every stdlib program, run by N real processes, verified.

The parent makes a unique id (the sim engine by default: CPU processes with shared memory;
--engine ipc or nccl on GPUs) and starts N processes, one per rank, each given the id in
hexadecimal. Every process compiles every stdlib program for N ranks, and runs each for every
element type that suits it, at three sizes, twice: on buffers of its own (the library stages
them through its symmetric buffers) and on the symmetric buffers themselves (no copy). Every
rank checks its own output against the collective's postcondition. The parent gathers the
ranks' verdicts and prints one line per program and a last line "N passed, N failed"; it stops
processes that outlive the bound (and counts that as a failure, with the ranks named).

    python3 -m cdsl.selftest -n 4 [--engine sim|ipc|nccl] [--program NAME]... [--timeout S]
                                  [--chunk-bytes 64,4096,262144]
"""
import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import time

from . import core

SIZES = (64, 4096, 256 * 1024)       # chunk bytes
# What the GPU engines say of a program they do not run (packets made from data through a port
# channel: docs/language.md), which the self-test reports as skipped on them, not as failed.
GPU_REFUSALS = ("not supported on the GPU backends",)
DTYPES = ("f32", "f16", "bf16", "u32")


def _programs(names):
    d = core.stdlib_dir()
    files = sorted(f for f in os.listdir(d) if f.endswith(".cdsl"))
    if names:
        files = [f for f in files if f[:-5] in names or f in names]
    return [os.path.join(d, f) for f in files]


class Memory:
    """This rank's buffers: host memory on sim, device memory (and host copies) on a GPU."""

    def __init__(self, comm):
        self.dev = None
        if comm.engine != "sim":
            from .cuda import Device
            self.dev = Device(comm.device)
        self.kept = []

    def host(self, nbytes):
        b = ctypes.create_string_buffer(max(nbytes, 1))
        self.kept.append(b)
        return b

    def buffer(self, nbytes):
        """(address for the run, host mirror)"""
        h = self.host(nbytes)
        if not self.dev:
            return ctypes.addressof(h), h
        return self.dev.alloc(nbytes), h

    def put(self, addr, host, nbytes):
        if self.dev and nbytes:
            self.dev.to_device(addr, ctypes.addressof(host), nbytes)
            self.dev.synchronize()      # the run's stream does not wait for the legacy stream
        elif nbytes and addr != ctypes.addressof(host):
            ctypes.memmove(addr, host, nbytes)

    def get(self, host, addr, nbytes):
        if self.dev and nbytes:
            self.dev.synchronize()
            self.dev.to_host(ctypes.addressof(host), addr, nbytes)
        elif nbytes and addr != ctypes.addressof(host):
            ctypes.memmove(host, addr, nbytes)

    def release(self, addr):
        if self.dev and addr:
            self.dev.free(addr)

    def sync(self):
        if self.dev:
            self.dev.synchronize()


def _one_run(comm, mem, prog, dtype, chunk, staged):
    rank = comm.rank
    in_b, out_b = prog.bytes(core._lib.BUF_INPUT, chunk), prog.bytes(core._lib.BUF_OUTPUT, chunk)
    h_in, h_out = mem.host(in_b), mem.host(out_b)
    core.pattern_fill(prog, dtype, rank, chunk, ctypes.addressof(h_in), in_b)
    if staged:
        a_in, _ = mem.buffer(in_b)
        a_out, _ = mem.buffer(out_b)
        mem.put(a_in, h_in, in_b)
        try:
            comm.run(prog, dtype, chunk, a_in, in_b, a_out, out_b)
            mem.sync()
            comm.status()
            mem.get(h_out, a_out, out_b)
        finally:
            mem.release(a_in)
            mem.release(a_out)
    else:
        comm.alloc(prog, chunk)
        if in_b:
            mem.put(comm.buffer(core._lib.BUF_INPUT), h_in, in_b)
        comm.run(prog, dtype, chunk)
        mem.sync()
        comm.status()
        if out_b:
            mem.get(h_out, comm.buffer(core._lib.BUF_OUTPUT), out_b)
    wrong = core.pattern_check(prog, dtype, rank, chunk, ctypes.addressof(h_out), out_b)
    if wrong:
        raise core.Error(5, core.last_check_message)


def child(args):
    uid = bytes.fromhex(args.child_id)
    out = sys.stdout
    try:
        comm = core.RankComm(args.n, uid, args.rank, device=args.device, timeout=args.timeout)
    except core.Error as e:
        print(json.dumps({"program": "*init*", "ok": False, "why": str(e)}), file=out, flush=True)
        return 1
    mem = Memory(comm)
    failed = False
    for path in _programs(args.program):
        name = os.path.basename(path)[:-5]
        runs, why = 0, ""
        if failed:
            why = "not run: the communicator failed earlier"
        else:
            try:
                prog = core.Program(path, args.n)
                moves_data = core.collective_chunks(prog.collective, args.n) != (0, 0)
                dtypes = DTYPES if moves_data else ("f32",)       # a barrier: one type is enough
                for chunk in args.chunk_bytes:
                    for dtype in dtypes:
                        for staged in (True, False):
                            if args.die == args.rank and runs == 1:
                                os.kill(os.getpid(), signal.SIGKILL)     # a test: die mid-way
                            _one_run(comm, mem, prog, dtype, chunk, staged)
                            runs += 1
                prog.close()
            except (core.Error, ValueError, OSError) as e:
                why = str(e)
                failed = getattr(e, "status", "") == "runtime"
        skip = any(r in why for r in GPU_REFUSALS) and comm.engine != "sim"
        print(json.dumps({"program": name, "ok": not why, "runs": runs, "why": why, "skip": skip}), file=out, flush=True)
    comm.close()
    return 1 if failed else 0


def parent(args):
    uid = core.get_unique_id(args.engine)
    names = [os.path.basename(p)[:-5] for p in _programs(args.program)]
    cmd = [sys.executable, "-m", "cdsl.selftest", "-n", str(args.n), "--child-id", uid.hex(),
           "--timeout", str(args.timeout), "--die", str(args.die),
           "--chunk-bytes", ",".join(str(c) for c in args.chunk_bytes)] + sum((["--program", p] for p in (args.program or [])), [])
    env = dict(os.environ)
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = pkg + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    ndev = 0
    if core.unique_id_engine(uid) != "sim":
        from .cuda import Device
        ndev = Device.count()
    procs = []
    for r in range(args.n):
        dev = ["--device", str(r % ndev if ndev else -1)]
        procs.append(subprocess.Popen(cmd + ["--rank", str(r)] + dev, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=env, text=True))
    bound = time.time() + args.timeout * 3 + 20 * len(names) + 30
    outs = []
    for r, p in enumerate(procs):
        try:
            o, e = p.communicate(timeout=max(1, bound - time.time()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            o, e = p.communicate()
            e += "\nrank %d: stopped by the self-test after its bound" % r
        outs.append((o, e, p.returncode))
    return report(args, names, outs)


def report(args, names, outs):
    verdicts = {n: [] for n in names}
    for r, (o, e, rc) in enumerate(outs):
        seen = set()
        for line in o.splitlines():
            try:
                v = json.loads(line)
            except ValueError:
                continue
            seen.add(v["program"])
            if v["program"] == "*init*":
                for n in names:
                    verdicts[n].append((r, False, "init: " + v["why"]))
            elif v["program"] in verdicts:
                verdicts[v["program"]].append((r, v["ok"], v.get("why", ""), v.get("runs", 0), v.get("skip", False)))
        for n in names:
            if n not in seen and "*init*" not in seen:
                tail = (e.strip().splitlines() or ["exit %s" % rc])[-1]
                verdicts[n].append((r, False, "no answer (exit %s): %s" % (rc, tail)))
    passed = failed = skipped = 0
    for n in names:
        bad = [v for v in verdicts[n] if not v[1]]
        if bad and len(verdicts[n]) == args.n and all(len(v) > 4 and v[4] for v in verdicts[n]):
            print("[SKIP] %s: %s" % (n, bad[0][2].strip().splitlines()[0]))
            skipped += 1
        elif not bad and len(verdicts[n]) == args.n:
            runs = verdicts[n][0][3] if len(verdicts[n][0]) > 3 else 0
            print("[PASS] %s: %d ranks, %d runs each, verified" % (n, args.n, runs))
            passed += 1
        else:
            r, _, why = bad[0][:3] if bad else (-1, False, "missing ranks")
            print("[FAIL] %s: rank %d: %s" % (n, r, why.strip().replace("\n", " | ")))
            failed += 1
    print("%d passed, %d failed" % (passed, failed) + (", %d skipped" % skipped if skipped else ""))
    return 0 if failed == 0 else 1


def _chunk_list(text):
    try:
        sizes = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("chunk sizes are whole numbers of bytes, comma-separated: %r" % text)
    if not sizes or any(c <= 0 or c % 4 for c in sizes):
        raise argparse.ArgumentTypeError("a chunk is a positive multiple of 4 bytes: %r" % text)
    return sizes


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m cdsl.selftest", description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=4, help="processes (ranks), default 4")
    ap.add_argument("--engine", default="sim", choices=[e for e in core._lib.ENGINES if e != "auto"] + ["auto"],
                    help="sim (default: CPU processes), ipc or nccl (GPUs), auto")
    ap.add_argument("--program", action="append", help="only this stdlib program (repeatable)")
    ap.add_argument("--timeout", type=float, default=20.0, help="bound of every collective call, seconds")
    ap.add_argument("--chunk-bytes", type=_chunk_list, default=SIZES,
                    help="chunk sizes in bytes, comma-separated (default %s)" % ",".join(map(str, SIZES)))
    ap.add_argument("--child-id", help=argparse.SUPPRESS)
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--device", type=int, default=-1, help=argparse.SUPPRESS)
    ap.add_argument("--die", type=int, default=-1, help=argparse.SUPPRESS)   # tests: this rank kills itself
    args = ap.parse_args(argv)
    if args.n < 1 or args.n > 64:
        ap.error("-n is 1 to 64")
    return child(args) if args.child_id else parent(args)


if __name__ == "__main__":
    sys.exit(main())
