"""``gclsampler graph info/build`` on a tiny SYNTHETIC workload."""

from __future__ import annotations

import json

import numpy as np

from gclsampler.cli import main

from test_data import _workload


def test_graph_build_then_info(tmp_path, capsys):
    wl = _workload(tmp_path / "wl", [1, 2, 1])
    assert main(["graph", "build", str(wl), "--workers", "1", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["invocations"], s["unique_graphs"], s["built"]) == (3, 2, 3)
    assert main(["graph", "info", str(wl), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    per_inv, summary = lines[:-1], lines[-1]
    assert [r["invocation"] for r in per_inv] == [0, 1, 2] and summary["cached"] == 3
    for r in per_inv:
        assert sum(r["nodes_by_type"].values()) == r["nodes"]
        assert sum(r["edges_by_type"].values()) == r["edges"]
    assert per_inv[0]["nodes"] == per_inv[2]["nodes"]
    assert main(["graph", "info", str(wl), "--invocation", "1", "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["nodes"] == per_inv[1]["nodes"]


def test_graph_info_errors_are_one_line_exit_2(tmp_path, capsys):
    wl = _workload(tmp_path / "wl", [1])
    assert main(["graph", "info", str(wl), "--invocation", "5"]) == 2
    err = capsys.readouterr().err
    assert "--invocation" in err and len(err.strip().splitlines()) == 1
    assert main(["graph", "info", str(tmp_path / "missing")]) == 2
    assert main(["graph", "info", str(wl), "--max-warps", "-3"]) == 2
    assert "graph.max_warps" in capsys.readouterr().err
