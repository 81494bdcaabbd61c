"""Pure decisions, no I/O: plan ids, models, the wave graph, rules, resolution, verdict, retry."""
