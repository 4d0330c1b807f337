# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The Transformer, step by step
#
# This walkthrough builds up the Transformer in reading order, from attention on a 4x3 example
# worked out by hand to a model that learns to translate "three is three" into "3 la 3". Every
# step uses the project's own code, shows the tensor shapes, and checks itself with `assert`:
# if a step printed something wrong, the file would stop there.
#
# 1. Attention by hand, on a small causal example
# 2. Masks: padding and no-peek, and which number a blocked score gets
# 3. One head, then several: split, attend, merge (a loop and a vectorised version)
# 4. The project's `MultiHeadAttention`, against both and against `torch.nn.MultiheadAttention`
# 5. An encoder layer and a decoder layer
# 6. The whole Transformer
# 7. Training, in about twenty lines, on nine sentence pairs
# 8. Greedy decoding, step by step and with the key/value cache
#
# **Run it** from the repository root with the core installed (`make install`, then
# `. .venv/bin/activate`; or `pip install -e .`): `python docs/walkthrough.py` (a few seconds
# on a CPU; it writes no file; each step prints a header). The test suite runs it too
# ([`tests/test_walkthrough.py`](../tests/test_walkthrough.py)).
#
# **Open it as a notebook**: it is a plain Python file in jupytext's "percent" format, where
# `# %%` starts a code cell and `# %% [markdown]` a text cell. jupytext is in the `docs` extra
# (`pip install -e ".[docs]"`, which `make docs` installs); then either open
# `docs/walkthrough.py` in Jupyter (right click, *Open With*, *Notebook*) or convert it:
# `jupytext --to notebook docs/walkthrough.py` writes `docs/walkthrough.ipynb`.
#
# Shapes use these letters throughout, as the code's docstrings do:
#
# | letter | meaning |
# | --- | --- |
# | B | sentences in a batch |
# | S, T | source and target length (in tokens) |
# | Tq, Tk | number of queries and of keys in one attention |
# | D | model width, `d_model` |
# | H, Dh | attention heads, and the width of each head, D / H |
# | V | vocabulary size |

# %%
import math

import torch
import torch.nn.functional as F

from seq2seq.config import DecodeConfig, ModelConfig, TrainConfig, VocabConfig
from seq2seq.corpora import numbers
from seq2seq.decoding.batches import translate_sentences
from seq2seq.decoding.greedy import greedy_decode_cached, max_lengths, strip
from seq2seq.model.attention import MultiHeadAttention, scaled_dot_product_attention
from seq2seq.model.kv_cache import DecoderCache
from seq2seq.model.masks import decoder_mask, no_peek_mask, padding_mask
from seq2seq.model.transformer import DecoderLayer, EncoderLayer, Transformer, sinusoidal_positions
from seq2seq.tokens.batching import pair_tensors
from seq2seq.tokens.special import BOS, EOS, PAD, non_output_logits
from seq2seq.tokens.vocab import train_vocab
from seq2seq.training.loss import batch_loss
from seq2seq.training.optimizer import make_optimizer

torch.manual_seed(0)  # every random tensor below is the same on every run
assert_close = torch.testing.assert_close


def section(title: str) -> None:
    """A header in the printed output, which then reads on its own, without the text cells."""
    print(f"\n== {title} ==")


# %% [markdown]
# ## 1. Attention by hand
#
# Attention lets each position of a sequence gather information from the others. Each
# position asks a **query** q; each position offers a **key** k, which says what it holds,
# and a **value** v, which is what it hands over. Query i's output is an average of the
# values, weighted by how well query i matches each key:
#
#     scores  = q @ k^T / sqrt(d)        (Tq, Tk)  score[i, j]: how well query i matches key j
#     weights = softmax(scores, dim=-1)  (Tq, Tk)  each row sums to 1
#     z       = weights @ v              (Tq, d)   row i: a weighted average of the values
#
# Dividing by sqrt(d), d the width of the queries, keeps the scores' spread the same whatever
# the width, so that the softmax does not saturate when d is large.
#
# Here are four positions of width 3. The attention is **causal**: position i may look at
# itself and at the positions before it, never after (section 2 says why a decoder needs
# that). The four outputs z1..z4 are small enough to check by hand.

