"""How a probe writes its JSON output: the header's keys one per line, then one point per line.

The layout of every ``benchmarks/evidence/<page>/runNN/*.json`` that ``{{ evidence ... }}``
quotes (``scripts/evidence.py``): a diff of two runs then reads point by point. ``environment()``
is the header's common part: the GPU, the versions and the date.
"""

from __future__ import annotations

import datetime
import json
import platform
from pathlib import Path


def environment() -> dict:
    import torch
    import triton

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none (CPU)"
    return {"gpu": gpu, "torch": torch.__version__, "triton": triton.__version__,
            "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}


def write(path: Path, header: dict, points: list[dict]) -> None:
    """``header`` (keys one per line) and ``points`` (one per line) as one JSON object."""
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v, default=str)}," for k, v in header.items()]
    lines.append('  "points": [')
    lines += [f"    {json.dumps(p, default=str)}" + ("," if i < len(points) - 1 else "")
              for i, p in enumerate(points)]
    lines += ["  ]", "}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
