"""``--format html``: one self-contained HTML file for a ``RooflineResult``.

Everything is inline: CSS, the charts as SVG (text drawn as paths, so no fonts are fetched), and a
small script that sorts the per-block table when a header is clicked. The file makes no request
of any kind, so it can be mailed, attached to an issue, or opened on a machine without network.
Every string that comes from the result (model, cluster, block and device names, notes) goes
through :func:`html.escape`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from html import escape

from trainplay.report.breakdown import breakdown_svg
from trainplay.report.figures import BOUND_COLOURS, device_and_exposed_s, format_rate, layout_text
from trainplay.report.planes import planes_svg
from trainplay.report.roofline_table import summary_lines
from trainplay.report.units import column_scale
from trainplay.roofline.analysis import LayerResult, RooflineResult

__all__ = ["render_html"]

_NUM_HEAD = ' class="num" data-type="num"'
_FLAGGED = ' class="flagged"'
_PEAK_UNITS = {"compute": "FLOP/s", "memory": "B/s", "communication": "B/s", "overhead": "s"}

_CSS = (
    ":root { "
    + " ".join(f"--{bound}: {colour};" for bound, colour in BOUND_COLOURS.items())
    + " }"
    + """
:root { --bubble: #999999; --ink: #1d2329; --muted: #5b6570; --rule: #d8dde3; --band: #f5f7f9; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1360px; padding: 24px 28px 48px; color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--rule); }
p { margin: 6px 0; }
.meta { color: var(--muted); }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 10px;
  margin: 16px 0 4px; }
