"""`gsd report --format html`: one self-contained page, inline SVG built with lxml, no
JavaScript and nothing fetched: the run's timeline and its tokens, cost and seconds.

SVG elements and attributes are SVG 1.1's (https://www.w3.org/TR/SVG11/: `rect`, `line`,
`text`, `title` for a hover text, `stroke-dasharray`); an `<svg>` element inside HTML is
foreign content per the HTML Living Standard (section 13.1.2.6), where `<rect/>` may close
itself. The page is written as well-formed XML after `<!DOCTYPE html>`, which an HTML
parser reads the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import astuple
from typing import TYPE_CHECKING

from lxml import etree

from gsd.core.visible import visible
from gsd.core.words import plural
from gsd.formats.junit import NOT_XML

if TYPE_CHECKING:
    from gsd.commands.report import RunReport, Totals
    from gsd.commands.reportbars import Bar, Bars, WaveSpan
    from gsd.commands.reportreviews import ReviewRow

SVG = "http://www.w3.org/2000/svg"
COLOURS = {
    "ok": "#2f9e44",
    "soft success": "#94d82d",
    "made no change": "#fab005",  # a writing task that changed nothing: done, but flagged
    "timeout": "#f08c00",
    "timeout-kill": "#f08c00",
    "interrupted": "#868e96",
}
FAILED = "#e03131"
# the marks on a bar (issue 24): its review's verdict as a glyph, a salvage as a dot
VERDICT_GLYPHS = {"approve": "\u2713", "changes": "\u21bb", "reject": "\u2717", "error": "!"}
SALVAGE_COLOUR = "#7048e8"
WIDTH, LABEL, LANE = 960, 110, 30
STYLE = """body{font:14px system-ui,sans-serif;margin:24px;color:#212529;max-width:1000px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}svg text{font:12px system-ui,sans-serif}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;
height:12px;margin-right:4px;vertical-align:-1px}table{border-collapse:collapse}
td,th{border:1px solid #dee2e6;padding:3px 8px;text-align:right}td:first-child{text-align:left}"""


def colour(outcome: str) -> str:
    """An attempt's bar colour by how it ended: green ok, yellow made no change, orange
    timeout, red failure."""
    return COLOURS.get(outcome, FAILED)


def render(report: RunReport, bars: Bars, title: str = "gsd report") -> str:
    """The page: `gsd.commands.report.build`'s totals and `timeline`'s bars."""
    html = etree.Element("html", lang="en")
    head = etree.SubElement(html, "head")
    etree.SubElement(head, "meta", charset="utf-8")
    etree.SubElement(head, "title").text = title
    etree.SubElement(head, "style").text = STYLE
    body = etree.SubElement(html, "body")
    etree.SubElement(body, "h1").text = title
    took = f"{bars.seconds:g} s" if bars.attempts else "no attempts"
    etree.SubElement(body, "p").text = (
        f"Run started {bars.start or 'never'}: {took}, "
        f"{plural(len(bars.attempts), 'attempt')}, {plural(report.retries, 'retry')}."
    )
    etree.SubElement(body, "h2").text = "Timeline"
    body.append(_legend(bars.attempts))
    body.append(timeline_svg(bars))
    for rows, name in ((report.per_agent, "agent"), (report.per_plan, "plan")):
        for field, unit in (("tokens", "tokens"), ("cost_usd", "USD"), ("seconds", "s")):
            etree.SubElement(body, "h2").text = f"{_field_name(field)} per {name}"
            values = [(r.name, _value(r, field)) for r in rows]
            body.append(bar_chart(values, unit))
    if report.reviews:  # the review gate's verdicts (issue 24), a row per review
        etree.SubElement(body, "h2").text = "Reviews"
        body.append(reviews_table(report.reviews))
    text = str(etree.tostring(html, encoding="unicode", method="xml"))
    return "<!DOCTYPE html>\n" + text + "\n"


def reviews_table(reviews: list[ReviewRow]) -> etree._Element:
    """A table row per review: plan, task, attempt, round, reviewer, runner, verdict and
    findings (agent text: lxml escapes it)."""
    table = etree.Element("table", {"class": "reviews"})
    heads = ("plan", "task", "attempt", "round", "reviewer", "runner", "verdict", "findings")
    row = etree.SubElement(table, "tr")
    for head in heads:
        etree.SubElement(row, "th").text = head
    for review in reviews:
        row = etree.SubElement(table, "tr", {"class": f"verdict-{review.verdict}"})
        for value in astuple(review):
            etree.SubElement(row, "td").text = _safe(str(value))
    return table


def _field_name(field: str) -> str:
    names = {"tokens": "Tokens", "cost_usd": "Cost", "seconds": "Seconds"}
    return names[field]


def _value(row: Totals, field: str) -> float | None:
    if field == "tokens":
        counts = [row.input_tokens, row.output_tokens]
        known = [c for c in counts if isinstance(c, (int, float))]
        return float(sum(known)) if known else None
    value = row.cost_usd if field == "cost_usd" else row.seconds
    return float(value) if isinstance(value, (int, float)) else None


def _svg(width: int, height: int, label: str) -> etree._Element:
    svg = etree.Element(
        f"{{{SVG}}}svg",
        nsmap={None: SVG},
        width=str(width),
        height=str(height),
        viewBox=f"0 0 {width} {height}",
        role="img",
    )
    svg.set("aria-label", label)
    return svg


def _add(
    parent: etree._Element, tag: str, text: str | None = None, **attrs: object
) -> etree._Element:
    element = etree.SubElement(
        parent,
        f"{{{SVG}}}{tag}",
        {k.rstrip("_").replace("_", "-"): str(v) for k, v in attrs.items()},
    )
    if text is not None:
        element.text = text
    return element


def timeline_svg(bars: Bars) -> etree._Element:
    """A lane per plan, a bar per attempt coloured by outcome, a band and a dashed line
    per wave, and a seconds axis."""
    plans = bars.plans
    height = 40 + LANE * max(len(plans), 1) + 30
    svg = _svg(WIDTH, height, "the run's timeline: a lane per plan, a bar per attempt")
    span = max(bars.seconds, 1.0)
    scale = (WIDTH - LABEL - 20) / span

    def x(seconds: float) -> float:
        return float(round(LABEL + seconds * scale, 1))

    bottom = 40 + LANE * max(len(plans), 1)
    _waves(svg, bars.waves, x, bottom)
    for lane, plan in enumerate(plans):
        y = 40 + LANE * lane
        _add(svg, "text", _safe(plan), x=8, y=y + LANE / 2 + 4)
        for a in (a for a in bars.attempts if a.plan == plan):
            bar = _add(
                svg,
                "rect",
                x=x(a.start),
                y=y + 5,
                width=max(round(x(a.end) - x(a.start), 1), 2),
                height=LANE - 10,
                fill=colour(a.outcome),
                class_="attempt",
                rx=2,
            )
            for key in ("plan", "task", "attempt", "agent", "outcome", "step"):
                bar.set(f"data-{key}", _safe(str(getattr(a, key))))
            for key, mark in (("review", a.review), ("salvage", a.salvage)):
                if mark:
                    bar.set(f"data-{key}", _safe(mark))
            step = f", {a.step}" if a.step else ""
            _add(
                bar,
                "title",
                _safe(
                    f"{plan} task {a.task} attempt {a.attempt} ({a.agent}{step}): "
                    f"{a.outcome}{f' ({a.note})' if a.note else ''}, {a.start:g}-{a.end:g} s"
                ),
            )
            _marks(svg, a, x(a.start), x(a.end), y)
    _axis(svg, span, x, bottom)
    return svg


def _marks(svg: etree._Element, a: Bar, left: float, right: float, y: float) -> None:
    """A bar's marks: its review's verdict (a glyph at its start, the verdict in its
    hover text) and its salvage (a dot at its end, the ref in its hover text)."""
    where = f"{a.plan} task {a.task} attempt {a.attempt}"
    if a.review:
        glyph = VERDICT_GLYPHS.get(a.review, VERDICT_GLYPHS["error"])
        verdict = a.review if a.review in VERDICT_GLYPHS else "error"
        mark = _add(svg, "text", glyph, x=left + 3, y=y + LANE / 2 + 4, fill="#ffffff")
        mark.set("class", f"review verdict-{verdict}")
        _add(mark, "title", _safe(f"{where}: review verdict {a.review}"))
    if a.salvage:
        dot = _add(svg, "circle", cx=right, cy=y + 6, r=4, fill=SALVAGE_COLOUR, class_="salvage")
        dot.set("data-ref", _safe(a.salvage))
        said = f"{where}: rolled back, its changes kept under {a.salvage} (gsd salvage show)"
        _add(dot, "title", _safe(said))


def _safe(text: str) -> str:
    """Log text (a plan's log is anyone's file) as a page may hold it: made visible,
    and what XML cannot carry written as an escape."""
    return NOT_XML.sub(lambda m: ascii(m.group())[1:-1], visible(text))


def _waves(
    svg: etree._Element, waves: list[WaveSpan], x: Callable[[float], float], bottom: int
) -> None:
    """Each wave's span as a band, its start as a dashed line and its number."""
    for i, wave in enumerate(waves):
        fill = "#f1f3f5" if i % 2 == 0 else "#ffffff"
        _add(
            svg,
            "rect",
            x=x(wave.start),
            y=20,
            width=max(round(x(wave.end) - x(wave.start), 1), 1),
            height=bottom - 20,
            fill=fill,
            class_="wave",
        )
        _add(
            svg,
            "line",
            x1=x(wave.start),
            y1=20,
            x2=x(wave.start),
            y2=bottom,
            stroke="#495057",
            stroke_dasharray="4 3",
        )
        _add(svg, "text", f"wave {wave.wave}", x=x(wave.start) + 4, y=32, fill="#495057")


def _axis(svg: etree._Element, span: float, x: Callable[[float], float], bottom: int) -> None:
    """The seconds axis under the lanes: a tick and a label every 1, 2, 5, 10 ... s."""
    for tick in _ticks(span):
        _add(svg, "line", x1=x(tick), y1=bottom, x2=x(tick), y2=bottom + 5, stroke="#495057")
        _add(svg, "text", f"{tick:g} s", x=x(tick) - 8, y=bottom + 18, fill="#495057")


def _ticks(span: float) -> list[float]:
    step = next(
        s for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 1e9) if span / s <= 10
    )
    return [n * step for n in range(int(span // step) + 1)]


def bar_chart(values: list[tuple[str, float | None]], unit: str) -> etree._Element:
    """A horizontal bar per name (`not reported` for a name without a value); a
    paragraph instead when no name has one."""
    known = [(name, v) for name, v in values if v is not None]
    if not known:
        p = etree.Element("p")
        p.text = "Not reported by the runners of this run."
        return p
    top = max(v for _, v in known) or 1.0
    svg = _svg(WIDTH, 10 + 24 * len(values), f"{unit} per name")
    for i, (name, value) in enumerate(values):
        y = 5 + 24 * i
        _add(svg, "text", name, x=8, y=y + 15)
        if value is None:
            _add(svg, "text", "not reported", x=166, y=y + 15, fill="#868e96")
            continue
        width = max(round((WIDTH - 160 - 120) * value / top, 1), 1)
        _add(svg, "rect", x=160, y=y + 2, width=width, height=18, fill="#4263eb", class_="bar")
        _add(svg, "text", f"{value:,.6g} {unit}", x=160 + width + 6, y=y + 15)
    return svg


def _legend(attempts: list[Bar]) -> etree._Element:
    legend = etree.Element("p", {"class": "legend"})
    for outcome in dict.fromkeys(a.outcome for a in attempts) or ["ok"]:
        item = etree.SubElement(legend, "span")
        etree.SubElement(item, "i", style=f"background:{colour(outcome)}").text = " "
        etree.SubElement(item, "b").text = _safe(outcome)
    verdicts = [v for v in VERDICT_GLYPHS if any(a.review == v for a in attempts)]
    for verdict in verdicts:
        etree.SubElement(legend, "span").text = f"{VERDICT_GLYPHS[verdict]} review: {verdict}"
    if any(a.salvage for a in attempts):
        item = etree.SubElement(legend, "span")
        etree.SubElement(item, "i", style=f"background:{SALVAGE_COLOUR};border-radius:6px")
        item[0].text = " "
        etree.SubElement(item, "b").text = "salvaged (gsd salvage list)"
    return legend
