"""The options' documentation, from its one source: the comments beside each field of the
dataclasses in seq2seq/options.py and seq2seq/serve_options.py (a comment above a field, one
beside it, or both), and the range in its type (`Annotated[int, "at least 1"]`).

    python -m seq2seq.config_docs           # check that the two files below are up to date
    python -m seq2seq.config_docs --write   # write them (make config-docs)

From those comments it writes:

    config.yaml               the default experiment, its values with each option's comment
    docs/configuration.md     the reference: every option, its type, default and meaning

so that an option is described once, where it is typed and its range given;
tests/test_config_docs.py fails when either file is out of date, or when a field has no
comment.
"""

import argparse
import ast
import dataclasses
import inspect
import io
import sys
import textwrap
import tokenize
import typing
from pathlib import Path

import yaml

from seq2seq.config import DEFAULT_CONFIG, Config, load_config
from seq2seq.support.files import atomic_write

REFERENCE = Path("docs/configuration.md")
COMMENT_COLUMN = 31  # where config.yaml's comments beside a value start

YAML_HEADER = """\
# The default experiment: English number words to digits ("twenty one is five" -> "2 1 la 5").
# Every command reads this file; override any value on the command line, e.g.
#   python -m seq2seq.train train.max_steps=200 model.d_model=64
# A relative path in a config file is relative to that file (on the command line, to the
# working directory); data/ and runs/ are in the directory the commands run from.
# Another config may start from this one: `base: ../config.yaml` takes every key from here,
# and its own keys override them, section by section.
# Written by `make config-docs` from the comments in seq2seq/options.py (serve: in
# seq2seq/serve_options.py): edit them there.
"""


@dataclasses.dataclass
class Option:
    name: str
    type: str  # as written in options.py, without its range
    range: str  # "at least 1" (seq2seq/config.py checks it), or ""
    above: list[str]  # the comment lines above the field
    beside: str  # the comment on the field's line

    @property
    def text(self) -> str:
        return " ".join([*self.above, self.beside]).strip()


def options(cls) -> list[Option]:
    """The fields of a config dataclass with their comments, read from its source; a class
    made of others (ServeConfig, of its concerns), theirs, in its fields' order."""
    bases = [base for base in reversed(cls.__mro__[1:]) if dataclasses.is_dataclass(base)]
    return [option for base in [*bases, cls] for option in own_options(base)]


def own_options(cls) -> list[Option]:
    """The fields a config dataclass declares itself, with their comments."""
    source = textwrap.dedent(inspect.getsource(cls))
    comments = {
        token.start[0]: token.string.lstrip("#").strip()
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    lines = source.splitlines()
    result = []
    for node in ast.parse(source).body[0].body:
        if not isinstance(node, ast.AnnAssign):
            continue
        above, line = [], node.lineno - 1
        while line >= 1 and lines[line - 1].strip().startswith("#"):
            above.insert(0, comments[line])
            line -= 1
        annotation, range_ = node.annotation, ""
        if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) == "Annotated":
            annotation, limits = annotation.slice.elts
            range_ = limits.value
        type_text = ast.get_source_segment(source, annotation)
        beside = comments.get(node.lineno, "")
        result.append(Option(node.target.id, type_text, range_, above, beside))
    return result


def sections() -> list[tuple[str, type]]:
    """(name, dataclass) of each section of Config."""
    hints = typing.get_type_hints(Config)
    return [(f.name, hints[f.name]) for f in dataclasses.fields(Config) if f.name in SECTIONS]


SECTIONS = ("corpus", "clean", "vocab", "model", "train", "decode", "serve")


def list_entries(cls) -> list[tuple[str, type]]:
    """(name, dataclass) of each option of `cls` that is a list of dataclasses (each entry's
    options get a table of their own in the reference)."""
    hints = typing.get_type_hints(cls)
    return [
        (name, typing.get_args(hint)[0])
        for name, hint in hints.items()
        if typing.get_origin(hint) is list and dataclasses.is_dataclass(typing.get_args(hint)[0])
    ]


def summary(cls) -> str:
    return " ".join(inspect.getdoc(cls).split("\n\n")[0].split())