.card { background: var(--band); border: 1px solid var(--rule); border-radius: 6px; padding: 8px 12px; }
.card .k { color: var(--muted); font-size: 13px; }
.card .v { font-size: 17px; white-space: nowrap; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .s { color: var(--muted); font-size: 12px; }
.headline { font-size: 18px; margin: 8px 0 10px; }
.shares { display: flex; height: 30px; border-radius: 5px; overflow: hidden; border: 1px solid var(--rule); }
.shares div { color: #fff; font-size: 13px; font-weight: 600; line-height: 28px; padding: 0 8px;
  white-space: nowrap; overflow: hidden; text-overflow: clip; }
.shares .memory { color: #1d2329; }
.key { display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 6px 0 12px; font-size: 14px; }
.key span::before { content: ""; display: inline-block; width: 11px; height: 11px; margin-right: 6px;
  border-radius: 2px; background: var(--c); vertical-align: -1px; }
.compute { background: var(--compute); } .memory { background: var(--memory); }
.communication { background: var(--communication); } .bubble { background: var(--bubble); }
ul.lines { margin: 6px 0; padding-left: 22px; }
ul.lines li { margin: 3px 0; }
.callout { border-left: 4px solid var(--communication); background: #fbf3f8; padding: 8px 14px;
  border-radius: 0 6px 6px 0; margin: 8px 0; }
.callout.ok { border-left-color: #009E73; background: #eef8f4; }
figure { margin: 10px 0 18px; }
figure svg { display: block; width: 100%; height: auto; }
figure.narrow svg { max-width: 1100px; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; max-width: 1100px; }
.table-wrap { overflow-x: auto; border: 1px solid var(--rule); border-radius: 6px; }
table { border-collapse: collapse; width: 100%; font-size: 12px; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 6px; border-bottom: 1px solid var(--rule); white-space: nowrap; }
th { background: var(--band); text-align: left; font-weight: 600; vertical-align: bottom; }
th.num, td.num { text-align: right; }
th small { display: block; font-weight: 400; color: var(--muted); }
tbody tr:nth-child(even) { background: #fafbfc; }
tbody tr:hover { background: #eef3f8; }
tfoot td { font-weight: 600; background: var(--band); border-top: 2px solid var(--rule); }
table.sortable thead th { cursor: pointer; user-select: none; }
table.sortable thead th:hover { background: #e8edf2; }
table.sortable thead th .h::after { content: "\\2195"; color: #aab2bb; font-weight: 400;
  padding-left: 2px; }
table.sortable thead th[aria-sort="ascending"] .h::after { content: "\\25B2"; color: var(--ink); }
table.sortable thead th[aria-sort="descending"] .h::after { content: "\\25BC"; color: var(--ink); }
.chip { display: inline-block; padding: 0 7px; border-radius: 9px; color: #fff; font-size: 12px; }
.chip.memory { color: #1d2329; }
.stage { color: var(--muted); font-size: 11px; margin-left: 6px; }
tr.flagged td { background: #fbeaf3; }
.hint { color: var(--muted); font-size: 13px; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
@media print {
  @page { size: A4 landscape; margin: 12mm; }
  body { max-width: none; padding: 0; font-size: 11px; }
  h2 { break-after: avoid; margin-top: 18px; }
  figure, .cards, .callout, tr, #planes, #breakdown, #stragglers, #workers {
    break-inside: avoid; }
  figure svg { width: auto; max-width: 100%; max-height: 150mm; }
  .table-wrap { overflow: visible; border: none; }
  table { font-size: 9.5px; }
  table.sortable thead th .h::after { content: none; }
  .hint { display: none; }
  tbody tr:hover { background: none; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""
)

_SORT_SCRIPT = """
(function () {
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.tabIndex = 0;
      function sort() {
        var numeric = th.dataset.type === "num";
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        function key(row) {
          var cell = row.cells[col];
          return numeric ? parseFloat(cell.dataset.v) : cell.textContent.trim().toLowerCase();
        }
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          if (numeric && isNaN(x)) return 1;
          if (numeric && isNaN(y)) return -1;
          return (x < y ? -1 : x > y ? 1 : 0) * dir;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  });
})();
"""

_PREFIXES = {
    "straggler": "straggler: ",
    "none": "no straggler: ",
    "what_if": "what if: ",
    "note": "note: ",
}


def _sorted_lines(result: RooflineResult) -> dict[str, list[str]]:
    """``summary_lines`` by kind: the summary itself, stragglers, no-straggler, what-if, notes."""
    kinds: dict[str, list[str]] = {"summary": [], **{k: [] for k in _PREFIXES}}
    for line in summary_lines(result):
        kind = next((k for k, p in _PREFIXES.items() if line.startswith(p)), "summary")
        kinds[kind].append(line[len(_PREFIXES[kind]) :] if kind != "summary" else line)
    return kinds


def _percent(share: float) -> str:
    """Whole percents, but never a rounded 0% or 100% for a share that is neither."""
    if 0 < share < 0.005 or 0.995 <= share < 1:
        return f"{100 * share:.1f}%"
    return f"{100 * share:.0f}%"


def _sentence(text: str) -> str:
    """Escaped as it is: a line may begin with a block's name, whose case matters."""
    return escape(text)


def _num(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(float(value))


def _cell(value: float, text: str) -> str:
    return f'<td class="num" data-v="{_num(value)}">{escape(text)}</td>'


def _chip(bound: str, short: bool = False) -> str:
    kind = bound if bound in BOUND_COLOURS else "bubble"
    text = "comm." if short and bound == "communication" else bound
    return f'<span class="chip {kind}" title="{escape(bound)}">{escape(text)}</span>'


def _header(result: RooflineResult) -> str:
    p, it = result.peaks, result.iteration
    cards = [
        ("predicted iteration", f"{it.predicted_s * 1e3:.4g} ms", f"{it.bound}-bound as a whole"),
        ("APF", format_rate(p["apf"], "FLOP/s"), "achievable FLOP/s (slowest worker)"),
        ("APM", format_rate(p["apm"], "B/s"), "achievable memory bandwidth"),
        (
            "APB",
            format_rate(p["apb"], "B/s") if p["apb"] is not None else "none",
            "communication bandwidth" if p["apb"] is not None else "one worker: nothing to send",
        ),
        ("A_max", f"{p['a_max']:.3g} FLOP/B", "ridge, intra-device plane"),
        ("O_max", "–" if p["o_max"] is None else f"{p['o_max']:.3g} B/B", "ridge, comm.-to-memory"),
        (
            "C_max",
            "–" if p["c_max"] is None else f"{p['c_max']:.3g} B/FLOP",
            "ridge, comm.-to-FLOPs",
        ),
    ]
    card_html = "".join(
        f'<div class="card"><div class="k">{escape(k)}</div><div class="v">{escape(v)}</div>'
        f'<div class="s">{escape(s)}</div></div>'
        for k, v, s in cards
    )
    return (
        f"<header><h1>MD-Roofline report: {escape(result.model)}</h1>"
        f'<p class="meta">batch {result.batch_size} · {escape(result.dtype)} · on '
        f"<b>{escape(result.cluster)}</b> · {escape(layout_text(result))} · "
        f"{len(result.workers)} worker(s) · peaks: {escape(result.peaks_origin)}</p>"
        f'<div class="cards">{card_html}</div></header>'
    )


def _summary(result: RooflineResult, lines: dict[str, list[str]]) -> str:
    shares = sorted(result.iteration.bound_shares.items(), key=lambda kv: -kv[1])
    top_kind, top_share = shares[0]
    what = "pipeline bubble" if top_kind == "bubble" else f"{top_kind}-bound"
    bar = "".join(
        f'<div class="{escape(k)}" style="width:{100 * v:.3f}%" title="{escape(k)} {100 * v:.1f}%">'
        f"{escape(k) if v >= 0.08 else ''} {_percent(v) if v >= 0.04 else ''}</div>"
        for k, v in shares
        if v > 0
    )
    key = "".join(
        f'<span style="--c: var(--{escape(k)})">{escape(k)} {100 * v:.1f}%</span>'
        for k, v in shares
    )
    body = "".join(f"<li>{_sentence(line)}</li>" for line in lines["summary"])
    return (
        '<section id="summary"><h2>Bottleneck</h2>'
        f'<p class="headline"><b>{_percent(top_share)}</b> of the predicted iteration time is '
        f"<b>{escape(what)}</b>.</p>"
        f'<div class="shares" role="img" aria-label="share of iteration time by bound">{bar}</div>'
        f'<div class="key">{key}</div><ul class="lines">{body}</ul></section>'
    )


def _stragglers(result: RooflineResult, lines: dict[str, list[str]]) -> str:
    out = ['<section id="stragglers"><h2>Stragglers</h2>']
    if not result.stragglers:
        text = lines["none"][0] if lines["none"] else "no worker's peaks lie far below its peers'."
        out.append(f'<p class="callout ok">No straggler: {escape(text)}</p></section>')
        return "".join(out)
    out.extend(f'<p class="callout">{_sentence(line)}</p>' for line in lines["straggler"])
    rows = "".join(
        f'<tr><td class="num">{s.rank}</td><td>{escape(s.node)}</td><td>{escape(s.device)}</td>'
        f"<td>{_chip(s.dimension)}</td>"
        f'<td class="num">{escape(format_rate(s.value, _PEAK_UNITS.get(s.dimension, "")))}</td>'
        f'<td class="num">{escape(format_rate(s.median, _PEAK_UNITS.get(s.dimension, "")))}</td>'
        f'<td class="num">{s.value / s.median:.0%}</td><td class="num"><b>{s.slowdown:.2f}×</b></td></tr>'
        for s in result.stragglers
    )
    out.append(
        '<div class="table-wrap"><table><thead><tr><th class="num">rank</th><th>node</th>'
        '<th>device</th><th>dimension</th><th class="num">its peak</th><th class="num">median peak</th>'
        '<th class="num">of median</th><th class="num">slows the iteration</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
        '<p class="hint">Slowdown: predicted iteration with the system peaks / predicted '
        "iteration were this worker like the median one.</p></section>"
    )
    return "".join(out)


def _what_if(result: RooflineResult) -> str:
    if result.what_if:
        items = "".join(f"<li>{_sentence(line)}</li>" for line in result.what_if)
        body = f'<ul class="lines">{items}</ul>'
    else:
        body = "<p>The analysis made no what-if estimate for this run.</p>"
    return f'<section id="what-if"><h2>What if</h2>{body}</section>'


def _charts(result: RooflineResult) -> str:
    return (
        '<section id="planes"><h2>The three planes</h2><figure>'
        f"{planes_svg(result)}<figcaption>One point per block, coloured by its bound and sized by "
        "its share of the predicted iteration time; the star is the whole iteration. "
        "<b>Intra-device</b>: every block at (A, F / predicted time): the gap under the roof is "
        "time the block does not spend at the roofline (its exposed communication). "
        "<b>Communication planes</b>: each block that communicates, on the plane it is judged on "
        "(comm.-to-memory when A &lt; A_max, comm.-to-FLOPs otherwise), at "
        "(O or C, P / max(t_compute, t_memory, t_comm)): its bytes over its time with the three "
        "dimensions overlapped, since a gradient bucket is reduced while earlier blocks still "
        "compute. These points sit on the roof; right of the ridge a block is "
        "communication-bound.</figcaption>"
        "</figure></section>"
        '<section id="breakdown"><h2>Time per block</h2><figure class="narrow">'
        f"{breakdown_svg(result)}<figcaption>In execution order. Device time is the "
        "forward and backward at their rooflines, coloured by the larger of compute and memory; "
        "the hatched part is communication not hidden behind computation. Outside the blocks: "
        f"{escape(_outside(result))}.</figcaption></figure></section>"
    )


def _blocks(result: RooflineResult) -> str:
    layers, it = result.layers, result.iteration
    f_scale, f_prefix = column_scale([x.flops for x in layers], binary=False)
    m_scale, m_prefix = column_scale([x.mem_bytes for x in layers], binary=True)
    p_scale, p_prefix = column_scale([x.comm_bytes for x in layers], binary=True)
    total = it.predicted_s or 1.0
    pipeline = result.parallel.get("pp", 1) > 1

    def num(get: Callable[[LayerResult], float], fmt: Callable[[float], str]):
        return lambda x: _cell(get(x), fmt(get(x)))

    def ms(value: float) -> str:
        return f"{value * 1e3:.3g}"

    def exposed(x: LayerResult) -> float:
        return device_and_exposed_s(x)[1]

    def stage(x: LayerResult) -> str:
        return f'<span class="stage">stage {x.stage}</span>' if pipeline else ""

    def of_roof(x: LayerResult) -> float:
        return x.achieved_flops / x.roof_flops if x.roof_flops else 0.0

    # (header, unit, numeric, cell of a block, cell of the whole iteration)
    columns: list[tuple[str, str, bool, Callable[[LayerResult], str], str]] = [
        (
            "block",
            "",
            False,
            lambda x: f'<td title="{escape(x.kind)}">{escape(x.name)}{stage(x)}</td>',
            "<td>whole iteration</td>",
        ),
    ]
    columns += [
        (
            "F",
            f"{f_prefix}FLOP",
            True,
            num(lambda x: x.flops, lambda v: f"{v / f_scale:.3g}"),
            _foot(f"{it.flops / f_scale:.3g}"),
        ),
        (
            "M",
            f"{m_prefix}B",
            True,
            num(lambda x: x.mem_bytes, lambda v: f"{v / m_scale:.3g}"),
            _foot(f"{it.mem_bytes / m_scale:.3g}"),
        ),
        (
            "P",
            f"{p_prefix}B",
            True,
            num(lambda x: x.comm_bytes, lambda v: f"{v / p_scale:.3g}"),
            _foot(f"{it.comm_bytes / p_scale:.3g}"),
        ),
        ("A", "FLOP/B", True, num(lambda x: x.A, lambda v: f"{v:.3g}"), _foot(f"{it.A:.3g}")),
        ("O", "P/M", True, num(lambda x: x.O, lambda v: f"{v:.2g}"), _foot(f"{it.O:.2g}")),
        ("C", "P/F", True, num(lambda x: x.C, lambda v: f"{v:.2g}"), _foot(f"{it.C:.2g}")),
        (
            "plane",
            "",
            False,
            lambda x: f"<td>{escape(x.plane)}</td>",
            f"<td>{escape(it.plane)}</td>",
        ),
        (
            "bound",
            "",
            False,
            lambda x: f"<td>{_chip(x.bound, short=True)}</td>",
            f"<td>{_chip(it.bound, short=True)}</td>",
        ),
        ("t_comp", "ms", True, num(lambda x: x.t_compute_s, ms), _foot(ms(it.t_compute_s))),
        ("t_mem", "ms", True, num(lambda x: x.t_memory_s, ms), _foot(ms(it.t_memory_s))),
        ("t_comm", "ms", True, num(lambda x: x.t_comm_s, ms), _foot(ms(it.t_comm_s))),
        ("exposed", "ms", True, num(exposed, ms), _foot(ms(it.exposed_comm_s))),
        (
            "predicted",
            "ms",
            True,
            num(lambda x: x.predicted_s, ms),
            _foot(f"{it.predicted_s * 1e3:.4g}"),
        ),
        (
            "share",
            "of iteration",
            True,
            num(lambda x: x.predicted_s / total, lambda v: f"{v:.1%}"),
            _foot("100%"),
        ),
        ("achieved", "% of roof", True, num(of_roof, lambda v: f"{v:.0%}"), "<td></td>"),
    ]
    head = f'<th{_NUM_HEAD} scope="col"><span class="h">#</span></th>' + "".join(
        f'<th{_NUM_HEAD if numeric else ""} scope="col"><span class="h">{escape(h)}</span>'
        f"{f'<small>{escape(unit)}</small>' if unit else ''}</th>"
        for h, unit, numeric, _, _ in columns
    )
    rows = "".join(
        "<tr>" + _cell(i, str(i)) + "".join(cell(x) for _, _, _, cell, _ in columns) + "</tr>"
        for i, x in enumerate(layers)
    )
    foot = "<tr><td></td>" + "".join(f for *_, f in columns) + "</tr>"
    return (
        f'<section id="blocks"><h2>Blocks ({len(layers)})</h2>'
        '<p class="hint">Click a column header to sort, again to reverse; hover a block for its kind. F, M: forward + '
        "backward; P: bytes the block sends (gradient all-reduce traffic, activations at a "
        "pipeline cut); t_comp, t_mem, t_comm: F/APF, M/APM, P/APB; exposed: communication "
        "not hidden behind computation; achieved: F / predicted "
        "time against the roof at the block's A. The "
        f"iteration row includes what no block holds: {escape(_outside(result))}.</p>"
        '<div class="table-wrap"><table class="sortable" id="block-table">'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody>"
        f"<tfoot>{foot}</tfoot></table></div></section>"
    )


def _outside(result: RooflineResult) -> str:
    it = result.iteration
    text = f"optimizer step {it.optimizer_s * 1e3:.3g} ms"
    if result.parallel.get("pp", 1) > 1:
        text += f", pipeline bubble {it.bubble_s * 1e3:.3g} ms"
    return text


def _foot(text: str) -> str:
    return f'<td class="num">{escape(text)}</td>'


def _workers(result: RooflineResult) -> str:
    if not result.workers:
        return ""
    slow = {s.rank for s in result.stragglers}
    rows = "".join(
        f'<tr{_FLAGGED if w.get("rank") in slow else ""}><td class="num">{w.get("rank")}</td>'
        f"<td>{escape(str(w.get('node')))}</td><td>{escape(str(w.get('device')))}</td>"
        f'<td class="num">{escape(format_rate(w.get("apf"), "FLOP/s"))}</td>'
        f'<td class="num">{escape(format_rate(w.get("apm"), "B/s"))}</td>'
        f'<td class="num">{escape(format_rate(w.get("apb"), "B/s"))}</td>'
        f"<td>{escape(str(w.get('origin', '')))}</td></tr>"
        for w in result.workers
    )
    return (
        '<section id="workers"><h2>Workers</h2><div class="table-wrap"><table><thead><tr>'
        '<th class="num">rank</th><th>node</th><th>device</th><th class="num">APF</th>'
        '<th class="num">APM</th><th class="num">APB</th><th>peaks from</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
        '<p class="hint">APB: the all-reduce bandwidth a worker measured; where none was measured '
        "the job's APB is that of the slowest link the collective crosses. Highlighted: a "
        "straggler.</p></section>"
    )


def _notes(result: RooflineResult) -> str:
    if not result.notes:
        return ""
    items = "".join(f"<li>{_sentence(line)}</li>" for line in result.notes)
    return f'<section id="notes"><h2>Notes</h2><ul class="lines">{items}</ul></section>'


def render_html(result: RooflineResult) -> str:
    """The whole report as one HTML document (a string), with nothing to fetch."""
    lines = _sorted_lines(result)
    title = f"MD-Roofline · {result.model} on {result.cluster} ({layout_text(result)})"
    body = "".join(
        (
            _header(result),
            _summary(result, lines),
            _stragglers(result, lines),
            _what_if(result),
            _charts(result),
            _blocks(result),
            _workers(result),
            _notes(result),
        )
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>"
        f"<body>{body}<footer>Generated by trainplay from the MD-Roofline analysis (Miao et al., "
        "IEEE ISCC 2022). Every time here is predicted from the peaks above, not measured.</footer>"
        f"<script>{_SORT_SCRIPT}</script></body></html>\n"
    )
