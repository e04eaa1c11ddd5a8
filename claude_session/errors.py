"""What a tool failure is: category, file at fault, signature, ladder step and gist (pure).

`re` is imported inside the two functions that match patterns: only failing tool calls pay for
it (~3 ms), not the context text that quotes an error's gist.
"""

from __future__ import annotations

ERROR_TEXT_CAP = 2000
_SEPARATORS = str.maketrans({c: " " for c in "/;&|()`'\""})

# (category, words that mark a command of that kind), first match wins.
_COMMAND_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "test",
        (
            "pytest",
            "jest",
            "vitest",
            "mocha",
            "go test",
            "cargo test",
            "unittest",
            "tox",
            "make test",
            "make check",
            "npm test",
            "npm run test",
            "yarn test",
            "pnpm test",
            "rspec",
            "phpunit",
            "ctest",
            "nose2",
        ),
    ),
    ("type", ("mypy", "tsc", "pyright", "pytype", "flow check", "vue-tsc")),
    (
        "lint",
        (
            "ruff",
            "eslint",
            "flake8",
            "pylint",
            "black --check",
            "prettier --check",
            "golangci-lint",
            "clippy",
            "shellcheck",
            "stylelint",
            "biome",
        ),
    ),
    (
        "build",
        (
            "make",
            "cargo build",
            "go build",
            "pip install",
            "npm install",
            "npm ci",
            "npm run build",
            "yarn build",
            "pnpm build",
            "gcc",
            "g++",
            "clang",
            "cmake",
            "mvn",
            "gradle",
            "docker build",
            "uv sync",
            "poetry install",
            "python -m build",
            "cargo check",
            "vite build",
            "webpack",
        ),
    ),
)

# (category, pattern in the error text), for commands that say nothing (a script, `npm run x`).
_TEXT_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "test",
        (
            r"(?m)^(FAILED |=+ .*\bfailed\b|FAIL\s|--- FAIL:)",
            r"Tests?:\s+\d+ failed",
            r"(?m)\d+ failing$",
        ),
    ),
    (
        "type",
        (
            r"error TS\d+",
            r"(?m): error: .*\[[a-z-]+\]$",
            r"Found \d+ errors? in \d+ files?",
            r"error\[E0308\]: mismatched types",
        ),
    ),
    (
        "lint",
        (
            r"(?m)^\S+:\d+:\d+: [A-Z]{1,3}\d{3,4} ",
            r"\d+ problems? \(\d+ errors?",
            r"(?m)^Found \d+ errors?\.\s*$",
        ),
    ),
    (
        "build",
        (
            r"(?i)error: could not compile",
            r"ERROR: Could not build wheels",
            r"npm ERR!",
            r"make: \*\*\*",
            r"CMake Error",
            r"undefined reference to",
            r"BUILD FAILED",
            r"(?i)failed to build",
        ),
    ),
    (
        "runtime",
        (
            r"Traceback \(most recent call last\)",
            r"\w+(Error|Exception): ",
            r"panicked at",
            r"Segmentation fault",
            r"command not found",
            r"No such file or directory",
        ),
    ),
)

# Where the fault is: the last project frame of a traceback, or a compiler-style location.
_FILE_PATTERNS = (
    r'File "([^"<>]+)", line \d+',  # Python traceback
    r"(?m)^FAILED ([\w./-]+\.\w+)::",  # pytest summary line
    r"(?m)^\s*([\w./-]+\.\w+):\d+(?::\d+)?[: ]",  # path:line[:col]: (gcc, mypy, ruff, go test)
    r"(?m)^([\w./-]+\.\w+)\(\d+,\d+\)",  # tsc path(line,col)
    r"\bat .*\(([\w./-]+\.[jt]sx?):\d+:\d+\)",  # node stack frame
    r"--> ([\w./-]+\.rs):\d+",  # rustc
)
_SITE = ("site-packages", "/lib/python", "node_modules", "/usr/", "<frozen")


def exit_code(error: str) -> int | None:
    """Claude Code reports a failing Bash command as 'Exit code N' on the first line."""
    first = error.split("\n", 1)[0].strip()
    if first.startswith("Exit code "):
        number = first[len("Exit code ") :].strip()
        if number.lstrip("-").isdigit():
            return int(number)
    return None


