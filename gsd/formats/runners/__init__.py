"""The runners: each agent CLI's argv, settings and hooks, and what it prints."""
