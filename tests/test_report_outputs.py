"""Issue 14, class 5: report.md has a cluster table, plots of synthetic data say so, and the
silhouette plot stars the k the plan uses (not the curve's maximum)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gclsampler import report
from gclsampler.cluster_table import chosen_k, cluster_table
from gclsampler.plan import plan_from_labels


@pytest.fixture
def captured(monkeypatch):
    """Figures passed to report._savefig, with the synthetic flag, instead of PNG files."""
    figs = []

    def fake(fig, path, synthetic=False, legend_of=None):
        if legend_of is not None:
            legend_of.legend()
        figs.append((fig, path, synthetic))
        return path

    monkeypatch.setattr(report, "_savefig", fake)
    return figs


def _plan(labels, times):
    labels = np.asarray(labels)
    reps = np.array([np.flatnonzero(labels == c)[0] for c in range(labels.max() + 1)])
    names = np.array([f"k{c}" for c in labels])
    return plan_from_labels("w", "gcl", labels, reps, names)


def test_cluster_table_rows_measured_and_estimated():
    labels = [0, 0, 0, 1, 2, 2]
    times = np.array([1.0, 1.0, 1.0, 10.0, 2.0, 6.0])
    plan = _plan(labels, times)
    text = cluster_table(plan, times, np.array(labels))
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and ln[2].isdigit()]
    assert "share of time (%) |" in text.splitlines()[0]
    # largest share first: cluster 1 holds 10 of 21, cluster 2 holds 8 (measured, not 2 * 2)
    assert rows[0].split("|")[1].strip() == "1" and rows[0].rstrip(" |").endswith("47.6")
    assert rows[1].split("|")[1].strip() == "2" and rows[1].rstrip(" |").endswith("38.1")
    assert "3: `k2`" in rows[1] or "4: `k2`" in rows[1]
    est = cluster_table(plan, times)  # no labels: weight x time of the representative
    assert "estimated from samples" in est
    assert any(r.split("|")[1].strip() == "2" and r.rstrip(" |").endswith("19.0") for r in est.splitlines())


def test_chosen_k_comes_from_the_plan_labels():
    plan = _plan([0, 1, 1, 2, 3], np.ones(5))
    assert chosen_k(plan, np.array([0, 1, 1, 2, 3])) == 4
    assert chosen_k(plan) == 4


def test_silhouette_plot_stars_the_plans_k(captured, tmp_path):
    curve = pd.DataFrame({"k": [2, 3, 4, 5], "score": [0.50, 0.61, 0.60, 0.40]})
    report.plot_silhouette({"w": curve}, tmp_path / "s.png", chosen={"w": 4}, synthetic=True)
    fig, _, synthetic = captured[-1]
    ax = fig.axes[0]
    stars = np.vstack([c.get_offsets() for c in ax.collections])
    assert stars.tolist() == [[4.0, 0.60]]  # not the maximum at k=3
    assert "k the plan uses" in ax.get_title() and synthetic


def test_synthetic_stamp_on_every_plot(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg", force=True)
    texts = []
    real = report._savefig

    def spy(fig, path, synthetic=False, legend_of=None):
        out = real(fig, path, synthetic, legend_of)
        texts.append([t.get_text() for t in fig.texts])
        return out

    monkeypatch.setattr(report, "_savefig", spy)
    times = np.array([1.0, 2.0, 3.0, 4.0])
    report.plot_cluster_histograms(times, np.array([0, 0, 1, 1]), tmp_path / "h.png", "t", synthetic=True)
    report.plot_cluster_histograms(times, np.array([0, 0, 1, 1]), tmp_path / "h2.png", "t")
    assert "SYNTHETIC DATA" in texts[0] and "SYNTHETIC DATA" not in texts[1]
    assert (tmp_path / "h.png").stat().st_size > 0


def test_workload_report_has_the_cluster_table(tiny_workload, tmp_path, captured):
    from gclsampler.evaluate import write_workload_report
    from gclsampler.workload import Workload

    wl = Workload.load(tiny_workload)
    codes, _ = pd.factorize(wl.profile["kernel_name"])
    reps = np.array([np.flatnonzero(codes == c)[0] for c in range(codes.max() + 1)])
    plan = plan_from_labels(wl.name, "gcl", codes, reps, wl.profile["kernel_name"].to_numpy(), synthetic=True)
    sil = tmp_path / "silhouette.csv"
    sil.write_text("k,score\n2,0.9\n" + f"{codes.max() + 1},0.5\n")
    write_workload_report(wl, plan, tmp_path, labels={"gcl": codes}, silhouette=sil)
    md = (tmp_path / "report.md").read_text()
    assert "## Clusters of the gcl plan" in md and "| cluster | size | representative" in md
    assert md.count("\n| ") - 2 >= codes.max() + 1
    sil_fig = [f for f, p, s in captured if str(p).endswith("silhouette.png")][0]
    stars = np.vstack([c.get_offsets() for c in sil_fig.axes[0].collections])
    assert stars.tolist() == [[codes.max() + 1, 0.5]]
    assert all(s for _, _, s in captured)  # the workload is synthetic: every plot is stamped


def test_suite_report_has_cluster_tables_of_the_histogram_workload(tmp_path, monkeypatch):
    import gclsampler.evaluate as ev
    from test_baselines import make_profile
    from test_evaluate import _compose as compose_evaluate
    from test_evaluate import _write_workload

    data = tmp_path / "data"
    _write_workload(data / "wa", {"turing": make_profile(60, 0)})
    cfg, _ = compose_evaluate(["suite=quick", "suite.workloads=[wa]", "suite.data_dir=null", "suite.archs=[turing]",
                               "suite.methods=[pka,sieve]", "suite.hist_workload=wa", "suite.hist_methods=[sieve]",
                               f"data_dir={data}", "generate=false", "plots=false"])
    ev.run_suite(cfg, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Clusters of the sieve plan for wa (turing)" in md
    assert "| cluster | size | representative (invocation: kernel) | weight | time CoV (%) | share of time (%) |" in md


def _brute_force_sd(labels, times, m):
    """Standard deviation of Σ_k N_k · mean(sample_k) over every way of drawing m_k members
    of each cluster k without replacement (exact enumeration)."""
    from itertools import combinations, product

    labels, times = np.asarray(labels), np.asarray(times, dtype=np.float64)
    per_cluster = []
    for c in range(labels.max() + 1):
        members = np.flatnonzero(labels == c)
        per_cluster.append([members.size * times[list(s)].mean() for s in combinations(members, m[c])])
    totals = np.array([sum(x) for x in product(*per_cluster)])
    return 100.0 * totals.std() / times.sum()


@given(st.lists(st.integers(0, 2), min_size=2, max_size=9),
       st.lists(st.floats(0.5, 50.0), min_size=9, max_size=9), st.integers(0, 10**6))
@example([1, 0, 1], [0.5000000000000001, 1.0, 0.5] + [1.0] * 6, 1)  # E[t²] − E[t]² gave 7.6e-7 % for 0
@settings(max_examples=80, deadline=None)
def test_representative_spread_equals_exact_enumeration(raw, times, seed):
    from gclsampler.score import representative_spread
    from gclsampler.plan import ClusterInfo, Sample, SamplingPlan

    labels = np.unique(np.asarray(raw), return_inverse=True)[1].reshape(-1)  # dense 0..K-1
    t = np.asarray(times[: labels.size])
    rng = np.random.default_rng(seed)
    sizes = np.bincount(labels)
    m = np.array([rng.integers(1, s + 1) for s in sizes])  # 1..N_k samples per cluster
    samples = [Sample(int(i), "k", c, float(sizes[c] / m[c]))
               for c in range(sizes.size) for i in rng.choice(np.flatnonzero(labels == c), m[c], replace=False)]
    plan = SamplingPlan("w", "x", labels.size, samples, [ClusterInfo(c, int(sizes[c])) for c in range(sizes.size)], {})
    sd, parts = representative_spread(plan, t, labels)
    assert sd == pytest.approx(_brute_force_sd(labels, t, m), rel=1e-6, abs=1e-9)
    assert not parts or sum(parts.values()) == pytest.approx(1.0)
    # a census (every member simulated) cannot move
    census = SamplingPlan("w", "x", labels.size, [Sample(i, "k", int(c), 1.0) for i, c in enumerate(labels)],
                          plan.clusters, {})
    assert representative_spread(census, t, labels)[0] == pytest.approx(0.0, abs=1e-9)


def test_representative_spread_refuses_plans_it_does_not_describe():
    from gclsampler.score import representative_spread
    from gclsampler.plan import Sample, SamplingPlan

    labels = np.array([0, 0, 1, 1])
    t = np.array([1.0, 3.0, 2.0, 2.0])
    plan = _plan(labels, t)
    assert representative_spread(plan, t, labels)[0] == pytest.approx(100.0 * 2 * 1.0 / 8.0)
    skewed = SamplingPlan("w", "x", 4, [Sample(0, "k", 0, 3.0), Sample(2, "k", 1, 1.0)], plan.clusters, {})
    assert representative_spread(skewed, t, labels) is None  # weights are not N_k / m_k
    assert representative_spread(plan, t, np.array([0, 1, 1, 1])) is None  # labels disagree with the sizes


def test_cluster_table_shows_time_spread_only_when_members_are_known():
    labels = np.array([0, 0, 0, 1, 2, 2])
    times = np.array([1.0, 1.0, 1.0, 10.0, 2.0, 6.0])
    plan = _plan(labels, times)
    text = cluster_table(plan, times, labels)
    assert "time CoV (%)" in text.splitlines()[0]
    row2 = next(r for r in text.splitlines() if r.startswith("| 2 |"))
    assert row2.split("|")[5].strip() == "50.0"  # times 2 and 6: std 2 / mean 4
    # only cluster 2 varies: 2^2 * 2^2 = 16 -> sd 4 of a total 21
    assert f"±{100 * 4 / 21:.2f} %" in text and "cluster 2 (100 %)" in text
    est = cluster_table(plan, times)
    assert "CoV" not in est and "±" not in est
    flat = cluster_table(plan, np.array([1.0, 1.0, 1.0, 10.0, 4.0, 4.0]), labels)
    assert "±0.00 %" in flat and "every cluster's members take the same time" in flat


def _section_rows(text: str, heading: str) -> dict[str, list[str]]:
    """The table under ``heading`` in report.md: first cell -> the other cells."""
    lines = text.splitlines()
    i = next(j for j, ln in enumerate(lines) if ln.startswith("#") and heading in ln)
    rows = {}
    for ln in lines[i + 1:]:
        if ln.startswith("#"):
            break
        if ln.startswith("| ") and not ln.startswith("|---"):
            cells = [c.strip() for c in ln.strip().strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def test_an_average_over_fewer_workloads_says_how_many_even_one_short(tmp_path):
    """A method that could not run on some workloads is averaged over the ones it ran on; its
    AVG cell must say "(k of n workloads)" for every k < n, one short included, or a reader
    compares its mean over 2 easy workloads with another method's mean over all 3 as if alike."""
    from test_compare import _rows

    df = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0, ("w3", "gcl"): 9.0, ("w1", "pka"): 1.0, ("w2", "pka"): 1.0})
    df["cycles_true"] = 1e6
    text = report.write_report(df, tmp_path / "r", plots=False,
                               unavailable=[("w3", "pka", "no launch trace")]).read_text()
    rows = _section_rows(text, "Error and speedup per workload on turing")
    gcl, pka = rows["**AVG (arith.)**"][1:]
    assert pka.endswith("(2 of 3 workloads)"), pka
    assert "workloads)" not in gcl  # gcl ran on all three: no note
    assert rows["w3"][2] == "not run"


