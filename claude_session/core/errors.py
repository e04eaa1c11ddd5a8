"""What a tool failure is: category, file at fault, signature, ladder step and gist (pure).

No regular expressions: plain string tests keep a failing tool call's hook from paying ~5 ms
to import `re` and compile patterns.
"""

from .signatures import command_signature

ERROR_TEXT_CAP = 2000
_SEPARATORS = str.maketrans({c: " " for c in "/;&|()`'\""})
_WORD_SEPARATORS = str.maketrans({c: " " for c in ";&|()`'\",:"})

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

_BUILD_MARKERS = (
    "error: could not compile",
    "could not build wheels",
    "npm err!",
    "make: ***",
    "cmake error",
    "undefined reference to",
    "build failed",
    "failed to build",
)
_SITE = ("site-packages", "/lib/python", "node_modules", "/usr/", "<frozen")
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-")


def exit_code(error: str) -> int | None:
    """Claude Code reports a failing Bash command as 'Exit code N' on the first line."""
    first = error.split("\n", 1)[0].strip()
    if first.startswith("Exit code "):
        number = first[len("Exit code ") :].strip()
        if number.lstrip("-").isdigit():
            return int(number)
    return None


CATEGORIES = ("lint", "type", "test", "build", "runtime")  # error_log.error_category
CHECKS = ("lint", "type", "test", "build")  # the categories of a command that checks the work


def is_check(kind: object, command: object) -> bool:
    """A command run to check the work (tests, build, lint, type check). When it fails, the
    work is wrong, not the command: it is re-run after a fix, never an approach to avoid."""
    return bool(command) and kind in CHECKS


def category(command: str | None, error: str) -> str:
    """lint, type, test, build or runtime (a tool that failed for any other reason).

    Plain string tests, no `re`: importing and compiling patterns would cost a failing tool
    call's hook ~5 ms (measured)."""
    if command:
        # `.venv/bin/pytest -x && ruff check` -> " .venv bin pytest -x ruff check "
        padded = f" {' '.join(command.translate(_SEPARATORS).split())} "
        for name, words in _COMMAND_WORDS:
            if any(f" {word} " in padded for word in words):
                return name
    lines = [line.rstrip() for line in error.splitlines()]
    lower = error.lower()
    if any(_test_line(line) for line in lines):
        kind = "test"
    elif "error TS" in error or "error[E0308]" in error or any(_type_line(x) for x in lines):
        kind = "type"
    elif any(_lint_line(line) for line in lines) or " problem (" in error or " problems (" in error:
        kind = "lint"
    elif any(marker in lower for marker in _BUILD_MARKERS):
        kind = "build"
    else:
        kind = "runtime"
    return kind


def _test_line(line: str) -> bool:
    stripped = line.strip()
    return (
        line.startswith(("FAILED ", "FAIL ", "FAIL\t", "--- FAIL:"))
        or (line.startswith("=") and " failed" in line)
        or (stripped.startswith(("Tests:", "Test:")) and " failed" in stripped)
        or stripped.endswith(" failing")
    )


def _type_line(line: str) -> bool:
    """mypy: `path:12: error: ... [code]` or its `Found 2 errors in 1 file` summary."""
    if ": error: " in line and line.endswith("]"):
        return True
    return line.startswith("Found ") and " error" in line and " in " in line and " file" in line


def _lint_line(line: str) -> bool:
    """ruff/flake8 `path:1:8: F401 ...`, or ruff's `Found 3 errors.` summary."""
    if line.startswith("Found ") and line.endswith(("error.", "errors.")):
        return True
    parts = line.split(":", 3)
    if len(parts) < 4 or not (parts[1].isdigit() and parts[2].isdigit()):
        return False
    code = parts[3].split(maxsplit=1)[0] if parts[3].split() else ""
    letters = code.rstrip("0123456789")
    digits = code[len(letters) :]
    return 1 <= len(letters) <= 3 and letters.isupper() and 3 <= len(digits) <= 4


def file_at_fault(error: str, tool_file: str | None = None) -> str | None:
    """The file the tool input names, else the deepest project file the error text points at:
    a traceback's last project frame, a test's file, a compiler's `path:line:`."""
    if tool_file:
        return tool_file
    lines = [line.strip() for line in error.splitlines()]
    for finder in (
        _traceback_file,
        _pytest_file,
        _location_file,
        _tsc_file,
        _frame_file,
        _rust_file,
    ):
        found = [p for p in map(finder, lines) if p and _is_path(p) and not _in_site(p)]
        if found:
            return found[-1]
    return None


