"""The one parser of the `# --8<-- [start:name]` / `# --8<-- [end:name]` markers that cut the
examples into the sections pages include (pymdownx.snippets), used by the site hook, the widget
tracer and the tests."""

from __future__ import annotations

import re
from pathlib import Path

MARKER = re.compile(r"^\s*#\s*-+8<-+\s*\[(start|end):([\w-]+)\]\s*$")
ANNOTATION = re.compile(r"\s+#\s*\(\d+\)!\s*$")  # Material code annotations: `# (1)!`


def problems(src: Path) -> list[str]:
    """What is wrong with the markers of one file (an unmatched marker would make
    pymdownx.snippets silently include everything up to the end of the file)."""
    found, open_at, seen = [], {}, set()
    for lineno, line in enumerate(Path(src).read_text().splitlines(), 1):
        if "8<" not in line:
            continue
        m = MARKER.match(line)
        if m is None:
            found.append(f"{src.name}:{lineno}: malformed section marker {line.strip()!r}")
            continue
        kind, name = m.groups()
        if kind == "start":
            if name in seen or name in open_at:
                found.append(f"{src.name}:{lineno}: section {name!r} starts twice")
            open_at[name] = lineno
        elif name not in open_at:
            found.append(f"{src.name}:{lineno}: section {name!r} ends but never started")
        else:
            del open_at[name]
            seen.add(name)
    return found + [f"{src.name}:{n}: section {name!r} never ends" for name, n in open_at.items()]


def without_markers(text: str) -> str:
    """The text with every marker line removed (what a notebook shows)."""
    return "\n".join(line for line in text.splitlines() if not MARKER.match(line))


def section(src: Path, name: str, annotations: bool = False) -> list[str]:
    """The lines between `[start:name]` and `[end:name]`, other markers left out, and Material's
    `# (1)!` annotations removed unless asked for."""
    lines, inside = [], False
    for line in Path(src).read_text().splitlines():
        m = MARKER.match(line)
        if m and m.group(2) == name:
            if m.group(1) == "end":
                return lines
            inside = True
            continue
        if inside and not m:
            lines.append(line if annotations else ANNOTATION.sub("", line))
    raise ValueError(f"{Path(src).name}: no complete [start:{name}] ... [end:{name}] section")
