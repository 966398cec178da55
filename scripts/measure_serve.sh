#!/usr/bin/env bash
# The serve figures in CONTRIBUTING.md ("Build speed"): a fresh clone of REPO (default: this
# checkout) -> `make serve` (install, cold build, serve) -> first page; then three one-line edits
# of docs/guide/masks.md, each timed from saving the file to the edited page being served.
#   bash scripts/measure_serve.sh [REPO]
set -u
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
work=$(mktemp -d)
# The machine's own speed moves by 2x from hour to hour: one fixed pure-Python loop, timed, so
# figures from different hours can be compared.
python3 -c 'import time; t = time.perf_counter(); sum(range(10**7)); sum(i * i for i in range(10**7)); print(f"machine: reference loop {time.perf_counter() - t:.2f} s")'
git clone -q "$repo" "$work/clone" && cd "$work/clone" || exit 1
t0=$(date +%s.%N)
setsid make serve > "$work/serve.log" 2>&1 &
until [ -e .venv/.installed-site ]; do sleep 0.5; done
echo "install done after $(echo "$(date +%s.%N) - $t0" | bc) s"
until curl -sf http://127.0.0.1:8000/ >/dev/null 2>&1; do sleep 0.5; done
echo "first page served after $(echo "$(date +%s.%N) - $t0" | bc) s"
sleep 8
for i in 1 2 3; do
  printf '\nServe check %s.\n' "$i" >> docs/guide/masks.md
  t2=$(date +%s.%N)
  until curl -sf http://127.0.0.1:8000/guide/masks/ 2>/dev/null | grep -q "Serve check $i"; do sleep 0.1; done
  echo "edit $i visible after $(echo "$(date +%s.%N) - $t2" | bc) s"
  sleep 6
done
pkill -f "mkdocs serve --dirty"
grep "built in" "$work/serve.log"
echo "(clone and log: $work)"
