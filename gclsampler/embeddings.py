"""Reading ``embeddings.npy`` (row i = invocation i) with one located error per problem.

Why a reader of its own: ``np.load`` on a user-given path fails with tracebacks for a
missing file, a text file or a pickle (and loading a pickle would run its code), and a
NaN row only surfaces later inside k-means as "row 0" with no file named. Every
consumer (``gclsampler sample gcl``, evaluation with cached embeddings) reads through
``load_embeddings`` so the file, row and reason are in the message.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gclsampler.errors import GclError, located


class EmbeddingsError(GclError):
    """An embeddings file that is not an (N, d) finite numeric ``.npy`` array."""


def check_embeddings(emb: np.ndarray, where: str | os.PathLike, n_invocations: int | None = None,
                     profile: str | os.PathLike | None = None) -> np.ndarray:
    """Validate an in-memory embedding matrix; returns it as float32 (a copy only when needed)."""
    where = str(where)
    if emb.dtype.kind not in "fiu" or emb.dtype.kind == "b":
        raise EmbeddingsError(located(where, None, "dtype", f"{emb.dtype} is not a numeric array"))
    if emb.ndim != 2:
        raise EmbeddingsError(located(where, None, "shape", f"{emb.shape}: expected (invocations, dims)"))
    if emb.shape[1] == 0:
        raise EmbeddingsError(located(where, None, "shape", f"{emb.shape}: no dimensions"))
    if n_invocations is not None and emb.shape[0] != n_invocations:
        other = f"{profile} has" if profile else "the workload has"
        raise EmbeddingsError(located(where, None, "rows",
                                      f"{emb.shape[0]} rows but {other} {n_invocations} invocations "
                                      "(row i must be invocation i)"))
    if emb.dtype.kind == "f":
        bad = ~np.isfinite(emb).all(axis=1)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            c = int(np.flatnonzero(~np.isfinite(emb[r]))[0])
            raise EmbeddingsError(located(where, None, f"row {r}",
                                          f"not finite ({emb[r, c].item()!r} in column {c}; "
                                          f"{int(bad.sum())} bad row(s) in all)"))
    if emb.dtype.kind == "f" and emb.dtype.itemsize > 4 and emb.size:  # finite here, inf once cast to float32
        top = float(np.finfo(np.float32).max)
        big = (emb.max(axis=1) > top) | (emb.min(axis=1) < -top)  # reductions: no copy of a big matrix
        if big.any():
            r = int(np.flatnonzero(big)[0])
            c = int(np.flatnonzero(np.abs(emb[r]) > top)[0])
            raise EmbeddingsError(located(where, None, f"row {r}",
                                          f"{emb[r, c].item()!r} in column {c} overflows float32, which embeddings "
                                          f"are used as ({int(big.sum())} such row(s) in all)"))
    return emb.astype(np.float32, copy=False)


def load_embeddings(path: str | os.PathLike, n_invocations: int | None = None,
                    profile: str | os.PathLike | None = None) -> np.ndarray:
    """Load ``path`` (a ``.npy`` array; pickles are refused) and ``check_embeddings`` it."""
    from gclsampler._safe_out import special_input_problem

    path = Path(path)
    problem = special_input_problem(path)
    if problem:
        raise EmbeddingsError(located(path, None, None, problem))
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except FileNotFoundError:
        raise EmbeddingsError(located(path, None, None, "no such file")) from None
    except IsADirectoryError:
        raise EmbeddingsError(located(path, None, None, "is a directory, not an .npy file")) from None
    except OSError as exc:
        raise EmbeddingsError(located(path, None, None, f"cannot read: {exc.strerror or exc}")) from None
    if magic != b"\x93NUMPY":
        kind = "an .npz archive; give the .npy array itself" if magic[:4] == b"PK\x03\x04" else \
            "not a numpy .npy file (np.save writes one)"
        raise EmbeddingsError(located(path, None, None, kind))
    try:
        # memory-mapped: a corrupt header claiming a huge shape fails here instead of allocating it
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
    except OSError as exc:
        raise EmbeddingsError(located(path, None, None, f"cannot read: {exc.strerror or exc}")) from None
    except ValueError as exc:
        msg = str(exc)
        if "pickle" in msg.lower() or "python objects" in msg.lower():
            msg = "holds pickled Python objects, not a numeric array (refused: loading a pickle runs code)"
        else:
            msg = f"truncated or corrupt .npy file ({msg.splitlines()[0] if msg else 'unreadable'})"
        raise EmbeddingsError(located(path, None, None, msg)) from None
    except Exception as exc:  # the header is parsed with ast.literal_eval: SyntaxError, TypeError, ...
        raise EmbeddingsError(located(path, None, None, f"corrupt .npy header ({type(exc).__name__})")) from None
    if not isinstance(arr, np.ndarray):
        raise EmbeddingsError(located(path, None, None, "not a numpy .npy array"))
    arr = check_embeddings(arr, path, n_invocations, profile)  # shape and rows before reading the data
    return np.array(arr, dtype=np.float32, copy=True)


ENCODER_DEVIATIONS = ("inst_stats", "kernel_features")
"""The ``model.*`` switches of the project's encoder deviations (docs/graph.md), on by default;
``model=paper`` turns both off. Only an encoder with both off is the paper's (GCL-Sampler
3.3.1-3.3.2), the one ``gcl_paper`` clusters."""


def project_deviations(model) -> list[str]:
    """``["model.inst_stats=true", ...]``: the deviations switched on in ``model`` (a config node,
    a mapping or a ``ModelConfig``); a missing key counts as ``ModelConfig``'s default. Empty for
    the paper's encoder."""
    from gclsampler.model_config import ModelConfig

    get = model.get if hasattr(model, "get") else (lambda k, d: getattr(model, k, d))
    return [f"model.{k}=true" for k in ENCODER_DEVIATIONS if bool(get(k, getattr(ModelConfig, k)))]


