"""``gclsampler graph info/build`` on a tiny SYNTHETIC workload."""

from __future__ import annotations

import json

import pytest

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
    capsys.readouterr()
    one = sorted(wl.glob("kernel-*.traceg*"))[0]  # --invocation beside one file was ignored, exit 0
    assert main(["graph", "info", str(one), "--invocation", "100"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{one}: --invocation: picks an invocation of a workload directory" in line
    assert main(["graph", "info", str(one), "--cache-dir", str(tmp_path / "cache")]) == 2  # ignored, silently
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{one}: --cache-dir: caches a workload directory's graphs" in line and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("cmd", ["info", "build"])
@pytest.mark.parametrize("option, value, message", [
    ("--max-warps", "-1", "--max-warps: must be an integer in [0, 2**62] (0 = no cap), got -1"),
    ("--max-insts", "-2", "--max-insts: must be an integer in [0, 2**62] (0 = no cap), got -2"),
    # int64 counts overflowed into an OverflowError traceback
    ("--max-insts", str(2**63), f"--max-insts: must be an integer in [0, 2**62] (0 = no cap), got {2**63}"),
])
def test_graph_cli_range_errors_name_the_option(tmp_path, capsys, cmd, option, value, message):
    """The command line has no graph.max_warps key: the error named it (and 'graph config'),
    so the user had to guess which option it meant."""
    wl = _workload(tmp_path / "wl", [1])
    assert main(["graph", cmd, str(wl), option, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(message) and "graph." not in err[0]
    assert not (wl / ".graph-cache").exists()


@pytest.mark.parametrize("cmd", ["info", "build"])
def test_cache_dir_holding_a_users_files_is_refused(tmp_path, capsys, cmd):
    """--cache-dir ~/thesis wrote v1/ in among the chapters; a cache holds only its versions,
    and an earlier cache (or a new directory) is still taken."""
    wl = _workload(tmp_path / "wl", [1, 2])
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("draft")
    assert main(["graph", cmd, str(wl), "--workers", "1", "--cache-dir", str(mine)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"--cache-dir: graph cache {mine}: holds 'chapter1.tex'" in line
    assert sorted(p.name for p in mine.iterdir()) == ["chapter1.tex"]
    (tmp_path / "file").write_text("x")
    assert main(["graph", cmd, str(wl), "--workers", "1", "--cache-dir", str(tmp_path / "file")]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    for _ in range(2):  # new, then the same cache again
        assert main(["graph", cmd, str(wl), "--workers", "1", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["v1"]
