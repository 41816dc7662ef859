#!/bin/bash
# examples/rank_launch.sh N PROGRAM [ARGS...] - start N processes of PROGRAM, one per rank, for
# examples/rank_example.c without MPI: each gets CDSL_RANK, CDSL_LOCAL_RANK, CDSL_NRANKS and
# CDSL_ID_FILE (a fresh file name through which rank 0 passes the unique id). Waits for all;
# when one fails, stops the others. Exit status: the first failure's, or 0.
[ $# -ge 2 ] || { echo "usage: $0 N PROGRAM [ARGS...]" >&2; exit 2; }
n=$1; shift
dir=$(mktemp -d) || exit 3
trap 'rm -rf "$dir"' EXIT
export CDSL_NRANKS=$n CDSL_ID_FILE=$dir/id
pids=()
for ((r = 0; r < n; r++)); do
    CDSL_RANK=$r CDSL_LOCAL_RANK=$r "$@" &
    pids+=($!)
done
status=0
for ((left = n; left > 0; left--)); do
    wait -n; rc=$?
    if [ $rc != 0 ] && [ $status = 0 ]; then
        status=$rc
        sleep 1                       # let the others report the failure, then stop them
        kill "${pids[@]}" 2>/dev/null
    fi
done
exit $status
