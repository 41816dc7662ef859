"""cdsl: checked collective programs, from Python, one process per rank (ctypes over libcdsl.so).

Without torch (raw pointers: device addresses on GPUs, host addresses on the sim engine):
    cdsl.get_unique_id(), cdsl.RankComm, cdsl.Program, cdsl.pattern_fill/pattern_check
With torch (cdsl.distributed): a Communicator made from a torch.distributed process group,
    all_gather_into_tensor, reduce_scatter_tensor, all_reduce and run() on torch tensors and
    torch.cuda.current_stream().
With torch.distributed (cdsl.torch_backend): the backend "cdsl", init_process_group("cuda:cdsl,cpu:gloo")
    routes torch's collectives to cdsl programs; a per-size program table; symmetric tensors.
What each collective means (names, chunk counts, bus-bandwidth factor, postcondition):
    cdsl.collectives(), cdsl.collective_chunks, cdsl.collective_busbw_factor, ...
python3 -m cdsl.selftest -n 4: every stdlib program on 4 processes, verified.
"""
from .core import (Error, Program, RankComm, collective_busbw_factor, collective_chunks, collective_has_root,
                   collective_postcondition,
                   collectives, get_unique_id, library_path, pattern_check, pattern_fill, stdlib_dir, stdlib_program,
                   unique_id_engine, version)

__all__ = ["Error", "Program", "RankComm", "collective_busbw_factor", "collective_chunks", "collective_has_root",
           "collective_postcondition",
           "collectives", "get_unique_id", "library_path", "pattern_check", "pattern_fill", "stdlib_dir",
           "stdlib_program", "unique_id_engine", "version"]
__version__ = version()     # the library's: a wheel's version is the library it carries
