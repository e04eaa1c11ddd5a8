"""The snapshot store: claude-session's own git directory per project, never the user's
repository (no imports here: hooks import `capture_control` and `before_images`).

- `workspace`: the store itself and taking a snapshot (`capture`, `refs`, `prune`,
  `prune_workspace`, `snapshot_paths`, `WorkspaceError`), and its one git runner (`git`, `Lock`,
  `ensure_repo` and the other public helpers the modules below share).
- `snapshot_store`: upkeep: what killed processes left (`heal`), each capture's writes staged
  (`Quarantine`); `store_check`: `doctor`'s rows for the store.
- `snapshot_rules`: what a snapshot leaves out (secret files, the user's patterns).
- `snapshot_files`: reading and restoring files from a snapshot.
- `snapshot_over`: snapshots made over an earlier one (before images put back), `purge`.
- `before_images`: what a file was before a tool changed it (stdlib only: hooks).
- `capture_control`: starting the capture process and waiting for it (stdlib only: hooks);
  `capture`: that process (`python -m claude_session.services.snapshots.capture ROOT`).
- `revert_store`: what a revert reads from and writes with the store.
- `vcs`: the user's own HEAD, branch and jj ids at a frame, read without writing there.
"""
