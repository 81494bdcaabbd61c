"""Pure decisions: plan ids, models, the wave graph, rules, resolution, the judge. No I/O."""
