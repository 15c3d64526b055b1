"""Bad plans, profiles, results and parameters: one located line and exit 2, never a traceback.

Each test builds its inputs in Python (small profiles, plans and traces), so the file runs in
seconds; the numbers in the names refer to the bug list these tests were written for.
"""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from gclsampler.cli import main
from gclsampler.errors import GclError
from gclsampler.plan import ClusterInfo, PlanError, Sample, SamplingPlan, plan_from_labels
from gclsampler.workload import Workload

NAMES = ["gemm_A", "softmax_B", "copy_C"]


def _profile(n=30, seed=0, names=NAMES, scale=1.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = rng.gamma(3.0, 1000.0, n) * scale
    return pd.DataFrame({"invocation": np.arange(n), "kernel_name": [names[i % len(names)] for i in range(n)],
                         "grid": "(8,1,1)", "block": "(128,1,1)", "time_ns": t, "cycles": np.round(t / scale * 1.4),
                         "inst_executed": np.full(n, 4096)})


def _workload_dir(tmp_path, prof: pd.DataFrame, name="wl"):
    d = tmp_path / name
    d.mkdir()
    prof.to_csv(d / "profile.csv", index=False)
    return d


def _plan(n=30, names=NAMES) -> SamplingPlan:
    labels = np.arange(n) % len(names)
    reps = np.arange(len(names))
    return plan_from_labels("toy", "gcl", labels, reps, np.array([names[i % len(names)] for i in range(n)]),
                            {"k": len(names)}, synthetic=True)


def _err(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


# 1 ---------------------------------------------------------------------------------------
def test_weight_on_an_empty_cluster_is_rejected(tmp_path, capsys):
    doc = {"format": "gclsampler-plan/1", "workload": "w", "method": "m", "n_invocations": 4,
           "samples": [{"invocation": 0, "kernel_name": "k", "cluster": 0, "weight": 4},
                       {"invocation": 1, "kernel_name": "k", "cluster": 7, "weight": 2}],
           "clusters": [{"id": 0, "size": 4}, {"id": 7, "size": 0}]}
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(PlanError, match=r"plan\.json: cluster 7: size 0, but its samples carry weight 2"):
        SamplingPlan.load(p)
    assert main(["plan", "show", str(p)]) == 2
    assert "cluster 7" in _err(capsys)
    # the same plan built in memory cannot be saved either
    plan = SamplingPlan("w", "m", 4, [Sample(0, "k", 0, 4.0), Sample(1, "k", 7, 2.0)],
                        [ClusterInfo(0, 4), ClusterInfo(7, 0)])
    with pytest.raises(PlanError, match="cluster 7"):
        plan.save(tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_a_cluster_id_twice_is_refused_in_memory_as_in_the_file(tmp_path):
    """validate() kept cluster sizes in a dict, so two clusters with one id (sizes 3 + 5 for 5
    invocations) passed, save() wrote them, and load() then refused the file it had written."""
    plan = SamplingPlan("w", "m", 5, [Sample(0, "k", 0, 5.0)], [ClusterInfo(0, 3), ClusterInfo(0, 5)])
    with pytest.raises(PlanError, match=r"clusters: an id appears more than once"):
        plan.save(tmp_path / "plan.json")
    assert not (tmp_path / "plan.json").exists()


@pytest.mark.parametrize("sampler", ["stem_root", "allegro"])
def test_numpy_scalars_are_error_bounds_like_floats(sampler):
    """``epsilon=np.float64(0.05)`` (a value taken from an array) was refused as "must be a number
    in (0, 1)"; accepted, it must give the plan a Python float gives, byte for byte."""
    from gclsampler.baselines import AllegroSampler
    from gclsampler.stem import StemRootSampler

    cls = {"stem_root": StemRootSampler, "allegro": AllegroSampler}[sampler]
    wl = Workload("w", _profile())
    as_numpy = cls(epsilon=np.float64(0.05), z=np.int64(2)).fit(wl).to_json()
    assert as_numpy == cls(epsilon=0.05, z=2).fit(wl).to_json()
    with pytest.raises(GclError, match="epsilon"):
        cls(epsilon=np.bool_(True)).fit(wl)


@pytest.mark.parametrize("n", [7, 10**6, 10**12])
def test_weights_may_round_but_never_count_a_whole_invocation_more(n):
    """N/m weights are not exact in binary, so a sum off by rounding is accepted; one off by a
    whole invocation is refused however large the plan (a relative tolerance alone is not)."""
    def plan(weights):
        return SamplingPlan("w", "m", n, [Sample(i, "k", 0, w) for i, w in enumerate(weights)], [ClusterInfo(0, n)])

    m = 3
    plan([n / m] * m).validate()
    with pytest.raises(PlanError, match="weights sum to"):
        plan([n / m] * (m - 1) + [n / m + 1]).validate()


@pytest.mark.parametrize("method", ["stem", "stem_root", "gcl_stem", "allegro"])
def test_an_empty_cell_in_the_time_column_is_named_by_line(tmp_path, capsys, method):
    """cycles is optional in profile.csv (an nsys or torch import has none), so a sampler pointed
    at it met empty cells that only the statistics noticed, as an array index."""
    prof = _profile()
    prof["cycles"] = prof["cycles"].astype(float)
    prof.loc[4, "cycles"] = np.nan
    wl = _workload_dir(tmp_path, prof)
    out = tmp_path / "plan.json"
    if method == "stem":
        args = ["stem", str(wl / "profile.csv"), "--out", str(out), "--time-column", "cycles"]
    else:
        emb = tmp_path / "emb.npy"
        np.save(emb, np.random.default_rng(0).normal(size=(len(prof), 4)).astype(np.float32))
        args = ["sample", method, str(wl), "--out", str(out), "--set", "time_column=cycles",
                *(["--embeddings", str(emb)] if method == "gcl_stem" else [])]
    assert main(args) == 2
    assert re.search(r"profile\.csv:6: cycles: empty; .* \(1 of 30 rows have none\)", _err(capsys))
    assert not out.exists()


def test_stem_reports_the_speedup_in_time_whichever_column_sized_the_plan(tmp_path, capsys):
    """`stem --time-column inst_executed` printed total / sampled instructions as the
    "profile time" speedup; `sample stem_root --set time_column=...` and `plan show --profile`
    give time for the same plan."""
    prof = _profile()
    prof["inst_executed"] = np.arange(1, len(prof) + 1) * 1000.0  # not proportional to time
    wl = _workload_dir(tmp_path, prof)
    out = tmp_path / "plan.json"
    assert main(["stem", str(wl / "profile.csv"), "--out", str(out), "--time-column", "inst_executed"]) == 0
    said = re.search(r"expected speedup ([0-9.]+)x", capsys.readouterr().out)
    plan = SamplingPlan.load(out)
    t = prof["time_ns"].to_numpy()
    assert said and float(said.group(1)) == pytest.approx(plan.speedup(t), abs=0.05)
    assert abs(plan.speedup(prof["inst_executed"].to_numpy()) - plan.speedup(t)) > 0.1  # the columns disagree


@pytest.mark.parametrize("opts, needle", [
    (["--epsilon", "0"], "--epsilon: must be a number in (0, 1), found 0.0"),
    (["--min-samples", "0"], "--min-samples: must be an integer >= 1, found 0"),
    (["--min-group", "-3"], "--min-group: must be an integer >= 1, found -3"),
    (["--z", "99"], "--z: must be a number in [0.01, 40]"),
    (["--time-column", "foo"], "profile.csv:1: foo: no such column (--time-column)"),
])
def test_stem_names_its_own_options(tmp_path, capsys, opts, needle):
    """The command's options, not the config keys (stem.epsilon) or the workload's name."""
    wl = _workload_dir(tmp_path, _profile())
    assert main(["stem", str(wl / "profile.csv"), "--out", str(tmp_path / "p.json"), *opts]) == 2
    assert needle in _err(capsys)
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("meta, needle, label", [
    ({"workload": "mine", "synthetic": "no"}, "workload.json: synthetic: expected true or false, found 'no'", None),
    ("{not json", "workload.json:1: not JSON", None),
    ({"workload": "mine"}, None, "stem_root plan for mine\n"),  # neither known synthetic nor measured
    ({"workload": "mine", "synthetic": False}, None, "stem_root plan for mine (REAL)\n"),  # it printed no label
    ({"workload": "mine", "synthetic": False, "gpu": "NVIDIA H200"}, None, "stem_root plan for mine (REAL, NVIDIA H200)\n"),
    ({"workload": "mine", "synthetic": True}, None, "stem_root plan for mine (SYNTHETIC)\n"),
])
def test_stem_reads_the_label_through_the_checked_reader(tmp_path, capsys, meta, needle, label):
    """A profile.csv without traces beside it still has its workload.json read: the string "no"
    used to label the plan SYNTHETIC, and a broken file was silently ignored."""
    wl = _workload_dir(tmp_path, _profile())
    (wl / "workload.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    rc = main(["stem", str(wl / "profile.csv"), "--out", str(tmp_path / "p.json")])
    out, err = capsys.readouterr()
    if needle:
        assert rc == 2 and needle in err and not (tmp_path / "p.json").exists(), err
    else:
        assert rc == 0 and label in out
        assert json.loads((tmp_path / "p.json").read_text())["synthetic"] is bool(meta.get("synthetic"))


def test_stem_on_a_workloads_profiles_csv_reads_the_workload_json_above(tmp_path, capsys):
    """``stem WL/profiles/ampere.csv`` named the plan "profiles" and did not label it SYNTHETIC; a
    profile with no workload.json anywhere near it now says its plan carries no label."""
    wl = _workload_dir(tmp_path, _profile())
    (wl / "workload.json").write_text(json.dumps({"workload": "mine", "synthetic": True}))
    (wl / "profiles").mkdir()
    (wl / "profiles" / "ampere.csv").write_bytes((wl / "profile.csv").read_bytes())
    assert main(["stem", str(wl / "profiles" / "ampere.csv"), "--out", str(tmp_path / "p.json")]) == 0
    assert "stem_root plan for mine (SYNTHETIC)" in capsys.readouterr().out
    plan = json.loads((tmp_path / "p.json").read_text())
    assert plan["synthetic"] is True and plan["workload"] == "mine"
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "times.csv").write_bytes((wl / "profile.csv").read_bytes())
    assert main(["stem", str(lone / "times.csv"), "--out", str(tmp_path / "q.json")]) == 0
    assert "no workload.json beside it" in capsys.readouterr().err
    assert main(["stem", str(wl / "profile.csv"), "--out", str(tmp_path / "r.json"), "--no-root"]) == 0
    assert "stem_root plan (plain STEM, --no-root) for mine" in capsys.readouterr().out


# 2 ---------------------------------------------------------------------------------------
def test_show_refuses_a_profile_of_another_workload(tmp_path, capsys):
    plan = _plan()
    p = plan.save(tmp_path / "plan.json")
    other = _profile(names=["gemm_A", "OTHER", "copy_C"])
    other.to_csv(tmp_path / "profile.csv", index=False)
    assert main(["plan", "show", str(p), "--profile", str(tmp_path / "profile.csv")]) == 2
    err = _err(capsys)
    assert "profile.csv:3: kernel_name: 'OTHER', but sampled invocation 1 of" in err and "'softmax_B'" in err
    _profile().to_csv(tmp_path / "profile.csv", index=False)
    assert main(["plan", "show", str(p), "--profile", str(tmp_path / "profile.csv")]) == 0


@pytest.mark.parametrize("spelling", ["void softmax_B<8>(int *, float *)", "_Z9softmax_BILi8EEvPiPf"])
def test_show_takes_another_spelling_of_the_same_kernel(tmp_path, capsys, spelling):
    """One kernel spelt as another tool writes it (demangled with other spaces, or mangled):
    validate, reconstruct and export-accelsim accept it, so show must too (it compared bytes)."""
    plan = _plan(names=["gemm_A", "void softmax_B<8>(int*, float*)", "copy_C"])
    p = plan.save(tmp_path / "plan.json")
    _profile(names=["gemm_A", spelling, "copy_C"]).to_csv(tmp_path / "profile.csv", index=False)
    assert main(["plan", "show", str(p), "--profile", str(tmp_path / "profile.csv")]) == 0, _err(capsys)
    assert "expected speedup" in capsys.readouterr().out


def test_reconstruct_csv_compares_kernel_names_when_it_has_them(tmp_path, capsys):
    plan = _plan()
    p = plan.save(tmp_path / "plan.json")
    inv = sorted(s.invocation for s in plan.samples)
    csv = tmp_path / "res.csv"
    pd.DataFrame({"invocation": inv, "kernel_name": ["gemm_A", "softmax_B", "elsewhere"],
                  "cycles": [10, 20, 30]}).to_csv(csv, index=False)
    assert main(["plan", "reconstruct", str(p), str(csv)]) == 2
    err = _err(capsys)
    assert "res.csv:4: kernel_name: 'elsewhere', but sampled invocation 2 is 'copy_C'" in err
    assert main(["plan", "reconstruct", str(p), str(csv), "--no-name-check"]) == 0
    pd.DataFrame({"invocation": inv, "cycles": [10, 20, 30]}).to_csv(csv, index=False)  # no names: nothing to compare
    assert main(["plan", "reconstruct", str(p), str(csv)]) == 0


def test_export_refuses_traces_of_another_workload(tmp_path, capsys):
    from _trace_fixtures import Inst, make_trace

    from gclsampler.trace import write_kernel, write_kernelslist

    plan = _plan(6)
    p = plan.save(tmp_path / "plan.json")
    wdir = tmp_path / "wl"
    wdir.mkdir()
    files = []
    for i in range(6):
        name = "renamed" if i == 1 else NAMES[i % 3]
        write_kernel(make_trace([[Inst("EXIT")]], kernel_id=i + 1, name=name), wdir / f"kernel-{i + 1}.traceg")
        files.append(f"kernel-{i + 1}.traceg")
    write_kernelslist(wdir, files)
    assert main(["plan", "export-accelsim", str(p), str(wdir), str(tmp_path / "out")]) == 2
    err = _err(capsys)
    assert "kernel-2.traceg: -kernel name: 'renamed', but sampled invocation 1 of" in err and "'softmax_B'" in err
    assert not (tmp_path / "out").exists()


# 3 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [1, 1.0, 2.5])
def test_epsilon_must_be_below_one(eps):
    from gclsampler.baselines import AllegroSampler
    from gclsampler.stem import StemError, StemRootSampler, stem_root

    with pytest.raises(StemError, match=r"stem\.epsilon: must be a number in \(0, 1\)"):
        stem_root(np.arange(1.0, 10.0), epsilon=eps)
    wl = Workload("w", _profile())
    with pytest.raises(StemError, match="epsilon"):
        StemRootSampler(epsilon=eps).fit(wl)
    with pytest.raises(GclError, match=r"allegro: epsilon: must be a number in \(0, 1\)"):
        AllegroSampler(epsilon=eps).fit(wl)


# 4 ---------------------------------------------------------------------------------------
def test_reconstruct_csv_duplicate_column_and_bom(tmp_path, capsys):
    plan = _plan()
    p = plan.save(tmp_path / "plan.json")
    inv = sorted(s.invocation for s in plan.samples)
    dup = tmp_path / "dup.csv"
    dup.write_text("invocation,cycles,cycles\n" + "".join(f"{i},1,2\n" for i in inv))
    assert main(["plan", "reconstruct", str(p), str(dup)]) == 2
    assert _err(capsys).endswith(f"{dup}:1: cycles: column appears twice")
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + ("invocation,cycles\n" + "".join(f"{i},100\n" for i in inv)).encode())
    assert main(["plan", "reconstruct", str(p), str(bom), "--json"]) == 0  # auto-detected as CSV
    assert json.loads(capsys.readouterr().out)["totals"]["cycles"] == pytest.approx(100 * plan.n_invocations)


def test_reconstruct_csv_with_an_unclosed_quote_is_one_located_error(tmp_path, capsys):
    """The quote runs on past the csv module's field limit (128 KiB): csv.Error was a traceback."""
    plan = _plan(30000)
    p = plan.save(tmp_path / "plan.json")
    res = tmp_path / "res.csv"
    quote = ['"' if i == 5 else "" for i in range(plan.n_invocations)]
    res.write_text("invocation,note,cycles\n" + "".join(f"{i},{q}x,{100 + i}\n" for i, q in enumerate(quote)))
    assert main(["plan", "reconstruct", str(p), str(res)]) == 2
    err = _err(capsys)
    assert err.startswith(f"gclsampler: error: {res}:7: malformed CSV") and "unclosed quote" in err, err


# 5 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("cycles", ["0", "-5"])
def test_log_cycles_must_be_positive(tmp_path, capsys, cycles):
    plan = _plan(3)
    p = plan.save(tmp_path / "plan.json")
    blocks = [f"kernel_name = {s.kernel_name}\nkernel_launch_uid = {j + 1}\ngpu_sim_cycle = "
              f"{cycles if j == 1 else 100}\ngpu_sim_insn = 50\n"
              for j, s in enumerate(sorted(plan.samples, key=lambda s: s.invocation))]
    log = tmp_path / "sim.log"
    log.write_text("".join(blocks))
    assert main(["plan", "reconstruct", str(p), str(log), "--json"]) == 2
    assert _err(capsys).endswith(f"sim.log:7: gpu_sim_cycle: must be > 0, found '{cycles}'")


def test_json_estimates_are_strict_json(tmp_path, capsys):
    plan = _plan()
    p = plan.save(tmp_path / "plan.json")
    csv = tmp_path / "res.csv"
    csv.write_text("invocation,cycles,huge\n" + "".join(f"{s.invocation},10,1e308\n" for s in plan.samples))
    assert main(["plan", "reconstruct", str(p), str(csv), "--json"]) == 0

    def refuse(name):
        raise AssertionError(f"{name} is not JSON")

    doc = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert doc["totals"]["huge"] is None and doc["totals"]["cycles"] == pytest.approx(10 * plan.n_invocations)
    assert doc["no_estimate"] == {"huge": "overflow"}  # null says why: not a missing value
    assert main(["plan", "reconstruct", str(p), str(csv)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"huge +- \(overflow\)", out) and "missing" not in out


@pytest.mark.parametrize("fmt", ["csv", "accelsim"])
def test_reconstruct_a_plan_of_2_62_invocations(tmp_path, capsys, fmt):
    """Only the sampled invocations' values are held: no array of n_invocations is allocated."""
    n = 2**62
    plan = SamplingPlan("big", "gcl", n, [Sample(n - 1, "k", 0, float(n))], [ClusterInfo(0, n)])
    p = plan.save(tmp_path / "plan.json")
    res = tmp_path / ("res.csv" if fmt == "csv" else "sim.log")
    res.write_text(f"invocation,cycles,instructions\n{n - 1},100,250\n" if fmt == "csv" else
                   "kernel_name = k\nkernel_launch_uid = 1\ngpu_sim_cycle = 100\ngpu_sim_insn = 250\n")
    assert main(["plan", "reconstruct", str(p), str(res), "--json"]) == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    assert doc["totals"]["cycles"] == pytest.approx(100.0 * n) and doc["ipc_of_totals"] == pytest.approx(2.5)
    if fmt == "accelsim":
        assert doc["means"]["ipc"] == pytest.approx(2.5)


# 6 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", ["-1", str(2**32), str(2**70)])
def test_seed_outside_32_bits_is_refused(tmp_path, capsys, seed):
    wdir = _workload_dir(tmp_path, _profile())
    assert main(["stem", str(wdir / "profile.csv"), "--seed", seed, "--out", str(tmp_path / "a.json")]) == 2
    assert _err(capsys) == f"gclsampler: error: --seed: must be an integer in [0, 2**32), found {seed}"
    assert main(["sample", "random", str(wdir), "--seed", seed, "--out", str(tmp_path / "b.json")]) == 2
    assert "--seed: must be an integer in [0, 2**32)" in _err(capsys)
    assert not (tmp_path / "a.json").exists() and not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("value", ["abc", 1.5, -1, 2**32, True])
def test_gcl_stem_cluster_random_state_is_checked(value):
    from gclsampler.samplers import GclStemSampler

    prof = _profile()
    wl = Workload("w", prof, embeddings=np.random.default_rng(0).normal(size=(len(prof), 4)).astype(np.float32))
    with pytest.raises(GclError, match=r"cluster_random_state: must be an integer in \[0, 2\*\*32\)"):
        GclStemSampler(cluster_random_state=value).fit(wl)


# 7 ---------------------------------------------------------------------------------------
def test_text_time_and_instruction_columns_are_named(tmp_path, capsys):
    from gclsampler.baselines import AllegroSampler, SieveSampler
    from gclsampler.samplers import GclStemSampler
    from gclsampler.stem import StemRootSampler

    prof = _profile()
    wdir = _workload_dir(tmp_path, prof)
    wl = Workload.load(wdir)
    wl.embeddings = np.random.default_rng(0).normal(size=(len(prof), 4)).astype(np.float32)
    where = f"{wdir}/profile.csv"
    for sampler, col, value in [(StemRootSampler(time_column="grid"), "grid", "(8,1,1)"),
                                (GclStemSampler(time_column="kernel_name"), "kernel_name", "gemm_A"),
                                (AllegroSampler(time_column="block"), "block", "(128,1,1)"),
                                (SieveSampler(inst_column="kernel_name"), "kernel_name", "gemm_A")]:
        with pytest.raises(GclError) as err:
            sampler.fit(wl)
        assert str(err.value) == f"{where}: {col}: not numeric (e.g. line 2: {value!r})"
    assert main(["stem", where, "--time-column", "kernel_name", "--out", str(tmp_path / "p.json")]) == 2
    assert _err(capsys).endswith(f"{where}: kernel_name: not numeric (e.g. line 2: 'gemm_A')")
    p = _plan().save(tmp_path / "plan.json")
    assert main(["plan", "show", str(p), "--profile", where, "--time-column", "grid"]) == 2
    assert _err(capsys).endswith(f"{where}: grid: not numeric (e.g. line 2: '(8,1,1)')")


# 8 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg, message", [({"k_max": "abc"}, "cluster.k_max: must be an integer, got 'abc'"),
                                          ({"tolerance": [1]}, "cluster.tolerance: must be a number"),
                                          ({"normalize": "yes"}, "cluster.normalize: must be true or false"),
                                          ({"representative": 3}, "cluster.representative: must be a string")])
def test_cluster_config_types_are_checked(cfg, message):
    from gclsampler.cluster import ClusterConfig

    with pytest.raises(GclError) as err:
        ClusterConfig.from_any(cfg)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("params, key", [({"n_init": 0}, "n_init"), ({"n_init": 2.5}, "n_init"),
                                         ({"random_state": -1, "target_error": 1e-12}, "random_state")])
def test_pka_parameters_are_one_line(params, key):
    from gclsampler.baselines import PkaSampler
    from gclsampler.profile import PKA_METRICS

    prof = _profile(40)
    rng = np.random.default_rng(1)
    for m in PKA_METRICS:
        prof[m] = rng.integers(1, 100, len(prof))
    with pytest.raises(GclError, match=key) as err:
        PkaSampler(**params).fit(Workload("w", prof))
    assert "\n" not in str(err.value) and str(err.value).startswith("pka: ")


# 9 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("config", [{"epsilon": None, "error_bound": 0.01}, {"epsilon": "x", "error_bound": 0.01},
                                    {"error_bound": "x"}, {"k": "abc", "silhouette": [[3, 0.5]]},
                                    {"k": [3], "silhouette": [[3, 0.5]]}, {"k": 3, "silhouette": "abc"},
                                    {"k": 3, "silhouette": [[3, "x"]]}, {"k": 3, "silhouette": [3]}])
