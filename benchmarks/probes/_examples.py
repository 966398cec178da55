"""What the probes share: importing an example by file path (probes run as scripts, so this folder,
not the repository root, is on sys.path: `from _examples import load_example`)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_example(name: str):
    """examples/<name>.py as module `name` (also in sys.modules, as its dataclasses and pickles need)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
