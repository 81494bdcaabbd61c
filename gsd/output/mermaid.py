"""A phase's schedule as a Mermaid flowchart: `gsd waves --format mermaid`, `gsd diff`'s
wave graph.

The syntax is Mermaid's flowchart grammar (docs/syntax/flowchart.md of mermaid-js/mermaid,
v11): `flowchart LR`, `subgraph id["title"] ... end` with `direction TB` inside,
nodes `id["label"]` whose quoted text may hold `<br/>` and entity codes such as
`#quot;`, edges `a --> b`, and `classDef` / `class` for styles. GitHub renders a
```` ```mermaid ```` block of it in Markdown, pull-request comments included.
"""

from __future__ import annotations

import json
import re

from gsd.core.graph import PhaseGraph

OVERLAP_STYLE = "fill:#fff4e5,stroke:#d97706,stroke-dasharray:4 3"
CYCLE_STYLE = "fill:#fde8e8,stroke:#c81e1e"


def node_id(plan_id: str) -> str:
    """A Mermaid node id for a plan id: letters, digits and `_` only (`p01_02`), so no
    plan id can be a keyword such as `end` or break the grammar."""
    return "p" + re.sub(r"[^0-9A-Za-z]", "_", plan_id)


def label_text(text: str) -> str:
    """Text inside a quoted label: Mermaid's entity codes for what would end the quote or
    open markup (`#quot;`, `#lt;`, `#gt;`, `#35;` for `#` itself)."""
    out = text.replace("#", "#35;").replace('"', "#quot;")
    return out.replace("<", "#lt;").replace(">", "#gt;")


def specialists(graph: PhaseGraph, plan_id: str) -> list[str]:
    """The specialists a plan's tasks name, as written, each once, in task order."""
    plan = graph.plans[plan_id]
    return list(dict.fromkeys(t.specialist for t in plan.tasks if t.specialist))


def flowchart(graph: PhaseGraph, title: str = "") -> str:
    """The phase's flowchart: a column per wave (a subgraph), a node per plan labelled
    with its id and specialists, an arrow per dependency; the plans of a wave that share
    files sit in a nested, highlighted subgraph ("one after another"), and plans on a
    cycle, which never run, in a red one."""
    out = ["flowchart LR"]
    for number, wave in enumerate(graph.waves, 1):
        out.append(f'    subgraph wave{number}["Wave {number}"]')
        out.append("        direction TB")
        for g, group in enumerate(graph.sequential_groups(wave), 1):
            if len(group) == 1:
                out.append("        " + _node(graph, group[0]))
                continue
            shared = ", ".join(_shared_files(graph, group))
            head = label_text(f"one after another: {shared}" if shared else "one after another")
            out.append(f'        subgraph wave{number}group{g}["{head}"]')
            out.extend("            " + _node(graph, pid) for pid in group)
            out.append("        end")
            out.append(f"        class wave{number}group{g} overlap")
        out.append("    end")
    stuck = [pid for pid in graph.plans if pid not in graph.wave_of]
    if stuck:
        out.append('    subgraph stuck["Not scheduled: a dependency cycle"]')
        out.extend("        " + _node(graph, pid) for pid in stuck)
        out.append("    end")
        out.append("    class stuck stuck")
    for pid, deps in graph.deps.items():
        out.extend(f"    {node_id(dep)} --> {node_id(pid)}" for dep in deps)
    out.append(f"    classDef overlap {OVERLAP_STYLE}")
    out.append(f"    classDef stuck {CYCLE_STYLE}")
    text = "\n".join(out) + "\n"
    if title:
        return f"---\ntitle: {json.dumps(title)}\n---\n{text}"
    return text


def _node(graph: PhaseGraph, pid: str) -> str:
    names = specialists(graph, pid)
    label = label_text(pid) + ("<br/>" + "<br/>".join(map(label_text, names)) if names else "")
    return f'{node_id(pid)}["{label}"]'


def _shared_files(graph: PhaseGraph, group: list[str]) -> list[str]:
    members = set(group)
    files: dict[str, None] = {}
    for pids, paths in graph.shared_files.items():
        if members.issuperset(pids):
            files.update(dict.fromkeys(paths))
    return list(files)


def markdown_block(graph: PhaseGraph, title: str = "") -> str:
    """The flowchart in a fenced ```` ```mermaid ```` block, as GitHub renders it."""
    return f"```mermaid\n{flowchart(graph, title)}```\n"
