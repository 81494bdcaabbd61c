"""The verdict on an attempt at a task: the judge, done means done, what the attempt came to
and what follows.
"""
