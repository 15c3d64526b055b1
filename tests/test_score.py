

def test_per_launch_attributes_and_means_are_averaged_not_summed():
    """A profile.csv given to `plan reconstruct` has nregs, shmem and per-warp means: their
    weighted sum over launches (nregs 1712 on a 46-launch plan) is no quantity at all."""
    from gclsampler.score import is_rate_metric

    for name in ("nregs", "shmem", "warp_inst_executed_mean", "ipc", "l2_hit_rate", "achieved_occupancy"):
        assert is_rate_metric(name), name
    for name in ("cycles", "instructions", "time_ns", "inst_executed", "pka_thread_blocks"):
        assert not is_rate_metric(name), name