def yaml_value(value) -> str:
    """A value as config.yaml writes it: plain scalars, flow style for lists and mappings."""
    if dataclasses.is_dataclass(value):
        value = {k: v for k, v in dataclasses.asdict(value).items() if v is not None}
    text = yaml.safe_dump(value, default_flow_style=True, width=1000, allow_unicode=True)
    return text.removesuffix("\n").removesuffix("\n...")


def yaml_lines(option: Option, value, indent: str) -> list[str]:
    lines = [f"{indent}# {line}" for line in option.above]
    entry = f"{indent}{option.name}: {yaml_value(value)}"
    if option.beside:
        entry = f"{entry.ljust(COMMENT_COLUMN - 1)} # {option.beside}"
    return [*lines, entry]


def render_yaml(config: Config) -> str:
    """config.yaml for `config`: its values, each option's comment beside or above it."""
    top = {option.name: option for option in options(Config)}
    lines = [YAML_HEADER, *yaml_lines(top["experiment"], config.experiment, "")]
    for name, cls in sections():
        lines += ["", f"# {summary(cls)}", f"{name}:"]
        for option in options(cls):
            lines += yaml_lines(option, getattr(getattr(config, name), option.name), "  ")
    return "\n".join(lines) + "\n"


def markdown_cell(text: str) -> str:
    """Text in a table cell: | would end the cell, and <name> would be taken for HTML."""
    return text.replace("|", "\\|").replace("<", "&lt;")


def render_reference() -> str:
    """docs/configuration.md: every option of every section."""
    defaults = Config()
    lines = [
        "# Configuration reference",
        "",
        "Every command reads a YAML config (`config.yaml` by default, `--config FILE` for another)."
        " `data`, `train`, `evaluate` and `serve` also take overrides such as"
        " `train.max_steps=200` (`translate` reads its config from the checkpoint and refuses"
        " them, saying which options it takes). An unknown key, a value of the wrong type, out of"
        " range or not finite is an error that names it and the file or override it is in."
        " `experiment` and `corpus.name` are folder names, not paths. A config may start from"
        " another with `base: other.yaml`. A relative path in a config file (`base:`, a corpus's"
        " files, `train.init_from`, `serve.api_keys`) is relative to the folder of that file;"
        " in an override on the command line, to the working directory; `data/` and `runs/`"
        " are in the directory the commands run from. Written by `make config-docs` from the"
        " comments in `seq2seq/options.py` (the model's: `seq2seq/model/config.py`; the"
        " service's: `seq2seq/serve_options.py`).",
    ]
    experiment = options(Config)[0]
    lines += ["", f"`{experiment.name}` ({experiment.type}, default `{defaults.experiment}`):"]
    lines += [f"{markdown_cell(experiment.text)}."]
    for name, cls in sections():
        lines += ["", f"## {name}", "", summary(cls), ""]
        lines += option_table(cls, getattr(defaults, name), name)
        for field, entry in list_entries(cls):
            lines += ["", f"Each entry of `{name}.{field}`: {summary(entry)}", ""]
            lines += option_table(entry, entry(), f"{name}.{field}[]")
    return "\n".join(lines) + "\n"


def option_table(cls, defaults, prefix: str) -> list[str]:
    """A Markdown table of the options of the dataclass `cls`: name, type, default, meaning."""
    lines = ["| option | type | default | meaning |", "| --- | --- | --- | --- |"]
    for option in options(cls):
        default = yaml_value(getattr(defaults, option.name))
        type_cell = f"`{option.type}`" + (f", {option.range}" if option.range else "")
        cells = [f"`{prefix}.{option.name}`", type_cell, f"`{default}`", option.text]
        lines.append("| " + " | ".join(markdown_cell(c) for c in cells) + " |")
    return lines


def generated() -> dict[Path, str]:
    """What each generated file should hold (run from the repository root)."""
    return {
        Path(DEFAULT_CONFIG): render_yaml(load_config(DEFAULT_CONFIG)),
        REFERENCE: render_reference(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the files")
    args = parser.parse_args(argv)
    files = generated()
    if args.write:
        for path, text in files.items():
            with atomic_write(path) as file:
                file.write(text)
        print(f"wrote {', '.join(map(str, files))}")
        return
    stale = [path for path, text in files.items() if not path.exists() or path.read_text() != text]
    if stale:
        sys.exit(f"out of date: {', '.join(map(str, stale))}: run `make config-docs`")


if __name__ == "__main__":
    main()
