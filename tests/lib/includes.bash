# tests/lib/includes.bash - the -I flags of the library's source folders, for the scripts that
# compile tests against its internal headers: every folder of compiler/ and runtime/ but
# runtime/device/ (CUDA only), as the Makefile's SRC_DIRS has them. Source it after the cd to
# the repository root.
CDSL_INCLUDES=""
for _d in compiler compiler/*/ runtime runtime/*/; do
    _d=${_d%/}
    [ "$_d" = runtime/device ] || CDSL_INCLUDES="$CDSL_INCLUDES -I$_d"
done
CDSL_INCLUDES=${CDSL_INCLUDES# }
unset _d
