"""seq2seq/exports/layer_names.py, the table every export and the import walk, names each
weight of our Transformer once: no more, no fewer than its state_dict holds."""

from seq2seq.exports.layer_names import GENERATOR, stacks
from seq2seq.model.config import ModelConfig
from seq2seq.model.transformer import Transformer


def test_the_table_names_every_weight_of_our_model_once():
    cfg = ModelConfig(d_model=16, n_heads=2, enc_layers=2, dec_layers=3, d_ff=32,
                      embedding_norm=True, output_bias=True)  # fmt: skip
    named = [f"{GENERATOR}.weight", f"{GENERATOR}.bias"]
    for stack in stacks(cfg):
        layers = [n for layer in stack.layers for p in layer for n in (p.norm, p.into, p.out_of)]
        for name in [f"{stack.embed}.norm", stack.norm, *layers]:
            named += [f"{name}.weight", f"{name}.bias"]
        named.append(f"{stack.embed}.tokens.weight")
    assert len(named) == len(set(named))
    assert set(named) == set(Transformer(cfg, 11, 13, pad_id=0).state_dict())
    decoder = stacks(cfg)[1].layers
    assert [part.kind for part in decoder[0]] == ["self_attn", "cross_attn", "ff"]
    assert decoder[2][1].norm == "decoder.2.norm2" and decoder[2][2].out_of == "decoder.2.ff.net.2"
