"""A workload directory and what samplers are fitted on.

Layout (DESIGN.md; written by a GPU host's tracer or by ``gclsampler.synth``)::

    <dir>/kernelslist.g            trace file names in launch order (+ Memcpy lines)
    <dir>/kernel-<id>.traceg[.zst] one trace per invocation (Accel-Sim layout + value extension)
    <dir>/profile.csv              one row per invocation, on the arch the traces came from
    <dir>/profiles/<arch>.csv      optional ground truth on other archs (cross-arch evaluation)
    <dir>/workload.json            metadata: {"workload", "arch", "synthetic", "seed", ...}

``synthetic`` is true for everything ``gclsampler.synth`` writes; reports copy it.
A workload.json that says ``"synthetic": false`` marks REAL data: traced and measured on the
GPU it names (``"gpu"``); reports label it so, and the evaluation never synthesizes over it
(``docs/real.md``). A directory whose workload.json says neither is left unlabelled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported lazily by the profile stage
    import pandas as pd


@dataclass
class Workload:
    """Everything a sampler may look at. Traces stay on disk and are read on demand.

    ``profile`` is the table of ``gclsampler.profile.read_profile`` (row i = invocation i).
    ``embeddings`` (N, d) float32 is present only after training; ``paper_embeddings`` holds
    those of the paper's encoder (``model=paper``) for ``gcl_paper`` when both were trained.
    """

    name: str
    profile: "pd.DataFrame"
    root: Path | None = None
    arch: str | None = None
    synthetic: bool = False
    embeddings: np.ndarray | None = None
    paper_embeddings: np.ndarray | None = None
    meta: dict = field(default_factory=dict)
    cache_dir: Path | None = None
    """Where what is derived from the traces is cached (photon's BBVs); None: the workload's own
    ``.graph-cache``. Set elsewhere for a directory that must stay as it is (a REAL workload)."""

    @property
    def n_invocations(self) -> int:
        return int(len(self.profile))

    @property
    def data_kind(self) -> str:
        """``"synthetic"``, ``"real"`` (workload.json says ``"synthetic": false``) or ``""``.

        Why three: a directory without that key (a user's traces, a hand-made profile) is
        neither known to be synthetic nor known to be a hardware measurement, and a report
        must not call it either.
        """
        return "synthetic" if self.synthetic else data_kind_of(self.meta)

    @property
    def gpu(self) -> str:
        """The GPU a real workload was measured on, as workload.json names it (``"gpu"``, or
        ``"provenance": {"gpu": ...}``; a ``{"name": ...}`` object is read too); "" if unnamed."""
        for src in (self.meta, self.meta.get("provenance")):
            if isinstance(src, dict):
                g = src.get("gpu")
                if isinstance(g, dict):
                    g = g.get("name")
                if g:
                    return str(g)
        return ""

    @property
    def label(self) -> str:
        """What a printed summary says the data is: ``"SYNTHETIC"``, ``"REAL, <gpu>"`` or ``""``."""
        if self.synthetic:
            return "SYNTHETIC"
        if self.data_kind != "real":
            return ""
        where = self.gpu or self.arch
        return f"REAL, {where}" if where else "REAL"

    def ground_truth(self, arch: str | None = None) -> "pd.DataFrame":
        """Profile of ``arch`` (default: the workload's own) for evaluation."""
        if arch is None or arch == self.arch:
            return self.profile
        from gclsampler.profile import read_profile

        if self.root is None:
            raise FileNotFoundError(f"workload {self.name!r} has no directory to find arch {arch!r} in")
        return read_profile(self.root / "profiles" / f"{arch}.csv")

    @classmethod
    def load(cls, root: str | Path, embeddings: np.ndarray | None = None,
             profile: "pd.DataFrame | None" = None) -> "Workload":
        """``profile``: root/profile.csv as ``read_profile`` already gave it (the validator's
        copy, ``require_valid_workload``), so a million-row file is parsed once."""
        from gclsampler.profile import read_profile

        root = Path(root)
        meta = declared_meta(root)
        if profile is None:
            profile = read_profile(root / "profile.csv")
        return cls(
            name=declared_name(root),
            profile=profile,
            root=root,
            arch=meta.get("arch"),
            synthetic=bool(meta.get("synthetic", False)),
            embeddings=embeddings,
            meta=meta,
        )


def data_kind_of(meta: dict) -> str:
    """The data kind a workload.json declares (``Workload.data_kind``'s rule, in one place).

    ``"synthetic": false`` makes data real, ``true`` synthetic; no key (or null) says neither.
    ``read_meta`` refuses any other value (``meta_type_problem``).
    """
    if meta.get("synthetic"):
        return "synthetic"
    return "real" if meta.get("synthetic") is False else ""


def declared_data_kind(root: str | Path) -> str:
    """``data_kind_of`` a directory's workload.json, without loading its profile.

    Why: the evaluation must know a workload is real before it would synthesize into its
    directory, which may not hold a loadable workload yet. No workload.json: ``""``.
    """
    return data_kind_of(declared_meta(root))


def declared_name(root: str | Path) -> str:
    """The workload's name: workload.json's ``workload``, else the directory's name."""
    return str(declared_meta(root).get("workload", Path(root).name))


def declared_arch(root: str | Path) -> str | None:
    """The arch a directory's workload.json says its profile.csv was made on (``arch``), or None."""
    arch = declared_meta(root).get("arch")
    return str(arch) if arch else None


def declared_meta(root: str | Path) -> dict:
    """A directory's workload.json through ``read_meta``, ``{}`` when it has none: the one way
    every stage and command reads a workload's name, label and arch."""
    meta_path = Path(root) / "workload.json"
    return read_meta(meta_path) if meta_path.is_file() else {}


def data_digest(root: str | Path) -> str:
    """A hash of the files that say which data a workload directory holds: workload.json (what
    was synthesized or measured: workload, knobs, seed, arch) and profile.csv (its ground truth,
    which every synthesis seed draws anew).

    Why: ``run.json`` records it, so that ``evaluate.py embeddings=cached`` can tell a trained
    run of this very data from one of the data a directory held before it was synthesized again
    (another ``seed`` into the same ``out_dir``), whose embeddings have as many rows and the
    same kernel names. The traces are not read: their content follows from these two files in
    a synthesized workload, and hashing them would cost what building the graphs does.
    """
    import hashlib

    h = hashlib.sha256()
    for name in ("workload.json", "profile.csv"):
        f = Path(root) / name
        h.update(name.encode() + b"\0")
        if f.is_file():
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()[:32]


def read_meta(path: Path) -> dict:
    """``workload.json`` as a dict; anything else is a located ``GclError``, not a traceback."""
    from gclsampler._safe_out import special_input_problem
    from gclsampler.errors import GclError, located

    problem = special_input_problem(path)
    if problem:
        raise GclError(located(path, None, None, problem))
    try:
        meta = json.loads(path.read_text(encoding="utf-8-sig"))  # a BOM, as profile.csv may have one
    except UnicodeDecodeError:
        raise GclError(located(path, None, None, "not UTF-8 text")) from None
    except json.JSONDecodeError as exc:
        raise GclError(located(path, exc.lineno, None, f"not JSON: {exc.msg}")) from None
    if not isinstance(meta, dict):
        raise GclError(located(path, 1, None, f"expected a JSON object, found {type(meta).__name__}"))
    problem = meta_type_problem(meta)
    if problem:
        raise GclError(located(path, None, *problem))
    return meta


def meta_type_problem(meta: dict) -> tuple[str, str] | None:
    """(key, why) for a workload.json key of the wrong type, else None.

    Why: ``"synthetic": "no"`` is a true string, so the workload was labelled SYNTHETIC; the
    label decides what every report calls the numbers, so it must be a real boolean.
    """
    v = meta.get("synthetic")
    if v is not None and not isinstance(v, bool):  # null: unlabelled, as when the key is absent
        return "synthetic", f"expected true or false, found {v!r:.40}"
    v = meta.get("n_invocations")
    if "n_invocations" in meta and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
        return "n_invocations", f"expected a count, found {v!r:.40}"
    from gclsampler._safe_out import is_plain_name

    # names: the workload's labels every plan and report row, an arch names profiles/<arch>.csv;
    # str() of a number or a list made a name nobody wrote ("['turing']")
    if "workload" in meta and not is_plain_name(meta["workload"]):
        return "workload", f"expected a name, found {meta['workload']!r:.40}"
    if meta.get("arch") is not None and not is_plain_name(meta["arch"]):  # null: no arch, as when absent
        return "arch", f"expected a name (a file stem of profiles/), found {meta['arch']!r:.40}"
    v = meta.get("archs")
    if "archs" in meta and not (isinstance(v, list) and all(is_plain_name(a) for a in v)):
        return "archs", f"expected a list of arch names, found {v!r:.40}"
    return None
