"""Head-to-head counts and the chance yardstick beside them (score.chance_lower, score.head_to_head_counts)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from gclsampler.score import TIE, chance_at_least, chance_lower, head_to_head_counts, pareto_counts

spreads = st.floats(1e-3, 1e3, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(spreads, spreads)
def test_chance_partitions_and_is_antisymmetric(a, b):
    lo, eq, hi = chance_lower(a, b)
    rlo, req, rhi = chance_lower(b, a)
    assert lo + eq + hi == pytest.approx(1.0)
    assert eq == 0.0 and lo == pytest.approx(rhi) and hi == pytest.approx(rlo)
    assert (lo > 0.5) == (a < b) or a == pytest.approx(b)


@pytest.mark.parametrize("a,b", [(1.0, 1.0), (1.0, 3.0), (2.5, 0.4), (0.01, 0.3)])
def test_chance_matches_drawn_normals(a, b):
    rng = np.random.default_rng(0)
    x = np.abs(rng.normal(0, a, 400_000))
    y = np.abs(rng.normal(0, b, 400_000))
    assert float(chance_lower(a, b)[0]) == pytest.approx(float(np.mean(x < y)), abs=0.005)


def test_chance_edge_cases():
    lo, eq, hi = chance_lower([0.0, 0.0, 2.0, np.nan, 1.0], [0.0, 1.0, 0.0, 1.0, np.nan])
    assert lo[:3].tolist() == [0.0, 1.0, 0.0]   # both exact: equal; only the reference exact: lower
    assert eq[:3].tolist() == [1.0, 0.0, 0.0]
    assert hi[:3].tolist() == [0.0, 0.0, 1.0]
    assert np.isnan([lo[3], lo[4], eq[3], hi[4]]).all()   # an unknown spread has no chance count


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0, 1), max_size=9), st.integers(-1, 11))
def test_chance_at_least_is_the_tail_over_every_outcome(p, k):
    """Against brute force: the sum over all 2^n lower/not-lower outcomes with at least k lower."""
    import itertools

    want = 0.0
    for outcome in itertools.product((0, 1), repeat=len(p)):
        if sum(outcome) >= k:
            want += float(np.prod([q if o else 1 - q for q, o in zip(p, outcome)]))
    got = chance_at_least(p, k)
    assert got == pytest.approx(want, abs=1e-12)
    assert chance_at_least(p, k + 1) <= got + 1e-12  # fewer ways to reach a higher count


def test_chance_at_least_edge_cases():
    assert chance_at_least([0.5] * 8, 8) == pytest.approx(1 / 256)  # a clean sweep of eight coin flips
    assert chance_at_least([0.5] * 7 + [0.0], 8) == 0.0  # one workload it cannot win: never
    assert chance_at_least([], 0) == 1.0 and chance_at_least([], 1) == 0.0
    assert np.isnan(chance_at_least([0.5, np.nan], 1))


def test_head_to_head_gives_the_chance_of_a_target_count():
    rows = []
    for i in range(10):  # a coin flip on each: equal spreads, different errors
        rows += [(f"w{i}", "gcl", 1.0, 1.0, 1), (f"w{i}", "pka", 2.0, 1.0, 1)]
    rows += [("w10", "gcl", 1.0, 1.0, 1), ("w10", "pka", 1.0, 1.0, 1)]  # the same plan: a tie, never lower
    c = head_to_head_counts(_summary(rows), "gcl", "turing", at_least=8).iloc[0]
    assert c["chance_at_least"] == pytest.approx((45 + 10 + 1) / 1024)  # 8, 9 or 10 of the 10 flips
    assert "chance_at_least" not in head_to_head_counts(_summary(rows), "gcl", "turing").columns


def _summary(rows):
    """summarize()-shaped rows: (workload, method, error, spread, n_seeds) on turing."""
    return pd.DataFrame([{"workload": w, "method": m, "arch": "turing", "cross_arch": False, "error_cycles": e,
                          "spread_sd": sd, "n_seeds": n} for w, m, e, sd, n in rows])


def test_counts_and_chance_counts():
    s = _summary([
        ("w1", "gcl", 0.0, 0.0, 1), ("w1", "pka", 0.0, 0.0, 1),       # census for both: equal, chance equal
        ("w2", "gcl", 1.0, 1.0, 1), ("w2", "pka", 3.0, 1.0, 1),       # lower, chance 1/2
        ("w3", "gcl", 2.0, 2.0, 1), ("w3", "pka", 2.0, 2.0, 1),       # same plan: equal in both counts
        ("w4", "gcl", 4.0, 3.0, 1), ("w4", "pka", 0.0, 0.0, 1),       # rival's census: higher, chance higher
        ("w1", "random", 5.0, 1.0, 10), ("w2", "random", 5.0, 1.0, 10),
        ("w3", "random", 5.0, 1.0, 10), ("w4", "random", 5.0, 1.0, 10),
    ])
    c = head_to_head_counts(s, "gcl", "turing").set_index("method")
    pka = c.loc["pka"]
    assert (pka["lower"], pka["tie"], pka["higher"], pka["n_workloads"]) == (1, 2, 1, 4)
    assert pka["max_lower"] == 2  # pka is exact on w1 and w4: gcl cannot be lower there
    assert (pka["expected_lower"], pka["expected_tie"], pka["expected_higher"]) == pytest.approx((0.5, 2.0, 1.5))
    # a method averaged over seeds is not one draw: no chance count, observed counts still given
    rnd = c.loc["random"]
    assert (rnd["lower"], rnd["higher"]) == (4, 0) and np.isnan(rnd["expected_lower"])
    # no spread column (an older results.csv): observed counts only
    c2 = head_to_head_counts(s.drop(columns="spread_sd"), "gcl", "turing", ["gcl", "pka"])
    assert c2["lower"].tolist() == [1] and c2["expected_lower"].isna().all()


def test_chance_counts_are_over_the_workloads_the_counts_are_over():
    """A workload without cycle error for either method (the REAL LLM, scored on time) still has
    spreads: its chances were summed beside counts that leave it out, "2 / 0 / 1 (over 3 of 4
    workloads) (chance 3.3 / 0.0 / 0.7)"."""
    s = _summary([("w1", "gcl", 1.0, 1.0, 1), ("w1", "pka", 3.0, 1.0, 1),
                  ("w2", "gcl", 2.0, 1.0, 1), ("w2", "pka", 1.0, 1.0, 1),
                  ("llm", "gcl", np.nan, 1.0, 1), ("llm", "pka", np.nan, 9.0, 1)])
    pka = head_to_head_counts(s, "gcl", "turing").set_index("method").loc["pka"]
    assert (pka["n_workloads"], pka["of_workloads"]) == (2, 3)
    assert pka["expected_lower"] + pka["expected_tie"] + pka["expected_higher"] == pytest.approx(2)
    assert pka["expected_lower"] == pytest.approx(1.0)  # equal spreads on the two counted workloads


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 20), st.floats(0, 20), st.floats(0, 5), st.floats(0, 5)),
                min_size=1, max_size=8))
