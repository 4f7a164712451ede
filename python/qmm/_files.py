"""Files installed inside the package (libqmm, the qmm tool), found without importing the library: beside
this file for a normal install, through importlib.resources for an editable one (which keeps the built
files apart from the sources)."""

import os


def installed(*parts):
    """The path of an installed file of the package, or None."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), *parts)
    if os.path.exists(here):
        return here
    try:
        from importlib import resources
        found = resources.files(__package__).joinpath(*parts)
        if found.is_file():
            return os.fspath(found)
    except (ImportError, AttributeError, TypeError, FileNotFoundError, NotADirectoryError):
        pass
    return None
