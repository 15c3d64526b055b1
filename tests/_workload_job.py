"""One of two jobs that share a workloads directory, run as its own process by
test_workload_sharing.py: ``python _workload_job.py ROLE KIND WORKLOADS_DIR SEED SIGNALS``.

ROLE ``first`` gets the workload, says so (``SIGNALS/first.ready``), and keeps using it until
the second job has either finished (``second.done``) or said on stderr that it waits
(``second.err``); it then records what its directory holds now (``first.saw``: its
workload.json, or ``gone``). ROLE ``second`` starts once the first is ready.
KIND is ``train`` (``pipeline.ensure_workload``), ``evaluate`` (``evaluate._prepare_workload``) or
``synth`` (the ``gclsampler synth`` command).
Files order the two, not sleeps; synthesis is a stand-in that writes what the stale check
reads, in a directory swapped in as ``gclsampler.synth`` swaps its own.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

CONF = Path(__file__).resolve().parents[1] / "conf"


def fake_generate(name, out_dir, *, params=None, arch="turing", seed=0, progress=False, jobs=1):
    from gclsampler._safe_out import replace_dir
    from gclsampler.synth.generate import GROUND_TRUTH_VERSION, resolve_params

    with replace_dir(out_dir, "synth") as tmp:
        (tmp / "kernelslist.g").write_text("kernel-1.traceg\n")
        (tmp / "profile.csv").write_text("invocation,kernel_name\n")
        meta = {"generator": "gclsampler.synth", "workload": name, "synth": resolve_params(name, params),
                "seed": seed, "arch": arch, "ground_truth_version": GROUND_TRUTH_VERSION}
        (tmp / "workload.json").write_text(json.dumps(meta))
    return Path(out_dir)


def compose_train(workloads: Path, seed: int):
    from hydra import compose, initialize_config_dir

    import gclsampler.config  # noqa: F401  (registers the schema)

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=["debug=default", "workload=3mm", f"paths.workloads_dir={workloads}",
                                             f"workload.seed={seed}"])


def get_workload(kind: str, workloads: Path, seed: int, hold: contextlib.ExitStack) -> Path:
    if kind == "train":
        from gclsampler.pipeline import ensure_workload

        return ensure_workload(compose_train(workloads, seed), hold)
    if kind == "synth":  # `gclsampler synth 3mm --out workloads/3mm`, run by hand beside the jobs
        from gclsampler.cli import main

        wdir = workloads / "3mm"
        if main(["synth", "3mm", "--out", str(wdir), "--seed", str(seed), "--quiet"]) != 0:
            sys.exit("gclsampler synth failed")
        return wdir
    from gclsampler.evaluate import SuiteConfig, _prepare_workload

    return _prepare_workload("3mm", workloads, SuiteConfig(), True, seed, hold)


def _until(what, deadline_s: float = 120) -> None:
    end = time.monotonic() + deadline_s
    while not what():
        if time.monotonic() > end:
            sys.exit("gave up waiting")
        time.sleep(0.02)


def _made(wdir: Path) -> str:
    """What the directory was synthesized for (its workload.json), or ``gone``."""
    try:
        return (wdir / "workload.json").read_text()
    except FileNotFoundError:
        return "gone"


def main(role: str, kind: str, workloads: str, seed: str, signals: str) -> None:
    import gclsampler.synth as synth

    synth.generate = fake_generate
    sig = Path(signals)
    with contextlib.ExitStack() as hold:
        if role == "first":
            wdir = get_workload(kind, Path(workloads), int(seed), hold)
            (sig / "first.ready").write_text(_made(wdir))
            err = sig / "second.err"
            _until(lambda: (sig / "second.done").exists() or "waiting" in (err.read_text() if err.exists() else ""))
            (sig / "first.saw").write_text(_made(wdir))
        else:
            _until((sig / "first.ready").exists)
            wdir = get_workload(kind, Path(workloads), int(seed), hold)
            (sig / "second.done").write_text(_made(wdir))


if __name__ == "__main__":
    main(*sys.argv[1:])
