"""Issue 14, class 1: no command destroys what it did not create, and outputs follow the umask.

Each test gives a command an output path that holds the user's data (or is one of the
command's inputs) and checks: exit 2, one line naming the path, and every byte of the
user's files unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from gclsampler._safe_out import OutputError, claim_dir
from gclsampler.cli import main


def _snapshot(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root`` (or of ``root`` itself)."""
    if root.is_file():
        return {".": hashlib.sha256(root.read_bytes()).hexdigest()}
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _one_line_error(capsys, *needles: str) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_synth_refuses_a_directory_it_did_not_write(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work\n")
    before = _snapshot(out)
    assert main(["synth", "backprop", "--out", str(out), "--quiet", "--jobs", "1"]) == 2
    _one_line_error(capsys, str(out), "not written by `gclsampler synth`")
    assert _snapshot(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".mine.")]  # no temp debris


@pytest.mark.parametrize("marker, why", [({"command": "trace group"}, "it holds `gclsampler trace group`'s output"),
                                         ({"command": "evaluate"}, "it holds `python evaluate.py`'s output"),
                                         ({"command": "mine"}, "no .gclsampler-output marker"), (None, "no .gclsampler-output marker")])
def test_a_refusal_names_the_command_whose_output_is_there(tmp_path, marker, why):
    """It said "no marker" when another command's marker was there, which sent users looking
    for a file that existed."""
    from gclsampler._safe_out import check_out_dir

    out = tmp_path / "o"
    out.mkdir()
    (out / "kernelslist.g").write_text("kernel-1.traceg\n")
    if marker is not None:
        (out / ".gclsampler-output").write_text(json.dumps(marker) + "\n")
    with pytest.raises(OutputError) as e:
        check_out_dir(out, "synth")
    assert str(e.value) == (f"{out}: directory exists and was not written by `gclsampler synth` ({why}); not "
                            "replaced (remove it yourself or choose another path)")


