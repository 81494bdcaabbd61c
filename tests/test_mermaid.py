"""`gsd waves --format mermaid`: the flowchart, checked by the real Mermaid parser."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gsd.core.graph import build
from gsd.formats.planning.plan import parse
from gsd.output.mermaid import flowchart, label_text, markdown_block, node_id
from tests.conftest import auto_task, plan_text

PARSER = Path(__file__).parent / "mermaid" / "parse.mjs"


def make(pid: str, deps: list[str], files: list[str], specialists: list[str]):  # type: ignore[no-untyped-def]
    tasks = "\n".join(
        auto_task(f"Task {i}: do it", attrs=f' specialist="{name}"')
        for i, name in enumerate(specialists, 1)
    )
    text = plan_text(
        plan=pid.split("-")[1],
        depends_on="[" + ", ".join(deps) + "]",
        files_modified="[" + ", ".join(files) + "]",
        tasks=tasks or None,
    )
    return parse(text, f".planning/phases/01-alpha/{pid}-PLAN.md")


def graph():  # type: ignore[no-untyped-def]
    return build(
        [
            make("01-01", [], ["a.py"], ["python-pro"]),
            make("01-02", [], ["a.py"], ["code-reviewer", "python-pro"]),
            make("01-03", ["01-01", "01-02"], ["c.py"], ["technical-writer"]),
            make("01-04", ["01-05"], ["d.py"], []),
            make("01-05", ["01-04"], ["e.py"], []),
        ]
    )


def test_waves_are_columns_plans_nodes_dependencies_edges() -> None:
    text = flowchart(graph())
    assert text.startswith("flowchart LR\n")
    assert 'subgraph wave1["Wave 1"]' in text and 'subgraph wave2["Wave 2"]' in text
    assert 'p01_02["01-02<br/>code-reviewer<br/>python-pro"]' in text
    assert "p01_01 --> p01_03" in text and "p01_02 --> p01_03" in text


def test_overlap_groups_and_cycles_are_marked() -> None:
    text = flowchart(graph())
    assert 'subgraph wave1group1["one after another: a.py"]' in text
    assert "class wave1group1 overlap" in text
    assert 'subgraph stuck["Not scheduled: a dependency cycle"]' in text
    assert "p01_04 --> p01_05" in text and "p01_05 --> p01_04" in text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param('say "hi"', "say #quot;hi#quot;", id="quote"),
        pytest.param("<b>#1", "#lt;b#gt;#35;1", id="markup-and-hash"),
    ],
)
def test_label_text_uses_entity_codes(raw: str, expected: str) -> None:
    assert label_text(raw) == expected


def test_node_ids_are_never_keywords() -> None:
    assert node_id("01-02") == "p01_02" and node_id("12A.1-03") == "p12A_1_03"


def test_markdown_block_is_a_mermaid_fence() -> None:
    block = markdown_block(graph(), "Phase 01-alpha")
    assert block.startswith('```mermaid\n---\ntitle: "Phase 01-alpha"\n---\nflowchart LR\n')
    assert block.endswith("```\n")


@pytest.fixture(scope="module")
def mermaid_parser() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the real Mermaid parser needs Node.js 20+")
    done = subprocess.run(["sh", str(PARSER.parent / "install.sh")], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot install the Mermaid parser: {done.stderr.strip()[-300:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def real_parse(folder: Path, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", str(folder / "parse.mjs")],
        input=text,
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=120,
    )


def test_the_real_mermaid_parser_accepts_the_flowchart(mermaid_parser: Path) -> None:
    odd = build([make("01-01", [], ["a"], ['we"ird', "end", "<x>#y"]), *graph().plans.values()])
    for text in (flowchart(graph(), 'Phase "01"'), flowchart(odd)):
        done = real_parse(mermaid_parser, text)
        assert done.returncode == 0, done.stderr
        assert '"diagramType":"flowchart' in done.stdout


def test_the_real_parser_refuses_broken_text(mermaid_parser: Path) -> None:
    assert real_parse(mermaid_parser, 'flowchart LR\n  a[" -->\n').returncode == 1


def test_gsd_waves_format_mermaid(project, gsd) -> None:  # type: ignore[no-untyped-def]
    project.plan("01-01", files_modified="[a]")
    project.plan("01-02", depends_on='["01-01"]', files_modified="[b]")
    run = gsd("waves", "1", "--format", "mermaid")
    assert run.code == 0, run.err
    assert "flowchart LR" in run.out and "p01_01 --> p01_02" in run.out
