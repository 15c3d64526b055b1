"""gclsampler.embeddings: the reader's refusals and the encoder checks, called directly (the
CLI tests reach them through `gclsampler sample`)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from gclsampler.embeddings import (EmbeddingsError, check_embeddings, load_embeddings, not_paper_encoder,
                                   without_size_vector)
from gclsampler.model_config import ModelConfig

PAPER = ModelConfig.out_dim  # the paper encoder's width
PROJECT = ModelConfig().embedding_dim  # out_dim + the size vector


@pytest.mark.parametrize("shape", [(4, 3, 2), (4, 1, 1), (2, 2, 2, 2)])
def test_more_than_two_dimensions_are_refused(shape):
    with pytest.raises(EmbeddingsError, match=r"expected \(invocations, dims\)"):
        check_embeddings(np.ones(shape, dtype=np.float32), "emb.npy")


def test_a_bad_row_names_its_first_non_finite_column():
    emb = np.zeros((3, 5))
    emb[1, [1, 3]] = [np.nan, np.inf]
    with pytest.raises(EmbeddingsError, match=r"row 1: not finite \(nan in column 1; 1 bad row"):
        check_embeddings(emb, "emb.npy")


def test_loaded_embeddings_are_an_in_memory_copy(tmp_path):
    """The returned matrix is the file's content at load time: writable, and neither a
    memory map of the file nor changed when the file is rewritten afterwards."""
    p = tmp_path / "emb.npy"
    emb = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(p, emb)
    got = load_embeddings(p, 4)
    assert not isinstance(got, np.memmap) and got.flags.writeable
    np.save(p, -emb)
    np.testing.assert_array_equal(got, emb)
    got[0, 0] = 7.0  # a caller may normalise in place


def _beside(tmp_path, model):
    p = tmp_path / "embeddings.npy"
    if model is not None:
        (tmp_path / "config.yaml").write_text(yaml.safe_dump({"model": model}))
    return p


@pytest.mark.parametrize("model", [{"inst_stats": False}, {"inst_stats": False, "out_dim": PAPER}])
def test_a_run_config_without_kernel_features_counts_it_as_the_default(tmp_path, model):
    """config.yaml keys left out are ModelConfig's defaults, for the width too: a run with the
    size vector on by default writes out_dim + 8 columns, so its config describes a file of
    that width (and that run's only deviation, the size vector, is named)."""
    assert ModelConfig.kernel_features
    p = _beside(tmp_path, model)
    assert not_paper_encoder(p, PROJECT) == f"trained by the project's encoder ({tmp_path / 'config.yaml'}: " \
                                           "model.kernel_features=true)"
    assert without_size_vector(p, PROJECT) is None


@pytest.mark.parametrize("columns", [PROJECT + 1, PROJECT + 100, 1000])
def test_widths_other_than_the_two_encoders_are_not_refused(tmp_path, columns):
    p = _beside(tmp_path, None)
    assert not_paper_encoder(p, columns) is None
    assert without_size_vector(p, columns) is None


@pytest.mark.parametrize("doc", ["model: paper", "model: [1, 2]", "- a list", "model: 3"])
def test_a_config_yaml_without_a_model_mapping_falls_back_to_the_width(tmp_path, doc):
    """A config.yaml that is no run's config (its ``model`` no mapping) is ignored: the width
    alone decides, as if there were none."""
    (tmp_path / "config.yaml").write_text(doc + "\n")
    p = tmp_path / "embeddings.npy"
    assert not_paper_encoder(p, PAPER) is None
    assert not_paper_encoder(p, PROJECT).startswith(f"{PROJECT} columns, the width of the project's encoder")
    assert without_size_vector(p, PROJECT) is None
    assert without_size_vector(p, PAPER).startswith(f"{PAPER} columns, the width of the paper's encoder")


def test_a_config_yaml_of_another_width_does_not_describe_the_file(tmp_path):
    """A model=paper run's config.yaml (256 columns) beside a 264-column file (copied there)
    says nothing about it: the width alone decides, and 264 is the project's encoder."""
    p = _beside(tmp_path, {"inst_stats": False, "kernel_features": False, "out_dim": PAPER})
    assert not_paper_encoder(p, PAPER) is None  # the run's own width: its config applies
    assert not_paper_encoder(p, PROJECT).startswith(f"{PROJECT} columns, the width of the project's encoder")
    assert without_size_vector(p, PROJECT) is None


@pytest.mark.parametrize("head", [b"\x93NUMPZ" + bytes(64), b"\x93" + bytes(100), b"\x93NUMP"],
                         ids=["NUMPZ", "zeros", "short"])
def test_a_file_that_only_starts_like_npy_is_not_an_npy_file(tmp_path, head):
    p = tmp_path / "emb.npy"
    p.write_bytes(head)
    with pytest.raises(EmbeddingsError, match=r"not a numpy \.npy file"):
        load_embeddings(p)
