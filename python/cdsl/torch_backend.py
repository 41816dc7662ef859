"""cdsl as a torch.distributed backend: `init_process_group("cuda:cdsl,cpu:gloo")` routes torch's
collectives to checked cdsl programs, with torch's own signatures (op=, group=, async_op=).

    import cdsl.torch_backend                          # registers the backend "cdsl"
    dist.init_process_group("cuda:cdsl,cpu:gloo")      # torch >= 2.0; "cdsl" on torch 1.13
    dist.all_reduce(t, op=dist.ReduceOp.SUM, async_op=True).wait()
    cdsl.torch_backend.set_programs("allreduce", [(64 << 10, "allreduce_ll"), (None, "allreduce_twoshot")])
    t = cdsl.torch_backend.empty((n,), torch.float32)  # in cdsl's symmetric region: runs copy nothing

Why a ProcessGroup of our own and not a c10d Backend: torch's Python trampoline exists only for
ProcessGroup (PyProcessGroup, torch 1.13 to 2.x), and torch returns such a group as the whole
group, so "cuda:cdsl,cpu:gloo" on torch 2.x gives this class every tensor. It therefore keeps a
gloo group of its own over the same store for what cdsl does not run: CPU tensors on a GPU
engine, the collectives it does not implement (send, gather, ...), and, when the user asked for
it (set_fallback / CDSL_TORCH_FALLBACK=1), a collective, op, dtype or size that no cdsl program
serves. Without that request such a call raises a clear error: a silent fallback would hide
that the program the user chose is not the one that ran.

Bootstrap: group rank 0 makes cdsl's unique id (engine: CDSL_ENGINE, else the library's
choice) and puts it in the torch store; every rank reads it there and makes its per-rank
communicator (cdsl.RankComm). The sim engine runs on CPU tensors (host memory), which is how a
machine without a GPU runs this end to end; the GPU engines run on this process's current
CUDA device.

Which program serves a call: a table per collective of (largest message bytes, program) rows,
first row that fits wins (MSCCL++'s per-size plan selection). The message is nccl-tests': the
larger of one rank's input and output. The default comes from the stdlib found at run time:
the packet (_ll) program up to 64 KiB, then the first of mesh, twoshot, ring, ...; switch
(_nvls) and port programs only when nothing else implements the collective (the packet program
serves every size where only they would follow it). A collective no
stdlib program implements (broadcast, reduce, alltoall in a tree without them) gets
"cdsl: no cdsl program implements broadcast".

Work: a call returns a Work whose wait() orders the caller's current stream after the run (an
event recorded after it; on sim the run is already done) and raises cdsl.Error when the run
failed (cdsl_rank_status, read once the run's event has completed; synchronize() waits for it).

Symmetric tensors (empty()): one tensor per group at the start of the communicator's region,
so in-place collectives on it (all_reduce(t), broadcast(t), reduce(t),
all_gather_into_tensor(t, t.chunk(n)[rank]), reduce_scatter_tensor(t.chunk(n)[rank], t)) run
with no copy. A call on ordinary tensors stages them through the same region: while a symmetric
tensor lives, the backend saves its contents around such a call (two copies of its size); a call
that would need a larger region than empty() reserved raises instead of moving the memory under
the tensor.
"""
import ctypes
import datetime
import inspect
import os
import re
import threading
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Work as _CWork
try:
    from torch._C._distributed_c10d import _create_work_from_future
except ImportError:                 # an older torch: the Python classes below serve
    _create_work_from_future = None

from . import _lib, core
from .distributed import _DTYPES, _CudaArray, _overlap

_PACKET_LIMIT = 64 << 10
_PREFERRED = ("mesh", "twoshot", "ring", "chunked_ring")
_LAST = ("nvls", "port")
_REGION_ALIGN = 4096            # the library's alignment of each buffer in the region (rank_comm.c)
_ROUTES_MAX = 4096              # call shapes a group remembers (ProcessGroupCDSL._route)
_table = {}                     # collective -> [(max_bytes or None, program)]
_table_lock = threading.Lock()
_fallback = None                # None: the environment decides


# ---- which programs there are, and which serves a call ----------------------------------------------

_stdlib_seen = {}               # stdlib folder -> _read_stdlib(folder): read once per process
_stdlib_dirs = {}               # CDSL_STDLIB -> the folder core.stdlib_dir() finds for it
_version = 0                    # bumped by set_programs: a group's cached routes hold while it stays


def stdlib_programs():
    """{collective: [stdlib program names]}, read from the stdlib's `program NAME implements C`
    lines (no compile), in file order. Read once per process and folder (per value of
    CDSL_STDLIB): a program file added or edited while the process runs is not seen here;
    set_programs (a stdlib name or a .cdsl path) is how a running program changes a table."""
    env = os.environ.get("CDSL_STDLIB")
    d = _stdlib_dirs.get(env)
    if d is None:
        d = _stdlib_dirs[env] = core.stdlib_dir()
    found = _stdlib_seen.get(d)
    if found is None:
        found = _stdlib_seen[d] = _read_stdlib(d)
    return {c: list(names) for c, names in found.items()}


