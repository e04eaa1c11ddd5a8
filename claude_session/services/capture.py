"""The old path of the workspace capture process, kept for processes started by an earlier
version (`python -m claude_session.services.capture ROOT`); it runs
services/snapshots/capture.py, which hooks now start themselves."""

if __name__ == "__main__":
    from .snapshots.capture import main

    raise SystemExit(main())