def test_every_average_over_fewer_workloads_says_how_many(tmp_path):
    """Not only the comparison table: the time table (the one every REAL profile can fill), the
    cross-arch table and the metric table averaged pka over the 2 workloads it ran on beside gcl's
    mean over 3, without a word (pka 1.00 against gcl 4.00, where on the same 2 gcl had 1.50)."""
    from test_compare import _rows

    df = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0, ("w3", "gcl"): 9.0, ("w1", "pka"): 1.0, ("w2", "pka"): 1.0},
               synthetic=False)
    df["data"], df["gpu"], df["cycles_true"] = "real", "H200", 1e6
    df["error_time"] = df["error_ipc"] = df["error_cycles"]
    text = report.write_report(df, tmp_path / "r", plots=False,
                               unavailable=[("w3", "pka", "no launch trace")]).read_text()
    time = _section_rows(text, "Error on measured time")
    assert time["**AVG (arith.)**"] == ["4.00 / 10.00×", "1.00 / 10.00× (2 of 3 workloads)"]
    cross = text[text.index("## Cross-architecture"):]
    pka = _section_rows(cross, "### pka")
    assert pka["w3 (REAL)"] == ["—"] * 4  # the workload it did not run on is a row, as in the other tables
    assert pka["**AVG**"][0] == pka["**AVG**"][2] == "1.00 (2 of 3 workloads)"
    assert "workloads)" not in " ".join(_section_rows(cross, "### gcl")["**AVG**"])
    metric = _section_rows(text, "Micro-architectural metric errors")
    assert metric["pka (2 of 3 workloads)"][:2] == ["1.00", "1.00"] and metric["gcl"][:2] == ["4.00", "4.00"]


