"""The `gsd` program: the Click app, and the fast path `gsd validate` takes in a git hook."""
