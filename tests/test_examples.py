"""examples/patch_attention.py: the project's attention classifies digit images."""

import importlib.util

import pytest
import torch

from helpers import ROOT

pytest.importorskip("sklearn", reason="the examples extra: pip install -e '.[examples]'")
spec = importlib.util.spec_from_file_location(
    "patch_attention", ROOT / "examples/patch_attention.py"
)
patch_attention = importlib.util.module_from_spec(spec)
spec.loader.exec_module(patch_attention)


def test_patches_are_the_image_cut_in_2x2_squares():
    image = torch.arange(64.0).reshape(1, 8, 8)
    patches = patch_attention.to_patches(image)
    assert patches.shape == (1, 16, 4)
    assert patches[0, 0].tolist() == [0, 1, 8, 9] and patches[0, 5].tolist() == [18, 19, 26, 27]


@pytest.mark.slow
def test_the_attention_models_learn_on_a_subset_in_seconds():
    torch.set_num_threads(1)
    results, models, data = patch_attention.run(epochs=25, seeds=[0], subset=500)
    for name in ("attention", "encoder"):
        assert results[name][0]["accuracy"] > 0.6, (name, results[name])  # chance: 0.1
    # the models use the project's attention, not a copy of it
    from seq2seq.model.attention import MultiHeadAttention

    assert isinstance(models["attention"].attention, MultiHeadAttention)
    weights = patch_attention.class_token_attention(models["encoder"], data[2][:5])
    assert (
        weights.shape == (5, 4, 4)
        and (weights >= 0).all()
        and (weights.sum((1, 2)) <= 1 + 1e-6).all()
    )
    assert "| encoder |" in patch_attention.table(results, 25)
