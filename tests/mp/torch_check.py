"""cdsl.distributed on torch tensors, in real processes: torch.distributed with gloo carries the
unique id, the sim engine runs the collectives on CPU tensors. Run by tests/mp/python.sh with
a python that has torch; prints one [PASS]/[FAIL] line per check (rank 0's view; a check
passes only when every rank passed it).

Checks: all_gather_into_tensor, reduce_scatter_tensor and all_reduce (f32, bf16, s32) against
torch.distributed's own results; run() of a stdlib program by path; runs on symmetric tensors
(zero copy); torch's in-place forms (all_reduce(t), an allgather input that is the output's
slice, a reduce-scatter output that is the input's), each run by the program compiled in place,
all_to_all_single out of place and in place against the blocks each rank's input is made of,
and an input inside the output at another rank's slice refused; and the refusals, each a clear error naming the rank: a tensor on another device,
a tensor that is not contiguous, a dtype cdsl does not run, sizes that do not fit, two dtypes,
an all_to_all_single output of another size than its input.
"""
import multiprocessing
import os
import sys
import traceback

import torch
import torch.distributed as dist

import cdsl
import cdsl.distributed as cd

N = 3


def reference_all_gather(inp):
    parts = [torch.empty_like(inp) for _ in range(N)]
    dist.all_gather(parts, inp)            # gloo has no all_gather_into_tensor (nor bf16) in torch 1.13
    return torch.cat(parts)


def reference_sum(t):
    s = t.float().clone()
    dist.all_reduce(s)                     # summed in f32: the test values are small integers
    return s


