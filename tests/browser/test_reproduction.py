"""(c) The second benchmark run's verdict, as the built site shows it.

The Benchmarks page lists every point that the second run (benchmarks/reproduction/h200/) did
not reproduce within 5%, and each page quoting such a point lists the ones of its examples at
its top, while pages whose points all reproduced carry no such notice. The expected points are
recomputed here from the result files with scripts/compare_runs.py, so the test follows the data.
"""

from __future__ import annotations

import re

import pytest

from scripts import compare_runs, expressions, results

from .harness import ROOT, SITE

REPRODUCTION = ROOT / "benchmarks" / "reproduction" / results.GPU_DIR
NOTICE = re.compile(r'<div class="admonition info">\s*<p class="admonition-title">(\d+) of (\d+) points not reproduced')


def _comparison():
    if not any(REPRODUCTION.glob("*.csv")):
        pytest.skip("no second run recorded")
    return compare_runs.compare_folders(results.RESULTS_DIR / results.GPU_DIR, REPRODUCTION)


def _html(rel: str) -> str:
    path = SITE / rel / "index.html"
    if not path.exists():
        pytest.fail(f"site/{rel}/index.html is missing: run mkdocs build --strict first")
    return path.read_text()


def test_benchmarks_page_lists_every_point_that_did_not_reproduce():
    c, _, _, _ = _comparison()
    html = _html("benchmarks")
    section = html[html.index('id="reproduction"'):html.index('id="which-code-each-result-measured"')]
    assert f"{len(c.judged)} kernel-time points compared" in section
    assert f"{len(c.differ)} differ by more than 5%" in section
    for p in c.differ:
        _, bench, x, provider, timing = p.key
        assert re.search(rf"<code>{re.escape(bench)}</code>[^<]*= {re.escape(x)}, {re.escape(provider)}, "
                         rf"{timing}</td>\s*<td>{p.a['ms_p50']:.4g}</td>\s*<td>{p.b['ms_p50']:.4g}</td>",
                         section), f"{p.name} is not listed on the Benchmarks page"


def test_benchmarks_page_shows_the_probe_behind_the_explanation():
    html = _html("benchmarks")
    section = html[html.index('id="reproduction"'):html.index('id="which-code-each-result-measured"')]
    assert section.count("(700 W)") == 6, "the probe table should show six sustained-load phases"
    assert "Configs chosen by five re-tunings" in section


@pytest.mark.parametrize("rel", ["benchmarks/matmul", "benchmarks/matmul-persistent", "benchmarks/softmax",
                                 "benchmarks/layer-norm", "benchmarks/attention"])
def test_a_page_lists_the_points_of_its_examples_that_did_not_reproduce(rel):
    c, _, _, _ = _comparison()
    html = _html(rel)
    match = NOTICE.search(html)
    notice = html[match.start():html.index("</table>", match.start())] if match else ""
    listed = {p.key for p in c.differ if f"<code>{p.key[1]}</code>" in notice
              and f"= {p.key[2]}, {p.key[3]}, {p.key[4]}</td>" in notice}
    # quoted: plotted on the page, or named by one of its expressions (a target table, a ratio)
    data = results.load()
    named = expressions.quoted_benches((ROOT / "docs" / f"{rel}.md").read_text(), data.specs) or set()
    stale = set(results.stale_results(data))  # the notice leaves these out: their page says so already
    quoted = {p.key for p in c.differ if p.key[0] not in stale
              and (f"assets/plots/{p.key[1]}.svg" in html or p.key[1] in named)}
    if not quoted:
        assert match is None, f"{rel}: a reproduction notice although none of its quoted points differ"
        return
    assert match, f"{rel}: quotes points that did not reproduce but carries no notice"
    assert quoted <= listed, f"{rel}: not listed: {sorted(quoted - listed)}"
    assert int(match.group(1)) == notice.count("<tr>") - 1  # the count in the title matches the rows


def test_no_notice_without_a_difference():
    point = compare_runs.Point(("ex", "b", "1", "p", "do_bench"), {"ms_p50": 1.0, "spread": 0.01},
                               {"ms_p50": 1.02, "spread": 0.01})
    c = compare_runs.compare({point.key: {**point.a, "metric": "GB/s", "host_bound": False}},
                             {point.key: {**point.b, "metric": "GB/s", "host_bound": False}})
    assert c.judged and not c.differ
    assert compare_runs.page_notice(c, {"b"}, set(), {}, "../benchmarks.md#reproduction") == ""
    slow = {point.key: {"ms_p50": 1.2, "spread": 0.0, "metric": "GB/s", "host_bound": False, "x_name": "n"}}
    c2 = compare_runs.compare({point.key: {**point.a, "metric": "GB/s", "host_bound": False, "x_name": "n"}}, slow)
    text = compare_runs.page_notice(c2, {"b"}, set(), {"ex": {"date": "2026-12-01T00:00:00"}}, "x.md")
    assert text.startswith('!!! info "1 of 1 points not reproduced within 5%"')
    assert "| `b` n = 1, p, do_bench | 1 | 1.2 | 1.200 | 1.0% | 0.0% |" in text
    assert compare_runs.page_notice(c2, {"other"}, set(), {}, "x.md") == ""
    assert compare_runs.page_notice(c2, {"b"}, {"ex"}, {}, "x.md") == ""  # stale: its own notice

