"""Two processes on one workloads directory at once (``train.py -m`` on SLURM or joblib, an
``evaluate.py`` beside it). Each job is a process of its own (``_workload_job.py``), ordered by
files it writes, not by sleeps; synthesis is a stand-in that swaps its directory in as
``gclsampler.synth`` does."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

JOB = Path(__file__).resolve().parent / "_workload_job.py"
ROOT = Path(__file__).resolve().parents[1]


def _start(role: str, kind: str, seed: int, workloads: Path, sig: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(JOB.parent), os.environ.get("PYTHONPATH", "")])}
    err = open(sig / f"{role}.err", "w")
    with err:
        return subprocess.Popen([sys.executable, str(JOB), role, kind, str(workloads), str(seed), str(sig)],
                                stdout=subprocess.DEVNULL, stderr=err, env=env)


def _both(tmp_path: Path, first: tuple[str, int], second: tuple[str, int]) -> tuple[Path, Path]:
    sig = tmp_path / "signals"
    sig.mkdir()
    workloads = tmp_path / "workloads"
    procs = [_start("first", *first, workloads, sig), _start("second", *second, workloads, sig)]
    try:
        for p in procs:
            assert p.wait(180) == 0, (sig / "first.err").read_text() + (sig / "second.err").read_text()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return sig, workloads / "3mm"


@pytest.mark.parametrize("first, second", [(("train", 0), ("train", 1)),  # train.py -m workload.seed=0,1
                                           (("evaluate", 0), ("train", 0)),  # evaluate.py beside a debug train.py
                                           (("train", 0), ("synth", 1))])  # gclsampler synth --out workloads/3mm
def test_a_workload_in_use_is_not_synthesized_again_under_its_reader(tmp_path, first, second):
    """A job that wanted the workload with other knobs or seed synthesized it again while another
    job was reading it: the reader's traces and profile were replaced by the newcomer's (or gone
    between the two renames), and it went on as if they were its own. The newcomer now waits, says
    so in one line naming the workload, and synthesizes only once the reader is done."""
    sig, wdir = _both(tmp_path, first, second)
    mine = (sig / "first.ready").read_text()
    assert (sig / "first.saw").read_text() == mine  # what the reader read from start to end
    waited = [line for line in (sig / "second.err").read_text().splitlines() if "waiting" in line]
    assert len(waited) == 1 and f"waiting for the other processes using {wdir} to finish" in waited[0], waited
    assert "held by" not in waited[0]  # its readers are many: none is named
    assert (sig / "second.done").read_text() != mine  # then made for the second job, as it asked


def test_jobs_that_want_the_same_workload_use_it_at_once(tmp_path):
    """Holding the workload while a job reads it must not make the multirun's other jobs (the same
    knobs: augment=default,drops,node_drop) wait for the whole of that job: the second finishes
    while the first still holds it (the first waits for ``second.done``)."""
    sig, wdir = _both(tmp_path, ("train", 0), ("train", 0))
    assert (sig / "first.saw").read_text() == (sig / "second.done").read_text() == (sig / "first.ready").read_text()
    assert "waiting" not in (sig / "second.err").read_text()


def test_a_filesystem_without_locks_synthesizes_with_one_warning(tmp_path, monkeypatch, capsys):
    """NFS without lockd answers flock with ENOLCK: the workload is made and used as before the
    locks, with one line saying they are off (not a traceback, not one line per lock file)."""
    import errno
    import fcntl

    import gclsampler._lock as L
    import gclsampler.synth as synth
    from gclsampler.pipeline import ensure_workload
    from tests._workload_job import compose_train, fake_generate

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    monkeypatch.setattr(L, "_warned", set())
    monkeypatch.setattr(synth, "generate", fake_generate)
    workloads = tmp_path / "workloads"
    assert ensure_workload(compose_train(workloads, 0)) == workloads / "3mm"
    assert (workloads / "3mm" / "kernelslist.g").is_file()
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"train.py: warning: {workloads / '.3mm.use.lock'}: cannot lock it (No locks available: a "
                   "filesystem without file locks, e.g. NFS without lockd?); going on unlocked"], err


@pytest.mark.parametrize("kind", ["train", "evaluate"])
def test_a_workload_synth_did_not_write_gets_no_lock_file_beside_it(tmp_path, kind):
    """A user's own workload in ``data_dir`` (traces and a profile, no synth marker) is never
    synthesized over, yet every evaluate.py (generate=false too) left ``.<name>.use.lock`` in the
    user's directory beside it. Nothing can replace it, so nothing is locked there."""
    from tests._workload_job import get_workload

    data = tmp_path / "mine"
    (data / "3mm").mkdir(parents=True)
    (data / "3mm" / "kernelslist.g").write_text("kernel-1.traceg\n")
    (data / "3mm" / "profile.csv").write_text("invocation,kernel_name\n")
    with contextlib.ExitStack() as hold:
        assert get_workload(kind, data, 0, hold) == data / "3mm"
        assert sorted(p.name for p in data.iterdir()) == ["3mm"]