# %%
section("1. Attention by hand")
q = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.2, 0.2, 0.2], [0.3, 0.3, 0.3]])  # (4, 3)
k = torch.tensor([[0.1, 0.1, 0.1], [0.2, 0.2, 0.2], [0.3, 0.3, 0.3], [0.4, 0.4, 0.4]])  # (4, 3)
v = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])  # (4, 3)

scores = q @ k.T / math.sqrt(q.size(-1))  # (4, 4): query i's score for key j
allowed = no_peek_mask(4)[0, 0]  # (4, 4) booleans, True on and below the diagonal
print("which keys each query may see (1: allowed)")
print(allowed.int())

# %% [markdown]
# Blocked scores (above the diagonal) get the most negative number a float32 can hold, so that
# their weight after the softmax is exactly 0. The softmax runs over the last dimension, the
# keys: each query's row becomes a probability distribution over the keys it may see.

# %%
blocked_scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
weights = torch.softmax(blocked_scores, dim=-1)  # (4, 4)
z = weights @ v  # (4, 3)
for name, row in zip(["z1", "z2", "z3", "z4"], z.tolist(), strict=True):
    print(name, "  ".join(f"{x:.4f}" for x in row))

Z_TABLE = torch.tensor(
    [
        [1.0000, 0.0000, 0.0000],
        [0.4568, 0.5432, 0.0000],
        [0.3219, 0.3332, 0.3449],
        [0.2309, 0.5130, 0.5260],
    ]
)
assert torch.equal(z.mul(10_000).round().div(10_000), Z_TABLE)  # to 4 decimals
assert_close(weights.sum(dim=-1), torch.ones(4))  # each row is a distribution
assert torch.all(weights.triu(diagonal=1) == 0)  # no query looked ahead

# %% [markdown]
# Why these numbers:
#
# * **z1 = v1.** Position 1 may only see itself, so its single weight is 1, whatever its score.
# * **z2 = 0.4568 v1 + 0.5432 v2.** q2 = [1, 1, 1] scores k1 with 0.3 / sqrt(3) = 0.1732
#   and k2 with 0.6 / sqrt(3) = 0.3464. A softmax of two numbers depends only on their
#   difference, so v2's weight is 1 / (1 + exp(-0.1732)) = 0.5432.
# * **z4 = [w1, w2 + w4, w3 + w4]**: v4 = [0, 1, 1] adds its weight to two columns, which
#   is why z4's last two entries exceed 0.5 although every weight is about 1/4.

# %%
assert_close(weights[1, 1], 1 / (1 + torch.exp(-(scores[1, 1] - scores[1, 0]))))
assert abs(weights[1, 1].item() - 0.5432) < 5e-5
w = weights[3]
assert_close(z[3], torch.stack([w[0], w[1] + w[3], w[2] + w[3]]))

# %% [markdown]
# The project's function does the same four steps
# ([`model/attention.py`](../seq2seq/model/attention.py), `scaled_dot_product_attention`;
# its test: [`tests/model/test_attention.py`](../tests/model/test_attention.py)), and torch's
# fused kernel agrees (`is_causal=True` builds the same no-peek mask).

# %%
ours, our_weights = scaled_dot_product_attention(q, k, v, allowed)
assert_close(ours, z)
assert_close(our_weights, weights)
assert_close(F.scaled_dot_product_attention(q, k, v, is_causal=True), z)

# %% [markdown]
# ## 2. Masks
#
# A mask says which keys each query may look at. The project's convention, everywhere:
# **True = may attend** (the same as torch's `scaled_dot_product_attention`). Masks broadcast
# against the scores of shape (B, H, Tq, Tk); a dimension of size 1 means "the same for all".
# Code: [`model/masks.py`](../seq2seq/model/masks.py); tests:
# [`tests/model/test_masks.py`](../tests/model/test_masks.py).
#
# * The **padding mask** hides the PAD tokens that fill shorter sentences up to the length
#   of the longest in a batch: shape (B, 1, 1, Tk), the same for every head and every query.
# * The **no-peek mask** stops decoder position i from seeing positions j > i. In training
#   the decoder reads the whole target sentence at once and predicts, at each position, the
#   next token: if it could see that token, it would learn to copy it. Shape (1, 1, T, T).
# * The decoder's self-attention needs both: their logical AND, shape (B, 1, T, T).
#
# A batch of two target sentences, of 3 and 2 tokens (token ids 5 to 9, PAD = 0):