def test_cross_arch_average_is_the_arithmetic_mean_over_workloads(tmp_path):
    """report.md says "Errors are arithmetic means", as GCL-Sampler's Table 3 averages; a
    median (or any other centre) would hide the one workload a plan ports badly to."""
    from test_compare import _rows

    df = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0, ("w3", "gcl"): 9.0}, ada=2.0)
    df["cycles_true"] = 1e6
    text = report.write_report(df, tmp_path / "r", plots=False).read_text()
    assert "Errors are arithmetic means" in text
    i = text.index("## Cross-architecture")
    rows = _section_rows(text[i:], "### gcl")
    # columns: turing E(%), turing SU, ada E(%), ada SU; turing errors 1, 2, 9 and ada twice those
    assert rows["**AVG**"][0] == f"{(1 + 2 + 9) / 3:.2f}"
    assert rows["**AVG**"][2] == f"{(2 + 4 + 18) / 3:.2f}"


def test_a_cross_arch_profile_without_cycles_is_scored_on_time_and_said(tmp_path):
    """An arch whose profile has no cycle counts (Nsight Systems, torch.profiler) showed n/a in
    the cross-arch table, with no word of why and no score; its cells are the error on time_ns,
    marked, and the AVG row (on cycles) leaves them out, saying over how many it is."""
    from test_compare import _rows

    df = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0}, ada=2.0)
    df["cycles_true"] = 1e6
    df["error_time"] = df["error_cycles"] + 0.5
    ada_w2 = (df["arch"] == "ada") & (df["workload"] == "w2")
    df.loc[ada_w2, "error_cycles"] = float("nan")  # ada's profile of w2: wall times only
    text = report.write_report(df, tmp_path / "r", plots=False).read_text()
    cross = text[text.index("## Cross-architecture"):]
    assert "Cells marked (time) are errors on `time_ns`" in cross
    rows = _section_rows(cross, "### gcl")
    w2 = next(v for k, v in rows.items() if k.startswith("w2"))
    assert w2[2] == "4.50 (time)" and w2[0] == "2.00"
    assert rows["**AVG**"][2] == "2.00 (1 of 2 workloads)"


