"""``gclsampler sample``: any registered method from the command line, with named errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gclsampler.cli import main


@pytest.fixture(scope="module")
def wl(tmp_path_factory):
    from gclsampler.synth import generate

    d = tmp_path_factory.mktemp("sample") / "phi2"
    generate("phi2", d, params=dict(layers=1, prompt=8, decode=1, trace_cap=8, sample_cap=24, sample_ctas=1,
                                    max_traced_ctas=1), arch="ampere", seed=3, progress=False, jobs=1)
    return d


def _plan(path):
    doc = json.loads(path.read_text())
    n = doc["n_invocations"]
    assert sum(s["weight"] for s in doc["samples"]) == pytest.approx(n)
    return doc


@pytest.mark.parametrize("method,params", [("pka", []), ("sieve", []), ("allegro", ["--set", "epsilon=0.2"]),
                                           ("stem_root", ["--set", "epsilon=0.25"]),
                                           ("photon", ["--set", "threshold=0.9", "--set", "match_launch=false"]),
                                           ("random", ["--set", "fraction=0.2", "--seed", "3"])])
def test_methods_write_valid_plans(wl, tmp_path, capsys, method, params):
    out = tmp_path / f"{method}.json"
    assert main(["sample", method, str(wl), "--out", str(out), *params]) == 0
    doc = _plan(out)
    assert doc["method"] == method and doc["synthetic"] is True
    printed = capsys.readouterr().out
    assert f"{method} plan for phi2 (SYNTHETIC)" in printed and "expected speedup" in printed
    if method == "photon":
        assert doc["config"]["threshold"] == 0.9 and doc["config"]["match_launch"] is False


def test_gcl_reads_embeddings_and_checks_their_rows(wl, tmp_path, capsys):
    n = len([ln for ln in (wl / "kernelslist.g").read_text().splitlines() if ln.startswith("kernel-")])
    emb = tmp_path / "emb.npy"
    np.save(emb, np.random.default_rng(0).standard_normal((n, 8)).astype(np.float32))
    assert main(["sample", "gcl", str(wl), "--embeddings", str(emb), "--out", str(tmp_path / "g.json")]) == 0
    assert _plan(tmp_path / "g.json")["method"] == "gcl"
    np.save(emb, np.zeros((n - 1, 8), np.float32))
    assert main(["sample", "gcl", str(wl), "--embeddings", str(emb), "--out", str(tmp_path / "g2.json")]) == 2
    assert f"{n - 1} rows but" in capsys.readouterr().err and not (tmp_path / "g2.json").exists()


def _n_invocations(wl):
    return len([ln for ln in (wl / "kernelslist.g").read_text().splitlines() if ln.startswith("kernel-")])


def _run_embeddings(wl, tmp_path, columns: int, model: dict | None):
    """A run dir holding random embeddings of ``columns`` and, given ``model``, the config.yaml
    train.py would write beside them; returns (run dir, embeddings.npy)."""
    import yaml

    run = tmp_path / "run"
    run.mkdir()
    emb = run / "embeddings.npy"
    np.save(emb, np.random.default_rng(0).standard_normal((_n_invocations(wl), columns)).astype(np.float32))
    if model is not None:
        (run / "config.yaml").write_text(yaml.safe_dump({"model": model, "seed": 0}))
    return run, emb


@pytest.mark.parametrize("columns, model, refused", [
    (264, None, "264 columns, the width of the project's encoder (256 + the 8-column size vector), and no "
                "config.yaml of a model=paper run beside it"),
    (264, {"inst_stats": True, "kernel_features": True, "out_dim": 256},
     "trained by the project's encoder ({dir}/config.yaml: model.inst_stats=true, model.kernel_features=true)"),
    (256, {"inst_stats": True, "kernel_features": False, "out_dim": 256},
     "trained by the project's encoder ({dir}/config.yaml: model.inst_stats=true)"),
    (264, {"inst_stats": False, "kernel_features": False, "out_dim": 264}, None),  # its run says model=paper
    (256, None, None),  # the paper encoder's width (<workload>/paper_embeddings.npy has no config.yaml)
    (256, {"inst_stats": False, "kernel_features": False, "out_dim": 256}, None),
])
def test_gcl_paper_refuses_the_projects_embeddings(wl, tmp_path, capsys, columns, model, refused):
    """gcl_paper clustered any --embeddings, the project's encoder's (264 columns: the size
    vector) included; the run's config.yaml beside the file, else its width, tells them apart."""
    run, emb = _run_embeddings(wl, tmp_path, columns, model)
    out = tmp_path / "p.json"
    code = main(["sample", "gcl_paper", str(wl), "--embeddings", str(emb), "--out", str(out)])
    err = capsys.readouterr().err
    if refused is None:
        assert code == 0 and _plan(out)["config"]["embedding_dims"] == columns
        return
    assert code == 2 and not out.exists() and err.count("\n") == 1
    assert err.startswith(f"gclsampler: error: --embeddings: {emb}: {refused.format(dir=run)}; gcl_paper clusters "
                          "the paper's encoder's embeddings: give the embeddings.npy of a `python train.py "
                          "model=paper` run (or use gcl)"), err
    # gcl clusters them as they are (without the size vector: with the settings that do not read it)
    plain = [] if columns == 264 else ["--set", "cluster={split_tolerance: 0, representative: medoid}"]
    assert main(["sample", "gcl", str(wl), "--embeddings", str(emb), "--out", str(out), *plain]) == 0


