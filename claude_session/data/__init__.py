"""Data shipped with the package: a recorded real Claude Code 2.1.330 session for the demo."""
