"""Pipeline: real configs composed with overrides, the tiny entry point end to end, sweep summary."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

import gclsampler.config  # noqa: F401  registers the schema
from gclsampler.trace.workload import trace_files

CONF = str(Path(__file__).resolve().parents[1] / "conf")
TINY = ["debug=default", "workload.synth.prompt=2", "workload.synth.decode=1", "workload.synth.trace_cap=16",
        "workload.synth.sample_cap=16", "train.epochs=1", "train.threads=1"]


def run_train_py(cwd: Path, *args: str):
    """``python train.py ARGS`` from ``cwd`` as a user runs it: the exit status and the one error
    line only a whole process shows (Hydra callbacks, the sweep checks before Hydra starts)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, str(Path(CONF).parent / "train.py"), *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def compose_cfg(overrides):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def test_real_config_composes_with_paper_defaults():
    cfg = compose_cfg([])
    assert cfg.workload.name == "phi2"
    assert (cfg.model.hidden_dim, cfg.model.out_dim, cfg.model.proj_dim, cfg.model.num_relations) == (128, 256, 64, 4)
    assert cfg.train.lr == pytest.approx(7e-4) and cfg.train.tau == pytest.approx(0.05)
    assert cfg.train.val_fraction == pytest.approx(0.2)
    assert list(cfg.augment.pool) == ["node_drop", "edge_drop", "feature_noise"]
    assert cfg.augment.node_drop == pytest.approx(0.15) and cfg.augment.feature_noise == pytest.approx(0.01)


@pytest.mark.parametrize("bad", ["train.epoch=3", "model.hiden_dim=4", "augment=nonexistent", "train.lr=fast"])
def test_unknown_keys_and_bad_types_fail_at_startup(bad):
    with pytest.raises(ConfigCompositionException):
        compose_cfg([bad])


def test_debug_and_ablation_groups():
    cfg = compose_cfg(["debug=default", "augment=node_drop"])
    assert cfg.train.epochs <= 2 and "debug" in cfg.paths.workloads_dir
    assert list(cfg.augment.pool) == ["node_drop"] and cfg.augment.max_strategies == 1


@pytest.mark.parametrize("workload", sorted(p.stem for p in (Path(CONF) / "workload").glob("*.yaml")))
def test_debug_composes_for_every_workload(workload):
    """debug=default set the LLMs' layers/prompt/decode for every workload, so `debug=default
    workload=3mm` stopped with "workload.synth.layers: unknown knob"; each workload's sizes now
    come from conf/debug_size/ and only with debug=default."""
    from gclsampler.synth.generate import resolve_params, workload_defaults

    cfg = compose_cfg(["debug=default", f"workload={workload}"])
    params = OmegaConf.to_container(cfg.workload.synth, resolve=True)
    resolved = resolve_params(workload, params)  # every knob known to this workload, every size legal
    full = OmegaConf.to_container(compose_cfg([f"workload={workload}"]).workload.synth, resolve=True)
    assert "debug" in cfg.paths.workloads_dir
    if "layers" in workload_defaults(workload):
        assert resolved["layers"] < full["layers"] and resolved["decode"] < full["decode"]
        assert full["layers"] == workload_defaults(workload)["layers"]  # without debug: its own sizes
    assert resolved["trace_cap"] > 0 and resolved["archs"] == ["turing"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from gclsampler.pipeline import run

    root = tmp_path_factory.mktemp("pipe")
    cfg = compose_cfg(TINY + [f"paths.workloads_dir={root / 'workloads'}"])
    summary = run(cfg, out_dir=root / "run")
    return cfg, root, summary


def test_a_rerun_with_another_sampler_leaves_none_of_the_first_samplers_outputs(tiny_run, tmp_path):
    """sampler=stem_root into a gcl run's dir kept gcl's clusters.csv, silhouette.csv and plots, and
    its report drew gcl's clusters.csv as stem_root's clusters."""
    from gclsampler.pipeline import run

    cfg, root, _ = tiny_run
    out = tmp_path / "run"
    shutil.copytree(root / "run", out)
    assert (out / "clusters.csv").exists() and list((out / "plots").glob("clusters_*_gcl.png"))
    run(compose_cfg(TINY + [f"paths.workloads_dir={root / 'workloads'}", "sampler=stem_root"]), out_dir=out)
    assert json.loads((out / "plan.json").read_text())["method"] == "stem_root"
    assert not (out / "clusters.csv").exists() and not (out / "silhouette.csv").exists()
    assert not list((out / "plots").glob("clusters_*_gcl.png")) and not (out / "plots" / "silhouette.png").exists()
    assert "_gcl.png" not in (out / "report.md").read_text()


def test_a_resumed_rerun_without_the_plan_stage_leaves_no_earlier_plan(tiny_run, tmp_path):
    """post_embedding=false into a finished run's directory (resumed: settings unchanged) kept
    the earlier plan.json, clusters.csv and report beside a config.yaml and run.json that say no
    plan was made."""
    import shutil

    from gclsampler.pipeline import PLAN_OUTPUTS, run

    cfg, root, _ = tiny_run
    out = tmp_path / "run"
    shutil.copytree(root / "run", out)
    assert all((out / name).exists() for name in ("plan.json", "clusters.csv", "report.md", "results.csv"))
    embeddings = (out / "embeddings.npy").read_bytes()
    summary = run(compose_cfg(TINY + [f"paths.workloads_dir={root / 'workloads'}", "post_embedding=false"]),
                  out_dir=out)
    assert summary["post_embedding"] == {} and not [n for n in PLAN_OUTPUTS if (out / n).exists()]
    assert (out / "embeddings.npy").read_bytes() == embeddings and (out / "model.pt").exists()


def test_a_refused_resume_keeps_the_runs_config_yaml(tiny_run, tmp_path):
    """config.yaml was written before the checkpoint refused the changed settings, so it no
    longer described last.pt and model.pt."""
    import shutil

    from gclsampler.pipeline import run
    from gclsampler.train import TrainConfigError

    cfg, root, _ = tiny_run
    shutil.copytree(root / "run", tmp_path / "run")
    before = (tmp_path / "run" / "config.yaml").read_text()
    changed = compose_cfg(TINY + [f"paths.workloads_dir={root / 'workloads'}", "train.lr=0.001"])
    with pytest.raises(TrainConfigError, match=r"cannot resume with changed settings: train\.lr"):
        run(changed, out_dir=tmp_path / "run")
    assert (tmp_path / "run" / "config.yaml").read_text() == before


def test_an_interrupted_rerun_leaves_no_outputs_of_the_run_before(tiny_run, tmp_path, monkeypatch):
    """A rerun wrote its config.yaml first and overwrote the rest as it went, so one stopped in
    training left the new config.yaml beside the earlier run's model.pt, embeddings.npy and
    plan.json: a reader of that embeddings.npy took the new config.yaml's encoder for its own."""
    import gclsampler.train
    from gclsampler.pipeline import RUN_OUTPUTS, run

    cfg, root, _ = tiny_run
    out = tmp_path / "run"
    shutil.copytree(root / "run", out)
    assert all((out / name).exists() for name in ("model.pt", "embeddings.npy", "plan.json", "run.json"))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gclsampler.train, "fit", interrupted)
    rerun = compose_cfg(TINY + [f"paths.workloads_dir={root / 'workloads'}", "train.resume=false", "train.lr=0.001"])
    with pytest.raises(KeyboardInterrupt):
        run(rerun, out_dir=out)
    assert [name for name in RUN_OUTPUTS if (out / name).exists()] == ["config.yaml"]
    assert OmegaConf.load(out / "config.yaml").train.lr == 0.001


@pytest.mark.parametrize("override, key", [("train.epochs=-1", "train.epochs"), ("graph.max_warps=-1", "graph.max_warps"),
                                           ("cluster.k_min=0", "cluster.k_min")])
