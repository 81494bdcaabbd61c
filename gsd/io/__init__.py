"""Effects: processes, git, checkpoints, worktrees, locks, and where gsd's files live."""
