"""The README's picture (docs/images/status.svg), drawn from `claude-session demo`, so the two
cannot disagree.

    python -m tools.demo_image --write   # run the demo, draw what it prints, write the SVG
    python -m tools.demo_image --check   # exit 1 when the SVG is not what the demo draws now

It runs the installed `claude-session demo --json` (the recorded session through the real hook
processes into a scratch project, per-user state and data in a scratch folder too, so nothing
of the user's own is touched), then prints that result through the very function the demo
prints it with (`claude_session.cli.demo_view.show`), at 100 columns with colours, and turns
it into an SVG with rich.

What changes from run to run is fixed in the result before it is printed, the same way for
--write and --check, so the picture is byte for byte the same on every machine:
- every time (each `*_at`, the compaction's) is ANCHOR, printed at ANCHOR + AGE seconds in
  UTC: the status says "2s ago" throughout; in the restored block, whose text was written at
  the compaction, its times are ANCHOR and its ages "0s ago";
- the scratch folder (`tempfile.mkdtemp`'s random name) is SCRATCH;
- the database's size, the hooks' mean duration and the filesystem are MEASURED (one run's
  figures on a developer's machine).
The rest (counts, ids, the git HEAD of the demo's fixed commit, every word) is the run's own.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "docs" / "images" / "status.svg"
WIDTH = 100
TITLE = "claude-session demo"
ANCHOR = 1_795_939_200.0  # 2026-11-29 08:00:00 UTC
AGE = 2.0
SCRATCH = "/tmp/claude-session-demo-XXXXXXXX"
MEASURED = {
    ("database", "size_bytes"): 1_500_000,
    ("database", "filesystem"): "ext4",
    ("database", "wal_unsafe_filesystem"): False,
    ("hooks", "mean_duration_ms"): 30.0,
}
CLOCK = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
AGO = re.compile(r"\b\d+ ?(?:s|min|h) ago\b")


def command() -> list[str]:
    """This install's `claude-session`: the script beside the interpreter, else the module."""
    script = Path(sys.executable).parent / "claude-session"
    if script.exists():
        return [str(script)]
    started = "import sys; from claude_session.cli import main; sys.exit(main())"
    return [sys.executable, "-c", started]


def run_demo() -> dict[str, Any]:
    """`claude-session demo --json` as a user runs it, its scratch folders in one of ours."""
    with tempfile.TemporaryDirectory(prefix="claude-session-demo-image-") as scratch:
        env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_PROJECT_DIR", "COLUMNS")}
        env |= {
            "CLAUDE_SESSION_STATE_DIR": str(Path(scratch) / "state"),
            "CLAUDE_SESSION_DATA_DIR": str(Path(scratch) / "data"),
            "TMPDIR": scratch,
        }
        done = subprocess.run(
            [*command(), "demo", "--json"],
            env=env,
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=300,
        )
    if done.returncode != 0:
        raise SystemExit(f"claude-session demo failed ({done.returncode}): {done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def normalised(result: dict[str, Any]) -> dict[str, Any]:
    """The result with what changes from run to run fixed (see the module's docstring)."""
    scratch = str(Path(result["project"]).parent)

    def fix(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: fix(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [fix(v) for v in value]
        if isinstance(value, str):
            return value.replace(scratch, SCRATCH)
        if isinstance(value, int | float) and not isinstance(value, bool) and key.endswith("_at"):
            return ANCHOR
        return value

    fixed: dict[str, Any] = fix(result)
    for (section, key), value in MEASURED.items():
        fixed["status"][section][key] = value
    at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ANCHOR))
    fixed["context"] = AGO.sub("0s ago", CLOCK.sub(at, fixed["context"]))
    return fixed


def printed(result: dict[str, Any]) -> str:
    """What the demo prints for `result` on a terminal `WIDTH` columns wide, in UTC, at
    ANCHOR + AGE (ANSI)."""
    from claude_session.cli import demo_view

    wanted = {"COLUMNS": str(WIDTH), "FORCE_COLOR": "1", "TERM": "xterm-256color", "TZ": "UTC"}
    saved = {key: os.environ.get(key) for key in [*wanted, "NO_COLOR"]}
    os.environ.update(wanted)
    os.environ.pop("NO_COLOR", None)
    time.tzset()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), mock.patch("time.time", return_value=ANCHOR + AGE):
            demo_view.show(result)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        time.tzset()
    return out.getvalue()


def svg(ansi: str) -> str:
    """The ANSI text as an SVG terminal window, `WIDTH` columns wide."""
    from rich.console import Console
    from rich.text import Text

    console = Console(
        record=True, width=WIDTH, file=io.StringIO(), force_terminal=True, color_system="truecolor"
    )
    console.print(Text.from_ansi(ansi.rstrip("\n")), soft_wrap=True)
    return console.export_svg(title=TITLE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write the SVG")
    mode.add_argument("--check", action="store_true", help="exit 1 if the SVG is stale")
    parser.add_argument("--out", type=Path, default=SVG, help=f"default: {SVG.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    result = run_demo()
    if result["hook_failures"]:
        raise SystemExit(f"the demo's hooks failed: {result['hook_failures']}")
    picture = svg(printed(normalised(result)))
    if args.write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        if not args.out.exists() or args.out.read_text(encoding="utf-8") != picture:
            args.out.write_text(picture, encoding="utf-8")
        return 0
    if not args.out.exists() or args.out.read_text(encoding="utf-8") != picture:
        print(
            f"{args.out} is not what `claude-session demo` prints now:"
            " run python -m tools.demo_image --write",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