def test_a_bad_value_writes_nothing(tiny_run, tmp_path, override, key):
    """Values failing the project's own checks left .gclsampler-output and config.yaml behind,
    and a bad graph.* value was found only after synthesis."""
    from gclsampler.errors import GclError
    from gclsampler.pipeline import run

    cfg = compose_cfg(TINY + [f"paths.workloads_dir={tmp_path / 'workloads'}", override])
    with pytest.raises(GclError, match=re.escape(key)):
        run(cfg, out_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists() and not (tmp_path / "workloads").exists()


def test_a_run_directory_inside_the_workload_is_refused(tiny_workload, tmp_path):
    from gclsampler._safe_out import OutputError
    from gclsampler.pipeline import run

    cfg = compose_cfg(["debug=default", "workload.name=phi2", f"workload.dir={tiny_workload}"])
    with pytest.raises(OutputError, match="output lies inside the input"):
        run(cfg, out_dir=tiny_workload / "myrun")
    assert not (tiny_workload / "myrun").exists()


def test_tiny_pipeline_end_to_end(tiny_run):
    from gclsampler.data import GraphDataset
    from gclsampler.profile import read_profile

    cfg, root, summary = tiny_run
    run_dir = root / "run"
    for name in ("embeddings.npy", "model.pt", "train_log.csv", "config.yaml", "run.json"):
        assert (run_dir / name).exists(), name
    wdir = root / "workloads" / "phi2"
    n = len(read_profile(wdir / "profile.csv"))
    emb = np.load(run_dir / "embeddings.npy")
    assert emb.dtype == np.float32 and emb.shape == (n, 256 + 8) and np.isfinite(emb).all()
    ds = GraphDataset(wdir, __import__("gclsampler.graph", fromlist=["GraphConfig"]).GraphConfig(
        **OmegaConf.to_container(cfg.graph)), workers=1, progress=False)
    inv_to_graph = ds.inv_to_graph
    for g in np.unique(inv_to_graph):
        rows = emb[inv_to_graph == g]
        assert (rows == rows[0]).all()  # identical graphs -> identical rows
    assert len(np.unique(emb, axis=0)) == ds.n_unique
    def strict(token):  # JSON.parse and jq refuse NaN / Infinity
        raise AssertionError(f"run.json holds {token}, which is not JSON")

    meta = json.loads((run_dir / "run.json").read_text(), parse_constant=strict)
    assert meta["synthetic"] is True and meta["invocations"] == n
    # with fewer than 2 validation graphs there is no validation loss: null, not NaN
    assert meta["val_graphs"] >= 2 or meta["best_val_loss"] is None
    assert meta["data"] == "synthetic"  # report.md's label: a plain bool could not tell unlabelled from real
    from gclsampler.train import resolve_precision

    assert meta["precision"] == resolve_precision("auto", torch.device("cpu"))  # what `auto` trained in here
    assert OmegaConf.load(run_dir / "config.yaml").train.epochs == 1


def test_tiny_pipeline_writes_plan_clusters_and_report(tiny_run):
    import pandas as pd

    from gclsampler.plan import SamplingPlan

    _, root, summary = tiny_run
    run_dir = root / "run"
    plan = SamplingPlan.load(run_dir / "plan.json")  # validates: every invocation accounted for
    clusters = pd.read_csv(run_dir / "clusters.csv")
    n = summary["invocations"]
    assert plan.n_invocations == n and plan.weights.sum() == pytest.approx(n)
    assert plan.method == "gcl" and plan.synthetic
    assert list(clusters["invocation"]) == list(range(n))
    # one representative per cluster, a member of it (gcl's default is the medoid)
    assert len(plan.invocations) == clusters["cluster"].nunique()
    rep_cluster = clusters.set_index("invocation").loc[plan.invocations.tolist(), "cluster"]
    assert sorted(rep_cluster.tolist()) == sorted(clusters["cluster"].unique().tolist())
    report = (run_dir / "report.md").read_text()
    assert "SYNTHETIC" in report
    post = summary["post_embedding"]
    assert post["n_samples"] == len(plan.samples) and post["speedup"] >= 1.0
    truth = pd.read_csv(root / "workloads" / "phi2" / "profile.csv")["cycles"].to_numpy(float)
    assert post["error_pct"] == pytest.approx(100 * abs(plan.estimate(truth) - truth.sum()) / truth.sum())


def test_same_inputs_and_seed_give_a_byte_identical_plan(tiny_run, tmp_path):
    """The project's determinism promise end to end: a second run on the same workload and seed,
    into another directory and with the graph cache now warm, trains the same model and writes
    the same plan.json, byte for byte (each stage's seeding is tested on its own elsewhere; a
    stage reseeding from the clock or os.urandom would pass those and fail here)."""
    from gclsampler.pipeline import run

    cfg, root, _ = tiny_run
    run(cfg, out_dir=tmp_path / "again")
    first, again = root / "run", tmp_path / "again"
    assert (again / "plan.json").read_bytes() == (first / "plan.json").read_bytes()
    assert np.array_equal(np.load(again / "embeddings.npy"), np.load(first / "embeddings.npy"))
    assert (again / "clusters.csv").read_bytes() == (first / "clusters.csv").read_bytes()


def test_a_runs_thread_count_does_not_outlive_it(tiny_run, tmp_path):
    """train.threads is torch's process-wide setting: a `train.py -m` job with train.threads=1
    left the next job (train.threads=0) on one thread, so its plan differed from the same
    settings run alone. A run now restores what it found, and run.json says what it used."""
    from gclsampler.pipeline import run
    from gclsampler.train import intra_op_threads

    cfg, root, _ = tiny_run
    before = torch.get_num_threads()
    assert cfg.train.threads == 1
    with intra_op_threads(before + 1):  # whatever the process had, the run must give it back
        run(cfg, out_dir=tmp_path / "one")
        assert torch.get_num_threads() == before + 1
    assert torch.get_num_threads() == before
    assert json.loads((tmp_path / "one" / "run.json").read_text())["threads"] == 1
    with pytest.raises(RuntimeError), intra_op_threads(before + 2):
        raise RuntimeError("a failed stage")
    assert torch.get_num_threads() == before


def test_help_names_every_file_the_run_writes(tiny_run):
    """`python train.py --help` lists the run dir's files; one the run writes and the help
    leaves out is a file a user cannot find documented where they look first."""
    import re

    header = OmegaConf.load(Path(CONF) / "hydra" / "default.yaml").help.header
    listed = header.split("Writes into the run dir:", 1)[1].split("(README", 1)[0]
    names = set(re.findall(r"[\w.]+/?", listed))
    written = {p.name + ("/" if p.is_dir() else "") for p in (tiny_run[1] / "run").iterdir()
               if not p.name.startswith(".")}  # the output marker
    assert written <= names, f"written but not in --help: {sorted(written - names)}"


def test_existing_workload_is_reused_and_stale_one_resynthesized(tiny_run):
    from gclsampler.pipeline import _stale_synthetic, ensure_workload

    cfg, root, _ = tiny_run
    wdir = root / "workloads" / "phi2"
    stamp = (wdir / "workload.json").stat().st_mtime_ns
    assert ensure_workload(cfg) == wdir
    assert (wdir / "workload.json").stat().st_mtime_ns == stamp
    other = compose_cfg(TINY + [f"paths.workloads_dir={root / 'workloads'}", "workload.synth.decode=3"])
    assert _stale_synthetic(wdir, other) == "synth knobs differ: decode 1 -> 3"  # names what changed


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs a directory nothing can be created in")
def test_a_workloads_dir_that_cannot_be_written_names_its_key():
    from gclsampler.pipeline import PipelineError, ensure_workload

    cfg = compose_cfg(TINY + ["paths.workloads_dir=/proc/no_such_dir"])
    with pytest.raises(PipelineError, match=r"^paths.workloads_dir: /proc/no_such_dir/phi2: cannot write"):
        ensure_workload(cfg)


def test_a_graph_cache_holding_a_users_files_names_its_key(tmp_path):
    from gclsampler._safe_out import OutputError
    from gclsampler.pipeline import load_graphs

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("x")
    cfg = compose_cfg([f"paths.cache_dir={mine}"])
    with pytest.raises(OutputError, match=rf"^paths.cache_dir: graph cache {re.escape(str(mine))}: holds 'notes.txt'"):
        load_graphs(cfg, tmp_path / "wl")
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


def test_the_default_graph_cache_holding_a_users_files_names_no_key(tmp_path):
    """With paths.cache_dir unset the cache is <workload>/.graph-cache, and a file of the user's
    there was reported as 'paths.cache_dir: ...', a key the user never set."""
    from gclsampler._safe_out import OutputError
    from gclsampler.pipeline import load_graphs

    cache = tmp_path / "wl" / ".graph-cache"
    cache.mkdir(parents=True)
    (cache / "notes.txt").write_text("x")
    with pytest.raises(OutputError, match=rf"^graph cache {re.escape(str(cache))}: holds 'notes.txt'"):
        load_graphs(compose_cfg([]), tmp_path / "wl")
    assert [p.name for p in cache.iterdir()] == ["notes.txt"]


def test_missing_explicit_workload_dir_is_an_error(tmp_path):
    from gclsampler.pipeline import PipelineError, ensure_workload

    cfg = compose_cfg([f"workload.dir={tmp_path / 'nope'}"])
    with pytest.raises(PipelineError, match=f"^workload.dir: {re.escape(str(tmp_path / 'nope'))}: no such directory$"):
        ensure_workload(cfg)
    (tmp_path / "empty").mkdir()
    cfg = compose_cfg([f"workload.dir={tmp_path / 'empty'}"])
    with pytest.raises(PipelineError, match=r": no kernelslist.g and no kernel-<N>.traceg files \(not a workload "
                                            r"directory with traces\)$"):
        ensure_workload(cfg)


def _ungrouped(grouped: str) -> str:
    """A grouped .traceg's text as the tracer's raw .trace: its header, then every instruction
    line prefixed by ``cta_x cta_y cta_z warp``."""
    out, cta, warp, body = [], None, None, False
    for line in grouped.splitlines():
        s = line.strip()
        if not body:
            out.append(line)
            body = s.startswith("#traces format")
        elif s.startswith("thread block ="):
            cta = s.split("=")[1].replace(",", " ").split()
        elif s.startswith("warp ="):
            warp = s.split("=")[1].strip()
        elif s and not s.startswith(("insts =", "#")):
            out.append(" ".join([*cta, warp, s]))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("layout", ["listless", "raw"])
def test_a_workload_dir_the_trace_readers_read_is_one_train_takes(tiny_workload, tmp_path, layout):
    """Grouped traces without kernelslist.g (read in -kernel id order) and the tracer's raw output
    were read by validate, the trace commands and photon, and refused by train.py."""
    from gclsampler.pipeline import ensure_workload, load_graphs
    from gclsampler.trace.workload import no_traces

    wl = tmp_path / layout
    if layout == "listless":
        shutil.copytree(tiny_workload, wl)
        (wl / "kernelslist.g").unlink()
    else:  # what the NVBit tool writes: one line per warp instruction, prefixed by its CTA and warp
        wl.mkdir()
        names = trace_files(tiny_workload)
        for n in names:
            (wl / n.replace(".traceg", ".trace")).write_text(_ungrouped((tiny_workload / n).read_text()))
        (wl / "kernelslist").write_text("".join(f"{n.replace('.traceg', '.trace')}\n" for n in names))
        shutil.copyfile(tiny_workload / "profile.csv", wl / "profile.csv")
    assert no_traces(wl) is None
    from gclsampler.photon import PhotonSampler
    from gclsampler.workload import Workload

    assert PhotonSampler().missing_inputs(Workload.load(wl)) is None
    cache = f"paths.cache_dir={tmp_path / 'cache'}"  # tiny_workload is shared: no graph cache in it
    cfg = compose_cfg([f"workload.dir={wl}", cache])
    assert ensure_workload(cfg) == wl
    ds, _, inv_to_graph = load_graphs(cfg, wl)
    _, _, listed = load_graphs(compose_cfg([f"workload.dir={tiny_workload}", cache]), tiny_workload)
    assert np.array_equal(inv_to_graph, listed)


def test_synthesis_settings_given_beside_workload_dir_are_named_as_unused(tiny_workload, monkeypatch, caplog):
    from gclsampler import pipeline

    cfg = compose_cfg([f"workload.dir={tiny_workload}"])
    given = ["debug=default", "workload.name=tiny", f"workload.dir={tiny_workload}", "workload.arch=bogus",
             "+workload.synth.layers=3", "workload.seed=4", "train.epochs=2"]
    monkeypatch.setattr(pipeline, "_command_line_overrides", lambda: given)
    with caplog.at_level("WARNING", logger="gclsampler.pipeline"):
        assert pipeline.ensure_workload(cfg) == tiny_workload
    (rec,) = [r for r in caplog.records if "not used with workload.dir" in r.getMessage()]
    assert rec.getMessage().endswith("workload.arch=bogus +workload.synth.layers=3 workload.seed=4")
    caplog.clear()
    monkeypatch.setattr(pipeline, "_command_line_overrides", lambda: given[:3] + given[-1:])
    with caplog.at_level("WARNING", logger="gclsampler.pipeline"):
        pipeline.ensure_workload(cfg)
    assert not caplog.records
    # the label, which README once told users to set, comes from the directory's workload.json
    monkeypatch.setattr(pipeline, "_command_line_overrides", lambda: given[:3] + ["workload.synthetic=false"])
    with caplog.at_level("WARNING", logger="gclsampler.pipeline"):
        pipeline.ensure_workload(cfg)
    (rec,) = caplog.records
    assert "not used with workload.dir: workload.synthetic=false" in rec.getMessage()
    assert "labelled by its workload.json" in rec.getMessage()


@pytest.mark.parametrize("named", [[], ["workload.name=mine"], ["workload=bfs"]])
def test_workload_dir_without_a_name_is_refused_before_the_default_names_the_run(tiny_workload, monkeypatch, named):
    """`train.py workload.dir=D` labelled D's run, plan.json and report with the default group's name (phi2)."""
    from gclsampler import pipeline

    cfg = compose_cfg([f"workload.dir={tiny_workload}"])
    monkeypatch.setattr(pipeline, "_command_line_overrides", lambda: ["debug=default", f"workload.dir={tiny_workload}",
                                                                      *named])
    if named:
        assert pipeline.ensure_workload(cfg) == tiny_workload
    else:
        with pytest.raises(pipeline.PipelineError, match=r"^workload\.dir: give workload\.name too \(e\.g\. "
                                                         r"workload\.name=phi2\): .* labelled 'phi2'"):
            pipeline.ensure_workload(cfg)


def test_summarize_sweep(tmp_path):
    from gclsampler.sweep_summary import summarize_sweep

    for job, (ov, losses) in enumerate([("augment=default", [2.0, 1.5]), ("augment=drops", [1.9, 1.2, 1.3])]):
        d = tmp_path / str(job)
        (d / ".hydra").mkdir(parents=True)
        (d / ".hydra" / "overrides.yaml").write_text(f"- {ov}\n")
        rows = "\n".join(f"{i},{l + 0.1},{l},0.0007,8,2,1.5,0" for i, l in enumerate(losses))
        (d / "train_log.csv").write_text("epoch,train_loss,val_loss,lr,n_train,n_val,seconds,best\n" + rows + "\n")
    (tmp_path / "notajob").mkdir()
    out = summarize_sweep(tmp_path)
    import pandas as pd

    t = pd.read_csv(out)
    assert list(t["overrides"]) == ["augment=drops", "augment=default"]
    assert list(t["best_val_loss"]) == [1.2, 1.5] and list(t["epochs"]) == [3, 2]
    assert list(t["final_val_loss"]) == [1.3, 1.5]
    md = (tmp_path / "sweep_summary.md").read_text()
    assert "augment=drops" in md and md.index("augment=drops") < md.index("augment=default")


def test_a_sweep_never_replaces_a_summary_of_the_users(tmp_path):
    """train.py -m into a directory of the user's replaced their sweep_summary.md after every
    job had run. Now the multirun stops before its first job, and the file is left as it was;
    the summary it wrote itself is replaced by the next run's, as before."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    mine = sweep / "sweep_summary.md"
    mine.write_text("my own summary\n")
    r = run_train_py(tmp_path, "-m", "debug=default", "workload=backprop", "augment=default,node_drop",
                     f"hydra.sweep.dir={sweep}", f"paths.workloads_dir={tmp_path / 'wl'}")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    # refused before Hydra writes anything there (RunDirGuard.on_multirun_start): no multirun.yaml of Hydra's
    assert len(lines) == 1 and f"hydra.sweep.dir: {sweep}: directory holds files and is not a Hydra sweep" in lines[0]
    assert mine.read_text() == "my own summary\n"
    assert sorted(p.name for p in sweep.iterdir()) == ["sweep_summary.md"]  # no job ran, nothing written
    assert not (tmp_path / "wl").exists()

    from gclsampler.sweep_summary import foreign_sweep_files, summarize_sweep

    mine.unlink()
    job = sweep / "0_backprop"
    job.mkdir()
    (job / "train_log.csv").write_text("epoch,train_loss,val_loss,lr,n_train,n_val,seconds,best\n0,1.0,0.9,0.1,8,2,1.0,1\n")
    summarize_sweep(sweep)
    assert foreign_sweep_files(sweep) == []  # its own files are not the user's


@pytest.mark.parametrize("labels, banner", [
    ((True, True), "> **SYNTHETIC DATA.** Every job ran on a workload written by `gclsampler.synth`"),
    ((True, False), "> **SYNTHETIC DATA.** 1 of 2 jobs (synthetic = True) ran on a workload"),
    ((False, False), None),
])
def test_sweep_summary_says_which_jobs_are_synthetic(tmp_path, labels, banner):
    """The summary's plan errors were unlabelled, and a job without validation graphs showed nan."""
    import pandas as pd

    from gclsampler.sweep_summary import summarize_sweep

    for job, synthetic in enumerate(labels):
        d = tmp_path / f"{job}_3mm"
        d.mkdir()
        val = "nan" if job == 0 else "1.5"
        (d / "train_log.csv").write_text(f"epoch,train_loss,val_loss,lr,n_train,n_val,seconds,best\n0,2,{val},0.1,2,1,1,1\n")
        (d / "run.json").write_text(json.dumps({"synthetic": synthetic, "post_embedding": {"error_pct": 3.0}}))
    t = pd.read_csv(summarize_sweep(tmp_path))
    assert list(t["synthetic"]) == [labels[1], labels[0]] and list(t["job"]) == ["1_3mm", "0_3mm"]
    md = (tmp_path / "sweep_summary.md").read_text()
    assert (banner in md) if banner else "SYNTHETIC" not in md
    assert "nan" not in md and "| 0_3mm |  | n/a | n/a | 2.0000 |" in md and "fewer than 2 validation graphs" in md


@pytest.mark.parametrize("kinds, banners", [
    (("real", "real"), ["> **REAL DATA.** Every job ran on a workload measured on a GPU"]),
    (("synthetic", "real"), ["> **SYNTHETIC DATA.** 1 of 2 jobs (synthetic = True)",
                             "> **REAL DATA.** 1 of 2 jobs (data = real) ran on a workload measured on a GPU"]),
    (("", ""), []),
])
def test_sweep_summary_says_which_jobs_are_real(tmp_path, kinds, banners):
    """run.json says a job's data (synthetic, real or unlabelled), but the summary labelled only
    synthetic jobs: plan errors against a GPU's measurements stood under no label at all."""
    import pandas as pd

    from gclsampler.sweep_summary import summarize_sweep

    for job, kind in enumerate(kinds):
        d = tmp_path / f"{job}_nw"
        d.mkdir()
        (d / "train_log.csv").write_text(f"epoch,train_loss,val_loss,lr,n_train,n_val,seconds,best\n0,2,1.{job},0.1,2,1,1,1\n")
        (d / "run.json").write_text(json.dumps({"synthetic": kind == "synthetic", "data": kind,
                                                "post_embedding": {"error_pct": 3.0}}))
    t = pd.read_csv(summarize_sweep(tmp_path), keep_default_na=False)
    assert list(t["data"]) == list(kinds)
    md = (tmp_path / "sweep_summary.md").read_text()
    assert all(b in md for b in banners)
    assert ("REAL DATA" in md) == any(k == "real" for k in kinds) and ("SYNTHETIC" in md) == ("synthetic" in kinds)


@pytest.mark.parametrize("extra", [[], ["debug=default"]])
def test_a_workload_sweep_shares_one_sweep_dir(extra):
    """Hydra resolves hydra.sweep.dir per job: with ${workload.name} in it, `-m workload=3mm,bfs`
    scattered the jobs over multirun/3mm/ and multirun/bfs/ and the summary (written into the
    primary config's multirun/phi2/) found no job at all."""
    dirs = set()
    for w in ("3mm", "bfs"):
        with initialize_config_dir(config_dir=CONF, version_base="1.3"):
            cfg = compose(config_name="config", overrides=[*extra, f"workload={w}"], return_hydra_config=True)
        sweep = OmegaConf.to_container(cfg.hydra.sweep, resolve=False)
        dirs.add(sweep["dir"])
        assert "${workload.name}" in sweep["subdir"] and "${hydra.job.num}" in sweep["subdir"]
    assert len(dirs) == 1 and "workload" not in dirs.pop()


def test_summarize_sweep_orders_jobs_by_number(tmp_path):
    from gclsampler.sweep_summary import summarize_sweep

    for job in ("10_phi2", "2_phi2", "0_qwen1_5"):
        d = tmp_path / job
        d.mkdir()
        (d / "train_log.csv").write_text("epoch,train_loss,val_loss,lr,n_train,n_val,seconds,best\n0,1,1,0.1,8,2,1,0\n")
    import pandas as pd

    assert list(pd.read_csv(summarize_sweep(tmp_path))["job"]) == ["0_qwen1_5", "2_phi2", "10_phi2"]  # ties: job order


def test_summarize_sweep_row_is_the_kept_model_and_the_whole_run(tmp_path):
    """A job's row: the validation loss of the model it kept (the last epoch marked best, even
    where a later unmarked epoch validated lower), the last epoch's losses, every epoch's seconds
    summed, all its overrides, and the plan's error and speedup from run.json."""
    import pandas as pd

    from gclsampler.sweep_summary import summarize_sweep

    epochs = [(0, 3.0, 2.0, 1.5, 1), (1, 2.5, 1.6, 2.0, 1), (2, 1.4, 1.1, 1.0, 0), (3, 1.5, 1.7, 0.5, 0)]
    job = tmp_path / "0_bfs"
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text("- train.lr=0.001\n- augment=node_drop\n")
    rows = "\n".join(f"{e},{tl},{vl},0.1,8,2,{sec},{b}" for e, tl, vl, sec, b in epochs)
    (job / "train_log.csv").write_text(f"epoch,train_loss,val_loss,lr,n_train,n_val,seconds,best\n{rows}\n")
    post = {"error_pct": 2.5, "error_time_pct": 1.5, "speedup": 12.0, "k": 7}
    (job / "run.json").write_text(json.dumps({"synthetic": True, "post_embedding": post}))
    t = pd.read_csv(summarize_sweep(tmp_path))
    r = t.iloc[0]
    assert r["overrides"] == "train.lr=0.001 augment=node_drop"
    assert r["best_val_loss"] == 1.6  # epoch 1, the last marked best; not epoch 2's lower 1.1
    assert (r["final_val_loss"], r["final_train_loss"], r["epochs"]) == (1.7, 1.5, 4)
    assert r["train_seconds"] == pytest.approx(sum(e[3] for e in epochs))
    assert {k: r[k] for k in post} == post


def test_only_a_summary_of_the_users_stops_a_sweep(tmp_path):
    """foreign_sweep_files: a file of another content, a directory or a symbolic link under a
    summary's name is the user's; an empty file (nothing to lose) and our own summary are not."""
    from gclsampler.sweep_summary import foreign_sweep_files

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep_summary.md").write_text("")
    (sweep / "sweep_summary.csv").write_text("job,overrides,best_val_loss,final_val_loss\n")
    assert foreign_sweep_files(sweep) == []
    (sweep / "sweep_summary.md").write_text("# My notes\n")
    assert foreign_sweep_files(sweep) == [sweep / "sweep_summary.md"]
    (sweep / "sweep_summary.md").unlink()
    (sweep / "sweep_summary.md").mkdir()
    assert foreign_sweep_files(sweep) == [sweep / "sweep_summary.md"]
    (sweep / "sweep_summary.md").rmdir()
    (tmp_path / "mine.csv").write_text("job,overrides,best_val_loss\n")
    (sweep / "sweep_summary.csv").unlink()
    (sweep / "sweep_summary.csv").symlink_to(tmp_path / "mine.csv")  # the rename would replace the link
    assert foreign_sweep_files(sweep) == [sweep / "sweep_summary.csv"]


def _job(sweep: Path, name: str, override: str, loss: float, mtime: float | None = None) -> Path:
    job = sweep / name
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text(f"- {override}\n")
    (job / "train_log.csv").write_text(f"epoch,train_loss,val_loss,lr,n_train,n_val,seconds,best\n0,1,{loss},0.1,8,2,1,1\n")
    (job / "run.json").write_text(json.dumps({"synthetic": True, "post_embedding": {}}))
    if mtime is not None:
        import os

        for f in (job / "train_log.csv", job / "run.json"):
            os.utime(f, (mtime, mtime))
    return job


def _hydra_cfg(sweep: Path, job: Path | None = None):
    return OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)},
                                       "runtime": {"output_dir": str(job) if job else None}}})


