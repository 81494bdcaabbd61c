def reply(*a):
    raise NotImplementedError
