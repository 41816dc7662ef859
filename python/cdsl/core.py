"""cdsl without torch: checked programs, per-rank communicators, runs on raw pointers.

    uid = cdsl.get_unique_id()                  # one process; pass the bytes to every rank
    comm = cdsl.RankComm(nranks, uid, rank)     # every process
    prog = cdsl.Program("stdlib/allgather_mesh.cdsl", nranks)
    chunk = prog.chunk_bytes(size)
    comm.run(prog, "f32", chunk, input_ptr, input_bytes, output_ptr, output_bytes, stream)
    comm.status()                               # after synchronising the stream

Pointers are device addresses of this rank's GPU (host addresses on the sim engine), as ints.
Every failure raises cdsl.Error with the library's own message; so does every call on a
RankComm or Program after its close(). A path with a NUL byte raises ValueError.
"""
import contextlib
import ctypes
import os
import threading

from . import _lib


class Error(RuntimeError):
    """A libcdsl call failed: .status is "usage", "runtime", ...; str() is the library's message."""

    def __init__(self, status, message):
        self.status = _lib.STATUS.get(status, str(status))
        self.code = status
        super().__init__(message.strip() or "cdsl: %s error" % self.status)


USAGE = 2


def _closed(what):
    return Error(USAGE, "cdsl: %s is closed" % what)


def _c_text(value, what):
    """value (a str or a path) as the bytes C receives, refused when it holds a NUL byte: C would
    read it only up to there (a path "/tmp/a\\0b" would open /tmp/a)."""
    b = os.fsencode(value)
    if b"\0" in b:
        raise ValueError("cdsl: %s %r has a NUL byte; C would read it only up to there" % (what, value))
    return b


def _dtype(dtype):
    if dtype not in _lib.DTYPES:
        raise ValueError("cdsl: element type %r: one of %s" % (dtype, ", ".join(_lib.DTYPES)))
    return _lib.DTYPES[dtype]


def version():
    return _lib.version().decode()


def library_path():
    return _lib.path


def stdlib_dir():
    """The folder of the stdlib programs: CDSL_STDLIB, this package's (a wheel's), the source
    checkout's, or an installed tree's."""
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [os.environ.get("CDSL_STDLIB", ""), os.path.join(here, "stdlib"), os.path.join(here, "..", "..", "stdlib"),
             os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(_lib.path))), "share", "cdsl", "stdlib")]
    for d in cands:
        if d and os.path.isfile(os.path.join(d, "allgather_mesh.cdsl")):
            return os.path.normpath(d)
    raise FileNotFoundError("cdsl: no stdlib folder found (set CDSL_STDLIB); looked in " + ", ".join(c for c in cands if c))


def stdlib_program(name):
    """The path of stdlib/<name>.cdsl."""
    path = os.path.join(stdlib_dir(), name if name.endswith(".cdsl") else name + ".cdsl")
    if not os.path.isfile(path):
        raise FileNotFoundError("cdsl: no stdlib program %s" % path)
    return path


# ---- collectives: what each means, from the library's table (compiler/ir/colls.def) -------------------

def collectives():
    """The names of the collectives cdsl knows, in the order of its table."""
    return [_lib.collective_name(i).decode() for i in range(_lib.collective_count())]


def _collective(name):
    i = _lib.collective_find(_c_text(name, "collective"))
    if i < 0:
        raise ValueError("cdsl: unknown collective %r: one of %s" % (name, ", ".join(collectives())))
    return i


def collective_chunks(name, nranks, chunks=1):
    """(input, output): one rank's chunks of the collective at nranks ranks and C = chunks; None
    for each where a program declares its own (custom)."""
    inp, out = ctypes.c_longlong(), ctypes.c_longlong()
    if _lib.collective_chunks(_collective(name), nranks, chunks, ctypes.byref(inp), ctypes.byref(out)) != 0:
        raise ValueError("cdsl: %s: nranks (%d) and chunks (%d) must be at least 1" % (name, nranks, chunks))
    return tuple(None if v.value < 0 else v.value for v in (inp, out))


