"""The payload of an `mcp_tool` hook, field by field: what `install` writes as the hook's input
and how the MCP hook server puts the payload back together.

Why this is needed: Claude Code 2.1.330 gives an `mcp_tool` hook no whole payload. It fills
each `${name}` of the hook's `input` from the payload's top-level field `name`: a string as it
is, a number or boolean as its text, an object or array as its JSON text, and a missing or
null field as "" (read in the CLI, checked with the real one: docs/design.md). So the input
names the fields of its event and the server turns the strings back into the payload by each
field's kind, both from the one description of a payload (core/hook_payload.py). A field
Claude Code adds later is not carried until it is listed there; the command transport carries
everything.
"""

from __future__ import annotations

import json

from .hook_payload import FIELDS, FLAG, JSON, NUMBER, fields_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# The argument that names the install that wrote the hook (its package folder): a hook
# server of another install refuses the call, as the relay declines another install's hook.
INSTALL_ARGUMENT = "claude_session_install"


def input_template(install: str, event: str | None = None) -> dict[str, str]:
    """The `input` of our mcp_tool hook for `event`: each of its fields by reference, and the
    install's name."""
    template = {name: f"${{{name}}}" for name in fields_of(event)}
    template[INSTALL_ARGUMENT] = install
    return template


def arguments_for(payload: dict[str, object], install: str) -> dict[str, str]:
    """What Claude Code makes of `input_template(install)` for `payload` (its substitution:
    a string as it is, an object or array as compact JSON, a number or flag as its text, a
    missing or null field as ""): for the doctor, the benchmarks and the tests. The fields
    are those of the payload's event, as `install` writes them."""
    arguments = {}
    for name in fields_of(payload.get("hook_event_name")):
        value = payload.get(name)
        if value is None:
            arguments[name] = ""
        elif isinstance(value, bool):
            arguments[name] = "true" if value else "false"
        elif isinstance(value, (dict, list)):
            arguments[name] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        else:
            arguments[name] = str(value)
    arguments[INSTALL_ARGUMENT] = install
    return arguments


def payload_from(arguments: dict[str, object]) -> dict[str, object]:
    """The payload as Claude Code had it, from the filled-in input: "" is a missing field; a
    JSON field that does not read as an object or array was a string and stays one."""
    payload: dict[str, object] = {}
    for name, value in arguments.items():
        kind = FIELDS.get(name)
        if kind is None or not isinstance(value, str) or value == "":
            continue
        payload[name] = _typed(kind, value)
    return payload


def payload_bytes(arguments: dict[str, object], valid_json: Callable[[str], bool]) -> bytes:
    """The payload's JSON text straight from the filled-in input, as `payload_from` would read
    it, without parsing it into Python objects and encoding it again: a string field is quoted;
    a JSON field's text (Claude Code's own JSON text) goes in as it is when `valid_json` says
    it is an object or array, else as a string; a number or flag goes in as its text. The
    payload is parsed once, by `event.load`, as a command hook's stdin is.

    UTF-8, or ASCII with escapes when a string holds a lone surrogate (text cut mid-emoji),
    as Claude Code writes it to a command hook."""
    from json.encoder import encode_basestring, encode_basestring_ascii

    def text(quote: Callable[[str], str]) -> str:
        parts = []
        for name, value in arguments.items():
            kind = FIELDS.get(name)
            if kind is None or not isinstance(value, str) or value == "":
                continue
            parts.append(f"{quote(name)}: {_json_text(kind, value, quote, valid_json)}")
        return "{" + ", ".join(parts) + "}"

    try:
        return text(encode_basestring).encode("utf-8")
    except UnicodeEncodeError:
        return text(encode_basestring_ascii).encode("ascii")


def _json_text(
    kind: str, value: str, quote: Callable[[str], str], valid_json: Callable[[str], bool]
) -> str:
    """One field's value as JSON text: what `_typed` reads it as, written back."""
    if kind == JSON and value[:1] in ("{", "[") and valid_json(value):
        return value
    if kind == NUMBER:
        try:
            return str(int(value))
        except ValueError:
            try:
                number = float(value)
            except ValueError:
                return quote(value)
            return repr(number) if number - number == 0 else quote(value)  # not inf, nan
    if kind == FLAG and value in ("true", "false"):
        return value
    return quote(value)


def _typed(kind: str, value: str) -> object:
    if kind == JSON and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # nested past Python's limit: kept as text
            return value
    if kind == NUMBER:
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return value
    if kind == FLAG and value in ("true", "false"):
        return value == "true"
    return value