def test_synth_refuses_a_regular_file_and_a_path_under_one(tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("keep\n")
    assert main(["synth", "backprop", "--out", str(f), "--quiet", "--jobs", "1"]) == 2
    _one_line_error(capsys, str(f), "is a file")
    assert main(["synth", "backprop", "--out", str(f / "sub"), "--quiet", "--jobs", "1"]) == 2
    _one_line_error(capsys, "notes.txt is a file, not a directory")
    assert f.read_text() == "keep\n"


def test_synth_replaces_its_own_output(tmp_path, capsys):
    out = tmp_path / "bp"
    assert main(["synth", "backprop", "--out", str(out), "--quiet", "--jobs", "1"]) == 0
    marker = json.loads((out / ".gclsampler-output").read_text())
    # the traces as one pattern (a workload of 10^5 launches would list 10^5 names), the rest by name
    named = sorted(p.name for p in out.iterdir() if p.name != ".gclsampler-output" and not p.name.startswith("kernel-"))
    assert marker["command"] == "synth" and marker["wrote"] == [*named, "kernel-<id>.traceg*"]
    assert "kernelslist.g" in named and "profile.csv" in named
    (out / ".graph-cache").mkdir()  # derived from the traces: replaced with them
    (out / "mine.txt").write_text("the user's\n")  # not synth's: refused, never deleted
    assert main(["synth", "backprop", "--out", str(out), "--quiet", "--jobs", "1", "--seed", "1"]) == 2
    _one_line_error(capsys, str(out / "mine.txt"), "not written by `gclsampler synth`")
    assert (out / "mine.txt").read_text() == "the user's\n"
    (out / "mine.txt").unlink()
    assert main(["synth", "backprop", "--out", str(out), "--quiet", "--jobs", "1", "--seed", "1"]) == 0
    assert not (out / ".graph-cache").exists() and json.loads((out / "workload.json").read_text())["seed"] == 1


def test_export_into_its_own_source_is_refused(wl_copy, tmp_path, capsys):
    before = _snapshot(wl_copy)
    for dst in (wl_copy, wl_copy / "accelsim"):
        assert main(["trace", "export-accelsim", str(wl_copy), str(dst)]) == 2
        _one_line_error(capsys, str(dst), "input")
    assert _snapshot(wl_copy) == before


def test_export_refuses_a_foreign_directory_and_replaces_its_own(wl_copy, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.csv").write_text("1,2\n")
    assert main(["trace", "export-accelsim", str(wl_copy), str(other)]) == 2
    _one_line_error(capsys, str(other), "not written by")
    assert (other / "data.csv").read_text() == "1,2\n"
    out = tmp_path / "as"
    assert main(["trace", "export-accelsim", str(wl_copy), str(out), "--invocations", "0-3"]) == 0
    assert main(["trace", "export-accelsim", str(wl_copy), str(out), "--invocations", "1"]) == 0
    # replaced as a whole: no trace of the first export is left
    assert sorted(p.name for p in out.glob("kernel-*")) == ["kernel-2.traceg"]


def test_plan_export_into_the_workload_is_refused(wl_copy, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    assert main(["sample", "pka", str(wl_copy), "--out", str(plan)]) == 0
    capsys.readouterr()
    before = _snapshot(wl_copy)
    assert main(["plan", "export-accelsim", str(plan), str(wl_copy), str(wl_copy)]) == 2
    _one_line_error(capsys, str(wl_copy), "input")
    assert _snapshot(wl_copy) == before


def test_file_outputs_never_replace_inputs_or_foreign_files(wl_copy, tmp_path, capsys):
    prof = wl_copy / "profile.csv"
    before = _snapshot(wl_copy)
    assert main(["stem", str(prof), "--out", str(prof)]) == 2
    _one_line_error(capsys, "profile.csv", "input")
    assert main(["sample", "pka", str(wl_copy), "--out", str(prof)]) == 2
    _one_line_error(capsys, "profile.csv", "input")
    assert main(["profile", "import", str(prof), "--out", str(prof)]) == 2
    _one_line_error(capsys, "profile.csv", "input")
    assert _snapshot(wl_copy) == before
    mine = tmp_path / "results.json"
    mine.write_text('{"my": "numbers"}\n')
    assert main(["stem", str(prof), "--out", str(mine)]) == 2
    _one_line_error(capsys, str(mine), "not a plan file")
    assert mine.read_text() == '{"my": "numbers"}\n'
    assert main(["stem", str(prof), "--out", str(tmp_path)]) == 2
    _one_line_error(capsys, str(tmp_path), "is a directory")


def test_profile_import_keeps_a_csv_that_only_starts_with_an_invocation_column(wl_copy, tmp_path, capsys):
    """A profile output replaces a table whose header is a profile's (invocation, kernel_name,
    ...); a user's table that merely starts with an ``invocation`` column is not one."""
    prof = wl_copy / "profile.csv"
    mine = tmp_path / "timings.csv"
    mine.write_text("invocation,my_notes\n0,slow\n")
    assert main(["profile", "import", str(prof), "--out", str(mine)]) == 2
    _one_line_error(capsys, str(mine), "not a profile file")
    assert mine.read_text() == "invocation,my_notes\n0,slow\n"
    earlier = tmp_path / "earlier.csv"
    earlier.write_text(prof.read_text().splitlines()[0] + "\n")  # a profile's header: replaced
    assert main(["profile", "import", str(prof), "--out", str(earlier)]) == 0
    from gclsampler.profile import read_profile

    assert len(read_profile(earlier)) == len(read_profile(prof)) > 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("argv", [["stem", "{prof}"], ["sample", "pka", "{wl}"], ["profile", "import", "{prof}"]])
def test_a_named_pipe_or_device_as_out_file_is_refused(wl_copy, tmp_path, capsys, argv):
    """Both read as empty, which passed for an empty output file: the rename replaced a device
    (as root, --out /dev/null destroyed the machine's) and looking inside a FIFO hung."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    args = [a.format(prof=wl_copy / "profile.csv", wl=wl_copy) for a in argv]
    assert main([*args, "--out", str(fifo)]) == 2
    _one_line_error(capsys, str(fifo), "is a named pipe (FIFO), not a regular file")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    if os.geteuid() == 0:  # only root may make a device node: a private twin of /dev/null
        null = tmp_path / "null"
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        assert main([*args, "--out", str(null)]) == 2
        _one_line_error(capsys, str(null), "is a character device")
        assert stat.S_ISCHR(null.stat().st_mode)


@pytest.mark.parametrize("argv", [["stem", "{prof}"], ["sample", "pka", "{wl}"], ["profile", "import", "{prof}"]])
def test_dash_as_out_file_is_refused_not_written_as_a_file_named_dash(wl_copy, tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    args = [a.format(prof=wl_copy / "profile.csv", wl=wl_copy) for a in argv]
    assert main([*args, "--out", "-"]) == 2
    _one_line_error(capsys, "'-'", "give a file name (standard output is not written to)")
    assert not (tmp_path / "-").exists()


def test_a_plan_replaces_an_earlier_plan(wl_copy, tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["stem", str(wl_copy / "profile.csv"), "--out", str(out)]) == 0
    assert main(["stem", str(wl_copy / "profile.csv"), "--out", str(out), "--epsilon", "0.2"]) == 0
    assert json.loads(out.read_text())["format"] == "gclsampler-plan/1"


def test_outputs_follow_the_umask(wl_copy, tmp_path, capsys):
    old = os.umask(0o022)
    try:
        plan = tmp_path / "p.json"
        assert main(["stem", str(wl_copy / "profile.csv"), "--out", str(plan)]) == 0
        assert stat.S_IMODE(plan.stat().st_mode) == 0o644
        out = tmp_path / "as"
        assert main(["trace", "export-accelsim", str(wl_copy), str(out), "--invocations", "0"]) == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o755
        assert stat.S_IMODE((out / "kernel-1.traceg").stat().st_mode) == 0o644
        os.umask(0o077)
        plan2 = tmp_path / "p2.json"
        assert main(["stem", str(wl_copy / "profile.csv"), "--out", str(plan2)]) == 0
        assert stat.S_IMODE(plan2.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_backwards_or_empty_invocation_ranges_are_errors(wl_copy, tmp_path, capsys):
    for spec, needle in (("5-2", "runs backwards"), ("x", "not an invocation id"), (",", "selects no invocations"),
                         ("-3", "not negative"), ("1_0", "'1_0' is not an invocation id"),
                         ("+1", "'+1' is not an invocation id"), ("1-+3", "not an invocation id"),
                         ("\u0661", "not an invocation id")):  # int() read 1_0 as 10, +1 as 1, Arabic-Indic 1 as 1
        out = tmp_path / f"as{abs(hash(spec))}"
        assert main(["trace", "export-accelsim", str(wl_copy), str(out), "--invocations", spec]) == 2, spec
        _one_line_error(capsys, needle)
        assert not out.exists()


def test_claim_dir_for_commands_that_write_into_a_directory(tmp_path):
    from gclsampler._safe_out import OutputError, claim_dir

    mine = tmp_path / "paper"
    mine.mkdir()
    (mine / "report.md").write_text("my report\n")
    with pytest.raises(OutputError, match="not written by `python evaluate.py`"):
        claim_dir(mine, "evaluate")
    assert (mine / "report.md").read_text() == "my report\n"
    out = claim_dir(tmp_path / "ev", "evaluate")
    (out / "report.md").write_text("ours\n")
    assert claim_dir(out, "evaluate") == out  # a later run may write there again


def test_evaluate_py_refuses_a_foreign_out_dir(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("x\n")
    r = subprocess.run([sys.executable, str(root / "evaluate.py"), f"out_dir={mine}",
                        f"hydra.run.dir={tmp_path / 'run'}"], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(root), "GCLSAMPLER_DEBUG": ""}, timeout=300)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and str(mine) in lines[0], r.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]


def test_evaluate_out_dir_is_its_run_dir(tiny_workload, tmp_path):
    """``out_dir=X``: Hydra's .hydra/ and evaluate.log go into X, nothing into the working
    directory (which may not be writable); a foreign X is refused naming ``out_dir``, not a
    ``hydra.run.dir`` the user never typed."""
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    data = tmp_path / "data"
    shutil.copytree(tiny_workload, data / "phi2")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(root), "GCLSAMPLER_DEBUG": ""}
    args = [sys.executable, str(root / "evaluate.py"), "suite=quick", "suite.workloads=[phi2]", f"data_dir={data}",
            "generate=false", "suite.trace_arch=ampere", "suite.archs=[ampere]", "suite.methods=[pka]", "plots=false"]
    r = subprocess.run(args + [f"out_dir={out}"], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert list(cwd.iterdir()) == []  # no outputs/evaluate/<suite>/<time>/ in the working directory
    assert (out / ".hydra" / "config.yaml").is_file() and (out / "evaluate.log").is_file()
    assert (out / "results.csv").is_file() and not (out / ".gclsampler-run.lock").exists()
    before = (out / ".hydra" / "overrides.yaml").read_bytes()
    for target in (out, tmp_path / "new"):  # a refused run: an earlier out_dir kept as it was, a new one not left
        r = subprocess.run(args + ["suite.workloads=[no_such]", f"out_dir={target}"], cwd=cwd, capture_output=True,
                           text=True, env=env, timeout=300)
        assert r.returncode == 2 and "no_such" in r.stderr, r.stderr
    assert (out / "results.csv").is_file() and (out / ".hydra" / "overrides.yaml").read_bytes() == before
    assert not (tmp_path / "new").exists() and list(cwd.iterdir()) == []
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("x\n")
    r = subprocess.run(args + [f"out_dir={mine}"], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"evaluate: error: out_dir: {mine}"), r.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]


def test_train_run_dir_with_someone_elses_files_is_refused(tiny_workload, tmp_path):
    """hydra.run.dir=<a directory with the user's files>: refused before anything is written;
    Hydra's own .hydra/ and train.log, and earlier runs (resume), are fine."""
    from hydra import compose, initialize_config_dir

    import gclsampler.config  # noqa: F401
    from gclsampler._safe_out import OutputError, claim_dir
    from gclsampler.pipeline import run

    root = Path(__file__).resolve().parents[1]
    with initialize_config_dir(config_dir=str(root / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["debug=default", "workload.name=phi2", f"workload.dir={tiny_workload}"])
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "model.pt").write_bytes(b"my model")
    with pytest.raises(OutputError, match="not written by `python train.py`"):
        run(cfg, out_dir=mine)
    assert [p.name for p in mine.iterdir()] == ["model.pt"] and (mine / "model.pt").read_bytes() == b"my model"
    hydra_dir = tmp_path / "hydra-run"
    (hydra_dir / ".hydra").mkdir(parents=True)
    (hydra_dir / "train.log").write_text("")
    assert claim_dir(hydra_dir, "train", ignore=(".hydra", "train.log")) == hydra_dir
    old_run = tmp_path / "old-run"
    old_run.mkdir()
    (old_run / "last.pt").write_bytes(b"")
    (old_run / "run.json").write_text(json.dumps({"workload": "phi2", "invocations": 3, "timings": {}}))
    assert claim_dir(old_run, "train") == old_run  # a run from before the marker can be resumed


@pytest.mark.parametrize("files", [
    {"run.json": '{"tool": "mytool"}', "report.md": "irreplaceable"},  # someone else's run.json
    {"last.pt": "someone's checkpoint", "config.yaml": "my: config"},
])
def test_a_run_json_or_last_pt_alone_does_not_make_a_train_run(tmp_path, files):
    """Any run.json or last.pt made a directory a train.py run from before the marker, and its
    report.md and config.yaml were overwritten."""
    d = tmp_path / "other"
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)
    with pytest.raises(OutputError, match="not written by `python train.py`"):
        claim_dir(d, "train")
    assert {p.name: p.read_text() for p in d.iterdir()} == files


def test_a_report_results_and_plans_do_not_make_an_evaluate_run(tmp_path):
    """Three names made a user's directory an evaluate.py run; its files were overwritten or deleted."""
    d = tmp_path / "proj"
    (d / "plans").mkdir(parents=True)
    (d / "report.md").write_text("my report")
    (d / "results.csv").write_text("a,b\n")
    (d / "plans" / "phd_plan.txt").write_text("my plan")
    with pytest.raises(OutputError, match="not written by `python evaluate.py`"):
        claim_dir(d, "evaluate")
    (d / "report.md").write_text("# gclsampler evaluation: suite `full`\n")
    (d / "results.csv").write_text("workload,method,arch\n")
    assert claim_dir(d, "evaluate") == d  # what an evaluate.py run from before the marker wrote


@pytest.mark.parametrize("script,command", [("train.py", "train"), ("evaluate.py", "evaluate")])
def test_hydra_run_dir_of_someone_else_is_refused_before_hydra_writes(tmp_path, script, command):
    """Hydra writes .hydra/ and the job log before the task runs; the RunDirGuard callback
    refuses first, so the user's own .hydra/config.yaml is not replaced and no log is added."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    mine = tmp_path / "mine"
    (mine / ".hydra").mkdir(parents=True)
    (mine / ".hydra" / "config.yaml").write_text("user: cfg\n")
    (mine / "keep.txt").write_text("x\n")
    r = subprocess.run([sys.executable, str(root / script), "debug=default" if command == "train" else "suite=quick",
                        f"hydra.run.dir={mine}"], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(root), "GCLSAMPLER_DEBUG": ""}, timeout=300)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    prog = {"train": "train.py", "evaluate": "evaluate"}[command]  # as each entry point's other errors
    assert lines[0].startswith(f"{prog}: error: hydra.run.dir: {mine}") and f"`python {script}`" in lines[0]
    assert sorted(p.name for p in mine.rglob("*")) == [".hydra", "config.yaml", "keep.txt"]
    assert (mine / ".hydra" / "config.yaml").read_text() == "user: cfg\n"


@pytest.mark.parametrize("script", ["train.py", "evaluate.py"])
def test_a_sweep_dir_of_someone_else_is_refused_before_hydra_writes(tmp_path, script):
    """-m wrote multirun.yaml over the user's file and the jobs' .hydra/ into the user's
    directory: only a single run's directory was checked."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "multirun.yaml").write_text("precious\n")
    (mine / "thesis.txt").write_text("x\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for sweep_dir, why in ((mine, "is not a Hydra sweep directory"), (fifo, "is a named pipe (FIFO)")):
        r = subprocess.run([sys.executable, str(root / script), "-m",
                            "debug=default" if script == "train.py" else "suite=quick", "seed=0,1",
                            f"hydra.sweep.dir={sweep_dir}"], cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(root), "GCLSAMPLER_DEBUG": ""}, timeout=300)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert f"error: hydra.sweep.dir: {sweep_dir}: " in lines[0] and why in lines[0], lines[0]
    assert sorted(p.name for p in mine.iterdir()) == ["multirun.yaml", "thesis.txt"]
    assert (mine / "multirun.yaml").read_text() == "precious\n"


def test_evaluate_run_or_out_dir_inside_a_workload_is_refused_before_anything_is_written(tmp_path):
    """An out_dir inside a workload was refused only after its marker was left there (and the
    workload's next synthesis then refused to replace it); Hydra's run dir was not checked."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    wl = tmp_path / "data" / "bfs"
    wl.mkdir(parents=True)
    (wl / "keep.txt").write_text("x\n")
    for key in ("hydra.run.dir", "out_dir"):
        # suite=full: quick's synth_params are the LLMs' knobs (layers), which bfs lacks
        r = subprocess.run([sys.executable, str(root / "evaluate.py"), "suite=full", "suite.workloads=[bfs]",
                            f"data_dir={tmp_path / 'data'}", f"{key}={wl / 'x'}",
                            *([f"hydra.run.dir={tmp_path / 'run'}"] if key == "out_dir" else [])],
                           cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(root), "GCLSAMPLER_DEBUG": ""}, timeout=300)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert f"{wl / 'x'}" in lines[0] and "inside" in lines[0], lines[0]
        assert sorted(p.name for p in wl.rglob("*")) == ["keep.txt"], key


@pytest.mark.parametrize("command, written", [
    ("trace export-accelsim", ["kernelslist.g", "kernel-1.traceg"]),
    ("synth", ["workload.json", "profile.csv", "kernelslist.g", "kernel-1.traceg.zst"]),
])
def test_a_marker_from_before_its_list_still_protects_what_the_user_added(tmp_path, command, written):
    """Markers written before they listed their command's outputs were trusted whole: a rerun
    deleted the user's NOTES.md (or the profile.csv imported into a trace group output)."""
    from gclsampler._safe_out import check_out_dir

    out = tmp_path / "out"
    out.mkdir()
    (out / ".gclsampler-output").write_text(json.dumps({"command": command}))
    for name in written:
        (out / name).write_text("x")
    assert check_out_dir(out, command) == out  # what the command itself writes
    (out / "NOTES.md").write_text("my notes")
    with pytest.raises(OutputError, match=r"NOTES.md: not written by `gclsampler " + command):
        check_out_dir(out, command)
    assert claim_dir(tmp_path / "run", "train") and (tmp_path / "run" / "x.txt").write_text("") == 0
    assert claim_dir(tmp_path / "run", "train")  # write-into commands list nothing and keep working


def test_a_users_copy_of_a_trace_is_not_taken_for_an_output(tmp_path):
    """The marker lists traces as a pattern: a user's kernel-2.traceg.bak beside the export's
    kernel-2.traceg matched it, and exporting again deleted it without a word."""
    from gclsampler._safe_out import check_out_dir
    from gclsampler.trace.reader import COMPRESSED_SUFFIXES

    out = tmp_path / "out"
    out.mkdir()
    (out / ".gclsampler-output").write_text(json.dumps({"command": "trace export-accelsim",
                                                         "wrote": ["kernelslist.g", "kernel-<id>.traceg*"]}))
    for name in ["kernelslist.g", "kernel-2.traceg", *(f"kernel-{i}.traceg{s}" for i, s in
                                                       enumerate(COMPRESSED_SUFFIXES, 3))]:
        (out / name).write_text("x")
    assert check_out_dir(out, "trace export-accelsim") == out  # every name a command writes
    (out / "kernel-2.traceg.bak").write_text("my copy")
    with pytest.raises(OutputError, match=r"kernel-2.traceg.bak: not written by `gclsampler trace export-accelsim`"):
        check_out_dir(out, "trace export-accelsim")


def test_runs_from_before_the_marker_are_recognised(tmp_path):
    from gclsampler._safe_out import written_by

    ev = tmp_path / "ev"
    (ev / "plans").mkdir(parents=True)
    (ev / "results.csv").write_text("workload,method,arch,plan_arch\n")
    (ev / "report.md").write_text("# gclsampler evaluation: suite `quick`\n")
    sim = tmp_path / "sim"
    sim.mkdir()
    (sim / "run.json").write_text('{"wall_s": 1, "simulated_now": 2, "launcher": "local"}')
    assert (written_by(ev), written_by(sim), written_by(tmp_path)) == ("evaluate", "simulate", None)


@pytest.mark.parametrize("earlier_run", [True, False])
def test_a_failed_run_keeps_the_earlier_hydra_record_and_logs_why(tmp_path, earlier_run):
    """Hydra rewrites .hydra/ before the task runs; when the task then fails, an earlier run's
    record of its config and overrides is put back, and the job log says why this run stopped."""
    import subprocess
    import sys

    from gclsampler._safe_out import claim_dir

    root = Path(__file__).resolve().parents[1]
    run = tmp_path / "run"
    record = {"config.yaml": "train:\n  lr: 0.0007\n", "hydra.yaml": "hydra: {}\n", "overrides.yaml": "- debug=default\n"}
    if earlier_run:
        claim_dir(run, "train")
        (run / ".hydra").mkdir()
        for name, text in record.items():
            (run / ".hydra" / name).write_text(text)
    missing = tmp_path / "no-such-workload"
    r = subprocess.run([sys.executable, str(root / "train.py"), "debug=default", "workload.name=x",
                        f"workload.dir={missing}", f"hydra.run.dir={run}"], cwd=tmp_path, capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(root), "GCLSAMPLER_DEBUG": ""}, timeout=300)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and str(missing) in lines[0], r.stderr
    assert lines[0] in (run / "train.log").read_text()
    if earlier_run:
        assert {p.name: p.read_text() for p in (run / ".hydra").iterdir()} == record
    else:  # a fresh run dir keeps Hydra's record of the failed run
        assert "workload.dir=" + str(missing) in (run / ".hydra" / "overrides.yaml").read_text()


def test_a_failed_sweep_job_keeps_its_earlier_hydra_record(tiny_workload, tmp_path):
    """``-m`` into an earlier sweep's directory: Hydra rewrites each job dir's .hydra/ before its
    task runs. The job that fails gets the earlier record back; the one that finished keeps its new
    one (its directory now holds its outputs)."""
    import shutil
    import subprocess
    import sys

    from gclsampler._safe_out import claim_dir

    root = Path(__file__).resolve().parents[1]
    wl = tmp_path / "phi2"  # training writes a graph cache into its workload: not into the shared fixture
    shutil.copytree(tiny_workload, wl)
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra:\n  mode: MULTIRUN\n")
    for job in ("0", "1"):
        claim_dir(sweep / job, "train")
        (sweep / job / ".hydra").mkdir()
        (sweep / job / ".hydra" / "overrides.yaml").write_text(f"- earlier_job={job}\n")
    missing = tmp_path / "no-traces"  # a directory: only the job that reads it finds no traces (a missing
    missing.mkdir()                  # directory is refused before the first job)
    r = subprocess.run([sys.executable, str(root / "train.py"), "-m", "debug=default", "workload.name=x",
                        f"workload.dir={wl},{missing}", f"hydra.sweep.dir={sweep}",
                        "hydra.sweep.subdir=${hydra.job.num}"], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(root), "GCLSAMPLER_DEBUG": ""}, timeout=600)
    assert r.returncode == 2 and str(missing) in r.stderr, r.stderr
    assert f"workload.dir={wl}" in (sweep / "0" / ".hydra" / "overrides.yaml").read_text()
    assert (sweep / "0" / "plan.json").is_file()
    assert (sweep / "1" / ".hydra" / "overrides.yaml").read_text() == "- earlier_job=1\n"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="flock is POSIX")
