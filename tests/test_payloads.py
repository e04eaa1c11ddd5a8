"""Contract tests: the pydantic models accept every payload recorded from Claude Code 2.1.330."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, fixture, run_hook, stream
from pydantic import ValidationError

from claude_session.services.setup import payloads


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_recorded_payload_validates_with_its_event_model(name: str) -> None:
    data = fixture(name)
    model = payloads.parse(data)
    assert model.session_id == data["session_id"]
    if data["hook_event_name"] in payloads.MODELS:
        assert type(model) is payloads.MODELS[data["hook_event_name"]]


def test_whole_recorded_stream_validates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for data in stream(tmp_path):
        payloads.parse(data)


def test_extra_fields_are_kept_and_missing_required_ones_rejected() -> None:
    data = fixture("PostToolUseFailure.Bash") | {"brand_new": 1}
    assert (payloads.parse(data).model_extra or {})["brand_new"] == 1
    with pytest.raises(ValidationError):
        payloads.parse({k: v for k, v in data.items() if k != "error"})


def test_session_start_answer_matches_the_output_contract(project) -> None:  # type: ignore[no-untyped-def]
    run_hook("PostToolUseFailure", fixture("PostToolUseFailure.Bash", project), project)
    result = run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    output = payloads.output_adapter.validate_python(json.loads(result.stdout))
    assert output.hookSpecificOutput is not None
    assert output.hookSpecificOutput.hookEventName == "SessionStart"
