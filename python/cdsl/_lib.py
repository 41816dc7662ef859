"""Finding and loading libcdsl.so with ctypes, and declaring the functions of cdsl.h we use.

Where the library is, in order: the file named by CDSL_LIB; lib/libcdsl.so.N inside this
package (an installed wheel carries it, with the libraries it needs beyond the C library's,
which are loaded first so that the dynamic linker finds them by SONAME); build/libcdsl.so of
the source checkout this package sits in (python/cdsl/ -> ../../build); lib/libcdsl.so beside
an installed tree (sys.prefix, /usr/local, /usr); what the dynamic linker finds by name.
Nothing is compiled: the package is ctypes over the library that `make` or `make install` made.

Messages: a failing call's exception carries the library's own explanation. For a
communicator, cdsl_rank_get_last_error(comm) (cdsl_rank_get_last_error(NULL): the calling
thread's last error, for a communicator that could not be made); the messages the library
also writes to its FILE* log go to /dev/null. A compile's diagnostics (several lines, with
source positions) go to a temporary file of the Program's own (tmpfile(3)), read back when the
compile fails, as is cdsl_pattern_check's report.
"""
import ctypes
import ctypes.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGED = os.path.join(_HERE, "lib")


def _packaged():
    """The wheel's libcdsl.so.N, after loading the libraries it needs (kept in _deps)."""
    names = sorted(os.listdir(_PACKAGED)) if os.path.isdir(_PACKAGED) else []
    ours = [n for n in names if n.startswith("libcdsl.so")]
    if not ours:
        return
    for n in names:
        if n not in ours:
            try:
                _deps.append(ctypes.CDLL(os.path.join(_PACKAGED, n)))
            except OSError as e:
                raise ImportError("cdsl: cannot load %s, which the package's libcdsl needs: %s" % (n, e))
    yield os.path.join(_PACKAGED, ours[0])


_deps = []


def _candidates():
    env = os.environ.get("CDSL_LIB")
    if env:
        yield env
    yield from _packaged()
    yield os.path.join(_HERE, "..", "..", "build", "libcdsl.so")
    for prefix in (sys.prefix, "/usr/local", "/usr"):
        yield os.path.join(prefix, "lib", "libcdsl.so")
    found = ctypes.util.find_library("cdsl")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("cdsl: cannot find libcdsl.so; build it (make) or set CDSL_LIB to its path; tried: "
                      + ", ".join(tried))


lib, path = _load()
libc = ctypes.CDLL(None)

c_int, c_size_t, c_void_p, c_char_p, c_double = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double
c_uint, c_ulonglong = ctypes.c_uint, ctypes.c_ulonglong

UNIQUE_ID_BYTES = 256
BUF_INPUT, BUF_OUTPUT = 0, 1
STATUS = {0: "ok", 1: "program", 2: "usage", 3: "system", 4: "runtime", 5: "verify"}
DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "u32": 3, "s32": 4}
DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "u32": 4, "s32": 4}
STAGE_CHECK = 2


class CompileOpts(ctypes.Structure):
    _fields_ = [("path", c_char_p), ("nranks", c_int), ("program", c_char_p),
                ("defines", ctypes.POINTER(c_char_p)), ("ndefines", c_int),
                ("include_dirs", ctypes.POINTER(c_char_p)), ("ninclude_dirs", c_int),
                ("stop_after", c_int), ("diag", c_void_p), ("color", c_int),
                ("check_memory", c_size_t), ("check_steps", c_ulonglong), ("in_place", c_int),
                ("source", c_char_p), ("warnings_off", c_uint), ("warnings_as_errors", c_int),
                ("diag_format", c_int), ("progress", c_int)]


class RankConfig(ctypes.Structure):
    _fields_ = [("flavour", c_int), ("device", c_int), ("timeout_s", c_double),
                ("spin_limit", c_ulonglong), ("seed", c_uint), ("jitter_us", c_int), ("log", c_void_p)]


class RankIo(ctypes.Structure):
    _fields_ = [("input", c_void_p), ("input_bytes", c_size_t), ("output", c_void_p), ("output_bytes", c_size_t)]


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