def _read_stdlib(d):
    found = {}
    pattern = re.compile(r"^\s*program\s+(\w+)\s*(?:\([^)]*\))?\s*implements\s+(\w+)", re.M)
    for f in sorted(os.listdir(d)):
        if not f.endswith(".cdsl"):
            continue
        with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
            for name, coll in pattern.findall(fh.read()):
                if name == f[:-5]:
                    found.setdefault(coll, []).append(name)
    return found


def _rank_of(name):
    tail = name.split("_", 1)[1] if "_" in name else name
    if tail in _LAST:
        return (2, _LAST.index(tail))
    return (0, _PREFERRED.index(tail)) if tail in _PREFERRED else (1, 0)


def default_programs(collective):
    """The default table of a collective, from the stdlib: [] when no program implements it."""
    names = stdlib_programs().get(collective, [])
    ll = [n for n in names if n.endswith("_ll")]
    rest = sorted((n for n in names if not n.endswith("_ll")), key=_rank_of)
    # Switch and port programs only where nothing else serves: NVLS is often off (and must be on
    # shared machines), and a port channel's every request is a round trip through the host's
    # proxy (tens of microseconds against a few over memory channels, bench/NOTES.md).
    rest = [n for n in rest if _rank_of(n)[0] < 2] or ([] if ll else rest)
    rows = [(_PACKET_LIMIT, ll[0])] if ll else []
    if rest:
        rows.append((None, rest[0]))
    elif ll:
        rows = [(None, ll[0])]
    return rows


def set_programs(collective, rows):
    """Set the table of a collective (allgather, reducescatter, allreduce, broadcast, reduce,
    alltoall): rows of (largest message bytes or None for any, stdlib name or .cdsl path), in
    order; None or [] restores the default. Every rank must set the same table.

    This is how a running program changes which program serves a call: groups cache the route
    of each call shape (program, chunk, region) until the next set_programs, so a change of the
    stdlib folder or of CDSL_STDLIB after the first call is seen only after one."""
    global _version
    checked = []
    for row in rows or []:
        limit, prog = row
        if limit is not None and (not isinstance(limit, int) or limit <= 0):
            raise ValueError("cdsl: %s: a row's size limit is a positive number of bytes or None, not %r" %
                             (collective, limit))
        if not prog.endswith(".cdsl"):
            core.stdlib_program(prog)           # a name that is not in the stdlib fails here, not mid-run
        checked.append((limit, prog))
    with _table_lock:
        if checked:
            _table[collective] = checked
        else:
            _table.pop(collective, None)
        _version += 1           # after the table: a route made from the old one is never stamped new


def programs(collective):
    """The table in force for a collective: the user's, else the stdlib's default."""
    with _table_lock:
        rows = _table.get(collective)
    return list(rows) if rows else default_programs(collective)


def choose_program(collective, nbytes):
    """The program serving a message of nbytes; NoProgram when none does."""
    rows = programs(collective)
    if not rows:
        raise NoProgram("cdsl: no cdsl program implements %s (the stdlib in %s has none; set one with "
                        "cdsl.torch_backend.set_programs(%r, [(None, 'path.cdsl')]))" %
                        (collective, core.stdlib_dir(), collective))
    for limit, prog in rows:
        if limit is None or nbytes <= limit:
            return prog
    raise NoProgram("cdsl: no row of the %s table serves %d bytes (rows up to %s)" %
                    (collective, nbytes, ", ".join(str(r[0]) for r in rows)))


def set_fallback(enabled):
    """Whether a call that no cdsl program serves runs on the group's gloo instead of raising
    (default: the environment variable CDSL_TORCH_FALLBACK=1 or gloo)."""
    global _fallback
    _fallback = bool(enabled)


def fallback_enabled():
    if _fallback is not None:
        return _fallback
    return os.environ.get("CDSL_TORCH_FALLBACK", "").lower() in ("1", "gloo", "yes", "true")


class NoProgram(RuntimeError):
    """No cdsl program serves this call (collective, op, dtype, size or layout)."""


# ---- ops ----------------------------------------------------------------------------------------------

_OP_NAMES = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM")
# Compared as RedOpType where torch has it: ReduceOp == RedOpType is pybind's first overload,
# a quarter of the cost of ReduceOp == ReduceOp, and it runs on every reducing call.
_OP_KINDS = getattr(dist.ReduceOp, "RedOpType", dist.ReduceOp)
_OPS = tuple((n, getattr(_OP_KINDS, n)) for n in _OP_NAMES if hasattr(_OP_KINDS, n))


# Collectives that move bytes and add nothing: a tensor of a type cdsl does not reduce (DDP's
# int64 shapes, float64) runs as the same bytes seen as 32-bit words.
_MOVES_BYTES = frozenset(("allgather", "broadcast", "alltoall"))
# Collectives of one tensor, element by element: a size the program does not split runs padded
# with zeros up to its multiple (zeros add nothing), as NCCL takes any count. The others lay the
# ranks' parts side by side, where padding would move them: such a size raises.
_PADDED = frozenset(("allreduce", "broadcast", "reduce"))


def _as_words(t):
    """t's bytes as int32 (a view, no copy), or None when they are not a whole number of words."""
    if t.numel() * t.element_size() % 4 or not t.is_contiguous():
        return None
    return t.reshape(-1).view(torch.int32)


def _op_name(op):
    for n, value in _OPS:
        if op == value:
            return n
    return str(op)