def collective_busbw_factor(name, nranks):
    """nccl-tests' bus-bandwidth factor at nranks ranks: busbw = algbw x factor."""
    return _lib.collective_busbw_factor(_collective(name), nranks)


def collective_postcondition(name):
    """What its outputs hold: "gather" (copies of inputs), "sum", "broadcast" (copies of the
    root's input), "reduce" (the sum, on the root only), "barrier" (no data: an ordering) or
    "none" (custom)."""
    return _lib.POSTCONDITIONS[_lib.collective_postcondition(_collective(name))]


def collective_has_root(name):
    """Whether its programs have a root rank (broadcast, reduce): Program(..., defines={"root": R})
    compiles one for root R (0 when not given)."""
    return bool(_lib.collective_has_root(_collective(name)))


class Program:
    """A .cdsl program compiled for nranks and checked for every rank (cdsl_compile).

    After close(), every method raises cdsl.Error; close() waits for a run of the program that
    another thread has in the library.

    A run or alloc is a collective: it waits inside the library for the other ranks, which may be
    threads of this process sharing this Program (NCCL's thread per GPU). So those calls do not
    hold the Program's lock while in the library (the peer would wait for it and never arrive);
    they count themselves as users instead, and close() waits for the count to reach 0."""

    def __init__(self, path, nranks, program=None, defines=None, include_dirs=None, in_place=False):
        """in_place: compile NCCL's in-place form (cdsl_compile_opts.in_place): allgather's input is
        this rank's part of its output, reducescatter's output this rank's part of its input,
        allreduce's input its output. A run on an input and output that share memory needs it."""
        self._mutex = threading.RLock()
        self._lock = threading.Condition(self._mutex)
        self._users = 0         # calls in the library without the lock (_use)
        self._closing = False
        self._p = None
        self.path = path
        o = _lib.CompileOpts()
        o.path = _c_text(path, "the path")
        defs = [_c_text("%s=%s" % kv, "the define") for kv in (defines or {}).items()]
        incs = [_c_text(d, "the include folder") for d in (include_dirs or [])]
        o.nranks = nranks
        o.program = _c_text(program, "the program name") if program else None
        o.defines = (ctypes.c_char_p * max(1, len(defs)))(*defs)
        o.ndefines = len(defs)
        o.include_dirs = (ctypes.c_char_p * max(1, len(incs)))(*incs)
        o.ninclude_dirs = len(incs)
        o.stop_after = _lib.STAGE_CHECK
        self._log = _lib.Log()
        o.diag = self._log.file
        o.color = 0
        o.in_place = 1 if in_place else 0
        p = ctypes.c_void_p()
        rc = _lib.compile_(ctypes.byref(o), ctypes.byref(p))
        self._p = p
        if rc != 0:
            msg = self._log.take()
            self.close()
            raise Error(rc, msg)

    def _handle(self):
        """The C program; the caller holds self._lock for as long as the library uses it."""
        if not self._p or self._closing:
            raise _closed("the program %s" % self.path)
        return self._p

    @contextlib.contextmanager
    def _use(self):
        """The C program, kept from close() while the with block runs but without self._lock,
        for a call that waits for other ranks (the C side makes its lazy code generation safe
        across threads)."""
        p = self._enter()
        try:
            yield p
        finally:
            self._leave()

    def _enter(self):
        """_use's first half, for RankComm.run, where a generator's frames cost more than the run:
        the C program, counted as in use; the caller calls _leave() once the library is done."""
        with self._mutex:       # self._lock's own lock, without the Condition's Python-level enter
            p = self._handle()
            self._users += 1
            return p

    def _leave(self):
        with self._mutex:
            self._users -= 1
            # Only close() waits for the count, and it sets _closing under this lock before it
            # waits: a user that finds it unset leaves a count that close() will read itself.
            if self._closing:
                self._lock.notify_all()

    @property
    def handle(self):
        with self._lock:
            return self._handle()

    @property
    def name(self):
        with self._lock:
            return _lib.program_name(self._handle()).decode()

    @property
    def collective(self):
        with self._lock:
            return _lib.program_collective(self._handle()).decode()

    @property
    def nranks(self):
        with self._lock:
            return _lib.program_nranks(self._handle())

    @property
    def chunks(self):
        """The collective's C (its `chunks` parameter), as collective_chunks takes it."""
        with self._lock:
            return _lib.program_chunks(self._handle())

    @property
    def root(self):
        """The root rank it was compiled for (broadcast, reduce); None for a collective without one."""
        with self._lock:
            r = _lib.program_root(self._handle())
        return None if r < 0 else r

    def buf_chunks(self, buf):
        with self._lock:
            return _lib.program_buf_chunks(self._handle(), buf)

    def chunk_bytes(self, size):
        """The chunk size for a collective of `size` bytes (nccl-tests' convention: the larger
        of one rank's input and output)."""
        chunk, granule = self._fit(size)
        if chunk is None:
            raise ValueError("cdsl: %s: a size of %d bytes is not a positive multiple of %d" %
                             (self.name, size, granule))
        return chunk

    def granule(self, size):
        """The bytes that a size for this program must be a multiple of (near `size`)."""
        return self._fit(size)[1]

    def _fit(self, size):
        """(chunk bytes or None where size does not split, the granule) from the library."""
        chunk, granule = ctypes.c_size_t(), ctypes.c_size_t()
        with self._lock:
            rc = _lib.chunk_bytes(self._handle(), size, ctypes.byref(chunk), ctypes.byref(granule))
        return (chunk.value if rc == 0 else None), granule.value

    def bytes(self, buf, chunk):
        """Bytes of buffer `buf` at chunk bytes per chunk."""
        n = self.buf_chunks(buf)
        return max(n, 0) * chunk

    def close(self):
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            self._closing = True                # calls from now on raise; running ones finish
            lock.wait_for(lambda: self._users == 0)
            if self._p:
                _lib.program_destroy(self._p)
                self._p = None
            if getattr(self, "_log", None):
                self._log.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def get_unique_id(engine="auto"):
    """A new unique id (bytes) for one communicator: make it in one process, pass it to all."""
    if engine not in _lib.ENGINES:
        raise ValueError("cdsl: engine %r: one of %s" % (engine, ", ".join(_lib.ENGINES)))
    uid = _lib.UniqueId()
    rc = _lib.get_unique_id_engine(_lib.ENGINES[engine], ctypes.byref(uid))
    if rc != 0:
        raise Error(rc, _lib.last_error(None) or "cdsl: cannot make a unique id")
    return ctypes.string_at(ctypes.addressof(uid), _lib.UNIQUE_ID_BYTES)