def _run_model(config_yaml: Path):
    """The ``model`` mapping of a ``train.py`` run's ``config.yaml``, or None when there is no
    such file or it is not a run's config (unreadable, not YAML, no ``model`` mapping)."""
    import yaml

    try:
        doc = yaml.safe_load(config_yaml.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    model = doc.get("model") if isinstance(doc, dict) else None
    return model if isinstance(model, dict) else None


def _run_model_of_width(path: str | os.PathLike, n_columns: int):
    """(the ``model`` mapping of the ``train.py`` run beside ``path``, its config.yaml) when that
    run's encoder writes ``n_columns`` columns, else (None, config.yaml path).

    Why the width must match: a config.yaml beside the file describes it only if its model
    writes embeddings of the file's width (a file copied next to another run's config does not)."""
    from gclsampler.model_config import ModelConfig

    config_yaml = Path(path).parent / "config.yaml"
    model = _run_model(config_yaml)
    if model is None:
        return None, config_yaml
    try:
        width = ModelConfig(out_dim=int(model.get("out_dim", ModelConfig.out_dim)),
                            kernel_features=bool(model.get("kernel_features", ModelConfig.kernel_features))
                            ).embedding_dim
    except (TypeError, ValueError):
        return None, config_yaml
    return (model, config_yaml) if width == n_columns else (None, config_yaml)


def without_size_vector(path: str | os.PathLike, n_columns: int) -> str | None:
    """Why the embeddings in ``path`` (``n_columns`` wide) hold no size vector that reads as
    log2 instructions (none, or one scaled by ``model.kfeat_scale`` other than 1), or None.

    Why: gcl's work split and ``work_mean`` representative read the size vector's log2 SM-0
    instructions (``cluster.split_column``, -6). Embeddings of a ``model=paper`` run end in
    learned columns instead, and the split cut on one of them without a word. Same two sources
    as ``not_paper_encoder``: the run's ``config.yaml``, else the width alone (the paper
    encoder's ``out_dim``, 256); any other width is not refused.
    """
    from gclsampler.model_config import ModelConfig

    model, config_yaml = _run_model_of_width(path, n_columns)
    if model is not None:
        if bool(model.get("kernel_features", ModelConfig.kernel_features)):
            scale = model.get("kfeat_scale", ModelConfig.kfeat_scale)  # read as log2 instructions: see pipeline
            return None if scale == 1 else f"its size vector is scaled ({config_yaml}: model.kfeat_scale={scale})"
        return f"trained without the size vector ({config_yaml}: model.kernel_features=false)"
    if n_columns == ModelConfig.out_dim:
        return (f"{n_columns} columns, the width of the paper's encoder (no size vector), and no config.yaml of a "
                f"run with model.kernel_features=true beside it")
    return None


def not_paper_encoder(path: str | os.PathLike, n_columns: int) -> str | None:
    """Why the embeddings in ``path`` (``n_columns`` wide) are not the paper encoder's, or None.

    Why these two sources: ``train.py`` writes the resolved config beside ``embeddings.npy``,
    so the run's own ``config.yaml`` says which encoder it trained, when it describes a model
    of this file's width. A file without one (copied out, ``<workload>/paper_embeddings.npy``)
    has only its width: the project's default encoder writes ``out_dim`` + the 8-column size
    vector (264), the paper's ``out_dim`` (256); any other width is not refused.
    """
    from gclsampler.model_config import ModelConfig

    model, config_yaml = _run_model_of_width(path, n_columns)
    if model is not None:
        on = project_deviations(model)
        return f"trained by the project's encoder ({config_yaml}: {', '.join(on)})" if on else None
    project = ModelConfig().embedding_dim
    if n_columns == project:
        return (f"{n_columns} columns, the width of the project's encoder ({ModelConfig.out_dim} + the "
                f"{project - ModelConfig.out_dim}-column size vector), and no config.yaml of a model=paper run "
                f"beside it")
    return None


def other_workload(path: str | os.PathLike, kernel_names) -> str | None:
    """Why the embeddings in ``path`` look like another workload's invocations, or None.

    Why: row i must be invocation i, and the row count is all ``load_embeddings`` can check, so
    the embeddings of another workload with as many invocations were clustered without a word
    and gave a plan of the wrong kernels. ``train.py`` writes ``clusters.csv`` beside
    ``embeddings.npy``, each invocation with the kernel name of the profile it was trained on;
    a name that differs there names the first row that is not this workload's. Nothing is said
    without such a file, or with one of another length (it does not describe this file).
    """
    import csv

    clusters_csv = Path(path).parent / "clusters.csv"
    names = [str(n) for n in kernel_names]
    try:
        with open(clusters_csv, newline="") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if not rows or rows[0][:2] != ["invocation", "kernel_name"] or len(rows) - 1 != len(names):
        return None
    for i, (row, ours) in enumerate(zip(rows[1:], names)):
        if len(row) < 2:
            return None
        if row[1] != ours:
            return (f"invocation {i} is {row[1]!r} in the run that wrote them ({clusters_csv}, line {i + 2}) "
                    f"but {ours!r} here")
    return None
