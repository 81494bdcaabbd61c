"""The JSON result file a `command` agent may write to $GSD_RESULT_FILE, read into RunnerOutput."""

from __future__ import annotations

from gsd.core.models import RunnerOutput
from gsd.formats.runners.output import float_or_none, int_or_none, loads, permission_denials


def parse_output(stdout: str, result_file_text: str | None) -> RunnerOutput | None:
    """The object a `command` agent wrote, or None when it wrote no file or no object.

    `{"result": str, "is_error": bool, "input_tokens": int, "output_tokens": int,
    "cost_usd": float, "permission_denials": [...]}`, every key optional; without
    `result` the text is stdout. `permission_denials` has claude's shape (a program
    that wraps claude passes its result's list on).
    """
    data = loads(result_file_text.strip()) if result_file_text else None
    if not isinstance(data, dict):
        return None
    result = data.get("result")
    input_tokens = int_or_none(data.get("input_tokens"))
    output_tokens = int_or_none(data.get("output_tokens"))
    cost_usd = float_or_none(data.get("cost_usd"))
    read = {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": cost_usd}
    notes = tuple(
        f"result file: {key} {data[key]!r} refused (not a count of 0 or more)"
        if key != "cost_usd"
        else f"result file: cost_usd {data[key]!r} refused (not a finite amount of 0 or more)"
        for key, value in read.items()
        if value is None and data.get(key) is not None
    )
    return RunnerOutput(
        text=result if isinstance(result, str) else stdout,
        is_error=data.get("is_error") is True,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost_usd,
        structured=True,
        denied=permission_denials(data.get("permission_denials")),
        notes=notes,
    )