def test_a_run_dir_another_run_holds_is_refused_and_left_alone(tmp_path):
    """Hydra names run dirs by the second: two train.py runs started in one second wrote into one
    directory, one's .hydra record beside the other's config.yaml, their logs interleaved."""
    import subprocess
    import sys

    from gclsampler._safe_out import RUN_LOCK, hold_dir, release_dir

    root = Path(__file__).resolve().parents[1]
    run = tmp_path / "run"
    argv = [sys.executable, str(root / "train.py"), "debug=default", "workload.name=x",
            f"workload.dir={tmp_path / 'no-such-workload'}", f"hydra.run.dir={run}"]
    env = {**os.environ, "PYTHONPATH": str(root), "GCLSAMPLER_DEBUG": ""}
    assert hold_dir(run) is None  # the run that started first
    try:
        assert hold_dir(run) is not None  # a second open of the lock conflicts, in this process too
        r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert lines[0].startswith(f"train.py: error: hydra.run.dir: {run}: in use by another run")
        assert [p.name for p in run.iterdir()] == [RUN_LOCK]  # nothing of the refused run's
    finally:
        release_dir(run)
    assert list(run.iterdir()) == []
    # alone, it runs (here into its error: no such workload) and leaves no lock file behind
    r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2 and "no-such-workload" in r.stderr and RUN_LOCK not in os.listdir(run)
    from gclsampler._safe_out import check_out_dir

    check_out_dir(run, "train", ignore=(".hydra", "train.log"))