@pytest.mark.parametrize("method", ["gcl", "gcl_stem"])
@pytest.mark.parametrize("columns, model, refused", [
    (256, None, "256 columns, the width of the paper's encoder (no size vector), and no config.yaml of a run with "
                "model.kernel_features=true beside it"),
    (256, {"inst_stats": True, "kernel_features": False, "out_dim": 256},
     "trained without the size vector ({dir}/config.yaml: model.kernel_features=false)"),
    (264, {"inst_stats": False, "kernel_features": False, "out_dim": 264},
     "trained without the size vector ({dir}/config.yaml: model.kernel_features=false)"),
    (264, None, None),  # the project encoder's width: the size vector is its last 8 columns
    (264, {"inst_stats": True, "kernel_features": True, "out_dim": 256, "kfeat_scale": 0.5},
     "its size vector is scaled ({dir}/config.yaml: model.kfeat_scale=0.5)"),  # read as log2 instructions
    (264, {"inst_stats": True, "kernel_features": True, "out_dim": 256, "kfeat_scale": 1.0}, None),
    (256, {"inst_stats": True, "kernel_features": True, "out_dim": 248}, None),
    (40, None, None),  # someone's own embeddings: not refused by width
])
def test_gcl_refuses_embeddings_without_the_size_vector(wl, tmp_path, capsys, method, columns, model, refused):
    """gcl's work split and work_mean representative read the size vector's SM-0 instructions
    (cluster.split_column -6); on a model=paper run's embeddings they cut on a learned column
    without a word (train.py already refused that pairing; `sample --embeddings` did not).
    gcl_stem reads neither (STEM draws its members, and it has no work split): never refused."""
    run, emb = _run_embeddings(wl, tmp_path, columns, model)
    out = tmp_path / "p.json"
    code = main(["sample", method, str(wl), "--embeddings", str(emb), "--out", str(out)])
    err = capsys.readouterr().err
    if refused is None or method == "gcl_stem":  # STEM draws gcl_stem's members; it has no work split
        assert code == 0, err
        return
    assert code == 2 and not out.exists() and err.count("\n") == 1, err
    uses = "cluster.split_tolerance and cluster.representative=work_mean"
    assert err.startswith(f"gclsampler: error: --embeddings: {emb}: {refused.format(dir=run)}; {method} with {uses} "
                          "reads the size vector's work column"), err
    assert main(["sample", method, str(wl), "--embeddings", str(emb), "--out", str(out),
                 "--set", "cluster={split_tolerance: 0, representative: medoid}"]) == 0


