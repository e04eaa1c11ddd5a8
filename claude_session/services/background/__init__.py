"""The one background process per project, its service side (no imports here; hooks import
`daemon_control`).

- `daemon`: its sweeps (transcripts, export, upkeep).
- `daemon_control`: starting it, finding it and its status (stdlib only: hooks).
"""
