#!/usr/bin/env bash
# One batched run on the lent GPU machine (see README "On a GPU machine").
#   bash benchmarks/gpu_run.sh STAGE [STAGE ...]
# Stages: cases | probes | examples | tests | codeblocks | check | bench:<example>[,<example>...] | bench:all
#         | sh:<script.sh> | py:<probe.py>
# `cases` runs the re-runnable measurements of benchmarks/cases/ (CASES="schedules ..." picks them);
# `probes` runs kept probes of benchmarks/evidence/<page>/ again, PROBES="benchmarks/evidence/<page>/<name>.py ..."
# (paths, in order), each as it was written: from a scratch benchmarks/.probes/ beside _examples.py.
# Everything it prints and writes lands in $OUT/run.tgz (logs/ and results/); the `check`
# stage (scripts/gpu_check.py, CHECK_ARGS e.g. "--runs 2") writes its record, only when
# nothing failed, to $OUT/verified/<gpu>.json, beside the archive.
# The machine has no network: pure-Python wheels the tests need (`make gpu-wheels`: pytest-codeblocks,
# pymdown-extensions, markdown, pytest-randomly, liger-kernel) travel in .whl/ and are installed to /tmp/site.
set -u
export PYTHONUNBUFFERED=1 NO_MKDOCS_2_WARNING=1
OUT=${OUT:-/tmp/out}
LOG=$OUT/logs
mkdir -p "$LOG" "$OUT/results"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
finish() { tar czf "$OUT/run.tgz" -C "$OUT" logs results; rm -rf "$LOG" "$OUT/results"; }
trap finish EXIT
nvidia-smi > "$LOG/nvidia-smi.txt" 2>&1
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())" | tee "$LOG/versions.txt"

for stage in "$@"; do
  t0=$(date +%s)
  case "$stage" in
    cases)  # CASES="schedules matmul_variation" picks and orders them (default: all); PROBE_BUDGET as below
      for n in ${CASES:-schedules matmul_variation practice}; do  # the page measurements (the stories' cases run in scripts/bench.py)
        if (( $(date +%s) - t0 > ${PROBE_BUDGET:-400} )); then echo "case $n skipped: budget spent"; continue; fi
        timeout 120 python3 "benchmarks/cases/$n.py" > "$LOG/case_$n.txt" 2>&1
        echo "case $n rc=$? $(( $(date +%s) - t0 )) s"
      done ;;
    probes)  # PROBES="benchmarks/evidence/softmax/softmax_gap.py ..." (paths); PROBE_BUDGET (s) stops starting new ones
      rm -rf benchmarks/.probes && mkdir -p benchmarks/.probes && cp benchmarks/cases/_examples.py benchmarks/.probes/
      for p in ${PROBES:-}; do cp "$p" benchmarks/.probes/ || echo "probe $p: no such file"; done  # all first: one may import another
      for p in ${PROBES:-}; do
        n=$(basename "$p" .py)
        if (( $(date +%s) - t0 > ${PROBE_BUDGET:-400} )); then echo "probe $n skipped: budget spent"; continue; fi
        timeout 120 python3 "benchmarks/.probes/$n.py" > "$LOG/probe_$n.txt" 2>&1
        echo "probe $n rc=$? $(( $(date +%s) - t0 )) s"
      done
      rm -rf benchmarks/.probes ;;
    examples)
      for e in examples/*.py; do
        timeout 120 python3 "$e" > "$LOG/example_$(basename "$e" .py).txt" 2>&1
        echo "example $(basename "$e") rc=$? $(tail -1 "$LOG/example_$(basename "$e" .py).txt" | cut -c1-150)"
      done ;;
    tests)
      timeout ${TESTS_TIMEOUT:-400} python3 -m pytest -q -p no:cacheprovider -n ${TESTS_WORKERS:-4} tests --ignore=tests/browser -rfs > "$LOG/tests.txt" 2>&1
      echo "tests rc=$? $(tail -1 "$LOG/tests.txt")" ;;
    codeblocks)
      timeout ${CODEBLOCKS_TIMEOUT:-300} python3 -m pytest -q -p no:cacheprovider -n ${TESTS_WORKERS:-4} --codeblocks docs/ > "$LOG/codeblocks.txt" 2>&1
      echo "codeblocks rc=$? $(tail -1 "$LOG/codeblocks.txt")" ;;
    check)  # CHECK_BUDGET (s): steps not finished by then fail, and nothing is recorded
      timeout ${CHECK_TIMEOUT:-570} python3 -m scripts.gpu_check --logs "$LOG/check" --record-to "$OUT/verified" \
        --budget ${CHECK_BUDGET:-520} -n ${TESTS_WORKERS:-8} ${CHECK_ARGS:-} > "$LOG/check.txt" 2>&1
      echo "check rc=$?"; sed -n '/^step /,$p' "$LOG/check.txt" ;;
    bench:*)
      args=()
      IFS=',' read -ra names <<< "${stage#bench:}"
      for e in "${names[@]}"; do if [ "$e" = all ]; then args+=(--all); else args+=(--example "$e"); fi; done
      timeout ${BENCH_TIMEOUT:-540} python3 -m scripts.bench "${args[@]}" ${BENCH_ARGS:-} --out "$OUT/results" > "$LOG/bench_${stage#bench:}.txt" 2>&1
      echo "bench ${stage#bench:} rc=$?"; grep -E "^(==|FAIL|NOT)" "$LOG/bench_${stage#bench:}.txt" ;;
    sh:*)  # a kept shell probe that writes under $OUT itself (e.g. sh:benchmarks/evidence/overview/profile_missed.sh)
      timeout ${SH_TIMEOUT:-320} bash "${stage#sh:}" > "$LOG/sh_$(basename "${stage#sh:}" .sh).txt" 2>&1
      echo "sh ${stage#sh:} rc=$?"; tail -25 "$LOG/sh_$(basename "${stage#sh:}" .sh).txt" ;;
    py:*)  # py:<probe.py>[@SECONDS]: a kept Python probe taking --out DIR --budget S; files land in $OUT/<name>/
      spec=${stage#py:}; path=${spec%@*}; budget=${PY_BUDGET:-200}; [ "$spec" != "$path" ] && budget=${spec##*@}
      n=$(basename "$path" .py)
      timeout $(( budget + 60 )) python3 "$path" --out "$OUT/$n" --budget "$budget" > "$LOG/py_$n.txt" 2>&1
      echo "py $n rc=$?"; tail -25 "$LOG/py_$n.txt" ;;
    *) echo "unknown stage $stage" ;;
  esac
  echo "stage $stage: $(( $(date +%s) - t0 )) s"
done
