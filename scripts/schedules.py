"""The measured schedules of the "programs in flight" widget: which SM ran each program or
tile of a real kernel, and when (recorded on the GPU by benchmarks/probes/schedules.py).

The committed record is ``benchmarks/schedules/<gpu>.json`` (its own folder: benchmarks/results/
holds only CSV + meta result files). The build ships it as ``assets/data/schedules.json``; without
a record it ships ``{"traces": []}``, so the widget's request never fails (a 404 would be a
console error) and it shows its toy schedule only.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEDULES_DIR = ROOT / "benchmarks" / "schedules"
SITE_NAME = "schedules.json"
EMPTY = {"traces": [], "note": "no measured schedules: run benchmarks/probes/schedules.py on the GPU"}


def site_blob(gpu: str = "h200", folder: Path = SCHEDULES_DIR) -> bytes:
    """The bytes of assets/data/schedules.json: the record, compact, or the empty document.
    A record that is not a JSON object with a list of traces raises ValueError."""
    path = Path(folder) / f"{gpu}.json"
    if not path.is_file():
        return (json.dumps(EMPTY) + "\n").encode()
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: not JSON: {err}") from err
    if not isinstance(doc, dict) or not isinstance(doc.get("traces"), list):
        raise ValueError(f"{path}: needs an object with a 'traces' list")
    return (json.dumps(doc, separators=(",", ":")) + "\n").encode()


def ship(data_dir: Path, write, gpu: str = "h200") -> None:
    """Write assets/data/schedules.json into the build's data folder with ``write(path, bytes)``."""
    write(Path(data_dir) / SITE_NAME, site_blob(gpu))
