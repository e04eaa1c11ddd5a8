"""The picture of `claude-session status` in the README and the docs (docs/images/status.svg).

    python -m tools.screenshot --write   # play the demo, capture `status`, write the SVG

It plays the demo (`claude-session demo --keep`: the recorded session through the real hooks
into a scratch project), runs `claude-session status --project <that project>` at 100 columns
with colours forced, turns its ANSI text into an SVG with rich and removes the scratch project.
Per-user state and data go to a scratch folder too, so nothing of the user's own is touched.
The SVG holds times and a scratch path, so it changes with every run: no test checks it is
current, only that it exists.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "docs" / "images" / "status.svg"
WIDTH = 100
TITLE = "claude-session status"


def command() -> list[str]:
    """This install's `claude-session`: the script beside the interpreter, else the module."""
    script = Path(sys.executable).parent / "claude-session"
    if script.exists():
        return [str(script)]
    return [
        sys.executable,
        "-c",
        "import sys; from claude_session.cli import main; sys.exit(main())",
    ]


def capture(scratch: Path) -> str:
    """`status` of a freshly played demo project, as the terminal would get it (ANSI)."""
    env = dict(os.environ)
    env.update(
        {
            "CLAUDE_SESSION_STATE_DIR": str(scratch / "state"),
            "CLAUDE_SESSION_DATA_DIR": str(scratch / "data"),
            "COLUMNS": str(WIDTH),
            "FORCE_COLOR": "1",
            "TERM": "xterm-256color",
        }
    )
    env.pop("NO_COLOR", None)
    env.pop("CLAUDE_PROJECT_DIR", None)
    demo = subprocess.run(
        [*command(), "demo", "--keep", "--json"],
        env=env,
        cwd=scratch,
        capture_output=True,
        text=True,
        check=True,
    )
    project = Path(json.loads(demo.stdout)["project"])
    try:
        status = subprocess.run(
            [*command(), "status", "--project", str(project)],
            env=env,
            cwd=scratch,
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        kept = project.parent if project.parent.name.startswith("claude-session-demo") else project
        shutil.rmtree(kept, ignore_errors=True)
    return status.stdout


def svg(ansi: str) -> str:
    """The ANSI text as an SVG terminal window, `WIDTH` columns wide."""
    from rich.console import Console
    from rich.text import Text

    console = Console(
        record=True,
        width=WIDTH,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
    )
    console.print(Text.from_ansi(ansi.rstrip("\n")), soft_wrap=True)
    return console.export_svg(title=TITLE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", required=True, help="write the SVG")
    parser.add_argument("--out", type=Path, default=SVG, help=f"default: {SVG.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="claude-session-screenshot-") as scratch:
        picture = svg(capture(Path(scratch)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(picture, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
