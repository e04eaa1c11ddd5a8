"""Contract tests: doctor's payload check (derived from core/hook_payload.py) accepts every
payload recorded from Claude Code 2.1.330, and our hooks' answers meet the output contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, fixture, run_hook, stream

from claude_session.core import hook_payload
from claude_session.services.setup import payloads


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_recorded_payload_meets_the_contract(name: str) -> None:
    data = fixture(name)
    assert payloads.problems(data) == []


def test_whole_recorded_stream_meets_the_contract(tmp_path: Path) -> None:
    for data in stream(tmp_path):
        assert payloads.problems(data) == [], data["hook_event_name"]


def test_extra_fields_are_allowed_and_missing_required_ones_rejected() -> None:
    data = fixture("PostToolUseFailure.Bash") | {"brand_new": 1}
    assert payloads.problems(data) == []
    assert payloads.problems({k: v for k, v in data.items() if k != "error"}) == [
        "error is missing"
    ]
    assert payloads.problems({"hook_event_name": "Stop"}) == ["session_id is missing"]


def test_optional_fields_may_be_null_and_required_ones_may_not() -> None:
    assert payloads.problems(fixture("PreCompact") | {"custom_instructions": None}) == []
    assert payloads.problems(fixture("PreCompact") | {"trigger": None}) == ["trigger is missing"]


def test_an_mcp_tools_response_may_be_a_string_but_a_tool_input_may_not() -> None:
    data = fixture("PostToolUse.Bash")
    assert payloads.problems(data | {"tool_response": "plain text"}) == []
    assert payloads.problems(data | {"tool_input": "ls"}) == ["tool_input is str, not json"]


@pytest.mark.parametrize("event", sorted(hook_payload.EVENT_FIELDS))
def test_doctors_sample_of_every_event_meets_the_contract(event: str, tmp_path: Path) -> None:
    from claude_session.services.setup import doctor

    sample = doctor.sample_payload(event, tmp_path)
    assert sample["hook_event_name"] == event
    assert payloads.problems(sample) == []


def test_session_start_answer_matches_the_output_contract(project: Path) -> None:
    run_hook("PostToolUseFailure", fixture("PostToolUseFailure.Bash", project), project)
    result = run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    output = payloads.output_adapter.validate_python(json.loads(result.stdout))
    assert output.hookSpecificOutput is not None
    assert output.hookSpecificOutput.hookEventName == "SessionStart"
