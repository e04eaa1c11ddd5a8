"""`claude-session serve`, as a person uses it: a session recorded through the real hooks in a
git project, the installed command serving it, urllib for what it refuses, and a real headless
Chromium drawing the session and diff pages (screenshots read back pixel by pixel)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pytest
from conftest import PYTHON, fixture, hook_env, query, run_hook, wait_for
from PIL import Image

CLI = str(Path(PYTHON).parent / "claude-session")
CHROMIUM = "/usr/bin/chromium"
SESSION = "5e55e55e-0000-4000-8000-000000000001"
DONE, BUSY = "a11111111111111aa", "b22222222222222bb"
HOSTILE_PROMPT = "<script>alert(1)</script> make the value configurable"
HOSTILE_DESCRIPTION = '<img src=x onerror="alert(2)"> bump the value'
GIT_ENV = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@e", "GIT_COMMITTER_NAME": "u"}
GIT_ENV |= {"GIT_COMMITTER_EMAIL": "u@e"}
BLUE, GREEN = (0x25, 0x63, 0xEB), (0x16, 0xA3, 0x4A)  # running, completed (web_pages)
ADDED, REMOVED = (0xDC, 0xFC, 0xE7), (0xFE, 0xE2, 0xE2)  # diff line backgrounds
_ids = iter(range(1, 10_000))


def send(project: Path, name: str, **changes: Any) -> None:
    payload = fixture(name, project) | {"session_id": SESSION}
    if "tool_use_id" in payload:
        payload["tool_use_id"] = f"toolu_sv{next(_ids)}"
    for key in ("agent_id", "agent_type"):
        payload.pop(key, None)
    payload |= changes
    if "tool_input" in changes and "tool_input" in fixture(name):
        payload["tool_input"] = fixture(name, project)["tool_input"] | changes["tool_input"]
    run_hook(name.split(".")[0], payload, project)


def write(project: Path, path: str, content: str, **agent: str) -> None:
    """A Write tool call: PreToolUse, the file written, PostToolUse (one tool_use_id)."""
    tool_use_id = f"toolu_sv{next(_ids)}"
    given = {"file_path": str(project / path), "content": content}
    send(project, "PreToolUse.Write", tool_use_id=tool_use_id, tool_input=given, **agent)
    (project / path).write_text(content)
    send(project, "PostToolUse.Write", tool_use_id=tool_use_id, tool_input=given, **agent)


def launch(project: Path, agent: str, kind: str, description: str) -> dict[str, str]:
    send(
        project,
        "PreToolUse.Agent",
        tool_input={"subagent_type": kind, "description": description},
    )
    send(project, "SubagentStart", agent_id=agent, agent_type=kind)
    return {"agent_id": agent, "agent_type": kind}


@pytest.fixture
def recorded(project: Path) -> Path:
    """A git project and one session in it: a prompt, a Write by the main thread, a subagent
    that rewrites a file and stops, one still running, a failing command, the turn's end."""
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("VALUE = 1\nNAME = 'app'\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(project), *args], check=True, env=os.environ | GIT_ENV)
    send(project, "SessionStart.startup")
    send(project, "UserPromptSubmit", prompt=HOSTILE_PROMPT)
    write(project, "src/config.py", "LIMIT = 10\n")
    done = launch(project, DONE, "general-purpose", HOSTILE_DESCRIPTION)
    write(project, "src/app.py", "VALUE = 2\nNAME = 'app'\n", **done)
    send(project, "SubagentStop", **done)
    launch(project, BUSY, "Explore", "look around")
    send(project, "PostToolUseFailure.Bash")
    send(project, "Stop")
    settled = "SELECT 1 FROM vcs_tags WHERE status = 'pending'"
    assert wait_for(lambda: not query(project, settled), 60)
    # a fork from the frame of the subagent's Write: a branch of the timeline
    (frame,) = query(
        project, "SELECT frame_no FROM frames WHERE agent_id = ? AND kind = 'tool'", (DONE,)
    )[0]
    forked = subprocess.run(
        [CLI, "--project", str(project), "fork", f"{SESSION}:{frame}", "--label", "try-again"],
        capture_output=True,
        text=True,
        env=hook_env(project),
        timeout=120,
    )
    assert forked.returncode == 0, forked.stderr
    return project


def start_serve(project: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    """`claude-session serve ARGS` on `project`, as a user starts it, its output piped."""
    return subprocess.Popen(
        [CLI, "--project", str(project), "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=hook_env(project, **env),
    )


@pytest.fixture
def server(recorded: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`claude-session serve --port 0` on the recorded project, and the URL it printed."""
    process = start_serve(recorded, "--port", "0")
    try:
        yield url_of(process), process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def url_of(process: subprocess.Popen[str]) -> str:
    """The URL `serve` printed: http://127.0.0.1:PORT/TOKEN/."""
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]+/", line)
    assert found, line + (process.stderr.read() if process.poll() is not None else "")
    return found.group(0)


def get(url: str, method: str = "GET") -> tuple[int, str, dict[str, str]]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net shows them) listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # LISTEN
                found.add(address)
    return found


def chromium(url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert os.path.exists(CHROMIUM), "chromium is required (./install.sh --dev installs it)"
    profile = tmp_path / f"chromium-{next(_ids)}"
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--window-size=1280,900",
            *args,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )


def screenshot(url: str, tmp_path: Path, name: str) -> Image.Image:
    shot = tmp_path / f"{name}.png"
    done = chromium(url, tmp_path, f"--screenshot={shot}")
    assert shot.exists(), done.stderr[-3000:]
    keep = os.environ.get("CLAUDE_SESSION_KEEP_SCREENSHOTS")
    if keep:  # for a person to look at
        shutil.copy(shot, Path(keep) / shot.name)
    image = Image.open(shot)
    assert image.format == "PNG" and image.size == (1280, 900)
    return image.convert("RGB")


def pixels_of(image: Image.Image, colour: tuple[int, int, int]) -> int:
    return sum(n for n, c in image.getcolors(1 << 22) or [] if c == colour)


def test_the_token_is_required_and_only_127_0_0_1_listens(
    server: tuple[str, subprocess.Popen[str]],
) -> None:
    url, _ = server
    origin, token = url.rstrip("/").rsplit("/", 1)
    port = int(origin.rsplit(":", 1)[1])
    assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1, and nothing else
    for refused in (
        origin + "/",
        origin + "/session/" + SESSION,
        origin + "/x" + token + "/",
        origin + "/" + token[:-1] + "/",
        origin + "/etc/passwd",
        origin + "/?token=" + token[:-2],
    ):
        status, body, _ = get(refused)
        assert status == 403, refused
        assert SESSION not in body
    status, body, headers = get(url)
    assert status == 200 and SESSION in body
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'none'" in csp
    assert headers["Referrer-Policy"] == "no-referrer"
    # the token as a query works too; pages that do not exist are 404, never a file
    assert get(f"{origin}/session/{SESSION[:8]}?token={token}")[0] == 200
    assert get(url + "../../../etc/passwd")[0] in (403, 404)
    assert get(url + "static/../../pyproject.toml")[0] == 404
    assert get(url + "session/nosuch")[0] == 404
    assert get(url, method="POST")[0] == 405
    assert get(origin + "/", method="POST")[0] == 403


def test_serve_refuses_other_hosts_and_a_missing_database(recorded: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [CLI, "--project", str(recorded), "serve", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "127.0.0.1" in done.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run(
        [CLI, "--project", str(empty), "serve"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "no claude-session database" in done.stderr
    assert not (empty / ".claude-session.db").exists()


def test_session_and_diff_pages_in_a_real_browser(
    server: tuple[str, subprocess.Popen[str]], recorded: Path, tmp_path: Path
) -> None:
    url, process = server
    before = database_files(recorded)
    page = f"{url}session/{SESSION[:8]}"
    frames = [r[0] for r in query(recorded, "SELECT frame_no FROM frames ORDER BY frame_no")]
    agents = query(
        recorded,
        "SELECT id, status FROM agent_registry WHERE session_id = ? AND is_internal = 0",
        (SESSION,),
    )
    assert {a[1] for a in agents} == {"running", "completed"} and len(agents) == 3

    # recorded text is escaped, never markup
    html = get(page)[1]
    assert "<script>" not in html and "&lt;script&gt;alert(1)" in html
    assert "<img" not in html and "&lt;img src=x" in html

    # the DOM as the browser built it: one box per agent, one mark per frame
    dom = chromium(page, tmp_path, "--dump-dom").stdout
    boxes = re.findall(r'<g class="agent" data-status="(\w+)" data-agent="([^"]+)"', dom)
    assert sorted(boxes) == sorted((status, agent) for agent, status in agents)
    marks = [int(n) for n in re.findall(r'<g class="frame" data-frame="(\d+)"', dom)]
    assert marks == frames
    assert 'class="errors"' in dom and 'class="files"' in dom
    assert re.search(r'<g class="branch">.*fork try-again</text>', dom)

    # the picture: the right size, not blank, the status colours of the boxes present
    shot = screenshot(page, tmp_path, "session")
    colours = shot.getcolors(1 << 22) or []
    assert len(colours) > 50
    assert pixels_of(shot, BLUE) > 500 and pixels_of(shot, GREEN) > 500

    # the diff of the whole session: the state's diff and the files', lines coloured
    diff = f"{url}diff?a={SESSION[:8]}:1&b={SESSION[:8]}:{frames[-1]}"
    status, text, _ = get(diff)
    assert status == 200
    assert "src/config.py" in text and "src/app.py" in text
    assert '<span class="del">-VALUE = 1</span>' in text
    assert '<span class="add">+VALUE = 2</span>' in text
    shot = screenshot(diff, tmp_path, "diff")
    assert len(shot.getcolors(1 << 22) or []) > 20
    assert pixels_of(shot, ADDED) > 500 and pixels_of(shot, REMOVED) > 500
    assert process.poll() is None  # still serving after all that
    assert database_files(recorded) == before  # read-only: not a byte written


def test_branch_labels_apart_helpers_without_lanes_and_the_start_column(
    recorded: Path, tmp_path: Path
) -> None:
    """A replay from the frame after the fork's: the two labels each on a row of their own;
    Claude Code's compaction helper (a SubagentStop with no type and no SubagentStart) gets
    no lane; the sessions table's `start` says how the session started. Looked at in
    Chromium. The replay runs /bin/true as its `claude` (a stand-in: only its branch is
    drawn here)."""
    (frame,) = query(
        recorded, "SELECT frame_no FROM frames WHERE agent_id = ? AND kind = 'tool'", (DONE,)
    )[0]
    replayed = subprocess.run(
        [CLI, "--project", str(recorded), "replay", f"{SESSION}:{frame + 1}", "--prompt", "again",
         "--label", "second-try", "--claude", "/bin/true"],
        capture_output=True, text=True, env=hook_env(recorded), timeout=120,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    helper = "acompact0helper01"
    send(
        recorded,
        "SubagentStop",
        agent_id=helper,
        agent_type="",
        last_assistant_message="<analysis>the summary</analysis>",
    )
    assert query(recorded, "SELECT is_internal FROM agent_registry WHERE id = ?", (helper,)) == [
        (1,)
    ]
    process = start_serve(recorded, "--port", "0")
    try:
        url = url_of(process)
        page = f"{url}session/{SESSION[:8]}"
        dom = chromium(page, tmp_path, "--dump-dom").stdout
        labels = re.findall(
            r'<g class="branch">.*?<text x="(\d+)" y="(\d+)"[^>]*>(\w+) ([^<]*)</text>', dom
        )
        assert sorted((kind, name) for _, _, kind, name in labels) == [
            ("fork", "try-again"),
            ("replay", "second-try"),
        ]
        assert len({y for _, y, _, _ in labels}) == 2  # one row each: never drawn over
        timeline = re.search(r'<svg[^>]*class="timeline".*?</svg>', dom, re.S)
        assert timeline is not None
        lanes = re.findall(r'<text x="8" [^>]*>([^<]*)</text>', timeline.group(0))
        assert len(lanes) == 3 and not any(helper[:8] in lane for lane in lanes), lanes
        screenshot(page, tmp_path, "branches").save(tmp_path / "branches.png")
        listing = chromium(url, tmp_path, "--dump-dom").stdout
        (started,) = query(
            recorded, "SELECT start_source FROM sessions WHERE session_id = ?", (SESSION,)
        )[0]
        cell = re.search(rf"{SESSION}</a></td><td>[^<]*</td><td>([^<]*)</td>", listing)
        assert cell is not None and cell.group(1) == started == "startup"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)


def database_files(project: Path) -> dict[str, bytes]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).digest()
        for p in project.glob(".claude-session.db*")
        if p.is_file() and not p.name.endswith("-shm")  # readers share the WAL index
    }


def test_a_removed_fork_is_drawn_as_removed_and_not_counted_as_a_fork(recorded: Path) -> None:
    """Two forks from one frame; `fork --remove` removes the first. The page counts the one
    still there, says one was removed, and draws that one grey, dashed, struck through and
    marked removed; the other as before."""

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [CLI, "--project", str(recorded), *args],
            capture_output=True,
            text=True,
            env=hook_env(recorded, COLUMNS="1000"),
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done

    listed = json.loads(cli("fork", "--list", "--json").stdout)
    (first,) = [f for f in listed if f["label"] == "try-again"]
    cli("fork", f"{SESSION}:{first['parent_frame_no']}", "--label", "kept")
    cli("fork", "--remove", first["path"], "--yes")
    assert not Path(first["path"]).exists()
    process = start_serve(recorded, "--port", "0")
    try:
        status, html, _ = get(f"{url_of(process)}session/{SESSION[:8]}")
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
    assert status == 200
    assert " · 1 fork or replay (1 removed)" in html, html[:2000]
    removed = re.findall(r'<g class="branch removed">.*?</g>', html)
    assert len(removed) == 1, removed
    assert 'stroke-dasharray="4 3"' in removed[0]
    assert (
        '<tspan text-decoration="line-through">fork try-again</tspan> (removed)</text>'
        in removed[0]
    )
    kept = re.findall(r'<g class="branch">.*?</g>', html)
    assert len(kept) == 1 and "fork kept</text>" in kept[0]
    assert "(removed)" not in kept[0] and 'stroke-dasharray="none"' in kept[0]


def test_a_session_recorded_before_frames_still_has_its_page(project: Path) -> None:
    send(project, "SessionStart.startup")
    import apsw

    conn = apsw.Connection(str(project / ".claude-session.db"))
    conn.execute("DELETE FROM frames")  # as a session recorded before schema 8 has none
    conn.close()
    process = start_serve(project)
    try:
        url = url_of(process)
        status, html, _ = get(f"{url}session/{SESSION[:8]}")
        assert status == 200 and "0 frames" in html and 'class="agent"' in html
        assert get(f"{url}session/ffff")[0] == 404
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0


def test_serve_json_says_where_it_listens(recorded: Path) -> None:
    process = start_serve(recorded, "--json")
    try:
        assert process.stdout is not None
        where = json.loads(process.stdout.readline())
        assert where["host"] == "127.0.0.1" and where["project"] == str(recorded)
        assert where["url"].startswith(f"http://127.0.0.1:{where['port']}/")
        with urllib.request.urlopen(where["url"], timeout=30) as page:
            assert page.status == 200
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)


def stand_in_browser(tmp_path: Path, seen: Path) -> Path:
    """A browser for $BROWSER (Python's webbrowser runs it with the URL as its one argument and
    waits for it): it writes down its arguments and, for a file:// one, the file's mode, its
    folder's and what it held, while it is there."""
    script = tmp_path / "browser.py"
    script.write_text(
        f"""#!{PYTHON}
import json, os, stat, sys
from urllib.parse import unquote, urlsplit
seen = {{"argv": sys.argv[1:]}}
if sys.argv[1].startswith("file://"):
    path = unquote(urlsplit(sys.argv[1]).path)
    seen["mode"] = stat.S_IMODE(os.lstat(path).st_mode)
    seen["regular"] = stat.S_ISREG(os.lstat(path).st_mode)
    seen["folder_mode"] = stat.S_IMODE(os.lstat(os.path.dirname(path)).st_mode)
    with open(path, encoding="utf-8") as f:
        seen["text"] = f.read()
with open({str(seen) + ".part"!r}, "w") as f:
    json.dump(seen, f)
os.replace({str(seen) + ".part"!r}, {str(seen)!r})
"""
    )
    script.chmod(0o755)
    return script


def open_with_stand_in(project: Path, tmp_path: Path) -> tuple[subprocess.Popen[str], str, Path]:
    """`serve --open` with the stand-in browser: the process, the URL it printed and the file
    the browser was given (checked: a private redirect to that URL, no token on its argv)."""
    send(project, "SessionStart.startup")
    seen = tmp_path / "seen.json"
    process = start_serve(project, "--open", BROWSER=str(stand_in_browser(tmp_path, seen)))
    url = url_of(process)  # still printed, token included, for the user to copy
    token = url.rstrip("/").rsplit("/", 1)[1]
    assert len(token) >= 24
    assert wait_for(seen.exists), process.stderr.read() if process.poll() is not None else ""
    record = json.loads(seen.read_text())
    (given,) = record["argv"]
    assert given.startswith("file:///") and token not in given
    redirect = Path(unquote(urlsplit(given).path))
    assert redirect.is_relative_to(os.environ["CLAUDE_SESSION_STATE_DIR"])
    assert record["regular"] and record["mode"] == 0o600 and record["folder_mode"] == 0o700
    assert f'content="0;url={url}"' in record["text"] and f'href="{url}"' in record["text"]
    assert token not in Path(f"/proc/{process.pid}/cmdline").read_text()
    return process, url, redirect


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_serve_open_gives_the_browser_a_private_redirect_file_never_the_token(
    project: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    """The token is never on a command line (`ps` shows every user's): the browser gets a
    file:// page (0600, in a 0700 folder of ours) that redirects to the tokened URL. Nothing
    loaded it here, so it stays while serving; stopping serve removes it and its folder."""
    process, url, redirect = open_with_stand_in(project, tmp_path)
    try:
        assert redirect.is_file() and process.poll() is None
        assert get(url)[0] == 200
    finally:
        process.send_signal(stop)
        code = process.wait(30)
    assert code == 0
    assert not redirect.exists() and not redirect.parent.exists()


def test_a_real_browser_follows_the_redirect_file_which_is_then_removed(
    project: Path, tmp_path: Path
) -> None:
    """Headless Chromium given the file:// address lands on the sessions page; the server,
    asked for a page with the token, removes the file at once (serve still running).

    Headless Chromium now and then exits 0 having printed no DOM at all when a meta refresh
    crosses from file:// to http:// (about 1 run in 10 here): such a run still has to have
    followed the link (the file is gone), and a fresh `serve --open` is tried, three at most."""
    doms: list[str] = []
    for attempt in range(3):
        folder = tmp_path / f"attempt-{attempt}"
        folder.mkdir()
        process, _, redirect = open_with_stand_in(project, folder)
        try:
            dom = chromium(redirect.as_uri(), folder, "--virtual-time-budget=10000", "--dump-dom")
            assert dom.returncode == 0, dom.stderr[-3000:]
            assert wait_for(lambda gone=redirect: not gone.exists(), 5)
            assert not redirect.parent.exists() and process.poll() is None
        finally:
            process.send_signal(signal.SIGINT)
            assert process.wait(30) == 0
        doms.append(dom.stdout)
        if dom.stdout:
            break
    assert "<h1>Sessions</h1>" in doms[-1] and SESSION in doms[-1], doms


# --- hostile recorded text: escaped like the CLI escapes it ------------------------------------

HOSTILE_FILE = "src/evil\u202etxt.exe\x1b[2J\x07\u2067.py"
HOSTILE_TEXT = (
    "go\x1b]8;;https://evil.example\x07here\x1b]8;;\x07 \x1b[31mred\rback \x9b31m"
    " \u202eevil\u202c \u2066iso\u2069 \u200fmark\x7f"
)
RAW_CONTROLS = ["\x1b", "\x07", "\x9b", "\x7f", "\r", "\u202e", "\u202c", "\u2066", "\u2067"]
RAW_CONTROLS += ["\u2069", "\u200f"]


def test_pages_show_controls_and_bidi_in_recorded_text_escaped(
    project: Path, tmp_path: Path
) -> None:
    """File names, summaries, agent descriptions, errors and file contents holding ESC
    sequences, C1 controls and bidi overrides or isolates: no page holds one raw (a name could
    show as another); each shows the CLI's escapes (`\\u202e`, `\\x1b`) instead."""
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("VALUE = 1\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(project), *args], check=True, env=os.environ | GIT_ENV)
    send(project, "SessionStart.startup")
    send(project, "UserPromptSubmit", prompt=HOSTILE_TEXT)
    write(project, HOSTILE_FILE, "RED = '\x1b[31m'\nFLIP = '\u202e'\n")
    agent = launch(project, DONE, "general-purpose", HOSTILE_TEXT)
    write(project, "src/app.py", "VALUE = '\x1b[2J\u2066'\n", **agent)
    send(project, "SubagentStop", **agent)
    send(project, "PostToolUseFailure.Bash", error="Exit code 1\n" + HOSTILE_TEXT)
    send(project, "Stop")
    assert wait_for(lambda: not query(project, "SELECT 1 FROM vcs_tags WHERE status = 'pending'"))
    (last,) = query(project, "SELECT max(frame_no) FROM frames")[0]
    process = start_serve(project)
    try:
        url = url_of(process)
        session = f"{url}session/{SESSION[:8]}"
        pages = {
            "sessions": url,
            "session": session,
            "diff": f"{url}diff?a={SESSION[:8]}:1&b={SESSION[:8]}:{last}",
            "404": f"{url}diff?a={SESSION[:8]}:1&b={quote(chr(0x202E) + chr(0x1B))}",
        }
        bodies = {name: get(address) for name, address in pages.items()}
        assert [bodies[n][0] for n in pages] == [200, 200, 200, 404]
        for name, (_, body, _) in bodies.items():
            raw = [c for c in RAW_CONTROLS if c in body]
            assert not raw, f"{name}: raw {raw} in the page"
        html = bodies["session"][1]
        assert "evil\\u202etxt.exe\\x1b[2J\\x07\\u2067.py" in html  # the frames' files
        assert "\\x1b]8;;https://evil.example\\x07here" in html  # the prompt, the description
        assert "\\u2066iso\\u2069 \\u200fmark\\x7f" in html
        diff = bodies["diff"][1]
        assert "src/evil\\u202etxt.exe\\x1b[2J\\x07\\u2067.py</td>" in diff  # the file list
        assert '<span class="add">+RED = &#x27;\\x1b[31m&#x27;</span>' in diff  # the lines
        assert '<span class="add">+FLIP = &#x27;\\u202e&#x27;</span>' in diff
        assert "\\x9b31m" in diff  # the state's diff: the agent's description, the error
        assert "\\u202e" in bodies["404"][1]
        # as the browser built the page: the same escapes, nothing raw
        dom = chromium(session, tmp_path, "--dump-dom").stdout
        assert "evil\\u202etxt.exe" in dom and not [c for c in RAW_CONTROLS if c in dom]
        assert process.poll() is None
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)


def test_the_memories_page_shows_provenance_and_staleness(project: Path) -> None:
    """Who added each memory, from where, what became of it, and its files as recorded and
    now: one changed since is said possibly stale; recorded text stays escaped."""
    send(project, "SessionStart.startup")
    (project / "conf.py").write_text("DEBUG = False\n")
    cs = str(Path(PYTHON).parent / "claude-session")

    def cli(*args: str) -> None:
        done = subprocess.run(
            [cs, "--project", str(project), *args], capture_output=True, env=hook_env(project)
        )
        assert done.returncode == 0, done.stderr

    cli("memory", "add", "MEMPAGE conf.py keeps DEBUG off \u202e<b>x</b>", "--file", "conf.py")
    cli("memory", "add", "MEMPAGE-2 tests need the VPN")
    cli("memory", "outcome", "2", "disproved")
    write(project, "conf.py", "DEBUG = True\n")  # the main agent's Write, through the hooks
    process = start_serve(project)
    try:
        status, html, _ = get(f"{url_of(process)}memories")
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
    assert status == 200 and "\u202e" not in html and "<b>x</b>" not in html
    assert "MEMPAGE conf.py keeps DEBUG off \\u202e&lt;b&gt;x&lt;/b&gt;" in html
    assert "1 possibly stale" in html and "you (the CLI)" in html
    assert "conf.py <span class=changed>changed</span>" in html
    assert "conf.py changed since it was recorded" in html and "edited by the main agent" in html
    assert "disproved: a dead end" in html


def test_serve_started_as_a_background_job_stops_on_sigint(recorded: Path) -> None:
    """A shell starts a background job (`claude-session serve &`, a script's) with SIGINT
    ignored: `kill -INT` stops it all the same, and cleanly."""

    def as_a_background_job() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    process = subprocess.Popen(
        [CLI, "--project", str(recorded), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=hook_env(recorded),
        preexec_fn=as_a_background_job,
    )
    try:
        url = url_of(process)
        assert get(url)[0] == 200
    finally:
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = None
    assert code == 0
