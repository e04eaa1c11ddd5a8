"""Shared test helpers: real hook scripts run as subprocesses, on real recorded payloads."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from itertools import count as counter
from pathlib import Path
from typing import Any

import apsw
import pytest
from inproc import Recorder

from claude_session.services.setup import installer

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude-code-2.1.330"
RECORDED_PROJECT = "/home/dev/project"
PYTHON = sys.executable  # the venv interpreter, as `install` writes it


def fixture(name: str, project: Path | None = None) -> dict[str, Any]:
    """A recorded payload, with its project path moved to `project`."""
    text = (FIXTURES / f"{name}.json").read_text()
    if project is not None:
        text = text.replace(RECORDED_PROJECT, str(project))
    return json.loads(text)


def capture_lock(project: Path, seconds: float = 15.0) -> int:
    """The project's capture lock, as a revert takes it: a capture process that lingers after
    its last frame (services/snapshots/capture.py) lets it go. No capture runs while the test
    holds it."""
    from claude_session.services.snapshots import capture_control

    fd = capture_control.take_lock(str(project), seconds)
    assert fd is not None, "the capture process kept its lock"
    return fd


def stream(project: Path) -> list[dict[str, Any]]:
    text = (FIXTURES / "session-stream.jsonl").read_text().replace(RECORDED_PROJECT, str(project))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class HookResult:
    def __init__(self, done: subprocess.CompletedProcess[bytes], seconds: float) -> None:
        self.returncode = done.returncode
        self.stdout = done.stdout.decode("utf-8", "replace")
        self.stderr = done.stderr.decode("utf-8", "replace")
        self.seconds = seconds

    def json(self) -> dict[str, Any] | None:
        """stdout as the contract allows it: empty (None) or exactly one JSON object."""
        if not self.stdout.strip():
            return None
        value = json.loads(self.stdout)
        assert isinstance(value, dict), self.stdout
        return value


SCHEMA_V1 = Path(__file__).resolve().parent / "fixtures" / "schema_v1.sql"


@contextlib.contextmanager
def install_lock(prefix: Path) -> Iterator[None]:
    """One installer at a time into a shared cache folder (the e2e tier runs on two workers,
    which may both want the same npm package on a fresh machine)."""
    import fcntl

    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{prefix}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def database_at_version(path: Path | str, version: int) -> apsw.Connection:
    """A database as `version` of the schema left it: version 1 from its snapshot, then the
    migrations up to `version`, each with the user_version it set (open, for the test's rows)."""
    from claude_session.core import db

    conn = apsw.Connection(str(path))
    for _ in conn.execute(SCHEMA_V1.read_text()):
        pass
    for number, sql in db.migrations():
        if number <= version:
            for _ in conn.execute(sql):
                pass
            conn.execute(f"PRAGMA user_version = {number}")
    return conn


def hook_env(project: Path | None, **extra: str) -> dict[str, str]:
    """The environment Claude Code gives a hook: minimal PATH, CLAUDE_PROJECT_DIR."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    env["CLAUDE_SESSION_STATE_DIR"] = os.environ["CLAUDE_SESSION_STATE_DIR"]
    env["CLAUDE_SESSION_DATA_DIR"] = os.environ["CLAUDE_SESSION_DATA_DIR"]
    env["CLAUDE_SESSION_NO_DAEMON"] = "1"  # daemon tests start their own
    if os.environ.get("XDG_RUNTIME_DIR"):
        env["XDG_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"]
    if project is not None:
        env["CLAUDE_PROJECT_DIR"] = str(project)
    return env | extra


def run_cli(
    project: Path, *args: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """The installed `claude-session --project PROJECT ARGS`, as a user runs it, in the
    hooks' environment (`env` added)."""
    return subprocess.run(
        [str(Path(PYTHON).parent / "claude-session"), "--project", str(project), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=hook_env(project, **env),
        timeout=120,
    )


def run_hook(
    event: str,
    payload: dict[str, Any] | bytes | str | None,
    project: Path | None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    **popen: Any,
) -> HookResult:
    """Run the real hook entry for `event` the way `install` registers it (-I -S)."""
    if isinstance(payload, dict):
        data = json.dumps(payload).encode()
    elif isinstance(payload, str):
        data = payload.encode("utf-8", "surrogatepass")
    else:
        data = payload or b""
    full_env = hook_env(project, **(env or {}))
    started = time.perf_counter()
    done = subprocess.run(
        hook_argv(event),
        input=data,
        capture_output=True,
        env=full_env,
        timeout=timeout,
        **popen,
    )
    result = HookResult(done, time.perf_counter() - started)
    assert result.returncode == 0, result.stderr
    result.json()  # stdout is empty or one JSON object, always
    return result


def answer_on_terminal(
    argv: list[str],
    prompt: bytes,
    answer: bytes,
    env: dict[str, str] | None = None,
    seconds: float = 60,
) -> tuple[int, str]:
    """Run `argv` with a terminal (a pty) for stdin, stdout and stderr, type `answer` once
    `prompt` shows, and return its exit status and what it printed, whitespace folded (lines
    wrap at the terminal's width)."""
    import select

    controller, terminal = os.openpty()
    proc = subprocess.Popen(argv, stdin=terminal, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + seconds
    answered = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        if not answered and prompt in seen:
            os.write(controller, answer + b"\n")
            answered = True
        if proc.poll() is not None and not ready:
            break
    os.close(controller)
    return proc.wait(timeout=60), " ".join(seen.decode("utf-8", "replace").split())


def hook_argv(event: str) -> list[str]:
    """The hook process exactly as `install` registers it (less the shell guard)."""
    return installer.hook_argv(event, PYTHON)


GIT_ENV = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@e", "GIT_COMMITTER_NAME": "u"}
GIT_ENV |= {"GIT_COMMITTER_EMAIL": "u@e", "GIT_OPTIONAL_LOCKS": "0"}


def git(root: Path, *args: str) -> str:
    """git in `root` as a user runs it, with an author and no optional locks; its stdout."""
    done = subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        env=os.environ | GIT_ENV,
        check=True,
    )
    return done.stdout


def query(project: Path, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(project / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    conn.setbusytimeout(5000)  # a capture process or the daemon may be checkpointing
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def clone_database(origin: Path, clone: Path) -> None:
    """The origin's database as a repository carries it: one file holding every committed page,
    made while the origin's processes (a capture, the daemon) may still be writing."""
    clone.mkdir(exist_ok=True)
    source = apsw.Connection(str(origin / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    source.setbusytimeout(10000)
    copy = apsw.Connection(str(clone / ".claude-session.db"))
    try:
        with copy.backup("main", source, "main") as backup:
            backup.step()  # every page at once: one consistent read of the origin
    finally:
        copy.close()
        source.close()


def count(project: Path, table: str, where: str = "1", params: Any = ()) -> int:
    return int(query(project, f"SELECT count(*) FROM {table} WHERE {where}", params)[0][0])


def log_file(project: Path) -> Path:
    """The project's log of internal errors (in our per-user state folder)."""
    from claude_session.core.paths import log_path

    return Path(log_path(str(project)))


def spool_a_stop(project: Path) -> None:
    """One Stop event waiting in the project's spool, as a hook leaves it when the database
    could not be written."""
    from claude_session.core import spool

    spool.write(
        str(project / ".claude-session.db.spool"),
        {
            "delivery_id": "d1",
            "received_at": 1.0,
            "event_hint": "Stop",
            "reason": "test",
            "payload": json.dumps(fixture("Stop", project)),
        },
    )


def read_envelope(path: Path) -> dict[str, Any]:
    """A spool or answered file as our install writes it: a line with its MAC, then the JSON."""
    mac, body = path.read_bytes().split(b"\n", 1)
    assert len(mac) == 64, mac[:80]
    found = json.loads(body)
    assert isinstance(found, dict)
    return found


def spooled(project: Path) -> list[Path]:
    folder = project / ".claude-session.db.spool"
    return sorted(folder.glob("*.json")) if folder.exists() else []


def wait_for(condition: Callable[[], object], seconds: float = 15.0) -> bool:
    """Poll `condition` until it holds or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def daemons_of(project: Path) -> list[int]:
    """Pids of daemon processes for this project, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        # also while still in its start delay (`sh -c "sleep ...; exec nice python -m ..."`)
        path = str(project).encode()
        if b"claude_session.daemon" in cmdline and (
            path + b"\0" in cmdline or path + b"'" in cmdline
        ):
            found.append(int(entry.name))
    return found


@pytest.fixture
def reap_daemons(project: Path):  # type: ignore[no-untyped-def]
    """Stop every daemon a test started for `project`, including one still starting up."""
    yield
    from claude_session.services.background import daemon_control

    deadline = time.monotonic() + 3
    while daemons_of(project) and time.monotonic() < deadline:
        if daemon_control.is_running(str(project)):
            daemon_control.stop(str(project), timeout=5)
        time.sleep(0.05)
    for pid in daemons_of(project):
        os.kill(pid, 9)


# --- no process of ours outlives the run --------------------------------------------------------
# The hooks start detached processes (the daemon, the capture process; a test may start
# an MCP hook server or the demo): each test's are stopped when it ends, and the run fails, naming
# them, if any under this run's temporary folders is still there at its end. Only processes
# whose command line or working folder is under THIS run's basetemp are ever looked at: other
# runs on the machine (other checkouts, other developers) are never touched.

EXIT_GRACE_SECONDS = 10.0  # a capture process lingers ~2 s after its last frame, then exits
_BASETEMP = pytest.StashKey[Path]()


def _this_run() -> set[int]:
    """This process and those above it (a `timeout`, a shell, pytest-xdist's controller):
    never taken for a process left behind, whatever their command lines say."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                pid = int(f.read().rsplit(b")", 1)[1].split()[1])  # the parent's pid
        except (OSError, ValueError, IndexError):
            break
    return pids


def our_processes(under: list[Path]) -> dict[int, str]:
    """pid -> command line of each live process of ours (`claude_session` in its command
    line) whose command line names, or whose working folder is, a path under one of `under`."""
    prefixes = [os.fsencode(str(u)).rstrip(b"/") + b"/" for u in under]
    found: dict[int, str] = {}
    mine = _this_run()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in mine:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()  # empty for a zombie: gone already
            if b"claude_session" not in cmdline:
                continue
            cwd = os.fsencode(os.readlink(f"/proc/{name}/cwd")) + b"/"
        except OSError:
            continue
        if any(p in cmdline or cwd.startswith(p) for p in prefixes):
            found[int(name)] = cmdline.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return found


def stop_processes(under: list[Path], grace: float) -> dict[int, str]:
    """SIGTERM our processes under `under` (the daemon stops on it), SIGKILL those still
    there after `grace` seconds; returns the ones that had to be stopped."""
    import signal

    found = our_processes(under)
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while our_processes(under) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in our_processes(under):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return found


@pytest.fixture(scope="session", autouse=True)
def _run_basetemp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's basetemp, for the check at its end (pytest_sessionfinish)."""
    base = tmp_path_factory.getbasetemp().resolve()
    request.config.stash[_BASETEMP] = base
    _RUN_TMP[:] = [base]
    return base


_RUN_TMP: list[Path] = []


def run_tmp() -> Path:
    """A folder for a test's own scratch folders (tempfile.mkdtemp(dir=...)): under this run's
    basetemp, where the check at the run's end looks for processes left running."""
    return _RUN_TMP[0] if _RUN_TMP else Path(tempfile.gettempdir())


@pytest.fixture(autouse=True)
def _stop_the_tests_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """What a test started under its own tmp_path (a daemon started by a SessionStart hook, a
    capture process still lingering, an MCP hook server) is stopped when the test ends, so that
    none outlives it or the run."""
    # Asked for before the test (torn down after this fixture), and only when the test uses it.
    wanted = "tmp_path" in request.fixturenames
    tmp = Path(request.getfixturevalue("tmp_path")).resolve() if wanted else None
    yield
    if tmp is not None:
        stop_processes([tmp], grace=3.0)


@pytest.hookimpl(trylast=True)  # after the session's fixtures are torn down
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a process of ours under this run's basetemp is still running after a
    bounded grace (then stop it: the run leaves nothing behind either way).

    Under pytest-xdist each worker has its own basetemp, inside the controller's: a worker
    leaves the check to the controller, which runs it over the basetemp holding every
    worker's, once all of them are done, and whose exit status is the run's."""
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller checks
        return
    base = session.config.stash.get(_BASETEMP, None)
    if base is None and session.config.pluginmanager.has_plugin("dsession"):  # xdist controller
        factory = getattr(session.config, "_tmp_path_factory", None)
        base = factory.getbasetemp().resolve() if factory is not None else None
    if base is None:  # no test ran
        return
    deadline = time.monotonic() + EXIT_GRACE_SECONDS
    while our_processes([base]) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = stop_processes([base], grace=3.0)
    if not left:
        return
    title = f"{len(left)} process(es) of ours outlived the tests (now stopped)"
    lines = [f"pid {pid}: {cmd}" for pid, cmd in sorted(left.items())]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_sep("=", title, red=True)
        for line in lines:
            reporter.write_line(line, red=True)
    else:
        sys.stderr.write("\n".join([title, *lines, ""]))
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


# --- the test tiers (tests/tiers.py, docs/testing.md) -------------------------------------------


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: every test has its tier by then
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tiers import assign

    assign(items)


@pytest.fixture(autouse=True)
def _fast_tests_start_no_process_of_ours(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A `fast` test that starts a hook, the CLI, a capture process, the daemon, a server, the
    real Claude Code CLI, a browser, tmux or an install fails at its end, naming what it
    started: it belongs in a slower tier."""
    if request.node.get_closest_marker("fast") is None:
        yield
        return
    from tiers import GUARD, Guard

    guard = request.node.stash[GUARD] = Guard(monkeypatch)
    yield
    assert not guard.found, "a fast test started: " + "; ".join(guard.found)


@pytest.fixture(autouse=True)
def isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """No test touches the real user's state dir or settings."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("CLAUDE_SESSION_STATE_DIR", str(state))
    monkeypatch.setenv("CLAUDE_SESSION_DATA_DIR", str(state / "data"))
    monkeypatch.setenv("CLAUDE_SESSION_NO_DAEMON", "1")
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    runtime = state / "run"  # the group commit's inbox (core/spool.py), not in /dev/shm
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    return state


@pytest.fixture
def recorder(project: Path) -> Iterator[Recorder]:
    """The fast layer (tests/inproc.py) on the `project` fixture, the judge off."""
    os.environ["CLAUDE_SESSION_NO_JUDGE"] = "1"
    rec = Recorder(project)
    yield rec
    rec.close()
    del os.environ["CLAUDE_SESSION_NO_JUDGE"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def hook(project: Path) -> Callable[..., HookResult]:
    """`hook(event, payload)` runs the real script against the `project` fixture."""

    def run(event: str, payload: Any, **kwargs: Any) -> HookResult:
        return run_hook(event, payload, project, **kwargs)

    return run


class WheelInstall:
    """claude-session built as a wheel and installed into a fresh venv (not editable)."""

    def __init__(self, wheel: Path, venv: Path) -> None:
        self.wheel = wheel
        self.venv = venv
        self.cli = str(venv / "bin" / "claude-session")
        self.python = str(venv / "bin" / "python")


def installed_project(tmp_path: Path, wheel: WheelInstall) -> tuple[Path, Path]:
    """A new git project with the hooks installed from the wheel, as a user installs them,
    and a HOME of its own for Claude Code: (project, home)."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(
        [wheel.cli, "--project", str(project), "install"], check=True, capture_output=True
    )
    return project, home


def wheel_cli(wheel: WheelInstall, project: Path, home: Path) -> Callable[..., str]:
    """`cli(*args, stdin=None)`: the wheel's `claude-session --project PROJECT ARGS` reading
    Claude Code's config under `home`, 200 columns wide; its stdout, once it exited 0."""
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(home / ".claude"), "COLUMNS": "200"}

    def cli(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [wheel.cli, "--project", str(project), *args],
            capture_output=True,
            text=True,
            env=env,
            input=stdin,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    return cli


def web_pages(root: str, *paths: str) -> list[str]:
    """The web page's HTML at each path (after its token), from a server started for them."""
    import urllib.request

    from claude_session.web import web_server

    server, thread = web_server.start(root)
    try:
        found = []
        for path in paths:
            with urllib.request.urlopen(f"{server.url}{path}", timeout=30) as page:
                found.append(page.read().decode())
        return found
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def build_wheel(into: Path) -> Path:
    """The wheel, built from this checkout as `pip wheel` builds it for any user."""
    subprocess.run(
        [PYTHON, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(into), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = into.glob("claude_session-*.whl")
    return wheel


@pytest.fixture(scope="session")
def wheel_install(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> WheelInstall:
    """Built and installed once per test run; the e2e tests install their hooks from it. Under
    pytest-xdist the workers share one, made by the first that needs it (under a lock, in the
    basetemp above the workers' own)."""
    if not hasattr(request.config, "workerinput"):
        return make_wheel_install(tmp_path_factory.mktemp("wheel"))
    import fcntl

    shared = tmp_path_factory.getbasetemp().parent / "wheel"
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / ".done"
        if done.exists():
            (wheel,) = (shared / "dist").glob("claude_session-*.whl")
            return WheelInstall(wheel, shared / "venv")
        made = make_wheel_install(shared)
        done.touch()
        return made


def make_wheel_install(scratch: Path) -> WheelInstall:
    wheel = build_wheel(scratch / "dist")
    venv = scratch / "venv"
    subprocess.run([PYTHON, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return WheelInstall(wheel, venv)


def write_config(project: Path, values: dict[str, Any]) -> None:
    """Write `.claude-session.json` and trust it, as a user does after editing it by hand
    (`claude-session trust`): an untrusted configuration is never used."""
    (project / ".claude-session.json").write_text(json.dumps(values))
    done = subprocess.run(
        [str(Path(PYTHON).parent / "claude-session"), "--project", str(project), "trust", "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


# A busy project (`busy`, `finished`): what a user's project holds after a day's work, with
# hostile text everywhere. Shared by the tests that read the CLI's output (test_cli_readable,
# test_daily_use).
CLI = str(Path(PYTHON).parent / "claude-session")
BUSY_SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"
LONG = "refactor the parser " * 12 + "[bold]\x1b[31mred\u202e ok"
LONG_FILE = "src/" + "very_long_directory_name/" * 4 + "[link=x]module\x1b[2J.py"
AGENTS = ("a1" + "f" * 15, "a2" + "e" * 15)
_ids = counter(1)


def cli_at(
    *args: str, columns: str | None = "80", check: bool = True, terminal: bool = False
) -> subprocess.CompletedProcess[str]:
    """The installed command as a subprocess, its output piped; with `terminal`, rich is told
    it writes to a terminal (colours and styles on, as for a person)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}
    env["TMPDIR"] = str(run_tmp())  # `demo`'s scratch project: where the run's end looks
    if columns is not None:
        env["COLUMNS"] = columns
    if terminal:
        env["FORCE_COLOR"] = "1"
    done = subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr + done.stdout
    return done


def busy_event(project: Path, name: str, agent: str | None, **changes: Any) -> dict[str, Any]:
    """A recorded payload of the busy session, its own tool call, from `agent` (None: main)."""
    payload = fixture(name, project) | {"session_id": BUSY_SESSION}
    payload["tool_use_id"] = f"toolu_r{next(_ids)}"
    payload.pop("agent_id", None)
    payload.pop("agent_type", None)
    if agent:
        payload |= {"agent_id": agent, "agent_type": "general-purpose"}
    return payload | changes


def start_agent(project: Path, agent: str, task: str) -> None:
    launch = busy_event(project, "PreToolUse.Agent", None)
    launch["tool_input"] |= {"prompt": task, "description": f"work of {agent}"}
    run_hook("PreToolUse", launch, project)
    start = fixture("SubagentStart", project) | {"session_id": BUSY_SESSION, "agent_id": agent}
    run_hook("SubagentStart", start, project)


def edit(project: Path, agent: str, path: str) -> None:
    for name, hook in (("PreToolUse.Edit", "PreToolUse"), ("PostToolUse.Edit", "PostToolUse")):
        payload = busy_event(project, name, agent, tool_use_id=f"toolu_edit_{agent}")
        payload["tool_input"]["file_path"] = str(project / path)
        run_hook(hook, payload, project)


@pytest.fixture
def busy(project: Path) -> Path:
    """A live session through the real hooks: two subagents with long tasks editing the same
    long-named file, a command failing three times, a compaction; hostile text everywhere."""
    start = fixture("SessionStart.startup", project) | {"session_id": BUSY_SESSION}
    run_hook("SessionStart", start, project)
    prompt = fixture("UserPromptSubmit", project) | {"session_id": BUSY_SESSION, "prompt": LONG}
    run_hook("UserPromptSubmit", prompt, project)
    start_agent(project, AGENTS[0], "first: " + LONG)
    start_agent(project, AGENTS[1], "second: " + LONG)
    edit(project, AGENTS[0], LONG_FILE)
    edit(project, AGENTS[1], LONG_FILE)
    for _ in range(3):
        failure = busy_event(project, "PostToolUseFailure.Bash", None)
        failure["tool_input"]["command"] = "pytest " + LONG
        failure["error"] = "Exit code 1\n" + LONG
        run_hook("PostToolUseFailure", failure, project)
    for name in ("PreCompact", "PostCompact"):
        run_hook(name, fixture(name, project) | {"session_id": BUSY_SESSION}, project)
    cli_at("--project", str(project), "state", "set", "release_" + "x" * 60, LONG)
    cli_at("--project", str(project), "memory", "add", LONG, "--category", "fact")
    return project


@pytest.fixture
def finished(busy: Path) -> Path:
    """The busy session once its two subagents finished and it ended."""
    for agent in AGENTS:
        stop = fixture("SubagentStop", busy) | {"session_id": BUSY_SESSION, "agent_id": agent}
        run_hook("SubagentStop", stop, busy)
    run_hook("SessionEnd", fixture("SessionEnd", busy) | {"session_id": BUSY_SESSION}, busy)
    return busy


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Claude Code config folder of the test's own ($CLAUDE_CONFIG_DIR): transcripts are
    read only from under it."""
    folder = tmp_path / "claude-config"
    folder.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    return folder