def unique_id_engine(uid):
    u = _lib.UniqueId.from_buffer_copy(uid)
    e = _lib.unique_id_engine(ctypes.byref(u))
    return {v: k for k, v in _lib.ENGINES.items()}.get(e, "invalid")


class RankComm:
    """This process's rank of a per-rank communicator (cdsl_comm_init_rank).

    A lock serialises the calls into the library: close() from another thread waits for the
    call that is running there, and every call after close() raises cdsl.Error."""

    def __init__(self, nranks, uid, rank, flavour="p2p", device=-1, timeout=None, spin_limit=0, seed=0):
        self._lock = threading.RLock()
        self._c = None
        # run()'s argument, refilled under self._lock: the library reads it only during the call.
        self._io = _lib.RankIo()
        self._io_ptr = ctypes.pointer(self._io)
        if not isinstance(uid, (bytes, bytearray)) or len(uid) != _lib.UNIQUE_ID_BYTES:
            raise ValueError("cdsl: the unique id is %d bytes from cdsl.get_unique_id()" % _lib.UNIQUE_ID_BYTES)
        if flavour not in _lib.FLAVOURS:
            raise ValueError("cdsl: flavour is %s, not %r" % (_lib.sentence(_lib.FLAVOURS), flavour))
        cfg = _lib.RankConfig()
        _lib.rank_config_init(ctypes.byref(cfg))
        cfg.flavour = _lib.BACKENDS[flavour]
        cfg.device = -1 if device is None else device
        cfg.timeout_s = float(timeout or 0)
        cfg.spin_limit = spin_limit
        cfg.seed = seed
        cfg.log = _lib.devnull()     # the exceptions carry the messages (cdsl_rank_get_last_error)
        self._uid = _lib.UniqueId.from_buffer_copy(bytes(uid))
        c = ctypes.c_void_p()
        rc = _lib.comm_init_rank(ctypes.byref(c), nranks, ctypes.byref(self._uid), rank, ctypes.byref(cfg))
        if rc != 0:
            raise Error(rc, _lib.last_error(None))
        self._c = c
        self.rank, self.nranks = rank, nranks

    def _comm(self):
        """The C communicator; the caller holds self._lock."""
        if not self._c:
            raise _closed("rank %d's communicator" % self.rank)
        return self._c

    def _check(self, rc):
        if rc != 0:
            raise Error(rc, _lib.last_error(self._c))

    @property
    def engine(self):
        with self._lock:
            return {v: k for k, v in _lib.ENGINES.items()}[_lib.rank_comm_engine(self._comm())]

    @property
    def device(self):
        with self._lock:
            return _lib.rank_comm_device(self._comm())

    def alloc(self, program, chunk):
        with self._lock, program._use() as p:
            self._check(_lib.rank_alloc(self._comm(), p, chunk))

    def buffer(self, buf):
        """This rank's symmetric buffer `buf` (0 input, 1 output, 2.. scratch) as an address."""
        p = ctypes.c_void_p()
        with self._lock:
            self._check(_lib.rank_buffer(self._comm(), buf, ctypes.byref(p)))
        return p.value or 0

    def buffer_bytes(self, buf):
        with self._lock:
            return _lib.rank_buffer_bytes(self._comm(), buf)

    def run(self, program, dtype, chunk, input=None, input_bytes=0, output=None, output_bytes=0, stream=None):
        """Enqueue one run of this rank's part on `stream` (an int CUstream; None: the
        communicator's own). input/output None: the symmetric buffers themselves (no copy)."""
        with self._lock:
            io = self._io
            io.input, io.input_bytes = input or None, input_bytes
            io.output, io.output_bytes = output or None, output_bytes
            t = _dtype(dtype)
            p = program._enter()
            try:
                rc = _lib.rank_run(self._comm(), p, t, chunk, self._io_ptr, stream or None)
                # What the program itself said (its CUDA could not be made, say) goes to its own
                # diagnostics, not to the communicator's: the error carries both.
                said = program._log.take() if rc != 0 else ""
            finally:
                program._leave()
            if rc != 0:
                raise Error(rc, "\n".join(m for m in (_lib.last_error(self._c).strip(), said.strip()) if m))

    def status(self):
        """After the stream was synchronised: raises cdsl.Error when this rank's run failed."""
        with self._lock:
            self._check(_lib.rank_status(self._comm()))

    def close(self):
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            if self._c:
                _lib.rank_comm_destroy(self._c)
                self._c = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def pattern_fill(program, dtype, rank, chunk, address, nbytes):
    """Write rank's verification input for program at chunk bytes into host memory."""
    t = _dtype(dtype)
    with program._lock:
        rc = _lib.pattern_fill(program._handle(), t, rank, chunk, address, nbytes)
    if rc != 0:
        raise Error(rc, _lib.last_error(None))


def pattern_check(program, dtype, rank, chunk, address, nbytes):
    """Compare rank's output (host memory) with the collective's postcondition; returns the
    number of wrong elements (0: verified); the first wrong one is in cdsl.last_check_message."""
    global last_check_message
    t = _dtype(dtype)
    log = _lib.Log()
    wrong = ctypes.c_ulonglong()
    try:
        with program._lock:
            rc = _lib.pattern_check(program._handle(), t, rank, chunk, address, nbytes, ctypes.byref(wrong), log.file)
        last_check_message = log.take()
        if rc not in (0, 5):
            raise Error(rc, last_check_message)
        return wrong.value
    finally:
        log.close()


last_check_message = ""