def _reduce_op(what, op, dtype):
    """"SUM" or "AVG" (a sum then a division, for floating types); NoProgram for the rest."""
    name = _op_name(op)
    if name == "SUM":
        return name
    if name == "AVG" and dtype.is_floating_point:
        return name
    raise NoProgram("cdsl: %s: op %s is not supported: cdsl's programs sum (ReduceOp.SUM, and AVG on floating "
                    "types)" % (what, "ReduceOp." + name if name in _OP_NAMES else name))


# ---- Work -----------------------------------------------------------------------------------------------

class Work(_CWork):
    """One call's handle: wait() orders the current stream after the run and raises its error."""

    def __init__(self, pg, result, event=None, after=None):
        super().__init__()
        self._pg, self._result, self._event, self._after = pg, result, event, after
        self._checked = False

    def _finish(self, block):
        if self._checked:
            return True
        if self._event is not None:
            if block:
                self._event.synchronize()
            elif not self._event.query():
                return False
        self._checked = self._pg._status()     # raises the run's error; False while others run
        return True

    def is_completed(self):
        return self._finish(block=False)

    def is_success(self):
        try:
            return self._finish(block=False)
        except core.Error:
            return False

    def wait(self, timeout=None):
        if self._event is not None:
            torch.cuda.current_stream(self._event_device()).wait_event(self._event)
        self._finish(block=self._event is None)
        if self._after is not None:
            self._after()
            self._after = None
        return True

    def synchronize(self):
        self._finish(block=True)

    def _event_device(self):
        return self._pg.device

    def result(self):
        return self._result

    def get_future(self):
        self.wait()
        fut = torch.futures.Future()
        fut.set_result(self._result)
        return fut

    def exception(self):
        return None

    def source_rank(self):
        return -1


def _unflatten(flat, tensors):
    """Copy flat's consecutive parts back into tensors, in order (a coalesced call's results)."""
    for t, part in zip(tensors, flat.split([t.numel() for t in tensors])):
        t.copy_(part.view_as(t))


def _done(pg, result):
    """The Work of a call that has ended (a run on the sim engine, a list form or gloo's run that
    was waited for): torch's own Work over a completed future where torch has one, because torch's
    C++ callers (DDP's parameter check and broadcast, its reducer's get_future) wait on the C++
    Work, and torch 1.x does not pass that wait on to a Python subclass (it would block forever)."""
    if _create_work_from_future is None:
        return _DoneWork(pg, result)
    fut = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


class _DoneWork(Work):
    """_done's Work where torch has no _create_work_from_future: its tensors, ours' interface."""

    def __init__(self, pg, result):
        super().__init__(pg, result)

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def synchronize(self):
        pass


# ---- the process group ----------------------------------------------------------------------------------

def _seconds(timeout):
    env = os.environ.get("CDSL_TORCH_TIMEOUT")
    if env:
        return float(env)
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout or 0)


