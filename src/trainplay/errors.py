"""trainplay's error family.

Every mistake a user can make (a model name, a shape, a file, a flag) is reported as a
:class:`TrainplayError` whose message is one line that says what was wrong and how to fix it.
The CLI prints that line and exits with status 2; a traceback means a bug in trainplay.

- :class:`UsageError`: a value given on the command line or to the API is malformed or out of range.
- :class:`ModelError`: the model could not be found, built, or run on the given input.
"""

__all__ = ["ModelError", "TrainplayError", "UsageError"]


class TrainplayError(Exception):
    """Base of every error caused by what the user asked for, not by a bug in trainplay."""


class UsageError(TrainplayError, ValueError):
    """A user-supplied value is malformed or out of range."""


class ModelError(TrainplayError):
    """A model is unknown, its factory failed, or it rejected the input it was given."""
