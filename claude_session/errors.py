"""What a tool failure is: its signature, category, exit code and gist (pure, standard library)."""

from __future__ import annotations

ERROR_TEXT_CAP = 2000
_SEPARATORS = str.maketrans({c: " " for c in "/;&|()`'\""})

# (category, words that mark a command of that kind), first match wins.
_COMMAND_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
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
        ),
    ),
    ("type", ("mypy", "tsc", "pyright", "pytype", "flow check")),
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
        ),
    ),
)


def exit_code(error: str) -> int | None:
    """Claude Code reports a failing Bash command as 'Exit code N' on the first line."""
    first = error.split("\n", 1)[0].strip()
    if first.startswith("Exit code "):
        number = first[len("Exit code ") :].strip()
        if number.lstrip("-").isdigit():
            return int(number)
    return None


def category(tool_name: str | None, command: str | None, error: str, interrupted: bool) -> str:
    if interrupted:
        return "interrupt"
    if command:
        # `.venv/bin/pytest -x && ruff check` -> " .venv bin pytest -x ruff check "
        spaced = command.translate(_SEPARATORS)
        padded = f" {' '.join(spaced.split())} "
        for name, words in _COMMAND_CATEGORIES:
            if any(f" {word} " in padded for word in words):
                return name
        return "runtime"
    return "tool" if tool_name else "other"


def signature(tool_name: str | None, command: str | None, file_path: str | None, error: str) -> str:
    """What failed, so a repeat of the same failure counts as another attempt."""
    tool = tool_name or "unknown"
    if command:
        return f"{tool}: {' '.join(command.split())[:300]}"
    if file_path:
        return f"{tool}: {file_path}"
    return f"{tool}: {error.strip().splitlines()[0][:200] if error.strip() else 'error'}"


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
