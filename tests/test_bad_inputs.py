"""Issue 14's acceptance check as a table: several dozen bad inputs across every class.

Each case breaks a private copy of a small workload (or gives a hostile output path) and
runs one command in-process. Every case must be rejected cleanly: exit status 2, exactly
one stderr line ``gclsampler: error: ...`` that names the file (or key), no traceback,
no output left behind and no byte of the user's files changed.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

from gclsampler.cli import main


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _n(wl: Path) -> int:
    return sum(1 for s in (wl / "kernelslist.g").read_text().split() if s.startswith("kernel-"))


def _profile_lines(wl: Path) -> list[str]:
    return (wl / "profile.csv").read_text().splitlines()


def _write_profile_lines(wl: Path, lines: list[str]) -> None:
    (wl / "profile.csv").write_text("\n".join(lines) + "\n")


def _set_col(wl: Path, col: str, row: int, value: str) -> None:
    import csv

    rows = list(csv.reader(io.StringIO((wl / "profile.csv").read_text())))
    j = rows[0].index(col)
    rows[row + 1][j] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    (wl / "profile.csv").write_text(buf.getvalue())


def _header(wl: Path, name: str, key: str, value: str) -> None:
    p = wl / name
    p.write_text(re.sub(rf"^-{re.escape(key)} = .*$", f"-{key} = {value}", p.read_text(), count=1, flags=re.M))


def _emb(tmp: Path, arr) -> Path:
    p = tmp / "emb.npy"
    np.save(p, arr, allow_pickle=True)
    return p


def _plan_file(tmp: Path, doc) -> Path:
    p = tmp / "plan_in.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def _census_plan(wl: Path, tmp: Path) -> Path:
    """A plan that simulates every invocation, so an export reaches the last trace."""
    import csv

    n = _n(wl)
    rows = list(csv.DictReader(io.StringIO((wl / "profile.csv").read_text())))
    return _plan_file(tmp, {"format": "gclsampler-plan/1", "workload": wl.name, "method": "census", "n_invocations": n,
                            "samples": [{"invocation": i, "kernel_name": rows[i]["kernel_name"], "cluster": i, "weight": 1.0}
                                        for i in range(n)],
                            "clusters": [{"id": i, "size": 1} for i in range(n)]})


def _good_plan(wl: Path, tmp: Path) -> Path:
    p = tmp / "good_plan.json"
    assert main(["stem", str(wl / "profile.csv"), "--out", str(p)]) == 0
    return p


# case id -> setup(wl, tmp) returning (argv, needle in the error line, output path that must not appear)
CASES = {
    # class 1: data loss
    "synth-into-user-dir": lambda wl, t: ((t / "mine").mkdir(), (t / "mine" / "thesis.tex").write_text("years\n"),
                                          ["synth", "backprop", "--out", str(t / "mine"), "--jobs", "1", "--quiet"],
                                          "mine", None)[2:],
    "synth-no-jobs": lambda wl, t: (["synth", "backprop", "--out", str(t / "s"), "--jobs", "0", "--quiet"], "--jobs 0",
                                    t / "s"),
    # synth without its workload printed the list and exited 0 (`synth --out d && train.py` went on with no data)
    "synth-no-workload": lambda wl, t: (["synth", "--out", str(t / "s"), "--quiet"], "WORKLOAD is required", t / "s"),
    "synth-knob-twice": lambda wl, t: (["synth", "backprop", "--out", str(t / "s"), "layers=1", "layers=2"],
                                       "layers given twice", t / "s"),
    "synth-huge-seed": lambda wl, t: (["synth", "backprop", "--out", str(t / "s"), "--seed", str(2**70)],
                                      "must be an integer in [0, 2**32)", t / "s"),
    # a device was called "a file"; a positional output was called --out
    "synth-onto-device": lambda wl, t: (["synth", "backprop", "--out", "/dev/null", "--quiet"],
                                        "/dev/null: exists and is a character device", None),
    "group-onto-file": lambda wl, t: ((t / "f").write_text("x"), ["trace", "group", str(wl), str(t / "f")],
                                      "choose another out_dir)", None)[1:],
    "synth-onto-file": lambda wl, t: (["synth", "backprop", "--out", str(wl / "profile.csv"), "--quiet"], "profile.csv", None),
    "synth-under-file": lambda wl, t: (["synth", "backprop", "--out", str(wl / "profile.csv" / "x"), "--quiet"], "profile.csv", None),
    "export-into-source": lambda wl, t: (["trace", "export-accelsim", str(wl), str(wl)], str(wl), None),
    "export-inside-source": lambda wl, t: (["trace", "export-accelsim", str(wl), str(wl / "as")], "input", wl / "as"),
    "group-into-source": lambda wl, t: (["trace", "group", str(wl), str(wl)], "input", None),
    "plan-export-into-source": lambda wl, t: (["plan", "export-accelsim", str(_good_plan(wl, t)), str(wl), str(wl)], "input", None),
    "import-onto-input": lambda wl, t: (["profile", "import", str(wl / "profile.csv"), "--out", str(wl / "profile.csv")], "profile.csv", None),
    "import-a-directory": lambda wl, t: (["profile", "import", str(wl), "--out", str(wl / "x.csv")],
                                         f"{wl}: is a directory; give the exported file", wl / "x.csv"),
    "import-onto-user-file": lambda wl, t: (["profile", "import", str(wl / "profile.csv"), "--out", str(wl / "workload.json")], "workload.json", None),
    "stem-onto-user-json": lambda wl, t: (["stem", str(wl / "profile.csv"), "--out", str(wl / "workload.json")], "workload.json", None),
    "stem-onto-directory": lambda wl, t: (["stem", str(wl / "profile.csv"), "--out", str(wl)], str(wl), None),
    "sample-onto-profile": lambda wl, t: (["sample", "pka", str(wl), "--out", str(wl / "profile.csv")], "profile.csv", None),
    # class 2: inconsistent inputs
    "profile-row-missing": lambda wl, t: (_write_profile_lines(wl, _profile_lines(wl)[:-1]),
                                          ["sample", "pka", str(wl), "--out", str(t / "p.json")], "profile.csv", t / "p.json")[1:],
    "kernel-name-differs": lambda wl, t: (_set_col(wl, "kernel_name", 2, "other"),
                                          ["stem", str(wl / "profile.csv"), "--out", str(t / "p.json")], "profile.csv:4: kernel_name", t / "p.json")[1:],
    "grid-differs": lambda wl, t: (_set_col(wl, "grid", 1, "(7,7,7)"), ["validate", str(wl)], "profile.csv:3: grid", None)[1:],
    "duplicate-kernel-id": lambda wl, t: (_header(wl, "kernel-4.traceg", "kernel id", "3"),
                                          ["sample", "sieve", str(wl), "--out", str(t / "p.json")], "-kernel id", t / "p.json")[1:],
    "export-duplicate-ids": lambda wl, t: (_header(wl, "kernel-6.traceg", "kernel id", "5"),
                                           ["trace", "export-accelsim", str(wl), str(t / "as")], "-kernel id", t / "as")[1:],
    "duplicate-list-entry": lambda wl, t: ((wl / "kernelslist.g").write_text((wl / "kernelslist.g").read_text() + "kernel-2.traceg\n"),
                                           ["validate", str(wl)], "listed again", None)[1:],
    "listed-file-missing": lambda wl, t: ((wl / "kernel-5.traceg").unlink(),
                                          ["stem", str(wl / "profile.csv"), "--out", str(t / "p.json")], "kernel-5.traceg", t / "p.json")[1:],
    "kernelslist-bad-line": lambda wl, t: ((wl / "kernelslist.g").write_text("kernel-1.traceg\nrubbish\n"),
                                           ["trace", "info", str(wl)], "kernelslist.g:2: kernelslist", None)[1:],
    "no-traces-at-all": lambda wl, t: ([p.unlink() for p in wl.glob("kernel*")], ["trace", "info", str(wl)], str(wl), None)[1:],
    "kernelslist-not-utf8": lambda wl, t: ((wl / "kernelslist.g").write_bytes(b"kernel-1.traceg\n\xff\n"),
                                           ["validate", str(wl)], "kernelslist.g:2: not UTF-8", None)[1:],
    "bad-sampler-param-value": lambda wl, t: (["sample", "stem_root", str(wl), "--out", str(t / "p.json"), "--set", "epsilon=-1"], "epsilon", t / "p.json"),
    "bad-sampler-param-type": lambda wl, t: (["sample", "pka", str(wl), "--out", str(t / "p.json"), "--set", "k_max=abc"], "k_max", t / "p.json"),
    "unknown-sampler-param": lambda wl, t: (["sample", "photon", str(wl), "--out", str(t / "p.json"), "--set", "thresh=1"], "thresh", t / "p.json"),
    # class 3: silently wrong answers
    "all-zero-times": lambda wl, t: ([_set_col(wl, "time_ns", i, "0") for i in range(_n(wl))],
                                     ["stem", str(wl / "profile.csv"), "--out", str(t / "p.json")], "time_ns: every value is 0", t / "p.json")[1:],
    "hit-rate-percent": lambda wl, t: (_set_col(wl, "l2_hit_rate", 0, "85"),
                                       ["sample", "pka", str(wl), "--out", str(t / "p.json")], "profile.csv:2: l2_hit_rate", t / "p.json")[1:],
    "fractional-registers": lambda wl, t: (_set_col(wl, "nregs", 4, "31.5"),
                                           ["stem", str(wl / "profile.csv"), "--out", str(t / "p.json")], "profile.csv:6: nregs", t / "p.json")[1:],
    "graph-build-duplicate-ids": lambda wl, t: (_header(wl, "kernel-6.traceg", "kernel id", "5"),
                                                ["graph", "build", str(wl), "--cache-dir", str(t / "cache"), "--workers", "1"],
                                                "-kernel id", t / "cache")[1:],
    "plan-fractional-invocation": lambda wl, t: (["plan", "show", str(_plan_file(t, {
        "format": "gclsampler-plan/1", "workload": "w", "method": "m", "n_invocations": 2,
        "samples": [{"invocation": 0.5, "kernel_name": "k", "cluster": 0, "weight": 2.0}],
        "clusters": [{"id": 0, "size": 2}]}))], "samples[0].invocation", None),
    # failures after writing has started: the partly written --out must go again (replace_dir)
    "export-late-truncated-trace": lambda wl, t: (
        (wl / f"kernel-{_n(wl)}.traceg").write_bytes((wl / f"kernel-{_n(wl)}.traceg").read_bytes()[:-40]),
        ["trace", "export-accelsim", str(wl), str(t / "as")], f"kernel-{_n(wl)}.traceg", t / "as")[1:],
    "plan-export-late-truncated-trace": lambda wl, t: (
        (wl / f"kernel-{_n(wl)}.traceg").write_bytes((wl / f"kernel-{_n(wl)}.traceg").read_bytes()[:-40]),
        ["plan", "export-accelsim", str(_census_plan(wl, t)), str(wl), str(t / "as")], f"kernel-{_n(wl)}.traceg",
        t / "as")[1:],
    "backwards-range": lambda wl, t: (["trace", "export-accelsim", str(wl), str(t / "as"), "--invocations", "5-2"], "5-2", t / "as"),
    "non-utf8-kernel-name": lambda wl, t: ((wl / "kernel-2.traceg").write_bytes(
        (wl / "kernel-2.traceg").read_bytes().replace(b"-kernel name = ", b"-kernel name = \xfe", 1)),
        ["validate", str(wl)], "kernel-2.traceg:1: -kernel name", None)[1:],
    "embeddings-nan-row": lambda wl, t: (["sample", "gcl", str(wl), "--out", str(t / "p.json"), "--embeddings",
                                          str(_emb(t, np.where(np.arange(_n(wl))[:, None] == 3, np.nan, 1.0) * np.ones((1, 4))))],
                                         "emb.npy: row 3", t / "p.json"),
    "embeddings-wrong-rows": lambda wl, t: (["sample", "gcl", str(wl), "--out", str(t / "p.json"), "--embeddings",
                                             str(_emb(t, np.ones((_n(wl) - 1, 4))))], "emb.npy: rows", t / "p.json"),
    # class 4: tracebacks before
    "corrupt-gz-trace": lambda wl, t: ((wl / "kernel-2.traceg.gz").write_bytes(
        gzip.compress((wl / "kernel-2.traceg").read_bytes())[:60] + b"\x00" * 40),
        (wl / "kernel-2.traceg").unlink(),
        (wl / "kernelslist.g").write_text((wl / "kernelslist.g").read_text().replace("kernel-2.traceg\n", "kernel-2.traceg.gz\n")),
        ["trace", "info", str(wl)], "kernel-2.traceg.gz", None)[3:],
    "truncated-trace": lambda wl, t: ((wl / "kernel-3.traceg").write_bytes((wl / "kernel-3.traceg").read_bytes()[:-40]),
                                      ["trace", "info", str(wl)], "kernel-3.traceg", None)[1:],
    "plan-is-a-list": lambda wl, t: (["plan", "show", str(_plan_file(t, "[1, 2]"))], "plan_in.json", None),
    "plan-not-utf8": lambda wl, t: ((t / "plan_in.json").write_bytes(b'{"format": "\xff"}'),
                                    ["plan", "show", str(t / "plan_in.json")], "plan_in.json:1: not UTF-8", None)[1:],
    "plan-missing": lambda wl, t: (["plan", "show", str(t / "nope.json")], "nope.json", None),
    "embeddings-missing": lambda wl, t: (["sample", "gcl", str(wl), "--out", str(t / "p.json"), "--embeddings", str(t / "no.npy")], "no.npy", t / "p.json"),
    "embeddings-text": lambda wl, t: ((t / "e.txt").write_text("1 2\n3 4\n"),
                                      ["sample", "gcl", str(wl), "--out", str(t / "p.json"), "--embeddings", str(t / "e.txt")], "e.txt", t / "p.json")[1:],
    "embeddings-pickle": lambda wl, t: ((t / "e.pkl").write_bytes(pickle.dumps([1, 2])),
                                        ["sample", "gcl", str(wl), "--out", str(t / "p.json"), "--embeddings", str(t / "e.pkl")], "e.pkl", t / "p.json")[1:],
    "set-not-yaml": lambda wl, t: (["sample", "photon", str(wl), "--out", str(t / "p.json"), "--set", "threshold=[1"], "threshold", t / "p.json"),
    "set-abc": lambda wl, t: (["sample", "photon", str(wl), "--out", str(t / "p.json"), "--set", "threshold=abc"], "threshold", t / "p.json"),
    "profile-header-only": lambda wl, t: (_write_profile_lines(wl, _profile_lines(wl)[:1]),
                                          ["profile", "info", str(wl / "profile.csv")], "profile.csv:2", None)[1:],
    "profile-not-utf8": lambda wl, t: ((wl / "profile.csv").write_bytes((wl / "profile.csv").read_bytes().replace(b"\n1,", b"\n1\xff,", 1)),
                                       ["profile", "info", str(wl / "profile.csv")], "profile.csv:3", None)[1:],
    "workload-json-broken": lambda wl, t: ((wl / "workload.json").write_text("{oops"),
                                           ["sample", "pka", str(wl), "--out", str(t / "p.json")], "workload.json:1", t / "p.json")[1:],
    "import-garbage": lambda wl, t: ((t / "x.csv").write_bytes(b"\x00\x01garbage"),
                                     ["profile", "import", str(t / "x.csv"), "--out", str(t / "o.csv")], "x.csv", t / "o.csv")[1:],
    "reconstruct-missing-results": lambda wl, t: (["plan", "reconstruct", str(_good_plan(wl, t)), str(t / "none.log")], "none.log", None),
    "out-under-a-file": lambda wl, t: (["stem", str(wl / "profile.csv"), "--out", str(wl / "profile.csv" / "p.json")], "profile.csv", None),
    "graph-cache-under-a-file": lambda wl, t: (["graph", "build", str(wl), "--cache-dir", str(wl / "profile.csv" / "c"), "--workers", "1"],
                                               "profile.csv", None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_rejected_cleanly(case, wl_copy, tmp_path, capsys):
    t = tmp_path / "t"
    t.mkdir()
    argv, needle, out = CASES[case](wl_copy, t)
    capsys.readouterr()
    before = _snapshot(wl_copy)
    user_files = _snapshot(t)
    rc = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("gclsampler: warning: ")]
    assert rc == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("gclsampler: error: "), err
    assert needle in lines[0], lines[0]
    assert _snapshot(wl_copy) == before, "a user file was changed"
    assert _snapshot(t) == user_files, "something was written next to the user's files"
    if out is not None:
        assert not Path(out).exists()
    assert not [p for p in wl_copy.parent.rglob(".*tmp-*")]


def test_valid_but_unusual_inputs_still_work(wl_copy, tmp_path, capsys):
    """CRLF and BOM in kernelslist.g and profile.csv, compressed traces, a large id range."""
    kl = wl_copy / "kernelslist.g"
    names = kl.read_text().split()
    for n in names[:3]:
        (wl_copy / (n + ".gz")).write_bytes(gzip.compress((wl_copy / n).read_bytes()))
        (wl_copy / n).unlink()
    kl.write_bytes(b"\xef\xbb\xbf" + "\r\n".join([n + ".gz" if i < 3 else n for i, n in enumerate(names)]).encode() + b"\r\n")
    prof = wl_copy / "profile.csv"
    prof.write_bytes(b"\xef\xbb\xbf" + prof.read_bytes().replace(b"\n", b"\r\n"))
    assert main(["validate", str(wl_copy)]) == 0
    assert main(["sample", "pka", str(wl_copy), "--out", str(tmp_path / "p.json")]) == 0
    assert main(["trace", "export-accelsim", str(wl_copy), str(tmp_path / "as"), "--invocations", "0-2"]) == 0