def test_a_sweep_summary_has_only_the_jobs_of_its_multirun(tmp_path, monkeypatch):
    """`train.py -m augment=default,node_drop` then `-m augment=drops train.resume=false` into the
    same hydra.sweep.dir: the second, 1-job multirun's summary said "2 jobs" and ranked the first
    multirun's stale 1_phi2 (augment=node_drop) beside its own job."""
    import time
    from types import SimpleNamespace

    import pandas as pd

    from gclsampler import _guard
    from gclsampler.sweep_summary import SweepSummaryCallback

    monkeypatch.setattr(_guard, "_after_error", [])  # the hooks on_multirun_start registers end with this test
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra:\n")
    _job(sweep, "1_phi2", "augment=node_drop", 0.5, mtime=time.time() - 3600)  # the earlier multirun's
    (sweep / "0_phi2").mkdir()
    cb = SweepSummaryCallback()
    cb.on_multirun_start(_hydra_cfg(sweep))
    job0 = _job(sweep, "0_phi2", "augment=drops", 0.9)
    cb.on_job_end(_hydra_cfg(sweep, job0), SimpleNamespace(status=SimpleNamespace(name="COMPLETED")))
    cb.on_multirun_end(_hydra_cfg(sweep))
    t = pd.read_csv(sweep / "sweep_summary.csv")
    assert list(t["job"]) == ["0_phi2"] and list(t["overrides"]) == ["augment=drops"]
    assert "1 job in" in (sweep / "sweep_summary.md").read_text()
    # a launcher whose jobs end in other processes (SLURM): the jobs whose run.json this multirun wrote
    cb = SweepSummaryCallback()
    cb.on_multirun_start(_hydra_cfg(sweep))
    assert not (sweep / "sweep_summary.csv").exists()  # the earlier multirun's summary described other jobs
    import os

    os.utime(job0 / "run.json")
    cb.on_multirun_end(_hydra_cfg(sweep))
    assert list(pd.read_csv(sweep / "sweep_summary.csv")["job"]) == ["0_phi2"]


