"""Time travel over the recorded frames (no imports here).

- `timetravel`: frames and their addresses (`resolve`, `frame`, `pointer`, `timeline`,
  `branches`, `subagents`, `state_diff`, `FrameError`).
- `history`: what changed between frames, and outside the recorded tool calls.
- `revert`: a revert's plan and its execution; `safe_write`: writing files back safely.
- `fork`: a new worktree at a frame, with our hooks in reach.
"""
