"""Project facts kept in project_state: language, tools, test and lint commands.

Detected from the project's files by the capture process (off the agent's path), and learned
from the commands agents run: a successful Bash command that is a test or lint command
becomes `test_command` or `lint_command`, with the tool call as its cause. Plain string tests,
no regular expressions: the observing part runs in hooks.
"""

import os

TEST_TOOLS = (
    "pytest",
    "python -m pytest",
    "python3 -m pytest",
    "uv run pytest",
    "tox",
    "nox",
    "npm test",
    "npm run test",
    "yarn test",
    "pnpm test",
    "npx jest",
    "npx vitest",
    "jest",
    "vitest",
    "go test",
    "cargo test",
    "mvn test",
    "gradle test",
    "./gradlew test",
    "bundle exec rspec",
    "rspec",
    "make test",
    "ctest",
)
LINT_TOOLS = (
    "ruff check",
    "ruff",
    "flake8",
    "pylint",
    "mypy",
    "npm run lint",
    "npx eslint",
    "eslint",
    "golangci-lint",
    "go vet",
    "cargo clippy",
    "rubocop",
    "make lint",
    "pre-commit run",
)
MARKERS = (  # file -> (language, package manager)
    ("pyproject.toml", "python", None),
    ("setup.py", "python", "pip"),
    ("requirements.txt", "python", "pip"),
    ("uv.lock", "python", "uv"),
    ("poetry.lock", "python", "poetry"),
    ("package.json", "javascript", "npm"),
    ("pnpm-lock.yaml", "javascript", "pnpm"),
    ("yarn.lock", "javascript", "yarn"),
    ("tsconfig.json", "typescript", None),
    ("Cargo.toml", "rust", "cargo"),
    ("go.mod", "go", "go"),
    ("pom.xml", "java", "maven"),
    ("build.gradle", "java", "gradle"),
    ("build.gradle.kts", "kotlin", "gradle"),
    ("Gemfile", "ruby", "bundler"),
)
TOOL_MARKERS = (
    (".git", "git"),
    (".jj", "jj"),
    ("Makefile", "make"),
    ("Dockerfile", "docker"),
    (".pre-commit-config.yaml", "pre-commit"),
    ("ruff.toml", "ruff"),
    (".ruff.toml", "ruff"),
    ("mypy.ini", "mypy"),
    ("tox.ini", "tox"),
    (".eslintrc.json", "eslint"),
    (".eslintrc.js", "eslint"),
    ("eslint.config.js", "eslint"),
    (".golangci.yml", "golangci-lint"),
)


def classify_command(command: str) -> str | None:
    """'test', 'lint' or None for a shell command (its last `&&` part that names a tool)."""
    for part in reversed(command.replace("||", "&&").replace(";", "&&").split("&&")):
        words = " ".join(part.split())
        for prefix in ("uv run ", "poetry run ", "pipenv run ", "npx --yes "):
            if words.startswith(prefix) and not words.startswith("uv run pytest"):
                words = words[len(prefix) :]
        if any(words == t or words.startswith(t + " ") for t in TEST_TOOLS):
            return "test"
        if any(words == t or words.startswith(t + " ") for t in LINT_TOOLS):
            return "lint"
    return None


def detect(root: str) -> "dict[str, str]":
    """What the project's files say: language(s), package manager, tools, and the test and
    lint commands they imply."""
    found: dict[str, str] = {}
    languages: list[str] = []
    for name, language, manager in MARKERS:
        if os.path.isfile(os.path.join(root, name)):
            if language not in languages:
                languages.append(language)
            if manager and "package_manager" not in found:
                found["package_manager"] = manager
    if "typescript" in languages and "javascript" in languages:
        languages.remove("javascript")
    if languages:
        found["language"] = languages[0]
        found["languages"] = ", ".join(languages)
    tools = [tool for marker, tool in TOOL_MARKERS if os.path.exists(os.path.join(root, marker))]
    pyproject = _read(os.path.join(root, "pyproject.toml"))
    package = _read(os.path.join(root, "package.json"))
    if "[tool.ruff" in pyproject:
        tools.append("ruff")
    if "[tool.mypy" in pyproject:
        tools.append("mypy")
    if "[tool.pytest" in pyproject or os.path.isfile(os.path.join(root, "pytest.ini")):
        tools.append("pytest")
    if tools:
        found["tools"] = ", ".join(dict.fromkeys(tools))
    test, lint = _commands(languages, tools, package, found.get("package_manager"))
    if test:
        found["test_command"] = test
    if lint:
        found["lint_command"] = lint
    return found


def _commands(
    languages: "list[str]", tools: "list[str]", package: str, manager: str | None
) -> "tuple[str | None, str | None]":
    language = languages[0] if languages else None
    test = lint = None
    if language == "python":
        test = "pytest"
        lint = "ruff check ." if "ruff" in tools else ("mypy ." if "mypy" in tools else None)
    elif language in ("javascript", "typescript"):
        runner = manager if manager in ("pnpm", "yarn") else "npm"
        test = f"{runner} test" if '"test"' in package else None
        if '"lint"' in package:
            lint = f"{runner} run lint"
        elif "eslint" in tools:
            lint = "npx eslint ."
    elif language == "rust":
        test, lint = "cargo test", "cargo clippy"
    elif language == "go":
        test = "go test ./..."
        lint = "golangci-lint run" if "golangci-lint" in tools else "go vet ./..."
    elif language in ("java", "kotlin"):
        test = "mvn test" if manager == "maven" else "./gradlew test"
    if test is None and "make" in tools:
        test = "make test"
    return test, lint


def _read(path: str, cap: int = 256 * 1024) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(cap)
    except OSError:
        return ""
