#!/usr/bin/env bash
# Nsight Compute counters of the kernels that miss a speed target, and of the peer that beats each one.
#
#   OUT=/some/folder bash benchmarks/evidence/overview/profile_missed.sh [CASE ...]
#
# Runs each case of benchmarks/evidence/overview/profile_missed.py (all of them, or those named) in its
# own process under ncu, one after another: the case's warm-up calls run outside the profiled window and
# ncu (--profile-from-start off) profiles the kernels of its one call between cudaProfilerStart and
# cudaProfilerStop. Each ncu run has the case's own time limit (`timeout`), and the whole script keeps
# within BUDGET seconds (default 280): a case that would start with less than 20 s left is skipped.
# Writes, under "$OUT/profile/": <case>.csv (ncu --csv --page raw), <case>.log (ncu's messages and the
# program's output), <case>.meta.json (GPU, versions, the point, an autotuned kernel's pick), <case>.cmd
# (the exact ncu command), <case>.rc (its exit status, or "skipped"), ncu_version.txt, gpu.csv and run.txt;
# then "$OUT/profile_missed.json", the summary (profile_missed.py --summarize), whose table it also prints.
set -u -o pipefail
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT to the folder the results go to}"
PY=${PYTHON:-python3}
NCU=${NCU:-ncu}
BUDGET=${BUDGET:-280}
RESERVE=20  # seconds kept for the last kill grace period and the summary
PROBE=benchmarks/evidence/overview/profile_missed.py
# Inductor compiles the torch.compile peers in this process, not in a pool of worker processes started
# under ncu's injection (the kernels it generates are the same)
export TORCHINDUCTOR_COMPILE_THREADS=1
DIR="$OUT/profile"
mkdir -p "$DIR"
start=$SECONDS

{
  echo "command: OUT=$OUT bash benchmarks/evidence/overview/profile_missed.sh $*"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "budget_s: $BUDGET"
  echo "env: TORCHINDUCTOR_COMPILE_THREADS=$TORCHINDUCTOR_COMPILE_THREADS"
} > "$DIR/run.txt"
"$NCU" --version > "$DIR/ncu_version.txt" 2>&1 || echo "ncu --version failed" >> "$DIR/ncu_version.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit --format=csv \
  > "$DIR/gpu.csv" 2>&1 || true

SECTIONS=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
          --section MemoryWorkloadAnalysis)
# beside the sections: the duration, DRAM bytes and local-memory (register spill) traffic, by name
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
METRICS+=,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum
METRICS+=,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum

cases=$("$PY" "$PROBE" --list "$@") || { echo "unknown case in: $*" >&2; exit 2; }
while read -r name limit; do
  left=$((BUDGET - RESERVE - (SECONDS - start)))
  if [ "$left" -lt 20 ]; then
    echo "skipped" > "$DIR/$name.rc"
    echo "== $name: skipped (${left} s of the budget left)"
    continue
  fi
  t=$((limit < left ? limit : left))
  cmd=("$NCU" --clock-control none --profile-from-start off --replay-mode kernel
       --target-processes application-only --launch-count 16
       "${SECTIONS[@]}" --metrics "$METRICS" --csv --page raw --print-units base
       "$PY" "$PROBE" "$name" --meta "$DIR/$name.meta.json")
  printf '%s ' "${cmd[@]}" > "$DIR/$name.cmd"
  echo >> "$DIR/$name.cmd"
  t0=$SECONDS
  timeout -k 10 "$t" "${cmd[@]}" > "$DIR/$name.csv" 2> "$DIR/$name.log" < /dev/null
  rc=$?
  echo "$rc" > "$DIR/$name.rc"
  echo "== $name: exit $rc, $((SECONDS - t0)) s (limit $t s)"
done <<< "$cases"

"$PY" "$PROBE" --summarize "$DIR" --out "$OUT/profile_missed.json"
echo "== total $((SECONDS - start)) s; summary: $OUT/profile_missed.json"
