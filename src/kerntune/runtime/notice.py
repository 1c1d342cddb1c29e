"""How the live path tells the user something: a RuntimeWarning that never raises. Standard library only.

A program may turn warnings into errors (``PYTHONWARNINGS=error``, ``-W error``, ``warnings.simplefilter``):
kerntune's own notices must not end it. Such a notice is written to stderr instead, in the warning's own form.
"""

from __future__ import annotations

import contextlib
import sys
import warnings


def notify(message: str, stacklevel: int = 2) -> None:
    """Warn ``message`` as a RuntimeWarning attributed ``stacklevel`` frames up from the caller (as
    ``warnings.warn`` counts); where the filters make it an error, write it to stderr and go on."""
    try:
        warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)
    except Exception:  # the filters raised it: the program's choice for its own warnings, not for kerntune's
        with contextlib.suppress(Exception):
            sys.stderr.write(f"RuntimeWarning: {message}\n")
