"""(g) The page expressions: one grammar (scripts/expressions.py, GRAMMAR) for `{{ bench ... }}`,
`{{ examples }}`, `{{ verified }}` and `{{ schedule ... }}`, whose errors name the page, the line and
the expression, and whose documentation in CONTRIBUTING.md is written from it (site tier: pure,
runs on the committed results)."""

from __future__ import annotations

import pytest

from scripts import expressions, results, targets

from .harness import ROOT


@pytest.fixture(scope="module")
def page():
    return expressions.Page("guide/x.md", results.load(), examples_table=lambda: "MAP")


def test_every_top_level_name_renders(page):
    out = expressions.render("{{ bench meta tile_compute gpu }} | {{ examples }} | {{ verified }}", page)
    assert "{{" not in out and "MAP" in out and "H200" in out


def test_a_later_pass_is_left_alone(page):
    text = "{{ examples }} and {{bench plots}}"
    assert expressions.render(text, page, names=("verified",)) == text


@pytest.mark.parametrize("text, words", [
    ("{{ bench }}", "empty expression"),
    ("{{ bench no_such_kind x@1:y }}", "unknown kind 'no_such_kind'; known: "),
    ("{{ bench targets extra }}", "no target starts with 'extra'"),
    ("{{ bench plots extra }}", "takes no arguments"),
    ("{{ examples please }}", "takes no arguments"),
    ("{{ bench value no_such_bench@1:triton }}", "ResultError"),
    ("{{ bench winners only_a_bench }}", "needs <provider>...; expected: bench winners <bench> <provider>... "),
    ("{{ bench value softmax_fp32@4096:triton bogus }}", "unknown argument 'bogus'; expected: bench value "),
    ("{{ bench value softmax_fp32@4096 }}", "expected <bench>@<x>:<provider>, got 'softmax_fp32@4096'"),
    ("{{ bench ratio softmax_fp32@4096:triton }}", "expected <bench>@<x>:<a>/<b>"),
    ("{{ bench ceiling }}", "needs <bench>; expected: bench ceiling <bench>"),
    ("{{ bench meta softmax gpu torch }}", "unknown argument 'torch'"),
    ("{{ bench summary all }}", "takes no arguments, got 'all'"),
    ("{{ schedule rows }}", "needs <statistic>"),
    ("{{ verified now }}", "takes no arguments"),
])
def test_errors_name_the_page_the_line_and_the_expression(page, text, words):
    with pytest.raises(expressions.ExpressionError) as err:
        expressions.render(f"# Title\n\nsome prose\n{text}\n", page)
    msg = str(err.value)
    assert msg.startswith("guide/x.md:4: {{ ") and words in msg, msg


def test_every_kind_is_declared_once_with_its_help():
    names = [(k.top, k.name) for k in expressions.GRAMMAR]
    assert len(names) == len(set(names))
    assert set(expressions.TOP) == {"bench", "examples", "verified", "schedule", "repo"}
    assert all(k.help and all(a.help for a in k.args) for k in expressions.GRAMMAR)


def test_results_render_through_the_grammar(page):
    assert results.render_expression(page.data, "meta tile_compute gpu") == expressions.render(
        "{{ bench meta tile_compute gpu }}", page)
    with pytest.raises(results.ResultError, match="unknown argument 'gpu'"):
        results.render_expression(page.data, "ceiling softmax_fp32 gpu")


def test_contributing_documents_the_grammar_as_declared():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert expressions.docs_in(text) == expressions.grammar_docs(), (
        "CONTRIBUTING.md's grammar section differs from scripts/expressions.py's GRAMMAR: run "
        "`python -m scripts.expressions --write-docs`")
    for kind in expressions.GRAMMAR:
        assert f"`{{{{ {kind.syntax} }}}}`" in text, kind.syntax


def test_whole_site_kinds_quote_every_result_file():
    for name, kind in expressions.BENCH.items():
        quoted = expressions.quoted_benches(f"{{{{ bench {name} }}}}")
        assert (quoted is None) == kind.whole_site, name
    assert expressions.quoted_benches("{{ bench ratio a_b@4:x/y cudagraph }} ![t](../assets/plots/c_d.svg)") == {
        "a_b", "c_d"}
    assert expressions.quoted_benches("{{ bench winners w_b triton torch cudagraph }} {{ bench ridge f_b c_b }} "
                                      "{{ bench meta ex gpu }}") == {"w_b", "f_b", "c_b"}


def test_one_kernels_targets_quote_the_benches_they_judge():
    # A kernel page's `targets <prefix>` is not a whole-site table: its page must still get the
    # notice for points of those benches that a second run did not reproduce.
    specs = results.load().specs
    quoted = expressions.quoted_benches("{{ bench targets softmax }}", specs)
    assert quoted == {"softmax_fp32"}
    assert {"matmul_fp16", "matmul_persistent_fp16"} <= expressions.quoted_benches("{{ bench targets matmul }}", specs)
    assert expressions.quoted_benches("{{ bench targets softmax }}") is None  # without the specs: every file
    assert expressions.quoted_benches("{{ bench targets }}", specs) is None


def test_no_page_of_the_built_site_holds_an_unrendered_expression(site_dir):
    """Every kind in the registry is rendered by some pass of the hook (a `{{ schedule ... }}`
    once reached the site as text: the hook's passes named the kinds one by one)."""
    left = {str(p.relative_to(site_dir)): expressions.EXPR.findall(p.read_text(errors="replace"))
            for p in site_dir.rglob("*.html")}
    assert {page: found for page, found in left.items() if found} == {}


def test_winners_names_an_unknown_provider():
    data = results.load()
    with pytest.raises(results.ResultError, match="bench softmax_fp32 has no provider bogus"):
        targets.winners_table(data, "softmax_fp32", ["triton", "torch", "bogus"])
