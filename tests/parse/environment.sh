#!/bin/bash
# tests/parse/environment.sh - every environment variable the tools, the library, the Python
# package and the examples read is documented: docs/environment.md names each one
# (as `NAME`), and both tools' --help name each one the tools and the library read. The names
# come from the source: getenv("X") and the helpers around it (env_on, env_int, gpu_env_long:
# any call of a function whose name holds "env" with a literal NAME), the table of NVLS
# switches in runtime/engines/nvls.c, and os.environ reads in Python.
source "$(dirname "$0")/../lib/common.bash"
need python3 python3 || exit 0

names() {   # the variables read by the files given
    python3 - "$@" <<'PY'
import re, sys
found = set()
for path in sys.argv[1:]:
    text = open(path, errors="replace").read()
    found |= set(re.findall(r'\b\w*env\w*\(\s*"([A-Z][A-Z0-9_]*)"', text))
    found |= set(re.findall(r'\{\s*"([A-Z][A-Z0-9_]*)",\s*[01]\s*\}', text)) if path.endswith("nvls.c") else set()
    found |= set(re.findall(r'environ\.get\(\s*"([A-Z][A-Z0-9_]*)"', text))
    found |= set(re.findall(r'environ\[\s*"([A-Z][A-Z0-9_]*)"\s*\](?!\s*=[^=])', text))
print("\n".join(sorted(found)))
PY
}
# cdsl-perf's own variables (nccl-tests' NCCL_TESTS_*) are named by its --help, not cdslc's.
perf=$(names tools/cdsl-perf.c tools/perf*.c tools/perf.h)
lib=$(names $(find compiler runtime -name '*.[ch]' | sort) $(ls tools/*.c tools/*.h | grep -v -e cdsl-perf -e '/perf'))
all=$(names $(find compiler runtime -name '*.c' | sort) tools/*.c tools/*.h python/cdsl/*.py examples/*.c examples/*.py examples/*.sh)
[ "$(echo "$lib" | wc -w)" -ge 20 ] && pass "the source reads $(echo "$lib" | wc -w) variables in the library and tools, $(echo "$all" | wc -w) in all" ||
    fail "the names are found in the source" "only: $lib"
missing=""
for v in $all; do grep -q "\`$v\`" docs/environment.md || missing="$missing $v"; done
[ -z "$missing" ] && pass "docs/environment.md documents every one" || fail "docs/environment.md documents every one" "missing:$missing"
missing=""
for v in $perf; do echo "$lib" | grep -qx -- "$v" || "$(dirname "$CDSLC")/cdsl-perf" --help | grep -qw -- "$v" || missing="$missing $v"; done
[ -z "$missing" ] && pass "cdsl-perf --help names its own variables" || fail "cdsl-perf --help names its own variables" "missing:$missing"
for tool in cdslc cdslrun; do
    bin=$CDSLC; [ $tool = cdslrun ] && bin=$CDSLRUN
    help=$("$bin" --help)
    missing=""
    for v in $lib; do echo "$help" | grep -qw -- "$v" || missing="$missing $v"; done
    echo "$help" | grep -q "docs/environment.md" || missing="$missing (a pointer to docs/environment.md)"
    [ -z "$missing" ] && pass "$tool --help names every variable of the tools and the library" ||
        fail "$tool --help names every variable of the tools and the library" "missing:$missing"
done