def _fn(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


P = c_void_p
compile_ = _fn("cdsl_compile", c_int, ctypes.POINTER(CompileOpts), ctypes.POINTER(P))
program_destroy = _fn("cdsl_program_destroy", None, P)
program_name = _fn("cdsl_program_name", c_char_p, P)
program_collective = _fn("cdsl_program_collective", c_char_p, P)
program_nranks = _fn("cdsl_program_nranks", c_int, P)
program_chunks = _fn("cdsl_program_chunks", c_int, P)
program_root = _fn("cdsl_program_root", c_int, P)
program_nbufs = _fn("cdsl_program_nbufs", c_int, P)
program_buf_chunks = _fn("cdsl_program_buf_chunks", c_int, P, c_int)
chunk_bytes = _fn("cdsl_chunk_bytes", c_int, P, c_size_t, ctypes.POINTER(c_size_t), ctypes.POINTER(c_size_t))
get_unique_id_engine = _fn("cdsl_get_unique_id_engine", c_int, c_int, ctypes.POINTER(UniqueId))
unique_id_engine = _fn("cdsl_unique_id_engine", c_int, ctypes.POINTER(UniqueId))
rank_config_init = _fn("cdsl_rank_config_init", None, ctypes.POINTER(RankConfig))
comm_init_rank = _fn("cdsl_comm_init_rank", c_int, ctypes.POINTER(P), c_int, ctypes.POINTER(UniqueId), c_int,
                     ctypes.POINTER(RankConfig))
rank_comm_destroy = _fn("cdsl_rank_comm_destroy", None, P)
rank_comm_engine = _fn("cdsl_rank_comm_engine", c_int, P)
rank_comm_device = _fn("cdsl_rank_comm_device", c_int, P)
rank_alloc = _fn("cdsl_rank_alloc", c_int, P, P, c_size_t)
rank_buffer = _fn("cdsl_rank_buffer", c_int, P, c_int, ctypes.POINTER(P))
rank_buffer_bytes = _fn("cdsl_rank_buffer_bytes", c_size_t, P, c_int)
rank_run = _fn("cdsl_rank_run", c_int, P, P, c_int, c_size_t, ctypes.POINTER(RankIo), P)
rank_status = _fn("cdsl_rank_status", c_int, P)
pattern_fill = _fn("cdsl_pattern_fill", c_int, P, c_int, c_int, c_size_t, P, c_size_t)
pattern_check = _fn("cdsl_pattern_check", c_int, P, c_int, c_int, c_size_t, P, c_size_t,
                    ctypes.POINTER(c_ulonglong), P)
version = _fn("cdsl_version", c_char_p)
collective_count = _fn("cdsl_collective_count", c_int)
collective_name = _fn("cdsl_collective_name", c_char_p, c_int)
collective_find = _fn("cdsl_collective_find", c_int, c_char_p)
collective_chunks = _fn("cdsl_collective_chunks", c_int, c_int, c_int, c_int, ctypes.POINTER(ctypes.c_longlong),
                        ctypes.POINTER(ctypes.c_longlong))
collective_busbw_factor = _fn("cdsl_collective_busbw_factor", c_double, c_int, c_int)
collective_postcondition = _fn("cdsl_collective_postcondition", c_int, c_int)
POSTCONDITIONS = {0: "none", 1: "barrier", 2: "gather", 3: "sum", 4: "broadcast", 5: "reduce"}
collective_has_root = _fn("cdsl_collective_has_root", c_int, c_int)
rank_get_last_error = _fn("cdsl_rank_get_last_error", c_char_p, P)
list_name = _fn("cdsl_list_name", c_char_p, c_int, c_int)
backend_parse = _fn("cdsl_backend_parse", c_int, c_char_p, ctypes.POINTER(c_int))
engine_parse = _fn("cdsl_engine_parse", c_int, c_char_p, ctypes.POINTER(c_int))

# The names the library takes, from its registry of backends and engines (cdsl_list_name), and
# the enum value of each (its parse function): no list of our own to fall behind the library's.
LIST_BACKENDS, LIST_FLAVOURS, LIST_ENGINES = 0, 1, 2


def _names(which):
    names = []
    while True:
        n = list_name(which, len(names))
        if n is None:
            return names
        names.append(n.decode())


def _values(names, parse):
    values, v = {}, c_int()
    for n in names:
        if parse(n.encode(), ctypes.byref(v)) == 0:
            values[n] = v.value
    return values


def sentence(names):
    """"a, b or c", as the library's messages list names."""
    names = list(names)
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)


BACKENDS = _values(_names(LIST_BACKENDS), backend_parse)
FLAVOURS = _names(LIST_FLAVOURS)
ENGINES = _values(["auto"] + _names(LIST_ENGINES), engine_parse)

_tmpfile = libc.tmpfile
_tmpfile.restype = c_void_p
_tmpfile.argtypes = []
_fileno = libc.fileno
_fileno.restype = c_int
_fileno.argtypes = [c_void_p]
_fflush = libc.fflush
_fflush.argtypes = [c_void_p]
_fclose = libc.fclose
_fclose.argtypes = [c_void_p]
_rewind = libc.rewind
_rewind.argtypes = [c_void_p]
_rewind.restype = None
_fopen = libc.fopen
_fopen.restype = c_void_p
_fopen.argtypes = [c_char_p, c_char_p]


def last_error(comm=None):
    """The text of the last error on a per-rank communicator (None: this thread's last)."""
    text = rank_get_last_error(comm)
    return text.decode("utf-8", "replace") if text else ""


_devnull = None


def devnull():
    """A FILE* that discards what the library writes (opened once, kept for the process)."""
    global _devnull
    if not _devnull:
        _devnull = _fopen(b"/dev/null", b"w")
        if not _devnull:
            raise OSError("cdsl: cannot open /dev/null")
    return _devnull


class Log:
    """A FILE* for the library's messages; take() returns and forgets what was written."""

    def __init__(self):
        self.file = _tmpfile()
        if not self.file:
            raise OSError("cdsl: tmpfile() failed")

    def take(self):
        _fflush(self.file)
        fd = _fileno(self.file)
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            chunks.append(b)
        os.ftruncate(fd, 0)
        _rewind(self.file)
        return b"".join(chunks).decode("utf-8", "replace")

    def close(self):
        if self.file:
            _fclose(self.file)
            self.file = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
