"""The summary of a ``train.py -m`` multirun: ``sweep_summary.csv`` and ``.md`` in its sweep dir.

Why its own module: Hydra instantiates the callback (conf/hydra/default.yaml) when a run
starts, before the job's first line, and it lived in ``gclsampler.train``, whose torch import
(about 3 s) every config error of a job then waited for. It reads only what the jobs wrote.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Iterable, Optional

from gclsampler._atomic import write_text_atomic
from gclsampler._safe_out import _HydraCallback, first_line, job_order


def summarize_sweep(multirun_dir: str | os.PathLike, jobs: Optional[Iterable[str | os.PathLike]] = None) -> Optional[Path]:
    """Compare the jobs of a Hydra multirun: ``sweep_summary.csv`` and ``.md`` in ``multirun_dir``.

    ``jobs``: the job directories to compare (default: every directory in ``multirun_dir``).
    One row per job directory holding a ``train_log.csv``: its overrides, best and final
    validation loss, epochs, training seconds, and plan error/speedup when the job's
    ``run.json`` carries them (post-embedding hook). Rows are sorted by best validation
    loss. Note that each job measures validation loss under its own augmentations, so
    across augmentation settings plan error is the fairer comparison.
    """
    import pandas as pd
    import yaml

    root = Path(multirun_dir)
    rows = []

    found = (p for p in root.iterdir() if p.is_dir()) if jobs is None else (Path(j) for j in dict.fromkeys(jobs))
    for job in sorted(found, key=job_order):
        logf = job / "train_log.csv"
        if not logf.exists():
            continue
        ov_path = job / ".hydra" / "overrides.yaml"
        overrides = yaml.safe_load(ov_path.read_text()) if ov_path.exists() else []
        df = pd.read_csv(logf)
        kept = df[df["best"] == 1] if "best" in df.columns else df.iloc[:0]
        row = {"job": job.name, "overrides": " ".join(overrides or []),
               # the kept model's (the last epoch marked best), as run.json says; else the lowest
               "best_val_loss": float(kept["val_loss"].iloc[-1]) if len(kept) else
               float(df["val_loss"].min()) if len(df) else float("nan"),
               "final_val_loss": float(df["val_loss"].iloc[-1]) if len(df) else float("nan"),
               "final_train_loss": float(df["train_loss"].iloc[-1]) if len(df) else float("nan"),
               "epochs": int(len(df)), "train_seconds": float(df["seconds"].sum()) if len(df) else 0.0}
        rj = job / "run.json"
        if rj.exists():
            run = json.loads(rj.read_text())
            row["synthetic"] = bool(run.get("synthetic"))
            if "data" in run:  # synthetic / real / "" (workload.json says neither), as report.md labels it
                row["data"] = str(run.get("data") or "")
            post = run.get("post_embedding") or {}
            for key in ("error_pct", "error_time_pct", "speedup", "k"):
                if key in post:
                    row[key] = post[key]
        rows.append(row)
    if not rows:
        return None
    table = pd.DataFrame(rows).sort_values("best_val_loss", kind="stable")
    write_text_atomic(root / "sweep_summary.csv", table.to_csv(index=False))
    lines = ["# Sweep summary", "", *_sweep_data_note(table),
             f"{len(table)} job{'s' if len(table) != 1 else ''} in `{root}`, sorted by best validation loss "
             "(lower is better; each job validates under its own augmentations).", ""]
    cols = list(table.columns)
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    for _, r in table.iterrows():
        cells = ["n/a" if _missing(v) else f"{v:.4f}" if isinstance(v, float) else str(v) for v in r.tolist()]
        lines.append("| " + " | ".join(cells) + " |")
    if table["best_val_loss"].isna().any():
        lines += ["", "n/a validation loss: the job had fewer than 2 validation graphs (InfoNCE needs a "
                  "negative), so it kept the epoch of lowest training loss."]
    write_text_atomic(root / "sweep_summary.md", "\n".join(lines) + "\n")
    return root / "sweep_summary.csv"


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _sweep_data_note(table) -> list[str]:
    """What the plan errors in the summary are measured against: a synthetic workload's ground
    truth is the synthesizer's timing model, never hardware, and the table must say so."""
    lines = []
    if "synthetic" in table.columns:
        synth = table["synthetic"].fillna(False).astype(bool)
        if synth.any():
            which = "Every job" if synth.all() else f"{int(synth.sum())} of {len(table)} jobs (synthetic = True)"
            lines += [f"> **SYNTHETIC DATA.** {which} ran on a workload written by `gclsampler.synth`: their plan "
                      "errors are against the synthesizer's timing model, not hardware measurements.", ""]
    # a job on a measured workload was labelled nothing, as if its plan error were no measurement either
    if "data" in table.columns:
        real = (table["data"].fillna("").astype(str) == "real").to_numpy()
        if real.any():
            which = "Every job" if real.all() else f"{int(real.sum())} of {len(table)} jobs (data = real)"
            lines += [f"> **REAL DATA.** {which} ran on a workload measured on a GPU (its workload.json says "
                      "`\"synthetic\": false`): their plan errors are against measured ground "
                      "truth.", ""]
    return lines