def test_show_ignores_malformed_optional_config(tmp_path, capsys, config):
    out = _show_with_config(tmp_path, capsys, config)
    assert "chosen by silhouette" not in out and "epsilon" not in out


def _show_with_config(tmp_path, capsys, config) -> str:
    """`plan show` of a valid plan whose free-form ``config`` is ``config``; its stdout."""
    doc = _plan().to_dict()
    doc["config"] = config
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(doc))
    assert main(["plan", "show", str(p)]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("config, line", [
    ({"k": 20, "k_silhouette": 4, "silhouette": [[4, 0.79], [20, 0.67]]},
     "K=4 chosen by silhouette 0.7900 (best 0.7900; 2 K scored); the work split and time cuts made 20 clusters"),
    ({"k": 4, "k_silhouette": 4, "silhouette": [[4, 0.79], [20, 0.67]]},
     "K=4 chosen by silhouette 0.7900 (best 0.7900; 2 K scored)\n"),
    ({"k": 3, "silhouette": [[3, 0.5]]}, "K=3 chosen by silhouette 0.5000"),  # a plan from before k_silhouette
    ({"k": 3, "k_silhouette": 3, "silhouette": [[3, 0.5]], "strata_chosen": "kernel_name", "n_strata": 2},
     "clusters: the kernel_name strata (2), which STEM sizes more cheaply than the GCL clusters"),
])
def test_show_names_the_k_the_silhouette_chose(tmp_path, capsys, config, line):
    """lud's gcl plan said "K=20 chosen by silhouette 0.6655 (best 0.7864)": the silhouette chose
    4 and the work split made 20; 0.6655 scored another labelling. gcl_stem's clusters may be
    kernel-name strata rather than that K."""
    assert line in _show_with_config(tmp_path, capsys, config)


@pytest.mark.parametrize("config", [{"error_bound": 10**400, "epsilon": 0.05},
                                    {"k": 3, "silhouette": [[3, 10**400]]}])
def test_show_ignores_config_numbers_past_float_range(tmp_path, capsys, config):
    """JSON ints have no size limit; one past float range is no bound or score (it raised OverflowError)."""
    out = _show_with_config(tmp_path, capsys, config)
    assert "predicted error bound" not in out and "chosen by silhouette" not in out


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["samples"][0].update(invocation=2**70), "samples[0].invocation: 1180591620717411303424 is outside"),
    (lambda d: d["clusters"][0].update(size=-(2**64)), "clusters[0].size: -18446744073709551616 is outside"),
    (lambda d: d["samples"][0].update(weight=10**400), "samples[0].weight: expected a finite number"),
])
def test_load_bounds_numbers(tmp_path, capsys, edit, message):
    doc = _plan().to_dict()
    edit(doc)
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(doc))
    assert main(["plan", "show", str(p)]) == 2
    assert f"plan.json: {message}" in _err(capsys)