def _sweep_stopped_in_job_1(tmp_path, monkeypatch, exc: Exception):
    """A multirun's ``main`` whose job 0 finishes and whose job 1 raises ``exc``, and its sweep dir."""
    from types import SimpleNamespace

    from gclsampler import _guard
    from gclsampler.sweep_summary import SweepSummaryCallback

    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")  # run_hydra_main sets it; monkeypatch puts it back
    monkeypatch.setattr(_guard, "_after_error", [])
    sweep = tmp_path / "sweep"
    cb = SweepSummaryCallback()

    def main():
        sweep.mkdir()
        cb.on_multirun_start(_hydra_cfg(sweep))
        job0 = _job(sweep, "0_phi2", "train.device=cpu", 0.9)
        cb.on_job_end(_hydra_cfg(sweep, job0), SimpleNamespace(status=SimpleNamespace(name="COMPLETED")))
        (sweep / "1_phi2").mkdir()
        raise exc

    return sweep, main


def test_a_sweep_stopped_by_a_failed_job_summarizes_the_jobs_before_it(tmp_path, monkeypatch, capsys):
    """A job that fails stops the multirun (exit 2, its error line), and Hydra never reaches the
    callback's on_multirun_end: the jobs that had finished, minutes each, got no summary."""
    import pandas as pd

    from gclsampler import _guard
    from gclsampler.errors import GclError

    sweep, main = _sweep_stopped_in_job_1(
        tmp_path, monkeypatch, GclError("train.device: cuda requested but torch sees no CUDA device"))
    assert _guard.run_hydra_main(main, "train.py") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "train.py: error: train.device: cuda requested but torch sees no CUDA device"
    assert err[1] == f"train.py: summarized 1 job that finished before the error in {sweep / 'sweep_summary.md'}"
    assert list(pd.read_csv(sweep / "sweep_summary.csv")["job"]) == ["0_phi2"]


