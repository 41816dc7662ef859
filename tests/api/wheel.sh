#!/bin/bash
# tests/api/wheel.sh - the Python wheel is self-contained and installs offline.
#
# 1. make wheel writes build/dist/cdsl-<version>-py3-none-<platform>.whl: tagged for this
#    platform (it carries a native library), with libcdsl.so.N, every stdlib program, and a
#    RECORD whose sha256 and size match each file.
# 2. pip install --no-index of it into a fresh venv (no system site packages); then, with no
#    environment but PATH and HOME and from a folder outside the repository, python -m
#    cdsl.selftest -n 2 passes every stdlib program (sim engine), and a program compiles from
#    the package's own stdlib with the package's own library (and its own libjansson);
#    CDSL_LIB and CDSL_STDLIB still override both.
# 3. pip install --no-index ./python (with pip's build isolation: the in-tree backend needs
#    nothing downloaded) works in another fresh venv, and pip wheel --no-index ./python writes
#    the same files as make wheel.
# [SKIP] where the Python has no venv or ensurepip (Debian: python3-venv).
source "$(dirname "$0")/../lib/common.bash"
need_modules "$test_name" venv:python3-venv ensurepip:python3-venv || exit 0
PY=$PYTHON_WITH
nprog=$(ls stdlib/*.cdsl | wc -l)
version=$(sed -n 's/^VERSION = //p' Makefile)
plat=$("$PY" -c 'import re, sysconfig; print(re.sub(r"[-.]", "_", sysconfig.get_platform()))')

# 1.
whl=$(make --no-print-directory PYTHON="$PY" wheel 2>"$tmp/make.log" | tail -1)
if [ "$whl" != "build/dist/cdsl-$version-py3-none-$plat.whl" ] || [ ! -f "$whl" ]; then
    fail "make wheel writes build/dist/cdsl-$version-py3-none-$plat.whl" "got '$whl': $(tail -3 "$tmp/make.log" | tr '\n' ' ')"
    exit 1
fi
pass "make wheel writes $whl"
check=$("$PY" - "$whl" "$nprog" <<'EOF'
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
record = [n for n in names if n.endswith(".dist-info/RECORD")]
bad = []
for line in z.read(record[0]).decode().splitlines():
    name, digest, size = line.rsplit(",", 2)
    if name == record[0]:
        continue
    data = z.read(name)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    if digest != want or int(size) != len(data):
        bad.append(name)
listed = {l.rsplit(",", 2)[0] for l in z.read(record[0]).decode().splitlines()}
bad += ["%s (not in RECORD)" % n for n in names if n not in listed]
libs = [n for n in names if n.startswith("cdsl/lib/libcdsl.so.")]
cdsl = [n for n in names if n.startswith("cdsl/stdlib/") and n.endswith(".cdsl")]
wheel = z.read([n for n in names if n.endswith(".dist-info/WHEEL")][0]).decode()
print("ok" if not bad and libs and len(cdsl) == int(sys.argv[2]) and "Root-Is-Purelib: false" in wheel
      else "bad: %s libs %s, %d programs" % (bad, libs, len(cdsl)))
EOF
)
[ "$check" = ok ] && pass "the wheel carries libcdsl.so.N and $nprog stdlib programs; RECORD matches" ||
    fail "the wheel carries libcdsl.so.N and the stdlib; RECORD matches" "$check"

# 2. Everything from $tmp/away, outside the repository, with no CDSL_* variable.
mkdir -p "$tmp/away"
clean() { (cd "$tmp/away" && env -i PATH=/usr/bin:/bin HOME="$tmp/away" "$@"); }
if ! clean "$PY" -m venv "$tmp/v1" >"$tmp/venv.log" 2>&1; then
    fail "$PY -m venv" "$(tail -2 "$tmp/venv.log" | tr '\n' ' ')"
    exit 1
fi
if ! clean "$tmp/v1/bin/python" -m pip install --no-index "$PWD/$whl" >"$tmp/pip.log" 2>&1; then
    fail "pip install --no-index $whl (a fresh venv, offline)" "$(tail -3 "$tmp/pip.log" | tr '\n' ' ')"
    exit 1
fi
pass "pip install --no-index $whl (a fresh venv, offline)"
out=$(clean timeout 300 "$tmp/v1/bin/python" -m cdsl.selftest -n 2 2>&1); rc=$?
[ $rc = 0 ] && [ "$(echo "$out" | tail -1)" = "$nprog passed, 0 failed" ] &&
    pass "the installed wheel, no environment: python -m cdsl.selftest -n 2: $nprog passed" ||
    fail "the installed wheel, no environment: python -m cdsl.selftest -n 2" "exit $rc: $(echo "$out" | grep -v PASS | tail -3 | tr '\n' ' ')"
probe='import cdsl
p = cdsl.Program(cdsl.stdlib_program("allgather_ring"), 4)
jansson = [l.split()[-1] for l in open("/proc/self/maps") if "libjansson" in l]
print(p.name, p.collective, cdsl.library_path(), cdsl.stdlib_dir(), jansson[0] if jansson else "-")'
site=$(clean "$tmp/v1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
out=$(clean "$tmp/v1/bin/python" -c "$probe" 2>&1)
want="allgather_ring allgather $site/cdsl/lib/libcdsl.so.0 $site/cdsl/stdlib $site/cdsl/lib/libjansson.so.4"
[ "$out" = "$want" ] && pass "the installed wheel compiles a stdlib program with its own library and stdlib" ||
    fail "the installed wheel compiles a stdlib program with its own library and stdlib" "want '$want', got '$out'"
out=$(clean CDSL_LIB="$PWD/build/libcdsl.so" CDSL_STDLIB="$PWD/stdlib" "$tmp/v1/bin/python" -c "$probe" 2>&1)
[[ "$out" == "allgather_ring allgather $PWD/build/libcdsl.so $PWD/stdlib "* ]] &&
    pass "CDSL_LIB and CDSL_STDLIB override the wheel's own" ||
    fail "CDSL_LIB and CDSL_STDLIB override the wheel's own" "$out"

# 3.
clean "$PY" -m venv "$tmp/v2" >/dev/null 2>&1
if clean "$tmp/v2/bin/python" -m pip install --no-index "$PWD/python" >"$tmp/pip2.log" 2>&1 &&
   out=$(clean "$tmp/v2/bin/python" -c "$probe" 2>&1) && [[ "$out" == "allgather_ring allgather $tmp/v2/"* ]]; then
    pass "pip install --no-index ./python (build isolation, offline) installs the self-contained package"
else
    fail "pip install --no-index ./python (build isolation, offline)" "$(tail -3 "$tmp/pip2.log" | tr '\n' ' ') $out"
fi
record() { "$PY" -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print(z.read([n for n in z.namelist() if n.endswith("/RECORD")][0]).decode())' "$1"; }
if clean "$tmp/v2/bin/python" -m pip wheel --no-index --no-deps -w "$tmp/wheels" "$PWD/python" >"$tmp/pip3.log" 2>&1 &&
   [ -f "$tmp/wheels/${whl##*/}" ] && [ "$(record "$tmp/wheels/${whl##*/}")" = "$(record "$whl")" ]; then
    pass "pip wheel --no-index ./python writes ${whl##*/}, the same files as make wheel"
else
    fail "pip wheel --no-index ./python writes the same wheel as make wheel" "$(ls "$tmp/wheels" 2>&1) $(tail -3 "$tmp/pip3.log" | tr '\n' ' ')"
fi
exit $((failures > 0))
