"""The exit statuses of a program gsd runs that say what became of it, as shells report them."""

from __future__ import annotations

# A shell's statuses for a program it cannot find / cannot execute (gsd's launcher and
# `gsd.io.proc` report a program that never ran with the same ones).
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
# A supervised program gsd ended after its timeout.
EXIT_TIMEOUT = 124  # ended by SIGTERM after the timeout (GNU timeout's status)
EXIT_KILLED = 137  # needed SIGKILL after the grace period (128 + 9)
