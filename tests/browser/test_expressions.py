"""(g) The page expressions: one grammar (scripts/expressions.py, GRAMMAR) for `{{ bench ... }}`,
`{{ examples }}`, `{{ verified }}`, `{{ schedule ... }}` and `{{ evidence ... }}`, whose errors name
the page, the line and the expression, and whose documentation in CONTRIBUTING.md is written from it (site tier: pure,
runs on the committed results)."""

from __future__ import annotations

import json

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
    assert set(expressions.TOP) == {"bench", "examples", "verified", "verified_summary", "schedule", "repo",
                                    "evidence", "evidence_ratio", "attention_bytes"}
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


# --- `{{ evidence ... }}`: a probe's committed JSON output (scripts/evidence.py) ---------------------

PROBE = {"probe": "made_up", "gpu": "NVIDIA H200", "elements": 67108864,
         "host_us": {"1024": {"fwd cached": 62.30149, "F.layer_norm": 12.3595}},
         "points": [
             {"what": "fwd", "N": 16384, "name": "shipped", "gbs": 3678.8169, "kernels": {}},
             {"what": "fwd", "N": 16384, "name": "row w8", "gbs": 3749.4608,
              "kernels": {"fwd_kernel": {"regs": 128, "spills": 0}}},
             {"what": "bwd", "N": 16384, "name": "shipped", "gbs": 2002.8, "kernels": {"bwd_kernel": {"spills": 108}}},
             {"what": "bwd", "N": 1024, "name": "shipped", "gbs": 3525.5, "label": "x"},
             {"what": "mm", "shape": [1024, 1024, 1024], "gelu": True, "candidate": "cuBLAS torch.matmul",
              "ms": 0.00538087, "tflops": 399.0958},
             {"what": "mm", "shape": [1024, 1024, 1024], "gelu": True, "candidate": "tiles 64x128x128 s3",
              "ms": 0.00581604, "tflops": 369.2477},
         ]}
FILE = "made-up/run1/probe.json"


@pytest.fixture
def probe_page(tmp_path):
    (tmp_path / "made-up" / "run1").mkdir(parents=True)
    text = json.dumps({k: v for k, v in PROBE.items() if k != "points"}, indent=1)[:-2]
    points = ",\n".join(json.dumps(p) for p in PROBE["points"])  # one point a line, as the probes write
    (tmp_path / FILE).write_text(text + ',\n "points": [\n' + points + "\n ]\n}\n")
    return expressions.Page("benchmarks/x.md", None, evidence_dir=tmp_path)


@pytest.mark.parametrize("words, shown", [
    ("what=fwd,N=16384,name=row+w8 gbs 0f", "3749"),  # a number compared as text, + for a space
    ("what=fwd,N=16384,name=shipped gbs int", "3,679"),
    ("what=fwd,N=16384,name=shipped gbs 1f", "3678.8"),
    ("what=fwd,N=16384,name=row+w8 kernels.fwd_kernel.regs", "128"),  # dotted: a nested field
    ("what=bwd,N=16384,name=shipped kernels.bwd_kernel.spills", "108"),
    ("what=bwd,N=1024 label", "x"),  # without a format: the value as held
    ("header gpu", "NVIDIA H200"),
    ("header host_us.1024.fwd+cached 1f", "62.3"),
    ("header host_us.1024.F.layer_norm 1f", "12.4"),  # a key holding a dot, found whole
    ("header elements int", "67,108,864"),
    ("shape=1024x1024x1024,gelu=true,candidate=cuBLAS+torch.matmul ms 1000*2f", "5.38"),  # list, bool, scale
    ("what=bwd,N=1024,name=shipped gbs 0%", "352550%"),
])
def test_evidence_quotes_one_field_of_one_point(probe_page, words, shown):
    assert expressions.render(f"a {{{{ evidence {FILE} {words} }}}} b", probe_page) == f"a {shown} b"


