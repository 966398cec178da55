"""(g) The page expressions: one registry (scripts/expressions.py) for `{{ bench ... }}`,
`{{ examples }}` and `{{ verified }}`, whose errors name the page, the line and the expression
(site tier: pure, runs on the committed results)."""

from __future__ import annotations

import pytest

from scripts import expressions, results, targets


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
    ("{{ bench winners only_a_bench }}", "needs a bench name and at least one provider"),
])
def test_errors_name_the_page_the_line_and_the_expression(page, text, words):
    with pytest.raises(expressions.ExpressionError) as err:
        expressions.render(f"# Title\n\nsome prose\n{text}\n", page)
    msg = str(err.value)
    assert msg.startswith("guide/x.md:4: {{ ") and words in msg, msg


def test_whole_site_kinds_quote_every_result_file():
    for name, kind in expressions.BENCH.items():
        quoted = expressions.quoted_benches(f"{{{{ bench {name} }}}}")
        assert (quoted is None) == kind.whole_site, name
    assert expressions.quoted_benches("{{ bench ratio a_b@4:x/y cudagraph }} ![t](../assets/plots/c_d.svg)") == {
        "a_b", "c_d"}


def test_one_kernels_targets_quote_the_benches_they_judge():
    # A kernel page's `targets <prefix>` is not a whole-site table: its page must still get the
    # notice for points of those benches that a second run did not reproduce.
    specs = results.example_specs()
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
    data = results.load(specs=results.example_specs())
    with pytest.raises(results.ResultError, match="bench softmax_fp32 has no provider bogus"):
        targets.winners_table(data, "softmax_fp32", ["triton", "torch", "bogus"])
