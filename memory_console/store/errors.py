"""Errors the Store raises: each carries a one-line message fit for a person."""


class StoreError(Exception):
    """A store cannot be opened, or an operation on it was refused."""


class NotFoundError(StoreError):
    """A memory or run id that the store does not hold."""


class ReadOnlyError(StoreError):
    """A write was asked of a store opened read-only."""


class ValidationError(StoreError):
    """A value that a memory field cannot take."""
