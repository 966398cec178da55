"""(g) The map of the stories on the Examples page: every example, in reading order, with the
pages that teach with it, its tests, its result file and its plots (generated from the repository)."""

from __future__ import annotations

import re

from scripts import results

from .harness import ROOT, SITE


def test_the_map_names_each_story_with_its_page_test_data_and_plots():
    html = (SITE / "examples" / "index.html").read_text()
    table = html[html.index("<table"):html.index("</table>")]
    rows = table.split("<tr>")[2:]
    stems = [p.stem for p in results.example_files()]
    assert len(rows) == len(stems)
    data = results.load()
    for stem in stems:
        row = next((r for r in rows if f"python examples/{stem}.py" in r), None)
        assert row is not None, stem
        assert f'href="../examples/{stem}/"' in row or f'href="{stem}/"' in row, stem
        if (ROOT / "tests" / f"test_{stem}.py").exists():
            assert f"tests/test_{stem}.py" in row, stem
        if (results.RESULTS_DIR / results.GPU_DIR / f"{stem}.csv").exists():
            assert f"assets/data/results/{results.GPU_DIR}/{stem}.csv" in row, stem
        for bench in {r["bench"] for r in data.rows if r["example"] == stem}:
            assert f"assets/plots/{bench}.svg" in row, (stem, bench)
    # reading order: vector add, the first story of the quickstart, comes first
    assert "python examples/vector_add.py" in rows[0]
    assert re.search(r'href="[^"]*guide/tiles-and-programs/"', rows[0])
