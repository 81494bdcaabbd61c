"""git as gsd drives it: the repository, running git, commits, branches, worktrees,
checkpoints, what a spawn did.
"""
