"""`claude-session serve`: a read-only web page of the project's sessions, on 127.0.0.1 only.

The standard library's `ThreadingHTTPServer`. Every request must carry the random token made
at start (as the first path segment, or `?token=`): anything else is 403, so another local
user, or a web page in the browser guessing ports, learns nothing. Only the four pages are
served (sessions, a session, a diff, the memories): no files, no directory listing. Each
request opens the database read-only and closes it. Responses forbid scripts, framing,
referrers and caching.

`--open` never puts the token on a command line (every local user can read those with `ps`):
the browser is given a small redirect page instead (`write_redirect`: 0600, in a fresh 0700
folder under our per-user state), removed as soon as a request with the token arrives (the
browser followed it) and in any case when the server is closed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..core import paths
from ..project import NotFound as ProjectNotFound
from ..project import Project, ProjectError
from ..project.opening import no_database
from . import memory_page, web_pages, web_text

HOST = "127.0.0.1"
REDIRECT_NAME = "open.html"


class NotFound(Exception):
    """A page, session or frame that does not exist: 404 with the reason."""


def render(root: str, base: str, path: str, query: dict[str, list[str]]) -> str:
    """The page at `path` (after the token), as HTML; `NotFound` otherwise. Read through the
    library API, opened for this request alone."""
    with Project(root) as project:
        if not project.exists:
            raise Unavailable(no_database(project.path))
        try:
            return _page(project, base, path, query)
        except ProjectNotFound as exc:
            raise NotFound(str(exc)) from exc


class Unavailable(Exception):
    """No database to show, or one that cannot be read: 503 with the reason."""


def _page(project: Project, base: str, path: str, query: dict[str, list[str]]) -> str:
    try:
        project.connection()
    except ProjectError as exc:
        raise Unavailable(str(exc)) from exc
    if path in ("", "/"):
        return web_pages.sessions_page(base, project.sessions_with_cost(200))
    if path.startswith("/session/"):
        found = project.session_view(unquote(path[len("/session/") :]))
        return web_pages.session_page(
            base,
            found.session_id,
            found.main,
            found.subagents,
            found.frames,
            found.branches,
            found.spent,
            found.internal,
        )
    if path == "/memories":
        return memory_page.memories_page(base, *project.memories_with_files(200))
    if path == "/diff":
        a, b = query.get("a", [""])[0], query.get("b", [""])[0]
        if not a or not b:
            raise NotFound("give two frames: /diff?a=SESSION:FRAME&b=SESSION:FRAME")
        diff = project.diff(a, b)
        return web_pages.diff_page(base, diff.a, diff.b, diff.state, diff.files)
    raise NotFound("no such page")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: str, port: int, token: str | None = None) -> None:
        self.root = root
        self.token = token or secrets.token_urlsafe(24)
        self.redirect_file: str | None = None  # `open_in_browser`'s page, until it is used
        super().__init__((HOST, port), Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/{self.token}/"

    def forget_redirect(self) -> None:
        """Remove the redirect file, if any: the browser has followed it, or we stop."""
        path, self.redirect_file = self.redirect_file, None
        if path:
            remove_redirect(path)

    def server_close(self) -> None:
        """Closed: the redirect file goes too, read or not (its token is dead now anyway)."""
        super().server_close()
        self.forget_redirect()


class Handler(BaseHTTPRequestHandler):
    server: Server
    server_version = "claude-session"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _refuse_method(self) -> None:
        self._send(403 if self._page() is None else 405, "read-only", True)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method

    def _page(self) -> str | None:
        """The path after a valid token, or None: no token, a wrong one, a foreign Host."""
        parts = urlsplit(self.path)
        host = self.headers.get("Host", "")
        port = self.server.server_address[1]
        if host not in (f"{HOST}:{port}", f"localhost:{port}"):
            return None  # a DNS-rebinding page names its own host
        token = self.server.token
        first, _, rest = parts.path.lstrip("/").partition("/")
        if secrets.compare_digest(first.encode(), token.encode()):
            return "/" + rest
        given = parse_qs(parts.query).get("token", [""])[0]
        if secrets.compare_digest(given.encode(), token.encode()):
            return parts.path
        return None

    def _answer(self, body: bool) -> None:
        page = self._page()
        if page is None:
            self._send(
                403, "forbidden: this page needs the URL `claude-session serve` printed", body
            )
            return
        self.server.forget_redirect()  # the token came: the redirect file has done its work
        base = f"/{self.server.token}"
        query = parse_qs(urlsplit(self.path).query)
        try:
            text = render(self.server.root, base, page, query)
        except NotFound as exc:
            self._send(404, web_pages.error_page(base, 404, str(exc)), body, html=True)
            return
        except Unavailable as exc:
            self._send(503, web_pages.error_page(base, 503, str(exc)), body, html=True)
            return
        except Exception as exc:  # a locked or broken database: said, not a traceback
            message = f"{type(exc).__name__}: {exc}"
            self._send(500, web_pages.error_page(base, 500, message), body, html=True)
            return
        self._send(200, text, body, html=True)

    def _send(self, status: int, text: str, body: bool, html: bool = False) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", f"text/{'html' if html else 'plain'}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Security-Policy", web_pages.CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the paths hold the token, and the terminal is the user's."""


def start(root: str, port: int = 0) -> tuple[Server, threading.Thread]:
    """The server, serving in a thread (for the command to wait on, or a caller to stop)."""
    server = Server(root, port)
    thread = threading.Thread(target=server.serve_forever, name="serve", daemon=True)
    thread.start()
    return server, thread


def redirect_page(url: str) -> str:
    """A page that sends the browser on to `url`: a meta refresh, and a link where refreshes
    are turned off. No script: nothing to allow."""
    target = web_text.esc(url)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="referrer" content="no-referrer">'
        f'<meta http-equiv="refresh" content="0;url={target}">'
        "<title>claude-session</title></head><body>"
        f'<p><a href="{target}">Open the claude-session page</a></p></body></html>'
    )


def write_redirect(root: str, url: str) -> str:
    """The redirect page to `url`, written where only this user can read it: a new folder
    (0700, `mkdtemp`) under the project's per-user state (the system's temporary folder where
    there is none), the file made 0600 with O_EXCL|O_NOFOLLOW (nothing planted is followed
    or reused). Its path: the browser gets that, never the token on its command line."""
    try:
        parent = paths.project_state_dir(root)
        os.makedirs(parent, mode=0o700, exist_ok=True)
        folder = tempfile.mkdtemp(prefix="serve-", dir=parent)
    except OSError:
        folder = tempfile.mkdtemp(prefix="claude-session-serve-")
    path = os.path.join(folder, REDIRECT_NAME)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(redirect_page(url))
    except BaseException:
        remove_redirect(path)
        raise
    return path


def remove_redirect(path: str) -> None:
    """The redirect file and its folder gone; already gone is fine (two threads may race)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.dirname(path))


def open_in_browser(server: Server) -> bool:
    """Start the user's browser (Python's `webbrowser`, which honours $BROWSER) on a redirect
    file to the server's URL. False when no browser could be started (the file is gone)."""
    import webbrowser

    server.redirect_file = path = write_redirect(server.root, server.url)
    opened = webbrowser.open(Path(path).as_uri())
    if not opened:
        server.forget_redirect()
    return opened