def test_load_refuses_a_number_of_thousands_of_digits(tmp_path, capsys):
    text = _plan().to_json().replace('"n_invocations": 30', '"n_invocations": ' + "9" * 5000)
    p = tmp_path / "plan.json"
    p.write_text(text)
    assert main(["plan", "show", str(p)]) == 2
    assert _err(capsys).startswith(f"gclsampler: error: {p}: not a plan: ")


# 10 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1e150, 1e300, 1e-200])
def test_times_far_from_one_give_the_same_sample_sizes(scale):
    from gclsampler.baselines import AllegroSampler, allegro_m_min
    from gclsampler.stem import stem_root

    prof = _profile(60)
    t = prof["time_ns"].to_numpy()
    names = prof["kernel_name"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warnings either
        ref = stem_root(t, names, epsilon=0.05)
        big = stem_root(t * scale, names, epsilon=0.05)
        assert np.array_equal(big.sample_sizes, ref.sample_sizes) and np.array_equal(big.leaf, ref.leaf)
        assert big.error_bound == pytest.approx(ref.error_bound, rel=1e-9)
        assert np.allclose(big.leaf_mean, ref.leaf_mean * scale, rtol=1e-12)
        assert allegro_m_min(t * scale, 0.05) == allegro_m_min(t, 0.05)
        huge = prof.assign(time_ns=t * scale)
        a = AllegroSampler(epsilon=0.2).fit(Workload("w", huge))
        b = AllegroSampler(epsilon=0.2).fit(Workload("w", prof))
        assert a.to_json() == b.to_json()


def test_total_beyond_float64_is_refused():
    from gclsampler.stem import StemError, stem_root

    with pytest.raises(StemError, match="overflows float64"):
        stem_root(np.full(4, 1e308))


# 11, 13 ----------------------------------------------------------------------------------
def test_set_reads_scientific_notation_as_numbers():
    from gclsampler.cli.sample import _parse_params

    got = _parse_params(["epsilon=5e-2", "a=1E3", "b=-2.5e+1", "c={tolerance: 1e-3}", "d='5e-2'", "e=0.1", "f=e5"])
    assert got == {"epsilon": 0.05, "a": 1000.0, "b": -25.0, "c": {"tolerance": 0.001}, "d": "5e-2", "e": 0.1,
                   "f": "e5"}
    with pytest.raises(GclError, match=r"^--set random_state: use --seed instead$"):
        _parse_params(["random_state=3"])


# 12 --------------------------------------------------------------------------------------
def test_embeddings_beyond_float32_name_the_file(tmp_path):
    from gclsampler.embeddings import EmbeddingsError, load_embeddings

    emb = np.zeros((3, 4))
    emb[1, 2] = -1e39
    np.save(tmp_path / "emb.npy", emb)
    with pytest.raises(EmbeddingsError) as err:
        load_embeddings(tmp_path / "emb.npy", 3)
    assert str(err.value).startswith(f"{tmp_path / 'emb.npy'}: row 1: -1e+39 in column 2 overflows float32")



@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.uint64, np.float16, np.float64])
def test_embeddings_of_any_numeric_dtype_load_as_float32(tmp_path, dtype):
    from gclsampler.embeddings import load_embeddings

    emb = np.arange(12).reshape(4, 3).astype(dtype)
    np.save(tmp_path / "emb.npy", emb)
    got = load_embeddings(tmp_path / "emb.npy", 4)
    assert got.dtype == np.float32 and np.array_equal(got, emb.astype(np.float32))