def test_a_killed_builds_temp_dir_is_removed_by_the_next_build(tmp_path):
    """``kill -9`` (or the OOM killer, or a scheduler's limit) skips replace_dir's cleanup, and the
    hidden ``.<name>.tmp-*`` it built in stayed beside the output for good (104 MB of grouped
    3mm traces in the audit). The next build of that output removes this host's temp directories
    whose process is gone; a live process's, another host's, and other names' stay."""
    import subprocess
    import sys

    from gclsampler._safe_out import _this_host, replace_dir

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    host = _this_host()
    out = tmp_path / "wl"
    stale = tmp_path / f".wl.tmp-{dead}@{host}-abcd1234"
    live = tmp_path / f".wl.tmp-{os.getpid()}@{host}-efgh5678"
    remote = tmp_path / f".wl.tmp-{dead}@0123456789ab-ijkl9012"  # another host, or another container
    other = tmp_path / f".wl2.tmp-{dead}@{host}-mnop3456"
    for d in (stale, live, remote, other):
        d.mkdir()
        (d / "kernel-1.traceg").write_text("partial")
    with replace_dir(out, "trace group") as tmp:
        assert tmp.name.startswith(f".wl.tmp-{os.getpid()}@{host}-")
        (tmp / "kernelslist.g").write_text("")
    assert not stale.exists()
    assert live.exists() and remote.exists() and other.exists()


