"""The ``gclsampler`` console command: one-shot tools around the Hydra pipeline.

Each command group lives in its own module under ``gclsampler.cli`` and exposes
``register(parser)``. Only the group being run is imported: some groups need torch,
whose import costs seconds, and ``gclsampler --help`` or ``gclsampler trace info``
should not pay for it. Errors follow ``gclsampler._guard``'s policy: bad input and
environment errors are one line on stderr and exit 2, Ctrl-C exits 130 (SIGTERM 143, SIGHUP 129), and only a bug
shows a traceback (every error does with ``GCLSAMPLER_DEBUG=1``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
from typing import Iterator


# group name -> (module, one-line help). Keep in the order users meet them.
GROUPS: dict[str, tuple[str, str]] = {
    "synth": ("gclsampler.cli.synth", "write a SYNTHETIC workload directory (traces, kernelslist.g, profile.csv)"),
    "trace": ("gclsampler.cli.trace", "inspect and convert NVBit/Accel-Sim kernel traces"),
    "profile": ("gclsampler.cli.profile", "import Nsight Compute / Nsight Systems / torch.profiler exports into profile.csv"),
    "graph": ("gclsampler.cli.graph", "inspect the heterogeneous relational graphs built from traces"),
    "validate": ("gclsampler.cli.validate", "check a workload's kernelslist.g, trace headers and profile.csv against each other"),
    "stem": ("gclsampler.cli.stem", "STEM+ROOT error-bounded sampling plan from profile.csv alone"),
    "sample": ("gclsampler.cli.sample", "a sampling plan from any method (pka, sieve, allegro, photon, gcl, ...)"),
    "plan": ("gclsampler.cli.plan", "show, export to Accel-Sim, and reconstruct estimates from sampling plans"),
    "simulate": ("gclsampler.cli.simulate", "run your Accel-Sim on a plan's invocations (or --all) and estimate the workload"),
    "compare": ("gclsampler.cli.compare", "evaluate.py runs (e.g. several synthesis seeds) side by side, with their spread"),
}


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as the one located line every other error is (``--epsilon abc`` printed
    five lines of usage before it); the usage stays one ``--help`` away. Subcommand parsers
    are made of the same class, so the rule holds at every level."""

    def __init__(self, *args, **kwargs):
        # --eps for --epsilon, --no-roo for --no-root: an abbreviation a later option makes
        # ambiguous breaks the scripts that used it, and a typo of one option can read as another
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser when ``only`` is None (imports every group), else just that group's."""
    parser = _OneLineParser(
        prog="gclsampler",
        description=(
            "Tools for sampled GPU simulation. The full pipeline (graphs, RGCN training, "
            "clustering, plan) runs with `python train.py workload=<name>`; these commands "
            "are the single steps around it."
        ),
    )
    sub = parser.add_subparsers(dest="group", metavar="COMMAND")
    sub.required = True
    for name, (module, help_text) in GROUPS.items():
        group = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or only == name:
            importlib.import_module(module).register(group)
    _mark_parsers(parser)
    return parser


def _mark_parsers(parser: argparse.ArgumentParser) -> None:
    """Each (sub)command's parser records itself in the namespace it fills, so that an unknown
    option is reported by the command it was given to: the top-level parser said
    "gclsampler: error: unrecognized arguments: --bogus (see `gclsampler --help`)" for
    ``gclsampler sample ... --bogus``, whose options are in ``gclsampler sample --help``. The
    innermost command parses last, so its mark is the one left."""
    parser.set_defaults(_cli_parser=parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # aliases map to the same parser
                _mark_parsers(child)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1
_CELL_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def shown(name: str) -> str:
    """A name read from an input file, as one cell of a printed table: its tabs and line breaks
    too as ``\\xNN``. The stdout wrapper below cannot tell them from the program's own, so a
    kernel name holding a newline continued on a line of its own, under the next column."""
    return _CELL_CONTROL.sub(_as_hex, name)


def _as_hex(m: re.Match) -> str:
    return f"\\x{ord(m.group()):02x}"


class _ControlEscaped:
    """A text stream that writes control characters as ``\\xNN``.

    Why: listings print names read from input files (kernel names from a plan, a profile or a
    trace header), and a name holding ESC sequences or a carriage return redrew the user's
    terminal or hid part of the table. JSON output escapes them itself; this covers the rest."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(_CONTROL.sub(_as_hex, text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def _stdout_control_escaped() -> Iterator[None]:
    real = sys.stdout
    sys.stdout = _ControlEscaped(real)
    try:
        yield
    finally:
        if isinstance(sys.stdout, _ControlEscaped):
            sys.stdout = real


def main(argv: list[str] | None = None) -> int:
    from gclsampler._guard import debug_enabled, interrupt_outcome, run_guarded, stderr_line
    from gclsampler._interrupt import termination_signals_raise

    argv = sys.argv[1:] if argv is None else list(argv)
    group = next((a for a in argv if not a.startswith("-")), None)
    try:  # building a group's parser may import torch (seconds): Ctrl-C there is no traceback either
        with termination_signals_raise():
            parser = build_parser(only=group if group in GROUPS else "")
            args, unknown = parser.parse_known_args(argv)
            if unknown:  # parse_args would report them as the top-level command's
                getattr(args, "_cli_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    except KeyboardInterrupt as exc:
        if debug_enabled():
            raise
        word, status = interrupt_outcome(exc)
        stderr_line(f"gclsampler: {word}")
        return status
    handler = getattr(args, "handler", None)
    if handler is None:  # a group without its subcommand: a usage error, like any missing argument
        import contextlib

        with contextlib.redirect_stdout(sys.stderr), contextlib.suppress(SystemExit):
            parser.parse_args([args.group, "--help"])  # argparse exits 0 after printing help
        return 2
    with _stdout_control_escaped():
        return run_guarded(lambda: int(handler(args) or 0), "gclsampler")


def console() -> None:
    """The ``gclsampler`` command: ``main``'s status as the process's exit status.

    After an error (status 2, its one line already printed, every output already removed or
    complete) the process ends at once, without the interpreter's teardown. Why: pandas 3's
    string columns are pyarrow arrays, and tearing down pyarrow's native state at exit
    sometimes calls std::terminate on a loaded machine, so a bad profile.csv exited 134
    ("terminate called without an active exception") instead of 2: 1-8 of 150 runs of
    `gclsampler profile info` on one beside two busy loops on 2 cores, in the fallback reader
    that names the bad line. Success keeps the normal exit, so atexit work still runs there.
    """
    from gclsampler._guard import EXIT_ERROR

    status = main()
    if status == EXIT_ERROR:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":  # pragma: no cover
    console()
