"""cdsl_build - writes the cdsl wheel itself (PEP 427), and is python/'s PEP 517 build backend.

Why by hand: the wheel must build with no network and nothing beyond the standard library.
setuptools' backend needs setuptools (and, before 70.1, the wheel package) in the build
environment; pip's build isolation would download them, and a Python without them has no
bdist_wheel. A wheel is a zip of the package and a .dist-info folder (METADATA, WHEEL, RECORD
with each file's sha256), which zipfile and hashlib write.

What the wheel carries, so that the installed package needs no environment variable:
    cdsl/*.py             the package
    cdsl/lib/libcdsl.so.N the shared library, under its SONAME (one file: ctypes loads it by
                          path, and nothing else asks the dynamic linker for it by name)
    cdsl/lib/<dep>        each library it links that is not the C library's own (libjansson),
                          which cdsl/_lib.py loads first, so that the dynamic linker finds it
                          already loaded by SONAME
    cdsl/stdlib/*.cdsl    the stdlib programs
Its tag is py3-none-<this platform>: pure Python over a native library.

Where the inputs are: CDSL_LIB (the library file) and CDSL_STDLIB, else build/libcdsl.so and
stdlib/ of the checkout this file sits in (python/build_backend/ -> ../..). The version is the
library's own (cdsl_version()), so that the wheel never claims another.

    python3 python/build_backend/cdsl_build.py [--lib FILE] [--stdlib DIR] [--out DIR]
    pip install ./python        (this module as the backend: pyproject.toml's backend-path)
"""
import argparse
import base64
import ctypes
import glob
import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import zipfile

NAME = "cdsl"
SUMMARY = "Checked collective programs for NVLink (SHARP), one process per GPU: ctypes over libcdsl.so"
REQUIRES_PYTHON = ">=3.9"
EXTRAS = {"torch": ["torch"]}

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
ROOT = os.path.dirname(PYDIR)
# The C library's own libraries: every Linux system has them, and they must be the system's.
SYSTEM_LIBS = re.compile(r"^(libc|libm|libdl|libpthread|librt|libresolv|ld-linux[-\w]*)\.so")
# Zip entries' time: fixed, so that two builds of the same files are the same bytes.
EPOCH = (1980, 1, 1, 0, 0, 0)


class BuildError(Exception):
    pass


def _library():
    path = os.environ.get("CDSL_LIB") or os.path.join(ROOT, "build", "libcdsl.so")
    if not os.path.isfile(path):
        raise BuildError("cdsl wheel: no library at %s; build it first (make in %s), or set CDSL_LIB" % (path, ROOT))
    return os.path.realpath(path)


def _stdlib():
    d = os.environ.get("CDSL_STDLIB") or os.path.join(ROOT, "stdlib")
    files = sorted(glob.glob(os.path.join(d, "*.cdsl")))
    if not files:
        raise BuildError("cdsl wheel: no stdlib programs in %s; set CDSL_STDLIB" % d)
    return files


