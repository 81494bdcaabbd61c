"""`gsd report --format html`: the SVG's bars, the page's self-containment, and a real
headless chromium rendering it (Debian's `chromium`: `make chromium`)."""

from __future__ import annotations

import shutil
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest
from lxml import html as lxml_html

from gsd.commands.report import WaveSpan, build, timeline
from gsd.output.htmlreport import colour, render

SVG = "{http://www.w3.org/2000/svg}"


def result(ts: str, plan: str, task: int, attempt: int, ok: bool, took: float, **more: Any):
    return {
        "ts": ts,
        "event": "result",
        "plan": plan,
        "task": task,
        "attempt": attempt,
        "agent": more.pop("agent", "python-pro"),
        "success": ok,
        "error_type": None if ok else more.pop("error", "timeout-kill"),
        "duration_s": took,
        **more,
    }


EVENTS: list[dict[str, Any]] = [
    {"ts": "2026-11-24T10:00:00.000Z", "event": "run-start", "phase": "01"},
    {
        "ts": "2026-11-24T10:00:00.100Z",
        "event": "wave-start",
        "wave": 1,
        "plans": ["01-01", "01-02"],
    },
    result(
        "2026-11-24T10:00:02.000Z",
        "01-01",
        1,
        1,
        True,
        1.8,
        input_tokens=900,
        output_tokens=100,
        cost_usd=0.02,
    ),
    result("2026-11-24T10:00:08.000Z", "01-02", 1, 1, False, 7.9),
    {"ts": "2026-11-24T10:00:08.100Z", "event": "retry", "plan": "01-02", "task": 1},
    result("2026-11-24T10:00:09.000Z", "01-02", 1, 2, True, 0.8, agent="gsd-executor"),
    {"ts": "2026-11-24T10:00:09.100Z", "event": "wave-end", "wave": 1},
    {"ts": "2026-11-24T10:00:09.200Z", "event": "wave-start", "wave": 2, "plans": ["01-03"]},
    result("2026-11-24T10:00:10.000Z", "01-03", 1, 1, False, 0.5, error="crash"),
    {"ts": "2026-11-24T10:00:10.100Z", "event": "wave-end", "wave": 2},
    {"ts": "2026-11-24T10:00:10.200Z", "event": "run-end"},
]


def page(events: list[dict[str, Any]] = EVENTS) -> str:
    return render(build(events), timeline(events), "gsd report: test")


def test_one_bar_per_attempt_in_its_plans_lane_coloured_by_outcome() -> None:
    doc = lxml_html.document_fromstring(page())
    svg = doc.xpath("//*[local-name()='svg']")[0]
    bars = svg.xpath(".//*[local-name()='rect'][@class='attempt']")
    results = [e for e in EVENTS if e["event"] == "result"]
    assert len(bars) == len(results)
    for bar, e in zip(bars, results, strict=True):
        assert bar.get("data-plan") == e["plan"] and bar.get("data-attempt") == str(e["attempt"])
        outcome = "ok" if e["success"] else e["error_type"]
        assert bar.get("fill") == colour(outcome)
    assert colour("ok") != colour("timeout-kill") != colour("crash")
    assert colour("made no change") not in (colour("ok"), colour("report-mismatch"))
    lanes = {bar.get("y") for bar in bars}
    assert len(lanes) == 3  # one lane per plan


def test_bars_span_their_seconds_and_waves_are_marked() -> None:
    bars = timeline(EVENTS)
    assert [(a.start, a.end) for a in bars.attempts][:2] == [(0.2, 2.0), (0.1, 8.0)]
    assert bars.waves == [
        WaveSpan(wave=1, start=0.1, end=9.1),
        WaveSpan(wave=2, start=9.2, end=10.1),
    ]
    assert "wave 2" in page()


def test_tokens_and_cost_charts_and_not_reported() -> None:
    text = page()
    assert "1,000 tokens" in text and "0.02 USD" in text
    assert "not reported" in text  # gsd-executor reported none
    quiet = [e for e in EVENTS if not e.get("input_tokens")]
    assert "Not reported by the runners of this run." in page(quiet)


def test_self_contained_no_script_no_network() -> None:
    text = page()
    doc = lxml_html.document_fromstring(text)
    assert not doc.xpath("//script") and "http://" not in text.replace(
        "http://www.w3.org/2000/svg", ""
    )
    assert "https://" not in text and not doc.xpath("//link|//img|//iframe")


def test_an_empty_log_is_still_a_page() -> None:
    assert "no attempts" in page([])


def test_gsd_report_format_html(git_project, gsd) -> None:  # type: ignore[no-untyped-def]
    log = git_project.planning / "execution-log.jsonl"
    import json

    log.write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    run = gsd("report", "--format", "html")
    assert run.code == 0, run.err
    assert run.out.startswith("<!DOCTYPE html>") and 'class="attempt"' in run.out


def png_pixels(path: Path) -> bytes:
    """The PNG's decompressed image data (filter bytes included): enough to tell a page
    with pictures on it from a blank one."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat = 8, b""
    while at < len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        if data[at + 4 : at + 8] == b"IDAT":
            idat += data[at + 8 : at + 8 + length]
        at += 12 + length
    return zlib.decompress(idat)


def test_chromium_renders_the_page(tmp_path: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (make chromium installs it)")
    source, shot = tmp_path / "report.html", tmp_path / "report.png"
    source.write_text(page())
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1000,800",
            f"--screenshot={shot}",
            source.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
        cwd=tmp_path,
    )
    pixels = png_pixels(shot)
    assert len(set(pixels)) > 20  # a blank page has a handful of byte values
