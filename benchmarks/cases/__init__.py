"""What each story's benchmark times: ``benchmarks/cases/<story>.py`` beside ``examples/<story>.py``.

A case file holds the ``BENCHMARKS`` list (for each bench: its sizes, its providers, the
arguments of its inputs) and ``bench_case``, which builds the inputs and the callable of one
point; ``scripts/bench.py`` times them. How the site shows a bench (title, ceiling, targets)
is in ``benchmarks/presentation.yml``. The peers every story shares are in ``peers.py``.

Importing this package puts examples/ on ``sys.path``: a case imports its kernels with
``from softmax import softmax``, as a reader's own script would, and gets the very module the
tests import. (``schedules.py``, ``matmul_variation.py`` and ``practice.py`` here are the
re-runnable measurements of whole pages, run as scripts: ``benchmarks/gpu_run.sh cases``.)
"""

import sys
from pathlib import Path

_EXAMPLES = str(Path(__file__).resolve().parents[2] / "examples")
if _EXAMPLES not in sys.path:
    sys.path.insert(0, _EXAMPLES)