def test_a_sweep_stopped_by_a_crashing_job_summarizes_the_jobs_before_it(tmp_path, monkeypatch, capsys):
    """A bug's traceback (exit 1) stops the multirun as an error does; the jobs that finished
    before it got no summary, and the traceback must still reach the user."""
    import pandas as pd

    from gclsampler import _guard

    sweep, main = _sweep_stopped_in_job_1(tmp_path, monkeypatch, ZeroDivisionError("a bug in job 1"))
    with pytest.raises(ZeroDivisionError, match="a bug in job 1"):
        _guard.run_hydra_main(main, "train.py")
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"train.py: summarized 1 job that finished before the error in {sweep / 'sweep_summary.md'}"]
    assert list(pd.read_csv(sweep / "sweep_summary.csv")["job"]) == ["0_phi2"]


def test_hydra_group_slurm_launcher_and_sweep_callback():
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(config_name="config", overrides=["hydra/launcher=slurm"], return_hydra_config=True)
    assert cfg.hydra.launcher._target_.endswith("SlurmLauncher")
    assert cfg.hydra.launcher.cpus_per_task == 8
    from hydra.utils import get_class

    assert get_class(cfg.hydra.callbacks.sweep_summary._target_).__name__ == "SweepSummaryCallback"


def test_train_config_errors_name_the_workload_keys(tmp_path):
    """Through train.py the knobs live under workload.*: the message names those keys."""
    from gclsampler.pipeline import ensure_workload
    from gclsampler.synth import SynthConfigError

    for override, msg in (("workload.synth.n=0", "workload.synth.n: must be >= 1"),
                          ("workload.seed=-1", "workload.seed: must be a non-negative integer")):
        with initialize_config_dir(config_dir=CONF, version_base="1.3"):
            cfg = compose("config", overrides=["workload=3mm", override, f"paths.workloads_dir={tmp_path}"])
        with pytest.raises(SynthConfigError, match=f"^{msg}"):
            ensure_workload(cfg)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("override, message", [
    ("workload.arch=volta", r"workload\.arch: unknown arch 'volta'; known: ada, ampere, turing"),
    ("workload.synth.archs=[ampere,volta]", r"workload\.synth\.archs: unknown arch 'volta'; known: ada, ampere, turing"),
])
def test_an_unknown_arch_names_the_key_that_set_it(tmp_path, override, message):
    """workload.arch=volta was reported as workload.synth.archs: the pipeline appends
    workload.arch to the synth archs, so the synthesizer's check named a key the user never set."""
    from gclsampler.errors import GclError
    from gclsampler.pipeline import ensure_workload

    from gclsampler.pipeline import run

    cfg = compose_cfg(["debug=default", "workload=phi2", override, f"paths.workloads_dir={tmp_path / 'wl'}"])
    with pytest.raises(GclError, match=f"^{message}"):
        ensure_workload(cfg)
    with pytest.raises(GclError, match=f"^{message}"):
        run(cfg, out_dir=tmp_path / "run")
    assert list(tmp_path.iterdir()) == []  # no run directory, no workload


