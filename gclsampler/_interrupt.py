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


def _start_worker(initializer, initargs) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def process_pool(workers: int, start_method: str, initializer=None, initargs: tuple = ()) -> Iterator:
    """A ProcessPoolExecutor that Ctrl-C stops, every time.

    Ctrl-C reaches every process of the terminal's group, workers included. A worker that takes
    the KeyboardInterrupt inside a task reports it as the task's result and waits for more work;
    one that takes it between tasks dies, possibly halfway through reading the call queue. Either
    way the pool's shutdown could then wait forever (``gclsampler synth`` hung at exit about one
    Ctrl-C in ten, its worker blocked reading a call that never came). So the workers ignore
    SIGINT and only this process decides: when the block raises (the interrupt or anything else),
    the workers this pool started are terminated before the pool is shut down, instead of being
    left to finish work nobody will read.
    """
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    before = {p.pid for p in mp.active_children()}
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(start_method),
                               initializer=_start_worker, initargs=(initializer, tuple(initargs)))
    try:
        yield pool
    except BaseException:
        for p in mp.active_children():
            if p.pid not in before:
                p.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