def _dynamic(lib):
    """(SONAME, [NEEDED...]) of a shared library, from readelf -d (binutils, beside the compiler)."""
    try:
        out = subprocess.run(["readelf", "-d", lib], check=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise BuildError("cdsl wheel: readelf -d %s failed (%s); it comes with binutils" % (lib, e))
    soname = re.findall(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    return (soname[0] if soname else os.path.basename(lib)), needed


def _resolved(lib):
    """{SONAME: path} of what the dynamic linker loads for lib, from ldd."""
    try:
        out = subprocess.run(["ldd", lib], check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise BuildError("cdsl wheel: ldd %s failed (%s)" % (lib, e))
    return dict(re.findall(r"^\s*(\S+) => (/\S+)", out, re.M))


def _dependencies(lib):
    """[(SONAME, path)] of the libraries lib needs, beyond the C library's, dependencies first."""
    found, order = _resolved(lib), []

    def visit(path):
        for name in _dynamic(path)[1]:
            if SYSTEM_LIBS.match(name) or any(n == name for n, _ in order):
                continue
            if name not in found:
                raise BuildError("cdsl wheel: %s needs %s, which the dynamic linker does not find" % (path, name))
            visit(found[name])
            order.append((name, found[name]))
    visit(lib)
    return order


def _version(lib):
    f = ctypes.CDLL(lib).cdsl_version
    f.restype = ctypes.c_char_p
    return f().decode()


def platform_tag():
    return re.sub(r"[-.]", "_", sysconfig.get_platform())


def _metadata(version):
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + version, "Summary: " + SUMMARY,
             "License: see the repository", "Requires-Python: " + REQUIRES_PYTHON]
    for extra, reqs in EXTRAS.items():
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s; extra == "%s"' % (r, extra) for r in reqs]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(PYDIR, "README.md"), encoding="utf-8") as f:
        return "\n".join(lines) + "\n\n" + f.read()


def _wheel_info(tag):
    return "Wheel-Version: 1.0\nGenerator: cdsl_build\nRoot-Is-Purelib: false\nTag: %s\n" % tag


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _contents(editable):
    """[(name in the wheel, bytes, executable)], the .dist-info aside; and the version."""
    lib = _library()
    version = _version(lib)
    files = []
    if editable:
        # The checkout's own package, with its library in build/ and its stdlib/ beside it.
        files.append((NAME + "_editable.pth", (PYDIR + "\n").encode(), False))
        return files, version
    for py in sorted(glob.glob(os.path.join(PYDIR, NAME, "*.py"))):
        with open(py, "rb") as f:
            files.append((NAME + "/" + os.path.basename(py), f.read(), False))
    for name, path in _dependencies(lib) + [(_dynamic(lib)[0], lib)]:
        with open(path, "rb") as f:
            files.append((NAME + "/lib/" + name, f.read(), True))
    for cdsl in _stdlib():
        with open(cdsl, "rb") as f:
            files.append((NAME + "/stdlib/" + os.path.basename(cdsl), f.read(), False))
    return files, version


def _dist_info(version, tag):
    info = "%s-%s.dist-info" % (NAME, version)
    files = [(info + "/METADATA", _metadata(version).encode(), False),
             (info + "/WHEEL", _wheel_info(tag).encode(), False),
             (info + "/top_level.txt", (NAME + "\n").encode(), False)]
    licence = os.path.join(ROOT, "LICENSE")
    if os.path.isfile(licence):
        with open(licence, "rb") as f:
            files.append((info + "/LICENSE", f.read(), False))
    return info, files


def write_wheel(out_dir, editable=False):
    """Writes the wheel into out_dir; returns its file name."""
    files, version = _contents(editable)
    tag = "py3-none-" + platform_tag()
    info, meta = _dist_info(version, tag)
    name = "%s-%s-%s.whl" % (NAME, version, tag)
    os.makedirs(out_dir, exist_ok=True)
    record = io.StringIO()
    tmp = os.path.join(out_dir, name + ".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data, executable in files + meta:
            entry = zipfile.ZipInfo(arc, EPOCH)
            entry.external_attr = (0o755 if executable else 0o644) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
            record.write("%s,%s,%d\n" % (arc, _record_hash(data), len(data)))
        record.write(info + "/RECORD,,\n")
        entry = zipfile.ZipInfo(info + "/RECORD", EPOCH)
        entry.external_attr = 0o644 << 16
        entry.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(entry, record.getvalue())
    os.replace(tmp, os.path.join(out_dir, name))
    return name


# ---- PEP 517 and PEP 660 hooks: nothing to install first, so build isolation needs no network ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return write_wheel(wheel_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return write_wheel(wheel_directory, editable=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="cdsl_build.py", description="Write the cdsl wheel (no network needed).")
    ap.add_argument("--lib", help="the libcdsl.so to ship (default: CDSL_LIB, else build/libcdsl.so)")
    ap.add_argument("--stdlib", help="the folder of stdlib programs (default: CDSL_STDLIB, else stdlib/)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "dist"), help="where the wheel goes (build/dist)")
    args = ap.parse_args(argv)
    if args.lib:
        os.environ["CDSL_LIB"] = args.lib
    if args.stdlib:
        os.environ["CDSL_STDLIB"] = args.stdlib
    try:
        print(os.path.join(args.out, write_wheel(args.out)))
    except (BuildError, OSError) as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
