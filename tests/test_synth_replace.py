"""Synthesizing a workload again replaces its directory; files other commands put there are refused, not deleted.

`gclsampler simulate --all` writes ``profiles/accelsim-<config>.csv`` into the workload it
simulated, and the suite or train.py would synthesize that workload again whenever its knobs
differ from the request, deleting hours of simulation with it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gclsampler._safe_out import OutputError
from gclsampler.synth.generate import foreign_files, generate

SMALL = {"nodes": 2048, "archs": ["turing"]}
CONF = str(Path(__file__).resolve().parents[1] / "conf")


@pytest.fixture
def made(tmp_path):
    """A small synthesized bfs (made for ampere) with a simulated profile and the user's embeddings added."""
    wdir = tmp_path / "wl" / "bfs"
    generate("bfs", wdir, params=SMALL, arch="ampere", seed=1, progress=False, jobs=1)
    (wdir / ".graph-cache" / "x").mkdir(parents=True)  # derived from the traces: goes with them
    (wdir / "profiles" / "accelsim-SM86_RTX3070.csv").write_text("simulated\n")
    (wdir / "embeddings.npy").write_bytes(b"mine")
    return wdir


def _snapshot(wdir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(wdir)): p.read_bytes() for p in sorted(wdir.rglob("*")) if p.is_file()}


def test_foreign_files_are_what_synthesis_did_not_write(made, tmp_path):
    assert [p.relative_to(made).as_posix() for p in foreign_files(made)] == [
        "embeddings.npy", "profiles/accelsim-SM86_RTX3070.csv"]
    clean = tmp_path / "clean"
    generate("bfs", clean, params=SMALL, arch="ampere", seed=1, progress=False, jobs=1)
    assert foreign_files(clean) == []
    (clean / "workload.json").write_text(json.dumps({"generator": "nvbit"}))
    (clean / "mine.txt").write_text("")
    assert foreign_files(clean) == [], "a directory synth did not write is refused whole, elsewhere"


def test_synthesizing_again_refuses_and_leaves_the_directory_as_it_was(made):
    before = _snapshot(made)
    with pytest.raises(OutputError, match=r"embeddings\.npy: not written by gclsampler synth \(and 1 more\)"):
        generate("bfs", made, params={**SMALL, "degree": 4}, arch="ampere", seed=1, progress=False, jobs=1)
    assert _snapshot(made) == before
    assert not list(made.parent.glob(".bfs.tmp-*")), "nothing half-written beside it"


def test_the_suite_names_the_keys_that_score_the_workload_as_it_is(made):
    from gclsampler.evaluate import EvaluationError, SuiteConfig, _prepare_workload

    before = _snapshot(made)
    suite = SuiteConfig(synth_params={"per_workload": {"bfs": dict(SMALL)}})  # trace_arch turing, with a second run
    with pytest.raises(OutputError, match="score it as it is with generate=false suite.trace_arch=ampere"):
        _prepare_workload("bfs", made.parent, suite, True, 1)
    assert _snapshot(made) == before
    assert _prepare_workload("bfs", made.parent, suite, False, 1) == made
    with pytest.raises(EvaluationError):
        _prepare_workload("lu", made.parent, suite, False, 1)  # still an error when it is missing


def test_train_py_names_workload_dir_to_use_it_as_it_is(made):
    from hydra import compose, initialize_config_dir

    import gclsampler.config  # noqa: F401  registers the schema
    from gclsampler.pipeline import ensure_workload

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            "workload=bfs", f"paths.workloads_dir={made.parent}", "workload.synth.nodes=2048", "workload.seed=1"])
    before = _snapshot(made)
    with pytest.raises(OutputError, match=f"use it as it is with workload.dir={made}"):
        ensure_workload(cfg)
    assert _snapshot(made) == before


@pytest.mark.parametrize("edit, needle", [
    (lambda m: '{"arch":', r"workload.json:1: not JSON: Expecting value"),
    (lambda m: json.dumps({**m, "synth": "oops"}), r"workload.json: synth: expected an object of knobs, found 'oops'"),
    (lambda m: json.dumps({**m, "seed": "x"}), r"workload.json: seed: expected an integer, found 'x'"),
    (lambda m: json.dumps({**m, "ground_truth_version": "2"}), r"workload.json: ground_truth_version: expected an integer"),
    (lambda m: "[1, 2]", r"workload.json:1: expected a JSON object, found list"),
])
def test_a_broken_workload_json_is_named_not_a_traceback(made, edit, needle):
    """The stale check reads workload.json before anything else; a hand edit gave json's or int()'s traceback."""
    from gclsampler.synth.generate import SynthConfigError, stale_reason

    meta_path = made / "workload.json"
    meta_path.write_text(edit(json.loads(meta_path.read_text())))
    with pytest.raises(SynthConfigError, match=needle):
        stale_reason(made, "bfs", SMALL, "ampere", 1)