def test_a_synthesis_that_fails_leaves_the_workload_unlocked(tmp_path, monkeypatch):
    """evaluate.py skips a workload it cannot synthesize again (skip_unavailable, the default;
    here simulate's profile in it refuses the replacement) and keeps its hold open until the next
    workload, or through the report after the last. The exclusive lock taken to replace it was
    kept that long, so a train.py that only wanted to read the workload as it is waited, told
    another process was synthesizing it. A failure now releases it at once."""
    import fcntl

    import gclsampler.synth as synth
    from gclsampler.errors import GclError
    from tests._workload_job import fake_generate, get_workload

    monkeypatch.setattr(synth, "generate", fake_generate)
    data = tmp_path / "data"
    with contextlib.ExitStack() as hold:
        get_workload("evaluate", data, 0, hold)
    (data / "3mm" / "profiles").mkdir()
    (data / "3mm" / "profiles" / "accelsim-SM86_RTX3070.csv").write_text("invocation,cycles\n")
    with contextlib.ExitStack() as hold:
        with pytest.raises(GclError, match="not written by gclsampler synth"):
            get_workload("evaluate", data, 1, hold)
        fd = os.open(data / ".3mm.use.lock", os.O_RDONLY)  # another process's, as a reader's
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # BlockingIOError while it is kept
        finally:
            os.close(fd)


def test_a_lock_file_that_cannot_be_made_is_said_not_dropped_silently(tmp_path):
    """A lock file that cannot be made for a reason other than a read-only directory (here its
    name is over the filesystem's 255 bytes; ENOSPC, a directory in its place) turned locking off
    without a word: jobs then replaced the workload under each other with nothing said. It goes
    on unlocked, as on a filesystem without locks, with one line naming the path and the reason."""
    import errno

    from gclsampler._lock import LockFile

    said = []
    path = tmp_path / f".{'w' * 250}.use.lock"
    with LockFile(path, said.append) as lock:
        lock.lock(shared=True)
        lock.lock(shared=False)
    assert said == [f"warning: {path}: cannot make its lock file ({os.strerror(errno.ENAMETOOLONG)}); going on unlocked"], said
    assert os.listdir(tmp_path) == []


def test_the_waiting_line_names_the_process_that_holds_the_lock_alone(tmp_path):
    """simulate's waiting line names its holder ("pid N on HOST"); a workload's never did, since
    LockFile wrote nothing into its file, so a user could not tell which job to look at. An
    exclusive holder now signs the file and a waiter names it; shared holders are many and sign
    nothing, and a stale signature (a holder killed with SIGKILL) is cleared by the first shared
    one, so a wait for readers names no one. Two descriptors of one process lock each other out
    as two processes do (flock locks belong to the open file)."""
    import socket
    import threading

    from gclsampler._lock import LockFile

    path = tmp_path / ".3mm.lock"

    def wait_for(held: LockFile, shared: bool) -> list[str]:
        said, asked = [], threading.Event()
        waiter = LockFile(path, lambda line: (said.append(line), asked.set()))
        t = threading.Thread(target=waiter.lock, kwargs={"shared": shared, "waiting": "waiting for another process"})
        t.start()
        assert asked.wait(60)
        held.close()
        t.join(60)
        waiter.close()
        return said

    me = f"pid {os.getpid()} on {socket.gethostname()}"
    alone = LockFile(path, print)
    alone.lock(shared=False)
    assert wait_for(alone, shared=True) == [f"waiting for another process (held by {me})"]
    path.write_text("pid 1 on a-host-long-gone\n")  # a holder killed before it cleared its name
    reader = LockFile(path, print)
    reader.lock(shared=True)
    assert wait_for(reader, shared=False) == ["waiting for another process"]
    again = LockFile(path, print)
    again.lock(shared=False)
    again.lock(shared=True)  # no longer alone: a waiter must not name it
    assert wait_for(again, shared=False) == ["waiting for another process"]


@pytest.mark.parametrize("knob, refused", [("n=16", "not replaced"), ("layerz=2", "layerz"), ("archs=[voltax]", "voltax")])
def test_synth_takes_no_lock_beside_an_out_it_refuses(tmp_path, capsys, knob, refused):
    """``gclsampler synth`` locks its --out as a re-synthesis does, but only one it would write:
    a directory of the user's, which it refuses, or a request it refuses (a misspelt knob, an unknown arch) gets
    no lock files beside it."""
    from gclsampler.cli import main

    mine = tmp_path / "thesis"
    mine.mkdir()
    if knob == "n=16":
        (mine / "draft.tex").write_text("x")
    assert main(["synth", "3mm", "--out", str(mine), "--quiet", knob]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis"]
    assert refused in capsys.readouterr().err


def test_a_symlinked_workload_is_locked_beside_its_target(tmp_path):
    """A ``workloads/<name>`` linked to a bigger disk was locked beside the link, so a process that
    named the target (another workloads dir linking to it, or its own path) took other lock files
    and replaced the workload under one reading it through the link. Both names now lock the
    target's files: replacing through the link waits for a reader of the target, and says so."""
    import threading

    from gclsampler._lock import LockFile
    from gclsampler._safe_out import synthesizing_workload
    from gclsampler.cli import main

    big = tmp_path / "scratch" / "bp"
    assert main(["synth", "backprop", "--out", str(big), "--quiet", "--jobs", "1"]) == 0
    link = tmp_path / "data" / "bp"
    link.parent.mkdir()
    link.symlink_to(big, target_is_directory=True)
    reader = LockFile(big.parent / ".bp.use.lock", print)
    reader.lock(shared=True)  # a job reading the workload by the target's own path
    said, asked, replaced = [], threading.Event(), threading.Event()

    def replace() -> None:
        with synthesizing_workload(link, "seed 1", lambda line: (said.append(line), asked.set())):
            replaced.set()

    t = threading.Thread(target=replace)
    t.start()
    assert asked.wait(60) and not replaced.is_set()
    assert said == [f"waiting for the other processes using {link} to finish: it is synthesized again for this "
                    "one (seed 1)"]
    reader.close()
    t.join(60)
    assert replaced.is_set()
    assert sorted(p.name for p in link.parent.iterdir()) == ["bp"]  # nothing beside the link