def test_chance_counts_sum_to_the_workloads(cells):
    rows = []
    for i, (ea, eb, sa, sb) in enumerate(cells):
        rows += [(f"w{i}", "gcl", ea, sa, 1), (f"w{i}", "sieve", eb, sb, 1)]
    c = head_to_head_counts(_summary(rows), "gcl", "turing").iloc[0]
    r = head_to_head_counts(_summary(rows), "sieve", "turing").iloc[0]
    assert c["lower"] + c["tie"] + c["higher"] == len(cells)
    assert c["expected_lower"] + c["expected_tie"] + c["expected_higher"] == pytest.approx(len(cells))
    assert c["expected_lower"] == pytest.approx(r["expected_higher"]) and c["expected_tie"] == pytest.approx(r["expected_tie"])
    # every workload counted equal is equal in the chance count too
    assert c["expected_tie"] >= c["tie"] - 1e-9
    # nobody is lower than an exact rival, and only an exact rival caps the count
    assert c["lower"] <= c["max_lower"] == sum(eb > TIE for _, eb, _, _ in cells)


def test_report_shows_gcl_head_to_head(tmp_path):
    from gclsampler.report import write_report
    from gclsampler.score import RESULT_COLUMNS

    rows = []
    for w, (eg, ep, sg, sp) in {"a": (1.0, 2.0, 1.0, 1.0), "b": (3.0, 1.0, 1.0, 3.0), "c": (0.0, 0.0, 0.0, 0.0)}.items():
        for m, e, sd in (("gcl", eg, sg), ("pka", ep, sp)):
            r = dict.fromkeys(RESULT_COLUMNS, np.nan)
            r.update(workload=w, method=m, arch="turing", plan_arch="turing", cross_arch=False, seed=0, sweep=False,
                     stochastic=False, n_invocations=10, n_simulated=2, n_clusters=2, error_cycles=e,
                     error_cycles_any_member=e, spread_sd=sd, speedup=5.0, synthetic=True)
            rows.append(r)
    text = write_report(pd.DataFrame(rows, columns=RESULT_COLUMNS), tmp_path / "r", plots=False).read_text()
    section = text.split("## `gcl` head to head, turing", 1)[1].split("\n## ", 1)[0]
    chance_b = 2 / np.pi * np.arctan(3.0)
    # pka is exact on c, so gcl can be lower on 2 of the 3 at most
    # same speedup everywhere: lower error on a is a Pareto win, higher on b a loss, c equal
    assert (f"| pka | 1 / 1 / 1 (chance {0.5 + chance_b:.1f} / 1.0 / {1.5 - chance_b:.1f}); at most 2 possible; "
            "Pareto 1 / 1 |") in section
    # without gcl in the run there is nothing to hold the others against
    only_pka = pd.DataFrame([r for r in rows if r["method"] == "pka"], columns=RESULT_COLUMNS)
    assert "head to head" not in write_report(only_pka, tmp_path / "r2", plots=False).read_text()