def test_a_workload_from_an_earlier_ground_truth_model_is_stale(made):
    """Synthesized data carried no mark of the timing model that wrote it, so a workload made before
    a ground-truth fix kept scoring samplers against the old ground truth without a word."""
    from gclsampler.synth.generate import GROUND_TRUTH_VERSION, stale_reason

    meta_path = made / "workload.json"
    meta = json.loads(meta_path.read_text())
    assert meta["ground_truth_version"] == GROUND_TRUTH_VERSION
    assert stale_reason(made, "bfs", SMALL, "ampere", 1) is None
    del meta["ground_truth_version"]  # what every synthesis before version 2 wrote
    meta_path.write_text(json.dumps(meta))
    assert stale_reason(made, "bfs", SMALL, "ampere", 1) == (
        f"synthesized by ground-truth model version 1; this version writes {GROUND_TRUTH_VERSION}")


def test_evaluate_scoring_old_ground_truth_as_it_is_says_so(made, capsys):
    """With generate=false evaluate.py scores a workload as it is; one synthesized by an earlier
    ground-truth model was scored without a word, so its report mixed two models' ground truths."""
    from gclsampler.evaluate import SuiteConfig, _prepare_workload

    suite = SuiteConfig(rerun=False, trace_arch="ampere", synth_params={"per_workload": {"bfs": SMALL}})
    assert _prepare_workload("bfs", made.parent, suite, False, 1) == made
    assert "warning" not in capsys.readouterr().err
    meta_path = made / "workload.json"
    meta = json.loads(meta_path.read_text())
    del meta["ground_truth_version"]
    meta_path.write_text(json.dumps(meta))
    assert _prepare_workload("bfs", made.parent, suite, False, 1) == made
    err = capsys.readouterr().err
    assert f"evaluate: warning: {made}: not the workload this run asks for (synthesized by ground-truth model " \
           "version 1" in err
    assert "scored as it is (generate=false)" in err


def test_evaluate_scoring_another_seeds_workload_as_it_is_says_so(made, capsys):
    """generate=false scored a workload synthesized with another seed (or knobs, or arch) without a
    word, and its rows carried this run's seed, which compare.md takes for the synthesis seed."""
    from gclsampler.evaluate import SuiteConfig, _prepare_workload

    suite = SuiteConfig(rerun=False, trace_arch="ampere", synth_params={"per_workload": {"bfs": SMALL}})
    assert _prepare_workload("bfs", made.parent, suite, False, 2) == made  # made with seed 1
    assert capsys.readouterr().err.strip() == (f"evaluate: warning: {made}: not the workload this run asks for "
                                               "(seed differs); scored as it is (generate=false)")
    assert _prepare_workload("bfs", made.parent, SuiteConfig(rerun=False, trace_arch="turing", synth_params={
        "per_workload": {"bfs": SMALL}}), False, 1) == made
    assert "(arch differs)" in capsys.readouterr().err


def test_a_synthesized_dir_of_another_workload_with_the_same_knobs_is_made_again(tmp_path):
    """lu and lud take the same knobs (``n``), so the stale check, comparing knobs, seed and arch
    alone, took ``workloads/lud`` holding lu's traces (two directories swapped, or
    ``gclsampler synth lu --out workloads/lud``) as lud: train.py trained on lu and labelled
    its plan lud. The name in workload.json must match too; the directory is synthesized again."""
    from hydra import compose, initialize_config_dir

    import gclsampler.config  # noqa: F401  registers the schema
    from gclsampler.pipeline import ensure_workload
    from gclsampler.synth.generate import stale_reason, with_second_run

    params = with_second_run("lud", {"n": 32, "archs": ["turing"]}, "turing")
    wdir = generate("lu", tmp_path / "lud", params=params, arch="turing", seed=0, progress=False, jobs=1)
    assert stale_reason(wdir, "lu", params, "turing", 0) is None
    assert stale_reason(wdir, "lud", params, "turing", 0) == "workload differs: 'lu' -> 'lud'"
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            "workload=lud", f"paths.workloads_dir={tmp_path}", "workload.synth.n=32",
            "workload.synth.archs=[turing]", "workload.seed=0"])
    assert ensure_workload(cfg) == wdir
    assert json.loads((wdir / "workload.json").read_text())["workload"] == "lud"
    assert stale_reason(wdir, "lud", params, "turing", 0) is None
