"""The MD-Roofline pictures and the self-contained HTML report, on real analyses (meta device)."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from html import escape
from html.parser import HTMLParser

import pytest

from trainplay.hardware import load_cluster
from trainplay.hardware.cluster import parse_cluster
from trainplay.report.breakdown import breakdown_figure
from trainplay.report.figures import save_figures
from trainplay.report.html import render_html
from trainplay.report.planes import planes_figure
from trainplay.report.roofline_table import summary_lines
from trainplay.roofline.analysis import RooflineResult, analyze
from trainplay.roofline.layout import Parallel
from trainplay.workload import profile

MIXED_LAB = "tests/data/clusters/mixed-lab.yaml"
GOOD = {"apf": 14.0e12, "apm": 800e9}
SLOW = {"apf": 7.0e12, "apm": 800e9}  # rank 2 reaches half its peers' GEMM rate
STRAGGLER_CLUSTER = {
    "name": "four-v100-one-slow",
    "nodes": [
        {
            "name": "n0",
            "intra_link": "nvlink2",
            "devices": [{"type": "V100-16GB", "count": 4, "measured": [GOOD, GOOD, SLOW, GOOD]}],
        }
    ],
}
HOSTILE = "<script>alert('pwned')</script>"


@pytest.fixture(scope="module")
def resnet50():
    return profile("resnet50", batch_size=32)


@pytest.fixture(scope="module")
def dp2(resnet50) -> RooflineResult:
    return analyze(resnet50, load_cluster(MIXED_LAB), Parallel.parse("dp=2"))


@pytest.fixture(scope="module")
def dp2_html(dp2) -> str:
    return render_html(dp2)


@pytest.fixture(scope="module")
def straggler(resnet50) -> RooflineResult:
    return analyze(resnet50, parse_cluster(STRAGGLER_CLUSTER), Parallel.parse("dp=4"))


class _Tables(HTMLParser):
    """Rows of each table's body, by table id: for every row, (cell text, data-v) per cell."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[tuple[str, str | None]]]] = {}
        self.heads: dict[str, list[dict[str, str | None]]] = {}
        self._table: str | None = None
        self._part = ""
        self._cell: list[str] | None = None
        self._value: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id") or f"table{len(self.tables)}"
            self.tables[self._table], self.heads[self._table] = [], []
        elif tag in ("thead", "tbody", "tfoot"):
            self._part = tag
        elif tag == "tr" and self._part == "tbody":
            self.tables[self._table].append([])
        elif tag == "th" and self._part == "thead":
            self.heads[self._table].append(a)
        elif tag == "td" and self._part == "tbody":
            self._cell, self._value = [], a.get("data-v")

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.tables[self._table][-1].append(("".join(self._cell).strip(), self._value))
            self._cell = None
        elif tag in ("thead", "tbody", "tfoot"):
            self._part = ""


def _tables(html: str) -> _Tables:
    parser = _Tables()
    parser.feed(html)
    return parser


def test_html_fetches_nothing(dp2_html):
    assert dp2_html.startswith("<!DOCTYPE html>")
    assert not re.search(r"https?://", dp2_html)
    assert "<link" not in dp2_html and "@import" not in dp2_html
    for source in re.findall(r"""\b(?:src|href)\s*=\s*["']?([^"'\s>]*)""", dp2_html):
        assert source.startswith(("data:", "#")), source
    for url in re.findall(r"url\(\s*['\"]?([^'\")]*)", dp2_html):
        assert url.startswith(("data:", "#")), url


def test_html_has_both_charts_the_table_and_its_sort_script(dp2, dp2_html):
    assert dp2_html.count("<svg") == 2
    assert 'aria-label="MD-Roofline planes' in dp2_html
    assert 'aria-label="predicted time per block"' in dp2_html
    tables = _tables(dp2_html)
    rows = tables.tables["block-table"]
    assert [r[1][0] for r in rows] == [x.name for x in dp2.layers]
    heads = tables.heads["block-table"]
    names = re.findall(r'<span class="h">([^<]*)</span>', dp2_html)
    column = names.index("predicted")
    assert heads[column].get("data-type") == "num"
    for row, layer in zip(rows, dp2.layers, strict=True):
        assert float(row[column][1]) == pytest.approx(layer.predicted_s, rel=1e-12)
    assert "table.sortable" in dp2_html and 'addEventListener("click", sort)' in dp2_html
    assert "parseFloat(cell.dataset.v)" in dp2_html


def test_summary_in_words(dp2, dp2_html):
    lines = summary_lines(dp2)
    assert escape(lines[0]) in dp2_html
    assert escape(lines[1]) in dp2_html
    bound, share = max(dp2.iteration.bound_shares.items(), key=lambda kv: kv[1])
    assert f"<b>{100 * share:.0f}%</b> of the predicted iteration time is <b>{bound}-bound</b>" in (
        dp2_html
    )


