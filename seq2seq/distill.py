"""Sequence-level knowledge distillation data (Kim and Rush, 2016): a teacher's own
translations of its training sources, a parallel corpus for a student's config to read as a
file source (configs/standin_en_de_student.yaml; docs/distill.md).

    python -m seq2seq.distill --config configs/standin_en_de.yaml [MORE.txt ...]
      sources: data/<teacher's corpus>/train.src (its training sources, as `make data` kept
               them), then each file given (one sentence a line, the source language)
      --> the teacher (translate's engine: CTranslate2 on the export beside its best.pt, in
          the compute type measured fastest at its score), beam 4, each line as the teacher
          was trained on it: whole, its placeholders (%s, {0}, &amp;) as text
      --> OUT/train.<src> (the sources, in order), OUT/train.<tgt> (their translations)
          OUT: --out, by default data/<teacher's corpus>_distilled/

The translations are appended to train.<tgt>.partial a chunk of decode.batch_size lines at a
time, with a progress bar; a stopped run resumes after the last whole line written (if the
sources are the same), and the finished file is renamed into place. Run again once done, it
does nothing.
"""

import sys
from pathlib import Path

from tqdm import tqdm

from seq2seq.config import DEFAULT_CONFIG, load_config
from seq2seq.decoding.engine_choice import (
    add_engine_arguments,
    compute_type_set,
    described,
    load_engine,
)
from seq2seq.support.errors import UserError, command_parser, run_cli
from seq2seq.support.files import atomic_write
from seq2seq.translate import chunks, translate_lines


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(argv)
    config = load_config(args.config)
    out = Path(args.out or f"{config.data_dir}_distilled")
    sources = [config.data_dir / "train.src", *map(Path, args.files)]
    if not sources[0].exists():
        raise UserError(f"{sources[0]} is not found: run {config.make_command('data')} first")
    src_file, tgt_file = (
        out / f"train.{lang}" for lang in (config.corpus.src_lang, config.corpus.tgt_lang)
    )
    partial = tgt_file.with_name(tgt_file.name + ".partial")
    lines = source_lines(sources)
    if not same_text(src_file, lines):
        with atomic_write(src_file) as file:
            file.writelines(line + "\n" for line in lines)
        partial.unlink(missing_ok=True)
        tgt_file.unlink(missing_ok=True)
    if tgt_file.exists():
        print(f"{tgt_file}: done", file=sys.stderr)
        return
    decode = {"beam_size": args.beam_size, "placeholders": "off", **compute_type_set(args)}
    engine = load_engine(config, args.checkpoint, args.engine, args.model, args.device, decode)
    print(f"decoding with {described(engine)}", file=sys.stderr, flush=True)
    translate_rest(engine, lines, partial)
    partial.rename(tgt_file)
    print(f"{src_file}, {tgt_file}: {len(lines):,} pairs", file=sys.stderr)


def translate_rest(engine, lines: list[str], partial: Path) -> None:
    """The translations of `lines` appended to `partial` after the whole lines it holds, a
    chunk at a time, each line translated whole."""
    done = whole_lines(partial)
    size = engine.config.decode.batch_size
    with (
        partial.open("a", encoding="utf-8") as file,
        tqdm(total=len(lines), initial=done, unit="line", desc=partial.name) as bar,
    ):
        for first, chunk in chunks(iter(lines[done:]), size):
            translations = translate_lines(engine, chunk, first_line=done + first)
            file.writelines(f"{line}\n" for line in translations)
            file.flush()
            bar.update(len(chunk))


def whole_lines(partial: Path) -> int:
    """How many whole lines `partial` holds (0 if it is missing); a torn last line, of a
    run stopped as it wrote, is cut off."""
    try:
        data = partial.read_bytes()
    except FileNotFoundError:
        return 0
    whole = data[: data.rfind(b"\n") + 1]
    if len(whole) < len(data):
        partial.write_bytes(whole)
    return whole.count(b"\n")


def source_lines(files: list[Path]) -> list[str]:
    """The lines of `files`, one after the other."""
    lines = []
    for path in files:
        try:
            lines += text_lines(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise UserError(f"cannot read {path}: {error.strerror}") from None
        except UnicodeDecodeError as error:
            raise UserError(f"cannot read {path}: not UTF-8 ({error.reason})") from None
    return lines


def text_lines(text: str) -> list[str]:
    """A file's lines, split at "\n" only (as translate reads them: a U+2028 is no line end)."""
    return text.removesuffix("\n").split("\n") if text else []


def same_text(path: Path, lines: list[str]) -> bool:
    """Whether the file at `path` holds exactly `lines`."""
    try:
        return text_lines(path.read_text(encoding="utf-8")) == lines
    except FileNotFoundError:
        return False


def parse_arguments(argv: list[str] | None):
    parser = command_parser(
        "seq2seq.distill",
        "A teacher's translations of its training sources (and of FILES): a parallel corpus.",
    )
    parser.add_argument("files", nargs="*", help="more source text, one sentence a line")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="the teacher's config (YAML)")
    parser.add_argument("--out", help="folder (default: data/<corpus>_distilled)")
    add_engine_arguments(parser)
    parser.add_argument("--beam-size", type=int, default=4, help="beams (1: greedy)")
    args = parser.parse_args(argv)
    if args.beam_size < 1:
        raise UserError("--beam-size must be at least 1")
    return args


if __name__ == "__main__":
    run_cli(main)