def test_pareto_counts_separate_wins_from_trade_offs():
    err_a = [1.0, 1.0, 2.0, 0.0, 1.0, 1.0, np.nan]
    su_a = [10.0, 10.0, 10.0, 1.0, 10.0, 20.0, 5.0]
    err_b = [2.0, 1.0, 1.0, 0.0, 0.5, 2.0, 1.0]
    su_b = [10.0, 5.0, 20.0, 1.0, 2.0, 10.0, 5.0]
    # w0 lower error, same speedup: a; w1 same error, faster: a; w2 b on both; w3 the same plan;
    # w4 b lower only by simulating 5x as much: a trade-off; w5 a on both; w6 unknown: neither
    assert pareto_counts(err_a, su_a, err_b, su_b) == (3.0, 1.0)
    assert pareto_counts(err_b, su_b, err_a, su_a) == (1.0, 3.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 20), st.floats(1, 500), st.floats(0, 20), st.floats(1, 500)), max_size=10))
def test_pareto_counts_are_antisymmetric_and_exclusive(cells):
    ea, sa, eb, sb = (np.array([c[i] for c in cells], dtype=np.float64) for i in range(4))
    dom, domd = pareto_counts(ea, sa, eb, sb)
    assert (dom, domd) == pareto_counts(eb, sb, ea, sa)[::-1]
    assert dom + domd <= len(cells)
    # dominating needs no worse error: never more than the workloads where a is not higher
    assert dom <= int(np.sum(ea - eb <= TIE)) and domd <= int(np.sum(eb - ea <= TIE))
    assert pareto_counts(ea, sa, ea, sa) == (0.0, 0.0)