# %%
section("2. Masks")
tokens = torch.tensor([[5, 6, 7], [8, 9, PAD]])  # (B=2, T=3)
mask = padding_mask(tokens, PAD)
print("padding mask", tuple(mask.shape), mask[:, 0, 0].int())
print("no-peek mask", tuple(no_peek_mask(3).shape))
print(no_peek_mask(3)[0, 0].int())
print("decoder mask", tuple(decoder_mask(tokens, PAD).shape), "sentence 2:")
print(decoder_mask(tokens, PAD)[1, 0].int())

assert padding_mask(tokens, PAD).shape == (2, 1, 1, 3)
assert no_peek_mask(3).shape == (1, 1, 3, 3)
assert torch.equal(decoder_mask(tokens, PAD), padding_mask(tokens, PAD) & no_peek_mask(3))
assert decoder_mask(tokens, PAD)[1, 0].tolist() == [
    [True, False, False],
    [True, True, False],
    [True, True, False],  # the PAD key stays hidden from every query
]

# %% [markdown]
# ### Which number does a blocked score get?
#
# Blocking a key means giving it a weight of 0 after the softmax, that is a score so negative
# that exp(score - the row's largest score) is 0. Three tempting choices are wrong:
#
# * **-1e-9** is a *tiny* negative number, not a large one: exp(-1e-9) is 1, and the "blocked"
#   keys keep almost their whole weight. On the example of section 1 the first query, which
#   should see only itself, spreads its attention evenly over all four positions.

# %%
leaky = torch.softmax(scores.masked_fill(~allowed, -1e-9), dim=-1)
print("row 1 with -1e-9:", leaky[0].tolist())
assert torch.all(leaky[0] > 0.24)  # about 1/4 each: the future is not hidden at all

# %% [markdown]
# * **-1e9** works in float32 but not in float16, whose largest magnitude is 65,504: the
#   number cannot even be written into a float16 tensor. Models trained or run in half
#   precision compute their scores in float16.

# %%
half_scores = scores.half()
try:
    half_scores.masked_fill(~allowed, -1e9)
    overflowed = False
except RuntimeError as error:  # "value cannot be converted to type ... without overflow"
    print("float16 and -1e9:", error)
    overflowed = True
assert overflowed
print("float16 range:", torch.finfo(torch.float16).min, "..", torch.finfo(torch.float16).max)

# %% [markdown]
# * **-inf** blocks correctly, until a query has *every* key blocked, which happens to the
#   queries of a sentence made of padding only. Its row is then softmax(-inf, ..., -inf)
#   = 0 / 0 = NaN, and during training a NaN spreads through the gradients to every weight.
#
# The project uses **the most negative finite number of the scores' dtype**,
# `torch.finfo(dtype).min`: it fits in every dtype, its weight underflows to exactly 0 next
# to any real key, and a row where everything is blocked becomes uniform instead of NaN. The
# project's attention then sets the weights of blocked keys to 0, so such a query outputs
# zeros, as torch's fused kernel does.

# %%
assert torch.softmax(torch.full((3,), float("-inf")), dim=-1).isnan().all()

all_blocked = allowed.clone()
all_blocked[2] = False  # query 3 may see nothing
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    out, w = scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype), all_blocked)
    assert not out.isnan().any() and torch.all(out[2] == 0), dtype
    assert torch.all(w[~all_blocked] == 0), dtype  # blocked keys: weight exactly 0
print("no NaN in float32, bfloat16 or float16; the fully blocked query outputs zeros")

