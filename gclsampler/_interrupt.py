"""Keep a Ctrl-C that a library swallowed.

Some libraries run Python code where a KeyboardInterrupt cannot get out: llvmlite calls back
into Python through ctypes while numba compiles (ctypes prints "Exception ignored" and the
compile goes on), and some wrap optional imports in ``except`` blocks broad enough to catch
it (the half-imported module then fails with an unrelated error). Either way the work would
carry on as if the user had not pressed Ctrl-C. Recording the signal itself, as well as raising,
lets the caller see that it came. Where ctypes swallowed it, its "Exception ignored" traceback
is not printed either: the recorded interrupt is reported once, by the caller.

SIGTERM (``kill``, ``timeout``, a batch scheduler at the time limit) takes the same path as a
``Terminated`` interrupt, so what a Ctrl-C cleans up a SIGTERM cleans up too, and it is
recorded the same way (a swallowed one was lost: the process went on). SIGHUP (the terminal or
the SSH session that ran the command went away) does too, as ``HungUp``.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Iterator


class Terminated(KeyboardInterrupt):
    """A SIGTERM, raised where Python's default would have ended the process on the spot.

    Why an interrupt: every ``except KeyboardInterrupt`` / ``finally`` that tidies up after a
    Ctrl-C (temp directories beside an output, pool workers, live simulators) must run on a
    SIGTERM as well. Dying at once left ``synth``'s ``.NAME.tmp-*`` directory (removed only by a
    later build on the same host, which a cluster job rarely is), a "leaked semaphore" warning,
    and its spawned timing worker blocked for good on a call queue nobody would write to.
    Reported as "terminated", exit 143 (128 + SIGTERM), as a shell reports the signal.
    """


class HungUp(Terminated):
    """A SIGHUP: the terminal, or the SSH session, that ran the command went away.

    Why a ``Terminated``: the command cannot go on talking to anyone, but what a SIGTERM cleans
    up (temp directories beside an output, pool workers, live simulators) it must clean up too;
    Python's default ended the process on the spot. Reported as "hung up", exit 129 (128 +
    SIGHUP). ``nohup`` ignores SIGHUP before the command starts, and that is left alone.
    """


# the signals whose default action ends the process, and the interrupt each becomes here
_ENDING = {signal.SIGTERM: Terminated}
if hasattr(signal, "SIGHUP"):  # not on Windows
    _ENDING[signal.SIGHUP] = HungUp


@contextlib.contextmanager
def termination_signals_raise() -> Iterator[None]:
    """Inside the block, SIGTERM raises ``Terminated`` and SIGHUP ``HungUp``. Only where the
    signal still has its default action, on the main thread: a handler someone else installed
    (submitit's SIGTERM handler, in a SLURM job) and an ignored signal (``nohup``'s SIGHUP) are
    left alone. The old action is restored after the block."""
    def on_ending(signum, frame):  # noqa: ARG001
        raise _ENDING[signum]

    on_ending.raises_terminated = True  # type: ignore[attr-defined]
    replaced = _install(on_ending, _ENDING, lambda sig, current: current is signal.SIG_DFL)
    try:
        yield
    finally:
        _put_back(replaced)


def interrupt_for(signum: int) -> KeyboardInterrupt:
    """The exception a recorded signal stands for: ``Terminated`` for SIGTERM, ``HungUp`` for
    SIGHUP, else Ctrl-C's."""
    return _ENDING.get(signum, KeyboardInterrupt)()


def _raises_on(sig: int, handler) -> bool:
    """Whether ``handler`` is the one that turns ``sig`` into an interrupt here: Python's own for
    SIGINT, ``termination_signals_raise``'s for SIGTERM and SIGHUP, or an enclosing recording block's."""
    if getattr(handler, "records_interrupts", False):
        return True
    if sig == signal.SIGINT:
        return handler is signal.default_int_handler
    return getattr(handler, "raises_terminated", False)


def _install(handler, signals, where) -> dict[int, object]:
    """Put ``handler`` in place of each of ``signals`` whose current handler ``where(sig,
    current)`` accepts, on the main thread only; the replaced handlers, to put back after."""
    replaced: dict[int, object] = {}
    for sig in signals:
        current = signal.getsignal(sig)
        if where(sig, current):
            try:
                signal.signal(sig, handler)
            except ValueError:  # not the main thread: signals stay as they are
                break
            replaced[sig] = current
    return replaced


def _replace_raising_handlers(handler) -> dict[int, object]:
    """Put ``handler`` in place of the SIGINT, SIGTERM and SIGHUP handlers that raise here
    (``_raises_on``), on the main thread only; the replaced handlers, to put back after."""
    return _install(handler, (signal.SIGINT, *_ENDING), _raises_on)


def _put_back(replaced: dict[int, object]) -> None:
    for sig, handler in replaced.items():
        signal.signal(sig, handler)