def test_no_straggler_is_said(dp2, dp2_html):
    assert not dp2.stragglers
    section = dp2_html.split('<section id="stragglers">')[1].split("</section>")[0]
    assert "No straggler" in section


def test_straggler_section_names_the_slow_worker(straggler):
    assert [(s.rank, s.dimension) for s in straggler.stragglers] == [(2, "compute")]
    html = render_html(straggler)
    section = html.split('<section id="stragglers">')[1].split("</section>")[0]
    row = _tables(section).tables["table0"][0]
    assert row[0][0] == "2" and row[3][0] == "compute"
    assert row[-1][0] == f"{straggler.stragglers[0].slowdown:.2f}×"
    assert "rank 2 (V100-16GB on n0) is slow in compute" in section
    workers = html.split('<section id="workers">')[1]
    assert workers.count('class="flagged"') == 1


def test_hostile_names_are_escaped(dp2):
    layers = list(dp2.layers)
    layers[0] = dataclasses.replace(layers[0], name=HOSTILE, kind='"><img src=x onerror=alert(1)>')
    layers[1] = dataclasses.replace(layers[1], name="$\\frac{1}{0}$ & <b>")  # mathtext, markup
    hostile = dataclasses.replace(dp2, model=HOSTILE, cluster="<i>lab</i>", layers=tuple(layers))
    html = render_html(hostile)
    assert HOSTILE not in html and "<script>alert" not in html
    assert html.count("<script>") == 1  # the sort script, nothing else
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in html
    assert "<img" not in html and "<i>lab</i>" not in html
    assert "$\\frac{1}{0}$ &amp; &lt;b&gt;" in html


def test_save_figures_writes_png_and_svg(dp2, tmp_path):
    paths = save_figures(dp2, tmp_path / "figures")
    assert sorted(p.name for p in paths) == [
        "breakdown.png",
        "breakdown.svg",
        "planes.png",
        "planes.svg",
    ]
    for path in paths:
        data = path.read_bytes()
        assert len(data) > 20_000, path
        if path.suffix == ".png":
            assert data.startswith(b"\x89PNG\r\n\x1a\n")
        else:
            assert ET.fromstring(data).tag == "{http://www.w3.org/2000/svg}svg"


def test_intra_device_points_are_the_blocks_and_comm_points_sit_on_their_roof(dp2):
    fig = planes_figure(dp2)
    intra, to_memory, to_flops = fig.axes
    xy = [tuple(p) for c in intra.collections if c.get_offsets().size for p in c.get_offsets()]
    expected = {(x.A, x.achieved_flops) for x in dp2.layers}
    assert len(xy) == len(dp2.layers) + 1  # and the star of the whole iteration
    assert expected <= {(float(a), float(b)) for a, b in xy}
    p = dp2.peaks
    for ax, plane, peak in (
        (to_memory, "comm-to-memory", p["apm"]),
        (to_flops, "comm-to-flops", p["apf"]),
    ):
        judged = [x for x in dp2.layers if x.plane == plane and x.comm_bytes]
        points = [tuple(q) for c in ax.collections if c.get_offsets().size for q in c.get_offsets()]
        whole = 1 if dp2.iteration.plane == plane else 0
        assert len(points) == len(judged) + whole
        for x, y in points:
            assert y == pytest.approx(min(p["apb"], peak * x), rel=1e-9)


def test_single_worker_comm_planes_say_there_is_no_communication(resnet50):
    result = analyze(resnet50, load_cluster(MIXED_LAB), Parallel())
    assert result.peaks["apb"] is None
    fig = planes_figure(result)
    for ax in fig.axes[1:3]:
        assert not ax.collections
        assert any(t.get_text().startswith("no communication") for t in ax.texts)


def test_breakdown_bars_add_up_to_each_block(dp2):
    ax = breakdown_figure(dp2).axes[0]
    compute, memory, fixed, exposed = (c for c in ax.containers)
    for i, layer in enumerate(dp2.layers):
        parts = [bar[i].get_width() for bar in (compute, memory, fixed, exposed)]
        assert sum(parts) == pytest.approx(layer.predicted_s * 1e3, rel=1e-9)
        assert parts[:3] == pytest.approx(
            [layer.t_compute_s * 1e3, layer.t_memory_s * 1e3, layer.overhead_s * 1e3], rel=1e-9
        )
        assert parts[3] == pytest.approx(layer.exposed_comm_s * 1e3, rel=1e-9)
    # derived per block, the exposed parts add up to the iteration's exposed communication
    assert sum(b.get_width() for b in exposed) == pytest.approx(
        dp2.iteration.exposed_comm_s * 1e3, rel=1e-6
    )
