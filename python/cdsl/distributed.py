"""cdsl on torch tensors: a per-rank communicator made from a torch.distributed process group.

    import torch.distributed as dist, cdsl.distributed
    dist.init_process_group("nccl")                      # or gloo: only the id travels through it
    comm = cdsl.distributed.Communicator()               # every rank of the group
    comm.all_gather_into_tensor(out, inp)                # on torch.cuda.current_stream()
    comm.reduce_scatter_tensor(out, inp)
    comm.all_reduce(t)
    comm.all_to_all_single(out, inp)                     # equal splits
    comm.run("stdlib/allgather_ring.cdsl", out, inp)     # any checked program

The group's rank 0 makes the unique id and torch.distributed.broadcast_object_list carries it
to the others; nothing else goes through the group. Tensors are validated first (device,
contiguity, dtype, sizes: a clear ValueError/TypeError naming the rank). They are ordinary
tensors from PyTorch's allocator, not symmetric memory, so a run copies the input into the
communicator's symmetric input and the result out of its symmetric output, on the current
stream; tensors made by symmetric_tensors() are the symmetric buffers themselves, and runs on
them copy nothing (see docs/multiprocess.md for the cost of each). Errors of a run on a GPU
are asynchronous, as in NCCL: synchronise the stream, then call status(). On the sim engine
(CPU tensors) a run is synchronous and its failure raises at once.
"""
import ctypes

import torch
import torch.distributed as dist

from . import _lib, core

_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.int32: "s32"}
if hasattr(torch, "uint32"):
    _DTYPES[torch.uint32] = "u32"

DEFAULT_PROGRAMS = {"allgather": "allgather_nvls", "reducescatter": "reducescatter_nvls",
                    "allreduce": "allreduce_nvls", "alltoall": "alltoall_mesh"}


def _global_rank(group, r):
    if group is None:
        return r
    if hasattr(dist, "get_global_rank"):
        return dist.get_global_rank(group, r)
    return dist.distributed_c10d._get_global_rank(group, r)


def _overlap(a, b):
    """Whether two tensors share memory (as an in-place collective's input and output do)."""
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