# %% [markdown]
# ## 3. One head, then several
#
# In a model, queries, keys and values are not given: each is a learned linear map of the
# input x (B, T, D). The project keeps the three maps in one (3D, D) matrix, `in_proj`, so
# one matrix multiply makes all three. We borrow the weights of a `MultiHeadAttention` with
# D = 8 and H = 2 heads, and a batch of two sentences of 5 positions, the second with two
# positions of padding.

# %%
section("3. One head, then several")
B, T, D, H = 2, 5, 8, 2
Dh = D // H  # 4: the width of each head
mha = MultiHeadAttention(D, H).eval()
x = torch.randn(B, T, D)  # (B, T, D): 5 vectors of width 8 per sentence
ids = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, PAD, PAD]])  # (B, T) only for the mask
mask = decoder_mask(ids, PAD)  # (B, 1, T, T): padding AND no-peek

q, k, v = mha.in_proj(x).split(D, dim=-1)  # (B, T, 3D) -> three (B, T, D)

# %% [markdown]
# **One head** attends over all D features at once, with one softmax per query. The project's
# function works on any leading dimensions: here (B, T, D), with the mask's head dimension
# dropped, (B, T, T).

# %%
one_head, _ = scaled_dot_product_attention(q, k, v, mask[:, 0])  # (B, T, D)
print("one head:", tuple(one_head.shape))

# %% [markdown]
# **Several heads**: head h takes its own slice of Dh features of q, k and v, and attends
# with its own softmax, so the heads can look at different positions for different reasons.
# Their outputs, (B, T, Dh) each, are then put side by side again: (B, T, D). First as a plain
# loop over the heads:

# %%
outputs = []
for h in range(H):
    f = slice(h * Dh, (h + 1) * Dh)  # head h's features
    out_h, _ = scaled_dot_product_attention(q[..., f], k[..., f], v[..., f], mask[:, 0])
    outputs.append(out_h)  # (B, T, Dh)
looped = torch.cat(outputs, dim=-1)  # (B, T, H * Dh) = (B, T, D)
assert not torch.allclose(looped, one_head)  # two softmaxes are not one

# %% [markdown]
# The same without a loop: reshape (B, T, D) into (B, T, H, Dh) and move the heads forward,
# (B, H, T, Dh). Matrix multiplication works on the last two dimensions and treats the
# others as a batch, so one `q @ k^T` computes every head of every sentence, (B, H, T, T).
# The mask (B, 1, T, T) broadcasts over the heads. Merging is the reverse reshape.

# %%
qs, ks, vs = (t.view(B, T, H, Dh).transpose(1, 2) for t in (q, k, v))  # (B, H, T, Dh) each
out, _ = scaled_dot_product_attention(qs, ks, vs, mask)  # (B, H, T, Dh): all heads at once
vectorised = out.transpose(1, 2).reshape(B, T, D)  # (B, T, H, Dh) -> (B, T, D)
assert_close(vectorised, looped)

# %% [markdown]
# The project's `split_heads` does the same for queries, keys and values together, with one
# view of the (B, T, 3D) projection (decoding calls it at every step, so it uses as few tensor
# operations as it can); `merge_heads` undoes it. Code:
# [`model/attention.py`](../seq2seq/model/attention.py); its test against a per-head loop:
# `test_split_heads_equals_a_per_head_loop_and_merge_heads_undoes_it` in
# [`tests/model/test_attention.py`](../tests/model/test_attention.py).

# %%
qh, kh, vh = mha.split_heads(mha.in_proj(x), parts=3)  # three (B, H, T, Dh)
assert torch.equal(qh, qs) and torch.equal(kh, ks) and torch.equal(vh, vs)
assert torch.equal(mha.merge_heads(out), vectorised)

# %% [markdown]
# ## 4. The project's `MultiHeadAttention`
#
# `MultiHeadAttention.forward` is the projection, the split, the attention and the merge
# above, followed by one more linear map, `out_proj` (D, D), which mixes the heads' outputs.
# It has two back ends: `math` runs `scaled_dot_product_attention` as above, `sdpa` (the
# default) runs torch's fused kernel. Both equal the loop and the vectorised version.

