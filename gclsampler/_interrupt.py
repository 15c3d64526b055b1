"""Keep a Ctrl-C that a library swallowed.

Some libraries run Python code where a KeyboardInterrupt cannot get out: llvmlite calls back
into Python through ctypes while numba compiles (ctypes prints "Exception ignored" and the
compile goes on), and some wrap optional imports in ``except`` blocks broad enough to catch
it (the half-imported module then fails with an unrelated error). Either way the work would
carry on as if the user had not pressed Ctrl-C. Recording the signal itself, as well as raising,
lets the caller see that it came. Where ctypes swallowed it, its "Exception ignored" traceback
is not printed either: the recorded interrupt is reported once, by the caller.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Iterator


@contextlib.contextmanager
def sigint_recorded() -> Iterator[list[int]]:
    """Inside the block, Ctrl-C raises KeyboardInterrupt as usual and is also appended to the
    yielded list. Only where Python's own handler is in place (the main thread, SIGINT not
    ignored): a process started with SIGINT ignored (``cmd &`` in a script) stays immune."""
    hit: list[int] = []

    def on_sigint(signum, frame):
        hit.append(signum)
        raise KeyboardInterrupt

    def on_unraisable(unraisable):
        if hit and isinstance(unraisable.exc_value, KeyboardInterrupt):
            return  # a recorded Ctrl-C, swallowed by a ctypes callback: the caller reports it
        old_hook(unraisable)

    old = None
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            old = signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not the main thread: signals stay as they are
        old = None
    old_hook = sys.unraisablehook
    if old is not None:
        sys.unraisablehook = on_unraisable
    try:
        yield hit
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)
            sys.unraisablehook = old_hook
