"""The few CUDA driver calls the self-test needs on raw device pointers (no torch): libcuda.so.1
through ctypes, this rank's device's primary context, memory and copies. libcdsl uses the
same primary context, so the pointers and streams are interchangeable with a CUDA program's.
"""
import ctypes


class CudaError(RuntimeError):
    pass


class Device:
    def __init__(self, ordinal):
        try:
            self.cu = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError("cdsl: no CUDA driver (libcuda.so.1): %s" % e)
        self.ordinal = ordinal
        self._call("cuInit", 0)
        self.dev = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(self.dev), ordinal)
        self.ctx = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(self.ctx), self.dev)
        self._call("cuCtxSetCurrent", self.ctx)

    def _call(self, name, *args):
        f = getattr(self.cu, name)
        r = f(*args)
        if r != 0:
            s = ctypes.c_char_p()
            self.cu.cuGetErrorString(r, ctypes.byref(s))
            raise CudaError("cdsl: %s failed: %s (%d)" % (name, (s.value or b"?").decode(), r))

    @staticmethod
    def count():
        try:
            cu = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return 0
        n = ctypes.c_int()
        if cu.cuInit(0) != 0 or cu.cuDeviceGetCount(ctypes.byref(n)) != 0:
            return 0
        return n.value

    def alloc(self, nbytes):
        p = ctypes.c_ulonglong()
        self._call("cuMemAlloc_v2", ctypes.byref(p), ctypes.c_size_t(max(nbytes, 256)))
        return p.value

    def free(self, ptr):
        self._call("cuMemFree_v2", ctypes.c_ulonglong(ptr))

    def to_device(self, dst, src, nbytes):
        self._call("cuMemcpyHtoD_v2", ctypes.c_ulonglong(dst), ctypes.c_void_p(src), ctypes.c_size_t(nbytes))

    def to_host(self, dst, src, nbytes):
        self._call("cuMemcpyDtoH_v2", ctypes.c_void_p(dst), ctypes.c_ulonglong(src), ctypes.c_size_t(nbytes))

    def synchronize(self):
        self._call("cuCtxSynchronize")

    def close(self):
        if self.ctx:
            self.cu.cuDevicePrimaryCtxRelease_v2(self.dev)
            self.ctx = None