# %%
section("4. The project's MultiHeadAttention")
expected = mha.out_proj(looped)  # (B, T, D)
math_mha = MultiHeadAttention(D, H, backend="math").eval()
math_mha.load_state_dict(mha.state_dict())
for module in (mha, math_mha):
    assert_close(module(x, mask=mask), expected)
    assert_close(module(x, mask=mask), mha.out_proj(vectorised))

# %% [markdown]
# torch has its own `torch.nn.MultiheadAttention`, with the same layout of weights
# (`in_proj_weight` is our `in_proj.weight`). Its masks use the opposite convention,
# **True = blocked**, and come in two parts: `key_padding_mask` (B, Tk) and `attn_mask`
# (Tq, Tk). Copy our weights into it and invert our masks: the outputs agree.

# %%
reference = torch.nn.MultiheadAttention(D, H, batch_first=True).eval()
with torch.no_grad():
    reference.in_proj_weight.copy_(mha.in_proj.weight)
    reference.in_proj_bias.copy_(mha.in_proj.bias)
    reference.out_proj.weight.copy_(mha.out_proj.weight)
    reference.out_proj.bias.copy_(mha.out_proj.bias)
theirs, _ = reference(
    x,
    x,
    x,
    key_padding_mask=ids == PAD,  # (B, T): True at padding
    attn_mask=~no_peek_mask(T)[0, 0],  # (T, T): True above the diagonal
    need_weights=False,
)
assert_close(mha(x, mask=mask), theirs, atol=1e-5, rtol=1e-5)
print("MultiHeadAttention (both backends) = the loop = the vectorised heads = torch's")

# %% [markdown]
# ## 5. An encoder layer and a decoder layer
#
# A layer wraps attention with a feed-forward network, (B, L, D) -> (B, L, d_ff) -> ReLU ->
# (B, L, D), applied to each position on its own. Each of these sublayers is used as
#
#     x = x + sublayer(LayerNorm(x))
#
# the "pre-norm" arrangement: the residual sum x + ... lets the signal and the gradients pass
# through many layers unchanged, and normalising the sublayer's *input* keeps training stable
# at high learning rates. (The original Transformer normalised after the sum instead; most
# recent models normalise before.) Code:
# [`model/transformer.py`](../seq2seq/model/transformer.py); the layers are tested inside
# the whole model, in [`tests/model/test_masks.py`](../tests/model/test_masks.py).
#
# The **encoder layer** has two sublayers: self-attention over the source, which hides the
# source padding, then the feed-forward network. Its input and output are (B, S, D).

# %%
section("5. An encoder layer and a decoder layer")
cfg = ModelConfig(d_model=D, n_heads=H, enc_layers=1, dec_layers=1, d_ff=16, dropout=0.0)
encoder_layer = EncoderLayer(cfg).eval()

src_ids = torch.tensor([[5, 6, 7, 8], [5, 6, PAD, PAD]])  # (B, S=4)
src_mask = padding_mask(src_ids, PAD)  # (B, 1, 1, S)
src_x = torch.randn(B, 4, D)  # (B, S, D)

h = src_x + encoder_layer.self_attn(encoder_layer.norm1(src_x), mask=src_mask)
h = h + encoder_layer.ff(encoder_layer.norm2(h))
assert_close(encoder_layer(src_x, src_mask), h)
memory = h  # (B, S, D): what the decoder will read

# %% [markdown]
# The **decoder layer** has three: masked self-attention over the target so far (padding AND
# no-peek), then **cross-attention**, where the queries come from the decoder, (B, T, D), and
# the keys and values from the encoder's output, the "memory" (B, S, D); its weights are
# (B, H, T, S), and the source padding mask hides the padded source positions. Then the
# feed-forward network.

# %%
decoder_layer = DecoderLayer(cfg).eval()
tgt_ids = torch.tensor([[BOS, 5, 6], [BOS, 7, PAD]])  # (B, T=3)
tgt_mask = decoder_mask(tgt_ids, PAD)  # (B, 1, T, T)
tgt_x = torch.randn(B, 3, D)  # (B, T, D)

