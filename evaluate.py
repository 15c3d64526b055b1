"""Reproduce the sampler comparisons (GCL-Sampler Fig. 4-6 / Table 3, STEM+ROOT Table 3 / Fig. 11).

    python evaluate.py                 # full suite: 11 workloads x all methods x 3 archs
    python evaluate.py suite=quick     # CI-sized

Writes results.csv, report.md, plots/ and plans/ into the Hydra run dir (``out_dir`` when given:
conf/evaluate.yaml makes it the run dir, so .hydra/ and evaluate.log go with the results).
The logic lives in ``gclsampler.evaluate``; this file only composes the config.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gclsampler._guard import call_guarded, check_config_keys, exit_on_interrupt, run_hydra_main

with exit_on_interrupt("evaluate"):  # hydra, pandas, matplotlib: seconds
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from gclsampler.evaluate import (EvaluateConfig, check_out_dir_apart, check_suite_keys, register_configs, run_suite,
                                     train_setting_hint)

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="evaluate")
def main(cfg) -> None:
    call_guarded(lambda: _main(cfg), "evaluate", train_setting_hint)


def _main(cfg) -> None:
    launch = Path(hydra.utils.get_original_cwd())
    out = Path(cfg.out_dir) if cfg.out_dir else Path(HydraConfig.get().runtime.output_dir)
    if not out.is_absolute():
        out = launch / out
    check_config_keys(cfg)  # unknown keys added with `+` fail too
    typed: EvaluateConfig = OmegaConf.to_object(cfg)
    check_suite_keys(typed, launch)  # before out_dir is created (a missing real workload too)
    check_out_dir_apart(out, typed, launch)
    from gclsampler._safe_out import claim_dir

    # never write into files evaluate did not write; Hydra's run dir is marked too, so a rerun
    # there passes the run-dir guard (gclsampler._safe_out.RunDirGuard)
    claim_dir(out, "evaluate", ignore=(".hydra", "evaluate.log"))  # out_dir may be Hydra's run dir too
    run_suite(typed, out, launch_dir=launch, config_text=OmegaConf.to_yaml(cfg))
    print(f"evaluate: wrote {out / 'report.md'} and {out / 'results.csv'}")


def check_sweep() -> None:
    """``-m``: every swept value passes the checks its job would make, before the first job runs."""
    from gclsampler._sweep import check_sweep_values

    def check(cfg) -> None:
        check_config_keys(cfg)
        check_suite_keys(OmegaConf.to_object(cfg), Path.cwd())

    check_sweep_values(sys.argv[1:], Path(__file__).resolve().parent / "conf", "evaluate", check)


if __name__ == "__main__":
    # config errors, bad input, OSError: one line, exit 2; Ctrl-C: exit 130, SIGTERM 143 (gclsampler._guard)
    from gclsampler._guard import run_guarded

    sys.exit(run_guarded(check_sweep, "evaluate", train_setting_hint)
             or run_hydra_main(main, "evaluate", train_setting_hint))
