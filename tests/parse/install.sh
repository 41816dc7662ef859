#!/bin/bash
# make install puts the tools, the library (libcdsl.a; libcdsl.so with its SONAME link), its
# header, the device library's headers (include/cdsl/), the stdlib, a pkg-config file and a CMake package (cdslConfig.cmake) under PREFIX,
# and the installed cdslc finds the installed stdlib for imports; a program built against the
# installed header and library links through pkg-config, and a CMake project links it through
# find_package(cdsl) with cdsl::cdsl (libcdsl.so) and cdsl::cdsl_static (libcdsl.a).
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
if make -s install PREFIX="$t/usr" >"$t/log" 2>&1; then echo "[PASS] make install"; else echo "[FAIL] make install: $(tail -3 "$t/log" | tr '\n' ' ')"; exit 1; fi
for f in bin/cdslc bin/cdslrun lib/libcdsl.a lib/libcdsl.so lib/libcdsl.so.0 include/cdsl.h lib/pkgconfig/cdsl.pc \
    lib/cmake/cdsl/cdslConfig.cmake lib/cmake/cdsl/cdslConfigVersion.cmake share/cdsl/stdlib/allgather_ring.cdsl \
    include/cdsl/cdsl_device.cuh include/cdsl/cdsl_p2p.cuh include/cdsl/cdsl_nvls.cuh include/cdsl/cdsl_plan.cuh include/cdsl/abi.h; do
    [ -e "$t/usr/$f" ] && echo "[PASS] installed $f" || echo "[FAIL] installed $f: missing"
done
printf 'import "allgather_ring.cdsl";\n' > "$t/user.cdsl"
if (cd "$t" && usr/bin/cdslc user.cdsl -n 4 --program allgather_ring); then echo "[PASS] installed cdslc imports the installed stdlib"
else echo "[FAIL] installed cdslc imports the installed stdlib"; fi
printf '#include <cdsl.h>\n#include <stdio.h>\nint main(void) { printf("%%s\\n", cdsl_version()); return 0; }\n' > "$t/v.c"
flags=$(sed -n 's/^Cflags: //p;s/^Libs: //p' "$t/usr/lib/pkgconfig/cdsl.pc" | sed "s|\${includedir}|$t/usr/include|;s|\${libdir}|$t/usr/lib|" | tr '\n' ' ')
if cc -o "$t/v" "$t/v.c" $flags -Wl,-rpath,"$t/usr/lib" 2>"$t/cc.log" && "$t/v" | grep -q '^[0-9]'; then echo "[PASS] links with the pkg-config flags"
else echo "[FAIL] links with the pkg-config flags: $(head -3 "$t/cc.log" | tr '\n' ' ')"; fi

# CMake: one project, both targets, and a version request the installation cannot meet.
if ! command -v cmake >/dev/null; then echo "[SKIP] cmake: not installed"; exit 0; fi
version=$(sed -n 's/^VERSION *= *//p' Makefile)
mkdir -p "$t/proj"
cp "$t/v.c" "$t/proj/v.c"
cat >"$t/proj/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.13)
project(user C)
find_package(cdsl 0.1 REQUIRED)
add_executable(v_shared v.c)
target_link_libraries(v_shared PRIVATE cdsl::cdsl)
add_executable(v_static v.c)
target_link_libraries(v_static PRIVATE cdsl::cdsl_static)
find_package(cdsl 99 QUIET)
message(STATUS "cdsl 99 found: \${cdsl_FOUND}")
CMAKE
if cmake -S "$t/proj" -B "$t/proj/b" -DCMAKE_PREFIX_PATH="$t/usr" >"$t/cmake.log" 2>&1 &&
    cmake --build "$t/proj/b" >>"$t/cmake.log" 2>&1; then
    echo "[PASS] a CMake project builds with find_package(cdsl) and cdsl::cdsl, cdsl::cdsl_static"
else
    echo "[FAIL] a CMake project builds with find_package(cdsl): $(grep -m3 -iE 'error|not found' "$t/cmake.log" | tr '\n' ' ')"
fi
[ "$("$t/proj/b/v_shared" 2>&1)" = "$version" ] && echo "[PASS] cdsl::cdsl runs (libcdsl.so)" ||
    echo "[FAIL] cdsl::cdsl runs (libcdsl.so): $("$t/proj/b/v_shared" 2>&1 | head -2)"
[ "$("$t/proj/b/v_static" 2>&1)" = "$version" ] && echo "[PASS] cdsl::cdsl_static runs (libcdsl.a)" ||
    echo "[FAIL] cdsl::cdsl_static runs (libcdsl.a)"
grep -q 'cdsl 99 found: 0' "$t/cmake.log" && echo "[PASS] find_package(cdsl 99) is refused by cdslConfigVersion.cmake" ||
    echo "[FAIL] find_package(cdsl 99) is refused by cdslConfigVersion.cmake: $(grep 'cdsl 99' "$t/cmake.log")"
