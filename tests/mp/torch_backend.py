"""The torch.distributed backend "cdsl" (cdsl.torch_backend) in real processes: N processes (argv[1])
make the default group with init_process_group("cdsl") over a FileStore, the sim engine runs
the collectives on CPU tensors, and a gloo group over the same processes computes every
reference from the same data. Run by tests/mp/torch_backend.sh; prints one [PASS]/[FAIL] line per
check as rank 0 sees it (a check passes only when it passed on every rank).

Only torch.distributed calls reach the backend (dist.all_reduce(t, op=, group=, async_op=) ...);
cdsl.torch_backend is used for what torch has no call for: the program table, the fallback
switch and symmetric tensors.
"""
import faulthandler
import multiprocessing
import os
import sys
import tempfile
import traceback
import warnings

import torch
import torch.distributed as dist

import cdsl.torch_backend as tb

N = int(sys.argv[1]) if sys.argv[1:] and sys.argv[1].isdigit() else 2
WRONG = os.environ.get("CDSL_TEST_WRONG") == "1"      # a deliberately wrong expectation: the checks must fail


def expect(text):
    """A message the test looks for (one that never comes under CDSL_TEST_WRONG=1)."""
    return text + (" (wrong on purpose)" if WRONG else "")


def checks(rank, ref):
    results = []

    def check(name, fn):
        try:
            ok, why = fn()
        except Exception as e:                # noqa: BLE001 - a test reports whatever went wrong
            ok, why = False, "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
        results.append((name, bool(ok), why))

    def ref_gather(inp):
        parts = [torch.empty_like(inp.float()) for _ in range(N)]
        dist.all_gather(parts, inp.float(), group=ref)   # gloo: no all_gather_into_tensor nor bf16 in torch 1.13
        return torch.cat(parts)

    def ref_reduce(t, op=dist.ReduceOp.SUM):
        s = t.float().clone()
        dist.all_reduce(s, op=op, group=ref)
        return s + (1 if WRONG else 0)

    def same(got, want, what):
        return torch.equal(got.float(), want), "%s: got %s, want %s" % (what, got.flatten()[:4].tolist(),
                                                                          want.flatten()[:4].tolist())

    def raises(pattern, fn):
        def go():
            try:
                fn()
            except Exception as e:            # noqa: BLE001 - the error is what is tested
                return expect(pattern) in str(e), "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
            return False, "no error"
        return go

    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        name = str(dtype).replace("torch.", "")

        def ag(dtype=dtype):
            inp = (torch.arange(64) + 1000 * rank).to(dtype)
            out = torch.full((64 * N,), -1).to(dtype)
            dist.all_gather_into_tensor(out, inp)
            return same(out, ref_gather(inp) + (1 if WRONG else 0), "all_gather_into_tensor")

        def rs(dtype=dtype):
            inp = ((torch.arange(64 * N) % 13) * (rank + 1)).to(dtype)
            out = torch.zeros(64).to(dtype)
            dist.reduce_scatter_tensor(out, inp)
            return same(out, ref_reduce(inp)[64 * rank:64 * (rank + 1)], "reduce_scatter_tensor")

        def ar(dtype=dtype):
            t = ((torch.arange(96) % 7) - rank).to(dtype)
            want = ref_reduce(t)
            work = dist.all_reduce(t, op=dist.ReduceOp.SUM, async_op=True)
            ok = work.wait()
            return (ok is True and same(t, want, "all_reduce")[0]), "wait() %r; %s" % (ok, same(t, want, "")[1])

        def lists(dtype=dtype):
            inp = (torch.arange(16) * (rank + 1)).to(dtype)
            outs = [torch.empty(16).to(dtype) for _ in range(N)]
            dist.all_gather(outs, inp)
            parts = [((torch.arange(16) + p) * (rank + 1)).to(dtype) for p in range(N)]
            out = torch.empty(16).to(dtype)
            dist.reduce_scatter(out, parts)
            want = ref_reduce(torch.cat(parts))[16 * rank:16 * (rank + 1)]
            ok_g = same(torch.cat(outs), ref_gather(inp) + (1 if WRONG else 0), "all_gather")
            ok_r = same(out, want, "reduce_scatter")
            return ok_g[0] and ok_r[0], "%s; %s" % (ok_g[1], ok_r[1])

        check("all_gather_into_tensor %s, against gloo" % name, ag)
        check("the list forms all_gather and reduce_scatter %s, against gloo" % name, lists)
        check("reduce_scatter_tensor %s, against gloo" % name, rs)
        check("all_reduce(op=SUM, async_op=True).wait() %s, against gloo" % name, ar)

    def coalesced():
        pg = dist.distributed_c10d._get_default_group()
        a, b = ((torch.arange(64) % 5) + rank).float(), (torch.arange(32) * (rank + 1)).float()
        want_a, want_b = ref_reduce(a), ref_reduce(b)
        with warnings.catch_warnings():     # torch says it "will be deprecated"; users still call it
            warnings.simplefilter("ignore")
            dist.all_reduce_coalesced([a, b])
        x, y = (torch.arange(16) + 100 * rank).float(), (torch.arange(48) + 1000 * rank).float()
        gx, gy = torch.full((16 * N,), -1.0), torch.full((48 * N,), -1.0)
        pg.allgather_into_tensor_coalesced([gx, gy], [x, y]).wait()
        ix, iy = ((torch.arange(16 * N) % 7) * (rank + 1)).float(), ((torch.arange(48 * N) % 3) + rank).float()
        rx, ry = torch.zeros(16), torch.zeros(48)
        pg.reduce_scatter_tensor_coalesced([rx, ry], [ix, iy], dist.ReduceScatterOptions()).wait()
        got = [same(a, want_a, "all_reduce_coalesced[0]"), same(b, want_b, "all_reduce_coalesced[1]"),
               same(gx, ref_gather(x) + (1 if WRONG else 0), "allgather_into_tensor_coalesced[0]"),
               same(gy, ref_gather(y) + (1 if WRONG else 0), "allgather_into_tensor_coalesced[1]"),
               same(rx, ref_reduce(ix)[16 * rank:16 * (rank + 1)], "reduce_scatter_tensor_coalesced[0]"),
               same(ry, ref_reduce(iy)[48 * rank:48 * (rank + 1)], "reduce_scatter_tensor_coalesced[1]")]
        return all(ok for ok, _ in got), "; ".join(why for ok, why in got if not ok)[:300]
    check("the coalesced calls (all_reduce_coalesced, allgather_into_tensor_coalesced, "
          "reduce_scatter_tensor_coalesced) of two tensors each, one run each, against gloo", coalesced)
    check("a coalesced call of two dtypes raises, saying it runs one",
          raises("a coalesced call runs one dtype",
                 lambda: dist.distributed_c10d._get_default_group().allreduce_coalesced(
                     [torch.ones(32), torch.ones(32, dtype=torch.int32)], dist.AllreduceCoalescedOptions())))

    def ddp():
        def grads(group):
            torch.manual_seed(0)            # the same model on every rank, and for both groups
            model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
            net = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
            for step in range(2):
                x = torch.arange(64 * (step + 1), 64 * (step + 2)).float().view(4, 16) / 100 * (rank + 1)
                net(x).square().sum().backward()
            return torch.cat([p.grad.flatten() for p in model.parameters()])
        got, want = grads(None), grads(ref) + (1 if WRONG else 0)
        return torch.allclose(got, want, rtol=1e-5, atol=1e-6), "DDP's gradients: got %s, want %s" % (
            got[:3].tolist(), want[:3].tolist())
    check("DistributedDataParallel over the group (its parameter check, broadcast and gradient all-reduce): "
          "the gradients of two steps equal gloo DDP's", ddp)

    def avg():
        t = (torch.arange(32) * (rank + 1)).float()
        want = ref_reduce(t) / N
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        return same(t, want, "all_reduce AVG")
    if hasattr(dist.ReduceOp, "AVG"):
        check("all_reduce(op=AVG): a sum divided by the ranks", avg)

    def subgroup():
        pg = dist.new_group(backend="cdsl")
        t = (torch.arange(16) + rank).float()
        want = ref_reduce(t)
        dist.all_reduce(t, group=pg)
        return same(t, want, "all_reduce(group=new_group(backend='cdsl'))")
    check("all_reduce(group=new_group(backend='cdsl'))", subgroup)

    def table():
        tb.set_programs("allgather", [(256, "allgather_ring"), (None, "allgather_mesh")])
        used = []
        pg = dist.distributed_c10d._get_default_group()
        real = pg.comm.run
        pg.comm.run = lambda prog, *a: (used.append(prog.name), real(prog, *a))[1]
        try:
            for n in (16, 1024):
                inp = torch.arange(n, dtype=torch.float32) + rank
                out = torch.empty(n * N)
                dist.all_gather_into_tensor(out, inp)
                if not same(out, ref_gather(inp) + (1 if WRONG else 0), "")[0]:
                    return False, "allgather of %d elements differs" % n
        finally:
            pg.comm.run = real
            tb.set_programs("allgather", None)
        want = ["allgather_ring", "allgather_mesh"]
        return used == want, "ran %s, the table says %s" % (used, want)
    check("the program table picks a program per size (ring up to 256 bytes, then mesh)", table)

    def route_reused():
        calls = []
        real = tb.choose_program
        tb.choose_program = lambda coll, nbytes: (calls.append(nbytes), real(coll, nbytes))[1]
        try:
            for n in (72 * N, 72 * N, 144 * N):     # sizes no other check uses: the first call misses
                t = (torch.arange(n) % 5 + rank).float()
                want = ref_reduce(t)
                dist.all_reduce(t)
                if not torch.equal(t, want):
                    return False, "all_reduce of %d floats differs" % n
        finally:
            tb.choose_program = real
        # Under CDSL_TEST_WRONG=1, what a backend without the cache does: it asks on every call.
        want = [72 * N * 4, 144 * N * 4] if not WRONG else [72 * N * 4, 72 * N * 4, 144 * N * 4]
        return calls == want, "choose_program asked for %s, expected %s" % (calls, want)
    check("a second all_reduce of one shape reuses the group's cached route (choose_program asked once a shape)",
          route_reused)

    def route_invalidated():
        used = []
        pg = dist.distributed_c10d._get_default_group()
        real = pg.comm.run
        pg.comm.run = lambda prog, *a: (used.append(prog.name), real(prog, *a))[1]
        try:
            for rows in (None, [(None, "allreduce_twoshot")], None):
                tb.set_programs("allreduce", rows)
                t = (torch.arange(64 * N) % 9 * (rank + 1)).float()
                want = ref_reduce(t)
                dist.all_reduce(t)
                if not torch.equal(t, want):
                    return False, "all_reduce under the table %s differs" % rows
        finally:
            pg.comm.run = real
            tb.set_programs("allreduce", None)
        # Under CDSL_TEST_WRONG=1, what a cache that set_programs does not invalidate would run.
        want = ["allreduce_ll", "allreduce_twoshot" if not WRONG else "allreduce_ll", "allreduce_ll"]
        return used == want, "ran %s, the tables say %s" % (used, want)
    check("set_programs between two calls of one shape changes the program that runs (the route cache is "
          "invalidated), and restoring the default brings the first back", route_invalidated)

    def refusal_not_cached():
        got = []
        for rows, n in ((None, 3), ([(64, "allreduce_ll")], 1024)):
            tb.set_programs("allreduce", rows)
            try:
                for _ in range(2):
                    try:
                        if rows is None:    # a size refused: all-gather's parts are not padded
                            dist.all_gather_into_tensor(torch.empty(N, dtype=torch.bfloat16),
                                                        torch.ones(1, dtype=torch.bfloat16))
                        else:
                            dist.all_reduce(torch.ones(n))
                        got.append("no error")
                    except tb.NoProgram as e:
                        got.append(str(e).splitlines()[0])
            finally:
                tb.set_programs("allreduce", None)
        t = (torch.arange(1024) + rank).float()
        want_t = ref_reduce(t)
        dist.all_reduce(t)                      # the shape refused under the short table runs under the default
        ok = (expect("is not a positive multiple of") in got[0] and got[1] == got[0] and
              expect("no row of the allreduce table serves 4096 bytes") in got[2] and got[3] == got[2])
        return ok and torch.equal(t, want_t), "errors %s; then the default table ran it: %s" % (
            got, torch.equal(t, want_t))
    check("a call refused with NoProgram (a size, a table without a row for it) raises the same on the next "
          "identical call, and runs once the table serves it", refusal_not_cached)

    def defaults():
        found = tb.stdlib_programs()
        for c in ("allreduce", "allgather", "reducescatter"):
            rows = tb.default_programs(c)
            names = [p for _, p in rows]
            others = [p for p in found[c] if not p.endswith(("_nvls", "_port"))]
            lls = [p for p in found[c] if p.endswith("_ll")]
            bad = (not rows or rows[-1][0] is not None or any(p not in found[c] for p in names) or
                   (others and any(p.endswith(("_nvls", "_port")) for p in names)) or
                   (lls and names[0] != lls[0]) or (len(rows) > 1 and rows[0][0] != 65536))
            if bad != WRONG:
                return False, "%s: %s from the stdlib's %s" % (c, rows, found[c])
        return True, ""
    check("the default tables: packets up to 64 KiB, then mesh/twoshot; no nvls while another serves", defaults)

    for coll, call, n in (("broadcast", lambda t: dist.broadcast(t, src=N - 1), 40),
                          ("broadcast", lambda t: dist.broadcast(t, src=N - 1), 20000),
                          ("reduce", lambda t: dist.reduce(t, dst=N - 1), 40),
                          ("reduce", lambda t: dist.reduce(t, dst=N - 1), 20000)):
        def rooted(coll=coll, call=call, n=n):
            t = (torch.arange(n) % 1000 * (rank + 2)).float()
            keep = t.clone()
            if coll == "broadcast":
                want = (torch.arange(n) % 1000 * (N + 1)).float() + (1 if WRONG else 0)
            else:
                total = ref_reduce(t)           # every rank takes part in the reference
                want = total if rank == N - 1 else keep + (1 if WRONG else 0)
            if tb.programs(coll):
                call(t)
                return same(t, want, coll)
            try:
                call(t)
            except RuntimeError as e:
                return expect("no cdsl program implements %s" % coll) in str(e), str(e).splitlines()[0]
            return False, "no error though no program implements %s" % coll
        check("%s of %d floats from the last rank: verified when a program implements it, else the error "
              "'no cdsl program implements %s'" % (coll, n, coll), rooted)

    def alltoall(per=8):
        inp = (torch.arange(per * N) + 100 * rank).float()
        out = torch.empty(per * N)
        want = torch.empty(per * N)
        dist.all_to_all_single(want, inp.clone(), group=ref)
        if tb.programs("alltoall"):
            dist.all_to_all_single(out, inp)
            return same(out, want + (1 if WRONG else 0), "all_to_all_single")
        try:
            dist.all_to_all_single(out, inp)
        except RuntimeError as e:
            return expect("no cdsl program implements alltoall") in str(e), str(e).splitlines()[0]
        return False, "no error though no program implements alltoall"
    check("all_to_all_single of %d floats: verified when a program implements it, else the clear error" % (8 * N),
          alltoall)
    check("all_to_all_single of %d floats: verified when a program implements it, else the clear error" %
          (10000 * N), lambda: alltoall(10000))
    uneven = [8 * N - (N - 1)] + [1] * (N - 1)
    check("all_to_all_single with unequal splits raises, saying cdsl moves equal blocks",
          raises("are not equal; cdsl's alltoall moves equal blocks",
                 lambda: dist.all_to_all_single(torch.empty(8 * N), torch.ones(8 * N), uneven, uneven)))

    def fallback():
        tb.set_fallback(True)
        try:
            t = (torch.arange(24) * (rank + 3)).float()
            want = ref_reduce(t, dist.ReduceOp.MAX)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            b = (torch.arange(24) + rank).float()
            dist.broadcast(b, src=0)
            ok_b = torch.equal(b, torch.arange(24).float() + (1 if WRONG else 0))
            return torch.equal(t, want) and ok_b, "MAX via gloo %s; broadcast %s" % (
                same(t, want, "")[1], b[:4].tolist())
        finally:
            tb.set_fallback(False)
    check("set_fallback(True): MAX runs on gloo, and broadcast (on gloo where no program implements it), same "
          "results", fallback)

    check("all_reduce(op=MAX) raises, naming the op",
          raises("op ReduceOp.MAX is not supported", lambda: dist.all_reduce(torch.ones(8), op=dist.ReduceOp.MAX)))
    check("all_reduce(op=PRODUCT, async_op=True) raises, naming the op",
          raises("ReduceOp.PRODUCT", lambda: dist.all_reduce(torch.ones(8), op=dist.ReduceOp.PRODUCT, async_op=True)))
    def odd(n=37):
        t, b = ((torch.arange(n) % 5) + rank).float(), (torch.arange(n) * (rank + 1)).float()
        want = ref_reduce(t)
        dist.all_reduce(t)
        dist.broadcast(b, src=N - 1)
        ok_t, ok_b = same(t, want, "all_reduce"), same(b, torch.arange(n).float() * N + (1 if WRONG else 0), "broadcast")
        return ok_t[0] and ok_b[0], "%s; %s" % (ok_t[1], ok_b[1])
    check("all_reduce and broadcast of 37 floats (not a multiple of the program's chunks): padded with zeros, "
          "against gloo", odd)
    check("all_gather_into_tensor of one bf16 a rank (2 bytes; the parts cannot be padded) raises, saying the "
          "multiple", raises("is not a positive multiple of", lambda: dist.all_gather_into_tensor(
              torch.empty(N, dtype=torch.bfloat16), torch.ones(1, dtype=torch.bfloat16))))
    check("a dtype cdsl does not run (float64) raises, naming it",
          raises("dtype torch.float64 is not run by cdsl", lambda: dist.all_reduce(torch.ones(8, dtype=torch.float64))))
    check("the error names how to ask for the fallback",
          raises("set_fallback(True) or CDSL_TORCH_FALLBACK=1",
                 lambda: dist.all_reduce(torch.ones(8), op=dist.ReduceOp.MIN)))

    def symmetric():
        pg = dist.distributed_c10d._get_default_group()
        t = tb.empty((64 * N,), torch.float32)
        t.copy_((torch.arange(64 * N) % 11 + rank).float())
        want = ref_reduce(t)
        seen = []
        real = pg.comm.run
        pg.comm.run = lambda prog, dt, chunk, inp, ib, out, ob, st: (seen.append((inp, out)),
                                                                    real(prog, dt, chunk, inp, ib, out, ob, st))[1]
        try:
            dist.all_reduce(t)
            ok = same(t, want, "all_reduce on a symmetric tensor")
            part = t[64 * rank:64 * (rank + 1)]
            part.copy_(torch.arange(64).float() * (rank + 1))
            want_g = ref_gather(part.clone())
            dist.all_gather_into_tensor(t, part)
            ok_g = same(t, want_g, "in-place all_gather_into_tensor on a symmetric tensor")
            keep = t.clone()
            o = (torch.arange(32) + rank).float()
            want_o = ref_reduce(o)
            dist.all_reduce(o)          # ordinary memory: staged through the region, t kept
            ok_o = torch.equal(o, want_o) and torch.equal(t, keep)
            ok_b = True
            if tb.programs("broadcast"):
                t.copy_(torch.arange(64 * N).float() + rank)
                dist.broadcast(t, src=N - 1)
                ok_b = torch.equal(t, torch.arange(64 * N).float() + N - 1 + (1 if WRONG else 0)) and \
                    seen[3] == (None, None)
        finally:
            pg.comm.run = real
        ok_o = ok_o and ok_b
        no_copy = seen[:2] == [(None, None), (None, None)] and seen[2][0] is not None
        sym = tb.is_symmetric(t) and not tb.is_symmetric(o)
        del t, part
        return (ok[0] and ok_g[0] and ok_o and no_copy and sym,
                "%s; %s; ordinary run kept it, broadcast on it: %s; pointers given %s" % (ok[1], ok_g[1], ok_o, seen))
    check("symmetric tensors (cdsl.torch_backend.empty): in-place runs (all_reduce, all_gather_into_tensor, "
          "broadcast where a program exists) with no copy, an ordinary run keeps them",
          symmetric)

    def barrier():
        dist.barrier()
        return not WRONG, "barrier returned"
    check("barrier", barrier)
    return results


