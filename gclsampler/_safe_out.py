"""Never destroy what the command did not create: checks on every ``--out``.

Why: a command that writes a directory replaces it as a whole (so no stale file of an
earlier run survives next to the new ones), and a command that writes a file renames a
temp file onto it. Both destroy whatever was at the path before. That is right when the
path holds an earlier output of the same command, and data loss otherwise: a thesis
draft in the directory given to ``gclsampler synth --out``, or the source workload
given as the destination of ``trace export-accelsim WL WL``.

The rules, applied before any work starts:

* an output equal to, inside, or containing one of the command's inputs is refused;
* an existing output *directory* is replaced only when it is empty or holds the
  marker file ``.gclsampler-output`` naming the same command (written into every
  output directory; synth outputs written before the marker existed are recognised
  by their ``workload.json``), and holds nothing else than what the marker lists as
  written by the command (``DERIVED`` entries aside);
* an existing output *file* is replaced only when it is of the kind the command
  writes (a plan for plan writers, a profile table for profile writers);
* a path under a regular file, or a directory where a file is wanted (and the
  reverse), is a one-line error rather than an ``OSError`` traceback.

Directory outputs are built in a temp directory next to the target and swapped in
only when complete (``replace_dir``), so an interrupted command leaves the old output
(or nothing) in place, never a half-written one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from glob import escape as glob_escape
from pathlib import Path
from typing import Callable, Iterable, Iterator

from gclsampler._atomic import current_umask, errors_name, through_link, write_bytes_atomic, write_text_atomic
from gclsampler._interrupt import interrupts_deferred
from gclsampler.errors import GclError

MARKER = ".gclsampler-output"
"""File written into every output directory: ``{"command": "<name>"}``, and for a directory
built whole (``commit_dir``) ``"wrote"``: the entries the command wrote, traces as one pattern."""
RUN_LOCK = ".gclsampler-run.lock"
"""Locked (``flock``) by the process running in a Hydra run or sweep directory, removed when the
run ends; the OS drops the lock of a process that dies, so a stale file is taken over."""

DERIVED = frozenset({".graph-cache"})
"""Entries other commands add to an output directory that are derived from what is in it
(``gclsampler.data``'s default graph cache of the traces): they go when it is replaced."""

TRACES = "kernel-<id>.traceg*"
"""How ``wrote`` lists a directory's kernel traces: a workload of 10^5 launches would
otherwise put 10^5 names into a marker read by every later output check."""
_TRACE_NAME = re.compile(r"kernel-[0-9]+\.traceg(?:\.gz|\.xz|\.zst)?")
"""The trace names ``TRACES`` stands for: those a command writes (plain or compressed as
``trace.reader.COMPRESSED_SUFFIXES``). Why not any ending: a user's ``kernel-2.traceg.bak``
(a trace kept before editing it for Accel-Sim) passed for an output and a rerun deleted it."""


class OutputError(GclError):
    """An output path that would destroy or corrupt something the command did not write."""


def _resolve(p: str | os.PathLike) -> Path:
    # no expanduser: outputs are written where the path says, so a literal "~" (in `--out=~/x`,
    # which the shell leaves as it is) must be compared, and locked, as that same directory
    return Path(os.path.abspath(Path(p))).resolve()


def _is_within(inner: Path, outer: Path) -> bool:
    return inner == outer or outer in inner.parents


def check_not_input(out: str | os.PathLike, inputs: Iterable[str | os.PathLike | None], *,
                    directory: bool) -> None:
    """Refuse an output that is one of the inputs, lies inside one, or (for directory
    outputs, which are replaced whole) contains one."""
    o = _resolve(out)
    for inp in inputs:
        if inp is None:
            continue
        i = _resolve(inp)
        if o == i:
            raise OutputError(f"{out}: output is the input {inp}; choose another output path")
        if _is_within(o, i) and i.is_dir():
            raise OutputError(f"{out}: output lies inside the input {inp}; choose a path outside it")
        if directory and _is_within(i, o):
            raise OutputError(f"{out}: output directory would contain the input {inp}, and is replaced "
                              "as a whole; choose another output path")


def _blocking_file(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is not a directory (``--out a.txt/x``)."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def written_by(directory: str | os.PathLike) -> str | None:
    """Which gclsampler command wrote ``directory`` (its marker), or None."""
    d = Path(directory)
    try:
        meta = json.loads((d / MARKER).read_text())
        if isinstance(meta, dict) and isinstance(meta.get("command"), str):
            return meta["command"]
    except (OSError, ValueError):
        pass
    try:  # synth outputs from before the marker: their workload.json says who wrote them
        meta = json.loads((d / "workload.json").read_text())
        if isinstance(meta, dict) and meta.get("generator") == "gclsampler.synth":
            return "synth"
    except (OSError, ValueError):
        pass
    try:  # simulate outputs from before the marker: their run.json records the launcher
        meta = json.loads((d / "run.json").read_text())
        if isinstance(meta, dict) and "launcher" in meta and "simulated_now" in meta:
            return "simulate"
    except (OSError, ValueError):
        pass
    # evaluate.py and train.py runs from before the marker, known by what their files say, not
    # by their names: a user's directory holding a report.md, a results.csv and a plans/ was taken
    # for a run (and its files overwritten), and any run.json or last.pt for a train.py run
    if ((first_line(d / "results.csv") or "").startswith("workload,method,") and (d / "plans").is_dir()
            and (first_line(d / "report.md") or "").startswith("# gclsampler evaluation")):
        return "evaluate"
    try:
        meta = json.loads((d / "run.json").read_text())
        if isinstance(meta, dict) and {"workload", "invocations", "timings"} <= meta.keys():
            return "train"
    except (OSError, ValueError):
        pass
    return None


def check_out_dir(out: str | os.PathLike, command: str,
                  inputs: Iterable[str | os.PathLike | None] = (), ignore: Iterable[str] = ()) -> Path:
    """Raise ``OutputError`` unless ``out`` may be (re)written as a whole by ``command``.

    ``ignore``: entries that do not make the directory someone else's (Hydra's ``.hydra/``
    and job log, which Hydra writes into the run directory before the task starts).
    """
    ignore = set(ignore) | {RUN_LOCK}
    out = Path(out)
    check_not_input(out, inputs, directory=True)
    blocker = _blocking_file(out)
    if blocker is not None:
        raise OutputError(f"{out}: cannot create: {blocker} is a file, not a directory")
    _refuse_dangling_link(out)
    if out.exists():
        if not out.is_dir():
            what = _special_file(out) or "a file"
            raise OutputError(f"{out}: exists and is {what}, not an output directory; not replaced "
                              f"(remove it yourself or choose another {_option(command)})")
        entries = [p for p in sorted(out.iterdir()) if p.name not in ignore]
        owner = written_by(out) if entries else command
        if owner != command:
            why = f"it holds `{_program(owner)}`'s output" if owner in KNOWN_COMMANDS else f"no {MARKER} marker"
            raise OutputError(f"{out}: directory exists and was not written by `{_program(command)}` "
                              f"({why}); not replaced (remove it yourself or choose another path)")
        added = _added_since(out, entries)
        if added:
            more = f" (and {len(added) - 1} more)" if len(added) > 1 else ""
            raise OutputError(f"{added[0]}: not written by `{_program(command)}`{more}; writing {out} again would "
                              "replace the directory and delete it: move it out first, or choose another path")
    return out


SCRIPTS = {"train": ("python train.py", "hydra.run.dir="), "evaluate": ("python evaluate.py", "out_dir=")}
"""Commands run as entry scripts, not ``gclsampler`` subcommands: how errors name them and
the key that chooses their output directory."""

KNOWN_COMMANDS = frozenset({*SCRIPTS, "synth", "simulate", "compare", "trace group", "trace export-accelsim",
                            "plan export-accelsim"})
"""The commands that mark their output directories (a refusal names the one that wrote it)."""


def _program(command: str) -> str:
    return SCRIPTS[command][0] if command in SCRIPTS else f"gclsampler {command}"


_POSITIONAL_OUT = {"trace group": "out_dir", "trace export-accelsim": "dst"}
"""Commands whose output directory is a positional argument, by the name their usage gives it."""


def _option(command: str) -> str:
    if command in SCRIPTS:
        return SCRIPTS[command][1]
    return _POSITIONAL_OUT.get(command, "--out")


LEGACY_OUTPUTS: dict[str, tuple[str, ...]] = {
    "synth": ("kernelslist.g", "profile.csv", "profiles", "workload.json", TRACES),
    "trace group": ("kernelslist.g", TRACES),
    "trace export-accelsim": ("kernelslist.g", TRACES),
    "plan export-accelsim": ("kernelslist.g", "plan.json", TRACES),
    "compare": ("compare.md", "compare.csv", "compare_workloads.csv", "compare_head_to_head.csv", "plots"),
}
"""What each directory-replacing command writes, for markers from before they listed it."""


def _added_since(out: Path, entries: list[Path]) -> list[Path]:
    """Entries of an output directory that its command did not write (the marker lists what
    it wrote), other than ``DERIVED`` ones.

    Why: a directory is replaced as a whole, and users add to outputs: the README's own
    steps import profile.csv into the directory ``trace group`` wrote, and regrouping (say,
    with ``--compress``) deleted it. A marker from before the list is read as listing what its
    command writes (``LEGACY_OUTPUTS``): trusted whole, it let a rerun delete what the user added.
    """
    try:
        marker = json.loads((out / MARKER).read_text())
        wrote = marker.get("wrote")
        if wrote is None:  # a command that writes into its directory (train, evaluate, simulate) lists none
            wrote = list(LEGACY_OUTPUTS[marker["command"]]) if marker.get("command") in LEGACY_OUTPUTS else None
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(wrote, list):
        return []
    keep = set(map(str, wrote)) | {MARKER} | DERIVED
    traces = TRACES in keep
    return [p for p in entries if p.name not in keep and not (traces and _TRACE_NAME.fullmatch(p.name))]


def _refuse_dangling_link(out: Path) -> None:
    """Outputs are written through a symbolic link (``through_link``), never past a dangling
    one: its target's directories would be made on whatever disk holds that path now."""
    if out.is_symlink() and not out.exists():
        raise OutputError(f"{out}: is a dangling symbolic link; not replaced")


def check_out_file(out: str | os.PathLike, kind: str,
                   inputs: Iterable[str | os.PathLike | None] = ()) -> Path:
    """Raise ``OutputError`` unless ``out`` may be replaced by a file of ``kind``.

    ``kind`` is ``"plan"`` (``gclsampler-plan/*`` JSON) or ``"profile"`` (a CSV whose
    header starts with the profile's required columns); an existing file of another
    kind is the user's and stays.
    """
    if str(out) == "-":  # Unix's "standard output": it wrote a file named "-" in the working directory
        raise OutputError(f"{str(out)!r}: give a file name (standard output is not written to)")
    out = Path(out)
    check_not_input(out, inputs, directory=False)
    blocker = _blocking_file(out)
    if blocker is not None:
        raise OutputError(f"{out}: cannot create: {blocker} is a file, not a directory")
    _refuse_dangling_link(out)
    if out.is_dir():
        raise OutputError(f"{out}: is a directory; give a file name")
    special = _special_file(out)
    if special:  # the rename would replace it: run as root, --out /dev/null destroyed the device
        raise OutputError(f"{out}: is {special}, not a regular file; not replaced (give a file name)")
    if out.exists() and not _looks_like(out, kind):
        raise OutputError(f"{out}: exists and is not a {kind} file gclsampler wrote; not replaced "
                          "(remove it yourself or choose another --out)")
    where = _nearest_dir(out.parent)
    if where is not None and not os.access(where, os.W_OK | os.X_OK):
        # found before the work, not after it: `sample gcl` fitted for minutes, then could not save
        why = "a read-only filesystem" if _read_only_fs(where) else "no write permission"
        raise OutputError(f"{out}: cannot be written: {where} is not writable ({why}); choose another --out")
    return out


def _nearest_dir(path: Path) -> Path | None:
    """``path`` or its nearest existing ancestor (what the write would make its parents in)."""
    for p in (path, *path.parents):
        if p.is_dir():
            return p
    return None


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def foreign_entries(cache: Path, own: Callable[[Path], bool]) -> list[str]:
    """Names (sorted) of the entries of an existing cache directory that ``own`` does not
    recognise: the graph cache and ``simulate``'s run cache refuse to write in among them."""
    return sorted(p.name for p in cache.iterdir() if not own(p)) if cache.is_dir() else []


def _special_file(path: Path) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory (a device,
    a FIFO, a socket), else None. Why: each reads as empty, which passed for an empty output
    file, and opening a FIFO to look inside waits for a writer that never comes."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    for test, what in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return None


def is_plain_name(v: object) -> bool:
    """Whether ``v`` is a non-empty string usable as one path component (no separator, NUL,
    ``.`` or ``..``): what a name that becomes part of a path (a trace list entry, a workload's
    arch or name, an Accel-Sim config) must be, so that it cannot point outside its directory."""
    return isinstance(v, str) and v.strip() != "" and v not in (".", "..") and not any(c in v for c in "/\\\0")


def special_input_problem(path: str | os.PathLike) -> str | None:
    """Why an input file cannot be read, when it is a FIFO, device or socket (else None).

    Why: a named pipe nobody writes to blocks the first read forever; the files a workload
    directory holds (profile.csv, kernelslist.g, workload.json, embeddings.npy) are never
    streams, so each is refused before it is opened.
    """
    what = _special_file(Path(path))
    return f"is {what}, not a regular file; reading it would wait for a writer" if what else None


def _looks_like(path: Path, kind: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
            blank = not head.decode("utf-8", "replace").lstrip("\ufeff").strip()
            while blank and (more := fh.read(1 << 20)):  # blank so far: is all of it?
                blank = not more.strip()
    except OSError:
        return False
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    if kind == "plan":
        if path.stat().st_size == 0:
            return True  # an empty file holds nothing to lose
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(d, dict) and str(d.get("format", "")).startswith("gclsampler-plan/")
    if kind == "profile":
        if blank:
            return True  # nothing but whitespace: nothing to lose
        first = [c.strip().strip('"') for c in text.splitlines()[0].split(",")]
        return first[:2] == ["invocation", "kernel_name"]
    raise ValueError(f"unknown output kind {kind!r}")


def _this_host() -> str:
    """Who may judge a temp directory's process: this host and PID namespace (a container on
    the host's network shares its hostname, not its PIDs), as a short hash."""
    import hashlib
    import socket

    try:
        ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        ns = 0
    return hashlib.sha1(f"{socket.gethostname()}:{ns}".encode()).hexdigest()[:12]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # another user's process (EPERM), or a pid this OS cannot ask about: keep its files
    return True


def remove_dead_temp_dirs(out: Path) -> list[Path]:
    """Remove the temp directories that a killed earlier build of ``out`` on this host left.

    Why: a build runs in ``.<name>.tmp-<pid>@<host>-XXXXXXXX`` beside ``out``, and the content it
    replaces waits in ``.<name>.old-<pid>@<host>-XXXXXXXX`` until it is deleted; ``kill -9``, the OOM
    killer, a scheduler's time limit or a Ctrl-C while the old content is deleted skip that
    cleanup, and a grouped LLM trace directory left that way is gigabytes nobody sees. Only the
    directories of this host and PID namespace (``_this_host``) whose process is gone are
    removed: on a shared file system another host's build may be running, and in another
    container another PID's."""
    out = Path(os.path.abspath(out))
    stem = _temp_stem(out.name)
    pattern = re.compile(rf"\.{re.escape(stem)}\.(?:tmp|old)-(\d+)@([0-9a-f]{{12}})-[a-z0-9_]{{8}}")
    host, removed = _this_host(), []
    for p in out.parent.glob(f".{glob_escape(stem)}.*-*"):
        m = pattern.fullmatch(p.name)
        if m and m.group(2) == host and not _alive(int(m.group(1))) and p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def _temp_stem(name: str) -> str:
    """``name`` cut to 200 bytes (at a character): the temp directory's name adds up to 35, and
    a name of 222 or more bytes, valid itself, made one past the file system's 255 ("File name
    too long", blamed on the user's name)."""
    return name.encode()[:200].decode("utf-8", "ignore")


def _sibling_dir(out: Path, kind: str) -> Path:
    """A new empty directory ``.<name>.<kind>-<pid>@<host>-XXXXXXXX`` beside ``out``: the one
    naming that ``remove_dead_temp_dirs`` judges by (``kind``: tmp, old)."""
    out = Path(os.path.abspath(out))  # `--out .`: beside the directory, not inside it as ".."
    return Path(tempfile.mkdtemp(prefix=f".{_temp_stem(out.name)}.{kind}-{os.getpid()}@{_this_host()}-",
                                 dir=out.parent))


def make_temp_dir(out: str | os.PathLike, command: str,
                  inputs: Iterable[str | os.PathLike | None] = ()) -> Path:
    """Check ``out`` (``check_out_dir``), then create the temp directory to build it in (and
    remove what killed earlier builds of it left, ``remove_dead_temp_dirs``)."""
    here, where = Path.cwd().resolve(), _resolve(out)
    if _is_within(here, where):
        # found before the work, not after it: the swap would leave the shell in a deleted directory
        raise OutputError(f"{out}: is {'the' if here == where else 'above the'} current directory; a "
                          f"directory you are in cannot be replaced: run from outside it, or choose another "
                          f"{_option(command)}")
    out = through_link(check_out_dir(out, command, inputs))
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temp_dirs(out)
    with errors_name(out):  # /proc/cmp named the hidden .cmp.tmp-<pid>@<host>-... it could not make
        tmp = _sibling_dir(out, "tmp")
    os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes 0700; outputs follow the umask
    return tmp


def commit_dir(tmp: str | os.PathLike, out: str | os.PathLike, command: str) -> Path:
    """Write the marker into ``tmp`` and swap it in for ``out`` (old content removed after).

    Re-checks ``out`` just before the swap: another process may have created it meanwhile.
    """
    tmp, out = Path(tmp), through_link(Path(out))
    names = [p.name for p in tmp.iterdir() if p.name != MARKER]
    traced = [n for n in names if _TRACE_NAME.fullmatch(n)]
    wrote = sorted(set(names) - set(traced)) + ([TRACES] if traced else [])
    write_text_atomic(tmp / MARKER, json.dumps({"command": command, "wrote": wrote}) + "\n")
    check_out_dir(out, command)
    if out.exists():
        # an empty directory of a unique name, which the rename replaces: an earlier commit of this
        # process that a Ctrl-C stopped may have left its own
        old = _sibling_dir(out, "old")
        with interrupts_deferred():  # a Ctrl-C between the renames left neither output
            os.replace(out, old)
            try:
                os.replace(tmp, out)
            except OSError:  # the old output goes back where it was, not to the next build's clean-up
                os.replace(old, out)
                raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)
    return out


def claim_dir(out: str | os.PathLike, command: str,
              inputs: Iterable[str | os.PathLike | None] = (), ignore: Iterable[str] = ()) -> Path:
    """For commands that write *into* a directory (not replace it): check it, create it
    and mark it, so a later run of the same command may write there again."""
    out = check_out_dir(out, command, inputs, ignore)
    out.mkdir(parents=True, exist_ok=True)
    if written_by(out) != command:
        write_text_atomic(out / MARKER, json.dumps({"command": command}) + "\n")
    return out


def use_workload(out: str | os.PathLike, unusable: Callable[[], str | None], make: Callable[[str], None],
                 say: Callable[[str], None], hold: contextlib.ExitStack | None = None) -> None:
    """Make sure the synthesized workload ``out`` can be used as it is, synthesizing it when
    ``unusable()`` says why not (``make(why)``), and keep it from being replaced while ``hold``
    is open (without ``hold``: only until this returns).

    Why two locks beside it: the jobs of a multirun (SLURM, joblib, several shells) and an
    ``evaluate.py`` beside them read one ``workloads/<name>``. Each synthesized a missing one and
    each commit replaced the directory another job was reading; a job that wanted other knobs,
    seed or arch (``-m workload.seed=0,1``) synthesized it again under the jobs reading it, which
    then read the new directory's traces and profile as their own. ``.<name>.lock`` lets one
    process at a time synthesize it (the others wait, then find it made); ``.<name>.use.lock`` is
    held shared by every process using it, for as long as it does, and exclusively only by one
    that replaces it, which thus waits for them. Jobs that want the same workload share it at
    once. A directory synth did not write (the user's own, in their ``data_dir``) is never
    replaced, so it is used unlocked, with no lock file left beside it. ``say(line)`` is told
    before each wait. Advisory (``flock``); where no lock file can be made (a read-only workloads
    dir, a platform without ``fcntl``; for another reason, such as a name too long, with a warning)
    or the filesystem cannot lock (with a warning), it goes on unlocked, as before the locks.
    """
    if hold is None:
        with contextlib.ExitStack() as own:
            return use_workload(out, unusable, make, say, own)
    from gclsampler._lock import LockFile

    out = Path(out)
    if out.exists() and written_by(out) != "synth" and unusable() is None:
        return  # check_out_dir never lets synth replace it: nothing to keep it from
    with contextlib.ExitStack() as until_used:
        _use_locked(until_used.enter_context(LockFile(_use_lock(out), say)), out, unusable, make, say)
        hold.enter_context(until_used.pop_all())


def _use_locked(use, out: Path, unusable: Callable[[], str | None], make: Callable[[str], None],
                say: Callable[[str], None]) -> None:
    """``use_workload``'s locking, apart so that an error out of it (a refused or failed synthesis
    that evaluate.py skips, a Ctrl-C while waiting) releases the use lock at once, not when the
    caller's ``hold`` closes: a process waiting to read the workload as it is waited that long.
    Returns holding ``use`` shared."""
    from gclsampler._lock import LockFile

    use.lock(shared=True, waiting=_synthesizing(out))
    if unusable() is None:
        return
    use.unlock()  # a process waiting to replace it must not wait for this one
    with LockFile(_synth_lock(out), say) as synth:
        synth.lock(shared=False, waiting=_synthesizing(out))
        why = unusable()  # again: another job may have just made it
        if why is not None:
            use.lock(shared=False, waiting=_replacing(out, why))
            make(why)
        # shared again, before another can replace it: a replacement first takes the lock held here
        use.lock(shared=True)


def _locked_at(out: Path) -> Path:
    """Where ``out``'s workload lock files go: beside the directory itself, which for a
    symlinked ``workloads/<name>`` is the link's target (a rebuild replaces the target there).

    Why: locked beside the link, a process that named the target directly (another workloads
    dir linking to it, or its path) took other lock files, and replaced the workload under one
    reading it through the link. A dangling link stays as it is: nothing is made where it
    points (``check_out_dir`` refuses it)."""
    out = Path(os.path.abspath(out))  # `--out .`: its name, not "", names the lock files
    return Path(os.path.realpath(out)) if out.is_symlink() and out.exists() else out


def _synth_lock(out: Path) -> Path:
    at = _locked_at(out)
    return at.parent / f".{at.name}.lock"


def _use_lock(out: Path) -> Path:
    at = _locked_at(out)
    return at.parent / f".{at.name}.use.lock"


def _synthesizing(out: Path) -> str:
    return f"waiting for another process that is synthesizing {out}"


def _replacing(out: Path, why: str) -> str:
    return f"waiting for the other processes using {out} to finish: it is synthesized again for this one ({why})"


@contextlib.contextmanager
def synthesizing_workload(out: str | os.PathLike, why: str, say: Callable[[str], None]) -> Iterator[None]:
    """Hold ``out``'s two workload locks exclusively (``use_workload``'s), waiting for whoever
    synthesizes or reads it, while the body synthesizes it.

    Why: ``gclsampler synth --out workloads/<name>``, run by hand beside a train.py reading that
    workload, replaced the directory under the reader. Taken only for an ``out`` that
    ``check_out_dir`` lets synth write (a directory of the user's gets no lock file beside it),
    and checked again once held: what is there may have changed while this one waited.
    """
    from gclsampler._lock import LockFile

    check_out_dir(out, "synth")
    with LockFile(_synth_lock(Path(out)), say) as synth, LockFile(_use_lock(Path(out)), say) as use:
        synth.lock(shared=False, waiting=_synthesizing(Path(out)))
        use.lock(shared=False, waiting=_replacing(Path(out), why))
        check_out_dir(out, "synth")
        yield


@contextlib.contextmanager
def replace_dir(out: str | os.PathLike, command: str,
                inputs: Iterable[str | os.PathLike | None] = ()) -> Iterator[Path]:
    """Yield a temp directory; on success it replaces ``out`` (see the module docstring)."""
    tmp = make_temp_dir(out, command, inputs)
    try:
        with errors_name(out, tmp):
            yield tmp
            commit_dir(tmp, out, command)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


try:  # the base of every Hydra callback here (RunDirGuard; compare.py's and sweep_summary.py's)
    from hydra.experimental.callback import Callback as _HydraCallback
except ImportError:  # pragma: no cover - hydra is a dependency
    _HydraCallback = object  # type: ignore[assignment,misc]


def first_line(path: Path) -> str | None:
    """The first line of a file, stripped (a UTF-8 BOM too), None when it cannot be read: how
    a command tells a file it wrote (its known header) from one of the user's of that name."""
    try:
        with open(path, "rb") as fh:
            return fh.readline(65536).decode("utf-8", "replace").lstrip("\ufeff").strip()
    except OSError:
        return None


def job_order(job: Path) -> tuple:
    """Sort key for a multirun's job directories, ``<num>`` or ``<num>_<name>`` (the sweep
    subdirs of conf/hydra/default.yaml and conf/evaluate.yaml): Hydra's job order 0, 1, ...,
    10 rather than the string order 0, 1, 10, 2; other names after them, by name."""
    num = job.name.split("_", 1)[0]
    return (0, int(num), job.name) if num.isdigit() else (1, 0, job.name)


_held: dict[Path, object] = {}  # run and sweep directories this process holds: their open, locked RUN_LOCK


def hold_dir(d: Path, busy: str | None = None) -> str | None:
    """Lock ``d`` (created if missing) for this process until ``release_dir`` or its exit; the
    problem (``busy``, or the run directory's), when another live process holds it.

    Why: Hydra names a run directory by the second (``outputs/<workload>/<time>``), so two runs
    started in the same second shared one: both exited 0, with one run's ``.hydra/`` record,
    the other's ``config.yaml`` and both logs interleaved, or one refused to resume the
    checkpoint the other had just written. A file system without ``flock`` (some NFS mounts)
    gets no lock, as before."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    d.mkdir(parents=True, exist_ok=True)
    fh = open(d / RUN_LOCK, "a")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        return busy or (f"{d}: in use by another run (Hydra names run directories by the second): give each run "
                        "its own directory, or run them as one sweep with -m")
    except OSError:
        fh.close()
        return None
    _held[d] = fh
    import atexit

    atexit.register(release_dir, d)  # a run that ends by an error exit never reaches on_run_end
    return None


@contextlib.contextmanager
def holding_dirs() -> Iterator[None]:
    """Release, on the way out, every directory ``hold_dir`` took inside the block. Why: a
    command run in-process (``gclsampler.cli.main``, as tests and scripts call it) lives on
    after it returns, and its lock, held until exit, refused the next command on that
    directory in the same process."""
    before = set(_held)
    try:
        yield
    finally:
        for d in set(_held) - before:
            release_dir(d)


def release_dir(d: Path) -> None:
    """End ``hold_dir(d)``: the lock file goes first, so the directory is left as the run wrote it."""
    fh = _held.pop(d, None)
    if fh is not None:
        with contextlib.suppress(OSError):
            os.unlink(d / RUN_LOCK)
        fh.close()


_hydra_records: dict[Path, dict[str, bytes]] = {}
"""Run dir -> the bytes of the files its ``.hydra/`` held before this process's Hydra run."""


def _keep_hydra_record(run_dir: Path) -> None:
    """Remember the bytes of ``run_dir/.hydra/`` (if it has one) for ``restore_hydra_records``."""
    rec = run_dir / ".hydra"
    try:
        files = {p.name: p.read_bytes() for p in rec.iterdir() if p.is_file()} if rec.is_dir() else None
    except OSError:
        files = None
    if files:
        _hydra_records[_resolve(run_dir)] = files


_fresh_out_dirs: dict[Path, str] = {}
"""An ``out_dir`` that is its run's Hydra run dir and did not exist before the run -> the job name."""


def restore_hydra_records() -> None:
    """Put back the ``.hydra/`` record of every run dir ``RunDirGuard`` saw before Hydra wrote
    over it: called when the run fails, so that a refused or failed rerun into an earlier
    run's directory leaves that run's record of its config and overrides as it was. An
    ``out_dir`` the failed run created and left with Hydra's files alone is removed: the user
    named it for results, and a refused run (a misspelt workload) must not leave it behind."""
    for d, job in _fresh_out_dirs.items():
        release_dir(d)
        try:
            left = {q.name for q in d.iterdir()}
            if left <= {".hydra", f"{job}.log", RUN_LOCK, MARKER}:
                shutil.rmtree(d)
        except OSError:  # best effort, as below
            pass
    _fresh_out_dirs.clear()
    for run_dir, files in _hydra_records.items():
        rec = run_dir / ".hydra"
        try:
            for p in rec.iterdir() if rec.is_dir() else ():
                if p.name not in files and p.is_file():
                    p.unlink()
            for name, data in files.items():
                if not (rec / name).is_file() or (rec / name).read_bytes() != data:
                    write_bytes_atomic(rec / name, data)
        except OSError:  # best effort: the run's own error is what the user must see
            pass
    _hydra_records.clear()


def _workloads_of(config) -> list[Path]:
    """The workload directories a config reads, from the launch directory (where Hydra still is
    at ``on_run_start``): train.py's one (``pipeline.workload_dir``'s rule), or evaluate.py's
    suite (``evaluate.suite_data_dir``'s rule); none for other configs."""
    from omegaconf import OmegaConf

    if OmegaConf.select(config, "suite", default=None) is not None:  # evaluate.py
        base = (OmegaConf.select(config, "data_dir", default=None)
                or OmegaConf.select(config, "suite.data_dir", default=None) or "workloads")
        names = OmegaConf.select(config, "suite.workloads", default=None) or []
        return [Path(str(base)) / str(n) for n in names]
    given = OmegaConf.select(config, "workload.dir", default=None)
    if given:
        return [Path(str(given))]
    name, base = OmegaConf.select(config, "workload.name", default=None), OmegaConf.select(
        config, "paths.workloads_dir", default=None)
    return [Path(str(base)) / str(name)] if name is not None and base is not None else []


class RunDirGuard(_HydraCallback):  # type: ignore[misc,valid-type]
    """Hydra callback: refuse a ``hydra.run.dir`` that holds someone else's files.

    Why a callback: Hydra writes ``.hydra/`` and the job log into the run directory
    before the task starts, so a check inside ``train``/``evaluate`` comes after a user's
    own ``.hydra/config.yaml`` (or ``train.log``) has already been replaced. ``on_run_start``
    runs before that. The rule is ``check_out_dir``'s, with Hydra's own entries ignored.
    It also keeps a copy of an earlier run's ``.hydra/`` files (with ``-m``, of every job
    directory of an earlier sweep), which ``restore_hydra_records`` puts back if this run (a
    sweep's job) fails (``_guard.run_hydra_main``).
    """

    def __init__(self, command: str, prog: str | None = None) -> None:
        self.command = command
        self.prog = prog or command  # the prefix the entry point's other errors carry

    def _refuse(self, key: str, problem: str) -> None:
        """One error line naming ``key``, exit 2: Hydra turns a callback's exception into a
        warning and carries on; SystemExit it lets through."""
        import sys

        print(f"{self.prog}: error: {key}: {problem}", file=sys.stderr)
        raise SystemExit(2) from None

    def on_multirun_start(self, config, **kwargs) -> None:  # noqa: D401
        """``-m``: refuse a ``hydra.sweep.dir`` of someone else's before Hydra writes its
        ``multirun.yaml`` and the jobs' ``.hydra/`` and logs there (no callback runs between
        those writes and a job's task). The sweep directory may be new, empty, or a Hydra
        sweep directory already (its ``multirun.yaml``); each job directory is then checked
        by its task as a run directory is."""
        from omegaconf import OmegaConf

        sweep_dir = OmegaConf.select(config, "hydra.sweep.dir", throw_on_missing=False)
        if sweep_dir is None:
            return
        d = Path(str(sweep_dir))
        problem = None
        if d.exists() or d.is_symlink():
            if not d.is_dir():
                problem = f"{d}: exists and is not a directory (it is {_special_file(d) or 'a file'})"
            elif any(d.iterdir()) and first_line(d / "multirun.yaml") != "hydra:":
                problem = (f"{d}: directory holds files and is not a Hydra sweep directory (no multirun.yaml of "
                           "Hydra's); Hydra would write its multirun.yaml and job directories among them: choose "
                           "another hydra.sweep.dir")
        problem = problem or hold_dir(d)
        if problem:
            self._refuse("hydra.sweep.dir", problem)
        # Hydra rewrites a job dir's .hydra/ before that job's task (or any callback of it) runs, so
        # an earlier sweep's records are kept now; on_job_end drops the ones a job replaced for good
        for job_dir in sorted(d.iterdir()) if d.is_dir() else ():
            _keep_hydra_record(job_dir)

    def on_job_end(self, config, job_return=None, **kwargs) -> None:  # noqa: D401
        """A finished job's new .hydra/ is the record of what is in its directory now."""
        from omegaconf import OmegaConf

        status = getattr(getattr(job_return, "status", None), "name", None)
        out = OmegaConf.select(config, "hydra.runtime.output_dir", default=None)
        if status == "COMPLETED" and out:
            _hydra_records.pop(_resolve(str(out)), None)

    def on_multirun_end(self, config, **kwargs) -> None:  # noqa: D401
        from omegaconf import OmegaConf

        sweep_dir = OmegaConf.select(config, "hydra.sweep.dir", throw_on_missing=False)
        if sweep_dir is not None:
            release_dir(Path(str(sweep_dir)))

    def on_run_start(self, config, **kwargs) -> None:  # noqa: D401
        from omegaconf import OmegaConf

        run_dir = OmegaConf.select(config, "hydra.run.dir", throw_on_missing=False)
        if run_dir is None:
            return
        job = OmegaConf.select(config, "hydra.job.name", default=None) or self.command
        # evaluate.py's out_dir is its run dir (conf/evaluate.yaml); a hydra.run.dir set apart from
        # out_dir keeps .hydra/ and the log only, and two suites started in the same second into
        # their own out_dirs are not one run
        out_dir = OmegaConf.select(config, "out_dir", default=None)
        is_out = bool(out_dir) and _resolve(str(out_dir)) == _resolve(str(run_dir))
        key = "out_dir" if is_out else "hydra.run.dir"  # what the user typed
        if is_out and not os.path.lexists(str(run_dir)):
            _fresh_out_dirs[Path(str(run_dir))] = job
        try:
            # a run inside its own workload was refused by the task, after Hydra had written .hydra/
            # and the log there: a workload the synthesizer then would not replace
            for wl in _workloads_of(config):  # existing or still to be synthesized
                if _is_within(_resolve(run_dir), _resolve(wl)):
                    raise OutputError(f"{run_dir}: output lies inside the input {wl}; choose a path outside it")
            check_out_dir(Path(str(run_dir)), self.command, ignore=(".hydra", f"{job}.log"))
        except OutputError as exc:
            self._refuse(key, str(exc))
        if not out_dir or is_out:
            problem = hold_dir(Path(str(run_dir)))
            if problem:
                self._refuse(key, problem)
        _keep_hydra_record(Path(str(run_dir)))

    def on_run_end(self, config, **kwargs) -> None:  # noqa: D401
        from omegaconf import OmegaConf

        run_dir = OmegaConf.select(config, "hydra.run.dir", throw_on_missing=False)
        if run_dir is not None:
            release_dir(Path(str(run_dir)))
