#!/bin/bash
# Bad input of every kind gets a clear error and exit 1 (errors in the program) or 2 (bad usage,
# also a program file that cannot be read): never a crash, a hang, or a stack overflow. Run
# against the ASan/UBSan build when there is one, so memory errors fail too.
c=${ASAN_CDSLC:-build/asan/cdslc}; [ -x "$c" ] || c=${CDSLC:-build/cdslc}
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
check() {   # name, expected exit, message pattern, command...
    local name=$1 want=$2 pat=$3; shift 3
    local out rc
    out=$(timeout 60 "$@" 2>&1); rc=$?
    if [ "$rc" = "$want" ] && echo "$out" | grep -q -- "$pat"; then echo "[PASS] $name"
    else echo "[FAIL] $name: exit $rc (wanted $want); $(echo "$out" | head -3 | tr '\n' ' ')"; fi
}
head -c 4096 /dev/urandom > "$t/junk.cdsl"; printf '\x00\xff\x01garbage' >> "$t/junk.cdsl"
printf '\x7fELF\x02\x01\x01\x00' > "$t/elf.cdsl"
: > "$t/empty.cdsl"
# 10 MB of valid text: one program, then comments.
{ echo 'program big implements barrier { switch.signal(relaxed); switch.wait(relaxed); }'
  yes '// padding padding padding padding padding padding padding padding padding' | head -c 10000000; } > "$t/big.cdsl"
# 10 MB on one line, no newline at all.
head -c 10000000 /dev/zero | tr '\0' 'a' > "$t/oneline.cdsl"
# rep TEXT N: TEXT N times (awk, part of every Debian system: these inputs need no Python).
rep() { awk -v t="$1" -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s", t }'; }
{ printf 'program p implements barrier {'; rep 'if 1 {' 10000; rep '}' 10000; echo '}'; } > "$t/nested.cdsl"
{ printf 'program p implements barrier { let x = '; rep '(' 10000; printf 1; rep ')' 10000; echo '; }'; } > "$t/parens.cdsl"
{ printf 'program p implements barrier { let x = '; rep '-' 100000; echo '1; }'; } > "$t/unary.cdsl"
{ printf 'program p implements barrier { let x = '; rep '1+' 199999; echo '1; }'; } > "$t/longexpr.cdsl"
printf 'program p implements barrier { /* never closed\n' > "$t/comment.cdsl"
printf 'program p implements barrier { let x = 99999999999999999999999999999999; }\n' > "$t/int.cdsl"
printf 'program p implements barrier { }\n' > "$t/ok.cdsl"
v=$(head -c 2000 /dev/zero | tr '\0' 'v')
printf 'program p implements allgather { for %s in 0 .. 2 { copy(output[9], input[0]); } }\n' "$v" > "$t/longname.cdsl"
mkdir "$t/dir.cdsl"
check "binary junk" 1 "error:" "$c" "$t/junk.cdsl" -n 2
check "an ELF header" 1 "unexpected byte 0x7f" "$c" "$t/elf.cdsl" -n 2
check "empty file" 1 "holds no program" "$c" "$t/empty.cdsl" -n 2
check "10 MB file" 0 "" "$c" "$t/big.cdsl" -n 2
check "10 MB line" 1 "holds no program\|unexpected" "$c" "$t/oneline.cdsl" -n 2
check "10000 nested blocks" 1 "nested too deeply" "$c" "$t/nested.cdsl" -n 2
check "10000 nested parentheses" 1 "nested too deeply" "$c" "$t/parens.cdsl" -n 2
check "100000 unary minus" 1 "nested too deeply" "$c" "$t/unary.cdsl" -n 2
check "200000-term expression" 1 "expression nested too deeply" "$c" "$t/longexpr.cdsl" -n 2
check "unterminated comment" 1 "unterminated comment" "$c" "$t/comment.cdsl" -n 2
check "huge integer literal" 1 "integer literal too large" "$c" "$t/int.cdsl" -n 2
check "-n 0" 2 "between 1 and 1024" "$c" "$t/ok.cdsl" -n 0
check "-n 100000" 2 "between 1 and 1024" "$c" "$t/ok.cdsl" -n 100000
check "-n -3" 2 "between 1 and 1024" "$c" "$t/ok.cdsl" -n -3
check "-n abc" 2 "expects a number" "$c" "$t/ok.cdsl" -n abc
check "-n 99999999999999999999" 2 "expects a number" "$c" "$t/ok.cdsl" -n 99999999999999999999
check "missing -n" 2 "missing -n" "$c" "$t/ok.cdsl"
check "no input file" 2 "no input file" "$c" -n 2
# A program file that cannot be read is an argument that names nothing usable: bad usage (2),
# not errors in a program (1); an import that cannot be read is an error in the program.
check "missing file: bad usage" 2 "cannot read '$t/nope.cdsl': No such file or directory" "$c" "$t/nope.cdsl" -n 2
check "a directory: bad usage" 2 "not a regular file" "$c" "$t/dir.cdsl" -n 2
check "a path through a file: bad usage" 2 "Not a directory" "$c" "$t/ok.cdsl/x.cdsl" -n 2
check "a missing plan (.json): bad usage" 2 "cannot read '$t/nope.json'" "$c" "$t/nope.json"
check "a bare name, no file and no stdlib program: bad usage, and --list named" 2 "is not a stdlib program either (cdslc --list shows them)" \
    "$c" no_such_program -n 2
check "cdslrun: missing file: bad usage" 2 "cannot read '$t/nope.cdsl'" "${CDSLRUN:-build/cdslrun}" "$t/nope.cdsl" -n 2
check "cdslrun: a bare name, no file and no stdlib program: --list named" 2 "is not a stdlib program either (cdslrun --list shows them)" \
    "${CDSLRUN:-build/cdslrun}" no_such_program -n 2
printf 'import "nope.cdsl";\nprogram p implements barrier { }\n' > "$t/imports_nothing.cdsl"
check "a missing import: an error in the program" 1 "imports_nothing.cdsl:1:8: error: cannot find import 'nope.cdsl'" "$c" "$t/imports_nothing.cdsl" -n 2
check "2000-character loop variable in a message" 1 "outside the buffer" "$c" "$t/longname.cdsl" -n 2
check "unknown option" 2 "unknown option" "$c" "$t/ok.cdsl" -n 2 --frobnicate
check "--help" 0 "usage: cdslc" "$c" --help
check "--version" 0 "cdslc [0-9]" "$c" --version
