"""gclsampler pipeline for one workload (Hydra entry point).

    python train.py workload=phi2                 # synthesize if missing, graphs, train, embed, plan
    python train.py debug=default                 # tiny run in seconds
    python train.py -m augment=default,drops,node_drop,edge_drop,feature_noise   # sweep + sweep_summary.md

Outputs land in Hydra's run directory (outputs/<workload>/<time>/). The logic lives in
gclsampler.pipeline; this file only composes the config.
"""

from __future__ import annotations

import sys

from gclsampler._guard import exit_on_interrupt, run_hydra_main

with exit_on_interrupt("train.py"):  # these imports load hydra, numpy and torch (seconds)
    import hydra
    from omegaconf import DictConfig

    import gclsampler.config  # noqa: F401  (registers the structured config schema)


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    from gclsampler._guard import call_guarded, check_config_keys
    from gclsampler.pipeline import run

    def task():
        check_config_keys(cfg)  # `+train.epoch=3` must fail, not train with the default
        return run(cfg).get("best_val_loss")

    return call_guarded(task, "train.py")


def check_sweep() -> None:
    """``-m``: every swept value passes the checks its job would make, before the first job runs."""
    from pathlib import Path

    from gclsampler._guard import check_config_keys
    from gclsampler._sweep import check_sweep_values
    from gclsampler.pipeline import check_config

    def check(cfg: DictConfig) -> None:
        check_config_keys(cfg)
        check_config(cfg)

    check_sweep_values(sys.argv[1:], Path(__file__).resolve().parent / "conf", "config", check)


if __name__ == "__main__":
    # config errors, bad input, OSError: one line, exit 2; Ctrl-C: exit 130, SIGTERM 143 (gclsampler._guard)
    from gclsampler._guard import run_guarded

    sys.exit(run_guarded(check_sweep, "train.py") or run_hydra_main(main, "train.py"))