h = tgt_x + decoder_layer.self_attn(decoder_layer.norm1(tgt_x), mask=tgt_mask)
h = h + decoder_layer.cross_attn(decoder_layer.norm2(h), memory, mask=src_mask)
h = h + decoder_layer.ff(decoder_layer.norm3(h))
assert_close(decoder_layer(tgt_x, memory, tgt_mask, src_mask), h)

# %% [markdown]
# `record = True` keeps an attention module's weights (it is how the project draws attention
# maps). The cross-attention weights have one row per target position and one column per
# source position, and give the padded source positions nothing:

# %%
decoder_layer.cross_attn.record = True
decoder_layer(tgt_x, memory, tgt_mask, src_mask)
cross_weights = decoder_layer.cross_attn.weights  # (B, H, T, S)
decoder_layer.cross_attn.record = False
print("cross-attention weights:", tuple(cross_weights.shape))
assert cross_weights.shape == (B, H, 3, 4)
assert torch.all(cross_weights[1, :, :, 2:] == 0)  # sentence 2's source padding
assert_close(cross_weights.sum(dim=-1), torch.ones(B, H, 3))

# %% [markdown]
# ## 6. The Transformer
#
# The whole model ([`model/transformer.py`](../seq2seq/model/transformer.py), `Transformer`)
# is these layers in two stacks, with embeddings at the bottom and a linear map to the
# vocabulary at the top:
#
#     src (B, S) -> embed + positions -> encoder layers -> LayerNorm -> memory (B, S, D)
#     tgt (B, T) -> embed + positions -> decoder layers -> LayerNorm -> Linear -> logits (B, T, V)
#                                          each reads memory
#
# Attention by itself ignores order: shuffle the keys and values together and each output is
# the same. So each token's embedding, scaled by sqrt(D), gets a fixed vector added that
# encodes its position: sines and cosines of the position at D/2 frequencies.
#
# `encode` runs the encoder once per batch; `decode` maps target ids to logits, a score for
# every vocabulary entry at every position: position t's scores predict token t + 1.

# %%
section("6. The Transformer")
model = Transformer(cfg, src_vocab_size=12, tgt_vocab_size=10, pad_id=PAD).eval()
memory, src_mask = model.encode(src_ids)  # (B, S, D), (B, 1, 1, S)
logits = model.decode(tgt_ids, memory, src_mask)  # (B, T, V)
print("memory", tuple(memory.shape), " logits", tuple(logits.shape))
assert logits.shape == (B, 3, 10)
assert_close(model(src_ids, tgt_ids), logits)  # forward = encode, then decode

embedded = model.src_embed(src_ids)  # (B, S, D)
scaled = model.src_embed.tokens(src_ids) * math.sqrt(D)
assert_close(embedded, scaled + sinusoidal_positions(4, D))

h = embedded
for layer in model.encoder:
    h = layer(h, src_mask)
assert_close(model.encoder_norm(h), memory)

# %% [markdown]
# The no-peek mask at work in the whole model: change the last target token, and the logits
# of the positions before it do not move. (The test suite checks this at every position, and
# that padding changes nothing either: [`tests/model/test_masks.py`](../tests/model/test_masks.py).)

# %%
changed = tgt_ids.clone()
changed[0, 2] = 9
changed_logits = model(src_ids, changed)
assert_close(changed_logits[0, :2], logits[0, :2])  # positions 1 and 2: unchanged
assert not torch.allclose(changed_logits[0, 2], logits[0, 2])  # position 3 sees its input

# %% [markdown]
# The linear map at the top scores the decoder's last vector against one row per target
# token, as the target embedding holds one row per target token: `tie_embeddings` (the
# default) makes the two one matrix, so a token's vector is both what the decoder reads and
# what its output is compared with. With one vocabulary for both languages (`vocab.joint`),
# `share_embeddings` makes the source embedding that matrix too: one (V, D) matrix instead of
# three, as in Vaswani et al., and a piece learnt on one side is known on the other.

