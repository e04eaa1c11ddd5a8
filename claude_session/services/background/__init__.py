"""The project's daemon (one per project), its service side (no imports here; hooks import
`daemon_control`). The process itself is claude_session/daemon.py.

- `sweeps`: its sweeps (transcripts, export, upkeep).
- `daemon_control`: starting it, finding it and its status (stdlib only: hooks).
"""
