"""gsd: a Git-native processor for GSD-style PLAN.md files."""

__version__ = "0.1.0"
