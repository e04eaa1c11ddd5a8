"""Cost (no imports here).

- `transcripts`: Claude Code's transcripts read for usage, incrementally and bounded.
- `costs`: costs per session, frame and agent (`latest`, `transcript_state`, `TOKEN_SUM`).
- `reconcile`: our figures against Claude Code's own.
"""