class ProcessGroupCDSL(dist.ProcessGroup):
    """torch.distributed's process group over a cdsl per-rank communicator (see the module doc)."""

    def __init__(self, store, rank, size, timeout=datetime.timedelta(minutes=30)):
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("cdsl_gloo", store), rank, size, timeout)
        if rank == 0:
            uid = core.get_unique_id(os.environ.get("CDSL_ENGINE", "auto") or "auto")
            store.set("cdsl_unique_id", uid.hex())
        uid = bytes.fromhex(bytes(store.get("cdsl_unique_id")).decode())
        engine = core.unique_id_engine(uid)
        if engine == "sim":
            self.device = torch.device("cpu")
            dev = -1
        else:
            dev = torch.cuda.current_device()
            self.device = torch.device("cuda", dev)
        self.comm = core.RankComm(size, uid, rank, device=dev, timeout=_seconds(timeout))
        self.engine = self.comm.engine
        self._cuda, self._index = self.device.type == "cuda", dev   # asked on every call: .type makes a string
        self._programs = {}
        self._routes = {}           # call shape -> (_version, program, chunk, region bytes): _route
        self._reserved = 0          # the region's bytes as far as our runs and allocs grew it
        self._sym = None            # weakref of the live symmetric tensor
        self._sym_bytes = 0
        self._events = []           # runs on the GPU not yet known to have finished

    # -- torch's ProcessGroup interface: names ------------------------------------------------------
    def getBackendName(self):
        return "cdsl"

    def name(self):
        return "cdsl"

    def __repr__(self):
        return "ProcessGroupCDSL(rank %d of %d, engine %s)" % (self._rank, self._size, self.engine)

    # -- programs and the region -----------------------------------------------------------------------
    def _program(self, name, in_place, root=None):
        key = (name, os.environ.get("CDSL_STDLIB"), in_place, root)   # a name is looked up once
        if key not in self._programs:
            path = name if name.endswith(".cdsl") else core.stdlib_program(name)
            defines = {"root": str(root)} if root is not None else None
            self._programs[key] = core.Program(path, self._size, defines=defines, in_place=in_place)
        return self._programs[key]

    def _route(self, collective, msg, dtype, in_place, root):
        """(program, chunk bytes, region bytes, the bytes it runs: msg, or the next size the
        program splits for a collective in _PADDED) for a call of this shape. Made once per shape
        and table version: the table walk and the layout queries through ctypes cost more than the
        run itself. A shape that raised is not kept, so the next call raises the same."""
        key = (collective, msg, dtype, in_place, root)
        hit = self._routes.get(key)
        if hit is not None and hit[0] == _version:
            return hit[1:]
        version = _version          # before the table is read: see set_programs
        prog = self._program(choose_program(collective, msg), in_place, root)
        padded = msg
        try:
            chunk = prog.chunk_bytes(msg)
        except ValueError as e:
            granule = prog.granule(msg) if collective in _PADDED and msg > 0 else 0
            padded = -(-msg // granule) * granule if granule else msg
            try:
                chunk = prog.chunk_bytes(padded) if padded != msg else None
            except ValueError:
                chunk = None
            if chunk is None:
                raise NoProgram("%s (%s of %d bytes on %d ranks)" % (e, collective, msg, self._size)) from None
        if len(self._routes) >= _ROUTES_MAX:
            self._routes.clear()    # a program of ever new sizes: no bound on the shapes otherwise
        self._routes[key] = (version, prog, chunk, self._region_bytes(prog, chunk, in_place), padded)
        return self._routes[key][1:]

    def _region_bytes(self, prog, chunk, in_place):
        """What the library's layout takes for prog at chunk (rank_comm.c's rt_layout): every
        buffer aligned, the aliased one of an in-place program inside its holder."""
        aliased = -1
        if in_place:
            aliased = _lib.BUF_OUTPUT if prog.collective == "reducescatter" else _lib.BUF_INPUT
        total = 0
        for b in range(_lib.program_nbufs(prog.handle)):
            if b != aliased:
                total += (max(prog.buf_chunks(b), 0) * chunk + _REGION_ALIGN - 1) // _REGION_ALIGN * _REGION_ALIGN
        return max(total, _REGION_ALIGN)

    def _sym_tensor(self):
        return self._sym() if self._sym is not None else None

    def _status(self):
        """Raise the communicator's error once every run we enqueued has finished; whether it
        could be read (cdsl_rank_status is defined only then)."""
        if self._events:
            self._events = [e for e in self._events if not e.query()]
            if self._events:
                return False
        self.comm.status()
        return True

    # -- routing ------------------------------------------------------------------------------------------
    def _on_cdsl(self, tensors, what):
        """Whether cdsl runs these tensors (its device), else gloo does (CPU tensors on a GPU
        engine: the cpu:gloo half)."""
        # The common case in flags that cost no torch.device; the rest, errors included, below.
        if self._cuda:
            if tensors and all(t.is_cuda and t.get_device() == self._index for t in tensors):
                return True
        elif tensors and all(t.is_cpu for t in tensors):
            return True
        return self._on_cdsl_else(tensors, what)

    def _on_cdsl_else(self, tensors, what):
        devs = {t.device.type for t in tensors}
        if devs == {self.device.type}:
            if self.device.type == "cuda" and any(t.device.index != self.device.index for t in tensors):
                raise ValueError("cdsl: rank %d: %s: a tensor on %s, but this rank's communicator runs on %s "
                                 "(torch.cuda.set_device before init_process_group)" %
                                 (self._rank, what, [str(t.device) for t in tensors], self.device))
            return True
        if devs == {"cpu"}:
            return False
        raise ValueError("cdsl: rank %d: %s: tensors on %s, but this group's cdsl communicator runs on %s "
                         "(engine %s)" % (self._rank, what, ", ".join(sorted(devs)), self.device, self.engine))

    def _with_fallback(self, what, cdsl_call, gloo_call):
        try:
            return cdsl_call()
        except NoProgram as e:
            if not fallback_enabled():
                raise NoProgram("%s; or let gloo run it: cdsl.torch_backend.set_fallback(True) or "
                                "CDSL_TORCH_FALLBACK=1" % e) from None
            return gloo_call()

    # -- one run ------------------------------------------------------------------------------------------
    def _run(self, collective, output, input, root=None):
        """Run the program the table picks on output/input (they may share memory as NCCL's
        in-place form); returns the Work. Refusals before the run are NoProgram or ValueError."""
        same = output is input      # allreduce, broadcast, reduce: one tensor, checked once
        if not output.is_contiguous():
            raise ValueError("cdsl: rank %d: the output is not contiguous; pass t.contiguous()" % self._rank)
        if not same and not input.is_contiguous():
            raise ValueError("cdsl: rank %d: the input is not contiguous; pass t.contiguous()" % self._rank)
        dtype = output.dtype
        if not same and dtype != input.dtype:
            raise TypeError("cdsl: rank %d: the input is %s and the output %s; they must be one type" %
                            (self._rank, input.dtype, dtype))
        code = _DTYPES.get(dtype)
        if code is None and collective in _MOVES_BYTES:     # int64, float64, bytes: moved as 32-bit words
            words = _as_words(output), (None if same else _as_words(input))
            if words[0] is not None and (same or words[1] is not None):
                output = words[0]
                input = output if same else words[1]
                dtype, code = torch.int32, _DTYPES[torch.int32]
        if code is None:
            raise NoProgram("cdsl: %s: dtype %s is not run by cdsl (it runs %s%s)" %
                            (collective, dtype, ", ".join(str(d) for d in _DTYPES),
                             "; it moves any type whose bytes are a multiple of 4"
                             if collective in _MOVES_BYTES else ""))
        out_bytes = output.numel() * output.element_size()
        if same:
            in_bytes, in_place = out_bytes, out_bytes > 0      # what _overlap says of a tensor and itself
        else:
            in_bytes, in_place = input.numel() * input.element_size(), _overlap(input, output)
        msg = max(out_bytes, in_bytes)
        prog, chunk, need, padded = self._route(collective, msg, dtype, in_place, root)
        if padded != msg:
            return self._run_padded(collective, output, padded, root)
        sym = self._sym() if self._sym is not None else None
        zero_copy, saved = False, None
        if sym is not None:
            zero_copy, saved = self._sym_check(sym, collective, msg, need, output, input, in_place)
        if need > self._reserved:
            self._reserved = need
        stream = torch.cuda.current_stream(self.device) if self._cuda else None
        cu = (stream.cuda_stream or 1) if stream is not None else None
        if zero_copy:
            self.comm.run(prog, code, chunk, None, 0, None, 0, cu)
        else:
            self.comm.run(prog, code, chunk, input.data_ptr() if in_bytes else 0, in_bytes,
                          output.data_ptr(), out_bytes, cu)
        if saved is not None:
            sym.copy_(saved)
        if stream is None:
            return None
        event = torch.cuda.Event()
        event.record(stream)
        self._events.append(event)
        return event

    def _run_padded(self, collective, t, padded, root):
        """t (one tensor, in place) through a zeroed buffer of `padded` bytes that the program
        splits: copied in, run, copied back, all on the caller's stream."""
        n = t.numel()
        buf = torch.zeros((padded // t.element_size(),), dtype=t.dtype, device=t.device)
        flat = t.view(-1)
        buf[:n].copy_(flat)
        event = self._run(collective, buf, buf, root)
        flat.copy_(buf[:n])
        if event is not None:       # the copy back is part of the run: wait() orders after it
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(self.device))
            self._events.append(event)
        return event

    def _sym_check(self, sym, collective, msg, need, output, input, in_place):
        """While a symmetric tensor lives: (whether the call runs on it with no copy, a copy of it
        to restore after a staged run, or None); raises where the run would move or clobber it."""
        zero_copy = in_place and self._holds_region_start(output, input, collective)
        if need > self._reserved:
            raise ValueError("cdsl: rank %d: %s of %d bytes needs %d bytes of symmetric memory, but the region "
                             "holds %d and a symmetric tensor (cdsl.torch_backend.empty) lives in it: allocate "
                             "it larger, or free it first" % (self._rank, collective, msg, need, self._reserved))
        if zero_copy:
            return True, None
        if self._in_region(input) or self._in_region(output):
            raise ValueError("cdsl: rank %d: %s on a symmetric tensor runs without copies only in place on "
                             "the whole tensor (all_reduce(t), broadcast(t), reduce(t), all_gather_into_tensor"
                             "(t, t.chunk(n)[rank]), reduce_scatter_tensor(t.chunk(n)[rank], t))" %
                             (self._rank, collective))
        return False, sym.clone()   # a staged run writes the region's start, where the tensor is

    def _in_region(self, t):
        sym = self._sym_tensor()
        if sym is None or t.numel() == 0:
            return False
        base = sym.data_ptr()
        p = t.data_ptr()
        return base <= p < base + self._sym_bytes

    def _holds_region_start(self, output, input, collective):
        """Whether the holder of an in-place call is the symmetric tensor itself (the region's
        start, where an in-place layout puts its holder), so the run needs no copy."""
        holder = input if collective == "reducescatter" else output
        sym = self._sym_tensor()
        return holder.data_ptr() == sym.data_ptr() and holder.numel() * holder.element_size() <= self._sym_bytes

    def _work(self, event, result, after=None):
        """A run's Work. On the sim engine (no event) the run has ended: its error is raised now
        and the Work is done; on a GPU, wait() orders the caller's stream after the run."""
        if event is not None:
            return Work(self, result, event, after)
        self._status()
        if after is not None:
            after()
        return _done(self, result)

    # -- gloo: CPU tensors, and fallback ---------------------------------------------------------------------
    def _gloo_on(self, tensors, call):
        """Run call(cpu_tensors) on gloo; CUDA tensors go through CPU copies."""
        if all(t.device.type == "cpu" for t in tensors):
            return call(tensors)
        cpu = [t.detach().cpu() for t in tensors]
        work = call(cpu)
        work.wait()
        for t, c in zip(tensors, cpu):
            t.copy_(c)
        return _done(self, tensors)

    # -- the collectives, with torch's signatures ----------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        opts = opts if opts is not None else dist.AllreduceOptions()
        if len(tensors) != 1:
            raise ValueError("cdsl: allreduce takes one tensor, not %d" % len(tensors))
        t = tensors[0]
        if not self._on_cdsl(tensors, "all_reduce"):
            return self._gloo.allreduce(tensors, opts)

        def run():
            op = _reduce_op("all_reduce", opts.reduceOp, t.dtype)
            event = self._run("allreduce", t, t)
            return self._work(event, tensors, (lambda: t.div_(self._size)) if op == "AVG" else None)

        def gloo():
            return self._gloo_on(tensors, lambda ts: self._gloo.allreduce(ts, opts))
        return self._with_fallback("all_reduce", run, gloo)

    def _allgather_base(self, output, input, opts=None):
        if not self._on_cdsl([output, input], "all_gather_into_tensor"):
            return self._gloo_allgather(output, input)
        if output.numel() != input.numel() * self._size:
            raise ValueError("cdsl: rank %d: all_gather_into_tensor: the output holds %d elements, not %d x the "
                             "input's %d" % (self._rank, output.numel(), self._size, input.numel()))

        def run():
            return self._work(self._run("allgather", output, input), [output])
        return self._with_fallback("all_gather_into_tensor", run, lambda: self._gloo_allgather(output, input))

    def _gloo_allgather(self, output, input):
        def call(ts):
            out, inp = ts
            parts = list(out.chunk(self._size))
            w = self._gloo.allgather([parts], [inp])
            w.wait()
            return _done(self, [out])
        return self._gloo_on([output, input], call)

    def allgather(self, output_lists, inputs, opts=None):
        if not self._on_cdsl(inputs, "all_gather"):
            return self._gloo.allgather(output_lists, inputs)
        if len(inputs) != 1 or len(output_lists) != 1 or len(output_lists[0]) != self._size:
            raise ValueError("cdsl: all_gather takes one input and a list of %d outputs" % self._size)
        flat = torch.empty((self._size * inputs[0].numel(),), dtype=inputs[0].dtype, device=inputs[0].device)
        work = self._allgather_base(flat, inputs[0].contiguous())
        work.wait()
        for o, part in zip(output_lists[0], flat.chunk(self._size)):
            o.copy_(part.view_as(o))
        return _done(self, output_lists)

    def _reduce_scatter_base(self, output, input, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        if not self._on_cdsl([output, input], "reduce_scatter_tensor"):
            return self._gloo_reduce_scatter(output, input, opts)
        if input.numel() != output.numel() * self._size:
            raise ValueError("cdsl: rank %d: reduce_scatter_tensor: the input holds %d elements, not %d x the "
                             "output's %d" % (self._rank, input.numel(), self._size, output.numel()))

        def run():
            op = _reduce_op("reduce_scatter_tensor", opts.reduceOp, output.dtype)
            event = self._run("reducescatter", output, input)
            return self._work(event, [output], (lambda: output.div_(self._size)) if op == "AVG" else None)
        return self._with_fallback("reduce_scatter_tensor", run,
                                   lambda: self._gloo_reduce_scatter(output, input, opts))

    def reduce_scatter(self, outputs, input_lists, opts=None):
        """torch's list form (dist.reduce_scatter): the inputs laid end to end, then the tensor form."""
        if len(outputs) != 1 or len(input_lists) != 1 or len(input_lists[0]) != self._size:
            raise ValueError("cdsl: reduce_scatter takes one output and a list of %d inputs" % self._size)
        flat = torch.cat([t.reshape(-1) for t in input_lists[0]])
        out = outputs[0]
        staged = out if out.is_contiguous() else torch.empty_like(out, memory_format=torch.contiguous_format)
        work = self._reduce_scatter_base(staged.view(-1), flat, opts)
        work.wait()
        if staged is not out:
            out.copy_(staged)
        return _done(self, outputs)

    def _gloo_reduce_scatter(self, output, input, opts):
        """gloo has no reduce-scatter: an all-reduce of a copy, then this rank's part."""
        def call(ts):
            out, inp = ts
            whole = inp.clone()
            ar = dist.AllreduceOptions()
            ar.reduceOp = opts.reduceOp
            self._gloo.allreduce([whole], ar).wait()
            out.copy_(whole.chunk(self._size)[self._rank].view_as(out))
            return _done(self, [out])
        return self._gloo_on([output, input], call)

    def broadcast(self, tensors, opts=None):
        opts = opts if opts is not None else dist.BroadcastOptions()
        if len(tensors) != 1:
            raise ValueError("cdsl: broadcast takes one tensor, not %d" % len(tensors))
        t = tensors[0]
        if not self._on_cdsl(tensors, "broadcast"):
            return self._gloo.broadcast(tensors, opts)

        def run():
            return self._work(self._run("broadcast", t, t, root=opts.rootRank), tensors)
        return self._with_fallback("broadcast", run,
                                   lambda: self._gloo_on(tensors, lambda ts: self._gloo.broadcast(ts, opts)))

    def reduce(self, tensors, opts=None):
        opts = opts if opts is not None else dist.ReduceOptions()
        if len(tensors) != 1:
            raise ValueError("cdsl: reduce takes one tensor, not %d" % len(tensors))
        t = tensors[0]
        if not self._on_cdsl(tensors, "reduce"):
            return self._gloo.reduce(tensors, opts)

        def run():
            op = _reduce_op("reduce", opts.reduceOp, t.dtype)
            root = self._rank == opts.rootRank
            # NCCL leaves a non-root rank's tensor as it was: run on a copy there.
            buf = t if root else t.clone()
            event = self._run("reduce", buf, buf, root=opts.rootRank)
            after = (lambda: t.div_(self._size)) if op == "AVG" and root else None
            return self._work(event, tensors, after)
        return self._with_fallback("reduce", run,
                                   lambda: self._gloo_on(tensors, lambda ts: self._gloo.reduce(ts, opts)))

    # -- the coalesced calls: one run over the tensors laid end to end ----------------------------------
    # torch's dist.all_reduce_coalesced, and its _coalescing_manager's fast path for all_reduce,
    # all_gather_into_tensor and reduce_scatter_tensor, reach these. NCCL runs such a group as one
    # kernel; here it is one run of the collective's program on the tensors laid end to end, which
    # costs a copy each way, and whose program the table picks by the total size.
    def _coalesced(self, what, tensors):
        """Whether cdsl runs this group of tensors (gloo does CPU tensors on a GPU engine); they
        must be one dtype, as one run moves them."""
        if len({t.dtype for t in tensors}) > 1:
            raise TypeError("cdsl: rank %d: %s: the tensors are %s; a coalesced call runs one dtype" %
                            (self._rank, what, ", ".join(sorted({str(t.dtype) for t in tensors}))))
        return self._on_cdsl(tensors, what)

    def allreduce_coalesced(self, tensors, opts=None):
        opts = opts if opts is not None else dist.AllreduceCoalescedOptions()
        if not tensors or not self._coalesced("all_reduce_coalesced", tensors):
            return self._gloo.allreduce_coalesced(tensors, opts) if tensors else _done(self, tensors)
        flat = torch.cat([t.reshape(-1) for t in tensors])
        one = dist.AllreduceOptions()
        one.reduceOp = opts.reduceOp
        self.allreduce([flat], one).wait()
        _unflatten(flat, tensors)
        return _done(self, tensors)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        """Each output gets every rank's input i; one all-gather of the inputs laid end to end
        gives rank by rank [input 0, input 1, ...], from which each output takes its column."""
        self._pairs("all_gather_into_tensor_coalesced", outputs, inputs,
                    lambda o, i: o.numel() == i.numel() * self._size, "the output must hold %d x the input's elements")
        if not outputs or not self._coalesced("all_gather_into_tensor_coalesced", outputs + inputs):
            return self._gloo_each(outputs, inputs, self._gloo_allgather)
        sizes = [i.numel() for i in inputs]
        flat = torch.empty((self._size * sum(sizes),), dtype=inputs[0].dtype, device=inputs[0].device)
        self._allgather_base(flat, torch.cat([i.reshape(-1) for i in inputs])).wait()
        by_rank = flat.view(self._size, sum(sizes))
        offset = 0
        for o, n in zip(outputs, sizes):
            o.view(self._size, n).copy_(by_rank[:, offset:offset + n])
            offset += n
        return _done(self, outputs)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        """Output i gets this rank's part of the reduced input i; the inputs are laid rank part by
        rank part ([part r of input 0, part r of input 1, ...] for r in ranks), then one
        reduce-scatter gives this rank [output 0, output 1, ...]."""
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        self._pairs("reduce_scatter_tensor_coalesced", outputs, inputs,
                    lambda o, i: i.numel() == o.numel() * self._size, "the input must hold %d x the output's elements")
        if not outputs or not self._coalesced("reduce_scatter_tensor_coalesced", outputs + inputs):
            return self._gloo_each(outputs, inputs, lambda o, i: self._gloo_reduce_scatter(o, i, opts))
        by_rank = torch.cat([i.reshape(self._size, -1) for i in inputs], dim=1)
        flat = torch.empty((by_rank.shape[1],), dtype=outputs[0].dtype, device=outputs[0].device)
        self._reduce_scatter_base(flat, by_rank.reshape(-1), opts).wait()
        _unflatten(flat, outputs)
        return _done(self, outputs)

    def _pairs(self, what, outputs, inputs, fits, rule):
        if len(outputs) != len(inputs):
            raise ValueError("cdsl: rank %d: %s: %d outputs for %d inputs" % (self._rank, what, len(outputs), len(inputs)))
        for k, (o, i) in enumerate(zip(outputs, inputs)):
            if not fits(o, i):
                raise ValueError("cdsl: rank %d: %s: pair %d: output %d, input %d elements; %s" %
                                 (self._rank, what, k, o.numel(), i.numel(), rule % self._size))

    def _gloo_each(self, outputs, inputs, call):
        for o, i in zip(outputs, inputs):
            call(o, i).wait()
        return _done(self, outputs)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        opts = opts if opts is not None else dist.AllToAllOptions()
        if not self._on_cdsl([output, input], "all_to_all_single"):
            return self._gloo.alltoall_base(output, input, output_split_sizes, input_split_sizes, opts)

        def run():
            for splits, t, what in ((output_split_sizes, output, "output"), (input_split_sizes, input, "input")):
                if splits and len(set(splits)) != 1:
                    raise NoProgram("cdsl: all_to_all_single: %s splits %s are not equal; cdsl's alltoall moves "
                                    "equal blocks" % (what, list(splits)))
            if output.numel() != input.numel() or input.shape[0] % self._size:
                raise NoProgram("cdsl: all_to_all_single: the input (%d rows) and output must be one size, a "
                                "multiple of %d rows" % (input.shape[0] if input.dim() else 0, self._size))
            return self._work(self._run("alltoall", output, input), [output])

        def gloo():
            return self._gloo_on([output, input], lambda ts: self._gloo.alltoall_base(
                ts[0], ts[1], output_split_sizes, input_split_sizes, opts))
        return self._with_fallback("all_to_all_single", run, gloo)

    # The names newer torch gives these (its PyProcessGroup looks them up by these names too).
    all_gather_single = _allgather_base
    reduce_scatter_single = _reduce_scatter_base
    all_to_all_single = alltoall_base

    def barrier(self, opts=None):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self._status()
        return self._gloo.barrier(opts if opts is not None else dist.BarrierOptions())

    # What cdsl has no collective for: gloo (CPU tensors) runs it.
    def send(self, tensors, dst, tag=0):
        return self._gloo_on(tensors, lambda ts: self._gloo.send(ts, dst, tag))

    def recv(self, tensors, src, tag=0):
        return self._gloo_on(tensors, lambda ts: self._gloo.recv(ts, src, tag))

    def gather(self, output_lists, inputs, opts=None):
        return self._gloo.gather(output_lists, inputs, opts if opts is not None else dist.GatherOptions())

    def scatter(self, outputs, input_lists, opts=None):
        return self._gloo.scatter(outputs, input_lists, opts if opts is not None else dist.ScatterOptions())

    # -- symmetric tensors ----------------------------------------------------------------------------------------
    def empty(self, shape, dtype=torch.float32):
        """A tensor in the communicator's symmetric region (a collective: every rank calls it)."""
        if dtype not in _DTYPES:
            raise TypeError("cdsl: dtype %s; cdsl runs %s" % (dtype, ", ".join(str(d) for d in _DTYPES)))
        if self._sym_tensor() is not None:
            raise ValueError("cdsl: rank %d: this group has a symmetric tensor already (one per group: it lives at "
                             "the start of the region); delete it first" % self._rank)
        numel = 1
        for s in (shape if isinstance(shape, (tuple, list, torch.Size)) else (shape,)):
            numel *= int(s)
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        self._reserve(nbytes)
        prog, chunk = self._layout_for(nbytes)
        self.comm.alloc(prog, chunk)
        base = self.comm.buffer(_lib.BUF_OUTPUT)
        t = self._wrap(base, nbytes, dtype).view(shape)
        self._sym = weakref.ref(t)
        self._sym_bytes = nbytes
        return t

    def _layout_for(self, nbytes):
        """An in-place program whose holder (its output, at the region's start) is nbytes."""
        for coll in ("allreduce", "broadcast", "allgather"):
            try:
                prog = self._program(choose_program(coll, nbytes), True, 0 if coll == "broadcast" else None)
                return prog, prog.chunk_bytes(nbytes)
            except (NoProgram, ValueError, core.Error):
                continue
        raise ValueError("cdsl: no in-place program lays out a symmetric tensor of %d bytes" % nbytes)

    def _reserve(self, nbytes):
        """Grow the region to what every collective of the table needs at nbytes, so that runs
        on the tensor do not move it; every rank reserves the same."""
        need = 0
        for coll in ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall"):
            try:
                root = 0 if coll in ("broadcast", "reduce") else None
                prog = self._program(choose_program(coll, nbytes), True, root)
                chunk = prog.chunk_bytes(nbytes)
            except (NoProgram, ValueError, core.Error, FileNotFoundError):
                continue
            size = self._region_bytes(prog, chunk, True)
            if size > need:
                need, best = size, (prog, chunk)
        if need > self._reserved:
            self.comm.alloc(*best)
            self._reserved = need

    def _wrap(self, ptr, nbytes, dtype):
        if self.device.type == "cpu":
            raw = (ctypes.c_char * nbytes).from_address(ptr)
            return torch.frombuffer(raw, dtype=dtype)
        typestr = {torch.float32: "<f4", torch.float16: "<f2", torch.int32: "<i4"}
        if dtype in typestr:
            return torch.as_tensor(_CudaArray(ptr, nbytes, typestr[dtype]), device=self.device)
        return torch.as_tensor(_CudaArray(ptr, nbytes, "<i4"), device=self.device).view(dtype)

    def shutdown(self):
        self._routes = {}
        for p in self._programs.values():
            p.close()
        self._programs = {}
        self.comm.close()


def _cdsl_group(group):
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupCDSL):
        raise TypeError("cdsl: %r is not a cdsl process group (init_process_group(\"cuda:cdsl,cpu:gloo\") or "
                        "new_group(backend=\"cdsl\"))" % (pg,))
    return pg


def empty(shape, dtype=torch.float32, group=None):
    """A tensor in cdsl's symmetric region of the group (torch's symm_mem.empty): collectives run
    in place on it with no copy. Every rank of the group calls it; one per group at a time."""
    return _cdsl_group(group).empty(shape, dtype)


def is_symmetric(tensor, group=None):
    return _cdsl_group(group)._in_region(tensor)


# ---- registration ---------------------------------------------------------------------------------------------

def _create(store_or_opts, rank=None, size=None, timeout=None):
    if rank is None:                # extended_api: a _DistributedBackendOptions
        o = store_or_opts
        return ProcessGroupCDSL(o.store, o.group_rank, o.group_size, o.timeout)
    return ProcessGroupCDSL(store_or_opts, rank, size, timeout)


def register():
    """Register the backend "cdsl" with torch.distributed (done on import; again is a no-op)."""
    if "CDSL" in dist.Backend._plugins:
        return
    params = inspect.signature(dist.Backend.register_backend).parameters
    if "devices" in params:
        dist.Backend.register_backend("cdsl", _create, devices=["cpu", "cuda"])
    else:
        dist.Backend.register_backend("cdsl", _create)


register()
