"""Issue 14, classes 3 and 4: every bad input or environment error is one line and exit 2.

One test per class of bad input: an OSError from the machine, a corrupt compressed trace,
a plan.json of the wrong shape or encoding, a bad --embeddings file, a --set value that
is not YAML or out of range, a profile with no rows, Hydra config errors (also unknown
keys added with ``+``), Ctrl-C (exit 130), and GCLSAMPLER_DEBUG=1 bringing the traceback
back. "One line" means: exactly one stderr line, naming the file (or key), no traceback.
"""

from __future__ import annotations

import errno
import gzip
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gclsampler.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _line(capsys, *needles: str) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_os_errors_are_one_line_and_leave_no_debris(wl_copy, tmp_path, capsys, monkeypatch):
    import gclsampler._atomic as atomic

    def full(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))

    monkeypatch.setattr(atomic.os, "replace", full)
    out = tmp_path / "plan.json"
    assert main(["stem", str(wl_copy / "profile.csv"), "--out", str(out)]) == 2
    _line(capsys, "gclsampler: error: ", str(out), "No space left on device")
    assert list(tmp_path.glob(".plan.json.*")) == [] and not out.exists()


def test_makedirs_onto_a_file_says_so_and_keeps_it(tmp_path):
    from gclsampler._guard import os_error_text

    f = tmp_path / "notes.txt"
    f.write_text("mine")
    with pytest.raises(FileExistsError) as info:
        os.makedirs(f, exist_ok=True)  # what Hydra does with hydra.run.dir
    assert os_error_text(info.value) == f"{f}: exists and is a file, not a directory; not replaced"
    assert f.read_text() == "mine"
    (tmp_path / "d").mkdir()
    with pytest.raises(FileExistsError) as info:
        os.mkdir(tmp_path / "d")
    assert os_error_text(info.value) == f"{tmp_path / 'd'}: File exists"