def test_evidence_plus_sign_and_header_only_files(tmp_path):
    # `%2B` is a literal "+" in a selector value and in a field path (`+` stands for a space); a
    # file without a `points` list is quoted through `header`, and a point selector on it fails
    (tmp_path / "made-up").mkdir()
    (tmp_path / "made-up" / "p.json").write_text(json.dumps({
        "points": [{"candidate": "ptr a + dq b", "ms": 2.5}, {"candidate": "ptr a", "ms": 9.0},
                   {"candidate": "add dQ, 64x64", "ms": 4.0}]}))
    (tmp_path / "made-up" / "h.json").write_text(json.dumps({"rows": {"plain (a + b) // b": {"us": 0.14}}}))
    page = expressions.Page("benchmarks/x.md", None, evidence_dir=tmp_path)
    assert expressions.render("{{ evidence made-up/p.json candidate=ptr+a+%2B+dq+b ms 1f }}", page) == "2.5"
    # `%2C` is a literal "," (a bare one separates the pairs), in a ratio's first point too
    assert expressions.render("{{ evidence made-up/p.json candidate=add+dQ%2C+64x64 ms 1f }}", page) == "4.0"
    assert expressions.render("{{ evidence_ratio made-up/p.json candidate=add+dQ%2C+64x64 candidate=ptr+a ms 2x }}",
                              page) == "0.44x"
    assert expressions.render("{{ evidence made-up/h.json header rows.plain+(a+%2B+b)+//+b.us 2f }}",
                              page) == "0.14"
    with pytest.raises(expressions.ExpressionError, match="no 'points' list; quote its top level"):
        expressions.render("{{ evidence made-up/h.json rows=1 us }}", page)


def test_evidence_reads_a_result_csv_row_by_row(tmp_path):
    # a benchmark's result CSV (scripts/bench.py's columns): each row a point, each cell its text,
    # so a selector matches what is written ("x=1024", "tag=007"); a format reads a finite number
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "r.csv").write_text(
        "bench,x,provider,timing,value,tag\n"
        "b,1024,ours,do_bench,300.5,007\nb,1024,peer,do_bench,400,1e5\nb,4096,ours,do_bench,1e3,nan\n")
    page = expressions.Page("benchmarks/x.md", None, evidence_dir=tmp_path)
    assert expressions.render("{{ evidence run/r.csv bench=b,x=1024,provider=ours value 1f }}", page) == "300.5"
    assert expressions.render("{{ evidence run/r.csv x=4096 value 0f }}", page) == "1000"
    assert expressions.render("{{ evidence run/r.csv tag=007 provider }}", page) == "ours"
    assert expressions.render("{{ evidence_ratio run/r.csv x=1024,provider=ours provider=peer value 2x }}",
                              page) == "0.75x"
    with pytest.raises(expressions.ExpressionError, match="no point has x='1024.0'; its values: 1024, 4096"):
        expressions.render("{{ evidence run/r.csv x=1024.0,provider=ours value 1f }}", page)
    for words in ("x=4096 tag 1f", "x=1024,provider=ours timing 1f"):  # nan, text: not a number
        with pytest.raises(expressions.ExpressionError, match="not a number"):
            expressions.render(f"{{{{ evidence run/r.csv {words} }}}}", page)
    (tmp_path / "run" / "bad.csv").write_text("bench,x\nb,1\nb\n")
    with pytest.raises(expressions.ExpressionError, match="bad.csv: line 3 has fewer cells than the header's 2"):
        expressions.render("{{ evidence run/bad.csv x=1 bench }}", page)


def test_evidence_ratio_divides_two_points_the_second_inheriting_the_first_ones_keys(probe_page):
    a = "what=mm,shape=1024x1024x1024,candidate=tiles+64x128x128+s3"
    assert expressions.render(f"{{{{ evidence_ratio {FILE} {a} candidate=cuBLAS+torch.matmul tflops 3x }}}}",
                              probe_page) == "0.925x"
    assert expressions.render(f"{{{{ evidence_ratio {FILE} {a} candidate=cuBLAS+torch.matmul tflops }}}}",
                              probe_page) == "0.925x"  # 3x by default
    assert expressions.render(f"{{{{ evidence_ratio {FILE} what=fwd,N=16384,name=row+w8 name=shipped gbs 1% }}}}",
                              probe_page) == "101.9%"
    # time: b over a is a speed-up; the same as the FLOP/s of a over b
    assert expressions.render(f"{{{{ evidence_ratio {FILE} candidate=cuBLAS+torch.matmul {a} ms 3x }}}}",
                              probe_page) == "0.925x"