@pytest.mark.parametrize("make, reason", [
    (lambda p: np.save(p, np.ones((4, 3), dtype=bool)), "bool is not a numeric array"),
    (lambda p: np.save(p, np.ones((4, 0), dtype=np.float32)), "shape: (4, 0): no dimensions"),
    (lambda p: np.save(p, np.ones(4, dtype=np.float32)), "shape: (4,): expected (invocations, dims)"),
    (lambda p: p.write_bytes(_npz_bytes()), "an .npz archive; give the .npy array itself"),
])
def test_embeddings_that_are_no_matrix_are_refused_by_reason(tmp_path, make, reason):
    from gclsampler.embeddings import EmbeddingsError, load_embeddings

    p = tmp_path / "emb.npy"
    make(p)
    with pytest.raises(EmbeddingsError) as err:
        load_embeddings(p, 4)
    assert str(err.value).startswith(f"{p}: ") and reason in str(err.value)


def _npz_bytes() -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, emb=np.ones((4, 3)))
    return buf.getvalue()


def test_embeddings_with_bad_rows_name_the_first_and_count_them(tmp_path):
    from gclsampler.embeddings import EmbeddingsError, load_embeddings

    emb = np.zeros((6, 3), dtype=np.float32)
    emb[2, 1], emb[4, 0], emb[5, 2] = np.inf, np.nan, np.nan
    np.save(tmp_path / "emb.npy", emb)
    with pytest.raises(EmbeddingsError) as err:
        load_embeddings(tmp_path / "emb.npy", 6)
    # the value as Python writes it (inf), not numpy 2's repr (np.float32(inf))
    assert str(err.value) == f"{tmp_path / 'emb.npy'}: row 2: not finite (inf in column 1; 3 bad row(s) in all)"


