"""cdsl's allgather, reduce-scatter and allreduce from stdlib/ on torch tensors, one process per
GPU, each result checked against torch.distributed, both timed side by side.

    torchrun --nproc-per-node 2 examples/torch_collectives.py [--min-bytes 1K] [--max-bytes 1G] [--json out.json]

Two processes on two GPUs: torch's group is NCCL, its collectives are the reference, and both
sides are timed with CUDA graphs (a graph of --iters launches, replayed, timed with events).
Two processes on ONE GPU (NCCL refuses two ranks on one GPU): torch's group is gloo, the
reference is computed on the CPU, cdsl runs on the ipc engine, and only cdsl is timed (kernels
of two processes on one GPU take turns: those times say nothing about speed). --device cpu:
the sim engine on CPU tensors and gloo (what the test suite runs, small sizes only).

The NVLS-off variables are set before torch is imported and kept: neither NCCL nor torch nor
cdsl creates a multicast object here (cdsl runs the p2p flavour). Inputs are small integers in
f32, so every sum is exact whatever its order, and results compare bit for bit. Sizes are
nccl-tests' (the larger of one rank's input and output). Each size is timed twice for cdsl: on
ordinary tensors (the library copies them through its symmetric buffers on the stream) and on
its symmetric tensors (no copy): the difference is what staging costs. Prints one row per size
and collective, and "torch_collectives: PASS" or "torch_collectives: FAIL" last.
"""
import os

for _k, _v in (("CDSL_NVLS", "0"), ("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"),
               ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ[_k] = _v       # before torch, NCCL or cdsl can read them; children inherit them

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "python"))   # the source checkout's package, if not installed

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import cdsl  # noqa: E402
import cdsl.distributed  # noqa: E402

COLLECTIVES = (("allgather", "allgather_nvls"), ("reducescatter", "reducescatter_nvls"), ("allreduce", "allreduce_nvls"))


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().rstrip("B")
    return int(float(s[:-1]) * units[s[-1]]) if s and s[-1] in units else int(s)