def _traceback_file(line: str) -> str | None:
    if line.startswith('File "') and '", line ' in line:
        return line[6 : line.index('"', 6)]
    return None


def _pytest_file(line: str) -> str | None:
    return line[7:].split("::")[0] if line.startswith("FAILED ") and "::" in line else None


def _location_file(line: str) -> str | None:
    parts = line.split(":", 2)
    return parts[0] if len(parts) == 3 and parts[1].isdigit() else None


def _tsc_file(line: str) -> str | None:
    head, _, rest = line.partition("(")
    numbers = rest.split(")", 1)[0].split(",")
    return head if len(numbers) == 2 and all(n.isdigit() for n in numbers) else None


def _frame_file(line: str) -> str | None:
    """A node stack frame: `at fn (path:line:col)`."""
    if not (line.startswith("at ") and line.endswith(")") and "(" in line):
        return None
    inner = line[line.rindex("(") + 1 : -1].rsplit(":", 2)
    return inner[0] if len(inner) == 3 and inner[1].isdigit() else None


def _rust_file(line: str) -> str | None:
    if not line.startswith("--> "):
        return None
    parts = line[4:].split(":")
    return parts[0] if len(parts) >= 2 and parts[1].isdigit() else None


def _is_path(text: str) -> bool:
    name = text.rsplit("/", 1)[-1]
    stem, dot, ext = name.rpartition(".")
    return bool(stem and dot and 1 <= len(ext) <= 5 and ext.isalnum()) and set(text) <= _PATH_CHARS


def named_files(command: object) -> list[str]:
    """The files a shell command names (words that look like a path with an extension,
    quotes and redirections aside; not a call such as `m.f()`), each once, in order, and the
    modules a Python one-liner imports (`import m` -> m.py): what it reads or checks."""
    if not isinstance(command, str):
        return []
    found: list[str] = []
    for word in command.translate(_WORD_SEPARATORS).split():
        word = word.lstrip("<>").removeprefix("./")
        if "=" in word:  # --config=setup.cfg, PYTHONPATH=src
            word = word.rsplit("=", 1)[1]
        if word + "(" in command:
            continue  # m.f() is a call, not a file
        if word and not word.startswith("-") and _is_path(word) and word not in found:
            found.append(word)
    if "python" in command:
        words = command.translate(_WORD_SEPARATORS).split()
        for i, name in enumerate(words[1:], 1):
            if (
                words[i - 1] in ("import", "from")
                and name.replace(".", "").replace("_", "").isalnum()
            ):
                module = name.replace(".", "/") + ".py"
                if module not in found:
                    found.append(module)
    return found[:20]


def depends_on(file_path: object, command: object) -> list[str] | None:
    """The files a failure depends on: the file at fault and the files its command names or
    imports. A change to one of them after the failure means it may pass now. None when
    nothing says which: then any file of the project may be one."""
    files = [file_path] if isinstance(file_path, str) and file_path else []
    return list(dict.fromkeys([*files, *named_files(command)])) or None


def _in_site(path: str) -> bool:
    return any(marker in path for marker in _SITE)


def signature(tool_name: str | None, command: str | None, file_path: str | None, error: str) -> str:
    """What failed, so a repeat of the same failure counts as another attempt."""
    by_command = command_signature(tool_name, command)
    if by_command:
        return by_command
    tool = tool_name or "unknown"
    if file_path:
        return f"{tool}: {file_path}"
    return f"{tool}: {error.strip().splitlines()[0][:200] if error.strip() else 'error'}"


def ladder_key(kind: str, file_path: str | None, sig: str, interrupted: bool = False) -> str:
    """One escalation ladder per (file at fault, or command signature) and category;
    interrupts keep a ladder of their own, so a user's stop never counts as an attempt."""
    return f"{'interrupt' if interrupted else kind}|{'file:' + file_path if file_path else sig}"


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


def ladder_step(attempts: int) -> str:
    """Where a ladder stands after `attempts` failures, in the words `status` and `errors`
    both print (never a resolution's column value, such as escalated_research)."""
    if attempts >= DENY_FROM:
        return f"{attempts} (edits may be refused)"
    if attempts >= USER_AT:
        return f"{attempts} (ask the user)"
    if attempts == RESEARCH_AT:
        return f"{attempts} (research)"
    return f"{attempts} (retry)"
