"""One line and a fixed exit status for every error a user can cause or fix.

Why: a traceback tells a user of ``gclsampler`` (or ``train.py``, ``evaluate.py``) that the
program is broken, when what went wrong was the input, a config key or the machine (disk
full, read-only directory, Ctrl-C). The policy, the same for every entry point:

=====================================  ======  =============================================
what                                   exit    printed (stderr)
=====================================  ======  =============================================
bad input, config or output path       2       ``PROG: error: FILE:LINE: FIELD: reason``
(``GclError``, Hydra/OmegaConf
config errors)
environment (``OSError``: disk full,   2       ``PROG: error: PATH: reason``
permissions, read-only, not a dir)
Ctrl-C (``KeyboardInterrupt``)         130     ``PROG: interrupted``
SIGTERM (``kill``, a scheduler's       143     ``PROG: terminated``
time limit; ``Terminated``)
SIGHUP (the terminal or SSH session    129     ``PROG: hung up``
went away; ``HungUp``)
a bug (anything else)                  1       the traceback, to report it
=====================================  ======  =============================================

With ``GCLSAMPLER_DEBUG=1`` nothing is caught, so the full traceback of any error shows.
Output files are written temp-then-rename (``gclsampler._atomic``, ``gclsampler._safe_out``),
so an interrupted or failed command leaves no half-written file behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
from typing import Any, Callable, Iterator, NoReturn

from gclsampler._interrupt import HungUp, Terminated, interrupt_for, interrupts_recorded, termination_signals_raise
from gclsampler.errors import GclError

# torch's own logging setup (torch._logging._init_logs, near the end of ``import torch``) makes the
# "torch" logger WARNING and self-contained; a Ctrl-C before it, during a lazy ``import torch`` inside
# a Hydra task (root logger at INFO), left it unset, and torch's atexit FakeTensor cache dump then
# printed three INFO lines after "PROG: interrupted". Set it as torch would, unless someone already has.
if logging.getLogger("torch").level == logging.NOTSET:
    logging.getLogger("torch").setLevel(logging.WARNING)

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, what a shell reports for a process the signal ended
EXIT_HUNG_UP = 129  # 128 + SIGHUP


def interrupt_outcome(exc: BaseException | None) -> tuple[str, int]:
    """What to print after ``PROG:`` and the exit status, for a Ctrl-C, a SIGTERM or a SIGHUP."""
    if isinstance(exc, HungUp):
        return "hung up", EXIT_HUNG_UP
    if isinstance(exc, Terminated):
        return "terminated", EXIT_TERMINATED
    return "interrupted", EXIT_INTERRUPTED


def debug_enabled() -> bool:
    return os.environ.get("GCLSAMPLER_DEBUG", "") not in ("", "0")


def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


def os_error_text(exc: OSError) -> str:
    """``PATH: reason`` for an OSError (both paths for a failed rename)."""
    reason = exc.strerror or _first_line(str(exc)) or type(exc).__name__
    if isinstance(exc, FileExistsError) and exc.filename2 is None and os.path.isfile(exc.filename or ""):
        # makedirs onto a file (e.g. hydra.run.dir naming one): "File exists" reads as if it were fine
        reason = "exists and is a file, not a directory; not replaced"
    if exc.filename is not None and exc.filename2 is not None:
        return f"{exc.filename} -> {exc.filename2}: {reason}"
    if exc.filename is not None:
        return f"{exc.filename}: {reason}"
    return reason


def config_error_text(exc: BaseException) -> str | None:
    """One line for a Hydra/OmegaConf config error (None when ``exc`` is not one).

    Hydra's own messages run over several lines and end in a hint to set
    HYDRA_FULL_ERROR; the hint to "append with +" is wrong here, since unknown keys
    added with ``+`` are refused too (``check_config_keys``).
    """
    try:
        from hydra.errors import HydraException, MissingConfigException
        from omegaconf.errors import OmegaConfBaseException
    except ImportError:  # pragma: no cover - hydra is a dependency
        return None
    if isinstance(exc, MissingConfigException):
        text = str(exc)
        opts = []
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("Available options"):
                for x in lines[i + 1:]:  # the options end where "Config search path:" begins
                    if not x.startswith("\t"):
                        break
                    opts.append(x.strip())
                break
        return "config: " + _first_line(text) + (f" (available: {', '.join(opts)})" if opts else "")
    cause = exc.__cause__ if isinstance(exc, HydraException) else exc
    if isinstance(exc, HydraException) and cause is None and isinstance(exc.__context__, OmegaConfBaseException):
        # a bad key or value in a group's yaml (or `+suite=quick`): Hydra raises "In 'augment/mine':
        # ConfigKeyError raised while composing config:" inside the except block, so the error that names
        # the key is its __context__, and the first line alone named neither the key nor the reason
        cause = exc.__context__
    if isinstance(cause, OmegaConfBaseException):
        key = getattr(cause, "full_key", None)
        msg = _first_line(str(cause))
        parent = getattr(cause, "parent_node", None)
        if key and key.startswith("workload.synth.") and key.count(".") == 2 and _free_form(parent):
            # a workload group's yaml lists every knob its workload takes (tests hold them to the
            # synthesizer's): `+` would only reach synth's own "unknown knob" refusal
            msg = f"not a synth knob of this workload; its knobs: {', '.join(sorted(map(str, parent.keys())))}"
        elif key and "." in key and _free_form(parent):
            # `suite.synth_params.trace_cap=16`: a dictionary whose keys no schema lists takes a
            # new one only with `+` (the keys of typed nodes stay checked, check_config_keys)
            msg += f" ({key.rpartition('.')[0]} is a free-form dictionary: add a key with +{key}=VALUE)"
        return f"config: {key}: {msg}" if key else f"config: {msg}"
    if isinstance(exc, HydraException):
        return "config: " + _first_line(str(exc))
    if isinstance(exc, (ValueError, TypeError)) and _raised_in_hydra_composition(exc):
        # `workload=null`: Hydra's defaults list raises a plain ValueError, a traceback and exit 1; other
        # ValueErrors of Hydra's (`-m --cfg job`: "Only one of --run, --multirun, --cfg...") get no group hint
        text = _first_line(str(exc))
        hint = " (a config group such as workload= takes one of its names)" if "Config group" in text else ""
        return "config: " + text + hint
    return None


def _free_form(node: Any) -> bool:
    try:
        from omegaconf import DictConfig, OmegaConf

        return isinstance(node, DictConfig) and OmegaConf.get_type(node) is dict
    except Exception:  # noqa: BLE001 - a node we cannot ask about gets no hint
        return False


def _raised_in_hydra_composition(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by Hydra's own config composition (its ``_internal`` package)."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and f"{os.sep}hydra{os.sep}_internal{os.sep}" in last.tb_frame.f_code.co_filename


@contextlib.contextmanager
def prefixed_errors(prefix: str, error: type[GclError]) -> Iterator[None]:
    """Re-raise a user error of the block (a ``GclError``, or a Hydra/OmegaConf config error) as
    ``error`` whose line starts with ``prefix``: the setting that carried the bad value
    (``suite.train_overrides``, one value of a sweep), which the inner error cannot know."""
    try:
        yield
    except GclError as exc:
        raise error(f"{prefix}: {exc}") from None
    except Exception as exc:
        text = config_error_text(exc)
        if text is None:
            raise
        raise error(f"{prefix}: {text}") from None


def cluster_error_text(exc: BaseException) -> str | None:
    """One line for submitit refusing the machine it runs on (no SLURM here), or for a job of a
    submitit launcher that failed; None otherwise.

    ``hydra/launcher=slurm`` and ``simulate --launcher slurm`` submit through submitit, which
    raises a bare RuntimeError when ``srun``/``sbatch`` are missing: an environment error,
    not a bug, so it is not shown as a traceback."""
    job = submitit_job_error_text(exc)
    if job is not None:
        return job
    if not isinstance(exc, RuntimeError) or exc.__traceback__ is None:
        return None
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    if f"{os.sep}submitit{os.sep}" not in tb.tb_frame.f_code.co_filename:
        return None
    return (f"SLURM: {_first_line(str(exc))} (hydra/launcher=slurm and simulate --launcher slurm submit "
            "through submitit, which needs a SLURM cluster: run on its login node, or use the local launcher)")


def submitit_job_error_text(exc: BaseException) -> str | None:
    """One line for a job that failed under a submitit launcher (``train.py -m
    hydra/launcher=slurm``, or ``submitit_local``), None for any other error.

    Why: the Hydra launcher re-raises the failed job's submitit error in the process that
    submitted it, a RuntimeError raised in submitit, so the line said "SLURM: Job 14211 (task: 0)
    with path .../14211_0_result.pkl (... needs a SLURM cluster: run on its login node, or use the
    local launcher)": the wrong cause, on the cluster itself, and not the job's own error, which
    submitit's message carries (the job's stderr). The line names the job, its error line
    (``PROG: error: ...``, else the last line of its stream), and its log file.
    """
    import re

    if not type(exc).__module__.startswith("submitit") or type(exc).__name__ not in (
            "UncompletedJobError", "FailedJobError"):
        return None
    lines = [line.rstrip() for line in str(exc).splitlines()]
    rules = [i for i, line in enumerate(lines) if line and set(line) == {"-"}]
    body = lines[rules[0] + 1:rules[1] if len(rules) > 1 else None] if rules else []
    body = [line.strip() for line in body if line.strip()]
    errors = [m.group(1) for m in (re.match(r"^[\w.-]+: error: (.+)$", line) for line in body) if m]
    head = re.match(r"^Job (\S+) \(task: (\d+)\) with path (.+)_result\.pkl$", lines[0] if lines else "")
    failed = re.match(r"^Job \(task=(\d+)\) failed", lines[0] if lines else "")
    state = re.search(r"\(state: ([^)]*)\)", str(exc))
    if head:
        who, log = f"job {head.group(1)} (task {head.group(2)})", head.group(3) + "_log.err"
    else:
        who = f"a job (task {failed.group(1)})" if failed else "a job"
        log = next((line.strip()[2:] for line in lines if line.strip().startswith("- ")), None)
    reason = errors[-1] if errors else body[-1] if body else f"state {state.group(1)}" if state else "no output"
    return f"{who} of the multirun failed: {reason}" + (f" (its log: {log})" if log else "")


def _interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt behind ``exc``, if any: Ctrl-C while numba loads a cached kernel
    surfaces as SystemError ("returned a result with an exception set") caused by it, and was
    shown as a bug's traceback with exit 1 instead of "interrupted", exit 130."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def _stop_interrupted(prog: str, exc: BaseException | None) -> NoReturn:
    word, status = interrupt_outcome(exc)
    _say(prog, f"{prog}: {word}")
    raise SystemExit(status) from None


def call_guarded(fn: Callable[[], Any], prog: str, hint: Callable[[str], str] | None = None) -> Any:
    """Return ``fn()``; on a user or environment error print one line and raise ``SystemExit``.

    ``SystemExit`` passes through Hydra's job runner untouched, so this is what a
    ``@hydra.main`` task uses: Hydra would otherwise add its own "Error executing job"
    line in front of ours. ``hint(text)`` may add a sentence to an error's line (the entry
    point knows what a user who wrote that probably meant).
    """
    if debug_enabled():
        return fn()
    try:
        return fn()
    except GclError as exc:
        _say(prog, f"{prog}: error: {_hinted(one_line(str(exc)), hint)}")
        raise SystemExit(EXIT_ERROR) from None
    except KeyboardInterrupt as exc:
        _stop_interrupted(prog, exc)
    except BrokenPipeError:  # `gclsampler trace info ... | head`
        _silence_stdout()
        raise SystemExit(0) from None
    except OSError as exc:
        text = config_error_text(exc)  # MissingConfigException is an OSError too
        _say(prog, f"{prog}: error: {_hinted(one_line(text or os_error_text(exc)), hint)}")
        raise SystemExit(EXIT_ERROR) from None
    except Exception as exc:
        interrupt = _interrupt_behind(exc)
        if interrupt is not None:
            _stop_interrupted(prog, interrupt)
        text = config_error_text(exc) or cluster_error_text(exc)
        if text is None:
            raise
        _say(prog, f"{prog}: error: {_hinted(one_line(text), hint)}")
        raise SystemExit(EXIT_ERROR) from None


def _hinted(text: str, hint: Callable[[str], str] | None) -> str:
    extra = hint(text) if hint is not None else ""
    return f"{text} {extra}" if extra else text


def stderr_line(line: str) -> None:
    """Print ``line`` on stderr, or nothing if stderr is gone: after a SIGHUP the terminal it
    wrote to may be closed (EIO), and failing to say why the command stopped must not turn the
    clean stop into a traceback and exit 1."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # ValueError: stderr closed
        pass


