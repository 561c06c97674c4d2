#!/usr/bin/env bash
# A rank that stops answering and a rank that dies, in data-parallel training on 2 ranks
# (tests/distributed_fault.cpp): the job must end with a non-zero exit status, and a message
# saying why, well within a minute (TG_DIST_TIMEOUT=5).
#   usage: tests/distributed_fault.sh MPIRUN PROGRAM
set -u
mpirun=$1 program=$2
status=0
for mode in hang kill; do
  start=$(date +%s)
  out=$(TG_DIST_TIMEOUT=5 timeout 120 "$mpirun" --oversubscribe -np 2 "$program" "$mode" 2>&1)
  rc=$?
  elapsed=$(($(date +%s) - start))
  echo "$out" | grep -v "^rank [01]: step" | head -30
  echo "distributed_fault: $mode: exit status $rc after $elapsed s"
  if ((rc == 0 || rc == 124 || elapsed > 60)); then
    echo "distributed_fault: FAIL: $mode: expected a non-zero exit within 60 s" >&2
    status=1
  fi
  # hang: tg's own timeout on rank 0; kill: the launcher's report of the dead rank (it ends the
  # job before any timeout)
  want='tg.distributed.all_reduce: rank 0 waited 5 s'
  [[ $mode == kill ]] && want='signal 9|Killed'
  if ! grep -qE "$want" <<<"$out"; then
    echo "distributed_fault: FAIL: $mode: the output does not say '$want'" >&2
    status=1
  fi
done
exit $status
