"""Scoring sits below the pipeline, the report and the suite: none of them import each other in a circle."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _loaded_after(module: str) -> set[str]:
    code = (f"import sys, {module}; "
            "print(' '.join(m for m in sys.modules if m.startswith('gclsampler')))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    return set(out.split())


def test_score_imports_no_higher_stage():
    mods = _loaded_after("gclsampler.score")
    assert not mods & {"gclsampler.evaluate", "gclsampler.report", "gclsampler.pipeline", "gclsampler.simulate"}


def test_report_does_not_import_the_suite():
    mods = _loaded_after("gclsampler.report")
    assert "gclsampler.evaluate" not in mods and "gclsampler.pipeline" not in mods


def test_old_names_still_importable_from_evaluate():
    from gclsampler import evaluate, report, score

    assert evaluate.score_plan is score.score_plan
    assert evaluate.EvaluationError is score.EvaluationError
    assert evaluate.write_workload_report is report.write_workload_report


def test_compare_reads_results_without_the_suite_or_torch():
    """`gclsampler compare` only reads results.csv files: no training stack, no refitting."""
    mods = _loaded_after("gclsampler.compare")
    assert not mods & {"gclsampler.evaluate", "gclsampler.pipeline", "gclsampler.samplers", "gclsampler.model"}
    code = "import sys, gclsampler.compare; print('torch' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env).stdout.strip() == "False"
