"""Generic base classes the readers subclass; nothing here loads data."""
from typing import Generic, TypeVar

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    pass


class IterableDataset(Dataset[T_co]):
    pass


class Sampler(Generic[T_co]):
    pass


class DataLoader:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch stand-in: DataLoader is not available")


def get_worker_info():
    return None