def test_a_corrupt_gzip_trace_is_one_line(wl_copy, capsys):
    data = gzip.compress((wl_copy / "kernel-2.traceg").read_bytes())
    bad = bytearray(data)
    for i in range(len(bad) // 3, len(bad) // 3 + 16):
        bad[i] ^= 0x5A
    (wl_copy / "kernel-2.traceg").unlink()
    (wl_copy / "kernel-2.traceg.gz").write_bytes(bytes(bad))
    kl = wl_copy / "kernelslist.g"
    kl.write_text(kl.read_text().replace("kernel-2.traceg\n", "kernel-2.traceg.gz\n"))
    assert main(["trace", "info", str(wl_copy)]) == 2
    _line(capsys, "kernel-2.traceg.gz", "compression")


@pytest.mark.parametrize("content,needle", [
    (b"[1, 2, 3]\n", "expected a JSON object"),
    (b'{"format": "gclsampler-plan/1", "workload": "w", "method": "m", "n_invocations": 2,'
     b' "samples": [{"invocation": 0.5, "kernel_name": "k", "cluster": 0, "weight": 2}],'
     b' "clusters": [{"id": 0, "size": 2}]}', "samples[0].invocation: expected an integer, found 0.5"),
    (b'{"format": "gclsampler-plan/1", "workload": "w\xff"}', ":1: not UTF-8 text"),
    (b'{"format": "gclsampler-plan/1", "workload": "w", "method": "m", "n_invocations": 1,'
     b' "samples": "none", "clusters": []}', "samples: expected a list"),
    (b"", ":1: not JSON"),
])
def test_bad_plan_files(tmp_path, capsys, content, needle):
    plan = tmp_path / "plan.json"
    plan.write_bytes(content)
    assert main(["plan", "show", str(plan)]) == 2
    _line(capsys, str(plan), needle)


def test_bad_embeddings_files(tiny_workload, tmp_path, capsys):
    n = sum(1 for ln in (tiny_workload / "kernelslist.g").read_text().split() if ln.startswith("kernel-"))
    text = tmp_path / "emb.txt"
    text.write_text("1 2 3\n")
    pick = tmp_path / "emb.pkl"
    pick.write_bytes(pickle.dumps({"a": 1}))
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    nan = tmp_path / "nan.npy"
    arr = np.ones((n, 4), np.float32)
    arr[3, 2] = np.nan
    np.save(nan, arr)
    for path, needle in ((tmp_path / "missing.npy", "no such file"), (text, "not a numpy .npy file"),
                         (pick, "not a numpy .npy file"), (obj, "pickled Python objects"),
                         (nan, "row 3: not finite")):
        out = tmp_path / "p.json"
        assert main(["sample", "gcl", str(tiny_workload), "--embeddings", str(path), "--out", str(out)]) == 2
        _line(capsys, str(path), needle)
        assert not out.exists()


@pytest.mark.parametrize("setting,needle", [
    ("threshold=abc", "threshold: must be a number, found 'abc'"),
    ("threshold=[1", "value is not valid YAML"),
    ("threshold=2", "threshold: must be at most 1"),
])
def test_bad_set_values(tiny_workload, tmp_path, capsys, setting, needle):
    assert main(["sample", "photon", str(tiny_workload), "--out", str(tmp_path / "p.json"), "--set", setting]) == 2
    _line(capsys, needle)


def test_profile_with_header_only_names_the_file(tmp_path, capsys):
    prof = tmp_path / "profile.csv"
    prof.write_text("invocation,kernel_name,grid,block,time_ns,cycles\n")
    assert main(["stem", str(prof), "--out", str(tmp_path / "p.json")]) == 2
    _line(capsys, f"{prof}:2: no invocation rows")


def test_ctrl_c_is_one_line_exit_130(capsys):
    from gclsampler._guard import run_guarded

    def interrupted():
        raise KeyboardInterrupt

    assert run_guarded(interrupted, "gclsampler") == 130
    _line(capsys, "gclsampler: interrupted")


def test_debug_env_shows_the_traceback(monkeypatch):
    from gclsampler._guard import run_guarded
    from gclsampler.errors import GclError

    def bad():
        raise GclError("x.csv: broken")

    monkeypatch.setenv("GCLSAMPLER_DEBUG", "1")
    with pytest.raises(GclError):
        run_guarded(bad, "gclsampler")


def test_a_bug_still_shows_its_traceback():
    from gclsampler._guard import run_guarded

    def bug():
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        run_guarded(bug, "gclsampler")


def test_unknown_keys_added_with_plus_are_refused():
    from hydra import compose, initialize_config_dir

    import gclsampler.config  # noqa: F401
    from gclsampler._guard import ConfigKeyError, check_config_keys

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        check_config_keys(compose("config", overrides=["debug=default"]))
        check_config_keys(compose("config", overrides=["debug=default", "+workload.synth.zzz=1"]))  # free-form
        for override, key in (("+train.epoch=3", "train.epoch"), ("+foo=1", "foo"), ("+graph.max_warp=2", "graph.max_warp")):
            with pytest.raises(ConfigKeyError, match=rf"config: {key}: unknown key"):
                check_config_keys(compose("config", overrides=["debug=default", override]))


def _run(args: list[str], **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GCLSAMPLER_DEBUG": ""}
    return subprocess.run([sys.executable, *args], cwd=kw.pop("cwd", ROOT), env=env, capture_output=True,
                          text=True, timeout=300, **kw)


@pytest.mark.parametrize("override,needle", [
    ("+train.epoch=3", "config: train.epoch: unknown key"),
    ("train.epoch=3", "config: train.epoch: Key 'epoch' not in 'TrainConfig'"),
    ("train.lr=abc", "config: train.lr: Value 'abc' of type 'str' could not be converted to Float"),
    ("graph=nope", "config: In 'config': Could not find 'graph/nope' (available: default)"),  # no search path
    # a new key of a dictionary no schema types needs Hydra's +, and the line says so
    ("sampler.params.foo=1", "config: sampler.params.foo: Key 'foo' is not in struct (sampler.params is a "
                             "free-form dictionary: add a key with +sampler.params.foo=VALUE)"),
    # but a workload's yaml lists every synth knob it has: a + would only reach synth's refusal
    ("workload.synth.nodes=5", "config: workload.synth.nodes: not a synth knob of this workload; its knobs: "
                                "archs, batch_insts,"),
    # the paper's method on the project's encoder: refused before any work, saying what to add
    ("sampler=gcl_paper", "model.inst_stats=true model.kernel_features=true: the project's encoder, but "
                          "sampler=gcl_paper clusters the paper's encoder's embeddings; add model=paper"),
])
def test_train_py_config_errors_are_one_line_exit_2(tmp_path, override, needle):
    r = _run([str(ROOT / "train.py"), "debug=default", override, f"hydra.run.dir={tmp_path}/run"], cwd=tmp_path)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("train.py: error: ") and needle in lines[0], r.stderr


@pytest.mark.parametrize("yaml_text, needle", [
    ("node_dorp: 0.1\n", "config: augment.node_dorp: Key 'node_dorp' not in 'AugmentConfig'"),
    ("node_drop: abc\n", "config: augment.node_drop: Value 'abc' of type 'str' could not be converted to Float"),
])
def test_a_bad_key_in_a_group_yaml_is_named(tmp_path, yaml_text, needle):
    """A misspelt key or bad value in a config group's yaml (a user's own conf/augment/mine.yaml, or an
    edited default) stopped train.py with "config: In 'augment/mine': ConfigKeyError raised while
    composing config:", naming neither the key nor what was wrong with it (the next lines of Hydra's
    message did, and one line keeps only the first)."""
    import shutil

    from hydra import compose, initialize_config_dir

    import gclsampler.config  # noqa: F401
    from gclsampler._guard import config_error_text

    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    (conf / "augment" / "mine.yaml").write_text("defaults:\n  - default\n" + yaml_text)
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        with pytest.raises(Exception) as exc:
            compose("config", overrides=["augment=mine"])
    assert config_error_text(exc.value) == needle


def test_train_py_refuses_evaluates_suite_group_naming_it(tmp_path):
    r = _run([str(ROOT / "train.py"), "debug=default", "+suite=quick", f"hydra.run.dir={tmp_path}/run"], cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert line == "train.py: error: config: suite: Key 'suite' not in 'RootConfig'", r.stderr


def _imported(stderr: str) -> set[str]:
    """Top-level module names in ``python -X importtime``'s report."""
    return {ln.rsplit("|", 1)[1].strip().split(".")[0] for ln in stderr.splitlines()
            if ln.startswith("import time:") and "|" in ln}


@pytest.mark.parametrize("script,override", [
    ("train.py", "train.epoch=3"),    # Hydra's composition refuses it
    ("train.py", "train.lr=-1"),      # the job's own check, after Hydra's callbacks were made
    ("train.py", "--help"),
    ("evaluate.py", "suite.nope=1"),
])
def test_config_errors_and_help_do_not_wait_for_torch(tmp_path, script, override):
    """torch and torch_geometric take about 3 s to import (4.8-5.8 s in all to a config error, 462 MB,
    before; 1.2-1.7 s, 131 MB after): the config schema, the checks and the sweep callback import
    none of it, so a misspelt key fails at once."""
    r = _run(["-X", "importtime", str(ROOT / script), override, f"hydra.run.dir={tmp_path}/run"], cwd=tmp_path)
    assert r.returncode == (0 if override == "--help" else 2), r.stderr[-2000:]
    assert {"torch", "torch_geometric"}.isdisjoint(_imported(r.stderr)), "torch was imported"


@pytest.mark.parametrize("script", ["train.py", "evaluate.py"])
def test_a_spawned_worker_does_not_import_torch(tmp_path, script):
    """A ``spawn`` worker (synth's timing worker) runs the entry script's module-level code again,
    as ``__mp_main__``; that code imported torch, 3 s and ~330 MB per worker before its first task."""
    probe = ("import runpy, sys; runpy.run_path(sys.argv[1], run_name='__mp_main__'); "
             "print(sorted({'torch', 'torch_geometric'} & set(sys.modules)))")
    r = _run(["-c", probe, str(ROOT / script)], cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "[]\n"), r.stderr


def test_evaluate_py_unknown_key_is_one_line_exit_2(tmp_path):
    r = _run([str(ROOT / "evaluate.py"), "+suite.nope=1", f"hydra.run.dir={tmp_path}/run"], cwd=tmp_path)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "suite.nope" in lines[0], r.stderr
    r = _run([str(ROOT / "evaluate.py"), "suite.nope=1", f"hydra.run.dir={tmp_path}/run"], cwd=tmp_path)
    assert r.returncode == 2 and "+" not in r.stderr, r.stderr  # a typed node's misspelling gets no hint to add it
    r = _run([str(ROOT / "evaluate.py"), "suite.synth_params.trace_cap=16", f"hydra.run.dir={tmp_path}/run"], cwd=tmp_path)
    assert r.returncode == 2 and "add a key with +suite.synth_params.trace_cap=VALUE" in r.stderr, r.stderr


def test_ctrl_c_during_synth_leaves_nothing(tmp_path):
    """A real SIGINT to the process group (as a terminal sends it), workers included.

    Run as the installed ``gclsampler`` script runs (import main, exit with its status), not
    ``python -m``: on CPython 3.11 a KeyboardInterrupt that leaves code run by ``exec()`` of a
    string (dataclasses, scipy's lazy imports under numba) marks the interpreter to re-raise
    SIGINT at exit when it runs a module with ``-m``, even after the interrupt was handled, so
    ``python -m gclsampler`` then dies by the signal (-2 here; a shell still shows 130).
    """
    p, lines = _signal_synth_while_it_writes(tmp_path, lambda p: os.killpg(p.pid, signal.SIGINT))
    assert p.returncode == 130 and lines == ["gclsampler: interrupted"], lines
    _only_locks_left(tmp_path)


def _sighup_default() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture
def sighup_default():
    """SIGHUP with its default action for the test, as in a terminal (a runner started under
    ``nohup`` ignores it), and the runner's disposition back after."""
    old = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGHUP, old)


def _only_locks_left(tmp_path) -> None:
    """Nothing on disk but the workload's two lock files beside ``--out`` (kept by design: one
    removed on release lets two processes hold "the" lock), released, naming no holder."""
    locks = [".phi2.lock", ".phi2.use.lock"]
    assert sorted(p.name for p in tmp_path.iterdir()) == locks
    assert [(tmp_path / n).read_bytes() for n in locks] == [b"", b""]


def _signal_synth_while_it_writes(tmp_path, send) -> tuple[subprocess.Popen, list[str]]:
    """``gclsampler synth phi2`` in its own session, ``send(process)`` once its output is being
    written; the ended process and its stderr lines. Skips if synth finished first."""
    out = tmp_path / "phi2"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GCLSAMPLER_DEBUG": ""}
    entry = "import sys; from gclsampler.cli import main; sys.exit(main())"  # the console script's body
    p = subprocess.Popen([sys.executable, "-c", entry, "synth", "phi2", "--out", str(out), "--quiet"],
                         env=env, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=_sighup_default)  # as from a terminal, even if pytest runs under nohup
    deadline, writing = time.time() + 120, False
    while not writing and p.poll() is None and time.time() < deadline:
        writing = bool(list(tmp_path.glob(".phi2.tmp-*")))
        time.sleep(0.05)
    # phi2 takes a minute to synthesize, so its temp dir is seen first; a renamed temp dir (or a
    # crash) fails here instead of letting the run finish and the test skip below
    assert writing, (list(tmp_path.iterdir()), p.poll())
    time.sleep(0.5)
    try:
        send(p)
    except ProcessLookupError:  # it already exited: its status and stderr say why
        pass
    _, err = p.communicate(timeout=120)
    if p.returncode == 0:
        pytest.skip("synth finished before the signal")
    return p, [ln for ln in err.splitlines() if ln.strip()]


def _assert_session_ended(p: subprocess.Popen) -> None:
    """No process of ``p``'s session is left (its workers included); multiprocessing's resource
    tracker takes a moment to go."""
    deadline, alive = time.time() + 30, True
    while alive and time.time() < deadline:
        try:
            os.killpg(p.pid, 0)
            time.sleep(0.1)
        except ProcessLookupError:
            alive = False
    if alive:
        os.killpg(p.pid, signal.SIGKILL)
    assert not alive, "a process of the signalled command is still running"


def test_sigterm_during_synth_leaves_nothing(tmp_path):
    """SIGTERM to the main process alone (``kill PID``; a batch scheduler at the time limit):
    Python's default ended it on the spot, leaving the ``.phi2.tmp-*`` directory (removed only
    by a later build on the same host) and its spawned timing worker blocked for good on the
    call queue. Now it cleans up like a Ctrl-C: one line, exit 143, nothing left on disk but the two released lock files beside --out, and
    no process of its session left running."""
    p, lines = _signal_synth_while_it_writes(tmp_path, lambda p: p.send_signal(signal.SIGTERM))
    assert p.returncode == 143 and lines == ["gclsampler: terminated"], lines
    _only_locks_left(tmp_path)
    _assert_session_ended(p)


def test_sighup_during_synth_leaves_nothing(tmp_path):
    """The terminal or SSH session goes away: SIGHUP to the whole process group, workers
    included. Python's default ended the process on the spot, leaving the ``.phi2.tmp-*``
    directory for a later build to remove. Now it cleans up like a SIGTERM: one line, exit 129,
    nothing left on disk but the two released lock files, no process of its session left running."""
    p, lines = _signal_synth_while_it_writes(tmp_path, lambda p: os.killpg(p.pid, signal.SIGHUP))
    assert p.returncode == 129 and lines == ["gclsampler: hung up"], lines
    _only_locks_left(tmp_path)
    _assert_session_ended(p)


def test_sighup_raises_only_where_it_would_have_killed(sighup_default):
    """``HungUp`` is a ``Terminated``, so every clean-up for those runs for it too; a SIGHUP that
    ``nohup`` ignored before the command started stays ignored."""
    from gclsampler._interrupt import HungUp, Terminated, termination_signals_raise

    with pytest.raises(HungUp) as exc:
        with termination_signals_raise():
            os.kill(os.getpid(), signal.SIGHUP)
            _spin()
    assert isinstance(exc.value, Terminated) and signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with termination_signals_raise():
        os.kill(os.getpid(), signal.SIGHUP)
        _spin()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def test_sigterm_raises_only_where_it_would_have_killed():
    """``Terminated`` is an interrupt, so every Ctrl-C clean-up runs for it too. A SIGTERM
    handler someone else installed (submitit's, in a SLURM job) is left in place, and the
    default action comes back after the block."""
    from gclsampler._interrupt import Terminated, termination_signals_raise

    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with pytest.raises(Terminated) as exc:
        with termination_signals_raise():
            os.kill(os.getpid(), signal.SIGTERM)
            _spin()
    assert isinstance(exc.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    seen = []

    def theirs(signum, frame):
        seen.append(signum)

    old = signal.signal(signal.SIGTERM, theirs)
    try:
        with termination_signals_raise():
            os.kill(os.getpid(), signal.SIGTERM)
            _spin()
        assert seen == [signal.SIGTERM] and signal.getsignal(signal.SIGTERM) is theirs
    finally:
        signal.signal(signal.SIGTERM, old)


@pytest.mark.parametrize("sig,status,word", [("SIGTERM", 143, "terminated"), ("SIGHUP", 129, "hung up")])
def test_sigterm_and_sighup_are_one_line_and_their_exit_status(capsys, sighup_default, sig, status, word):
    from gclsampler._guard import exit_on_interrupt, run_guarded

    signum = getattr(signal, sig)

    def ended():
        os.kill(os.getpid(), signum)
        _spin()

    assert run_guarded(ended, "gclsampler") == status
    _line(capsys, f"gclsampler: {word}")
    assert signal.getsignal(signum) is signal.SIG_DFL
    with pytest.raises(SystemExit) as e:
        with exit_on_interrupt("train.py"):  # the entry scripts' slow imports
            ended()
    assert e.value.code == status
    _line(capsys, f"train.py: {word}")


def test_the_stop_line_on_a_gone_terminal_is_not_a_traceback(monkeypatch, sighup_default):
    """After a SIGHUP the terminal stderr wrote to may be closed: printing "hung up" then fails
    (EIO), and that failure turned the clean stop into a traceback and exit 1."""
    from gclsampler._guard import run_guarded

    class Gone:
        def write(self, text):
            raise OSError(5, "Input/output error")

        def flush(self):
            raise OSError(5, "Input/output error")

    def hung_up():
        monkeypatch.setattr(sys, "stderr", Gone())
        os.kill(os.getpid(), signal.SIGHUP)
        _spin()

    assert run_guarded(hung_up, "gclsampler") == 129


def _sigterm_disposition() -> str:
    return "default" if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else "handled"


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_pool_workers_end_on_sigterm(start):
    """A forked worker inherits the main process's SIGTERM handler, which would turn the pool's
    own terminate() into an exception inside a task (the worker then waits for more work)."""
    from gclsampler._interrupt import process_pool, termination_signals_raise

    with termination_signals_raise(), process_pool(2, start) as pool:
        assert [pool.submit(_sigterm_disposition).result() for _ in range(2)] == ["default"] * 2


def _sigint_disposition() -> str:
    import signal

    return "ignored" if signal.getsignal(signal.SIGINT) is signal.SIG_IGN else "raises"


def _sighup_disposition() -> str:
    import signal

    return "ignored" if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN else "not ignored"


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the tracker's signal mask from /proc")
def test_a_spawn_pool_starts_the_resource_tracker_deaf_to_sighup(tmp_path):
    """multiprocessing's resource tracker ignores SIGINT and SIGTERM but died by the terminal's
    SIGHUP: relaunched during the clean-up, it left a warning and a traceback on stderr, and some
    hung-up synth runs ended in a segmentation fault. A fresh interpreter, as the tracker is
    started once per process."""
    probe = (
        "import signal\n"
        "from multiprocessing import resource_tracker\n"
        "from gclsampler._interrupt import process_pool, termination_signals_raise\n"
        "with termination_signals_raise(), process_pool(1, 'spawn') as pool:\n"
        "    pool.submit(abs, -1).result()\n"
        "    pid = resource_tracker._resource_tracker._pid\n"
        "    status = open(f'/proc/{pid}/status').read()\n"
        "    blocked = int(status.split('SigBlk:')[1].split()[0], 16)\n"
        "    print(bool(blocked >> (signal.SIGHUP - 1) & 1), signal.pthread_sigmask(signal.SIG_BLOCK, []) == set())\n")
    r = _run(["-c", probe], cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "True True\n"), r.stderr  # and this process's mask is back


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_pool_workers_leave_sighup_to_the_main_process(start, sighup_default):
    """A terminal that goes away sends SIGHUP to the whole group; a worker that died by it could
    break the pool under a task the main process waits on, a crash instead of "hung up"."""
    from gclsampler._interrupt import process_pool, termination_signals_raise

    with termination_signals_raise(), process_pool(2, start) as pool:
        assert [pool.submit(_sighup_disposition).result() for _ in range(2)] == ["ignored"] * 2


def _die() -> None:
    os.kill(os.getpid(), 9)


def test_a_pool_worker_killed_by_the_oom_killer_is_one_line(capsys):
    """A SIGKILLed worker (the out-of-memory killer, `kill -9`) broke the pool: synth printed a
    20-line BrokenProcessPool traceback and exited 1, as for a bug."""
    from gclsampler._guard import call_guarded
    from gclsampler._interrupt import process_pool

    def work():
        with process_pool(1, "fork") as pool:
            pool.submit(_die).result()

    with pytest.raises(SystemExit) as info:
        call_guarded(work, "gclsampler")
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "gclsampler: error: a worker process ended abruptly (killed: by the out-of-memory killer" in err


def _sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_pool_workers_leave_ctrl_c_to_the_main_process(start):
    """A worker that took the terminal's Ctrl-C itself either reported it as its task's result
    and waited for more work, or died halfway through reading the call queue; ``gclsampler
    synth`` then hung at exit about one Ctrl-C in ten. Workers ignore SIGINT; the main process
    stops them (next test)."""
    from gclsampler._interrupt import process_pool

    with process_pool(2, start) as pool:
        assert [pool.submit(_sigint_disposition).result() for _ in range(2)] == ["ignored"] * 2


def test_an_interrupted_pool_stops_its_running_workers_at_once():
    """On Ctrl-C (or any error) in the block, the work in flight is abandoned: the workers are
    terminated instead of being waited for (a graph build of a complete trace takes seconds,
    a timing window longer), and none is left behind."""
    import multiprocessing as mp
    import time

    from gclsampler._interrupt import process_pool

    before = {p.pid for p in mp.active_children()}
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with process_pool(2, "fork") as pool:
            running = [pool.submit(_sleep, 600) for _ in range(2)]
            deadline = time.monotonic() + 60
            while not all(f.running() for f in running) and time.monotonic() < deadline:
                time.sleep(0.01)
            raise KeyboardInterrupt
    assert time.monotonic() - t0 < 300  # a wait for the tasks would take 600 s
    assert {p.pid for p in mp.active_children()} == before


def test_non_utf8_kernel_names_are_located_errors(wl_copy, tmp_path, capsys):
    """A non-UTF-8 kernel name used to become a different (replacement-character) name."""
    prof = tmp_path / "profile.csv"
    prof.write_bytes(b'invocation,kernel_name,grid,block,time_ns,cycles\n0,k\xff,"(1,1,1)","(1,1,1)",5,5\n')
    assert main(["profile", "info", str(prof)]) == 2
    _line(capsys, f"{prof}:2: not UTF-8 text")
    trace = wl_copy / "kernel-1.traceg"
    trace.write_bytes(trace.read_bytes().replace(b"-kernel name = ", b"-kernel name = \xff", 1))
    assert main(["trace", "info", str(wl_copy)]) == 2
    _line(capsys, "kernel-1.traceg:1: -kernel name: not UTF-8 text")


def test_hydra_tasks_leave_through_system_exit(capsys):
    """Hydra's job runner adds its own line to any Exception but lets SystemExit through, so the
    train.py/evaluate.py tasks turn errors into SystemExit themselves."""
    from gclsampler._guard import call_guarded
    from gclsampler.errors import GclError

    def bad():
        raise GclError("wl/profile.csv:3: kernel_name: mismatch")

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as e:
        call_guarded(bad, "train.py")
    assert e.value.code == 2
    _line(capsys, "train.py: error: wl/profile.csv:3: kernel_name: mismatch")
    with pytest.raises(SystemExit) as e:
        call_guarded(interrupted, "train.py")
    assert e.value.code == 130
    _line(capsys, "train.py: interrupted")
    assert call_guarded(lambda: 0.25, "train.py") == 0.25  # the sweep's objective passes through


def test_ctrl_c_while_a_group_imports_torch(monkeypatch, capsys):
    """Building the graph group's parser imports torch (seconds); Ctrl-C there is one line too."""
    from gclsampler import cli

    def slow_import(only=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", slow_import)
    assert cli.main(["graph", "build", "wl"]) == 130
    _line(capsys, "gclsampler: interrupted")


@pytest.mark.parametrize("script,needles", [
    ("train.py", ["train.py: gclsampler's pipeline for one workload", "python train.py debug=default workload=3mm",
                  "== Configuration groups =="]),
    ("evaluate.py", ["evaluate.py: every sampling method", "'data_dir=workloads/seed${seed}'", "suite: full, quick"]),
])
def test_help_explains_the_script(tmp_path, script, needles):
    """--help is Hydra's group/config listing under a header that says what the script does and
    how it is run (the `${seed}` of the multirun example must survive both OmegaConf and the
    help template's $-substitution)."""
    r = _run([str(ROOT / script), "--help"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for needle in needles:
        assert needle in r.stdout, needle
    assert not any(tmp_path.iterdir())  # --help writes nothing


def _spin():
    for _ in range(200):  # a signal handler runs between bytecodes
        time.sleep(0.001)


def test_ctrl_c_swallowed_by_an_import_then_another_error_is_the_interrupt(capsys):
    """exit_on_interrupt (entry scripts' slow imports): a library catches the KeyboardInterrupt and
    fails later with an unrelated error; that is still Ctrl-C, one line and exit 130."""
    from gclsampler._guard import exit_on_interrupt

    with pytest.raises(SystemExit) as exc:
        with exit_on_interrupt("train.py"):
            try:
                os.kill(os.getpid(), signal.SIGINT)
                _spin()
            except KeyboardInterrupt:
                pass
            raise AttributeError("module 'numpy' has no attribute 'linalg'")
    assert exc.value.code == 130
    _line(capsys, "train.py: interrupted")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_options_are_not_taken_by_abbreviation(tmp_path):
    """``stem --eps 0.1`` ran as --epsilon: an abbreviation breaks once a later option makes it
    ambiguous, and a typo of one option can read as another."""
    import pandas as pd

    prof = tmp_path / "profile.csv"
    pd.DataFrame({"invocation": [0, 1], "kernel_name": ["k", "k"], "grid": ["(1,1,1)"] * 2, "block": ["(32,1,1)"] * 2,
                  "time_ns": [1.0, 2.0], "cycles": [1.0, 2.0]}).to_csv(prof, index=False)
    r = _run(["-m", "gclsampler", "stem", str(prof), "--out", str(tmp_path / "p.json"), "--eps", "0.1"], cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "unrecognized arguments: --eps 0.1" in lines[0], r.stderr
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("argv,command", [
    (["stem", "profile.csv", "--out", "p.json", "--eps", "0.1"], "gclsampler stem"),
    (["plan", "reconstruct", "plan.json", "log.txt", "--formt", "csv"], "gclsampler plan reconstruct"),
    (["sample", "pka", "wl", "--out", "p.json", "--bogus"], "gclsampler sample"),
])
def test_an_unknown_option_is_reported_by_its_command(argv, command, capsys):
    """The top-level parser reported a subcommand's unknown option as its own ("gclsampler: error:
    ... (see `gclsampler --help`)"), pointing at a help page that does not list the command's options."""
    from gclsampler.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    unknown = " ".join(argv[argv.index(next(a for a in argv if a in ("--eps", "--formt", "--bogus"))):])
    assert info.value.code == 2 and err == (f"{command}: error: unrecognized arguments: {unknown} "
                                            f"(see `{command} --help`)\n"), err


def test_ctrl_c_inside_import_torch_prints_the_one_line_only(tmp_path):
    """A Ctrl-C in the middle of ``import torch`` (after its FakeTensor module registered an atexit
    dump, before torch set up its loggers), with the root logger at INFO as in a Hydra task: the
    dump's INFO lines printed after ``PROG: interrupted``."""
    script = tmp_path / "interrupted_import.py"
    script.write_text(
        "import importlib.abc, logging, sys\n"
        "logging.basicConfig(level=logging.INFO)\n"
        "class Stop(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'torch.func':  # imported after torch._subclasses.fake_tensor, before torch's log setup\n"
        "            assert 'torch._subclasses.fake_tensor' in sys.modules  # else pick a later module\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Stop())\n"
        "from gclsampler._guard import exit_on_interrupt\n"
        "with exit_on_interrupt('prog'):\n"
        "    import torch\n")
    r = _run([str(script)], cwd=tmp_path)
    assert r.returncode == 130 and r.stderr.strip().splitlines() == ["prog: interrupted"], r.stderr


def test_a_spawned_worker_leaves_the_interrupt_to_the_main_process(tmp_path):
    """A spawned worker imports the entry script again (as ``__mp_main__``), slow imports and
    all, and a Ctrl-C then reached it too: "train.py: interrupted" came twice (2 runs in 12).
    The worker leaves with the same status and prints nothing."""
    script = tmp_path / "entry.py"
    script.write_text(
        "import multiprocessing as mp, sys\n"
        "from gclsampler._guard import exit_on_interrupt\n"
        "def work():\n"
        "    with exit_on_interrupt('prog'):\n"
        "        raise KeyboardInterrupt\n"
        "if __name__ == '__main__':\n"
        "    p = mp.get_context('spawn').Process(target=work)\n"
        "    p.start(); p.join()\n"
        "    print(p.exitcode)\n"
        "    work()\n")
    r = _run([str(script)], cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (130, "130\n", "prog: interrupted\n")


@pytest.mark.parametrize("sig,status,word", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")])
def test_a_ctrl_c_swallowed_by_a_ctypes_callback_prints_one_line(tmp_path, sig, status, word):
    """CI saw it: SIGINT landing while numba compiles runs the handler inside llvmlite's ctypes
    callback; ctypes printed "Exception ignored ... KeyboardInterrupt" with its traceback above
    the one interrupted line. A ctypes callback stands in for llvmlite's here. A SIGTERM there
    was swallowed the same way, and the process went on as if it had not come."""
    script = tmp_path / "cb.py"
    script.write_text(
        "import ctypes, os, signal, sys\n"
        "from gclsampler._guard import exit_on_interrupt\n"
        "CB = ctypes.CFUNCTYPE(None)\n"
        "def body():\n"
        f"    os.kill(os.getpid(), signal.{sig})\n"
        "    for _ in range(10**6):\n"
        "        pass\n"
        "cb = CB(body)\n"
        "with exit_on_interrupt('prog'):\n"
        "    cb()\n"
        "    sys.stdout.write('went on\\n')\n"
        "    raise RuntimeError('unrelated error after the swallowed Ctrl-C')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GCLSAMPLER_DEBUG": ""}
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == status, p.stderr
    assert p.stderr.splitlines() == [f"prog: {word}"], p.stderr


def test_an_unraisable_error_that_is_not_a_ctrl_c_is_still_printed():
    """Only the recorded Ctrl-C is silenced; another swallowed error keeps its report."""
    import ctypes

    from gclsampler._interrupt import interrupts_recorded

    seen = []
    old = sys.unraisablehook
    hook = seen.append
    sys.unraisablehook = hook
    try:
        def body():
            raise ValueError("from a callback")

        with interrupts_recorded() as hit:
            ctypes.CFUNCTYPE(None)(body)()
        assert hit == [] and [type(u.exc_value) for u in seen] == [ValueError]
        assert sys.unraisablehook is hook
    finally:
        sys.unraisablehook = old


def test_recording_blocks_nest():
    """The trace parser's warm-up records Ctrl-C inside an entry script's block: the inner block
    used to see the outer's handler, install nothing, and miss a Ctrl-C that numba swallowed."""
    from gclsampler._interrupt import interrupts_recorded

    hook = sys.unraisablehook
    with interrupts_recorded() as outer:
        with pytest.raises(KeyboardInterrupt):
            with interrupts_recorded() as inner:
                os.kill(os.getpid(), signal.SIGINT)
                _spin()
        assert inner == [signal.SIGINT] and outer == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and sys.unraisablehook is hook


def test_a_sigterm_is_recorded_only_where_it_raises():
    """Under ``termination_signals_raise`` (every entry point) a SIGTERM is recorded like a Ctrl-C, nested
    blocks included, so one swallowed by numba's ctypes callbacks still stops the work; where
    SIGTERM keeps its default action (a library caller), the blocks leave it alone."""
    from gclsampler._interrupt import Terminated, interrupts_recorded, termination_signals_raise

    with termination_signals_raise():
        raising = signal.getsignal(signal.SIGTERM)
        with interrupts_recorded() as outer:
            with pytest.raises(Terminated):
                with interrupts_recorded() as inner:
                    os.kill(os.getpid(), signal.SIGTERM)
                    _spin()
            assert inner == [signal.SIGTERM] and outer == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is raising
    with interrupts_recorded():
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_interrupt_inside_a_deferred_block_is_raised_after_it():
    """What must not stop halfway (swapping an output in) finishes first; the interrupt comes
    after it, through the handler that was in place, so an enclosing block still records it."""
    from gclsampler._interrupt import Terminated, interrupts_deferred, interrupts_recorded, termination_signals_raise

    done = []
    with pytest.raises(KeyboardInterrupt) as exc:
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            _spin()
            done.append("swapped")
    assert done == ["swapped"] and type(exc.value) is KeyboardInterrupt
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with termination_signals_raise(), interrupts_recorded() as hit:
        with pytest.raises(Terminated):
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                _spin()
                done.append("swapped again")
        assert hit == [signal.SIGTERM]
    assert done == ["swapped", "swapped again"] and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with interrupts_deferred():  # nothing held: nothing raised
        done.append("quiet")
    assert done[-1] == "quiet"


def test_an_interrupt_held_while_the_block_fails_is_not_dropped():
    """A Ctrl-C held while the swap failed with an OSError was lost with it: a caller that goes
    on after an error (the next workload of a sweep) carried on. The interrupt now comes, the
    error as its context."""
    from gclsampler._interrupt import interrupts_deferred

    with pytest.raises(KeyboardInterrupt) as exc:
        try:
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                _spin()
                raise OSError("second rename failed")
        except OSError:
            pass  # what a caller that goes on after a failed output does
    assert isinstance(exc.value.__context__, OSError)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(OSError):  # nothing held: the error alone
        with interrupts_deferred():
            raise OSError("second rename failed")


def test_an_ignored_ctrl_c_stays_ignored():
    """A job started with SIGINT ignored (`cmd &` in a script) must not become interruptible."""
    from gclsampler._interrupt import interrupts_recorded

    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_recorded() as hit:
            os.kill(os.getpid(), signal.SIGINT)
            _spin()
        assert hit == [] and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("argv, needle", [
    (["stem", "p.csv", "--epsilon", "abc", "--out", "x.json"], "gclsampler stem: error: argument --epsilon: invalid float"),
    (["trace", "info", "--top", "abc", "wl"], "gclsampler trace info: error: argument --top: invalid int"),
    (["plan", "reconstruct", "--format", "xml", "p.json", "r.csv"], "gclsampler plan reconstruct: error: argument --format"),
    (["bogus"], "gclsampler: error: argument COMMAND: invalid choice: 'bogus'"),
])
def test_usage_errors_are_one_line_with_exit_2(capsys, argv, needle):
    """argparse's own errors printed the whole usage block before the reason; now they follow
    the policy's one line, and point at --help for the usage."""
    from gclsampler.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith(needle) and "--help`)" in lines[0], err


@pytest.mark.parametrize("interrupt,status,word", [("KeyboardInterrupt", 130, "interrupted"),
                                                    ("Terminated", 143, "terminated")])
def test_an_error_caused_by_ctrl_c_is_the_interrupt(capsys, interrupt, status, word):
    """Ctrl-C while numba unpickles a cached kernel comes out as SystemError ("returned a result
    with an exception set") whose cause is the KeyboardInterrupt: it was a traceback, exit 1.
    A SIGTERM there (``Terminated``) is found the same way. An error with no interrupt behind it
    is still a bug's traceback."""
    from gclsampler._guard import call_guarded
    from gclsampler._interrupt import Terminated

    raised = {"KeyboardInterrupt": KeyboardInterrupt, "Terminated": Terminated}[interrupt]

    def numba_load():
        try:
            raise raised
        except KeyboardInterrupt as ki:
            raise SystemError("<function _numba_unpickle> returned a result with an exception set") from ki

    def dispatcher():
        try:
            numba_load()
        except SystemError as inner:
            raise SystemError("CPUDispatcher(value_rows) returned a result with an exception set") from inner

    with pytest.raises(SystemExit) as e:
        call_guarded(dispatcher, "gclsampler")
    assert e.value.code == status
    _line(capsys, f"gclsampler: {word}")
    with pytest.raises(SystemError):
        call_guarded(lambda: (_ for _ in ()).throw(SystemError("a real bug")), "gclsampler")


def test_synth_option_errors_are_one_line(tmp_path, capsys):
    """synth parses its options after the workload itself: argparse's usage block came first,
    then a second line that only repeated the arguments."""
    from gclsampler.cli import main

    assert main(["synth", "phi2", "--out", str(tmp_path / "x"), "--jobs", "abc", "--quiet"]) == 2
    _line(capsys, "gclsampler: error: synth: argument --jobs: invalid int value: 'abc'")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("argv", [["bfs", "--help"], ["phi2", "--out", "X", "layers=1", "-h"]])
def test_synth_help_after_the_workload_is_help(tmp_path, capsys, argv):
    """The workload's tail is parsed without a help option: `synth bfs --help` was
    "unrecognized arguments: --help", exit 2."""
    from gclsampler.cli import main

    argv = [str(tmp_path / "x") if a == "X" else a for a in argv]
    assert main(["synth", *argv]) == 0
    got = capsys.readouterr()
    assert got.out.startswith("usage: gclsampler synth WORKLOAD --out DIR") and "--no-rerun" in got.out
    assert got.err == "" and not (tmp_path / "x").exists()


@pytest.mark.parametrize("status", [0, 2, 130])
def test_the_console_entry_flushes_and_exits_with_mains_status(status):
    """An error exit skips the interpreter's teardown (pyarrow's can abort there, exit 134
    instead of 2): whatever was printed must still reach a pipe, and the status be main's."""
    code = ("import atexit, gclsampler.cli as c\n"
            "atexit.register(lambda: print('teardown ran'))\n"
            f"c.main = lambda: (print('report so far'), {status})[1]\n"
            "c.console()\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == status, r.stderr
    expected = ["report so far"] + ([] if status == 2 else ["teardown ran"])
    assert r.stdout.splitlines() == expected


@pytest.mark.parametrize("argv", [
    ["stem", "{prof}", "--out", ""],
    ["sample", "pka", "{wl}", "--out", ""],
    ["profile", "import", "{prof}", "--out", ""],
    ["plan", "export-accelsim", "{plan}", "{wl}", ""],
    ["trace", "group", "{wl}", ""],
    ["trace", "info", ""],
    ["validate", ""],
    ["compare", "", "--out", "c"],
])
def test_an_empty_path_is_refused_not_read_as_the_working_directory(argv, tmp_path, monkeypatch, capsys):
    """``Path("")`` is ``.``: ``stem P --out "$OUT"`` with OUT unset wrote its plan as ``.``, and an
    empty input path read whatever the working directory held."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    names = {"prof": str(tmp_path / "profile.csv"), "wl": str(tmp_path / "wl"), "plan": str(tmp_path / "plan.json")}
    with pytest.raises(SystemExit) as exc:
        main([a.format(**names) for a in argv])
    assert exc.value.code == 2
    line = _line(capsys, "empty path")
    assert line.startswith(f"gclsampler {argv[0]}") and "argument" in line
    assert list(cwd.iterdir()) == []
