#!/usr/bin/env bash
# Where in their loops the Gluon attention kernels' warps wait: Nsight Compute's warp-state samples,
# instruction by instruction.
#
#   OUT=/some/folder [CASES="gluon_d64_causal_1024 gluon_bwd_d64_1024@dq_kernel ..."] bash benchmarks/evidence/attention/profile_gluon_sass.sh
#
# Each case of benchmarks/evidence/attention/profile_gluon.py (default: the Gluon forward at fp16, head
# dim 64, causal, seq 1024, and at head dim 128, seq 1024; batch 32 x 16) runs in its own process under
# ncu, which profiles the first kernel of its one call (the warm-up calls run outside the profiled
# window, as in profile_missed.sh; CASE@REGEX: the call's first kernel whose name matches REGEX,
# e.g. gluon_bwd_d64_1024@dkdv, its files named CASE_REGEX) with the SourceCounters and WarpStateStats sections: the program
# counter is sampled across the kernel's run, and each sample says what the warp was doing.
# Writes, under "$OUT/sass/": <case>.ncu-rep (the report), <case>.sass.csv (the report's source page:
# one row per SASS instruction with its samples, `ncu -i ... --page source --csv --print-source sass`),
# <case>.details.csv (the sections' metrics, the kernel's stall reasons among them), <case>.log,
# <case>.meta.json, <case>.rc, ncu_version.txt and gpu.csv.
set -u -o pipefail
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT to the folder the results go to}"
PY=${PYTHON:-python3}
NCU=${NCU:-ncu}
DIR="$OUT/sass"
mkdir -p "$DIR"
"$NCU" --version > "$DIR/ncu_version.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,power.limit --format=csv \
  > "$DIR/gpu.csv" 2>&1 || true
export TORCHINDUCTOR_COMPILE_THREADS=1
for spec in ${CASES:-gluon_d64_causal_1024 gluon_d128_1024}; do
  case_name=${spec%%@*}; kernel=${spec#*@}; [ "$kernel" = "$spec" ] && kernel=""
  name=$case_name${kernel:+_$kernel}
  timeout -k 10 150 "$NCU" --clock-control none --profile-from-start off --replay-mode kernel \
    --target-processes application-only --launch-count 1 ${kernel:+--kernel-name "regex:$kernel"} \
    --section SourceCounters --section WarpStateStats --import-source no -f -o "$DIR/$name" \
    "$PY" benchmarks/evidence/attention/profile_gluon.py benchmarks/evidence/overview/profile_missed.py \
    "$case_name" --meta "$DIR/$name.meta.json" < /dev/null > "$DIR/$name.log" 2>&1
  echo $? > "$DIR/$name.rc"
  "$NCU" -i "$DIR/$name.ncu-rep" --page source --csv --print-source sass \
    > "$DIR/$name.sass.csv" 2>> "$DIR/$name.log"
  page=$?
  "$NCU" -i "$DIR/$name.ncu-rep" --page details --csv > "$DIR/$name.details.csv" 2>> "$DIR/$name.log"
  echo "$name: ncu rc=$(cat "$DIR/$name.rc"), source page rc=$page, $(wc -l < "$DIR/$name.sass.csv") lines"
done
