"""Effects: processes and the sandbox, git and worktrees, the run lock, a project read from disk."""
