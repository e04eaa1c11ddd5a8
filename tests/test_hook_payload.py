"""The one description of a hook payload (core/hook_payload.py) and its three uses agree: the
hook's parser (core/event.py), the mcp_tool hook install writes and the hook server's rebuild
(core/mcp_hook_input.py), and doctor's check (services/setup/payloads.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import FIXTURES, fixture, stream

from claude_session.core import event, hook_payload, mcp_hook_input
from claude_session.core.events import EVENTS
from claude_session.core.hook_payload import FIELDS, FLAG, JSON, NUMBER, TEXT
from claude_session.runtime import mcp_transport
from claude_session.services.setup import installer, payloads

SCRATCH = apsw.Connection(":memory:")
INSTALL = "/opt/claude-session"
# a value of each kind, and one of another kind for each
GOOD = {TEXT: "a text", JSON: {"k": [1, "two"]}, NUMBER: 1234, FLAG: True}
WRONG = {TEXT: 5, JSON: 5, NUMBER: "5", FLAG: "true"}


def full_payload(name: str) -> dict[str, Any]:
    """A payload of event `name` with every field the table gives it, each of its kind."""
    payload = {field: GOOD[FIELDS[field]] for field in hook_payload.fields_of(name)}
    return payload | {"hook_event_name": name, "session_id": "s-1"}


def test_the_table_is_whole() -> None:
    """Every field has a kind and belongs to an event; every event the recorder knows is
    described; required and read fields are fields."""
    assert set(FIELDS.values()) == {TEXT, JSON, NUMBER, FLAG}
    carried = set(hook_payload.COMMON).union(*hook_payload.EVENT_FIELDS.values())
    assert carried == set(FIELDS)
    assert set(EVENTS) <= set(hook_payload.EVENT_FIELDS)
    assert set(hook_payload.EVENT_FIELDS) == set(EVENTS)  # PreSkillShellCommand too (2.1.332)
    for name, required in hook_payload.REQUIRED.items():
        assert set(required) <= set(hook_payload.fields_of(name)), name
    assert set(hook_payload.READ_BY_HOOKS) <= set(FIELDS)
    assert set(hook_payload.STRING_TOO) <= {f for f, kind in FIELDS.items() if kind == JSON}


# --- the parser ---------------------------------------------------------------------------


def test_the_parser_reads_the_tables_fields_and_paths_into_its_json_fields() -> None:
    top = {name: path for name, path in event.FIELDS.items() if name not in event.INSIDE}
    assert top == {name: "$." + name for name in hook_payload.READ_BY_HOOKS}
    for name, (field, _inner) in event.INSIDE.items():
        assert FIELDS[field] == JSON, name  # a path into a JSON field of the payload
        assert name not in hook_payload.READ_BY_HOOKS, name  # never shadows a field read
    # fields read by value are scalars: a JSON field's text can be 256 KB, copied per hook
    assert {FIELDS[name] for name in hook_payload.READ_BY_HOOKS} <= {TEXT, NUMBER, FLAG}


@pytest.mark.parametrize("name", sorted(hook_payload.EVENT_FIELDS))
def test_the_parser_reads_each_field_it_names_with_its_value(name: str) -> None:
    payload = full_payload(name)
    parsed = event.parse(SCRATCH, json.dumps(payload))
    for field in hook_payload.READ_BY_HOOKS:
        assert parsed.get(field) == payload.get(field), field  # a flag comes back as 1 or 0


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_the_parser_reads_each_recorded_field(name: str) -> None:
    payload = fixture(name)
    parsed = event.parse(SCRATCH, json.dumps(payload))
    for field in hook_payload.READ_BY_HOOKS:
        assert parsed.get(field) == payload.get(field), field
    tool_input = payload.get("tool_input") or {}
    assert parsed.get("command") == tool_input.get("command")
    assert parsed.get("file_path") == tool_input.get("file_path")


# --- the mcp_tool hook install writes, and the hook server's rebuild ------------------------


@pytest.mark.parametrize("name", sorted(installer.MCP_EVENTS))
def test_the_installed_hook_names_every_field_of_its_event(name: str) -> None:
    named = set(installer.mcp_handler(name)["input"]) - {mcp_hook_input.INSTALL_ARGUMENT}
    assert named == set(hook_payload.fields_of(name))


def test_every_field_of_the_table_is_named_by_the_hook_of_some_event() -> None:
    """What install would write for each event the table describes (the command-only events'
    fields included), and for an event it does not: every field, no other."""
    everything = set(FIELDS) | {mcp_hook_input.INSTALL_ARGUMENT}
    inputs = [installer.mcp_handler(name)["input"] for name in hook_payload.EVENT_FIELDS]
    assert set().union(*inputs) == everything
    assert set(installer.mcp_handler("SomeEventAddedLater")["input"]) == everything


@pytest.mark.parametrize("name", sorted(hook_payload.EVENT_FIELDS))
def test_every_field_of_an_event_comes_back_from_the_hook_server_with_its_kind(name: str) -> None:
    payload = full_payload(name)
    arguments = mcp_hook_input.arguments_for(payload, INSTALL)
    assert arguments[mcp_hook_input.INSTALL_ARGUMENT] == INSTALL
    back = mcp_hook_input.payload_from(arguments)
    assert back == payload
    text = mcp_hook_input.payload_bytes(arguments, lambda t: mcp_transport._valid_json(SCRATCH, t))
    assert json.loads(text) == payload


# --- doctor's check -----------------------------------------------------------------------


def test_doctors_check_accepts_every_recorded_payload(tmp_path: Path) -> None:
    recorded = [fixture(p.stem) for p in FIXTURES.glob("*.json")] + stream(tmp_path)
    hooks = (FIXTURES / "transcripts" / "hooks.jsonl").read_text().splitlines()
    recorded += [json.loads(line) for line in hooks if line.strip()]
    assert [payloads.problems(p) for p in recorded] == [[]] * len(recorded)


@pytest.mark.parametrize("name", sorted(hook_payload.EVENT_FIELDS))
def test_doctors_check_accepts_every_field_of_its_kind(name: str) -> None:
    assert payloads.problems(full_payload(name)) == []


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_doctors_check_rejects_a_field_of_another_kind(field: str) -> None:
    kind = FIELDS[field]
    payload = {"session_id": "s-1", "hook_event_name": "Stop", field: WRONG[kind]}
    assert payloads.problems(payload) == [f"{field} is {type(WRONG[kind]).__name__}, not {kind}"]


@pytest.mark.parametrize("name", sorted(hook_payload.EVENT_FIELDS))
def test_doctors_check_wants_each_required_field(name: str) -> None:
    for field in hook_payload.required_of(name):
        payload = {k: v for k, v in full_payload(name).items() if k != field}
        assert payloads.problems(payload) == [f"{field} is missing"], field
