import math


def test_per_launch_attributes_and_means_are_averaged_not_summed():
    """A profile.csv given to `plan reconstruct` has nregs, shmem and per-warp means: their
    weighted sum over launches (nregs 1712 on a 46-launch plan) is no quantity at all."""
    from gclsampler.score import is_rate_metric

    for name in ("nregs", "shmem", "warp_inst_executed_mean", "ipc", "l2_hit_rate", "achieved_occupancy"):
        assert is_rate_metric(name), name
    for name in ("cycles", "instructions", "time_ns", "inst_executed", "pka_thread_blocks"):
        assert not is_rate_metric(name), name


def test_no_estimate_reasons_and_finite_or_null():
    from gclsampler.score import finite_or_null, no_estimate_reasons

    est = {"totals": {"cycles": 1.0, "huge": math.inf, "gone": None}, "means": {"ipc": math.nan},
           "ipc_of_totals": math.inf}
    assert no_estimate_reasons(est) == {"huge": "overflow", "gone": "missing", "ipc": "overflow",
                                        "ipc_of_totals": "overflow"}
    doc = finite_or_null({"a": [1.0, math.nan, (math.inf, 2)], "b": {"c": -math.inf}, "d": "x"})
    assert doc == {"a": [1.0, None, [None, 2]], "b": {"c": None}, "d": "x"}