@pytest.mark.parametrize("argv,message", [
    (["nosuch"], "unknown method 'nosuch'; available:"),
    (["photon", "--set", "thresh=0.9"], "--set thresh: photon has no parameter 'thresh'; it takes: threshold, match_launch"),
    (["photon", "--set", "threshold"], "expected KEY=VALUE"),
    (["gcl"], "needs --embeddings"),
    (["pka", "--embeddings", "e.npy"], "--embeddings: pka does not read embeddings (only gcl, gcl_stem, gcl_paper do)"),
    (["photon", "--embeddings", "e.npy"], "--embeddings: photon does not read embeddings"),
    (["photon", "--set", "threshold=0.9", "--set", "threshold=0.8"], "--set threshold: given twice"),
])
def test_bad_requests_are_one_line_errors(wl, tmp_path, capsys, argv, message):
    method, *rest = argv
    out = tmp_path / "p.json"
    assert main(["sample", method, str(wl), "--out", str(out), *rest]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("argv,message", [
    # wrong type
    (["photon", "--set", "threshold=abc"], "--set threshold: must be a number, found 'abc'"),
    (["photon", "--set", "match_launch=3"], "--set match_launch: must be true or false, found 3"),
    (["sieve", "--set", "kde=maybe"], "--set kde: must be true or false, found 'maybe'"),
    (["pka", "--set", "k_max=2.5"], "--set k_max: must be a whole number, found 2.5"),
    (["stem_root", "--set", "time_column=5"], "--set time_column: profile.csv has no column 5"),
    (["allegro", "--set", "time_column=[time_ns]"], "--set time_column: profile.csv has no column ['time_ns']"),
    (["gcl", "--set", "cluster=3"], "--set cluster: expected a mapping of cluster settings, got int"),
    # bad value
    (["photon", "--set", "threshold=2"], "--set threshold: must be at most 1, found 2"),
    (["random", "--set", "fraction=0"], "--set fraction: must be a number > 0, found 0"),
    (["sieve", "--set", "bandwidth=silvermann"], "--set bandwidth: expected 'silverman' or 'scott' or a positive number"),
    (["sieve", "--set", "representative=mean"], "--set representative: must be one of dominant_cta, max_cta"),
    (["pka", "--set", "k_min=0"], "--set k_min: must be an integer >= 1, found 0"),
    (["pka", "--set", "k_min=5", "--set", "k_max=2"], "--set k_min/k_max: need 1 <= k_min <= k_max, found 5, 2"),
    (["pka", "--set", "pca_variance=2"], "--set pca_variance: must be in (0, 1], found 2"),
    (["allegro", "--set", "floor=0"], "--set floor: must be an integer >= 1, found 0"),
    (["allegro", "--set", "z=100"], "--set z: must be a number in [0.01, 40]"),
    (["stem_root", "--set", "epsilon=2"], "--set epsilon: must be a number in (0, 1), found 2"),
    (["stem_root", "--set", "scope=x"], "--set scope: must be 'global' or 'group', found 'x'"),
    (["stem_root", "--set", "time_column=time"], "--set time_column: profile.csv has no column 'time'"),
    (["gcl_stem", "--set", "time_column=time"], "--set time_column: profile.csv has no column 'time'"),
    (["allegro", "--set", "time_column=time"], "--set time_column: profile.csv has no column 'time'"),
    (["sieve", "--set", "inst_column=inst"], "--set inst_column: profile.csv has no column 'inst'"),
    (["gcl", "--set", "cluster={split_tolerance: -1}"], "--set cluster.split_tolerance: must be a finite number >= 0"),
    # misspelt key (of the nested cluster settings; a top-level one: test_bad_requests_are_one_line_errors)
    (["gcl_stem", "--set", "cluster={nope: 1}"], "--set cluster.nope: unknown key (known: "),
])
def test_set_errors_name_the_option_as_typed(wl, tmp_path, capsys, argv, message):
    """Each names ``--set KEY`` as the user typed it, not the method (``sieve: bandwidth``,
    ``--set (photon): threshold``) nor a config path (``stem.time_column``)."""
    method, *rest = argv
    out = tmp_path / "p.json"
    if method in ("gcl", "gcl_stem"):  # the parameters are checked before the embeddings are read
        rest += ["--embeddings", str(tmp_path / "e.npy")]
    assert main(["sample", method, str(wl), "--out", str(out), *rest]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gclsampler: error: {message}") and err.count("\n") == 1 and not out.exists()


def test_out_is_required_and_says_so_in_the_usage(wl, capsys):
    with pytest.raises(SystemExit) as info:
        main(["sample", "pka", str(wl)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "required: --out" in err
    with pytest.raises(SystemExit):
        main(["sample", "--help"])
    assert "--out OUT" in capsys.readouterr().out.replace("[--out OUT]", "")


@pytest.mark.parametrize("method", ["pka", "sieve"])
def test_representative_work_mean_is_a_set_option(wl, tmp_path, capsys, method):
    out = tmp_path / f"{method}.json"
    assert main(["sample", method, str(wl), "--out", str(out), "--set", "representative=work_mean"]) == 0
    assert _plan(out)["config"]["representative"] == "work_mean"
    bad = tmp_path / "bad.json"
    assert main(["sample", method, str(wl), "--out", str(bad), "--set", "representative=mean"]) == 2
    err = capsys.readouterr().err
    assert "--set representative: must be one of" in err and "'mean'" in err and not bad.exists()


def test_missing_profile_and_list(tmp_path, capsys):
    assert main(["sample", "pka", str(tmp_path), "--out", str(tmp_path / "p.json")]) == 2
    assert "profile.csv: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # as --help: before the positionals are required
        main(["sample", "--list"])
    assert exc.value.code == 0
    listed = capsys.readouterr().out
    for name in ("pka", "sieve", "allegro", "random", "stem_root", "photon", "gcl", "gcl_stem"):
        assert f"\n{name} " in "\n" + listed
    assert "threshold=0.95" in listed
    # each summary is the docstring's whole first paragraph (gcl_paper's first line ends in "on")
    assert "the first invocation of each cluster simulated." in " ".join(listed.split())


def test_a_real_workload_is_labelled_real_with_its_gpu(tmp_path, capsys):
    """The committed real/nw (measured on an H200): the plan says it is not synthetic and the
    one-line summary names the GPU, so a plan made from hardware data is not mistaken for either
    kind."""
    from pathlib import Path

    real_nw = Path(__file__).resolve().parents[1] / "real" / "nw"
    if not (real_nw / "workload.json").exists():
        pytest.skip("real/nw not committed")
    out = tmp_path / "pka.json"
    assert main(["sample", "pka", str(real_nw), "--out", str(out)]) == 0
    doc = _plan(out)
    assert doc["synthetic"] is False and doc["n_invocations"] == 255
    assert "pka plan for nw (REAL, NVIDIA H200)" in capsys.readouterr().out


def test_sieve_takes_subnormal_counts_and_bandwidths(wl_copy, tmp_path, capsys):
    """Counts 0, 5e-324, 1e-323 (a subnormal Silverman h) and --set bandwidth=5e-324 gave a
    traceback (numpy's "repeats may not contain negative values"); both are legal input."""
    from gclsampler.profile import read_profile, write_profile

    out = tmp_path / "p.json"
    assert main(["sample", "sieve", str(wl_copy), "--out", str(out), "--set", "bandwidth=5e-324"]) == 0
    df = read_profile(wl_copy / "profile.csv")
    name = df["kernel_name"].value_counts().index[0]
    rows = np.flatnonzero(df["kernel_name"].to_numpy() == name)
    df.loc[rows, "inst_executed"] = 1.0
    df.loc[rows[:5], "inst_executed"] = [0.0, 5e-324, 5e-324, 1e-323, 1e-323]
    write_profile(df, wl_copy / "profile.csv")
    assert main(["sample", "sieve", str(wl_copy), "--out", str(out)]) == 0
    weights = sorted(s["weight"] for s in _plan(out)["samples"] if s["kernel_name"] == name)
    assert weights == [rows.size - 5, 5]  # 0 .. 1e-323 one mode (as 0, 1, 2 at h = 1), 1.0 another
    assert "Traceback" not in capsys.readouterr().err


def test_options_may_come_before_the_workload(tiny_workload, tmp_path, capsys):
    """`sample random --out p.json WL` was refused ("unrecognized arguments: WL"): two optional
    positionals let argparse bind WORKLOAD to nothing. Any order gives the same plan."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["sample", "random", "--seed", "3", "--out", str(a), str(tiny_workload)]) == 0
    assert main(["sample", "random", str(tiny_workload), "--out", str(b), "--seed", "3"]) == 0
    assert a.read_bytes() == b.read_bytes()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["sample", "random", "--out", str(tmp_path / "c.json")])
    assert exc.value.code == 2 and "workload" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("method", ["gcl", "gcl_stem"])
def test_gcl_from_embeddings_runs_without_torch(wl, tmp_path, method):
    """Sampling from a training run's embeddings needs numpy and the encoder's config, not the
    encoder: importing torch was seconds of every ``gclsampler sample gcl``. Run in a process
    where ``import torch`` fails, so an import of it anywhere on the path breaks this test."""
    import subprocess
    import sys

    emb = tmp_path / "emb.npy"
    np.save(emb, np.random.default_rng(1).standard_normal((_n_invocations(wl), 264)).astype(np.float32))
    out = tmp_path / f"{method}.json"
    code = ("import sys; sys.modules['torch'] = None; from gclsampler.cli import main; "
            f"sys.exit(main(['sample', '{method}', {str(wl)!r}, '--embeddings', {str(emb)!r}, '--out', {str(out)!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _plan(out)["method"] == method


@pytest.mark.parametrize("argv", [["sample", "pka"], ["stem"]])
def test_profile_csv_is_parsed_once(wl, tmp_path, monkeypatch, argv):
    """The validator's parse is the one the sampler uses: at a million invocations each
    read of profile.csv costs seconds, and `sample` and `stem` used to read it twice."""
    import gclsampler.profile as profile_mod

    reads: list[str] = []
    real = profile_mod.read_profile

    def counting(path):
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(profile_mod, "read_profile", counting)
    out = tmp_path / "plan.json"
    where = [str(wl)] if argv[0] == "sample" else [str(wl / "profile.csv"), "--epsilon", "0.25"]
    assert main([*argv, *where, "--out", str(out)]) == 0
    assert reads.count(str(wl / "profile.csv")) == 1, reads
    assert _plan(out)["n_invocations"] == len(real(wl / "profile.csv"))


@pytest.mark.parametrize("method", ["gcl", "gcl_stem"])
def test_embeddings_far_from_the_encoders_scale_still_give_a_plan(wl, tmp_path, method):
    """Finite embeddings are accepted at any scale (clustering rescales by a power of two), so
    the work column far beyond 2**1024 must not crash the work_mean representative."""
    _, emb = _run_embeddings(wl, tmp_path, 264, None)
    np.save(emb, np.load(emb) * 2000)
    out = tmp_path / "p.json"
    assert main(["sample", method, str(wl), "--embeddings", str(emb), "--out", str(out)]) == 0
    doc = _plan(out)
    assert len({s["cluster"] for s in doc["samples"]}) == len(doc["clusters"])


def test_embeddings_whose_run_clustered_other_kernels_are_flagged(wl, tmp_path, capsys):
    """Only the row count was checked, so another workload's embeddings with as many invocations
    gave a plan of the wrong kernels without a word. The clusters.csv train.py writes beside
    them names each row's kernel: a row that differs from this workload's profile is said, on
    the first such row; the same run's own names say nothing."""
    import csv

    from gclsampler.cluster import write_clusters_csv
    from gclsampler.profile import read_profile

    names = read_profile(wl / "profile.csv")["kernel_name"].tolist()
    run = tmp_path / "run"
    run.mkdir()
    emb = run / "embeddings.npy"
    np.save(emb, np.random.default_rng(1).standard_normal((len(names), 8)).astype(np.float32))
    out = tmp_path / "g.json"
    write_clusters_csv(run / "clusters.csv", np.zeros(len(names), int), names)
    assert main(["sample", "gcl", str(wl), "--embeddings", str(emb), "--out", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err
    other = list(names)
    i = len(other) // 2
    other[i] = other[i] + "_other"
    write_clusters_csv(run / "clusters.csv", np.zeros(len(names), int), other)
    assert main(["sample", "gcl", str(wl), "--embeddings", str(emb), "--out", str(out)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gclsampler: warning: --embeddings: {emb}: invocation {i} is {other[i]!r} in the run that wrote "
                   f"them ({run / 'clusters.csv'}, line {i + 2}) but {names[i]!r} here ({wl / 'profile.csv'}); these "
                   "look like another workload's embeddings (row i must be invocation i), so the plan may sample "
                   "the wrong kernels"]
    _plan(out)  # still written, every invocation weighted
    with open(run / "clusters.csv", "a", newline="") as fh:  # another length: not this file's run, nothing said
        csv.writer(fh, lineterminator="\n").writerow([len(names), "x", 0])
    assert main(["sample", "gcl", str(wl), "--embeddings", str(emb), "--out", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("read_only", [True, False])
def test_an_out_that_cannot_be_written_is_refused_before_the_method_fits(wl, tmp_path, capsys, monkeypatch,
                                                                          read_only):
    """An --out in a read-only place was found only when the plan was saved, after the method had
    fitted (minutes for gcl on a large workload). It is refused with the checks of --out, before the
    workload is loaded. (os.access is stubbed: tests may run as root, which permission bits do not stop.)"""
    import os

    import gclsampler._safe_out as safe_out
    from gclsampler.workload import Workload

    ro = tmp_path / "ro"
    ro.mkdir()
    real_access = os.access
    monkeypatch.setattr(safe_out.os, "access", lambda p, mode: False if Path(p) == ro else real_access(p, mode))
    monkeypatch.setattr(safe_out, "_read_only_fs", lambda p: read_only)

    def never(*a, **k):
        raise AssertionError("the workload was loaded before --out was checked")

    monkeypatch.setattr(Workload, "load", never)
    out = ro / "sub" / "p.json"  # its parent does not exist yet: the nearest one that does is checked
    assert main(["sample", "pka", str(wl), "--out", str(out)]) == 2
    why = "a read-only filesystem" if read_only else "no write permission"
    assert capsys.readouterr().err.strip() == (f"gclsampler: error: {out}: cannot be written: {ro} is not writable "
                                               f"({why}); choose another --out")
    assert sorted(ro.iterdir()) == []