def checks(rank):
    c = cd.Communicator()
    results = []

    def check(name, fn):
        try:
            ok, why = fn()
        except Exception as e:                # noqa: BLE001 - a test reports whatever went wrong
            ok, why = False, "%s: %s" % (type(e).__name__, e)
        results.append((name, bool(ok), why))

    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        def ag(dtype=dtype):
            inp = (torch.arange(64) + 1000 * rank).to(dtype)
            out = torch.full((64 * N,), -1).to(dtype)
            c.all_gather_into_tensor(out, inp)
            return torch.equal(out, reference_all_gather(inp.float()).to(dtype)), "allgather differs"

        def rs(dtype=dtype):
            inp = ((torch.arange(64 * N) % 13) * (rank + 1)).to(dtype)
            out = torch.zeros(64).to(dtype)
            c.reduce_scatter_tensor(out, inp)
            want = reference_sum(inp)[64 * rank:64 * (rank + 1)]
            return torch.equal(out.float(), want), "reduce-scatter differs"

        def ar(dtype=dtype):
            t = ((torch.arange(96) % 7) - rank).to(dtype)
            want = reference_sum(t)
            c.all_reduce(t)
            return torch.equal(t.float(), want), "allreduce differs"

        name = str(dtype).replace("torch.", "")
        check("all_gather_into_tensor %s" % name, ag)
        check("reduce_scatter_tensor %s" % name, rs)
        check("all_reduce %s (in place)" % name, ar)

    def by_path():
        inp = torch.arange(32, dtype=torch.float32) + 100 * rank
        out = torch.zeros(32 * N)
        c.run(cdsl.stdlib_program("allgather_ring"), out, inp)
        return torch.equal(out, reference_all_gather(inp)), "run(allgather_ring) differs"

    def symmetric():
        si, so = c.symmetric_tensors("allgather_nvls", 16 * N)
        inp = torch.arange(16, dtype=torch.float32) - 7 * rank
        si.copy_(inp)
        c.all_gather_into_tensor(so, si)
        return torch.equal(so, reference_all_gather(inp)), "the symmetric output differs"

    def ag_in_place():
        out = torch.full((16 * N,), -1.0)
        inp = out[16 * rank:16 * (rank + 1)]        # torch's in-place form: the input is our slice
        inp.copy_(torch.arange(16, dtype=torch.float32) + 10 * rank)
        want = reference_all_gather(inp.clone())
        c.all_gather_into_tensor(out, inp)
        return torch.equal(out, want), "the in-place allgather differs"

    def rs_in_place():
        inp = ((torch.arange(16 * N) % 5) * (rank + 2)).float()
        want = reference_sum(inp)[16 * rank:16 * (rank + 1)]
        out = inp[16 * rank:16 * (rank + 1)]        # the output is our slice of the input
        c.reduce_scatter_tensor(out, inp)
        return torch.equal(out, want), "the in-place reduce-scatter differs"

    def a2a_input(r):                               # rank r's input: block p is 1000*p + 100*r + 0..15
        return torch.cat([torch.arange(16, dtype=torch.float32) + 100 * r + 1000 * p for p in range(N)])

    def a2a_want():                                 # block p of this rank's output: rank p's block `rank`
        return torch.cat([a2a_input(p)[16 * rank:16 * (rank + 1)] for p in range(N)])

    def a2a():
        out = torch.full((16 * N,), -1.0)
        c.all_to_all_single(out, a2a_input(rank))
        return torch.equal(out, a2a_want()), "all_to_all_single differs"

    def a2a_in_place():
        t = a2a_input(rank)
        c.all_to_all_single(t, t)
        return torch.equal(t, a2a_want()), "the in-place all_to_all_single differs"

    check("all_to_all_single", a2a)
    check("all_to_all_single in place (one tensor)", a2a_in_place)
    check("run() of a stdlib program by path", by_path)
    check("symmetric tensors: a run with no copy", symmetric)
    check("all_gather_into_tensor in place (the input is the output's slice for this rank)", ag_in_place)
    check("reduce_scatter_tensor in place (the output is the input's slice for this rank)", rs_in_place)

    def aliased_wrongly():
        out2 = torch.zeros(8 * N)       # every rank passes the first slice: right for rank 0 only
        try:
            c.all_gather_into_tensor(out2, out2[:8])
        except Exception as e:          # noqa: BLE001 - the refusal is what is tested
            want = "share memory, but not as allgather_nvls in place" if rank else "cannot take part in the run"
            return want in str(e), str(e)
        return False, "no refusal"

    check("an input inside the output, but not at this rank's slice, is refused on every rank", aliased_wrongly)

    def refused(exc, pattern, fn):
        def go():
            try:
                fn()
            except exc as e:
                return ("rank %d" % rank) in str(e) and pattern in str(e), str(e)
            return False, "no %s" % exc.__name__
        return go

    out = torch.zeros(8 * N)
    check("a tensor on another device is refused",
          refused(ValueError, "is on meta", lambda: c.all_gather_into_tensor(out, torch.empty(8, device="meta"))))
    check("a tensor that is not contiguous is refused",
          refused(ValueError, "not contiguous", lambda: c.all_gather_into_tensor(out, torch.zeros(16)[::2])))
    check("a dtype cdsl does not run is refused",
          refused(TypeError, "float64", lambda: c.all_reduce(torch.zeros(8, dtype=torch.float64))))
    check("sizes that do not fit are refused",
          refused(ValueError, "needs the output to hold", lambda: c.all_gather_into_tensor(out, torch.zeros(5))))
    check("a reducescatter's sizes that do not fit are refused, naming its larger tensor, the input",
          refused(ValueError, "needs the input to hold %d x the output's 8 elements" % N,
                  lambda: c.reduce_scatter_tensor(torch.zeros(8), torch.zeros(8 * N + 1))))
    check("two dtypes are refused",
          refused(TypeError, "must be one type", lambda: c.run("allgather_mesh", out, torch.zeros(8, dtype=torch.int32))))
    check("all_to_all_single refuses an output of another size",
          refused(ValueError, "one size", lambda: c.all_to_all_single(torch.zeros(8), torch.zeros(8 * N))))
    c.close()
    return results


def worker(rank, port, queue):
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=N)
        queue.put((rank, checks(rank)))
        dist.destroy_process_group()
    except Exception:                         # noqa: BLE001
        queue.put((rank, [("rank %d set-up" % rank, False, traceback.format_exc().splitlines()[-1])]))


def main():
    port = 20000 + os.getpid() % 20000
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, port, q)) for r in range(N)]
    for p in procs:
        p.start()
    got = {}
    for _ in range(N):
        try:
            r, res = q.get(timeout=120)
        except Exception:                     # noqa: BLE001
            break
        got[r] = res
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
    if len(got) != N:
        print("[FAIL] torch: only ranks %s answered" % sorted(got))
        return 1
    bad = 0
    for i, (name, _, _) in enumerate(got[0]):
        fails = [(r, got[r][i][2]) for r in range(N) if i >= len(got[r]) or not got[r][i][1]]
        if fails:
            bad += 1
            print("[FAIL] torch: %s: rank %d: %s" % (name, fails[0][0], fails[0][1]))
        else:
            print("[PASS] torch: %s" % name)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
