"""Import-only stand-in for torch: see ../README.md."""


class Tensor:  # referenced in type annotations only
    pass


from . import distributed, utils  # noqa: E402,F401
