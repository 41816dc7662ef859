#!/usr/bin/env python3
"""bench/nccl_allgather.py - NCCL's allgather (or reduce-scatter, allreduce) through PyTorch,
printed the way nccl-tests does.

The baseline `bench/compare.sh` puts next to `cdslrun --bench`. One process per GPU
(torch.multiprocessing), NCCL with NVLink SHARP off. For every size - the larger of one rank's
input and output in bytes, as nccl-tests and cdslrun count: an allgather's output, a
reduce-scatter's input, an allreduce's buffer - it warms up, then times `iters` back-to-back
calls between two CUDA events on the current stream, either launched one by one or captured
once into a CUDA graph and replayed (--graph: one untimed replay, then one timed, as cdslrun
replays its chain), takes the slowest rank's mean, and checks one more run's result on fresh
inputs (rank p's input holds p + 1: an allgather's chunk p must hold p + 1, a sum n(n+1)/2).
The allreduce runs in place (torch's all_reduce), so its timed runs sum sums; only the check
starts from fresh inputs.

    bench/nccl_allgather.py [--coll allgather|reducescatter|allreduce] [--sizes 1K:1G[:F]]
                            [--iters 20] [--warmup 5] [--graph] [--nranks 2]

SAFETY: multicast objects are forbidden on the shared GPU hosts: creating one there can take the
host's GPUs, which others share, out of service for a day or more.
The NVLS-off variables are forced below, before torch is imported, so that this process and
every process it spawns inherit them.
"""
import os

for _name, _value in (("NCCL_NVLS_ENABLE", "0"), ("NVSHMEM_DISABLE_NVLS", "1"),
                      ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("CDSL_NVLS", "0")):
    os.environ[_name] = _value

import argparse  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text):
    text = text.strip().upper().removesuffix("B")
    unit = text[-1] if text and text[-1] in UNITS else ""
    return int(text[: len(text) - len(unit)]) * UNITS[unit]


def parse_sizes(text):
    parts = text.split(":")
    lo, hi = parse_size(parts[0]), parse_size(parts[1] if len(parts) > 1 else parts[0])
    factor = int(parts[2]) if len(parts) > 2 else 2
    sizes, s = [], lo
    while s <= hi:
        sizes.append(s)
        s *= factor
    return sizes


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    try:
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    except TypeError:  # torch before 2.3 has no device_id
        dist.init_process_group("nccl", rank=rank, world_size=world)
    return device


def call(coll, out, inp):
    """One collective call: out from inp (allreduce: inp in place)."""
    if coll == "allgather":
        dist.all_gather_into_tensor(out, inp)
    elif coll == "reducescatter":
        dist.reduce_scatter_tensor(out, inp)
    else:
        dist.all_reduce(inp)


def timed_us(coll, out, inp, iters, use_graph):
    """Mean microseconds of one call over `iters` back-to-back calls."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if use_graph:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(iters):
                call(coll, out, inp)
        graph.replay()  # the first replay uploads the graph; time the second
        torch.cuda.synchronize()
        start.record()
        graph.replay()
        end.record()
    else:
        start.record()
        for _ in range(iters):
            call(coll, out, inp)
        end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / iters


def wrong_elements(coll, out, inp, world, rank):
    inp.fill_(float(rank + 1))
    out.fill_(-1)
    call(coll, out, inp)
    if coll == "allgather":
        expected = torch.arange(1, world + 1, device=out.device, dtype=out.dtype)
        return int((out.view(world, -1) != expected[:, None]).sum().item())
    got = out if coll == "reducescatter" else inp
    return int((got != world * (world + 1) / 2).sum().item())


def buffers(coll, elems, world, rank, device):
    """(out, inp) for `elems` elements of the larger buffer."""
    small = elems // world
    n_in, n_out = {"allgather": (small, elems), "reducescatter": (elems, small), "allreduce": (elems, 1)}[coll]
    inp = torch.full((n_in,), float(rank + 1), device=device, dtype=torch.float32)
    return torch.empty((n_out,), device=device, dtype=torch.float32), inp


def one_size(size, world, rank, device, args):
    elems = size // 4 // world * world  # f32, a whole number of elements per rank
    if elems == 0:
        return None
    out, inp = buffers(args.coll, elems, world, rank, device)
    for _ in range(args.warmup):
        call(args.coll, out, inp)
    us = torch.tensor([timed_us(args.coll, out, inp, args.iters, args.graph)], device=device)
    dist.all_reduce(us, op=dist.ReduceOp.MAX)
    wrong = torch.tensor([wrong_elements(args.coll, out, inp, world, rank)], device=device)
    dist.all_reduce(wrong, op=dist.ReduceOp.SUM)
    return elems * 4, elems, us.item(), int(wrong.item())


def worker(rank, world, port, args):
    device = init(rank, world, port)
    if rank == 0:
        mode = "one CUDA graph of %d calls" % args.iters if args.graph else "%d calls" % args.iters
        nccl = torch.cuda.nccl.version()
        nccl = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
        print("# nccl %s: torch %s, NCCL %s, %d ranks, f32, %d warmup + %s per size, NVLS off"
              % (args.coll, torch.__version__, nccl, world, args.warmup, mode))
        print("#\n# %10s  %12s  %6s  %10s  %11s  %11s  %6s"
              % ("size", "count", "type", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong"))
        sys.stdout.flush()
    for size in parse_sizes(args.sizes):
        row = one_size(size, world, rank, device, args)
        if row and rank == 0:
            nbytes, count, us, wrong = row
            algbw = nbytes / us / 1e3
            factor = (2.0 if args.coll == "allreduce" else 1.0) * (world - 1) / world
            print("  %10d  %12d  %6s  %10.2f  %11.2f  %11.2f  %6d"
                  % (nbytes, count, "f32", us, algbw, algbw * factor, wrong))
            sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--coll", default="allgather", choices=("allgather", "reducescatter", "allreduce"))
    ap.add_argument("--sizes", default="1K:1G")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--graph", action="store_true", help="time a CUDA graph of the calls")
    ap.add_argument("--nranks", type=int, default=2)
    args = ap.parse_args()
    if torch.cuda.device_count() < args.nranks:
        sys.exit("nccl_allgather.py: %d GPUs needed, %d here" % (args.nranks, torch.cuda.device_count()))
    mp.spawn(worker, args=(args.nranks, free_port(), args), nprocs=args.nranks, join=True)


if __name__ == "__main__":
    main()
