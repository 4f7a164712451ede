"""qmm.Error and one subclass per qmm_status of include/qmm.h.

Each subclass also derives from the built-in exception a Python caller would expect (ValueError for bad
arguments, MemoryError, OSError for files, ...), so `except ValueError` keeps working. The message is
qmm_last_error()'s text: what failed, with the names and values involved.
"""


class Error(Exception):
    """A qmm call failed. `status` is the qmm_status code, `status_name` its enum name."""

    status = -1
    status_name = "QMM_ERR_UNKNOWN"

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status
        self.message = message

    def __str__(self):
        return f"{self.message} [{self.status_name}]"


def _error(name, status, *bases, doc):
    return type(name, (Error,) + bases, {"status": status, "status_name": "QMM_" + _ENUM[status], "__doc__": doc})


_ENUM = {1: "ERR_NULL_POINTER", 2: "ERR_INVALID_SIZE", 3: "ERR_SIZE_OVERFLOW", 4: "ERR_INVALID_STRIDE",
         5: "ERR_INVALID_ENUM", 6: "ERR_NON_FINITE", 7: "ERR_BUFFER_TOO_SMALL", 8: "ERR_UNSUPPORTED",
         9: "ERR_OUT_OF_MEMORY", 10: "ERR_BACKEND_UNAVAILABLE", 11: "ERR_NOT_PREPARED", 12: "ERR_WORKSPACE_TOO_SMALL",
         13: "ERR_CUDA", 14: "ERR_CUBLAS", 15: "ERR_IO", 16: "ERR_MALFORMED", 17: "ERR_NOT_FOUND", 18: "ERR_EXISTS",
         19: "ERR_INVALID_ARGUMENT", 20: "ERR_INVALID_WEIGHT", 21: "ERR_INTERNAL", 22: "ERR_UNSAFE_OUTPUT",
         23: "ERR_CANCELLED"}

NullPointerError = _error("NullPointerError", 1, ValueError, doc="A required pointer argument is NULL.")
InvalidSizeError = _error("InvalidSizeError", 2, ValueError, doc="A dimension is zero or out of range.")
SizeOverflowError = _error("SizeOverflowError", 3, OverflowError, doc="A size overflows size_t.")
InvalidStrideError = _error("InvalidStrideError", 4, ValueError, doc="A row stride is shorter than its row.")
InvalidEnumError = _error("InvalidEnumError", 5, ValueError, doc="An enum argument holds an unknown value.")
NonFiniteError = _error("NonFiniteError", 6, ValueError, doc="An input that must be finite holds NaN or inf.")
BufferTooSmallError = _error("BufferTooSmallError", 7, ValueError, doc="A buffer is smaller than needed.")
UnsupportedError = _error("UnsupportedError", 8, NotImplementedError,
                          doc="A valid combination this backend or build does not do.")
OutOfMemoryError = _error("OutOfMemoryError", 9, MemoryError, doc="A host or device allocation failed.")
BackendUnavailableError = _error("BackendUnavailableError", 10, RuntimeError,
                                 doc="The backend is not built in or finds no device.")
NotPreparedError = _error("NotPreparedError", 11, RuntimeError, doc="The weight must be prepared first.")
WorkspaceTooSmallError = _error("WorkspaceTooSmallError", 12, RuntimeError, doc="The workspace is too small.")
CudaError = _error("CudaError", 13, RuntimeError, doc="A CUDA call or kernel launch failed.")
CublasError = _error("CublasError", 14, RuntimeError, doc="A cuBLAS call failed.")
FileError = _error("FileError", 15, OSError, doc="Reading or writing a file failed.")
MalformedError = _error("MalformedError", 16, ValueError, doc="A file's contents do not follow its format.")
NotFoundError = _error("NotFoundError", 17, LookupError, doc="A named file or tensor does not exist.")
ExistsError = _error("ExistsError", 18, FileExistsError, doc="An output exists and overwriting was not asked for.")
InvalidArgumentError = _error("InvalidArgumentError", 19, ValueError, doc="An argument is invalid.")
InvalidWeightError = _error("InvalidWeightError", 20, ValueError, doc="A weight descriptor is inconsistent.")
InternalError = _error("InternalError", 21, RuntimeError, doc="A bug in qmm: please report it.")
UnsafeOutputError = _error("UnsafeOutputError", 22, ValueError,
                           doc="An output would touch an input, or is not a file qmm writes.")
CancelledError = _error("CancelledError", 23, RuntimeError, doc="A progress callback asked the work to stop.")

BY_STATUS = {cls.status: cls for cls in (
    NullPointerError, InvalidSizeError, SizeOverflowError, InvalidStrideError, InvalidEnumError, NonFiniteError,
    BufferTooSmallError, UnsupportedError, OutOfMemoryError, BackendUnavailableError, NotPreparedError,
    WorkspaceTooSmallError, CudaError, CublasError, FileError, MalformedError, NotFoundError, ExistsError,
    InvalidArgumentError, InvalidWeightError, InternalError, UnsafeOutputError, CancelledError)}


def from_status(status, message):
    """The Error (subclass) for a qmm_status."""
    cls = BY_STATUS.get(status)
    if cls is None:
        return Error(message, status)
    return cls(message)