def test_any_member_average_is_over_the_workloads_the_table_shows(tmp_path):
    """The any-member table shows only workloads with an any-member error (one-per-cluster plans);
    its AVG put the plan's cycle error over every workload beside the any-member error over those
    alone (gcl 5.00 / 2.00 where the one row shown was 1.00 / 2.00), as the second-run table
    does not."""
    from test_compare import _rows

    df = _rows({("w1", "gcl"): 1.0, ("w1", "pka"): 2.0, ("w2", "gcl"): 9.0, ("w2", "pka"): 4.0})
    df["cycles_true"] = 1e6
    w1 = df["workload"] == "w1"
    df.loc[w1, "error_cycles_any_member"] = 2.0
    df.loc[w1, "spread_sd"] = 1.5
    text = report.write_report(df, tmp_path / "r", plots=False).read_text()
    rows = _section_rows(text, "## Cluster quality apart from the representative")
    assert set(rows) == {"workload", "w1", "**AVG**"}
    assert rows["**AVG**"] == rows["w1"] == ["1.00 / 2.00 / ±1.50", "2.00 / 2.00 / ±1.50"]


def _rows(text: str) -> list[list[str]]:
    """The data rows of the cluster table (cells stripped), before any note under it."""
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in text.split("\n\n")[0].splitlines()[2:]]