@pytest.mark.parametrize("model, on", [
    ({}, ["model.inst_stats=true", "model.kernel_features=true"]),  # a key left out is ModelConfig's default
    ({"inst_stats": False}, ["model.kernel_features=true"]),
    ({"kernel_features": False}, ["model.inst_stats=true"]),
    ({"inst_stats": False, "kernel_features": False}, []),
])
def test_project_deviations_count_a_missing_key_as_the_default(model, on):
    from gclsampler.embeddings import project_deviations
    from gclsampler.model_config import ModelConfig

    assert ModelConfig.inst_stats and ModelConfig.kernel_features  # the deviations are on by default
    assert project_deviations(model) == on

# 14 --------------------------------------------------------------------------------------
def test_zero_sampled_time_has_no_speedup_number(tmp_path, capsys):
    prof = _profile(20, names=["one"])
    prof.loc[0, "time_ns"] = 0.0  # sieve (one stratum, all alike) simulates invocation 0 alone
    wdir = _workload_dir(tmp_path, prof)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["sample", "sieve", str(wdir), "--out", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out
    assert "expected speedup: n/a (sampled invocations have zero profiled time)" in out and "inf" not in out


def test_plan_show_refuses_a_negative_limit(tmp_path, capsys):
    p = _plan().save(tmp_path / "plan.json")
    assert main(["plan", "show", str(p), "--limit", "-1"]) == 2
    assert "--limit -1: must be >= 0 (0 = all)" in _err(capsys)


@pytest.mark.parametrize("argv, message", [(["--z", "0"], "--z: must be a number in [0.01, 40]"),
                                           (["--z", "1e300"], "--z: "), (["--epsilon", "1"], "--epsilon: ")])
def test_extreme_z_and_epsilon_are_refused(tmp_path, capsys, argv, message):
    wdir = _workload_dir(tmp_path, _profile())
    assert main(["stem", str(wdir / "profile.csv"), *argv, "--out", str(tmp_path / "p.json")]) == 2
    assert message in _err(capsys)


# 15 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("group", ["trace", "graph", "profile", "plan"])
def test_every_group_without_subcommand_is_a_usage_error(capsys, group):
    assert main([group]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"usage: gclsampler {group}")  # the help, on stderr


@pytest.mark.parametrize("group, texts", [("stem", ["(0, 1)", "[0, 2**32)", "[0.01, 40]"]),
                                          ("sample", ["(0, 1)", "[0, 2**32)"])])
def test_help_states_ranges(capsys, group, texts):
    with pytest.raises(SystemExit):
        main([group, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for text in texts:
        assert text in out


# plan CLI audit ---------------------------------------------------------------------------
@pytest.mark.parametrize("config", [{"error_bound": 10**307}, {"error_bound": 0.01, "epsilon": 10**307}])
def test_show_prints_config_numbers_whose_percent_is_past_float_range(tmp_path, capsys, config):
    """An int inside float range times 100 is past it: f"{100 * b:.2f}" raised OverflowError
    (a traceback, exit 1) on a hand-edited config; a float gives inf, as cluster bounds do."""
    doc = _plan().to_dict()
    doc["config"] = config
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(doc))
    assert main(["plan", "show", str(p)]) == 0
    assert "predicted error bound" in capsys.readouterr().out


@pytest.mark.parametrize("n_strata", ["x", [2], 2.5, True])
def test_show_ignores_an_n_strata_of_another_type(tmp_path, capsys, n_strata):
    """`show prints from [config] only values of the type the samplers write` (docs/plans.md):
    an n_strata that is no integer was printed as given; the plan's cluster count stands in."""
    out = _show_with_config(tmp_path, capsys, {"strata_chosen": "kernel_name", "n_strata": n_strata})
    assert f"the kernel_name strata ({len(_plan().clusters)})" in out


def test_reconstruct_a_plan_of_no_invocations_is_one_line(tmp_path, capsys):
    """load accepts n_invocations 0 (no samples, no clusters); the weighted means divided by it
    (ZeroDivisionError, a traceback). One line naming the plan's field instead."""
    doc = _plan().to_dict()
    doc.update(n_invocations=0, samples=[], clusters=[])
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(doc))
    r = tmp_path / "results.csv"
    r.write_text("invocation,cycles,ipc\n")
    assert main(["plan", "reconstruct", str(p), str(r)]) == 2
    assert "plan.json: n_invocations: 0" in _err(capsys)
