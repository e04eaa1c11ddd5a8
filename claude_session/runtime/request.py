"""One hook event as the runtime receives it, whatever carried it: the `Request`, and its one
wire format (the relay's: `runtime/relay.py` sends it, `claude_session/daemon.py` reads it).

Every transport builds a Request: the hook process (command transport) from its stdin and
environment, the daemon from the relay's bytes, the MCP hook server (mcp transport) from an
`mcp_tool` call. `hookrt.process` takes one. Fields are named, on the wire too: a field is
read by its name, never by its place, and a field the reader does not know is ignored.

Wire format, version 2: one head line, then the fields' bytes back to back (no escaping):

    CSR2 <name>=<length> <name>=<length> ...\\n<field bytes><field bytes>...

Names are ASCII words. Text fields are UTF-8 (surrogateescape); an empty field is None (or
False); `claude_process` is `pid start-ticks pid-space`. A head of another version (`CSR1`,
the positional format of earlier installs, or one newer than this code) is refused with
`Refused`: the daemon declines, and the hook does its work itself.

It imports nothing: it is on every hook's path (no json, re, typing, dataclasses).
"""

VERSION = 2
MAGIC = b"CSR"  # followed by the version's digits
HEAD = MAGIC + str(VERSION).encode()
MAX_HEAD_BYTES = 4096

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    ClaudeProcess = tuple[int, int, str]  # (pid, start ticks, pid space): core/processes.py


class Refused(ValueError):
    """Bytes that are not a request of this version: the hook does the work itself."""


class Request:
    """One hook event to apply, and how it came.

    `event_hint`: the event the hook was installed for (argv); `raw`: the payload's bytes as
    read (possibly cut short: `why_short` says why); `received_at`: time.time() when the hook
    started, `started_clock`: time.perf_counter() then (for its duration); `delivery_id`: the
    idempotency key (a retry under the same id is stored once); `root_hint`: the project, when
    the carrier already knows it; `dispatcher`: 'plugin' or 'settings' (None: from this
    process's environment); `transport`: 'process', 'relay' or 'mcp' (None: 'process');
    `traceparent`: the TRACEPARENT the hook saw (validated where it is stored);
    `claude_process`: the Claude Code process above the hook, for the events that record it;
    `daemon_missed`: no daemon answered the relay at all (the hook starts one).
    """

    __slots__ = (
        "claude_process",
        "daemon_missed",
        "delivery_id",
        "dispatcher",
        "event_hint",
        "raw",
        "received_at",
        "root_hint",
        "started_clock",
        "traceparent",
        "transport",
        "why_short",
    )

    def __init__(
        self,
        event_hint: str,
        raw: bytes,
        received_at: float,
        started_clock: float,
        delivery_id: str,
        *,
        why_short: "str | None" = None,
        root_hint: "str | None" = None,
        dispatcher: "str | None" = None,
        transport: "str | None" = None,
        traceparent: "str | None" = None,
        claude_process: "ClaudeProcess | None" = None,
        daemon_missed: bool = False,
    ) -> None:
        self.event_hint = event_hint
        self.raw = raw
        self.received_at = received_at
        self.started_clock = started_clock
        self.delivery_id = delivery_id
        self.why_short = why_short
        self.root_hint = root_hint
        self.dispatcher = dispatcher
        self.transport = transport
        self.traceparent = traceparent
        self.claude_process = claude_process
        self.daemon_missed = daemon_missed

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in Request.__slots__)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in Request.__slots__)
        return f"Request({fields})"


def _text(value: "str | None") -> bytes:
    return value.encode("utf-8", "surrogateescape") if value else b""


def encode(request: Request, **envelope: str) -> bytes:
    """The request's wire form; `envelope`: fields for the receiver's checks only (the
    install's fingerprint, the environment, the project), named like the others."""
    process = request.claude_process
    named = b"" if process is None else b"%d %d %s" % (process[0], process[1], _text(process[2]))
    fields = [
        (b"event_hint", _text(request.event_hint)),
        (b"received_at", repr(request.received_at).encode()),
        (b"started_clock", repr(request.started_clock).encode()),
        (b"delivery_id", _text(request.delivery_id)),
        (b"why_short", _text(request.why_short)),
        (b"root_hint", _text(request.root_hint)),
        (b"dispatcher", _text(request.dispatcher)),
        (b"transport", _text(request.transport)),
        (b"traceparent", _text(request.traceparent)),
        (b"claude_process", named),
        (b"daemon_missed", b"1" if request.daemon_missed else b""),
    ]
    for name, value in envelope.items():
        fields.append((name.encode(), _text(value)))
    fields.append((b"raw", request.raw))
    head = b" ".join([HEAD] + [b"%s=%d" % (name, len(value)) for name, value in fields])
    return head + b"\n" + b"".join([value for _, value in fields])


def sizes(head: bytes) -> "list[tuple[str, int]]":
    """The fields a head line announces, in order: (name, length). Refused: not a request,
    or one of another version."""
    parts = head.split(b" ")
    if not parts[0].startswith(MAGIC):
        raise Refused("not a relay request")
    if parts[0] != HEAD:
        version = parts[0][len(MAGIC) :].decode("ascii", "replace")[:16]
        raise Refused(f"request version {version} not served (this is {VERSION})")
    found = []
    for part in parts[1:]:
        name, _, size = part.partition(b"=")
        if not name.replace(b"_", b"").isalpha() or not size.isdigit():
            raise Refused("malformed request head")
        found.append((name.decode("ascii"), int(size)))
    return found


def split(announced: "list[tuple[str, int]]", body: bytes) -> "dict[str, bytes]":
    """The body cut into the announced fields, by name."""
    fields: dict[str, bytes] = {}
    at = 0
    for name, size in announced:
        fields[name] = body[at : at + size]
        at += size
    if at != len(body):
        raise Refused("request body does not match its head")
    return fields


def decode(fields: "dict[str, bytes]") -> Request:
    """The Request the fields name (each by its name). Refused when one it needs is missing or
    malformed; a field it does not know is left alone (the caller may read it: the envelope)."""

    def text(name: str) -> "str | None":
        value = fields.get(name)
        return value.decode("utf-8", "surrogateescape") if value else None

    try:
        event_hint = text("event_hint") or ""
        received_at = float(fields["received_at"])
        started_clock = float(fields["started_clock"])
        delivery_id = text("delivery_id")
        raw = fields["raw"]
    except (KeyError, ValueError) as exc:
        raise Refused(f"request field missing or malformed: {exc}") from None
    if not delivery_id:
        raise Refused("request without a delivery id")
    return Request(
        event_hint,
        raw,
        received_at,
        started_clock,
        delivery_id,
        why_short=text("why_short"),
        root_hint=text("root_hint"),
        dispatcher=text("dispatcher"),
        transport=text("transport"),
        traceparent=text("traceparent"),
        claude_process=decode_process(fields.get("claude_process", b"")),
        daemon_missed=fields.get("daemon_missed") == b"1",
    )


def decode_process(field: bytes) -> "ClaudeProcess | None":
    """`pid start-ticks pid-space` as a tuple: None for empty or anything malformed."""
    parts = field.decode("utf-8", "surrogateescape").split(" ", 2)
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit() or not parts[2]:
        return None
    return int(parts[0]), int(parts[1]), parts[2]