def test_train_root_seed_out_of_range_names_seed():
    from gclsampler.errors import GclError
    from gclsampler.pipeline import _check_plan_stage

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose("config", overrides=["debug=default", "seed=-1"])
    with pytest.raises(GclError, match=r"^seed: must be an integer in \[0, 2\*\*32\), found -1$"):
        _check_plan_stage(cfg)


@pytest.mark.parametrize("overrides, keys", [
    ([], "model.inst_stats=true model.kernel_features=true"),
    (["model=pyg"], "model.inst_stats=true model.kernel_features=true"),
    (["model=paper", "model.kernel_features=true"], "model.kernel_features=true"),
    (["model=paper", "model.inst_stats=true"], "model.inst_stats=true"),
])
def test_gcl_paper_with_the_projects_encoder_is_refused_before_training(overrides, keys):
    """sampler=gcl_paper with the default model clustered the project's embeddings (264 columns,
    instruction statistics) under the paper's name; now refused by key before any work, saying
    what to add. model=paper is accepted (test below)."""
    from gclsampler.pipeline import PipelineError, _check_plan_stage

    fix = " ".join(k.replace("=true", "=false") for k in keys.split())
    with pytest.raises(PipelineError, match=re.escape(f"{keys}: the project's encoder, but sampler=gcl_paper "
                                                      f"clusters the paper's encoder's embeddings; add model=paper "
                                                      f"(or {fix})")):
        _check_plan_stage(compose_cfg(["debug=default", "sampler=gcl_paper", *overrides]))


def test_gcl_paper_pipeline_plan_is_the_sample_clis_byte_for_byte(tiny_workload, tmp_path, capsys):
    """model=paper sampler=gcl_paper end to end: the pipeline hands its embeddings to gcl_paper as
    the paper's, and `gclsampler sample gcl_paper --embeddings <run>/embeddings.npy` (config.yaml
    beside it says model=paper) writes the same plan.json."""
    from gclsampler.cli import main
    from gclsampler.pipeline import run

    # the graph cache goes beside the run: tiny_workload is shared, and other tests assert it has none
    cfg = compose_cfg(["debug=default", "workload.name=phi2", f"workload.dir={tiny_workload}", "model=paper",
                       "sampler=gcl_paper", "train.epochs=1", "train.threads=1", f"paths.cache_dir={tmp_path / 'cache'}"])
    run(cfg, out_dir=tmp_path / "run")
    assert not (tiny_workload / ".graph-cache").exists()
    made = json.loads((tmp_path / "run" / "plan.json").read_text())
    assert made["method"] == "gcl_paper" and made["config"]["embedding_dims"] == 256
    out = tmp_path / "cli.json"
    assert main(["sample", "gcl_paper", str(tiny_workload), "--embeddings", str(tmp_path / "run" / "embeddings.npy"),
                 "--out", str(out)]) == 0
    assert out.read_bytes() == (tmp_path / "run" / "plan.json").read_bytes()


def test_paper_encoder_with_the_work_reading_gcl_is_refused_before_training():
    """model=paper has no size vector: the default gcl (work split, work_mean) would read a
    learned dimension as work, so the plan stage refuses it by key; gcl_paper and a gcl with
    both switched off are accepted."""
    from gclsampler.pipeline import PipelineError, _check_plan_stage

    def check(*overrides):
        with initialize_config_dir(config_dir=CONF, version_base="1.3"):
            _check_plan_stage(compose("config", overrides=["debug=default", "model=paper", *overrides]))

    with pytest.raises(PipelineError, match=r"^model.kernel_features=false: cluster.split_tolerance and "
                                            r"cluster.representative=work_mean read the size vector"):
        check()
    with pytest.raises(PipelineError, match=r"^model.kernel_features=false: cluster.representative=work_mean reads"):
        check("cluster.split_tolerance=0")
    check("sampler=gcl_paper")
    check("cluster.split_tolerance=0", "cluster.representative=medoid")
    check("sampler=gcl_stem")  # no work split, and STEM draws its members: nothing reads the work column
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):  # the default encoder has it
        _check_plan_stage(compose("config", overrides=["debug=default"]))


def test_a_scaled_size_vector_is_refused_where_the_work_column_is_read():
    """The work split's tolerance and work_mean read column -6 as log2 instructions, but the
    embeddings hold it times model.kfeat_scale: at 0.5 the 1.32x tolerance let 1.74x through,
    at 0 the split was off, without a word."""
    from gclsampler.pipeline import PipelineError, _check_plan_stage

    def check(*overrides):
        with initialize_config_dir(config_dir=CONF, version_base="1.3"):
            _check_plan_stage(compose("config", overrides=["debug=default", *overrides]))

    with pytest.raises(PipelineError, match=r"^model.kfeat_scale=0.5: the embeddings' size vector is scaled, but "
                                            r"cluster.split_tolerance and cluster.representative=work_mean read"):
        check("model.kfeat_scale=0.5")
    with pytest.raises(PipelineError, match=r"^model.kfeat_scale=0.0: .* cluster.representative=work_mean reads"):
        check("model.kfeat_scale=0", "cluster.split_tolerance=0")
    check("model.kfeat_scale=0.5", "cluster.split_tolerance=0", "cluster.representative=medoid")
    check("model.kfeat_scale=2", "sampler=gcl_stem")  # STEM draws its members, no work split


@pytest.mark.parametrize("column, refused", [(-6, False), (-8, False), (-1, False), (-9, True), (5, True),
                                            (1000, True)])
def test_a_work_column_outside_the_size_vector_is_refused_before_training(column, refused):
    """A learned dimension read as work said nothing (5), and one outside the embeddings failed
    only after training (1000)."""
    from gclsampler.pipeline import PipelineError, _check_plan_stage

    def check(*overrides):
        with initialize_config_dir(config_dir=CONF, version_base="1.3"):
            _check_plan_stage(compose("config", overrides=["debug=default", f"cluster.split_column={column}", *overrides]))

    if refused:
        with pytest.raises(PipelineError, match=rf"^cluster.split_column: {column} is not a column of the size "
                                                r"vector.* -6 insts_on_sm"):
            check()
    else:
        check()
    check("cluster.split_tolerance=0", "cluster.representative=medoid")  # nothing reads it: any value passes


