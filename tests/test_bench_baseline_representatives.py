"""bench/baseline_representatives.py: pka and sieve refitted with each representative rule beside a run's gcl rows."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _bench():
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("baseline_representatives")
    finally:
        sys.path.pop(0)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny SYNTHETIC phi2 with a second Turing run, and an evaluate.py-shaped run dir: pka and
    sieve fitted as evaluate.py fits them, gcl's rows made up (0.5 % fitted, 0.7 % second run)."""
    import pandas as pd

    from _bench_runs import tiny_phi2

    from gclsampler.evaluate import EvaluateConfig, fit_methods
    from gclsampler.score import evaluate_workload, write_results_csv

    root = tmp_path_factory.mktemp("baserep")
    data = root / "data"
    wl = tiny_phi2(data)
    runs = fit_methods(wl, ["pka", "sieve"], EvaluateConfig().method_params, n_seeds=1, seed0=0)
    out = root / "run"
    for r in runs:
        r.plan.save(out / "plans" / "phi2" / f"{r.method}.json")
    rows = pd.DataFrame(evaluate_workload(wl, runs, ["turing"]))
    gcl = rows[rows["method"] == "sieve"].assign(method="gcl", error_cycles=0.5, error_cycles_rerun=0.7)
    results = pd.concat([gcl, rows], ignore_index=True)
    write_results_csv(results, out / "results.csv")
    return out, data, results


def _cells(out: str, section: str) -> dict[str, list[str]]:
    """First-cell -> the other cells, of the table under ``### section``."""
    part = out.split(f"### {section}")[1].split("###")[0]
    return {ln.strip("| ").split(" | ")[0]: ln.strip("| ").split(" | ")[1:] for ln in part.splitlines()
            if ln.startswith("| ")}


def test_tables_put_both_rules_beside_the_runs_gcl(run, capsys):
    out_dir, data, results = run
    assert _bench().main([str(out_dir), str(data)]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err  # the papers' rules reproduce the run's own pka and sieve rows
    out = captured.out
    assert out.startswith("SYNTHETIC DATA")
    fitted = _cells(out, "cycle error on the fitted run")
    assert fitted["workload"] == ["pka first", "pka work_mean", "sieve dominant_cta", "sieve work_mean", "gcl"]
    own = results.set_index("method")["error_cycles"]
    assert fitted["phi2"][0] == f"{own['pka']:.2f} %" and fitted["phi2"][2] == f"{own['sieve']:.2f} %"
    assert fitted["phi2"][4] == "0.50 %" and fitted["**mean**"][4] == "0.50 %"
    lower = fitted["gcl lower on"]
    assert lower[-1] == "—" and all(c.endswith(" of 1") for c in lower[:-1])
    assert lower[0] == ("1 of 1" if own["pka"] > 0.5 else "0 of 1")
    second = _cells(out, "cycle error on the second run")["phi2"]
    assert second[4] == "0.70 %" and all(c.endswith(" %") for c in second)  # the refits scored on turing_rerun
    assert _cells(out, "speedup")["phi2"][4].endswith("×")


def test_a_run_the_refits_do_not_reproduce_is_warned_and_bad_paths_refused(run, tmp_path, capsys):
    from gclsampler.score import write_results_csv

    out_dir, data, results = run
    other = tmp_path / "run"
    other.mkdir()
    write_results_csv(results.assign(error_cycles=results["error_cycles"].where(results["method"] != "pka", 99.0)),
                      other / "results.csv")
    assert _bench().main([str(other), str(data)]) == 0  # no plans/: evaluate.py's default parameters
    assert "warning: phi2: pka refitted with representative=first" in capsys.readouterr().err
    assert _bench().main([str(out_dir), str(tmp_path / "nodata")]) == 2
    assert "no workload" in capsys.readouterr().err
    assert _bench().main([str(tmp_path / "norun"), str(data)]) == 2
    assert "results.csv" in capsys.readouterr().err