def dying(rank, path, queue):
    """Rank 1 leaves after init; rank 0's next collective raises, naming it, within the bound."""
    os.environ.update(CDSL_ENGINE="sim", CDSL_TORCH_TIMEOUT="5")
    dist.init_process_group("cdsl", init_method="file://" + path, rank=rank, world_size=2)
    dist.barrier()
    if rank == 1:
        os._exit(0)
    try:
        dist.all_reduce(torch.ones(64), async_op=True).wait()
        queue.put((0, False, "no error"))
    except Exception as e:                    # noqa: BLE001 - the error is what is tested
        queue.put((0, expect("rank 1 has exited") in str(e), "%s: %s" % (type(e).__name__, e)))
    queue.close()
    queue.join_thread()                       # the answer is out before the exit below
    os._exit(0)                               # gloo's teardown would wait for the dead rank


def died():
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    with tempfile.TemporaryDirectory() as d:
        procs = [ctx.Process(target=dying, args=(r, os.path.join(d, "store"), q)) for r in range(2)]
        for p in procs:
            p.start()
        try:
            _, ok, why = q.get(timeout=120)
        except Exception:                     # noqa: BLE001
            ok, why = False, "rank 0 did not answer"
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    name = "torch_backend: a rank that died: the next all_reduce raises on the others, naming it"
    print("[%s] %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + why.splitlines()[0]))
    return 0 if ok else 1


def worker(rank, path, queue):
    try:
        os.environ["CDSL_ENGINE"] = "sim"
        faulthandler.dump_traceback_later(180, exit=True)      # a hang says where
        dist.init_process_group("cdsl", init_method="file://" + path, rank=rank, world_size=N)
        ref = dist.new_group(backend="gloo")
        queue.put((rank, checks(rank, ref)))
        dist.destroy_process_group()
    except Exception:                         # noqa: BLE001
        queue.put((rank, [("rank %d set-up" % rank, False, traceback.format_exc().splitlines()[-1])]))


def main():
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "store")
        procs = [ctx.Process(target=worker, args=(r, path, q)) for r in range(N)]
        for p in procs:
            p.start()
        got = {}
        for _ in range(N):
            try:
                r, res = q.get(timeout=240)
            except Exception:                 # noqa: BLE001
                break
            got[r] = res
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    if len(got) != N:
        print("[FAIL] torch_backend %d ranks: only ranks %s answered" % (N, sorted(got)))
        return 1
    bad = 0
    for i, (name, _, _) in enumerate(got[0]):
        fails = [(r, got[r][i][2] if i < len(got[r]) else "no answer") for r in range(N)
                 if i >= len(got[r]) or not got[r][i][1]]
        if fails:
            bad += 1
            print("[FAIL] torch_backend %d ranks: %s: rank %d: %s" % (N, name, fails[0][0], fails[0][1]))
        else:
            print("[PASS] torch_backend %d ranks: %s" % (N, name))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(died() if sys.argv[1:] == ["die"] else main())
