"""Which plan files a shell command line writes (gsd.formats.runners.shellwrites), read from
its text: the before-a-tool hook's decision. Nothing here is ever run."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsd.formats.runners.shellwrites import is_plan, plan_writes

pytestmark = pytest.mark.unit  # `make test-fast` runs these

PLAN = ".planning/phases/01-alpha/01-02-PLAN.md"


@pytest.mark.parametrize(
    ("command", "written"),
    [
        pytest.param(f"cat > {PLAN} <<EOF\nit's a plan\nEOF", [PLAN], id="heredoc"),
        pytest.param(f"cat <<'EOF' > {PLAN}\n\"quoted\nEOF\necho ok", [PLAN], id="heredoc-first"),
        pytest.param(f"cat <<-EOF >{PLAN}\n\tx\n\tEOF", [PLAN], id="heredoc-tabs"),
        pytest.param(f"echo 'wave: 2' >> {PLAN}", [PLAN], id="append"),
        pytest.param(f"echo x>{PLAN};ls", [PLAN], id="no-spaces"),
        pytest.param(f"echo x >| {PLAN}", [PLAN], id="clobber"),
        pytest.param(f"make 2>&1 &> {PLAN}", [PLAN], id="both-streams"),
        pytest.param(f"cd .planning && (echo x > {PLAN})", [PLAN], id="subshell"),
        pytest.param(f"{{ echo a; echo b; }} > {PLAN}", [PLAN], id="group"),
        pytest.param(f"printf x | tee -a {PLAN} >/dev/null", [PLAN], id="tee"),
        pytest.param(f"sudo tee {PLAN} < /tmp/x", [PLAN], id="sudo-tee"),
        pytest.param(f"sed -i 's/a/b/' {PLAN}", [PLAN], id="sed-i"),
        pytest.param(f"sed -i.bak -e 's/a/b/' {PLAN}", [PLAN], id="sed-i-suffix"),
        pytest.param(f"sed --in-place=.b 's/a/b/' {PLAN}", [PLAN], id="sed-in-place"),
        pytest.param(f"perl -pi -e 's/a/b/' {PLAN}", [PLAN], id="perl-pi"),
        pytest.param(f"cp /tmp/draft.md {PLAN}", [PLAN], id="cp"),
        pytest.param(f"mv -f draft.md {PLAN}", [PLAN], id="mv"),
        pytest.param(f"dd if=/dev/zero of={PLAN} count=1", [PLAN], id="dd"),
        pytest.param(f"bash -c 'echo x > {PLAN}'", [PLAN], id="bash-c"),
        pytest.param(f'sh -ec "cat > {PLAN} <<EOF\nx\nEOF"', [PLAN], id="sh-ec-heredoc"),
        pytest.param(f"eval 'echo x > {PLAN}'", [PLAN], id="eval"),
        pytest.param(f"bash <<'EOF'\necho x > {PLAN}\nEOF", [PLAN], id="script-on-stdin"),
        pytest.param(f"LANG=C env X=1 tee {PLAN}", [PLAN], id="assignments"),
        pytest.param(f"echo a > {PLAN}; echo b >> {PLAN}", [PLAN], id="once"),
        pytest.param(
            "echo x > 01-01-PLAN.md && echo y > 01-02-PLAN.md",
            ["01-01-PLAN.md", "01-02-PLAN.md"],
            id="two",
        ),
        pytest.param(f"echo 'unclosed > {PLAN}", [PLAN], id="unclosed-quote"),
    ],
)
def test_a_write_into_a_plan_is_seen(command: str, written: list[str]) -> None:
    assert plan_writes(command) == written


@pytest.mark.parametrize(
    "command",
    [
        f"cat {PLAN}",
        f"grep -n wave {PLAN} > notes.txt",
        f"cat < {PLAN} | wc -l",
        f"diff {PLAN} other.md 2>/dev/null",
        f"cp {PLAN} /tmp/copy.md",
        f"sed -e 's/a/b/' {PLAN}",
        f"sed -n 1,5p {PLAN} > /tmp/head.md",
        f"echo '> {PLAN}'",
        f"git add {PLAN} && git commit -m 'plan: > {PLAN}'",
        f"cat <<'EOF' > notes.md\necho x > {PLAN}\nEOF",  # a heredoc to a file is data
        "echo x > SUMMARY.md; echo y > 01-02-PLAN.md.bak",
        "npm test 2>&1 | tail -5",
        "",
    ],
)
def test_reading_a_plan_or_writing_anything_else_is_not(command: str) -> None:
    assert plan_writes(command) == []


def test_what_hides_its_target_is_not_seen_and_nothing_is_run(tmp_path: Path) -> None:
    canary = tmp_path / "ran"
    assert plan_writes(f"touch {canary}; echo x > a-PLAN.md") == ["a-PLAN.md"]
    assert plan_writes(f"$(touch {canary}) > b-PLAN.md") == ["b-PLAN.md"]
    assert plan_writes(f"`touch {canary}`") == []
    assert not canary.exists()
    assert plan_writes('f=c-PLAN.md; echo x > "$f"') == []  # a variable: not resolved
    assert plan_writes('python3 -c \'open("c-PLAN.md", "w")\'') == []  # a script
    assert plan_writes("bash -c \"sh -c 'echo x > d-PLAN.md'\"") == ["d-PLAN.md"]


def test_a_huge_command_is_read_roughly_and_quickly() -> None:
    filler = "x" * (300 << 10)
    assert plan_writes(f"echo {filler} > {PLAN}") == [PLAN]
    assert plan_writes(f"echo {filler} > notes.md") == []


def test_a_plan_is_a_name_ending_in_dash_plan_md() -> None:
    assert is_plan("01-02-PLAN.md") and is_plan(".planning/phases/x/01-02-PLAN.md")
    assert not is_plan("PLAN.md") and not is_plan("01-02-plan.md")
    assert not is_plan("01-02-PLAN.md.bak")
