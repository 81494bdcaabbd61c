"""examples/github/gsd.yml: valid YAML, the jobs it promises, and a matrix that matches
what `gsd waves N --format github-matrix` really prints."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from gsd.core.models import is_plan_id
from tests.conftest import REPO

pytestmark = pytest.mark.unit  # `make test-fast` runs these

WORKFLOW = REPO / "examples" / "github" / "gsd.yml"
TEXT = WORKFLOW.read_text()
# `fromJSON(needs.JOB.outputs.NAME)` and what the expression reads after it: `.include[0]`
FROM_JSON_RE = re.compile(
    r"fromJSON\(\s*needs\.([\w-]+)\.outputs\.([\w-]+)\s*\)((?:\.[\w-]+|\[\d+\])*)"
)
MATRIX_KEY_RE = re.compile(r"\bmatrix\.([\w-]+)")


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load(TEXT)
    assert isinstance(loaded, dict)
    return loaded


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job["steps"])


def runs(job: dict[str, Any]) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


def uses(job: dict[str, Any]) -> list[str]:
    return [s["uses"].split("@")[0] for s in steps(job) if "uses" in s]


def test_triggers_and_jobs(workflow) -> None:
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers) == {"pull_request", "workflow_dispatch"}
    assert set(triggers["workflow_dispatch"]["inputs"]) == {"phase", "wave", "collect"}
    assert set(workflow["jobs"]) == {
        "validate",
        "sarif",
        "plan-diff",
        "schedule",
        "execute",
        "collect",
    }


def test_permissions_are_explicit_and_minimal(workflow) -> None:
    assert workflow["permissions"] == {}
    wanted = {
        "validate": {"contents": "read"},
        "sarif": {"contents": "read", "security-events": "write"},
        "plan-diff": {"contents": "read", "pull-requests": "write"},
        "schedule": {"contents": "read"},
        "execute": {"contents": "write"},
        "collect": {"contents": "write", "pull-requests": "write"},
    }
    assert {name: job["permissions"] for name, job in workflow["jobs"].items()} == wanted


def test_every_job_installs_gsd_with_pip(workflow) -> None:
    assert workflow["env"]["GSD_PIP"].startswith("gsd-plans @ ")
    for name, job in workflow["jobs"].items():
        assert 'python -m pip install "$GSD_PIP"' in runs(job), name


def test_pull_request_jobs(workflow) -> None:
    jobs = workflow["jobs"]
    assert 'gsd validate --format github --base "$BASE_SHA"' in runs(jobs["validate"])
    sarif = jobs["sarif"]
    assert "gsd validate --format sarif > gsd.sarif" in runs(sarif)
    (upload,) = [s for s in steps(sarif) if s.get("uses", "").startswith("github/codeql-action/")]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "gsd.sarif"
    diff = jobs["plan-diff"]
    (step,) = [s for s in steps(diff) if "gsd diff" in s.get("run", "")]
    assert '"${BASE_SHA}...${HEAD_SHA}" --format markdown' in step["run"]
    assert step["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert "actions/github-script" in uses(diff)
    assert "gsd-diff.md" in str(steps(diff)[-1]["with"]["script"])


def test_no_expression_is_interpolated_into_a_shell_line(workflow) -> None:
    for name, job in workflow["jobs"].items():
        for step in steps(job):
            assert "${{" not in step.get("run", ""), (name, step.get("name"))
            assert "${{" not in str(step.get("with", {}).get("script", "")), name


def test_inputs_read_are_declared(workflow) -> None:
    declared = set(workflow.get("on", workflow.get(True))["workflow_dispatch"]["inputs"])
    assert set(re.findall(r"\binputs\.([\w-]+)", TEXT)) <= declared


# --- the fan-out matrix against the real `gsd waves` ----------------------------------------


def matrix_source(workflow) -> tuple[str, str, str]:
    """(job, output, step id) that `execute`'s matrix reads, followed through the YAML."""
    execute = workflow["jobs"]["execute"]
    expression = execute["strategy"]["matrix"]
    match = re.fullmatch(r"\$\{\{\s*" + FROM_JSON_RE.pattern + r"\s*\}\}", expression)
    assert match and match.group(3) == "", expression  # the whole object is the matrix
    job, output = match.group(1), match.group(2)
    assert job in ([execute["needs"]] if isinstance(execute["needs"], str) else execute["needs"])
    outputs = workflow["jobs"][job]["outputs"]
    source = re.fullmatch(r"\$\{\{\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}", outputs[output])
    assert source, outputs
    step_id, step_output = source.groups()
    (step,) = [s for s in steps(workflow["jobs"][job]) if s.get("id") == step_id]
    assert "gsd waves " in step["run"] and "--format github-matrix" in step["run"]
    assert f'echo "{step_output}=$' in step["run"] and '>> "$GITHUB_OUTPUT"' in step["run"]
    return job, output, step_id


