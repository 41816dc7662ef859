#!/bin/bash
# tests/parse/install.sh - make install puts the tools, the library (libcdsl.a; libcdsl.so with
# its SONAME link), its header, the device library's headers (include/cdsl/), the stdlib, a
# pkg-config file and a CMake package (cdslConfig.cmake) under PREFIX, and the installed cdslc
# finds the installed stdlib for imports. Then a user's program (install_user.c: it compiles
# a stdlib program with cdsl_compile and runs it on sim, so it needs all of the library,
# jansson included) is built against the installed tree only, and run, four ways:
# pkg-config (libcdsl.so), pkg-config --static (libcdsl.a, with Libs.private and
# Requires.private), and CMake's find_package(cdsl) with cdsl::cdsl and cdsl::cdsl_static.
source "$(dirname "$0")/../lib/common.bash"
t=$tmp
if make -s install PREFIX="$t/usr" >"$t/log" 2>&1; then pass "make install"; else fail "make install" "$(tail -3 "$t/log" | tr '\n' ' ')"; exit 1; fi
for f in bin/cdslc bin/cdslrun lib/libcdsl.a lib/libcdsl.so lib/libcdsl.so.0 include/cdsl.h lib/pkgconfig/cdsl.pc \
    lib/cmake/cdsl/cdslConfig.cmake lib/cmake/cdsl/cdslConfigVersion.cmake share/cdsl/stdlib/allgather_ring.cdsl \
    include/cdsl/cdsl_device.cuh include/cdsl/cdsl_p2p.cuh include/cdsl/cdsl_nvls.cuh include/cdsl/cdsl_packets.cuh include/cdsl/abi.h; do
    [ -e "$t/usr/$f" ] && pass "installed $f" || fail "installed $f" "missing"
done
printf 'import "allgather_ring.cdsl";\n' > "$t/user.cdsl"
if (cd "$t" && usr/bin/cdslc user.cdsl -n 4 --program allgather_ring); then pass "installed cdslc imports the installed stdlib"
else fail "installed cdslc imports the installed stdlib"; fi

# The user's program runs from its own folder; the library finds the stdlib through CDSL_PATH.
export CDSL_PATH=$t/usr/share/cdsl/stdlib
want="install_user: allgather_ring verified on sim, 4 ranks"
# runs NAME BINARY: the program ran and verified.
runs() {
    local out
    out=$(cd "$t" && timeout 60 "$2" 2>&1)
    [ "$out" = "$want" ] && pass "$1: runs allgather_ring on sim, verified" || fail "$1: runs" "$(echo "$out" | head -3 | tr '\n' ' ')"
}
cp tests/parse/install_user.c "$t/user.c"
CFLAGS_USER="-std=c11 -Wall -Wextra -Werror"

if need pkg-config pkg-config "the pkg-config links"; then
    export PKG_CONFIG_PATH=$t/usr/lib/pkgconfig
    # Shared: Libs only; the program needs libcdsl.so.0, which brings jansson itself.
    if cc $CFLAGS_USER -o "$t/pc_shared" "$t/user.c" $(pkg-config --cflags --libs cdsl) -Wl,-rpath,"$t/usr/lib" 2>"$t/cc.log"; then
        readelf -d "$t/pc_shared" | grep -q 'NEEDED.*\[libcdsl.so.0\]' && pass "pkg-config --libs cdsl links libcdsl.so" ||
            fail "pkg-config --libs cdsl links libcdsl.so" "$(readelf -d "$t/pc_shared" | grep NEEDED | tr '\n' ' ')"
        runs "pkg-config (libcdsl.so)" "$t/pc_shared"
    else
        fail "pkg-config --libs cdsl: links a program that calls cdsl_compile" "$(head -3 "$t/cc.log" | tr '\n' ' ')"
    fi
    # Static: libcdsl.a named by its path in place of -lcdsl (which would take the .so), with
    # what --static adds: Libs.private and the libraries of Requires.private.
    libs=$(pkg-config --static --libs cdsl | sed "s|-lcdsl\\b|$t/usr/lib/libcdsl.a|")
    if cc $CFLAGS_USER -o "$t/pc_static" "$t/user.c" $(pkg-config --cflags cdsl) $libs 2>"$t/cc.log"; then
        ! readelf -d "$t/pc_static" | grep -q 'NEEDED.*libcdsl' && pass "pkg-config --static --libs cdsl links libcdsl.a" ||
            fail "pkg-config --static --libs cdsl links libcdsl.a" "it needs libcdsl.so"
        runs "pkg-config --static (libcdsl.a)" "$t/pc_static"
    else
        fail "pkg-config --static --libs cdsl: links a program that calls cdsl_compile" "$libs: $(grep -m3 'error\|undefined' "$t/cc.log" | tr '\n' ' ')"
    fi
    grep -q '^Libs: -L${libdir} -lcdsl$' "$t/usr/lib/pkgconfig/cdsl.pc" &&
        pass "cdsl.pc: Libs has -lcdsl only; what libcdsl.a needs is private" ||
        fail "cdsl.pc: Libs has -lcdsl only" "$(grep '^Libs' "$t/usr/lib/pkgconfig/cdsl.pc" | tr '\n' ' ')"
fi

# CMake: one project, both targets, and a version request the installation cannot meet.
need cmake cmake "the CMake package" || exit $((failures > 0))
version=$(sed -n 's/^VERSION *= *//p' Makefile)
mkdir -p "$t/proj"
cp "$t/user.c" "$t/proj/user.c"
cat >"$t/proj/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.13)
project(user C)
find_package(cdsl 0.1 REQUIRED)
add_executable(user_shared user.c)
target_link_libraries(user_shared PRIVATE cdsl::cdsl)
add_executable(user_static user.c)
target_link_libraries(user_static PRIVATE cdsl::cdsl_static)
find_package(cdsl 99 QUIET)
message(STATUS "cdsl 99 found: \${cdsl_FOUND}")
CMAKE
if cmake -S "$t/proj" -B "$t/proj/b" -DCMAKE_PREFIX_PATH="$t/usr" >"$t/cmake.log" 2>&1; then
    pass "find_package(cdsl 0.1) finds the installed package"
else
    fail "find_package(cdsl 0.1)" "$(grep -m3 -iE 'error|not found' "$t/cmake.log" | tr '\n' ' ')"
fi
for target in shared static; do
    if cmake --build "$t/proj/b" --target user_$target >"$t/build_$target.log" 2>&1; then
        runs "CMake cdsl::cdsl$([ $target = static ] && echo _static)" "$t/proj/b/user_$target"
    else
        fail "CMake cdsl::cdsl$([ $target = static ] && echo _static): links a program that calls cdsl_compile" \
            "$(grep -m3 -E 'error|undefined' "$t/build_$target.log" | tr '\n' ' ')"
    fi
done
readelf -d "$t/proj/b/user_static" 2>/dev/null | grep -q 'NEEDED.*libcdsl' && fail "cdsl::cdsl_static links libcdsl.a" "it needs libcdsl.so"
grep -q 'cdsl 99 found: 0' "$t/cmake.log" && pass "find_package(cdsl 99) is refused by cdslConfigVersion.cmake" ||
    fail "find_package(cdsl 99) is refused by cdslConfigVersion.cmake" "$(grep 'cdsl 99' "$t/cmake.log")"
exit $((failures > 0))
