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
                                          f"not finite ({emb[r, c]!r} in column {c}; "
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
    path = Path(path)
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
