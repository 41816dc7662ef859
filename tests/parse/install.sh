#!/bin/bash
# make install puts the tools, the library, its header, the stdlib and a pkg-config file under
# PREFIX, and the installed cdslc finds the installed stdlib for imports; a program built
# against the installed header and library links.
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
if make -s install PREFIX="$t/usr" >"$t/log" 2>&1; then echo "[PASS] make install"; else echo "[FAIL] make install: $(tail -3 "$t/log" | tr '\n' ' ')"; exit 1; fi
for f in bin/cdslc bin/cdslrun lib/libcdsl.a lib/libcdsl.so include/cdsl.h lib/pkgconfig/cdsl.pc share/cdsl/stdlib/allgather_ring.cdsl; do
    [ -e "$t/usr/$f" ] && echo "[PASS] installed $f" || echo "[FAIL] installed $f: missing"
done
printf 'import "allgather_ring.cdsl";\n' > "$t/user.cdsl"
if (cd "$t" && usr/bin/cdslc user.cdsl -n 4 --program allgather_ring); then echo "[PASS] installed cdslc imports the installed stdlib"
else echo "[FAIL] installed cdslc imports the installed stdlib"; fi
printf '#include <cdsl.h>\n#include <stdio.h>\nint main(void) { printf("%%s\\n", cdsl_version()); return 0; }\n' > "$t/v.c"
flags=$(sed -n 's/^Cflags: //p;s/^Libs: //p' "$t/usr/lib/pkgconfig/cdsl.pc" | sed "s|\${includedir}|$t/usr/include|;s|\${libdir}|$t/usr/lib|" | tr '\n' ' ')
if cc -o "$t/v" "$t/v.c" $flags -Wl,-rpath,"$t/usr/lib" 2>"$t/cc.log" && "$t/v" | grep -q '^[0-9]'; then echo "[PASS] links with the pkg-config flags"
else echo "[FAIL] links with the pkg-config flags: $(head -3 "$t/cc.log" | tr '\n' ' ')"; fi