class _CudaArray:
    """Just enough __cuda_array_interface__ for torch.as_tensor to wrap a device pointer."""

    def __init__(self, ptr, nbytes, typestr):
        size = {"<f4": 4, "<f2": 2, "<i4": 4, "<u4": 4, "<V2": 2}[typestr]
        self.__cuda_array_interface__ = {"shape": (nbytes // size,), "typestr": typestr, "data": (ptr, False),
                                         "version": 2, "strides": None}


class Communicator:
    def __init__(self, group=None, engine="auto", flavour="p2p", device=None, timeout=None, spin_limit=0):
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("cdsl: initialise torch.distributed first (init_process_group); its group "
                               "carries the unique id")
        self.group = group
        self.rank = dist.get_rank(group)
        self.nranks = dist.get_world_size(group)
        if device is None:
            use_gpu = engine != "sim" and torch.cuda.is_available()
            device = torch.device("cuda", torch.cuda.current_device()) if use_gpu else torch.device("cpu")
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        if self.device.type == "cpu":
            engine = "sim"
        box = [core.get_unique_id(engine) if self.rank == 0 else None]
        dist.broadcast_object_list(box, src=_global_rank(group, 0), group=group)
        self.comm = core.RankComm(self.nranks, box[0], self.rank, flavour=flavour,
                                  device=self.device.index if self.device.type == "cuda" else -1,
                                  timeout=timeout, spin_limit=spin_limit)
        self.engine = self.comm.engine
        self._programs = {}

    # ---- programs ---------------------------------------------------------------------------------
    def program(self, name, in_place=False):
        """A checked program for this group's size: a stdlib name ("allgather_ring") or a path;
        in_place: compiled for tensors that share memory as NCCL's in-place calls pass them."""
        path = name if name.endswith(".cdsl") else core.stdlib_program(name)
        if (path, in_place) not in self._programs:
            self._programs[(path, in_place)] = core.Program(path, self.nranks, in_place=in_place)
        return self._programs[(path, in_place)]

    # ---- checks -------------------------------------------------------------------------------------
    def _tensor(self, t, what):
        if not isinstance(t, torch.Tensor):
            raise TypeError("cdsl: rank %d: %s is a %s, not a torch.Tensor" % (self.rank, what, type(t).__name__))
        if t.device != self.device:
            raise ValueError("cdsl: rank %d: %s is on %s, but this rank of the communicator runs on %s" %
                             (self.rank, what, t.device, self.device))
        if not t.is_contiguous():
            raise ValueError("cdsl: rank %d: %s is not contiguous (strides %s); pass t.contiguous()" %
                             (self.rank, what, tuple(t.stride())))
        if t.dtype not in _DTYPES:
            raise TypeError("cdsl: rank %d: %s has dtype %s; cdsl runs %s" %
                            (self.rank, what, t.dtype, ", ".join(str(d) for d in _DTYPES)))
        return _DTYPES[t.dtype]

    def _stream(self):
        """The current stream's CUstream. torch's default stream is CUDA's legacy default stream,
        whose handle is 0: that is passed as CU_STREAM_LEGACY (1), since 0 (NULL) would mean
        the communicator's own stream, which does not wait for the legacy one."""
        if self.device.type != "cuda":
            return None
        return torch.cuda.current_stream(self.device).cuda_stream or 1

    # ---- runs ---------------------------------------------------------------------------------------
    def run(self, program, output, input=None):
        """Run a checked program: input (or None when it has no input) and output tensors of
        this rank, their sizes one chunk count apart as the program's buffers say. Tensors that
        share memory (all_reduce(t); an input that is the output's slice for this rank) run the
        program compiled in place, which the checker checked for that."""
        in_place = input is not None and _overlap(input, output)
        prog = program if isinstance(program, core.Program) else self.program(program, in_place)
        dtype = self._tensor(output, "the output")
        if input is not None and self._tensor(input, "the input") != dtype:
            raise TypeError("cdsl: rank %d: the input is %s and the output %s; they must be one type" %
                            (self.rank, input.dtype, output.dtype))
        out_chunks, in_chunks = prog.buf_chunks(_lib.BUF_OUTPUT), prog.buf_chunks(_lib.BUF_INPUT)
        nbytes = output.numel() * output.element_size()
        if out_chunks <= 0 or nbytes % out_chunks or (nbytes // out_chunks) % 4:
            raise ValueError("cdsl: rank %d: %s's output is %d chunks; %d bytes do not split into chunks of a "
                             "multiple of 4 bytes" % (self.rank, prog.name, out_chunks, nbytes))
        chunk = nbytes // out_chunks
        in_ptr, in_bytes = 0, 0
        if input is not None:
            in_bytes = input.numel() * input.element_size()
            if in_bytes != chunk * max(in_chunks, 0):
                raise ValueError("cdsl: rank %d: %s takes an input of %d chunks of %d bytes (%d bytes) with this "
                                 "output; the input has %d bytes" % (self.rank, prog.name, in_chunks, chunk,
                                                                     chunk * in_chunks, in_bytes))
            in_ptr = input.data_ptr()
        self.comm.run(prog, dtype, chunk, in_ptr, in_bytes, output.data_ptr(), nbytes, self._stream())
        if self.device.type == "cpu":
            self.comm.status()      # the sim ran it already: a failure is known now
        return output

    def all_gather_into_tensor(self, output, input, program=None):
        self._same(output, input, "all_gather_into_tensor", "allgather")
        return self.run(program or DEFAULT_PROGRAMS["allgather"], output, input)

    def reduce_scatter_tensor(self, output, input, program=None):
        self._same(output, input, "reduce_scatter_tensor", "reducescatter")
        return self.run(program or DEFAULT_PROGRAMS["reducescatter"], output, input)

    def all_reduce(self, tensor, program=None):
        return self.run(program or DEFAULT_PROGRAMS["allreduce"], tensor, tensor)

    def all_to_all_single(self, output, input, program=None):
        """torch.distributed.all_to_all_single with equal splits: block p of this rank's output
        is block `rank` of rank p's input. output and input may be one tensor (in place)."""
        self._same(output, input, "all_to_all_single", "alltoall")
        return self.run(program or DEFAULT_PROGRAMS["alltoall"], output, input)

    def _same(self, output, input, what, collective):
        """The tensors' sizes in the ratio of the collective's chunk counts (the library's table)."""
        self._tensor(output, "the output")
        self._tensor(input, "the input")
        n_in, n_out = core.collective_chunks(collective, self.nranks)
        two_in, two_out = core.collective_chunks(collective, 2)    # which is larger, at any nranks > 1
        if two_in == two_out:
            if output.numel() != input.numel():
                raise ValueError("cdsl: rank %d: %s needs an output and an input of one size; they hold %d and %d "
                                 "elements" % (self.rank, what, output.numel(), input.numel()))
            return
        output_ranks = two_out > two_in
        big, small = (output, input) if output_ranks else (input, output)
        if big.numel() * min(n_in, n_out) != small.numel() * max(n_in, n_out):
            raise ValueError("cdsl: rank %d: %s needs the %s to hold %d x the %s's %d elements; it holds %d" %
                             (self.rank, what, "output" if output_ranks else "input", self.nranks,
                              "input" if output_ranks else "output", small.numel(), big.numel()))

    def status(self):
        """After the stream of the last run was synchronised: raises cdsl.Error if it failed."""
        self.comm.status()

    # ---- symmetric tensors: runs on them copy nothing ---------------------------------------------
    def symmetric_tensors(self, program, output_numel, dtype=torch.float32):
        """(input, output) tensors over this rank's symmetric buffers for `program` with an
        output of output_numel elements. Valid until another program or a larger size changes
        the layout (a run of either does) or the communicator closes."""
        prog = program if isinstance(program, core.Program) else self.program(program)
        if dtype not in _DTYPES:
            raise TypeError("cdsl: dtype %s; cdsl runs %s" % (dtype, ", ".join(str(d) for d in _DTYPES)))
        esize = torch.empty((), dtype=dtype).element_size()
        chunk = output_numel * esize // prog.buf_chunks(_lib.BUF_OUTPUT)
        self.comm.alloc(prog, chunk)
        return tuple(self._wrap(self.comm.buffer(b), self.comm.buffer_bytes(b), dtype) if self.comm.buffer_bytes(b)
                     else None for b in (_lib.BUF_INPUT, _lib.BUF_OUTPUT))

    def _wrap(self, ptr, nbytes, dtype):
        if self.device.type == "cpu":
            raw = (ctypes.c_char * nbytes).from_address(ptr)
            return torch.frombuffer(raw, dtype=dtype)
        typestr = {torch.float32: "<f4", torch.float16: "<f2", torch.int32: "<i4", torch.bfloat16: "<V2"}
        if dtype in typestr and dtype != torch.bfloat16:
            return torch.as_tensor(_CudaArray(ptr, nbytes, typestr[dtype]), device=self.device)
        words = torch.as_tensor(_CudaArray(ptr, nbytes, "<i4"), device=self.device)
        return words.view(dtype)

    def close(self):
        for p in self._programs.values():
            p.close()
        self._programs = {}
        self.comm.close()
