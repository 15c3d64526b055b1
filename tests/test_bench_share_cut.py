"""bench/share_cut.py: its baseline is the widest-gap rule the share cut used before, and it runs."""

from __future__ import annotations

import sys

import numpy as np

from _bench_runs import bench_module as _bench


def test_baseline_peels_a_smooth_spread_and_the_library_rule_does_not():
    """The bench's point rests on its baseline reproducing the old behaviour: on times rising
    evenly it peels single launches (hundreds of clusters), while split_by_share halves."""
    from gclsampler.cluster import split_by_share

    bench = _bench("share_cut")
    t = np.linspace(1000.0, 2000.0, 400)
    old = bench.widest_gap_baseline(t, 0.04)
    new = split_by_share(np.zeros(t.size, dtype=np.int64), t, 0.04)
    assert old.max() + 1 > 100 and (np.bincount(old) == 1).sum() > 100
    assert new.max() + 1 <= 8
    for labels in (old, new):  # both honour the share
        assert max(np.abs(t[labels == c] - t[labels == c].mean()).sum() for c in range(labels.max() + 1)) <= 0.04 * t.sum()


def test_share_cut_bench_prints_its_table(capsys, monkeypatch):
    bench = _bench("share_cut")
    monkeypatch.setattr(sys, "argv", ["share_cut.py", "--n", "200", "--shares", "0.04,0.01"])
    bench.main()
    out = capsys.readouterr().out
    assert "SYNTHETIC" in out and out.count("heaviest gap (now)") == 6
    assert "widest / heaviest" in out


def test_cluster_scale_launches_mode_checks_the_dedupe(capsys, monkeypatch):
    """--launches compares distinct_rows with np.unique(axis=0) and says whether they agree."""
    bench = _bench("cluster_scale")
    monkeypatch.setattr(sys, "argv", ["cluster_scale.py", "--launches", "3000", "--kernels", "20"])
    bench.main()
    out = capsys.readouterr().out
    assert "identical output: True" in out and "cluster stage: K=" in out
