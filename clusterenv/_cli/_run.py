"""`clusterenv run`: a training script run as ``python`` would run it, whose Lightning
Trainers then follow the allocation (:func:`clusterenv.lightning.run_script`)."""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import traceback

from clusterenv._cli._envfile import Usage
from clusterenv._core.safe import escape
from clusterenv.exceptions import ClusterEnvError

__all__ = ["run"]


def run(module: str | None, target: list[str]) -> int:
    """Run SCRIPT or ``-m`` MODULE; the exit status as ``python`` would give it."""
    if module is None and not target:
        raise Usage("clusterenv run needs a SCRIPT or -m MODULE")
    # A missing or unreadable script or module is ours, one line; what the script raises is
    # its own, with its traceback and exit status 1, as with python.
    if module is None:
        _check_script(target[0])
    else:
        _check_module(module)
    import clusterenv.lightning as cl  # noqa: PLC0415 - imports Lightning

    try:
        if module is None:
            cl.run_script(target[0], target[1:])
        else:
            cl.run_script(module, target, module=True)
    except (ClusterEnvError, SystemExit, KeyboardInterrupt):
        raise
    except Exception as error:  # the script's: as python shows it
        _print_script_traceback(error, None if module else os.path.abspath(target[0]))
        return 1
    return 0


def _check_script(path: str) -> None:
    if not os.path.exists(path):
        raise Usage(f"cannot run {escape(path)!r}: no such file")
    if not os.path.isfile(path) and not os.path.isfile(os.path.join(path, "__main__.py")):
        raise Usage(f"cannot run {escape(path)!r}: not a file (nor a folder with __main__.py)")
    if not os.access(path, os.R_OK):
        raise Usage(f"cannot run {escape(path)!r}: permission denied")


def _check_module(module: str) -> None:
    # Like python -m, with the working directory first on sys.path.
    sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a parent package that is missing or broken
        found = None
    finally:
        sys.path.pop(0)
    if found is None:
        raise Usage(f"cannot run -m {escape(module)!r}: no such module")


def _print_script_traceback(error: BaseException, script: str | None) -> None:
    """The traceback from the script's own first frame on (without clusterenv's and
    runpy's), as ``python script.py`` prints it."""
    ours = (os.path.dirname(runpy.__file__), os.path.dirname(os.path.dirname(__file__)))

    def before_the_script(filename: str) -> bool:
        return os.path.abspath(filename) != script if script else filename.startswith(ours)

    tb = error.__traceback__
    while tb is not None and before_the_script(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    # No frame of the script (it did not compile: a SyntaxError, a binary): the error
    # alone, as python prints it, never clusterenv's frames.
    traceback.print_exception(type(error), error, tb)
