"""The daemon's older module name: `python -m claude_session.resident` is what installs of
earlier versions start (services/background/daemon_control.py), so it still starts the daemon
(`claude_session/daemon.py`)."""

from .daemon import main

if __name__ == "__main__":
    raise SystemExit(main())
