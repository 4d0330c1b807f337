"""OpenNMT-py 3.5.1, the trainer of every Argos Translate package (argos-train, Locomotive), run
in its own Python (benchmarks/README.md has the settings and workarounds): its YAML from ours,
`onmt_train` for the budget with a checkpoint at every validation (timed by when each file
appears), then opennmt_driver.py decodes the valid split with each checkpoint (scored
here, for the curve) and the test split with the best one, timed, beside `onmt_translate`.

    our config + <run>/pieces/ --opennmt_config--> train.yaml --onmt_train--> model_step_<N>.pt
    model_step_<N>.pt --driver, valid--> curve --best--> test: driver and onmt_translate
"""

import signal
from pathlib import Path

from benchmarks.common import ROOT, WARMUP_SENTENCES, run, run_json
from benchmarks.peers import measure
from seq2seq.config import Config
from seq2seq.support.errors import UserError

ONMT_PYTHON = ROOT / "benchmarks/.venv-opennmt/bin/python"  # installed by make bench-peers
DRIVER = Path(__file__).with_name("opennmt_driver.py")  # run by OpenNMT-py's Python
# OpenNMT-py 3.5.1 pickles its options into its checkpoints: torch >= 2.6 loads them only with
# weights_only off, which this variable turns on for its processes (their own files only).
ENV = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}


def opennmt_config(config: Config, pieces: Path, model_dir: Path, eval_every: int) -> dict:
    """OpenNMT-py 3.5.1's training YAML (as a dict): the same pieces and vocabulary, model and,
    where it has them, training settings as `config`."""
    m, t, data = config.model, config.train, pieces.resolve()
    # noam: lr x d_model^-0.5 x min(step^-0.5, step x warmup^-1.5), at its peak ours
    peak_factor = m.d_model**-0.5 * t.warmup_steps**-0.5
    return {
        # data, checkpoints
        "src_vocab": str(data / "vocab.src"), "tgt_vocab": str(data / "vocab.tgt"),
        "share_vocab": config.vocab.joint,
        "data": {
            "corpus_1": {"path_src": str(data / "train.src"), "path_tgt": str(data / "train.tgt")},
            "valid": {"path_src": str(data / "valid.src"), "path_tgt": str(data / "valid.tgt")},
        },
        "save_model": str(model_dir.resolve() / "model"), "save_checkpoint_steps": eval_every,
        "keep_checkpoint": -1, "valid_steps": eval_every, "train_steps": t.max_steps,
        "seed": t.seed, "gpu_ranks": [0] if t.device == "cuda" else [],
        # model
        "encoder_type": "transformer", "decoder_type": "transformer",
        "enc_layers": m.enc_layers, "dec_layers": m.dec_layers, "hidden_size": m.d_model,
        "word_vec_size": m.d_model, "heads": m.n_heads, "transformer_ff": m.d_ff,
        "dropout": [m.dropout], "attention_dropout": [m.attention_dropout],
        "position_encoding": True, "share_embeddings": m.share_embeddings,
        "share_decoder_embeddings": m.tie_embeddings, "param_init": 0.0, "param_init_glorot": True,
        # optimizer, batches
        "optim": "adam", "adam_beta2": 0.98, "decay_method": "noam",
        "learning_rate": t.lr / peak_factor, "warmup_steps": t.warmup_steps,
        "label_smoothing": t.label_smoothing, "max_grad_norm": t.clip_norm, "batch_type": "tokens",
        "batch_size": t.batch_tokens // 2,  # it counts the longer side of a pair, we both
        "valid_batch_size": t.batch_tokens // 2, "accum_count": [t.accumulate],
        "normalization": "tokens",
        "bucket_size": 32768,  # its default, 262,144 pairs, is read before the first step
        "report_every": 50, "overwrite": True,
    }  # fmt: skip


