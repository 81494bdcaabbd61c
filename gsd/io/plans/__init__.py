"""The project's files on disk: plans and phases, where they are read from, agent files,
approvals, summaries, validate and verify.
"""
