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
    yielded list. Only where Python's own handler (or an enclosing block's) is in place (the
    main thread, SIGINT not ignored): a process started with SIGINT ignored (``cmd &`` in a
    script) stays immune. Blocks nest: the inner one records and hands the signal on, so a
    caller's check (the trace parser's warm-up) works under an entry script's as well."""
    hit: list[int] = []
    outer = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame):
        hit.append(signum)
        if outer is not signal.default_int_handler:
            outer(signum, frame)  # an enclosing block's: it records too, then raises
        raise KeyboardInterrupt

    on_sigint.records_sigint = True  # type: ignore[attr-defined]

    def on_unraisable(unraisable):
        if hit and isinstance(unraisable.exc_value, KeyboardInterrupt):
            return  # a recorded Ctrl-C, swallowed by a ctypes callback: the caller reports it
        old_hook(unraisable)

    installed = False
    if outer is signal.default_int_handler or getattr(outer, "records_sigint", False):
        try:
            signal.signal(signal.SIGINT, on_sigint)
            installed = True
        except ValueError:  # not the main thread: signals stay as they are
            pass
    old_hook = sys.unraisablehook
    if installed:
        sys.unraisablehook = on_unraisable
    try:
        yield hit
    finally:
        if installed:
            signal.signal(signal.SIGINT, outer)
            sys.unraisablehook = old_hook
