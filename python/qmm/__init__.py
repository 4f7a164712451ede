"""qmm: weight-only low-precision matrix multiplication (NVFP4, MXFP4, FP8 weights) for numpy and PyTorch.

    import numpy as np, qmm
    w = qmm.quantize(np.random.randn(4096, 14336).astype(np.float32), format="nvfp4")
    y = qmm.matmul(x, w, bias=b, activation="silu")          # x: (M, 14336) float32 / bfloat16 / float16

A thin layer over the C library libqmm (include/qmm.h): every computation is the library's; this
package checks arguments and turns statuses into exceptions (qmm.Error and its subclasses).
qmm.torch (imported on use) has the PyTorch module and op.
"""

from . import errors
from ._lib import library_path, version
from .checkpoint import Checkpoint, open_checkpoint, quantize_checkpoint
from .context import Context, default_context
from .errors import *  # noqa: F401,F403  (qmm.Error and one subclass per status)
from .errors import Error
from .matmul import matmul
from .weight import FORMATS, QuantizedWeight, format_traits, quantize

__version__ = version()
__all__ = ["Checkpoint", "Context", "Error", "FORMATS", "QuantizedWeight", "default_context", "errors", "format_traits",
           "library_path", "matmul", "open_checkpoint", "quantize", "quantize_checkpoint", "version"]
__all__ += [name for name in dir(errors) if name.endswith("Error") and name != "Error"]
