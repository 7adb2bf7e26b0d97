"""Errors of the C++ runtime, as Python exceptions.

Every error from Rill's runtime is a ``rill.Error`` (a ``RuntimeError``) carrying the
runtime's message, which names the block, op and variable where one is involved, and its
status ``code``. Errors of bad input are also ``ValueError``; of things not found, also
``LookupError``; so code that catches the built-in kinds keeps working.
"""

# Status codes, as rill/abi.h numbers them.
CODES = {
    1: "INVALID_ARGUMENT", 2: "NOT_FOUND", 3: "FAILED_PRECONDITION", 4: "OUT_OF_RANGE",
    5: "UNIMPLEMENTED", 6: "INTERNAL", 7: "UNAVAILABLE", 8: "DEADLINE_EXCEEDED",
    9: "CANCELLED", 10: "ALREADY_EXISTS", 11: "RESOURCE_EXHAUSTED",
}


class Error(RuntimeError):
    """An error of Rill's runtime; ``code`` is its status code (``code_name`` its name)."""

    def __init__(self, message, code=6):
        super().__init__(message)
        self.code = code
        self.code_name = CODES.get(code, str(code))


class InvalidArgumentError(Error, ValueError):
    """Bad input: a wrong dtype, shape, attribute value or program."""


class NotFoundError(Error, LookupError):
    """A variable, op, plugin or file that does not exist."""


class FailedPreconditionError(Error):
    """The state does not allow it: a send on a closed channel, a deadlock."""


class CancelledError(Error):
    """The run was cancelled."""


_BY_CODE = {1: InvalidArgumentError, 2: NotFoundError, 3: FailedPreconditionError, 9: CancelledError}


def error_class(code):
    """The exception class for status ``code`` (used by the extension module)."""
    return _BY_CODE.get(code, Error)