def test_the_old_content_a_ctrl_c_left_is_removed_by_the_next_build(tmp_path):
    """The replaced content waits in ``.<name>.old-<pid>@<host>-XXXXXXXX`` while it is deleted; a Ctrl-C
    there (gigabytes of traces take seconds) left it beside the output for good. The next build
    removes it once its process is gone, like a killed build's temp directory."""
    import subprocess
    import sys

    from gclsampler._safe_out import _this_host, replace_dir

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    host = _this_host()
    out = tmp_path / "wl"
    stale = tmp_path / f".wl.old-{dead}@{host}-abcd1234"
    live = tmp_path / f".wl.old-{os.getpid()}@{host}-efgh5678"  # this process's own, from a stopped commit
    remote = tmp_path / f".wl.old-{dead}@0123456789ab-ijkl9012"
    for d in (stale, live, remote):
        d.mkdir()
        (d / "kernel-1.traceg").write_text("half deleted")
    for _ in range(2):  # the second build replaces the first: its own old content goes too
        with replace_dir(out, "trace group") as tmp:
            (tmp / "kernelslist.g").write_text("")
    assert not stale.exists()
    assert live.exists() and remote.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, remote.name, "wl"])


def test_a_symlinked_output_is_rebuilt_where_the_link_points(tmp_path, capsys):
    """Users link an output to a bigger disk. The rebuild used to swap a new directory in for
    the link itself (on the small disk) and leave the link behind as ``.<name>.old-<pid>``."""
    big = tmp_path / "scratch" / "bp"
    assert main(["synth", "backprop", "--out", str(big), "--quiet", "--jobs", "1"]) == 0
    link = tmp_path / "data" / "bp"
    link.parent.mkdir()
    link.symlink_to(big, target_is_directory=True)
    assert main(["synth", "backprop", "--out", str(link), "--quiet", "--jobs", "1", "--seed", "1"]) == 0
    assert link.is_symlink() and os.readlink(link) == str(big)
    assert json.loads((big / "workload.json").read_text())["seed"] == 1
    # no old copy; the workload's two lock files (kept by design) beside the target, where a
    # process naming it directly takes them too, and none beside the link
    assert sorted(p.name for p in big.parent.iterdir()) == [".bp.lock", ".bp.use.lock", "bp"]
    assert sorted(p.name for p in link.parent.iterdir()) == ["bp"]