@given(st.lists(st.integers(0, 7), min_size=1, max_size=30), st.data(), st.integers(1, 9))
@settings(max_examples=60, deadline=None)
def test_cluster_table_lists_at_most_max_rows_and_sums_the_rest(raw, data, max_rows):
    """max_rows clusters are listed, largest share first; exactly when more exist, one line
    says how many more and the share of time they hold (the listed shares' complement)."""
    labels = np.unique(np.asarray(raw), return_inverse=True)[1].reshape(-1)
    times = np.asarray(data.draw(st.lists(st.floats(0.5, 50.0), min_size=labels.size, max_size=labels.size)))
    plan = _plan(labels, times)
    k = int(labels.max()) + 1
    for lab in (labels, None):
        text = cluster_table(plan, times, lab, max_rows=max_rows)
        rows = _rows(text)
        assert len(rows) == min(k, max_rows)
        pct = [float(r[-1]) for r in rows]
        assert pct == sorted(pct, reverse=True)
        more = [p for p in text.split("\n\n")[1:] if "more clusters hold" in p]
        if k <= max_rows:
            assert not more
            continue
        assert len(more) == 1 and more[0].startswith(f"{k - max_rows} more clusters hold ")
        rest = float(more[0].split(" hold ")[1].split(" %")[0])
        if lab is not None:  # measured shares add up to the whole
            assert rest == pytest.approx(100.0 - sum(pct), abs=0.05 * (len(pct) + 1))
        else:
            assert 0.0 < rest <= (min(pct) + 0.06) * (k - max_rows) + 0.05  # each unlisted share <= the least listed


def test_cluster_table_of_a_workload_without_time_does_not_divide_by_zero():
    """An all-zero time column (a profile whose timer read 0) has no share to give: n/a, not a crash."""
    labels = np.array([0, 0, 1, 2, 2])
    plan = _plan(labels, np.zeros(5))
    for lab in (labels, None):
        text = cluster_table(plan, np.zeros(5), lab, max_rows=2)
        rows = _rows(text)
        assert [r[-1] for r in rows] == ["nan", "nan"] and "1 more clusters hold nan %" in text
        assert [r[0] for r in rows] == ["0", "1"]  # equal shares: by cluster id


def test_cluster_table_names_at_most_two_representatives_and_counts_the_rest():
    """A cluster drawn several times (STEM) lists two representatives and weights, then how many more."""
    from gclsampler.plan import ClusterInfo, Sample, SamplingPlan

    for m in (1, 2, 3, 4):
        samples = [Sample(i, f"k{i}", 0, 5.0 / m) for i in range(m)] + [Sample(5, "one", 1, 1.0)]
        plan = SamplingPlan("w", "stem", 6, samples, [ClusterInfo(0, 5), ClusterInfo(1, 1)], {})
        row = next(r for r in _rows(cluster_table(plan, np.ones(6))) if r[0] == "0")
        shown = ", ".join(f"{i}: `k{i}`" for i in range(min(m, 2)))
        assert row[2] == (shown + (f", … (+{m - 2})" if m > 2 else ""))
        assert row[3] == ", ".join(f"{5.0 / m:g}" for _ in range(min(m, 2))) + (", …" if m > 2 else "")


