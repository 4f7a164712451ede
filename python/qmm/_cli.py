"""The `qmm` command of the package: runs the qmm tool installed beside libqmm (qmm/bin/qmm)."""

import os
import sys

from . import _files


def main():
    exe = _files.installed("bin", "qmm")
    if exe is None:
        sys.stderr.write("qmm: the qmm tool is not installed with the package (bin/qmm)\n")
        return 1
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