_SWEEP_FILES = {
    "sweep_summary.md": lambda first: first == "# Sweep summary",
    "sweep_summary.csv": lambda first: first.startswith("job,overrides,best_val_loss"),
}
"""The files a multirun writes into its sweep directory, and how to tell one written here."""


def foreign_sweep_files(root: str | os.PathLike) -> list[Path]:
    """The summary files in ``root`` that ``summarize_sweep`` did not write (an empty file holds
    nothing to lose): a fixed ``hydra.sweep.dir`` may be a directory of the user's."""
    out = []
    for name, ours in _SWEEP_FILES.items():
        p = Path(root) / name
        if p.is_symlink() or p.is_dir() or (p.is_file() and p.stat().st_size and not ours(first_line(p) or "")):
            out.append(p)
    return out


_CLOCK_SLACK_S = 2.0
"""How much older than the multirun's start a job's run.json may look and still be its: file
times are whole seconds (or 2 s) on some file systems."""


class SweepSummaryCallback(_HydraCallback):  # type: ignore[misc,valid-type]
    """Hydra callback (conf/hydra/default.yaml): summarise a multirun when it ends.

    A summary file of the user's in the sweep directory stops the multirun before its first
    job (it was silently replaced after all of them); one that appears during the jobs is
    kept, and the summary is not written, in one line.

    Which jobs: those of this multirun only, whose end this callback saw (``on_job_end``, in this
    process under Hydra's basic launcher), else those whose ``run.json`` was written since the
    multirun began. A sweep directory reused by an earlier multirun (a fixed ``hydra.sweep.dir``)
    also holds its jobs, and the summary ranked them beside this multirun's. A job that fails
    stops the multirun before ``on_multirun_end``: the jobs that finished are summarised then."""

    def __init__(self) -> None:
        self._started: float | None = None
        self._ended: list[Path] = []

    def on_multirun_start(self, config, **kwargs) -> None:  # noqa: D401
        import time

        root = Path(str(config.hydra.sweep.dir))
        found = foreign_sweep_files(root)
        if found:  # Hydra turns a callback's exception into a warning and carries on; SystemExit it lets through
            print(f"train.py: error: hydra.sweep.dir: {found[0]}: exists and was not written by a train.py "
                  "multirun; not replaced (move it, or give the sweep another hydra.sweep.dir)", file=sys.stderr)
            raise SystemExit(2)
        self._started = time.time()
        self._ended = []
        for name in _SWEEP_FILES:  # an earlier multirun's summary (ours: checked above) describes other jobs
            if (root / name).is_file():
                (root / name).unlink()
        from gclsampler._guard import after_an_error

        after_an_error(lambda: self._summarize(root, "that finished before the error"))

    def on_job_end(self, config, job_return=None, **kwargs) -> None:  # noqa: D401
        from omegaconf import OmegaConf

        out = OmegaConf.select(config, "hydra.runtime.output_dir", default=None)
        if out is not None and getattr(getattr(job_return, "status", None), "name", "") == "COMPLETED":
            self._ended.append(Path(str(out)))

    def _jobs(self, root: Path) -> list[Path]:
        if self._ended:
            return list(dict.fromkeys(self._ended))
        jobs = [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []
        if self._started is None:  # not started by Hydra: every job there
            return jobs
        return [d for d in jobs if (d / "run.json").is_file()
                and (d / "run.json").stat().st_mtime >= self._started - _CLOCK_SLACK_S]

    def _summarize(self, root: Path, which: str = "") -> None:
        found = foreign_sweep_files(root)
        if found:
            print(f"train.py: warning: {found[0]}: exists and was not written by a train.py multirun; sweep summary not "
                  "written", file=sys.stderr)
            return
        jobs = self._jobs(root)
        if not jobs or summarize_sweep(root, jobs) is None:
            return
        if which:
            n = len([j for j in jobs if (j / "train_log.csv").exists()])
            print(f"train.py: summarized {n} job{'s' if n != 1 else ''} {which} in {root / 'sweep_summary.md'}",
                  file=sys.stderr)

    def on_multirun_end(self, config, **kwargs) -> None:  # noqa: D401
        self._summarize(Path(str(config.hydra.sweep.dir)))
