"""memplan's errors in Python: one exception class per C status code, carrying the C message."""


class MemplanError(RuntimeError):
    """A failed memplan call; `code` is the C status (negative), the message is memplan's."""

    def __init__(self, message, code=-9):
        super().__init__(message)
        self.code = code


class InvalidArgument(MemplanError, ValueError):
    pass


class InvalidState(MemplanError):
    pass


class InvalidPointer(MemplanError):
    pass


class ForeignPointer(InvalidPointer):
    pass


class DoubleFree(InvalidPointer):
    pass


class OutOfMemory(MemplanError, MemoryError):
    pass


class CudaError(MemplanError):
    pass


class NotInitialised(MemplanError):
    pass


class Unsupported(MemplanError):
    pass


_BY_CODE = {
    -1: InvalidArgument,
    -2: InvalidState,
    -3: ForeignPointer,
    -4: DoubleFree,
    -5: OutOfMemory,
    -6: CudaError,
    -7: NotInitialised,
    -8: Unsupported,
}


def error_for(code, message):
    """The exception for a C status code and its message."""
    return _BY_CODE.get(code, MemplanError)(message, code)