@contextlib.contextmanager
def interrupts_recorded() -> Iterator[list[int]]:
    """Inside the block, Ctrl-C raises KeyboardInterrupt as usual (a SIGTERM, under
    ``termination_signals_raise``, ``Terminated``) and the signal is also appended to the yielded list.
    Only where that handler (or an enclosing block's) is in place, on the main thread: a process
    started with SIGINT ignored (``cmd &`` in a script) stays immune, and a SIGTERM nobody turned
    into an exception keeps its default action. Blocks nest: the inner one records and hands the
    signal on, so a caller's check (the trace parser's warm-up) works under an entry script's as
    well. ``interrupt_for(hit[-1])`` is the exception to raise after a swallowed one."""
    hit: list[int] = []

    def on_signal(signum, frame):
        hit.append(signum)
        if getattr(outer[signum], "records_interrupts", False):
            outer[signum](signum, frame)  # an enclosing block's: it records too, then raises
        raise interrupt_for(signum)

    on_signal.records_interrupts = True  # type: ignore[attr-defined]

    def on_unraisable(unraisable):
        if hit and isinstance(unraisable.exc_value, KeyboardInterrupt):
            return  # a recorded interrupt, swallowed by a ctypes callback: the caller reports it
        old_hook(unraisable)

    outer = _replace_raising_handlers(on_signal)
    old_hook = sys.unraisablehook
    if outer:
        sys.unraisablehook = on_unraisable
    try:
        yield hit
    finally:
        _put_back(outer)
        if outer:
            sys.unraisablehook = old_hook


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold a Ctrl-C (or a raising SIGTERM) that arrives inside the block until it ends, then
    raise it: for steps that must not stop halfway, such as swapping a rebuilt output in for
    the old one (two renames; stopped between them, neither the old output nor the new one was
    left). Replacing the Python-level handler is enough whatever thread the OS delivers the
    signal to, since Python runs handlers on the main thread. Off the main thread, and for
    signals whose handler does not raise here, nothing changes. A held interrupt is raised
    even when the block fails (an ``OSError`` from the second rename): the error is its
    ``__context__``, and a caller that goes on after such errors (a sweep, the next workload)
    stops as the user asked instead of dropping the Ctrl-C."""
    held: list[int] = []
    outer = _replace_raising_handlers(lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        _put_back(outer)
        if held:  # the handler that was in place raises it (an enclosing recording block's records it too)
            outer[held[-1]](held[-1], None)  # type: ignore[operator]
            raise interrupt_for(held[-1])  # not reached: each of those handlers raises


def _start_worker(initializer, initargs) -> None:
    # what the terminal sends to its whole process group (Ctrl-C, and SIGHUP when it goes away)
    # the parent alone acts on: a worker that died by it could break the pool under a task the
    # parent is still waiting on, which would then surface as a crash instead of the signal
    for sig in (signal.SIGINT, *(s for s in _ENDING if s != signal.SIGTERM)):
        signal.signal(sig, signal.SIG_IGN)
    # a forked worker inherits the parent's SIGTERM handler (``termination_signals_raise``); with it the
    # pool's own terminate() would become an exception inside a task, and the worker would wait
    # for more work instead of ending
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if initializer is not None:
        initializer(*initargs)


def _start_resource_tracker_deaf_to_sighup() -> None:
    """Start multiprocessing's resource tracker (which spawn pools need) with SIGHUP blocked.

    Why: the tracker ignores SIGINT and SIGTERM so that the process it serves can clean up, but
    not SIGHUP, which a terminal that goes away sends to the whole process group. Killed by it,
    the tracker was relaunched during the clean-up, and 6 of 8 hung-up ``synth`` runs ended with
    its warning and traceback on stderr or a segmentation fault instead of "hung up". A signal mask is
    inherited across the tracker's fork and exec, and the tracker unblocks only SIGINT and
    SIGTERM. Here SIGHUP is blocked rather than ignored, so one that arrives meanwhile is
    delivered once the mask is put back. A tracker already running is left as it is."""
    sighup = getattr(signal, "SIGHUP", None)
    if sighup is None or not hasattr(signal, "pthread_sigmask"):
        return
    from multiprocessing import resource_tracker

    before = signal.pthread_sigmask(signal.SIG_BLOCK, {sighup})
    try:
        resource_tracker.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextlib.contextmanager
def process_pool(workers: int, start_method: str, initializer=None, initargs: tuple = ()) -> Iterator:
    """A ProcessPoolExecutor that Ctrl-C stops, every time.

    Ctrl-C reaches every process of the terminal's group, workers included. A worker that takes
    the KeyboardInterrupt inside a task reports it as the task's result and waits for more work;
    one that takes it between tasks dies, possibly halfway through reading the call queue. Either
    way the pool's shutdown could then wait forever (``gclsampler synth`` hung at exit about one
    Ctrl-C in ten, its worker blocked reading a call that never came). So the workers ignore
    SIGINT and SIGHUP (the terminal's other signal to the group), end at once on SIGTERM, and
    only this process decides: when the block raises (the interrupt, a ``Terminated``, or
    anything else),
    the workers this pool started are terminated before the pool is shut down, instead of being
    left to finish work nobody will read.
    """
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    before = {p.pid for p in mp.active_children()}
    if start_method != "fork":  # a fork pool's semaphores are unlinked at once and need no tracker
        _start_resource_tracker_deaf_to_sighup()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(start_method),
                               initializer=_start_worker, initargs=(initializer, tuple(initargs)))
    from concurrent.futures.process import BrokenProcessPool

    try:
        yield pool
    except BaseException as exc:
        for p in mp.active_children():
            if p.pid not in before:
                p.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        if isinstance(exc, BrokenProcessPool):  # a traceback said the program was broken; the machine was
            from gclsampler.errors import GclError

            raise GclError("a worker process ended abruptly (killed: by the out-of-memory killer, `kill -9`, "
                           "a scheduler's limit?), so the command stopped; rerun with fewer worker processes "
                           "(synth --jobs 1, graph --workers 1, train.py workers=1) or more memory") from None
        raise
    pool.shutdown(wait=True)
