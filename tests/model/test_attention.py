"""Attention against references: a small causal example worked out by hand, torch's SDPA,
torch's nn.MultiheadAttention, and a plain per-head loop for the head split."""

import pytest
import torch
import torch.nn.functional as F

from seq2seq.model.attention import MultiHeadAttention, scaled_dot_product_attention
from seq2seq.model.masks import no_peek_mask


def test_causal_attention_reproduces_the_z_table_worked_out_by_hand():
    """Four positions of width 3, each attending to itself and the positions before it; the
    outputs z1..z4, to 4 decimals, are those softmax(q k^T / sqrt(3)) v gives by hand:
    z1 = v1 (nothing else to see), z2 = 0.4568 v1 + 0.5432 v2, and so on."""
    q = torch.tensor([[0.0, 0.0, 0.0], [1, 1, 1], [0.2, 0.2, 0.2], [0.3, 0.3, 0.3]])
    k = torch.tensor([[0.1, 0.1, 0.1], [0.2, 0.2, 0.2], [0.3, 0.3, 0.3], [0.4, 0.4, 0.4]])
    v = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    z, weights = scaled_dot_product_attention(q, k, v, no_peek_mask(4)[0, 0])
    expected = torch.tensor(
        [
            [1.0000, 0.0000, 0.0000],
            [0.4568, 0.5432, 0.0000],
            [0.3219, 0.3332, 0.3449],
            [0.2309, 0.5130, 0.5260],
        ]
    )
    assert torch.equal(z.mul(10_000).round().div(10_000), expected)
    assert torch.allclose(weights.sum(-1), torch.ones(4))
    assert torch.all(weights.triu(1) == 0), "a query attended to a later position"


def random_masks(batch: int, tq: int, tk: int, generator: torch.Generator) -> torch.Tensor:
    """Padding (random lengths >= 1) combined with no-peek: (B, 1, Tq, Tk) booleans."""
    lengths = torch.randint(1, tk + 1, (batch,), generator=generator)
    padding = (torch.arange(tk)[None, :] < lengths[:, None])[:, None, None, :]
    causal = torch.ones(tq, tk, dtype=torch.bool).tril()[None, None]
    return padding & causal


def test_matches_torch_sdpa_with_padding_and_no_peek_masks():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 4, 6, 8, generator=g) for _ in range(3))
    mask = random_masks(3, 6, 6, g)
    ours, _ = scaled_dot_product_attention(q, k, v, mask)
    reference = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(ours, reference, atol=1e-5, rtol=1e-5)


def test_fully_masked_rows_give_zeros_not_nan_in_every_dtype():
    mask = torch.tensor([[True, True, False], [False, False, False], [True, False, False]])
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        q, k, v = (torch.randn(3, 4).to(dtype) for _ in range(3))
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        assert not out.isnan().any() and not weights.isnan().any(), dtype
        assert torch.all(out[1] == 0) and torch.all(weights[1] == 0), dtype
    q, k, v = (torch.randn(3, 4, requires_grad=True) for _ in range(3))
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    out.sum().backward()
    assert all(not t.grad.isnan().any() for t in (q, k, v))


def copy_to_torch_mha(ours: MultiHeadAttention) -> torch.nn.MultiheadAttention:
    reference = torch.nn.MultiheadAttention(ours.d_model, ours.n_heads, batch_first=True)
    with torch.no_grad():
        reference.in_proj_weight.copy_(ours.in_proj.weight)
        reference.in_proj_bias.copy_(ours.in_proj.bias)
        reference.out_proj.weight.copy_(ours.out_proj.weight)
        reference.out_proj.bias.copy_(ours.out_proj.bias)
    return reference.eval()


@pytest.mark.parametrize("backend", ["math", "sdpa"])
def test_self_attention_matches_nn_multihead_attention(backend):
    torch.manual_seed(0)
    ours = MultiHeadAttention(16, 4, backend=backend).eval()
    reference = copy_to_torch_mha(ours)
    x = torch.randn(3, 7, 16)
    lengths = torch.tensor([7, 4, 1])
    keep = torch.arange(7)[None, :] < lengths[:, None]  # (B, T) True at real tokens
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    mask = keep[:, None, None, :] & causal  # our convention: True = may attend
    expected, _ = reference(
        x, x, x, key_padding_mask=~keep, attn_mask=~causal, need_weights=False
    )  # torch's convention: True = blocked
    got = ours(x, mask=mask)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", ["math", "sdpa"])
def test_cross_attention_matches_nn_multihead_attention(backend):
    torch.manual_seed(1)
    ours = MultiHeadAttention(16, 2, backend=backend).eval()
    reference = copy_to_torch_mha(ours)
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 9, 16)
    keep = torch.arange(9)[None, :] < torch.tensor([[9], [3]])
    expected, _ = reference(x, memory, memory, key_padding_mask=~keep, need_weights=False)
    got = ours(x, memory, mask=keep[:, None, None, :])
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_math_and_sdpa_backends_agree_on_outputs_and_gradients():
    torch.manual_seed(2)
    math_attention = MultiHeadAttention(32, 4, backend="math")
    sdpa_attention = MultiHeadAttention(32, 4, backend="sdpa")
    sdpa_attention.load_state_dict(math_attention.state_dict())
    x = torch.randn(4, 6, 32)
    mask = random_masks(4, 6, 6, torch.Generator().manual_seed(3))
    outputs = []
    for module in (math_attention, sdpa_attention):
        out = module(x, mask=mask)
        out.pow(2).sum().backward()
        outputs.append(out)
    torch.testing.assert_close(outputs[0], outputs[1], atol=1e-5, rtol=1e-5)
    for a, b in zip(math_attention.parameters(), sdpa_attention.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("parts", [1, 2, 3])
def test_split_heads_equals_a_per_head_loop_and_merge_heads_undoes_it(parts):
    """split_heads' one view + permute + unbind, against slicing each part and head by hand:
    part p, head h of (B, T, parts * D) is features [p*D + h*Dh, p*D + (h+1)*Dh)."""
    batch, length, d_model, n_heads = 2, 5, 12, 3
    head = d_model // n_heads
    attention = MultiHeadAttention(d_model, n_heads)
    x = torch.randn(batch, length, parts * d_model)
    split = attention.split_heads(x, parts)
    assert len(split) == parts
    for p, got in enumerate(split):
        assert got.shape == (batch, n_heads, length, head)
        for h in range(n_heads):
            start = p * d_model + h * head
            assert torch.equal(got[:, h], x[:, :, start : start + head]), (p, h)
        assert got.untyped_storage().data_ptr() == x.untyped_storage().data_ptr(), "a copy"
    merged = torch.cat([attention.merge_heads(got) for got in split], dim=-1)
    assert torch.equal(merged, x)
