"""The learning retry ladder through a real agent CLI: the pinned gemini-cli (`make
clis`) against the scripted model server (tests/modelserver). A `with_context` retry's
prompt, with what went wrong before, reaches the model through the CLI intact; judged by
the requests the model server received and by the logs, not by what gsd printed."""

from __future__ import annotations

import json

from tests.test_clis import cli_bin  # noqa: F401 (a fixture)
from tests.test_gemini_real import execute


def test_a_with_context_retry_reaches_the_model_through_gemini(
    gsd,
    cli_bin,  # noqa: F811
    monkeypatch,
    tmp_path,
) -> None:
    # the model claims a file it never writes: not done, rolled back, retried with context
    done = execute(
        gsd,
        cli_bin,
        monkeypatch,
        tmp_path / "repo",
        "read+write",
        (),
        config={"retry": {"steps": ["with_context"]}},
        created=("src/hello.txt",),
    )
    assert done.code == 1, done.err
    records = [(r["error_type"], r["attempt"], r.get("step")) for r in done.records()]
    failure = records[0][0]
    assert records == [(failure, 1, "first"), (failure, 2, "with_context")], done.err
    bodies = [json.dumps(e.body, ensure_ascii=False) for e in done.log]
    told = [b for b in bodies if "What Went Wrong Before" in b]
    assert told, bodies
    assert f"Attempt 1 at this task (gem) failed: `{failure}`" in told[0]
    assert "### The failure" in told[0]
    assert "What Went Wrong Before" not in bodies[0]  # the first attempt's prompt
