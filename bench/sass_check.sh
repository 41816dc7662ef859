#!/bin/bash
# bench/sass_check.sh - the nvls device code, compiled and read, never run.
#
#   bench/sass_check.sh [DIR]      allgather_nvls and allreduce_nvls from DIR (default: stdlib/,
#                                  else tests/spec); ARCH (default sm_90), OUT
#
# On the shared GPU hosts the nvls backend must not run (a multicast object can take their GPUs
# out of service for a day or more), so its code is
# verified here by compiling it (cdslc --emit-cubin --backend nvls, through NVRTC; no driver
# call, no multicast object) and reading the SASS with cuobjdump:
#   - which SASS opcodes multimem becomes is learned on the spot: two reference kernels, one
#     with multimem.ld_reduce/st/red and one with the same plain ld/st/red, are compiled with
#     nvcc and their opcode sets compared; the opcodes only the first has are the multimem
#     family (we do not guess their names);
#   - each program's nvls cubin must contain those opcodes, and its p2p cubin none of them
#     (the p2p flavour emulates the switch with unicast memory);
#   - 128-bit global stores and loads (".128") show that data moves in 16-byte packs.
# SAFETY: the NVLS-off variables are exported; nothing here launches a kernel.
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 2
bash bench/gpu_check.sh --build || exit 3    # make, unless CDSLC/CDSLRUN name other binaries
CDSLC=${CDSLC:-build/cdslc} CDSLRUN=${CDSLRUN:-build/cdslrun}

DIR=${1:-}
if [ -z "$DIR" ]; then
    if compgen -G 'stdlib/*.cdsl' >/dev/null; then DIR=stdlib; else DIR=tests/spec; fi
fi
ARCH=${ARCH:-sm_90}
LOGS=${OUT:+$OUT/sass}
LOGS=${LOGS:-$(mktemp -d /tmp/sass.XXXXXX)}
mkdir -p "$LOGS"
PATH=$PATH:/usr/local/cuda/bin
CUOBJDUMP=$(command -v cuobjdump) || { echo "error: no cuobjdump (CUDA toolkit) here"; exit 3; }
echo "# SASS check: $ARCH, programs from $DIR, files in $LOGS"

# The opcodes of a SASS listing, one per line ("STG.E.128"), predicates dropped.
opcodes() {
    sed -n 's|^ *\/\*[0-9a-f]\{4,\}\*\/ *||p' "$1" | sed 's/^@!*U*P[0-9T] *//' | awk '{print $1}' |
        sed 's/[ ;].*//' | grep -E '^[A-Z]' | sort -u
}

# ---- 1. what multimem looks like in SASS ---------------------------------------------------------------
reference() {
    local kind=$1
    local ldr st red
    if [ "$kind" = multimem ]; then
        ldr='multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0,%1,%2,%3}, [%4];'
        st='multimem.st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};'
        red='multimem.red.release.sys.global.add.u64 [%0], 1;'
    else
        ldr='ld.relaxed.sys.global.v4.f32 {%0,%1,%2,%3}, [%4];'
        st='st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};'
        red='red.release.sys.global.add.u64 [%0], 1;'
    fi
    cat >"$LOGS/ref_$kind.cu" <<EOF
// Reference kernel for bench/sass_check.sh: $kind loads, stores and reductions. Compiled only.
extern "C" __global__ void ref(float *a, float *b, unsigned long long *c)
{
    float4 v;
    float *p = a + 4 * threadIdx.x;
    asm volatile("$ldr" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p) : "memory");
    asm volatile("$st" : : "l"(b + 4 * threadIdx.x), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
    asm volatile("$red" : : "l"(c) : "memory");
}
EOF
    nvcc -arch="$ARCH" -cubin -o "$LOGS/ref_$kind.cubin" "$LOGS/ref_$kind.cu" &&
        "$CUOBJDUMP" -sass "$LOGS/ref_$kind.cubin" >"$LOGS/ref_$kind.sass"
}

MM=""
if command -v nvcc >/dev/null && reference multimem && reference plain; then
    MM=$(comm -23 <(opcodes "$LOGS/ref_multimem.sass") <(opcodes "$LOGS/ref_plain.sass") | tr '\n' ' ')
    echo "# multimem becomes, in $ARCH SASS: ${MM:-(no opcode of its own?)}"
    echo "#   reference multimem kernel:"; opcodes "$LOGS/ref_multimem.sass" | tr '\n' ' ' | sed 's/^/#     /'; echo
    echo "#   reference plain kernel:   "; opcodes "$LOGS/ref_plain.sass" | tr '\n' ' ' | sed 's/^/#     /'; echo
