"""The planning documents: PLAN.md, SUMMARY.md, STATE.md, ROADMAP.md and the roster."""
