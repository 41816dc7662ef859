"""torchrun --nproc_per_node=2 bench/torch_backend.py [--sizes 1K,64K,1M] [--iters 50]

The torch.distributed backend "cdsl" on GPUs, as a PyTorch user would drive it: only
torch.distributed calls (init_process_group("cuda:cdsl,cpu:gloo"), all_reduce,
all_gather_into_tensor, reduce_scatter_tensor, broadcast, reduce, all_to_all_single) on CUDA
tensors, each verified against gloo on the same data (CPU copies through a gloo group), then
timed (CUDA events around --iters calls, after warm-up): on ordinary tensors (staged through
cdsl's region) and on a symmetric tensor from cdsl.torch_backend.empty (in place, no copy).
Two processes on one GPU (MPS) run the ipc engine (NCCL refuses two ranks on one GPU); one per
GPU runs what CDSL_ENGINE says (the library's choice otherwise).

Rank 0 prints one line per collective and size:
    [PASS] all_reduce 1024 B f32: verified; 7.0 us staged, 4.6 us symmetric
    [SKIP] broadcast 1024 B f32: cdsl: no cdsl program implements broadcast ...
and exits 1 when any check failed. NVLS (multicast) stays off: this machine's rules.
"""
import os

for _k, _v in (("CDSL_NVLS", "0"), ("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"),
               ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ[_k] = _v     # before torch and libcdsl are loaded: neither may turn multicast on

import argparse  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import cdsl.torch_backend as tb  # noqa: E402


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().rstrip("B")
    return int(s[:-1]) * units[s[-1]] if s and s[-1] in units else int(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1K,64K,1M,16M", help="message bytes (nccl-tests': the larger of a rank's "
                    "input and output)")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()

    local = int(os.environ.get("LOCAL_RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    ngpu = torch.cuda.device_count()
    if ngpu == 0:
        print("bench/torch_backend.py: no CUDA device", file=sys.stderr)
        return 2
    torch.cuda.set_device(local % ngpu)
    if world > ngpu:
        os.environ.setdefault("CDSL_ENGINE", "ipc")    # several ranks on one GPU: NCCL refuses that
    backend = "cuda:cdsl,cpu:gloo" if int(torch.__version__.split(".")[0]) >= 2 else "cdsl"
    dist.init_process_group(backend)
    rank, n = dist.get_rank(), dist.get_world_size()
    ref = dist.new_group(backend="gloo")
    dev = torch.device("cuda", torch.cuda.current_device())
    pg = dist.distributed_c10d._get_default_group()
    if rank == 0:
        print("# torch %s, backend %r, %d ranks, engine %s, %s" % (torch.__version__, backend, n,
              getattr(pg, "engine", "?"), torch.cuda.get_device_name(dev)), flush=True)
    failed = 0

    def agree(ok):
        """Every rank's verdict (a gloo all-reduce of the failures)."""
        t = torch.tensor([0 if ok else 1], dtype=torch.int32)
        dist.all_reduce(t, group=ref)
        return int(t.item()) == 0

    def gloo_sum(t):
        c = t.detach().cpu().clone()
        dist.all_reduce(c, group=ref)
        return c

    def gloo_gather(t):
        parts = [torch.empty_like(t.cpu()) for _ in range(n)]
        dist.all_gather(parts, t.detach().cpu(), group=ref)
        return torch.cat(parts)

    def timed(call):
        for _ in range(args.warmup):
            call()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier(group=ref)
        torch.cuda.synchronize()
        start.record()
        for _ in range(args.iters):
            call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1000.0 / args.iters

    # (name, elements of the symmetric/holder tensor at msg bytes, verify(), staged call, symmetric call)
    def cases(msg):
        e = msg // 4
        small = e // n

        def ar():
            t = ((torch.arange(e, device=dev) % 7) - rank).float()
            want = gloo_sum(t)
            dist.all_reduce(t, op=dist.ReduceOp.SUM, async_op=True).wait()
            return torch.equal(t.cpu(), want), lambda: dist.all_reduce(t), lambda s: dist.all_reduce(s)

        def ag():
            inp = (torch.arange(small, device=dev) + 1000 * rank).float()
            out = torch.empty(small * n, device=dev)
            want = gloo_gather(inp)
            dist.all_gather_into_tensor(out, inp)
            return (torch.equal(out.cpu(), want), lambda: dist.all_gather_into_tensor(out, inp),
                    lambda s: dist.all_gather_into_tensor(s, s[small * rank:small * (rank + 1)]))

        def rs():
            inp = ((torch.arange(e, device=dev) % 13) * (rank + 1)).float()
            out = torch.empty(small, device=dev)
            want = gloo_sum(inp)[small * rank:small * (rank + 1)]
            dist.reduce_scatter_tensor(out, inp)
            return (torch.equal(out.cpu(), want), lambda: dist.reduce_scatter_tensor(out, inp),
                    lambda s: dist.reduce_scatter_tensor(s[small * rank:small * (rank + 1)], s))

        def bc():
            t = (torch.arange(e, device=dev) * (rank + 1)).float()
            want = torch.arange(e).float() * n            # the last rank's data
            dist.broadcast(t, src=n - 1)
            return (torch.equal(t.cpu(), want), lambda: dist.broadcast(t, src=0),
                    lambda s: dist.broadcast(s, src=0))

        def rd():
            t = (torch.arange(e, device=dev) % 5 + rank).float()
            total = gloo_sum(t)                             # every rank takes part in the gloo call
            want = total if rank == 0 else t.cpu()          # NCCL leaves a non-root's tensor as it was
            dist.reduce(t, dst=0)
            return (torch.equal(t.cpu(), want), lambda: dist.reduce(t, dst=0), lambda s: dist.reduce(s, dst=0))

        def a2a():
            inp = (torch.arange(e, device=dev) + 100000 * rank).float()
            out = torch.empty(e, device=dev)
            want = torch.empty(e)
            dist.all_to_all_single(want, inp.cpu(), group=ref)
            dist.all_to_all_single(out, inp)
            return torch.equal(out.cpu(), want), lambda: dist.all_to_all_single(out, inp), None

        def arc():      # two tensors, one run (torch's coalesced call; deprecated there, still used)
            a = ((torch.arange(e // 2, device=dev) % 7) - rank).float()
            b = ((torch.arange(e - e // 2, device=dev) % 3) + rank).float()
            want = torch.cat([gloo_sum(a), gloo_sum(b)])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dist.all_reduce_coalesced([a, b])
            return torch.equal(torch.cat([a, b]).cpu(), want), lambda: dist.all_reduce_coalesced([a, b]), None

        return (("all_reduce", "allreduce", ar), ("all_reduce_coalesced", "allreduce", arc),
                ("all_gather_into_tensor", "allgather", ag),
                ("reduce_scatter_tensor", "reducescatter", rs), ("broadcast", "broadcast", bc),
                ("reduce", "reduce", rd), ("all_to_all_single", "alltoall", a2a))

    for msg in (parse_size(s) for s in args.sizes.split(",")):
        for name, coll, case in cases(msg):
            head = "%s %d B f32" % (name, msg)
            try:
                ok, staged, symmetric = case()
            except tb.NoProgram as e:
                agree(True)
                if rank == 0:
                    print("[SKIP] %s: %s" % (head, str(e).splitlines()[0]), flush=True)
                continue
            except Exception as e:            # noqa: BLE001 - a failed call is a failed check
                ok, staged, symmetric = False, None, None
                print("[FAIL] %s: rank %d: %s: %s" % (head, rank, type(e).__name__, e), flush=True)
            if not agree(ok):
                failed += 1
                if rank == 0:
                    print("[FAIL] %s: differs from gloo (or failed) on some rank" % head, flush=True)
                continue
            t_staged = timed(staged)
            t_sym = None
            if symmetric is not None:
                s = tb.empty((msg // 4,), torch.float32)
                s.copy_(torch.arange(msg // 4, device=dev).float() % 3)
                t_sym = timed(lambda: symmetric(s))
                del s
            if rank == 0:
                print("[PASS] %s: verified; %.1f us staged%s" % (
                    head, t_staged, ", %.1f us symmetric" % t_sym if t_sym is not None else ""), flush=True)
    dist.barrier(group=ref)
    try:
        dist.destroy_process_group()
    except Exception as e:                    # noqa: BLE001 - after the results: reported, not fatal
        print("# rank %d: destroy_process_group: %s: %s" % (rank, type(e).__name__, e), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
