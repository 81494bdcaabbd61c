"""Starting, confining and supervising programs: the launcher, the warden, process groups,
signals.
"""
