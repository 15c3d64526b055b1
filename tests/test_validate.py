"""Issue 14, class 2: ``gclsampler validate`` and the same checks before any expensive work.

One test per kind of inconsistency between kernelslist.g, the trace headers and
profile.csv; each asserts the exit status, that the problem is one line naming the file
(and line and field), and that commands which would work on the workload refuse it first.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gclsampler.cli import main
from gclsampler.validate import check_workload, require_valid_workload, WorkloadError


def _errors(capsys) -> list[str]:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [ln for ln in err.splitlines() if ln.strip()]


def _set_header(path: Path, key: str, value: str) -> None:
    text = path.read_text()
    text, n = re.subn(rf"^-{re.escape(key)} = .*$", f"-{key} = {value}", text, count=1, flags=re.M)
    assert n == 1
    path.write_text(text)


def _edit_profile(wl: Path, fn) -> None:
    df = pd.read_csv(wl / "profile.csv", dtype={"kernel_name": str, "grid": str, "block": str},
                     keep_default_na=False, na_values=[""])
    new = fn(df)
    (df if new is None else new).to_csv(wl / "profile.csv", index=False)


def test_clean_workload_passes(tiny_workload, capsys):
    assert main(["validate", str(tiny_workload)]) == 0
    assert "ok" in capsys.readouterr().out
    assert check_workload(tiny_workload) == []


def test_missing_profile_row(wl_copy, capsys):
    _edit_profile(wl_copy, lambda df: df.iloc[:-1])
    assert main(["validate", str(wl_copy)]) == 2
    (line,) = _errors(capsys)
    assert "profile.csv: invocation:" in line and "rows, but kernelslist.g lists" in line


def test_registers_and_shared_memory_are_checked_only_where_the_header_says(wl_copy):
    """A profile's nregs/shmem that differ from the trace header's are a warning naming both;
    a header value of 0 means the tracer did not say, so nothing is compared: warning there
    buried the real mismatches under one line per launch of every kernel without shared memory."""
    head = (wl_copy / "kernel-1.traceg").read_text()
    assert "-shmem = 0\n" in head and "-nregs = 16\n" in head

    def edit(df):
        df.loc[0, "nregs"] = 99  # header: 16
        df.loc[0, "shmem"] = 4096  # header: 0, unknown
    _edit_profile(wl_copy, edit)
    warnings = [p.text for p in check_workload(wl_copy) if p.severity == "warning"]
    assert len(warnings) == 1, warnings
    assert "profile.csv:2: nregs: 99, but kernel-1.traceg says 16" in warnings[0]
    assert not [p for p in check_workload(wl_copy) if p.severity == "error"]


def test_a_newline_in_the_workload_path_keeps_each_problem_on_one_line(wl_copy, tmp_path, capsys):
    odd = tmp_path / "runs\nfrom monday"
    wl_copy.rename(odd)

    _edit_profile(odd, lambda df: df.assign(time_ns=df["time_ns"].where(df.index != 3, -5.0)))
    assert main(["validate", str(odd)]) == 2
    (line,) = _errors(capsys)
    assert line.startswith("gclsampler: error: ") and "runs from monday/profile.csv:5: time_ns:" in line


def test_kernel_name_grid_and_block_mismatch(wl_copy, capsys):
    def edit(df):
        df.loc[3, "kernel_name"] = "not_the_traced_kernel"
        df.loc[5, "grid"] = "(999,1,1)"
        df.loc[6, "block"] = "(3,1,1)"
    _edit_profile(wl_copy, edit)
    assert main(["validate", str(wl_copy)]) == 2
    lines = _errors(capsys)
    assert len(lines) == 3
    assert "profile.csv:5: kernel_name: 'not_the_traced_kernel', but kernel-4.traceg is" in lines[0]
    assert "profile.csv:7: grid: (999,1,1), but kernel-6.traceg has" in lines[1]
    assert "profile.csv:8: block: (3,1,1), but kernel-7.traceg has" in lines[2]


@pytest.mark.parametrize("how", ["file", "line"])
def test_a_missing_trace_is_reported_once_not_as_every_later_row(wl_copy, capsys, how):
    """Rows are matched to traces by -kernel id, so the rows after a gap still meet their own trace."""
    kl = wl_copy / "kernelslist.g"
    if how == "file":
        (wl_copy / "kernel-5.traceg").unlink()
    else:
        kl.write_text("".join(ln for ln in kl.read_text().splitlines(keepends=True) if ln.strip() != "kernel-5.traceg"))
    assert main(["validate", str(wl_copy)]) == 2
    lines = _errors(capsys)
    assert not [ln for ln in lines if any(f": {c}: " in ln for c in ("kernel_name", "grid", "block"))], lines
    counts = [ln for ln in lines if ": invocation: " in ln and "rows, but" in ln]
    arch_profiles = list((wl_copy / "profiles").glob("*.csv"))
    assert arch_profiles and len(counts) == 1 + len(arch_profiles), lines
    # profiles/<arch>.csv too: the workload's kernelslist.g, not one looked for in profiles/
    assert all("rows, but kernelslist.g lists" in ln for ln in counts), counts
    assert ("lists 'kernel-5.traceg', which does not exist" in lines[0]) == (how == "file")
    # the gap itself, the ids, and each profile's row count: nothing per row
    assert len(lines) <= 3 + len(list((wl_copy / "profiles").glob("*.csv"))), lines


def test_traces_without_kernelslist_are_checked_as_the_trace_commands_read_them(wl_copy, capsys):
    """No kernelslist.g: the trace commands read kernel-<N>.traceg in id order, so validate checks
    those; a gap in them was "ok" while `trace info` counted one invocation fewer."""
    (wl_copy / "kernelslist.g").unlink()
    assert main(["validate", str(wl_copy)]) == 0
    capsys.readouterr()
    (wl_copy / "kernel-5.traceg").unlink()
    assert main(["validate", str(wl_copy)]) == 2
    lines = _errors(capsys)
    assert "profile.csv: invocation: " in lines[0] and "the directory holds (no kernelslist.g)" in lines[0]
    assert any(f"{wl_copy}: -kernel id: trace ids run 1.." in ln for ln in lines)


@pytest.mark.parametrize("key, value, needle", [
    ("n_invocations", 99, "workload.json: n_invocations: 99, but profile.csv has"),
    ("synthetic", "no", "workload.json: synthetic: expected true or false, found 'no'"),
    ("n_invocations", "57", "workload.json: n_invocations: expected a count, found '57'"),
    # names: str() of these made names nobody wrote, and an arch names a file under profiles/
    ("workload", ["bfs"], "workload.json: workload: expected a name, found ['bfs']"),
    ("workload", "", "workload.json: workload: expected a name, found ''"),
    ("arch", 7, "workload.json: arch: expected a name (a file stem of profiles/), found 7"),
    ("arch", "../turing", "workload.json: arch: expected a name (a file stem of profiles/), found '../turing'"),
    ("archs", "turing", "workload.json: archs: expected a list of arch names, found 'turing'"),
    ("archs", ["turing", 3], "workload.json: archs: expected a list of arch names, found ['turing', 3]"),
])
def test_workload_json_keys_are_checked(wl_copy, capsys, key, value, needle):
    """A wrong count passed; the string "no" was true, so the workload was labelled SYNTHETIC."""
    meta = json.loads((wl_copy / "workload.json").read_text())
    (wl_copy / "workload.json").write_text(json.dumps({**meta, key: value}))
    assert main(["validate", str(wl_copy)]) == 2
    assert any(needle in ln for ln in _errors(capsys))
    if key == "synthetic":  # every loader refuses it too, not only validate
        from gclsampler.errors import GclError
        from gclsampler.workload import Workload

        with pytest.raises(GclError, match="synthetic: expected true or false"):
            Workload.load(wl_copy)


def _finishes(fn, timeout=120):
    """fn() in a daemon thread: a regression that blocks on a FIFO fails the test, not the run."""
    import threading

    box = {}

    def run():
        try:
            box["r"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            box["e"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "blocked (reading a named pipe?)"
    if "e" in box:
        raise box["e"]
    return box.get("r")


@pytest.mark.parametrize("name", ["workload.json", "kernelslist.g", "profile.csv", "profiles/ampere.csv",
                                  "embeddings.npy"])
def test_a_named_pipe_in_a_workload_is_refused_not_waited_on(wl_copy, capsys, name):
    """train.py, evaluate.py and validate blocked forever on a FIFO at any of these paths."""
    import os

    from gclsampler.embeddings import EmbeddingsError, load_embeddings

    f = wl_copy / name
    f.parent.mkdir(exist_ok=True)
    f.unlink(missing_ok=True)
    os.mkfifo(f)
    why = "is a named pipe (FIFO), not a regular file; reading it would wait for a writer"
    if name == "embeddings.npy":
        with pytest.raises(EmbeddingsError, match="is a named pipe"):
            _finishes(lambda: load_embeddings(f))
        return
    assert _finishes(lambda: main(["validate", str(wl_copy)])) == 2
    err = capsys.readouterr().err
    assert f"{f}: " in err and why in err
    if name == "kernelslist.g":  # the trace commands read it without validate
        assert _finishes(lambda: main(["trace", "info", str(wl_copy)])) == 2
        err = capsys.readouterr().err
        assert f"{f}: " in err and why in err


def test_workload_json_may_start_with_a_bom(wl_copy, capsys):
    """profile.csv's BOM (Excel, PowerShell) was read; workload.json's was 'not JSON'."""
    from gclsampler.workload import Workload

    meta = wl_copy / "workload.json"
    meta.write_bytes(b"\xef\xbb\xbf" + meta.read_bytes())
    assert main(["validate", str(wl_copy)]) == 0
    assert Workload.load(wl_copy).name == json.loads(meta.read_text(encoding="utf-8-sig"))["workload"]


def test_a_misspelt_metric_column_is_a_warning(wl_copy, capsys):
    _edit_profile(wl_copy, lambda df: df.rename(columns={"l1_hit_rate": "l1_hitrate"}))
    assert main(["validate", str(wl_copy)]) == 0
    err = capsys.readouterr().err
    assert "profile.csv:1: l1_hitrate: not a column gclsampler reads; did you mean 'l1_hit_rate'?" in err


def test_duplicate_kernel_id(wl_copy, capsys):
    _set_header(wl_copy / "kernel-3.traceg", "kernel id", "2")
    assert main(["validate", str(wl_copy)]) == 2
    lines = _errors(capsys)
    assert any("kernel-3.traceg: -kernel id: 2 is also the id of kernel-2.traceg" in ln for ln in lines)


def test_duplicate_and_missing_list_entries(wl_copy, capsys):
    kl = wl_copy / "kernelslist.g"
    kl.write_text(kl.read_text() + "kernel-1.traceg\nkernel-999.traceg\nrubbish\n")
    assert main(["validate", str(wl_copy)]) == 2
    lines = _errors(capsys)
    n = len(kl.read_text().splitlines())
    assert f"kernelslist.g:{n - 2}: kernelslist: 'kernel-1.traceg' is listed again (first on line 1)" in lines[0]
    assert f"kernelslist.g:{n - 1}: kernelslist: lists 'kernel-999.traceg', which does not exist" in lines[1]
    assert f"kernelslist.g:{n}: kernelslist: neither a trace file name nor a Memcpy line" in lines[2]


@pytest.mark.parametrize("line, ok", [
    ("MemcpyHtoD,0x00007f7f99e00000,400004", True), ("MemcpyHtoD,0x0,4", True),
    (f"MemcpyHtoD,0x{2**64 - 1:016x},{2**64 - 1}", True),  # the tracer's %016llx,%llu at their widest
    ("MemcpyHtoD,zzz", False), ("MemcpyHtoD,0x10,-5", False), ("MemcpyHtoD,0x10", False),
    ("MemcpyHtoD,0x10000000000000000,4", False), ("Memcpy", False),
])
def test_memcpy_lines_are_read_as_the_tracer_writes_them(wl_copy, capsys, line, ok):
    """Any line starting 'Memcpy' passed, and went into the Accel-Sim export as it was."""
    kl = wl_copy / "kernelslist.g"
    kl.write_text(line + "\n" + kl.read_text())
    assert main(["validate", str(wl_copy)]) == (0 if ok else 2)
    if not ok:
        assert f"kernelslist.g:1: kernelslist: bad Memcpy line {line!r}" in _errors(capsys)[0]


def test_entries_outside_the_directory_are_refused(wl_copy, capsys):
    """validate says what every trace command refuses: ``..``/absolute entries and the list itself."""
    kl = wl_copy / "kernelslist.g"
    outside = wl_copy.parent / "kernel-1.traceg"
    outside.write_bytes(b"")
    kl.write_text(kl.read_text() + "kernelsub/../../kernel-1.traceg\nkernelslist.g\n")
    assert main(["validate", str(wl_copy)]) == 2
    lines = _errors(capsys)
    n = len(kl.read_text().splitlines())
    assert any(f"kernelslist.g:{n - 1}: kernelslist: 'kernelsub/../../kernel-1.traceg' is not a plain file name" in ln
               for ln in lines), lines
    assert any(f"kernelslist.g:{n}: kernelslist: lists 'kernelslist.g', the kernelslist itself" in ln for ln in lines)


def test_traces_out_of_launch_order(wl_copy, capsys):
    kl = wl_copy / "kernelslist.g"
    names = kl.read_text().split()
    names[1], names[2] = names[2], names[1]
    kl.write_text("\n".join(names) + "\n")
    assert main(["validate", str(wl_copy)]) == 2
    assert any("launch order" in ln for ln in _errors(capsys))


@pytest.mark.parametrize("column,value,needle", [
    ("l1_hit_rate", 24.0, "l1_hit_rate: 24.0 is out of range: a fraction 0..1"),
    ("achieved_occupancy", 1.5, "achieved_occupancy: 1.5 is out of range"),
    ("nregs", 300, "nregs: 300.0 is out of range"),
    ("cycles", -1, "cycles: negative value"),
])
def test_value_ranges_of_known_columns(wl_copy, capsys, column, value, needle):
    _edit_profile(wl_copy, lambda df: df.__setitem__(column, [value] + list(df[column].iloc[1:])))
    assert main(["validate", str(wl_copy)]) == 2
    (line,) = _errors(capsys)
    assert "profile.csv:2: " + needle in line


def test_all_zero_times_are_an_error(wl_copy, tmp_path, capsys):
    _edit_profile(wl_copy, lambda df: df.__setitem__("time_ns", 0))
    assert main(["validate", str(wl_copy)]) == 2
    (line,) = _errors(capsys)
    assert "profile.csv: time_ns: every value is 0" in line
    out = tmp_path / "plan.json"
    assert main(["stem", str(wl_copy / "profile.csv"), "--out", str(out)]) == 2  # once "speedup nanx"
    assert "every value is 0" in _errors(capsys)[0] and not out.exists()


def test_unknown_binary_version_is_a_warning(wl_copy, capsys):
    _set_header(wl_copy / "kernel-2.traceg", "binary version", "61")
    assert main(["validate", str(wl_copy)]) == 0
    captured = capsys.readouterr()
    assert "warning: " in captured.err and "kernel-2.traceg: -binary version: 61" in captured.err
    assert "1 warning" in captured.out


def test_unreadable_inputs_are_located_lines(wl_copy, tmp_path, capsys):
    (wl_copy / "kernel-2.traceg").write_bytes(b"\x1f\x8b not really anything")
    (wl_copy / "workload.json").write_text("{broken")
    assert main(["validate", str(wl_copy)]) == 2
    lines = _errors(capsys)
    assert any(ln.startswith("gclsampler: error: ") and "workload.json:1: not JSON" in ln for ln in lines)
    assert any("kernel-2.traceg" in ln for ln in lines)
    assert main(["validate", str(tmp_path / "nope")]) == 2
    assert "nope: no such directory" in _errors(capsys)[0]


def test_sample_and_stem_check_before_fitting(wl_copy, tmp_path, capsys):
    _edit_profile(wl_copy, lambda df: df.iloc[:-1])
    out = tmp_path / "plan.json"
    assert main(["sample", "pka", str(wl_copy), "--out", str(out)]) == 2
    (line,) = _errors(capsys)
    assert "profile.csv: invocation:" in line and not out.exists()
    assert main(["stem", str(wl_copy / "profile.csv"), "--out", str(out)]) == 2
    (line,) = _errors(capsys)
    assert "profile.csv: invocation:" in line and not out.exists()


def test_require_valid_workload_counts_the_rest(wl_copy):
    _edit_profile(wl_copy, lambda df: df.__setitem__("kernel_name", "x"))
    with pytest.raises(WorkloadError, match=r"kernel_name: 'x', but kernel-1\.traceg is .* more problem"):
        require_valid_workload(wl_copy)


@pytest.mark.parametrize("argv,needle", [
    (["--set", "epsilon=-1"], "epsilon: must be a number in (0, 1)"),
    (["--set", "epsilon=abc"], "epsilon: must be a number, found 'abc'"),
])
def test_sampler_parameters_fail_before_any_work(tiny_workload, tmp_path, capsys, argv, needle):
    out = tmp_path / "p.json"
    assert main(["sample", "stem_root", str(tiny_workload), "--out", str(out), *argv]) == 2
    (line,) = _errors(capsys)
    assert needle in line and "--set epsilon" in line and not out.exists()


def _compose(overrides):
    from hydra import compose, initialize_config_dir

    import gclsampler.config  # noqa: F401

    conf = str(Path(__file__).resolve().parents[1] / "conf")
    with initialize_config_dir(config_dir=conf, version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def test_pipeline_checks_the_workload_before_graphs_and_training(wl_copy, tmp_path):
    """train.py on a workload whose profile lost a row: fails in seconds naming profile.csv,
    with no graph cache, model or embeddings written (it used to train, then fail on a shape)."""
    _edit_profile(wl_copy, lambda df: df.iloc[:-1])
    _refused_before_training(wl_copy, tmp_path / "run", r"profile\.csv: invocation: .* rows, but kernelslist\.g lists")


def _refused_before_training(wl: Path, run_dir: Path, match: str) -> None:
    """train.py on ``wl`` stops with a WorkloadError matching ``match`` before graphs and training:
    no graph cache, checkpoint, embeddings or plan written."""
    from gclsampler.pipeline import run

    cfg = _compose(["debug=default", "workload.name=phi2", f"workload.dir={wl}", "train.epochs=1", "train.threads=1"])
    with pytest.raises(WorkloadError, match=match):
        run(cfg, out_dir=run_dir)
    assert not (wl / ".graph-cache").exists() and not any(run_dir.glob("*.pt"))
    assert not (run_dir / "embeddings.npy").exists() and not (run_dir / "plan.json").exists()


def test_cycles_in_some_rows_only_are_found_before_training(wl_copy, tmp_path, capsys):
    """An Nsight Compute export with `n/a` cycles for one launch imports as a profile whose
    cycles column is empty in that row only. validate said "ok", and train.py trained, then
    failed scoring the plan ("the ground truth has rows without a cycle count"), leaving a
    run directory with a plan.json and no report. validate now names the row, and train.py
    (which scores every plan) refuses it before graphs and training."""
    _edit_profile(wl_copy, lambda df: df.assign(cycles=df["cycles"].where(df.index != 2)))
    assert main(["validate", str(wl_copy)]) == 0  # a warning: sample and stem read time_ns, not cycles
    (line,) = _errors(capsys)
    assert line.startswith("gclsampler: warning: ") and "profile.csv:4: cycles: empty in 1 of " in line
    _refused_before_training(wl_copy, tmp_path / "run", r"profile\.csv:4: cycles: empty in 1 of \d+ rows \(first: invocation 2")


def test_pipeline_checks_sampler_parameters_before_training(tiny_workload, tmp_path):
    from gclsampler.errors import GclError
    from gclsampler.pipeline import run

    cfg = _compose(["debug=default", "workload.name=phi2", f"workload.dir={tiny_workload}", "sampler=gcl_stem",
                    "sampler.params.epsilon=-1", "train.threads=1"])
    with pytest.raises(GclError, match=r"sampler\.params: epsilon: must be a number in \(0, 1\)"):
        run(cfg, out_dir=tmp_path / "run")
    assert not (tiny_workload / ".graph-cache").exists() and not (tmp_path / "run" / "last.pt").exists()


def test_default_parameters_of_every_method_pass_the_early_check():
    from gclsampler.evaluate import make_sampler, _registry
    from gclsampler.validate import check_sampler_params

    for name in _registry():
        check_sampler_params(make_sampler(name), name)  # no false alarms on the defaults


def test_numpy_scalars_are_numbers_to_the_early_check():
    """A k_max computed with numpy (np.int64(20)) was refused as 'must be a number', while fit takes it."""
    from gclsampler.evaluate import make_sampler
    from gclsampler.validate import check_sampler_params

    check_sampler_params(make_sampler("pka", {"k_max": np.int64(20), "target_error": np.float32(0.05)}), "pka")


@pytest.mark.parametrize("method,params,needle", [
    ("gcl_stem", {"z": 0}, "z: must be a number in [0.01, 40]"),
    ("gcl", {"cluster": {"k_min": 1}}, "cluster.k_min: must be >= 2"),
    ("pka", {"target_error": -0.1}, "target_error: must be a number > 0"),
    ("random", {"fraction": 3}, "fraction: must be at most 1"),
    ("allegro", {"epsilon": float("nan")}, "epsilon: must be a number in (0, 1)"),
    ("pka", {"k_max": "abc"}, "k_max: must be a number, found 'abc'"),
    ("pka", {"k_max": 2.5}, "k_max: must be a whole number"),
    ("pka", {"k_max": True}, "k_max: must be a number, found True"),
    ("pka", {"k_max": float("inf")}, "k_max: must be a whole number, found inf"),
    ("photon", {"match_launch": "yes"}, "match_launch: must be true or false"),
    ("gcl_stem", {"strata": "names"}, "strata: must be one of auto, gcl, found 'names'"),
    ("allegro", {"epsilon": 1.5}, "epsilon: must be a number in (0, 1), found 1.5"),
    ("allegro", {"z": 100}, "z: must be a number in [0.01, 40]"),
    ("gcl_stem", {"cluster_random_state": -1}, "cluster_random_state: must be an integer in [0, 2**32)"),
    ("pka", {"representative": "mean"}, "representative: must be one of first, work_mean, found 'mean'"),
    ("sieve", {"representative": 1}, "representative: must be one of dominant_cta, max_cta, first, work_mean"),
    # the method's own data-free checks, which ran only inside fit (after the workload was read)
    ("allegro", {"floor": 0}, "allegro: floor: must be an integer >= 1, found 0"),
    ("allegro", {"m_th": -5}, "allegro: m_th: must be an integer >= 1, found -5"),
    ("pka", {"k_min": 5, "k_max": 3}, "pka: k_min/k_max: need 1 <= k_min <= k_max, found 5, 3"),
    ("pka", {"n_init": 0}, "pka: n_init: must be an integer >= 1, found 0"),
    ("pka", {"pca_variance": 1.5}, "pka: pca_variance: must be in (0, 1], found 1.5"),
    ("sieve", {"bandwidth": "silvermann"}, "sieve: bandwidth: expected 'silverman' or 'scott'"),
    ("sieve", {"kde": "false"}, "sieve: kde: must be true or false, found 'false'"),
])
def test_bad_method_parameters_fail_early(method, params, needle):
    from gclsampler.errors import GclError
    from gclsampler.evaluate import make_sampler
    from gclsampler.validate import check_sampler_params

    with pytest.raises(GclError, match=re.escape(needle)):
        check_sampler_params(make_sampler(method, params), f"method_params.{method}")


@pytest.mark.parametrize("override,needle", [("stem.epsilon=0", "stem.epsilon: must be a number in (0, 1)"),
                                             ("cluster.k_min=1", "cluster.k_min: must be >= 2")])
def test_pipeline_checks_stem_and_cluster_groups_first(tiny_workload, tmp_path, override, needle):
    from gclsampler.errors import GclError
    from gclsampler.pipeline import run

    cfg = _compose(["debug=default", "workload.name=phi2", f"workload.dir={tiny_workload}", override])
    with pytest.raises(GclError, match=re.escape(needle)):
        run(cfg, out_dir=tmp_path / "run")
    assert not (tiny_workload / ".graph-cache").exists()


def test_profile_only_workload_checks_arch_profiles_against_profile_csv(wl_copy, capsys):
    for p in list(wl_copy.glob("kernel*")):
        p.unlink()
    assert main(["validate", str(wl_copy)]) == 0  # profile-only workloads are fine for profile-based methods
    out = capsys.readouterr().out  # but a bare "ok" read as "train.py will run": it refuses such a directory
    assert "ok as a profile-only workload" in out and "train.py and the methods that read traces refuse it" in out
    other = wl_copy / "profiles" / "turing.csv"
    other.write_text("\n".join(other.read_text().splitlines()[:-2]) + "\n")
    assert main(["validate", str(wl_copy)]) == 2
    (line,) = _errors(capsys)
    assert "profiles/turing.csv: invocation:" in line and "rows, but profile.csv has" in line


def test_a_second_run_no_plan_is_scored_on_is_warned_of(wl_copy, capsys):
    """profiles/h200_rerun.csv beside a workload.json without "arch": plans are fitted on the
    "native" profile, so only profiles/native_rerun.csv is scored, and the imported second run was
    ignored without a word (no second-run table, error_cycles_rerun empty)."""
    import json

    meta = wl_copy / "workload.json"
    doc = json.loads(meta.read_text())
    arch = doc.get("arch")
    (wl_copy / "profiles" / "h200_rerun.csv").write_bytes((wl_copy / "profile.csv").read_bytes())
    assert main(["validate", str(wl_copy)]) == 0
    warned = [ln for ln in capsys.readouterr().err.splitlines() if "h200_rerun.csv" in ln]
    assert len(warned) == 1 and "no plan is scored on it" in warned[0], warned
    assert (f'workload.json says "arch": "{arch}"' if arch else 'workload.json has no "arch"') in warned[0]
    doc["arch"] = "h200"  # profile.csv measured there: its second run is scored
    meta.write_text(json.dumps(doc))
    assert main(["validate", str(wl_copy)]) in (0, 2)
    assert "h200_rerun.csv: no plan" not in capsys.readouterr().err


def test_evaluate_checks_every_workload_before_any_fitting(tmp_path, monkeypatch):
    import gclsampler.evaluate as ev
    from test_baselines import make_profile
    from test_evaluate import _compose as compose_evaluate
    from test_evaluate import _write_workload

    data = tmp_path / "data"
    for i, name in enumerate(["wa", "wb"]):
        t = make_profile(40, i)
        _write_workload(data / name, {"turing": t, "ampere": t.assign(time_ns=t["time_ns"] * 1.3)})
    amp = data / "wb" / "profiles" / "ampere.csv"
    amp.write_text("\n".join(amp.read_text().splitlines()[:-1]) + "\n")  # the last workload is broken
    fitted = []
    monkeypatch.setattr(ev, "fit_methods", lambda workload, *a, **k: fitted.append(workload.name) or [])
    cfg, _ = compose_evaluate(["suite=quick", "suite.workloads=[wa,wb]", "suite.data_dir=null",
                               "suite.methods=[pka]", f"data_dir={data}", "generate=false", "plots=false"])
    with pytest.raises(WorkloadError, match=r"wb/profiles/ampere\.csv: invocation: 39 rows, but profile\.csv has 40"):
        ev.run_suite(cfg, tmp_path / "out")
    assert fitted == []  # wa was not fitted before wb's problem was found


def test_evaluate_refuses_cycles_in_some_rows_only_before_any_fitting(tmp_path, monkeypatch):
    """evaluate.py scores every plan on cycles too: a profile with a gap in them stopped it
    after fitting and training, at the first score."""
    import gclsampler.evaluate as ev
    from test_baselines import make_profile
    from test_evaluate import _compose as compose_evaluate
    from test_evaluate import _write_workload

    data = tmp_path / "data"
    t = make_profile(40, 0)
    _write_workload(data / "wa", {"turing": t.assign(cycles=t["cycles"].astype(float).where(t.index != 7))})
    fitted = []
    monkeypatch.setattr(ev, "fit_methods", lambda workload, *a, **k: fitted.append(workload.name) or [])
    cfg, _ = compose_evaluate(["suite=quick", "suite.workloads=[wa]", "suite.data_dir=null",
                               "suite.methods=[random]", f"data_dir={data}", "generate=false", "plots=false"])
    with pytest.raises(WorkloadError, match=r"wa/profile\.csv:9: cycles: empty in 1 of 40 rows"):
        ev.run_suite(cfg, tmp_path / "out")
    assert fitted == []


def test_full_parses_trace_bodies_that_the_header_check_passes(wl_copy, capsys):
    """A trace cut short after its header: the default (headers) says ok and says so;
    --full fails with the reader's own located line, as every trace-reading command would."""
    p = wl_copy / "kernel-3.traceg"
    text = p.read_text()
    p.write_text(text[: len(text) * 2 // 3])
    assert main(["validate", str(wl_copy)]) == 0
    assert "--full" in capsys.readouterr().out
    assert main(["validate", "--full", str(wl_copy)]) == 2
    (line,) = [ln for ln in _errors(capsys) if ": error: " in ln]  # the fixture's capped warps warn too
    assert f"{p}:" in line and "truncated" in line
    with pytest.raises(Exception) as exc:
        from gclsampler.trace import read_kernel
        read_kernel(p)
    assert str(exc.value) in line


@pytest.mark.parametrize("workers", [1, 3])
def test_full_reports_bad_bodies_in_kernelslist_order_with_any_workers(wl_copy, capsys, workers):
    """Two broken bodies: in worker processes or not, both are reported, in kernelslist
    order, with the same located lines, so a parallel check says exactly what a serial one does."""
    from gclsampler.trace import read_kernel

    broken = [wl_copy / "kernel-2.traceg", wl_copy / "kernel-4.traceg"]
    for p in broken:
        text = p.read_text()
        p.write_text(text[: len(text) // 2])
    assert main(["validate", "--full", "--workers", str(workers), str(wl_copy)]) == 2
    lines = [ln for ln in _errors(capsys) if ": error: " in ln]
    want = []
    for p in broken:
        with pytest.raises(Exception) as exc:
            read_kernel(p)
        want.append(str(exc.value))
    at = [[i for i, line in enumerate(lines) if w in line] for w in want]
    assert all(len(a) == 1 for a in at), lines  # each reported once
    assert at[0][0] < at[1][0]  # kernel-2 before kernel-4


def test_full_refuses_fewer_than_one_worker(wl_copy, capsys):
    assert main(["validate", "--full", "--workers", "0", str(wl_copy)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--workers 0" in err[0]


def test_full_warns_of_warps_without_exit_and_unlisted_traces_are_named(tmp_path, capsys):
    """Complete traces (every warp ends with EXIT) pass --full without a word; a trace cut at a
    line boundary still parses, and --full names it; a trace the kernelslist leaves out is named
    even without --full. Both are warnings: a capped trace is cut on purpose."""
    from _trace_fixtures import Inst, make_trace

    from gclsampler.trace import write_kernel, write_kernelslist

    def trace(k: int, exits: tuple[bool, bool] = (True, True)):
        warps = [[Inst("MOV", dst=("R1",))] + ([Inst("EXIT")] if e else []) for e in exits]
        return make_trace(warps, kernel_id=k)

    wl = tmp_path / "wl"
    wl.mkdir()
    for k in (1, 2):
        write_kernel(trace(k), wl / f"kernel-{k}.traceg")
    write_kernelslist(wl, ["kernel-1.traceg", "kernel-2.traceg"])
    assert main(["validate", "--no-profile", "--full", str(wl)]) == 0
    assert capsys.readouterr().err == ""

    write_kernel(trace(2, (True, False)), wl / "kernel-2.traceg")  # warp 1 lost its last line
    write_kernel(trace(3), wl / "kernel-3.traceg")  # traced, never listed
    assert main(["validate", "--no-profile", str(wl)]) == 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"warning: {wl / 'kernel-3.traceg'}: not in kernelslist.g" in line
    assert main(["validate", "--no-profile", "--full", str(wl)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and f"warning: {wl / 'kernel-2.traceg'}: warps: 1 of 2 end without EXIT" in err[1], err


def test_evaluate_refuses_two_workloads_of_one_declared_name_before_any_fitting(tmp_path, monkeypatch):
    """A copied workload directory keeps its workload.json's name; both then trained into one
    train/<name>/ run, or with embeddings=cached the second was given the first's embeddings."""
    import gclsampler.evaluate as ev
    from test_baselines import make_profile
    from test_evaluate import _compose as compose_evaluate
    from test_evaluate import _write_workload

    data = tmp_path / "data"
    for name in ("wa", "wb"):
        _write_workload(data / name, {"turing": make_profile(40, 0)})
    meta = json.loads((data / "wb" / "workload.json").read_text())
    (data / "wb" / "workload.json").write_text(json.dumps({**meta, "workload": "wa"}))
    fitted = []
    monkeypatch.setattr(ev, "fit_methods", lambda workload, *a, **k: fitted.append(workload.name) or [])
    cfg, _ = compose_evaluate(["suite=quick", "suite.workloads=[wa,wb]", "suite.data_dir=null",
                               "suite.methods=[pka]", "suite.archs=[turing]", f"data_dir={data}", "generate=false",
                               "plots=false"])
    with pytest.raises(ev.EvaluationError, match=r"wb/workload\.json: workload: 'wa' is also the name of .*/data/wa; "
                                                 r"each workload of a suite needs its own name"):
        ev.run_suite(cfg, tmp_path / "out")
    assert fitted == []