def test_counts_without_speedup_have_no_pareto_column():
    s = _summary([("w1", "gcl", 1.0, 1.0, 1), ("w1", "pka", 2.0, 1.0, 1)])
    c = head_to_head_counts(s, "gcl", "turing").iloc[0]
    assert np.isnan(c["dominates"]) and np.isnan(c["dominated"])
    c = head_to_head_counts(s.assign(speedup_mean=[4.0, 2.0]), "gcl", "turing").iloc[0]
    assert (c["dominates"], c["dominated"]) == (1.0, 0.0)


def test_a_head_to_head_cell_over_fewer_workloads_says_over_how_many(tmp_path):
    """A rival not run on some workloads was counted over the others only: "1 / 0 / 1" over 2 of
    3 workloads read as a count over all 3 (the AVG rows say "(k of n workloads)"). The cell says
    "(over k of n workloads)" for every k < n, and nothing when k = n."""
    from gclsampler import report
    from gclsampler.report import write_report
    from test_compare import _rows

    df = _rows({("w1", "gcl"): 1.0, ("w2", "gcl"): 3.0, ("w3", "gcl"): 9.0, ("w1", "pka"): 2.0, ("w2", "pka"): 1.0,
                ("w1", "sieve"): 2.0, ("w2", "sieve"): 2.0, ("w3", "sieve"): 2.0})
    text = write_report(df, tmp_path / "r", plots=False, unavailable=[("w3", "pka", "no launch trace")]).read_text()
    section = text.split("## `gcl` head to head, turing", 1)[1].split("\n## ", 1)[0]
    assert "| pka | 1 / 0 / 1 (over 2 of 3 workloads); Pareto 1 / 1 |" in section
    hmean = next(ln for ln in text.splitlines() if ln.startswith("| **speedup h-mean**"))
    assert hmean.count("(2 of 3 workloads)") == 1  # pka's, as its AVG cell says; it said nothing
    assert "| sieve | 1 / 0 / 2; Pareto 1 / 2 |" in section  # all 3: no note
    assert report.H2H_OVER_TEXT in section
    from gclsampler.score import summarize

    c = head_to_head_counts(summarize(df[(df["workload"] != "w3") | (df["method"] != "pka")]), "gcl",
                            "turing").set_index("method")
    assert (c.loc["pka", "n_workloads"], c.loc["pka", "of_workloads"]) == (2, 3)
    full = write_report(df[df["method"] != "pka"], tmp_path / "r2", plots=False).read_text()
    assert "workloads)" not in full.split("head to head", 1)[1].split("\n## ", 1)[0] and report.H2H_OVER_TEXT not in full


def test_compare_head_to_head_cell_says_over_how_many_workloads(tmp_path):
    """compare.md's head-to-head cells, per run and summed, say it as report.md's do: a workload
    without cycle counts (a wall-time profile) has no error for any method, so every count is over
    the others."""
    from gclsampler.compare import load_run, write_comparison
    from gclsampler import report
    from test_compare import _rows, _write

    errs = {("w1", "gcl"): 1.0, ("w2", "gcl"): 3.0, ("w3", "gcl"): 1.0,
            ("w1", "pka"): 2.0, ("w2", "pka"): 1.0, ("w3", "pka"): 2.0}
    runs = []
    for seed in (0, 1):
        df = _rows(errs, seed=seed)
        df.loc[df["workload"] == "w3", "error_cycles"] = np.nan
        runs.append(load_run(_write(tmp_path, f"s{seed}", df)))
    text = write_comparison(runs, tmp_path / "o", plots=False).read_text()
    section = text.split("head to head", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| s") or ln.startswith("| **all")]
    assert [ln.split(" | ")[1].split(";")[0].rstrip(" |") for ln in rows] == [
        "1 / 0 / 1 (over 2 of 3 workloads)", "1 / 0 / 1 (over 2 of 3 workloads)", "2 / 0 / 2 (over 4 of 6 workloads)"]
    assert report.H2H_OVER_TEXT in section
    import pandas as pd

    h2h = pd.read_csv(tmp_path / "o" / "compare_head_to_head.csv")
    assert h2h[["n_workloads", "of_workloads"]].values.tolist() == [[2, 3], [2, 3]]