def test_workers_below_one_is_refused_before_the_run_dir_is_made(tmp_path):
    from gclsampler.pipeline import PipelineError, run

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose("config", overrides=["debug=default", "workers=0"])
    with pytest.raises(PipelineError, match=r"^workers: must be at least 1"):
        run(cfg, out_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()
    from gclsampler.pipeline import check_config

    plain = OmegaConf.create(OmegaConf.to_container(cfg))  # an API caller's config: no schema to type it
    plain.workers = True  # int(True) is 1, but a flag is no process count
    with pytest.raises(PipelineError, match=r"^workers: must be at least 1 .*got True$"):
        check_config(plain)


def test_stem_group_reaches_the_stem_samplers():
    """`stem=clt30` and `stem.epsilon=...` used to compose and change nothing (the samplers read
    only sampler.params); now sampler.params take their STEM knobs from the stem group, and a
    sampler.params override still wins for that sampler."""
    from gclsampler.samplers import sampler_from_config

    def built(*overrides):
        with initialize_config_dir(config_dir=CONF, version_base="1.3"):
            cfg = compose("config", overrides=list(overrides))
        return sampler_from_config(cfg.sampler, cfg.cluster, 0)

    assert built("sampler=stem_root", "stem=clt30").min_samples == 30
    assert built("sampler=stem_root").min_samples == 1
    assert built("sampler=gcl_stem", "stem.epsilon=0.1").epsilon == 0.1
    assert built("sampler=gcl_stem", "stem.epsilon=0.1", "sampler.params.epsilon=0.2").epsilon == 0.2


def test_own_workload_dir_is_not_labelled_synthetic_in_the_run_config(tmp_path):
    import json as _json

    from gclsampler.pipeline import _label_own_workload

    for meta, want in ((None, False), ({"synthetic": False}, False), ({"synthetic": True}, True),
                       ({"synthetic": None}, False)):
        wdir = tmp_path / f"wl{want}{meta is None}{isinstance(meta, dict) and meta['synthetic'] is None}"
        wdir.mkdir()
        if meta is not None:
            (wdir / "workload.json").write_text(_json.dumps(meta))
        with initialize_config_dir(config_dir=CONF, version_base="1.3"):
            cfg = compose("config", overrides=[f"workload.dir={wdir}", "workload.name=mine"])
        assert cfg.workload.synthetic is True  # the default group's label, before
        _label_own_workload(cfg)
        assert cfg.workload.synthetic is want, meta


@pytest.mark.parametrize("text, needle", [
    ("[1]", "workload.json:1: expected a JSON object, found list"),
    ('{"synthetic": "no"}', "workload.json: synthetic: expected true or false, found 'no'"),
])
def test_a_broken_workload_json_is_refused_before_the_run_dir_is_claimed(tmp_path, text, needle):
    """It used to be read as "not synthetic" (a list) or as SYNTHETIC (the true string "no"),
    and the run directory was claimed first."""
    from gclsampler.errors import GclError
    from gclsampler.pipeline import run

    wdir = tmp_path / "wl"
    wdir.mkdir()
    (wdir / "workload.json").write_text(text)
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose("config", overrides=[f"workload.dir={wdir}", "workload.name=mine"])
    with pytest.raises(GclError, match=re.escape(needle)):
        run(cfg, out_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_jobs_that_need_one_missing_workload_synthesize_it_once(tmp_path, monkeypatch):
    """A multirun's jobs (SLURM, or several shells) that start together all found the workload
    missing and synthesized it, each commit deleting the directory another job was reading."""
    import gclsampler.synth as synth
    from gclsampler.pipeline import ensure_workload
    from tests._concurrent_synth import run_in_threads, slow_fake_generate

    calls: list = []
    monkeypatch.setattr(synth, "generate", slow_fake_generate(calls, "kernelslist.g"))
    cfg = compose_cfg(["debug=default", "workload=3mm", f"paths.workloads_dir={tmp_path}"])
    got = run_in_threads(lambda: ensure_workload(cfg))
    assert calls == ["3mm"] and got == [tmp_path / "3mm"] * 3


def test_the_paper_experiment_runs_the_papers_method():
    """experiment=phi2_paper is named for the paper: it must train the paper's encoder and plan
    with gcl_paper (it once trained the project's encoder under that name), and pass the plan
    stage's checks before any work."""
    from gclsampler.pipeline import _check_plan_stage

    cfg = compose_cfg(["experiment=phi2_paper"])
    assert not cfg.model.inst_stats and not cfg.model.kernel_features
    assert cfg.sampler.name == "gcl_paper" and cfg.workload.name == "phi2"
    _check_plan_stage(cfg)


@pytest.mark.parametrize("multirun", ["-m", "hydra.mode=MULTIRUN"])
def test_every_sweep_value_is_checked_before_the_first_job(tmp_path, multirun):
    """`train.py -m augment.node_drop=0.1,1.5` ran job 0 in full and refused 1.5 only when
    job 1 started. Each swept value is now composed and checked first: one line naming the
    value and the key, exit 2, nothing synthesized and no sweep directory. `hydra.mode=MULTIRUN`,
    Hydra's other way to ask for a multirun, skipped the check and ran job 0."""
    sweep = tmp_path / "sweep"
    r = run_train_py(tmp_path, multirun, "debug=default", "workload=backprop", "augment.node_drop=0.1,1.5",
                     f"hydra.sweep.dir={sweep}", f"paths.workloads_dir={tmp_path / 'wl'}")
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line == ("train.py: error: sweep value augment.node_drop=1.5: augment.node_drop: "
                    "rate must be in [0, 1), got 1.5")
    assert not sweep.exists() and not (tmp_path / "wl").exists()


def test_check_sweep_values_expands_only_basic_multiruns():
    from gclsampler._guard import check_config_keys
    from gclsampler._sweep import SweepValueError, check_sweep_values
    from gclsampler.pipeline import check_config

    conf = Path(__file__).resolve().parents[1] / "conf"
    seen = []

    def check(cfg):
        seen.append((cfg.workload.name, cfg.augment.node_drop, cfg.train.epochs))
        check_config_keys(cfg)
        check_config(cfg)

    base = ["debug=default", "train.epochs=3"]
    assert check_sweep_values(base + ["workload=3mm,backprop"], conf, "config", check) == 0  # no -m: no sweep
    assert check_sweep_values(["-m", *base, "workload=3mm"], conf, "config", check) == 0  # nothing swept
    # hydra.mode=MULTIRUN is -m by another name (enum name or value); RUN is not
    assert check_sweep_values([*base, "hydra.mode=MULTIRUN", "workload=3mm,backprop"], conf, "config", check) == 2
    assert check_sweep_values([*base, "hydra.mode=2", "workload=3mm,backprop"], conf, "config", check) == 2
    assert check_sweep_values([*base, "hydra.mode=RUN", "workload=3mm,backprop"], conf, "config", check) == 0
    seen.clear()
    assert check_sweep_values(["-m", *base, "--config-name", "other", "workload=3mm,lu"], conf, "config", check) == 0
    n = check_sweep_values(["-m", *base, "workload=3mm,backprop", "augment.node_drop=choice(0,0.5)",
                            "hydra/launcher=slurm", "hydra.sweep.dir=/nowhere"], conf, "config", check)
    assert n == 4 and [s[2] for s in seen] == [3] * 4  # every value once, with the fixed overrides
    assert {s[0] for s in seen[:2]} == {"3mm", "backprop"} and [s[1] for s in seen[2:]] == [0, 0.5]
    with pytest.raises(SweepValueError, match=r"^sweep value \+train\.epoch=1: config: train\.epoch: unknown key"):
        check_sweep_values(["-m", *base, "+train.epoch=1,2"], conf, "config", check)
    with pytest.raises(SweepValueError, match=r"^sweep value workload=nosuch: config: "):
        check_sweep_values(["-m", *base, "workload=3mm,nosuch"], conf, "config", check)
    # every value refused for a reason of a fixed setting: the line does not blame the swept key
    with pytest.raises(SweepValueError, match=r"^train\.lr: must be a finite number > 0"):
        check_sweep_values(["-m", *base, "train.lr=-1", "workload=3mm,backprop"], conf, "config", check)


def test_a_sweep_of_devices_or_workload_dirs_is_checked_before_its_first_job(tmp_path):
    """train.device=cuda (no CUDA here) and a workload.dir that is not there were found only by
    the job that had them, after the jobs before it had trained in full."""
    import torch

    from gclsampler._guard import check_config_keys
    from gclsampler._sweep import SweepValueError, check_sweep_values
    from gclsampler.pipeline import check_config

    conf = Path(__file__).resolve().parents[1] / "conf"

    def check(cfg):
        check_config_keys(cfg)
        check_config(cfg)

    base = ["-m", "debug=default", "workload=3mm"]
    if not torch.cuda.is_available():
        with pytest.raises(SweepValueError, match=r"^sweep value train\.device=cuda: train\.device: cuda requested"):
            check_sweep_values([*base, "train.device=cpu,cuda"], conf, "config", check)
    (tmp_path / "mine").mkdir()
    with pytest.raises(SweepValueError, match=r"^sweep value workload\.dir=.*nonexist: workload\.dir: .*nonexist: "
                                              r"no such directory"):
        check_sweep_values([*base, "workload.name=mine", f"workload.dir={tmp_path / 'mine'},{tmp_path / 'nonexist'}"],
                           conf, "config", check)


@pytest.mark.parametrize("under", ["", "sub"])
def test_a_workloads_dir_that_is_a_file_is_one_line_naming_the_key(tmp_path, under):
    """Two warnings that lock files could not be made, then an error naming neither the key nor
    (for paths.workloads_dir=FILE) the file as the workloads directory."""
    from gclsampler.errors import GclError
    from gclsampler.pipeline import check_config

    (tmp_path / "userfile").write_text("mine\n")
    wd = tmp_path / "userfile" / under if under else tmp_path / "userfile"
    with pytest.raises(GclError, match=rf"^paths\.workloads_dir: .*: {re.escape(str(tmp_path / 'userfile'))} is a "
                                       r"file, not a directory$"):
        check_config(compose_cfg(TINY + [f"paths.workloads_dir={wd}"]))
    assert (tmp_path / "userfile").read_text() == "mine\n"


def test_a_sweep_value_is_not_refused_for_the_default_of_another_swept_key():
    """`train.py -m augment.min_strategies=2,3 augment.max_strategies=3,4`: every one of its four
    jobs is valid, but min 3 was checked beside the default max 2, which no job has, and the
    sweep stopped before its first job ("need 0 <= min <= max, got 3, 2"). A value that a job
    of the sweep would refuse is still refused before the first job."""
    from gclsampler._guard import check_config_keys
    from gclsampler._sweep import SweepValueError, check_sweep_values
    from gclsampler.pipeline import check_config

    conf = Path(__file__).resolve().parents[1] / "conf"

    def check(cfg):
        check_config_keys(cfg)
        check_config(cfg)

    base = ["-m", "debug=default", "workload=3mm"]
    assert check_sweep_values([*base, "augment.min_strategies=2,3", "augment.max_strategies=3,4"],
                              conf, "config", check) == 4
    # min 3 with max 2 is a job of this sweep: refused, naming the value
    with pytest.raises(SweepValueError, match=r"^sweep value augment\.min_strategies=3: .*got 3, 2$"):
        check_sweep_values([*base, "augment.min_strategies=1,3", "augment.max_strategies=2,4"], conf, "config", check)
    # a value bad on its own is still refused, whatever the other swept keys hold
    with pytest.raises(SweepValueError, match=r"^sweep value augment\.node_drop=1\.5: augment\.node_drop: rate"):
        check_sweep_values([*base, "augment.min_strategies=2,3", "augment.max_strategies=3,4",
                            "augment.node_drop=0.1,1.5"], conf, "config", check)


def test_check_sweep_values_expands_a_glob_over_a_group():
    """`train.py -m 'augment=glob(*)'` (Hydra's sweep over every option of a group) stopped before
    any job with "train.py: error: config: ConfigLoader is not set", exit 2: the sweep check
    parsed the overrides without the config loader a glob needs to list the group's options."""
    from gclsampler._sweep import check_sweep_values

    conf = Path(__file__).resolve().parents[1] / "conf"
    seen = []
    n = check_sweep_values(["-m", "debug=default", "augment=glob(*,exclude=default)"], conf, "config",
                           lambda cfg: seen.append(list(cfg.augment.pool)))
    assert n == 4 and sorted(map(tuple, seen)) == [("edge_drop",), ("feature_noise",), ("node_drop",),
                                                    ("node_drop", "edge_drop")]


@pytest.mark.parametrize("existing", [False, True])
def test_a_run_dir_inside_its_workload_is_refused_before_hydra_writes_there(tmp_path, tiny_workload, existing):
    """The task refused it, but only after Hydra had put .hydra/ and train.log inside the
    workload (or created the still-missing workload directory for them), which then was
    'not written by gclsampler synth' and could not be synthesized again."""
    import shutil

    if existing:
        wl = tmp_path / "mine"
        shutil.copytree(tiny_workload, wl)
        where = [f"workload.dir={wl}"]
        before = sorted(p.name for p in wl.iterdir())
    else:
        wl = tmp_path / "wl" / "3mm"
        where = ["workload=3mm", f"paths.workloads_dir={tmp_path / 'wl'}"]
    r = run_train_py(tmp_path, "debug=default", *where, f"hydra.run.dir={wl / 'run'}")
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("train.py: error: hydra.run.dir: ") and "output lies inside the input" in line
    if existing:
        assert sorted(p.name for p in wl.iterdir()) == before
    else:
        assert not (tmp_path / "wl").exists()


@pytest.mark.parametrize("value", ["''", "'  '"])
@pytest.mark.parametrize("key", ["workloads_dir", "cache_dir"])
def test_an_empty_path_is_refused_not_taken_for_the_current_directory(key, value):
    """paths.workloads_dir= wrote the workload and its lock file into the current directory;
    a path of blanks is no directory either."""
    from hydra import compose, initialize_config_dir

    from gclsampler.pipeline import PipelineError, check_config

    conf = Path(__file__).resolve().parents[1] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose("config", overrides=["debug=default", f"paths.{key}={value}"])
    with pytest.raises(PipelineError, match=rf"^paths.{key}: empty path"):
        check_config(cfg)



@pytest.mark.parametrize("override", ["workload=null", "cluster=3"])
def test_a_config_group_given_no_name_is_one_line(tmp_path, override):
    """Hydra's defaults list raises a plain ValueError for these: a 45-line traceback, exit 1."""
    r = run_train_py(tmp_path, override)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith("train.py: error: config: Config group override must be a string or a list")
    assert not any(tmp_path.iterdir())  # nothing written


def test_hydras_other_usage_errors_get_no_config_group_hint(tmp_path):
    """`train.py -m --cfg job` (Hydra: only one of --run, --multirun, --cfg...) was told "(a config
    group such as workload= takes one of its names)", the hint for `workload=null`."""
    r = run_train_py(tmp_path, "-m", "--cfg", "job")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0] == ("train.py: error: config: Only one of --run, --multirun, --cfg, --info and --shell_completion "
                        "can be specified")