# %%
one = ModelConfig(d_model=D, n_heads=H, enc_layers=1, dec_layers=1, d_ff=16, share_embeddings=True)
shared = Transformer(one, src_vocab_size=12, tgt_vocab_size=12, pad_id=PAD)
assert shared.src_embed.tokens.weight is shared.tgt_embed.tokens.weight is shared.generator.weight
three = ModelConfig(d_model=D, n_heads=H, enc_layers=1, dec_layers=1, d_ff=16, tie_embeddings=False)
apart = Transformer(three, src_vocab_size=12, tgt_vocab_size=12, pad_id=PAD)
print("parameters: three matrices", apart.num_parameters(), " one", shared.num_parameters())
assert apart.num_parameters() - shared.num_parameters() == 2 * 12 * D  # two (V, D) matrices

# %% [markdown]
# ## 7. Training on nine sentence pairs
#
# The smallest corpus the project has, its `seed` preset
# ([`corpora/numbers.py`](../seq2seq/corpora/numbers.py), `SEED_PAIRS`), is nine pairs from "one is
# one" -> "1 la 1" to "nine is nine" -> "9 la 9". A model that has learnt them writes the
# number word as its digit, twice, with "la" in the middle.
#
# Sentences become token ids with a sentencepiece vocabulary per language
# ([`tokens/vocab.py`](../seq2seq/tokens/vocab.py); here one token per word), with the special ids
# PAD 0, UNK 1, BOS 2 and EOS 3. Each pair then gives three sequences
# ([`tokens/batching.py`](../seq2seq/tokens/batching.py); tests:
# [`tests/tokens/test_vocab_and_batching.py`](../tests/tokens/test_vocab_and_batching.py)):
#
#     source          three is three EOS     what the encoder reads
#     decoder input   BOS   3  la  3         what the decoder reads
#     decoder output  3     la 3   EOS       what it must predict: its input, one step ahead

# %%
section("7. Training on nine sentence pairs")
sources = [s for s, _ in numbers.SEED_PAIRS]  # "one is one", ...
targets = [t for _, t in numbers.SEED_PAIRS]  # "1 la 1", ...
src_vocab = train_vocab(sources, 64, VocabConfig())  # a small corpus gets fewer pieces
tgt_vocab = train_vocab(targets, 64, VocabConfig())
src_pieces, tgt_pieces = src_vocab.encode(sources), tgt_vocab.encode(targets)

src, tgt_in, tgt_out = pair_tensors(src_pieces, tgt_pieces)  # (9, 4), (9, 4), (9, 4)
print("vocabularies:", len(src_vocab), "and", len(tgt_vocab), "pieces")
print("source        ", src_vocab.pieces(src[2].tolist()))
print("decoder input ", tgt_vocab.pieces(tgt_in[2].tolist()))
print("decoder output", tgt_vocab.pieces(tgt_out[2].tolist()))
assert src.shape == tgt_in.shape == tgt_out.shape == (9, 4)
assert torch.equal(tgt_in[:, 1:], tgt_out[:, :-1])  # the same tokens, shifted by one

# %% [markdown]
# The loss is the cross-entropy of the right next token at each target position, averaged
# over the real tokens (`ignore_index=PAD`: padding would not count; these nine sentences
# have none). AdamW with a constant learning rate does the rest; `make_optimizer`
# ([`training/optimizer.py`](../seq2seq/training/optimizer.py)) leaves the biases and the
# LayerNorm gains out of the weight decay. The real training loop
# ([`train.py`](../seq2seq/train.py)) adds batching by token count, a learning-rate
# schedule, gradient clipping, validation and checkpoints; its tests are
# [`tests/test_train.py`](../tests/test_train.py).

# %%
torch.manual_seed(0)
small = ModelConfig(d_model=32, n_heads=2, enc_layers=1, dec_layers=1, d_ff=64, dropout=0.0)
model = Transformer(small, len(src_vocab), len(tgt_vocab), pad_id=PAD)
optimizer = make_optimizer(model, TrainConfig(lr=0.01))
print(f"{model.num_parameters():,} parameters")