def test_a_dangling_symlinked_output_is_refused_and_nothing_made_where_it_points(tmp_path, capsys):
    """A link whose target is gone (an unmounted scratch disk, a deleted directory) is not an
    output to rebuild: the build would recreate the target's directories on whatever disk holds
    the path now. It is one error naming the link, and the link stays as it was."""
    gone = tmp_path / "scratch" / "bp"
    link = tmp_path / "data" / "bp"
    link.parent.mkdir()
    link.symlink_to(gone, target_is_directory=True)
    assert main(["synth", "backprop", "--out", str(link), "--quiet", "--jobs", "1"]) == 2
    _one_line_error(capsys, str(link), "dangling symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(gone)
    assert not (tmp_path / "scratch").exists()
    assert sorted(p.name for p in link.parent.iterdir()) == ["bp"]


def test_a_plan_written_to_a_linked_file_updates_what_the_link_names(tmp_path, capsys):
    """``--out plan.json`` where plan.json links to a file elsewhere: that file gets the plan and
    the link stays; a dangling link is one error naming it, and nothing is made where it points
    (as for output directories above)."""
    wl = tmp_path / "bp"
    assert main(["synth", "backprop", "--out", str(wl), "--quiet", "--jobs", "1"]) == 0
    capsys.readouterr()
    target = tmp_path / "scratch" / "plan.json"
    target.parent.mkdir()
    assert main(["sample", "pka", str(wl), "--out", str(target)]) == 0
    first = target.read_text()
    target.write_text("")  # an empty file is replaceable, as before
    link = tmp_path / "plan.json"
    link.symlink_to(target)
    assert main(["sample", "pka", str(wl), "--out", str(link)]) == 0
    assert link.is_symlink() and target.read_text() == first
    gone = tmp_path / "gone" / "plan.json"
    dangling = tmp_path / "plan2.json"
    dangling.symlink_to(gone)
    capsys.readouterr()
    assert main(["sample", "pka", str(wl), "--out", str(dangling)]) == 2
    _one_line_error(capsys, str(dangling), "dangling symbolic link")
    assert dangling.is_symlink() and not (tmp_path / "gone").exists()


def test_a_failed_swap_puts_the_old_output_back(tmp_path, monkeypatch):
    """The old output is set aside, then the new one cannot be renamed in (an I/O error): the
    old one stayed aside as ``.wl.old-*``, which the next build of ``wl`` deletes, so neither
    output was left where the user looks. Now it goes back, and the error is reported."""
    from gclsampler import _safe_out
    from gclsampler._safe_out import replace_dir

    out = tmp_path / "wl"
    with replace_dir(out, "trace group") as tmp:
        (tmp / "kernelslist.g").write_text("old\n")
    real_replace = os.replace

    def second_rename_fails(src, dst):
        if Path(src).name.startswith(".wl.tmp-") and Path(dst) == out:
            raise OSError(5, "Input/output error", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(_safe_out.os, "replace", second_rename_fails)
    with pytest.raises(OSError):
        with replace_dir(out, "trace group") as tmp:
            (tmp / "kernelslist.g").write_text("new\n")
    assert (out / "kernelslist.g").read_text() == "old\n"
    assert not list(tmp_path.glob(".wl.old-*"))


def test_a_ctrl_c_during_the_swap_leaves_the_new_output(tmp_path, monkeypatch):
    """A rebuild swaps its temp directory in with two renames (old out aside, temp in). A Ctrl-C
    between them used to remove the temp directory (the new output) while the old one waited
    aside for deletion: neither was left. Now the swap finishes and the interrupt comes after."""
    import signal

    from gclsampler import _safe_out
    from gclsampler._safe_out import replace_dir

    out = tmp_path / "wl"
    with replace_dir(out, "trace group") as tmp:
        (tmp / "kernelslist.g").write_text("old\n")
    real_replace = os.replace
    calls = []

    def replace_then_ctrl_c(src, dst):  # os.replace is one function: the marker's atomic write calls it too
        real_replace(src, dst)
        calls.append(Path(dst).name)
        if Path(dst).name.startswith(".wl.old-"):  # the old output is aside; the new one not yet in
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100):  # a handler runs between bytecodes
                pass

    monkeypatch.setattr(_safe_out.os, "replace", replace_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        with replace_dir(out, "trace group") as tmp:
            (tmp / "kernelslist.g").write_text("new\n")
    aside = [i for i, n in enumerate(calls) if n.startswith(".wl.old-")]
    assert aside and "wl" in calls[aside[-1]:]  # the new output went in after the old one was set aside
    assert (out / "kernelslist.g").read_text() == "new\n"
    assert not list(tmp_path.glob(".wl.tmp-*"))


@pytest.mark.parametrize("name, plain", [
    ("kernel-1.traceg", True), ("h100", True), (".hidden", True), ("a..b", True),
    ("", False), ("   ", False), (".", False), ("..", False), ("a/b", False), ("a\\b", False), ("a\0b", False),
    (None, False), (3, False),
])
def test_a_plain_name_is_one_path_component(name, plain):
    """Names that become a path component (a kernelslist entry, an arch, an Accel-Sim config)
    can neither climb out of their directory (.., a separator) nor be empty."""
    from gclsampler._safe_out import is_plain_name

    assert is_plain_name(name) is plain


def test_an_older_evaluate_run_is_known_by_its_report_not_by_file_names(tmp_path):
    """A directory of the user's that holds a results.csv of that header and a plans/ is not an
    evaluate.py run (whose files a rerun may replace) unless its report.md is evaluate.py's."""
    from gclsampler._safe_out import written_by

    d = tmp_path / "mine"
    (d / "plans").mkdir(parents=True)
    (d / "results.csv").write_text("workload,method,arch\nx,y,z\n")
    assert written_by(d) is None
    (d / "report.md").write_text("# My thesis results\n")
    assert written_by(d) is None
    (d / "report.md").write_text("# gclsampler evaluation: suite `quick`\n")
    assert written_by(d) == "evaluate"


@pytest.mark.parametrize("kind", ["profile", "plan"])
def test_a_file_blank_only_in_its_first_pages_is_the_users(tmp_path, kind):
    """A whitespace-only head was taken for an empty file, so `profile import --out notes.txt`
    replaced notes whose first 4 KiB were blank lines."""
    from gclsampler._safe_out import check_out_file

    notes = tmp_path / "notes.txt"
    notes.write_text("\n" * 5000 + "my notes\n")
    with pytest.raises(OutputError, match="not replaced"):
        check_out_file(notes, kind)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n" * 5000 + "  \n")
    if kind == "profile":
        assert check_out_file(blank, kind) == blank  # nothing but whitespace: nothing to lose


def test_the_current_directory_is_refused_before_any_work(tmp_path, monkeypatch):
    """`synth --out .` built its temp directory inside the output (as '..tmp-...'), ran the whole
    synthesis, then refused its own temp directory as the user's file."""
    from gclsampler._safe_out import make_temp_dir

    here = tmp_path / "emp"
    (here / "sub").mkdir(parents=True)
    monkeypatch.chdir(here / "sub")
    for out in (".", "..", str(here)):
        with pytest.raises(OutputError, match="current directory; a directory you are in cannot be replaced"):
            make_temp_dir(out, "synth")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emp"] and [p.name for p in here.iterdir()] == ["sub"]


def test_an_output_name_near_the_file_system_limit_is_written(tmp_path):
    """The temp directory beside it, '.<name>.tmp-<pid>@<host>-XXXXXXXX', passed 255 bytes for a
    name of 222 or more: "File name too long", blamed on the user's valid name."""
    from gclsampler._safe_out import commit_dir, make_temp_dir, remove_dead_temp_dirs

    out = tmp_path / ("p" * 120 + "é" * 60)  # 240 bytes
    for _ in range(2):  # made, then replaced
        tmp = make_temp_dir(out, "compare")
        (tmp / "compare.md").write_text("x")
        assert commit_dir(tmp, out, "compare") == out
    assert (out / "compare.md").read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == [out.name]
    assert remove_dead_temp_dirs(out) == []


def test_a_literal_tilde_is_locked_where_it_is_written(tmp_path, monkeypatch):
    """`--out=~/tl` (the shell leaves that "~" as it is) was written to ./~/tl, but its lock files
    were made in $HOME, so a reader of ./~/tl took other locks."""
    from gclsampler._safe_out import _synth_lock, _use_lock

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert _synth_lock(Path("~/tl")) == tmp_path / "~" / ".tl.lock"
    assert _use_lock(Path("~/tl")) == tmp_path / "~" / ".tl.use.lock"