def test_cluster_table_names_the_three_largest_parts_of_the_variance():
    """Pairs of members that differ by 8, 4, 2 and 1: variance parts 64 : 16 : 4 : 1. The three
    largest are named with their share, down to small ones (4.7 %); the fourth is not."""
    times = np.array([10.0, 18.0, 10.0, 14.0, 10.0, 12.0, 10.0, 11.0])
    labels = np.repeat(np.arange(4), 2)
    text = cluster_table(_plan(labels, times), times, labels)
    parts = [64, 16, 4, 1]
    named = ", ".join(f"cluster {c} ({100 * p / sum(parts):.0f} %)" for c, p in enumerate(parts[:3]))
    assert f"the largest parts of that variance: {named}." in text
    assert "cluster 3 (" not in text


def test_cluster_table_cells_keep_the_table_whole():
    """A kernel name is one cell: a '|' in it is escaped, and a long one is cut to 48 characters."""
    from gclsampler.plan import ClusterInfo, Sample, SamplingPlan

    for name in ("void k<a|b>(int)", "x" * 48, "y" * 49, "_Z" + "long_template_name" * 10):
        plan = SamplingPlan("w", "m", 2, [Sample(0, name, 0, 2.0)], [ClusterInfo(0, 2)], {})
        text = cluster_table(plan, np.ones(2))
        row = text.splitlines()[2]
        assert row.count(" | ") == len(text.splitlines()[0].split(" | ")) - 1  # as many cells as the header
        cell = row.split("0: `", 1)[1].split("`", 1)[0]
        shown = name.replace("|", "\\|")
        assert cell == (shown if len(shown) <= 48 else shown[:47] + "…")


def test_an_infinite_speedup_is_drawn_at_the_edge_not_left_out(captured):
    """A plan of sampled time 0 has speedup inf: the speedup bars and the speedup-vs-error scatter
    drew nothing for it, as for a method not run, and matplotlib warned ("invalid value
    encountered"). It is drawn past the highest finite speedup, marked "∞", with a legend entry."""
    import warnings

    from test_compare import _rows

    df = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 2.0, ("w1", "pka"): 2.0, ("w2", "pka"): 3.0}, speedup=10.0)
    s = df[df["arch"] == "turing"].assign(speedup_mean=lambda d: d["speedup"])
    s.loc[(s["workload"] == "w1") & (s["method"] == "gcl"), "speedup_mean"] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report.plot_speedup_vs_error(s, "sve.png", "turing")
        report.plot_per_workload_bars(s, "err.png", "su.png", "turing")
    edge = report.infinite_edge(s["speedup_mean"])
    assert edge == 40.0
    (scatter, _, _), _, (bars, _, _) = captured
    ax = scatter.axes[0]
    at_edge = [c for c in ax.collections if len(c.get_offsets()) and np.allclose(c.get_offsets()[:, 0], edge)]
    assert [c.get_offsets()[:, 1].tolist() for c in at_edge] == [[1.0]]  # gcl's point on w1, at its error
    assert ax.get_xlim()[1] > edge and any(t.get_text().strip() == "∞" for t in ax.texts)
    assert report.INFINITE_LABEL in [t.get_text() for t in ax.get_legend().get_texts()]
    ax = bars.axes[0]
    hatched = [p for p in ax.patches if p.get_hatch() == "//" and np.isfinite(p.get_height())]
    assert len(hatched) == 1 and hatched[0].get_height() == pytest.approx(edge)
    assert ax.get_ylim()[1] > edge and [t.get_text() for t in ax.texts] == ["∞"]
    assert report.INFINITE_LABEL in [t.get_text() for t in ax.get_legend().get_texts()]
    # no infinite speedup: no mark, no legend entry
    captured.clear()
    plain = s.assign(speedup_mean=10.0)
    report.plot_speedup_vs_error(plain, "sve.png", "turing")
    report.plot_per_workload_bars(plain, "err.png", "su.png", "turing")
    for fig, _, _ in captured:
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert report.INFINITE_LABEL not in labels and not fig.axes[0].texts