model.train()
for step in range(1, 101):
    logits = model(src, tgt_in)  # (9, 4, V): a guess for every next token at once
    loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step == 1 or step % 20 == 0:
        print(f"step {step:3d}  loss {loss.item():.4f}")
model.eval()

assert loss.item() < 0.05, loss.item()  # 5.1 at the first step
with torch.no_grad():  # the loss the project's training computes, without label smoothing
    assert_close(
        batch_loss(model, (src, tgt_in, tgt_out), 0.0),
        F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten(), ignore_index=PAD),
    )

# %% [markdown]
# ## 8. Greedy decoding
#
# In training, the decoder saw the right target. To translate, it has only what it has
# produced so far: start with BOS, take the most probable next token, append it, and run
# the decoder again, until every sentence has produced EOS. The encoder runs once.
# PAD and BOS are never a valid output, so their logits are set to -inf first.
# Code: [`decoding/greedy.py`](../seq2seq/decoding/greedy.py); tests:
# [`tests/decoding/test_decode.py`](../tests/decoding/test_decode.py).

# %%
section("8. Greedy decoding")
with torch.no_grad():
    memory, src_mask = model.encode(src)  # (9, 4, 32), (9, 1, 1, 4): once
    forbidden = non_output_logits(memory, len(tgt_vocab))  # (V,): -inf at PAD and BOS
    ys = torch.full((9, 1), BOS)  # (9, 1): every translation starts with BOS
    while not (ys == EOS).any(dim=1).all() and ys.size(1) < 10:
        logits = model.decode(ys, memory, src_mask)  # (9, t, V): the whole prefix again
        next_token = (logits[:, -1] + forbidden).argmax(dim=-1)  # (9,): the last position's
        ys = torch.cat([ys, next_token[:, None]], dim=1)  # (9, t + 1)
        print(f"step {ys.size(1) - 1}:", tgt_vocab.pieces(ys[2].tolist()))  # "three is three"

step_by_step = strip(ys[:, 1:])  # each cut at its EOS
print("all nine:", tgt_vocab.detokenize(step_by_step))
assert tgt_vocab.detokenize(step_by_step) == targets

# %% [markdown]
# Step t of that loop runs the decoder over all t tokens of the prefix again, although the
# keys and values of the earlier ones have not changed (the no-peek mask guarantees it: a
# position never sees what came after it). The **key/value cache**
# ([`model/kv_cache.py`](../seq2seq/model/kv_cache.py)) keeps them: each step feeds only the newest
# token, (9, 1), each self-attention appends that token's key and value to the cached ones,
# (9, H, t, Dh), and each cross-attention computes the memory's keys and values once, at the
# first step. No mask is needed: the new token may see every earlier position, and there are
# no later ones yet.

# %%
with torch.no_grad():
    cache = DecoderCache.empty(len(model.decoder))
    token = torch.full((9, 1), BOS)  # (9, 1): only the newest token goes in
    cached = []
    for _ in range(ys.size(1) - 1):
        logits = model.decode(token, memory, src_mask, cache)  # (9, 1, V)
        token = (logits[:, -1] + forbidden).argmax(dim=-1, keepdim=True)  # (9, 1)
        cached.append(token)
        self_keys = cache.layers[0].self_attn.keys  # (9, H, positions so far, Dh)
        print("cached self-attention keys", tuple(self_keys.shape))

assert strip(torch.cat(cached, dim=1)) == step_by_step
assert tuple(cache.layers[0].cross_attn.keys.shape) == (9, 2, 4, 16)  # (9, H, S, Dh), once

# %% [markdown]
# The project's decoder, `greedy_decode_cached`, is this loop, and also lets finished
# sentences leave the batch and stops each at a length limit; `translate` wraps it for raw
# text: encode, batch by length, decode, detokenize. Both give the nine translations.

# %%
limits = max_lengths(model, src, DecodeConfig())  # (9,): the longest output allowed
assert greedy_decode_cached(model, src, limits).ids == step_by_step
translations = translate_sentences(model, src_vocab, tgt_vocab, sources, DecodeConfig())
for source, translation in zip(sources, translations, strict=True):
    print(f"{source:15} -> {translation}")
assert translations == targets
