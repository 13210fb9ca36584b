"""Single-process answers: no process group exists."""


def is_available():
    return False


def is_initialized():
    return False


def get_rank(group=None):
    return 0


def get_world_size(group=None):
    return 1


def barrier(*args, **kwargs):
    return None
