"""What an agent may do: the safety policy, what it may change, `.planning/` and credentials,
token budgets.
"""
