"""The committed real workloads (real/<name>/): ground truth rebuilt from what was measured.

Why: ``profile.csv`` is what every method is scored against, so it must be what the GPU
host's own exports say, nothing edited by hand. ``real/build.py`` re-imports each export
in ``raw/``; the result must equal the committed file byte for byte.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = sorted(p.parent.name for p in (ROOT / "real").glob("*/workload.json"))


def _build():
    spec = importlib.util.spec_from_file_location("real_build", ROOT / "real" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not WORKLOADS, reason="no real workload committed")
@pytest.mark.parametrize("name", WORKLOADS)
def test_profile_is_the_measured_export_reimported(name, tmp_path):
    wl = ROOT / "real" / name
    fresh = tmp_path / "profile.csv"
    _build().build_profile(wl, fresh)
    assert fresh.read_bytes() == (wl / "profile.csv").read_bytes()


@pytest.mark.skipif(not WORKLOADS, reason="no real workload committed")
@pytest.mark.parametrize("name", WORKLOADS)
def test_workload_json_says_real_and_matches_the_profile(name):
    from gclsampler.profile import read_profile

    wl = ROOT / "real" / name
    meta = json.loads((wl / "workload.json").read_text())
    assert meta["synthetic"] is False and meta["workload"] == name
    for key in ("arch", "gpu", "driver", "cuda", "measured", "profile_source", "collected_by"):
        assert meta.get(key), f"real/{name}/workload.json: {key} missing"
    assert meta["n_invocations"] == len(read_profile(wl / "profile.csv"))
    assert (wl / "kernelslist.g").exists() == bool(meta["traces"])


_SYNTHETIC_VALUES = [False, True, None, 0, 1, "", "false", "no", [], {}]


@pytest.mark.parametrize("value", [*_SYNTHETIC_VALUES, "absent"], ids=repr)
def test_declared_data_kind_is_what_loading_the_workload_says(value, tmp_path):
    """``declared_data_kind`` (the evaluation's "never synthesize over this" check, which runs
    before a directory need hold a loadable workload) and ``Workload.load(...).data_kind`` (what
    reports print) give the same kind for every value a workload.json's ``synthetic`` key may
    hold: ``false`` is REAL, ``true`` SYNTHETIC, null or no key unlabelled, and anything else
    (``"no"`` is a true string) is refused by both, by key, before a report can mislabel it."""
    from gclsampler.errors import GclError
    from gclsampler.workload import Workload, declared_data_kind

    (tmp_path / "profile.csv").write_bytes((ROOT / "real" / "nw" / "profile.csv").read_bytes())
    meta = {"workload": "w", "arch": "h200"} | ({} if value == "absent" else {"synthetic": value})
    (tmp_path / "workload.json").write_text(json.dumps(meta))
    if not (value is None or value == "absent" or isinstance(value, bool)):
        for read in (declared_data_kind, Workload.load):
            with pytest.raises(GclError, match=r"workload.json: synthetic: expected true or false"):
                read(tmp_path)
        return
    kind = declared_data_kind(tmp_path)
    assert kind == Workload.load(tmp_path).data_kind
    assert kind == {False: "real", True: "synthetic"}.get(value, "")
    (tmp_path / "workload.json").unlink()
    assert declared_data_kind(tmp_path) == "" == Workload.load(tmp_path).data_kind


TRACED = [n for n in WORKLOADS if json.loads((ROOT / "real" / n / "workload.json").read_text()).get("traces")]


@pytest.mark.skipif(not TRACED, reason="no real workload with traces committed")
@pytest.mark.parametrize("name", TRACED)
def test_committed_traces_cover_every_launch_and_agree_with_the_profile(name):
    """The traces came from another run than the profile (real/runs/...-pass6): every launch of
    the profile must have its trace, of the same kernel, and the biggest one must parse whole."""
    from gclsampler.trace import read_kernel
    from gclsampler.validate import check_workload, errors_and_warnings

    wl = ROOT / "real" / name
    errors, _ = errors_and_warnings(check_workload(wl))
    assert not errors, errors[:3]
    traces = sorted(wl.glob("kernel-*.traceg.zst"), key=lambda p: p.stat().st_size)
    meta = json.loads((wl / "workload.json").read_text())
    assert len(traces) == meta["n_invocations"]
    t = read_kernel(traces[-1])
    assert t.n_insts > 0 and t.values is not None, "SM-0 traces with register values"


def _mb(name: str) -> float:
    d = ROOT / "real" / name
    return sum(p.stat().st_size for p in [d / "kernelslist.g", *d.glob("kernel-*.traceg.zst")]) / 1e6


@pytest.mark.skipif(TRACED != ["bfs", "lud", "nw", "pythia410m_2l"], reason="the docs describe the four traced workloads")
def test_the_docs_trace_sizes_and_header_only_counts_are_the_committed_files():
    """README and tracer/README.md gave the traces' sizes as `du -sh` of whole directories (20 MB in
    all; 3.0, 0.5, 4.0, 13 MB): the block-rounded size of profiles and raw exports too."""
    import re

    from gclsampler.trace.reader import open_bytes

    readme = (ROOT / "README.md").read_text()
    total = float(re.search(r"`kernel-\*\.traceg\.zst`, ([\d.]+) MB in all", readme).group(1))
    assert abs(total - sum(_mb(n) for n in TRACED)) < 0.5
    tracer = (ROOT / "tracer" / "README.md").read_text()
    sizes = re.search(r"grouped `\.traceg\.zst` with `kernelslist\.g`: ([\d.]+), ([\d.]+), ([\d.]+) and ([\d.]+) MB", tracer)
    for name, said in zip(("nw", "bfs", "lud", "pythia410m_2l"), sizes.groups()):
        assert abs(float(said) - _mb(name)) < 0.05, name
    # docs/real.md: how many traces are a header alone (no CTA ran on SM 0)
    doc = (ROOT / "docs" / "real.md").read_text()
    said = re.search(r"nw (\d+) of (\d+), lud (\d+) of (\d+), the LLM (\d+) of (\d+), bfs none", doc).groups()
    for (name, n, of) in zip(("nw", "lud", "pythia410m_2l"), said[0::2], said[1::2]):
        traces = sorted((ROOT / "real" / name).glob("kernel-*.traceg.zst"))
        empty = sum(b"#BEGIN_TB" not in open_bytes(t) for t in traces)
        assert (empty, len(traces)) == (int(n), int(of)), name
    assert all(b"#BEGIN_TB" in open_bytes(t) for t in (ROOT / "real" / "bfs").glob("kernel-*.traceg.zst"))
