"""bench/torch_call_cost.py: the per-call cost of the torch backend cdsl.

Two processes (sim engine, CPU tensors) call dist.all_reduce(t, async_op=True).wait() on 256
floats, 20 times to warm up and N times timed; rank 0 prints microseconds a call and the
profile's top entries (cProfile, by own time). With CDSL_TORCH_DEVICE=cuda (a GPU machine, under
torchrun or as below with CDSL_ENGINE=ipc), the tensors are CUDA tensors on GPU 0 and the time
is the host's per call (what the caller's thread spends; the GPU runs behind it). The profiler
runs during the timed calls and adds its own cost to each Python call; CDSL_PROFILE_ROWS=0 times
them without it. Run from the repository root:

    rm -f /tmp/cdsl_store
    for r in 0 1; do CDSL_LIB=build/libcdsl.so PYTHONPATH=python \\
        /usr/bin/python3 bench/torch_call_cost.py $r 2 /tmp/cdsl_store & done; wait
"""
import cProfile
import os
import pstats
import sys
import time

rank, world, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
calls = int(sys.argv[4]) if len(sys.argv) > 4 else 300
os.environ.setdefault("CDSL_ENGINE", "sim")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import cdsl.torch_backend  # noqa: E402,F401  (registers the backend "cdsl")

device = os.environ.get("CDSL_TORCH_DEVICE", "cpu")
backend = "cuda:cdsl,cpu:gloo" if device == "cuda" else "cdsl"
if device == "cuda":
    torch.cuda.set_device(0)
dist.init_process_group(backend, store=dist.FileStore(path, world), rank=rank, world_size=world)
t = torch.ones(256, device=device)
for _ in range(20):
    dist.all_reduce(t, async_op=True).wait()
rows = int(os.environ.get("CDSL_PROFILE_ROWS", "12"))
profile = cProfile.Profile()
start = time.time()
if rows:
    profile.enable()
for _ in range(calls):
    dist.all_reduce(t, async_op=True).wait()
if rows:
    profile.disable()
us = (time.time() - start) / calls * 1e6
if device == "cuda":
    torch.cuda.synchronize()
if rank == 0:
    print("us per all_reduce (%s engine, %s tensors, %d processes): %.1f" % (os.environ["CDSL_ENGINE"], device, world, us))
    if rows:
        pstats.Stats(profile).sort_stats(os.environ.get("CDSL_PROFILE_SORT", "tottime")).print_stats(rows)
dist.destroy_process_group()