def _say(prog: str, line: str) -> None:
    """The one line on stderr, and in every log file the root logger writes (a Hydra job's
    ``train.log`` / ``evaluate.log``), so a run directory records why its run stopped.
    Only file handlers: Hydra's console handler would print the line a second time."""
    stderr_line(line)
    import logging

    handlers = [h for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler)]
    if handlers:
        record = logging.makeLogRecord({"name": prog, "levelno": logging.ERROR, "levelname": "ERROR", "msg": line})
        for h in handlers:
            try:
                h.handle(record)
            except Exception:  # pragma: no cover - a log that cannot be written must not hide the error
                pass


def run_guarded(fn: Callable[[], Any], prog: str, hint: Callable[[str], str] | None = None) -> int:
    """Call ``fn`` under the policy above; returns the exit status (``fn``'s int result, else 0)."""
    try:
        with termination_signals_raise():
            result = call_guarded(fn, prog, hint)
    except SystemExit as exc:  # sys.exit() / sys.exit(None) is success, like the interpreter treats it
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else EXIT_ERROR
    return int(result) if isinstance(result, int) and not isinstance(result, bool) else 0


def one_line(text: str) -> str:
    """``text`` as one line: a path with a newline in it (or a library's multi-line message)
    must not split the one line an error is."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@contextlib.contextmanager
def exit_on_interrupt(prog: str):
    """Ctrl-C during a slow module-level import (torch) of an entry script: one line, exit 130
    (a SIGTERM there: exit 143; a SIGHUP: 129).

    A library may swallow the KeyboardInterrupt in a broad ``except`` and then fail with an
    unrelated error (seen: AttributeError from numpy), so any error after a recorded Ctrl-C
    counts as the interrupt (``gclsampler._interrupt``). A worker process that spawn started
    imports the entry script again, and the terminal's Ctrl-C reaches it too: it leaves quietly,
    since the main process reports the interrupt (it was printed twice).
    """
    with termination_signals_raise(), interrupts_recorded() as hit:
        try:
            yield
        except BaseException as exc:
            if not debug_enabled() and (isinstance(exc, KeyboardInterrupt) or hit):
                import multiprocessing

                word, status = interrupt_outcome(exc if isinstance(exc, KeyboardInterrupt) else interrupt_for(hit[-1]))
                if multiprocessing.parent_process() is None:
                    stderr_line(f"{prog}: {word}")
                raise SystemExit(status) from None
            raise


_after_error: list[Callable[[], None]] = []
"""What ``run_hydra_main`` runs when its run ends in an error (exit 2) or a bug's traceback: registered by a Hydra
callback whose own end Hydra then never reaches (a multirun stopped by a failed job)."""


def after_an_error(fn: Callable[[], None]) -> None:
    """Run ``fn`` if this process's Hydra run ends in an error or a crash (not an interrupt: a
    Ctrl-C asks to stop, not for more work)."""
    _after_error.append(fn)


def run_hydra_main(main: Callable[[], Any], prog: str, hint: Callable[[str], str] | None = None) -> int:
    """Run a ``@hydra.main`` function so that config errors reach ``run_guarded``.

    Hydra catches exceptions itself, prints several lines and exits 1; with
    HYDRA_FULL_ERROR set it re-raises them instead, and this turns them into one line.
    """
    os.environ["HYDRA_FULL_ERROR"] = "1"
    code = None
    crashed = False
    try:
        code = run_guarded(main, prog, hint)
        return code
    except Exception:  # a bug's traceback (exit 1): the jobs that finished still get their summary
        crashed = True
        raise
    finally:
        if code != 0:  # a failed rerun (a bug's traceback too) leaves the earlier run's .hydra/ as it was
            from gclsampler._safe_out import restore_hydra_records

            restore_hydra_records()
        hooks, _after_error[:] = list(_after_error), []
        for fn in hooks if code == EXIT_ERROR or crashed else ():
            try:
                fn()
            except Exception as exc:  # pragma: no cover - both failing at once
                if not crashed:
                    raise
                # a second failure here must not replace the traceback the user needs
                stderr_line(f"{prog}: could not summarize the finished jobs after the error: {one_line(str(exc))}")


# ---------------------------------------------------------------------------------------
# config keys
# ---------------------------------------------------------------------------------------
class ConfigKeyError(GclError):
    """A config key that no stage reads (a misspelling would otherwise be ignored)."""


def check_config_keys(cfg: Any, path: str = "") -> None:
    """Refuse keys that a structured (dataclass-typed) node does not declare.

    Hydra's ``+key=value`` adds keys even to typed nodes, so ``+train.epoch=3`` used to
    train with the default epochs while ``config.yaml`` recorded ``train.epoch: 3``.
    Untyped nodes (``workload.synth``, ``sampler.params``) are free-form and not checked.
    """
    from omegaconf import DictConfig, OmegaConf

    if not isinstance(cfg, DictConfig):
        return
    typ = OmegaConf.get_type(cfg)
    if typ is not None and dataclasses.is_dataclass(typ):
        known = {f.name for f in dataclasses.fields(typ)}
        unknown = sorted(str(k) for k in cfg.keys() if k not in known)
        if unknown:
            key = f"{path}.{unknown[0]}" if path else unknown[0]
            raise ConfigKeyError(f"config: {key}: unknown key (known in {path or 'the root'}: "
                                 f"{', '.join(sorted(known))})")
    for k in cfg.keys():
        try:
            child = cfg._get_node(k)
        except Exception:  # pragma: no cover - interpolation errors surface later with their key
            continue
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            check_config_keys(child, f"{path}.{k}" if path else str(k))