def train_opennmt(args, model_dir: Path, config_path: Path) -> tuple[dict, float, float]:
    """`onmt_train` for the budget (SIGTERM: it stops), checkpoints timed by when each file
    appears. -> ({step: wall seconds}, wall seconds, peak RSS in MiB)."""
    log = config_path.parent / "logs/opennmt-train.log"
    command = [args.opennmt_python, "-m", "onmt.bin.train", "-config", str(config_path)]
    poll, appeared = measure.appearing(model_dir, "model_step_*.pt", checkpoint_step)
    for old in model_dir.glob("model_step_*.pt") if model_dir.is_dir() else ():
        old.unlink()  # no checkpoint of an earlier run
    stopped = (0, -signal.SIGTERM, 128 + signal.SIGTERM)
    ran = run(command, log=log, env=ENV, budget=args.budget, on_poll=poll, allowed=stopped)
    if not appeared:
        raise UserError(f"OpenNMT-py saved no checkpoint within {args.budget:.0f} s (see {log})")
    return appeared, ran.seconds, ran.peak_mib


def opennmt_curve(args, model_dir: Path, appeared: dict, valid, max_length: int) -> list[dict]:
    """Each checkpoint's greedy translation of the valid pieces (`valid.source`), scored by
    `valid` (a Scoring), at the wall time its file appeared."""
    paths = {step: str(model_dir / f"model_step_{step}.pt") for step in sorted(appeared)}
    logs = model_dir.parent / "logs"
    timed = drive(args, list(paths.values()), valid.source, "64", 0, max_length, logs / "valid")
    return [
        {
            "wall_s": appeared[step],
            "step": step,
            f"valid_{valid.metric}": valid.score(timed[path]["64"]["hypotheses"]),
        }
        for step, path in paths.items()
    ]


def checkpoint_step(path: Path) -> int:
    return int(path.stem.rsplit("_", 1)[1])  # model_step_<N>.pt


def keep_only_checkpoint(model_dir: Path, step: int) -> None:
    """Delete every checkpoint but that of `step`."""
    for path in model_dir.glob("model_step_*.pt"):
        if path.stem != f"model_step_{step}":
            path.unlink()


def decode_opennmt(args, model_dir: Path, step: int, test, max_length: int) -> dict:
    """`onmt_translate` on the test pieces (`test.source`) at each batch size, then the driver,
    which times the decoding alone, with the checkpoint of `step`."""
    checkpoint, logs = str(model_dir / f"model_step_{step}.pt"), model_dir.parent / "logs"

    def command(size: int) -> list[str]:
        return [args.opennmt_python, "-m", "onmt.bin.translate", "-model", checkpoint,
                "-src", "/dev/stdin", "-output", "{output}", "-gpu", "-1", "-beam_size", "1",
                "-batch_size", str(size), "-max_length", str(max_length)]  # fmt: skip

    def timed() -> dict:
        sizes = ",".join(str(size) for size in measure.BATCH_SIZES)
        got = drive(args, [checkpoint], test.source, sizes, WARMUP_SENTENCES, max_length,
                    logs / "test")  # fmt: skip
        return {**got, **got[checkpoint]}

    return test.decoding(command, logs / "opennmt", timed, ENV)


def drive(args, checkpoints: list[str], source: Path, sizes: str, warmup: int, max_length: int,
          stem: Path) -> dict:  # fmt: skip
    """opennmt_driver.py in OpenNMT-py's Python: its JSON."""
    command = [args.opennmt_python, str(DRIVER), str(source), str(warmup), sizes]
    command += [str(max_length), *checkpoints]
    log = stem.with_name(f"opennmt-driver-{stem.name}.log")
    return run_json(command, log=log, env=ENV)


def run_opennmt(args, config_path: Path, valid, test, max_length: int) -> dict:
    """Train, score the curve, decode with the best checkpoint: OpenNMT-py's figures."""
    model_dir = config_path.parent / "model"
    appeared, wall, peak = train_opennmt(args, model_dir, config_path)
    curve = opennmt_curve(args, model_dir, appeared, valid, max_length)
    figures = measure.curve_figures(curve, wall, peak, valid.metric)
    keep_only_checkpoint(model_dir, figures["best_step"])
    decoded = decode_opennmt(args, model_dir, figures["best_step"], test, max_length)
    return {**figures, "decoded_step": figures["best_step"], "curve": curve, **decoded}