@pytest.mark.parametrize("expr, words", [
    (f"evidence {FILE} what=fwd,N=2048 gbs 0f",
     "made-up/run1/probe.json: 0 of 6 points match 'what=fwd,N=2048' (no point has N='2048'; its values: 1024, 16384)"),
    (f"evidence {FILE} what=fwd,color=red gbs", "no point has a field 'color'"),
    (f"evidence {FILE} what=fwd,N=16384 gbs 0f",
     "made-up/run1/probe.json: 2 points match 'what=fwd,N=16384', not one; they differ in: gbs, kernels, name"),
    (f"evidence {FILE} what=fwd,N=16384,name=shipped gbps 0f",
     "the point 'what=fwd,N=16384,name=shipped' has no field 'gbps' (its fields: what, N, name, gbs, kernels)"),
    (f"evidence {FILE} what=fwd,N=16384,name=row+w8 kernels.fwd_kernel.stalls", "has no field"),
    (f"evidence {FILE} what=fwd,N=16384,name=shipped kernels", "is not one value"),
    ("evidence made-up/run2/probe.json header gpu", "no evidence file made-up/run2/probe.json"),
    ("evidence ../secrets.json header gpu", "expected a .json (or a result .csv) file under benchmarks/evidence/"),
    ("evidence made-up/run1/probe.txt header gpu", "expected a .json (or a result .csv) file under"),
    (f"evidence {FILE} what=fwd,N=16384,name=shipped gbs 2g", "unknown format '2g'; formats: int, <n>f, <n>x"),
    (f"evidence {FILE} what=fwd,N=16384,name=shipped gbs gbs",
     "unknown argument 'gbs'; expected: evidence <file> <selector> <point field> [<format>]"),
    (f"evidence {FILE} header gpu 1f", "field 'gpu' is 'NVIDIA H200', not a number: format '1f' needs one"),
    (f"evidence {FILE} what=bwd gbs", "2 points match 'what=bwd', not one; they differ in: N, gbs, kernels, label"),
    (f"evidence {FILE} what gbs", "expected a selector key=value,key=value (or header), got 'what'"),
    (f"evidence {FILE} N=1,N=2 gbs", "names a key twice"),
    (f"evidence {FILE} header", "needs <point field>; expected: evidence <file> <selector> <point field> "),
    (f"evidence_ratio {FILE} what=fwd,N=16384,name=shipped gbs 3x",  # one selector: gbs taken for the second
     "expected a selector key=value,key=value (or header), got 'gbs'"),
    (f"evidence_ratio {FILE} what=fwd,N=16384,name=shipped name=row+w8",
     "needs <point field>; expected: evidence_ratio <file> <selector a> <selector b> <point field> [<format>]"),
    (f"evidence_ratio {FILE} what=fwd,N=16384,name=shipped name=nope gbs 3x",
     "0 of 6 points match 'what=fwd,N=16384,name=nope'"),  # b's selector, with a's keys, in the error
    (f"evidence_ratio {FILE} header what=fwd,N=16384,name=shipped gpu", "not a number"),
])
def test_evidence_errors_name_the_page_the_line_the_file_and_the_selector(probe_page, expr, words):
    with pytest.raises(expressions.ExpressionError) as err:
        expressions.render(f"# Title\n\nsome prose\n{{{{ {expr} }}}}\n", probe_page)
    msg = str(err.value)
    assert msg.startswith(f"benchmarks/x.md:4: {{{{ {expr} }}}}: ResultError: ") and words in msg, msg


def test_evidence_reads_the_committed_files_by_default():
    page = expressions.Page("benchmarks/x.md", None)
    quote = "{{ evidence layer-norm/run32/layer_norm_hopper.json header gpu }}"
    assert expressions.render(quote, page) == "NVIDIA H200"


def test_us_quotes_the_same_time_as_ms_in_microseconds(page):
    ms = expressions.render("{{ bench ms vector_add_fp32@16777216:triton }}", page)
    us = expressions.render("{{ bench us vector_add_fp32@16777216:triton }}", page)
    assert ms.endswith(" ms") and us.endswith(" µs")
    assert abs(float(us[:-3]) - 1000 * float(ms[:-3])) <= 0.005 * float(us[:-3])


def test_the_attention_byte_table_is_computed_by_the_example(page):
    out = expressions.render("{{ attention_bytes }}", page)
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ") and "GB" in line]
    assert [r[0].strip() for r in rows] == ["1024", "4096", "16384"]
    for r in rows:
        scores, softmax, pv, total, fused = (float(c.split()[0]) for c in r[1:6])
        assert total == pytest.approx(scores + softmax + pv, rel=0.01)  # the parts add up
        assert float(r[6].strip().rstrip("x")) == pytest.approx(total / fused, rel=0.02)
    ratios = [float(r[6].strip().rstrip("x")) for r in rows]
    assert ratios == sorted(ratios) and ratios[0] > 1  # the scores grow as seq^2, the rest as seq
