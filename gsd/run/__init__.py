"""The orchestrator: a phase's waves in SPEC 7's steps, and one task as named steps."""