def fmt_size(n):
    for u, m in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= m and n % m == 0:
            return "%d%s" % (n // m, u)
    return str(n)


class Setup:
    def __init__(self, args):
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.local = int(os.environ.get("LOCAL_RANK", str(self.rank)))
        self.cpu = args.device == "cpu" or not torch.cuda.is_available()
        if self.cpu:
            self.device, self.shared, backend, engine = torch.device("cpu"), False, "gloo", "sim"
        else:
            ngpu = torch.cuda.device_count()
            self.device = torch.device("cuda", self.local % ngpu)
            torch.cuda.set_device(self.device)
            self.shared = ngpu < int(os.environ.get("LOCAL_WORLD_SIZE", str(self.world)))
            backend = "gloo" if self.shared else "nccl"
            engine = args.engine or ("ipc" if self.shared else "auto")
        dist.init_process_group(backend)
        self.backend = backend
        self.comm = cdsl.distributed.Communicator(engine=engine, device=self.device, timeout=args.timeout)
        self.graphs = not self.cpu and not args.no_graphs

    def reference(self, kind, inp, out_numel):
        """torch.distributed's result: NCCL on the GPU, else gloo on CPU copies."""
        if self.backend == "nccl":
            out = torch.empty(out_numel, dtype=inp.dtype, device=self.device)
            run_torch(kind, inp, out)
            return out
        c = inp.to("cpu", copy=True)           # never the input itself (on CPU .cpu() is no copy)
        if kind == "allgather":
            parts = [torch.empty_like(c) for _ in range(self.world)]
            dist.all_gather(parts, c)
            return torch.cat(parts)
        dist.all_reduce(c)
        return c[self.rank * out_numel:(self.rank + 1) * out_numel] if kind == "reducescatter" else c


def tensors(kind, size, rank, world, device):
    """(input, output) for a collective of `size` bytes (nccl-tests' convention), f32."""
    n = size // 4
    if kind == "allgather":
        inp, out_n = (torch.arange(n // world, device=device) % 251 + 1000 * rank).float(), n
    elif kind == "reducescatter":
        inp, out_n = ((torch.arange(n, device=device) % 17) * (rank + 1)).float(), n // world
    else:
        inp, out_n = ((torch.arange(n, device=device) % 13) - rank).float(), n
    return inp, torch.full((out_n,), -1.0, device=device)


def run_cdsl(s, kind, prog, inp, out):
    if kind == "allgather":
        s.comm.all_gather_into_tensor(out, inp, program=prog)
    elif kind == "reducescatter":
        s.comm.reduce_scatter_tensor(out, inp, program=prog)
    else:
        s.comm.run(prog, out, inp)                  # out of place: torch has no such call, NCCL does


def run_torch(kind, inp, out):
    if kind == "allgather":
        dist.all_gather_into_tensor(out, inp)
    elif kind == "reducescatter":
        dist.reduce_scatter_tensor(out, inp)
    else:
        out.copy_(inp)
        dist.all_reduce(out)


def time_us(s, fn, iters):
    """Mean microseconds of fn(): a CUDA graph of `iters` calls, replayed twice, timed once."""
    if s.cpu:
        import time
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t0) * 1e6 / iters
    torch.cuda.synchronize()
    if s.graphs:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(iters):
                fn()
        g.replay()                                  # warm, outside the timing
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        stop.record()
    else:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1000.0 / iters


def one(s, args, kind, prog, size):
    inp, out = tensors(kind, size, s.rank, s.world, s.device)
    run_cdsl(s, kind, prog, inp, out)               # the handshake, outside any graph
    if not s.cpu:
        torch.cuda.synchronize()
    s.comm.status()
    want = s.reference(kind, inp, out.numel())
    ok = torch.equal(out.cpu() if s.backend == "gloo" else out, want)
    iters = args.iters if size <= (64 << 20) else max(2, args.iters // 10)
    us_cdsl = time_us(s, lambda: run_cdsl(s, kind, prog, inp, out), iters)
    if not s.cpu:
        torch.cuda.synchronize()
    s.comm.status()
    us_symm = None
    if not args.no_symmetric:      # the same on the symmetric buffers: what staging costs
        prog_obj = s.comm.program(prog)
        si, so = s.comm.symmetric_tensors(prog_obj, out.numel(), dtype=out.dtype)
        si.copy_(inp)
        s.comm.run(prog_obj, so, si)                # this layout's handshake, outside the graph
        if not s.cpu:
            torch.cuda.synchronize()
        us_symm = time_us(s, lambda: s.comm.run(prog_obj, so, si), iters)
        if not s.cpu:
            torch.cuda.synchronize()
        s.comm.status()
        ok = ok and torch.equal(so.cpu() if s.backend == "gloo" else so, want)
    us_torch = None
    if s.backend == "nccl":
        ref_out = torch.empty_like(out)
        run_torch(kind, inp, ref_out)               # NCCL's communicator is made outside the graph
        us_torch = time_us(s, lambda: run_torch(kind, inp, ref_out), iters)
    ok_all = torch.tensor([1 if ok else 0], device=s.device if s.backend == "nccl" else "cpu")
    dist.all_reduce(ok_all, op=dist.ReduceOp.MIN)
    return {"collective": kind, "program": prog, "size": size, "ok": bool(ok_all.item()), "cdsl_us": us_cdsl,
            "cdsl_symmetric_us": us_symm, "torch_us": us_torch, "iters": iters}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-bytes", default="1K", help="smallest size (default 1K; not --min/--max, which torchrun takes for abbreviations of its own options)")
    ap.add_argument("--max-bytes", default="1G", help="largest size (default 1G)")
    ap.add_argument("--factor", type=int, default=4, help="size step (default 4)")
    ap.add_argument("--iters", type=int, default=20, help="launches per timed graph (default 20)")
    ap.add_argument("--engine", choices=["ipc", "nccl", "auto"], help="cdsl's engine (default: ipc when ranks share "
                    "a GPU, else auto: nccl when NCCL >= 2.28 is here)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--no-graphs", action="store_true", help="time plain launches instead of CUDA graphs")
    ap.add_argument("--no-symmetric", action="store_true", help="skip the runs on symmetric tensors (no copies)")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--json", help="write the rows as JSON (rank 0)")
    args = ap.parse_args()
    s = Setup(args)
    lo, hi = parse_size(args.min_bytes), parse_size(args.max_bytes)
    rows = []
    if s.rank == 0:
        print("# torch_collectives: %d processes, torch group %s, cdsl engine %s, %s%s" %
              (s.world, s.backend, s.comm.engine, "CPU" if s.cpu else torch.cuda.get_device_name(s.device),
               ", 2 ranks per GPU (times only check that it runs)" if s.shared else ""))
        print("# %-13s %8s %12s %12s %12s %8s  %s" % ("collective", "size", "cdsl (us)", "symmetric", "torch (us)",
                                                     "ratio", "result"))
    for kind, prog in COLLECTIVES:
        size = lo
        while size <= hi:
            if size % (4 * s.world * s.world) == 0:
                r = one(s, args, kind, prog, size)
                rows.append(r)
                if s.rank == 0:
                    ratio = "%.2fx" % (r["torch_us"] / r["cdsl_us"]) if r["torch_us"] else "-"
                    symm = "%.2f" % r["cdsl_symmetric_us"] if r["cdsl_symmetric_us"] is not None else "-"
                    print("  %-13s %8s %12.2f %12s %12s %8s  %s" % (kind, fmt_size(size), r["cdsl_us"], symm,
                          "%.2f" % r["torch_us"] if r["torch_us"] else "n/a", ratio, "ok" if r["ok"] else "WRONG"),
                          flush=True)
            size *= args.factor
    ok = all(r["ok"] for r in rows) and rows
    if s.rank == 0:
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"world": s.world, "backend": s.backend, "engine": s.comm.engine, "shared_gpu": s.shared,
                           "rows": rows}, f, indent=1)
        print("torch_collectives: %s (%d rows; ratio = torch time / cdsl time)" % ("PASS" if ok else "FAIL", len(rows)))
    s.comm.close()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