def read_path(data: Any, path: str) -> Any:
    """Follow `.include[0]` the way a GitHub expression does (missing: None)."""
    for name, index in re.findall(r"\.([\w-]+)|\[(\d+)\]", path):
        if name:
            data = data.get(name) if isinstance(data, dict) else None
        else:
            data = data[int(index)] if isinstance(data, list) and int(index) < len(data) else None
    return data


@pytest.fixture
def phase_project(project):
    """Phase 1: 01-01 and 01-02 in wave 1, 01-03 in wave 2."""
    project.plan("01-01", files_modified="[src/a.py]")
    project.plan("01-02", files_modified="[src/b.py]")
    project.plan("01-03", depends_on='["01-01"]', wave=2, files_modified="[src/c.py]")
    return project


def test_matrix_json_has_the_shape_the_workflow_reads(workflow, phase_project, gsd) -> None:
    job, output, _ = matrix_source(workflow)
    result = gsd("waves", "1", "--format", "github-matrix", "--wave", "1")
    assert result.code == 0, result.err
    assert result.out.count("\n") == 1  # one `name=value` line for $GITHUB_OUTPUT
    matrix = json.loads(result.out)
    assert set(matrix) == {"include"}  # any other top-level key would be a matrix axis
    assert [entry["plans"] for entry in matrix["include"]] == ["01-01", "01-02"]
    keys = set(MATRIX_KEY_RE.findall(TEXT))
    assert keys >= {"plans"}
    for entry in matrix["include"]:
        assert keys <= set(entry), (keys, entry)
        assert all(is_plan_id(p) for p in entry["plans"].split())  # what execute-plan takes
    # every other read of that output (the job's `if:` guard) finds what it looks for
    reads = [m for m in FROM_JSON_RE.finditer(TEXT) if m.group(3)]
    assert reads
    for read in reads:
        assert (read.group(1), read.group(2)) == (job, output)
        assert read_path(matrix, read.group(3)) is not None, read.group(0)


def test_an_empty_wave_makes_the_guard_skip_the_matrix_job(workflow, phase_project, gsd) -> None:
    result = gsd("waves", "1", "--format", "github-matrix", "--wave", "9")
    assert json.loads(result.out) == {"include": []}
    guard = workflow["jobs"]["execute"]["if"]
    (read,) = [m for m in FROM_JSON_RE.finditer(guard)]
    assert guard.endswith("!= null")
    assert read_path(json.loads(result.out), read.group(3)) is None


def test_each_plan_runs_on_its_own_branch(workflow) -> None:
    execute = workflow["jobs"]["execute"]
    (step,) = [s for s in steps(execute) if "gsd execute-plan" in s.get("run", "")]
    assert step["env"]["PLANS"] == "${{ matrix.plans }}"
    assert 'git switch -q -C "gsd/${plan}" "refs/remotes/origin/gsd/${plan}"' in step["run"]
    assert 'git switch -q -c "gsd/${plan}"' in step["run"]
    assert 'gsd execute-plan "$plan"' in step["run"]
    assert 'git push -q origin "HEAD:refs/heads/gsd/${plan}"' in step["run"]
    assert execute["strategy"]["fail-fast"] is False


def test_an_overlap_group_is_one_matrix_entry_whose_plans_run_in_order(project, gsd) -> None:
    project.plan("01-01", files_modified="[src/shared.py]")
    project.plan("01-02", files_modified="[src/b.py]")
    project.plan("01-03", files_modified="[src/shared.py, src/c.py]")
    project.plan("01-04", depends_on='["01-01"]', wave=2, files_modified="[src/d.py]")
    result = gsd("waves", "1", "--format", "github-matrix")
    assert result.code == 0, result.err
    assert json.loads(result.out)["include"] == [
        {"phase": "01", "plan": "01-01", "plans": "01-01 01-03", "wave": 1},
        {"phase": "01", "plan": "01-02", "plans": "01-02", "wave": 1},
        {"phase": "01", "plan": "01-04", "plans": "01-04", "wave": 2},
    ]


def test_the_collect_job_reads_untrusted_values_from_the_environment(workflow) -> None:
    collect = workflow["jobs"]["collect"]
    assert set(collect["needs"]) == {"schedule", "execute"}
    assert "!cancelled()" in collect["if"] and "inputs.collect" in collect["if"]
    (merge,) = [s for s in steps(collect) if s.get("id") == "collect"]
    assert merge["env"] == {"PHASE": "${{ inputs.phase }}", "WAVE": "${{ inputs.wave }}"}
    assert 'git merge -q --no-ff --no-edit "$ref"' in merge["run"]
    assert "gsd sync" in merge["run"] and "gsd report --all --format markdown" in merge["run"]
    (pull,) = [s for s in steps(collect) if "gh pr create" in s.get("run", "")]
    assert pull["env"]["BRANCH"] == "${{ steps.collect.outputs.branch }}"
    assert "gh pr edit" in pull["run"]