else
    echo "# no nvcc: multimem opcodes are taken as those in the nvls cubin and not in the p2p one"
fi

# ---- 2. our programs --------------------------------------------------------------------------------------
fails=0
# What the reference kernels showed on sm_90 (2026-11-29): multimem.ld_reduce has an opcode of
# its own (LDGMC), but multimem.st and multimem.red become the ordinary STG / REDG: the
# multicast is in the address, not in the instruction. So the check is two-level: the PTX of
# the nvls flavour must hold the multimem instructions (and the p2p PTX none), and the SASS
# must hold the LDGMC family wherever the program load-reduces through the switch.
printf "\n%-18s %-6s %7s %9s  %-40s %9s %9s\n" program flavour instrs "ptx-mm" "SASS multimem-only opcodes (count)" "st.128" "ld.128"
for name in allgather_nvls allreduce_nvls; do
    f=$DIR/$name.cdsl
    [ -f "$f" ] || { echo "$name: no $f"; fails=$((fails + 1)); continue; }
    for flavour in nvls p2p; do
        cubin=$LOGS/${name}_$flavour.cubin sass=$LOGS/${name}_$flavour.sass
        if ! "$CDSLC" "$f" -n 2 --backend "$flavour" --emit-cubin --arch "$ARCH" -o "$cubin" 2>"$sass.err"; then
            echo "$name $flavour: cdslc failed: $(head -3 "$sass.err" | tr '\n' ' ')"
            fails=$((fails + 1))
            continue
        fi
        "$CUOBJDUMP" -sass "$cubin" >"$sass"
        "$CDSLC" "$f" -n 2 --backend "$flavour" --emit-ptx --arch "$ARCH" -o "$LOGS/${name}_$flavour.ptx" 2>>"$sass.err"
    done
    nv=$LOGS/${name}_nvls.sass p2=$LOGS/${name}_p2p.sass
    { [ -s "$nv" ] && [ -s "$p2" ]; } || continue
    fam=$MM
    [ -n "$fam" ] || fam=$(comm -23 <(opcodes "$nv" | sed 's/\..*//' | sort -u) <(opcodes "$p2" | sed 's/\..*//' | sort -u) | tr '\n' ' ')
    for flavour in nvls p2p; do
        sass=$LOGS/${name}_$flavour.sass
        counts="" total=0
        for op in $fam; do
            c=$(grep -cE "[[:space:]]${op//./\\.}[[:space:].;]" "$sass")
            [ "$c" -gt 0 ] && counts="$counts$op($c) "
            total=$((total + c))
        done
        instrs=$(grep -cE '^ +/\*[0-9a-f]{4,}\*/ +[@A-Z]' "$sass")
        st128=$(grep -cE '[[:space:]](ST|STG|STS)\.[A-Z0-9.]*128' "$sass")
        ld128=$(grep -cE '[[:space:]](LD|LDG)\.[A-Z0-9.]*128' "$sass")
        ptxmm=$(grep -cE '^[[:space:]]*multimem\.' "$LOGS/${name}_$flavour.ptx" 2>/dev/null)
        printf "%-18s %-6s %7s %9s  %-40s %9s %9s\n" "$name" "$flavour" "$instrs" "${ptxmm:-0}" "${counts:--}" "$st128" "$ld128"
        if [ "$flavour" = nvls ] && [ "${ptxmm:-0}" = 0 ]; then echo "  FAIL: no multimem instruction in the nvls PTX"; fails=$((fails + 1)); fi
        if [ "$flavour" = nvls ] && [ "$total" = 0 ] && grep -q 'switch\.reduce' "$f"; then echo "  FAIL: no multimem load-reduce in the nvls SASS"; fails=$((fails + 1)); fi
        if [ "$flavour" = p2p ] && { [ "${ptxmm:-0}" != 0 ] || { [ "$total" != 0 ] && [ -n "$MM" ]; }; }; then echo "  FAIL: multimem in the p2p code"; fails=$((fails + 1)); fi
    done
done
echo
echo "# every opcode of the nvls cubins (for review):"
for name in allgather_nvls allreduce_nvls; do
    [ -s "$LOGS/${name}_nvls.sass" ] && echo "#   $name: $(opcodes "$LOGS/${name}_nvls.sass" | tr '\n' ' ')"
done
echo "# $fails problems"
[ $fails = 0 ]
