#!/usr/bin/env bash
# Work longer than one 10-minute call, on the lent GPU machine while it stays warm.
#   bash benchmarks/gpu_background.sh start SECONDS GROUP [GROUP ...]
#   bash benchmarks/gpu_background.sh collect SECONDS
# `start` copies the working tree to $SESSION/repo and runs each GROUP there, one after another, in
# a detached process session (setsid): a GROUP is gpu_run.sh stages joined by '+', e.g. check or
# bench:all. Each group gets its own output folder, $SESSION/out/<i>-<group>/ (run.tgz and, for a
# clean check, verified/). Both commands then wait up to SECONDS for all groups to finish and copy
# every output folder, finished or not, to $OUT. Only one background session runs at a time.
# The commit the tree came from travels in BENCH_GIT_COMMIT (the machine gets no .git).
set -u
SESSION=${SESSION:-/tmp/tit-gpu-session}
OUT=${OUT:-/tmp/out}
cmd=${1:-}; wait_s=${2:-0}; shift 2 || true

if [ "$cmd" = start ]; then
  if [ -f "$SESSION/pid" ] && kill -0 "$(cat "$SESSION/pid")" 2>/dev/null; then
    echo "a background session is already running ($SESSION)"; exit 2
  fi
  rm -rf "$SESSION"; mkdir -p "$SESSION/out"
  cp -a . "$SESSION/repo"
  printf '%s\n' "$@" > "$SESSION/groups"
  setsid bash -c '
    cd "$0/repo" || exit 1
    i=0
    while read -r g; do
      i=$((i + 1)); name="$i-${g//[^A-Za-z0-9_.+-]/_}"
      echo "$(date -u +%FT%TZ) start $name" >> "$0/progress"
      OUT="$0/out/$name" bash benchmarks/gpu_run.sh ${g//+/ } > "$0/out/$name.txt" 2>&1
      echo "$(date -u +%FT%TZ) end $name rc=$?" >> "$0/progress"
    done < "$0/groups"
    touch "$0/done"' "$SESSION" < /dev/null > "$SESSION/runner.txt" 2>&1 &
  echo $! > "$SESSION/pid"
elif [ "$cmd" != collect ]; then
  echo "usage: $0 start SECONDS GROUP [GROUP ...] | collect SECONDS"; exit 2
fi

t0=$(date +%s)
while [ ! -f "$SESSION/done" ] && (( $(date +%s) - t0 < wait_s )); do sleep 5; done
mkdir -p "$OUT"
cp -r "$SESSION/out/." "$OUT/" 2>/dev/null
cp "$SESSION/progress" "$OUT/progress.txt" 2>/dev/null
cat "$SESSION/progress" 2>/dev/null; cat "$SESSION/out/"*.txt 2>/dev/null | tail -40
[ -f "$SESSION/done" ] && echo "all groups done" || echo "still running after ${wait_s} s"
