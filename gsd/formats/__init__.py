"""Every file gsd reads or writes, as a parse/render pair: plans, agents, state, logs."""