def category(tool_name: str | None, command: str | None, error: str, interrupted: bool) -> str:
    """test, type, lint, build, runtime; interrupt for a user stop; tool for other tools."""
    import re

    if interrupted:
        return "interrupt"
    if command:
        # `.venv/bin/pytest -x && ruff check` -> " .venv bin pytest -x ruff check "
        padded = f" {' '.join(command.translate(_SEPARATORS).split())} "
        for name, words in _COMMAND_WORDS:
            if any(f" {word} " in padded for word in words):
                return name
    for name, patterns in _TEXT_PATTERNS:
        if any(re.search(pattern, error) for pattern in patterns):
            return name if command or name != "runtime" else "tool"
    return "runtime" if command else ("tool" if tool_name else "other")


def file_at_fault(error: str, tool_file: str | None = None) -> str | None:
    """The file the tool input names, else the deepest project file the error text points at."""
    import re

    if tool_file:
        return tool_file
    for pattern in _FILE_PATTERNS:
        found = [path for path in re.findall(pattern, error) if not any(s in path for s in _SITE)]
        if found:
            return found[-1]  # a traceback's last project frame is where it broke
    return None


def command_signature(tool_name: str | None, command: str | None) -> str | None:
    if not command:
        return None
    return f"{tool_name or 'Bash'}: {' '.join(command.split())[:300]}"


def signature(tool_name: str | None, command: str | None, file_path: str | None, error: str) -> str:
    """What failed, so a repeat of the same failure counts as another attempt."""
    by_command = command_signature(tool_name, command)
    if by_command:
        return by_command
    tool = tool_name or "unknown"
    if file_path:
        return f"{tool}: {file_path}"
    return f"{tool}: {error.strip().splitlines()[0][:200] if error.strip() else 'error'}"


def ladder_key(kind: str, file_path: str | None, sig: str) -> str:
    """One escalation ladder per (file at fault, or command signature) and category."""
    return f"{kind}|{'file:' + file_path if file_path else sig}"


def capped(error: str) -> str:
    """Head and tail of a long error: the command line and the exception both survive."""
    if len(error) <= ERROR_TEXT_CAP:
        return error
    half = ERROR_TEXT_CAP // 2
    return f"{error[:half]}\n...[{len(error) - ERROR_TEXT_CAP} chars cut]...\n{error[-half:]}"


def gist(error: str, limit: int = 300) -> str:
    """One line: the exit code and the last meaningful line (usually the exception)."""
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    if not lines:
        return "(no error text)"
    head = lines[0]
    tail = next(
        (line for line in reversed(lines[1:]) if not line.startswith(("^", "~", "..."))), ""
    )
    text = f"{head}: {tail}" if tail and tail != head else head
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the escalation ladder ------------------------------------------------------------------

RESEARCH_AT = 3
USER_AT = 4
DENY_FROM = 5


def resolution_for(attempt: int) -> str | None:
    """The resolution an entry is recorded with when it is made: escalations, or still open."""
    if attempt >= USER_AT:
        return "escalated_user"
    if attempt == RESEARCH_AT:
        return "escalated_research"
    return None


def guidance(attempt: int, what: str, gist_line: str, file_path: str | None) -> str:
    """What the model is told after the attempt-th failure of the same thing."""
    where = f" in {file_path}" if file_path else ""
    if attempt < RESEARCH_AT:
        return (
            f"claude-session: `{what}` failed (attempt {attempt}){where}: {gist_line}\n"
            "Fix the cause and retry."
        )
    if attempt == RESEARCH_AT:
        return (
            f"claude-session: `{what}` failed for the 3rd time{where}: {gist_line}\n"
            "Stop guessing: research is required before another attempt. Read the relevant "
            "code, documentation or error output in full and find the cause. This approach is "
            "now recorded as a failed path; do not repeat it."
        )
    return (
        f"claude-session: `{what}` has failed {attempt} times{where}: {gist_line}\n"
        "The user has been asked to step in. Stop retrying this approach; explain what you tried "
        "and what you need, and wait for the user."
    )


def user_message(attempt: int, what: str, gist_line: str) -> str:
    return (
        f"claude-session: `{what}` has failed {attempt} times ({gist_line})."
        " The agent needs your help."
    )
