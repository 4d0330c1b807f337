"""The typed config: config.yaml documents every option, and mistakes name the key."""

import dataclasses
import re
import typing

import pytest
import yaml

from seq2seq import data
from seq2seq.config import Config, ConfigError, config_from_dict, is_override, load_config
from seq2seq.config_docs import options, sections

from helpers import ROOT


def test_config_yaml_sets_every_option_to_its_documented_default():
    raw = yaml.safe_load((ROOT / "config.yaml").read_text())
    defaults = Config().to_dict()
    # The departures from the defaults: number words are normalised (real text keeps case),
    # and share one vocabulary with the digits (what an Argos package holds: export argos); the
    # run keeps its last five validations' models and tries their average (train.average_last);
    # its small model trains faster in fp32, even where the CPU computes bf16
    # (docs/training-speed.md).
    defaults["vocab"].update(lowercase=True, hyphens_as_spaces=True, joint=True)
    defaults["train"].update(average_last=5, precision="fp32")
    for section, values in defaults.items():
        if not isinstance(values, dict):
            assert raw[section] == values, section
            continue
        for key, value in values.items():
            if value is None:  # parallel-corpus paths: documented in a comment
                continue
            assert raw[section][key] == value, f"{section}.{key}"
    assert load_config(ROOT / "config.yaml").to_dict() == defaults


def test_every_config_file_in_the_repository_is_valid():
    paths = sorted((ROOT / "configs").glob("*.yaml"))
    assert paths  # the recipes are there to check
    for path in paths:
        load_config(path)  # a ConfigError names the file and the key


def test_unknown_key_names_the_key_and_the_nearest_valid_one():
    with pytest.raises(
        ConfigError, match=r"unknown key 'model\.d_modle' \(did you mean 'model\.d_model'\?\)"
    ):
        config_from_dict({"model": {"d_modle": 64}})
    with pytest.raises(ConfigError, match=r"unknown key 'trian'.*'train'"):
        config_from_dict({"trian": {}})


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"model": {"d_model": "big"}}, r"'model\.d_model' must be int, got 'big'"),
        ({"train": {"lr": True}}, r"'train\.lr' must be float"),
        ({"model": {"attention": "flash"}}, r"'model\.attention' is 'flash'; choose one of"),
        ({"model": {"d_model": 30, "n_heads": 4}}, r"divisible by 'model\.n_heads'"),
        (
            {"model": {"share_embeddings": True}},
            r"'model\.share_embeddings: true' needs 'vocab\.joint: true' \(one vocabulary",
        ),
        ({"corpus": {"type": "parallel"}}, r"'corpus\.train' .* is needed"),
        ({"corpus": {"train": {"src": "a", "tgt": "b"}}}, r"only used with corpus\.type: parallel"),
        ({"model": 3}, r"model must be a mapping"),
        ({"decode": {"beam_size": 0}}, r"'decode\.beam_size' must be at least 1"),
        ({"corpus": {"valid_size": 900, "test_size": 1000}}, r"holds out at most 1,800"),
        ({"serve": {"port": 70000}}, r"'serve\.port' must be in \[0, 65535\]"),
        ({"serve": {"host": " "}}, r"'serve\.host' must not be empty"),
        ({"serve": {"url_prefix": "api"}}, r"'serve\.url_prefix' must be empty or a path"),
        ({"serve": {"url_prefix": "/api/"}}, r"'serve\.url_prefix' must be empty or a path"),
        ({"serve": {"url_prefix": "/"}}, r"'serve\.url_prefix' must be empty or a path"),
        ({"serve": {"url_prefix": "/{x}"}}, r"'serve\.url_prefix' must be empty or a path"),
        ({"serve": {"max_chars": 0}}, r"'serve\.max_chars' must be at least 1"),
        ({"serve": {"batch_window_ms": -1}}, r"'serve\.batch_window_ms' must be >= 0"),
        (
            {"serve": {"max_sentences": 100, "max_batch_sentences": 10}},
            r"'serve\.max_batch_sentences' \(10\) must be at least 'serve\.max_sentences' \(100\)",
        ),
        ({"serve": {"allowed_hosts": "a.example"}}, r"'serve\.allowed_hosts' must be a list"),
        ({"serve": {"allowed_hosts": ["a", 1]}}, r"'serve\.allowed_hosts\[1\]' must be str"),
        ({"serve": {"timeout_s": 0}}, r"'serve\.timeout_s' must be positive"),
        ({"serve": {"max_connections": 0}}, r"'serve\.max_connections' must be at least 1"),
        (
            {"serve": {"max_sentences": 100, "max_queue_work": 10}},
            r"'serve\.max_queue_work' \(10\) must be at least 'serve\.max_sentences' x",
        ),
        (
            {"serve": {"max_beam": 4}},
            r"unknown key 'serve\.max_beam' \(did you mean 'serve\.max_beam_size'",
        ),
    ],
)
def test_wrong_values_are_errors_that_name_the_key(raw, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(raw)


def test_integers_are_accepted_for_float_options():
    assert config_from_dict({"train": {"lr": 1}}).train.lr == 1.0


def test_lists_are_read_item_by_item():
    serve = config_from_dict({"serve": {"allowed_hosts": ["a.example", "b.example"]}}).serve
    assert serve.allowed_hosts == ["a.example", "b.example"]


def test_command_line_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("train:\n  max_steps: 10\n")
    config = load_config(path, ["train.max_steps=200", "train.lr=1e-3", "model.attention=math"])
    assert (config.train.max_steps, config.train.lr, config.model.attention) == (200, 1e-3, "math")
    with pytest.raises(ConfigError, match="not of the form"):
        load_config(path, ["train.max_steps"])


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.max_step=5", "unknown key 'train.max_step' (did you mean 'train.max_steps'?)"),
        ("train.lr=big", "'train.lr' must be float, got 'big'"),
        ("train.lr=-1", "'train.lr' must be positive, got -1.0"),
        ("train.lr=inf", "'train.lr' must be a finite number, got inf"),
        ("decode.length_penalty=.nan", "'decode.length_penalty' must be a finite number, got nan"),
        ("experiment=../../x", "'experiment' names the folder runs/<experiment>/: a name, not a "
         "path, got '../../x'"),
        ("corpus.name=/abs/path", "'corpus.name' names the folder data/<corpus.name>/: a name, "
         "not a path, got '/abs/path'"),
    ],
)  # fmt: skip
def test_a_wrong_override_is_an_error_naming_the_override_not_the_file(override, message):
    with pytest.raises(ConfigError) as error:
        load_config(ROOT / "configs/seed.yaml", [override])
    assert str(error.value) == f"override {override}: {message}"


@pytest.mark.parametrize("experiment", ["../x", "/abs/path", "a/b", "..", ""])
def test_a_folder_name_in_a_file_is_a_name_not_a_path(experiment):
    with pytest.raises(ConfigError, match=r"'experiment' names the folder runs/<experiment>/"):
        config_from_dict({"experiment": experiment})


def test_non_finite_numbers_in_a_file_are_refused():
    with pytest.raises(ConfigError, match=r"'train\.clip_norm' must be a finite number, got inf"):
        config_from_dict({"train": {"clip_norm": float("inf")}})


@pytest.mark.parametrize(
    "text, expected",
    [("experiment=bt", True), ("decode.beam_size=4", True), ("corpus.train.src=a", True),
     ("seven is seven", False), ("x=5", False), ("train.nope=1", False), ("a = b", False)],
)  # fmt: skip
def test_is_override_knows_the_config_options(text, expected):
    assert is_override(text) is expected


def test_missing_or_broken_config_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_config(bad)


def test_config_round_trips_through_a_dict():
    config = config_from_dict(
        {
            "corpus": {
                "type": "parallel",
                "name": "mine",
                **{
                    split: {"src": f"{split}.de", "tgt": f"{split}.en"}
                    for split in ("train", "valid", "test")
                },
            }
        }
    )
    assert config_from_dict(dataclasses.asdict(config)) == config


def test_options_may_come_before_or_after_the_overrides(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text((ROOT / "configs/seed.yaml").read_text())
    data.main(["corpus.name=early", "--config", "config.yaml", "experiment=late"])
    assert (tmp_path / "data/early/train.src").exists()


def test_a_config_file_overrides_its_base_section_by_section(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "base.yaml").write_text("experiment: a\ntrain:\n  lr: 0.5\n  max_steps: 10\n")
    (tmp_path / "configs/mid.yaml").write_text("base: ../base.yaml\ntrain:\n  max_steps: 20\n")
    (tmp_path / "configs/top.yaml").write_text("base: mid.yaml\nmodel:\n  d_model: 32\n")
    config = load_config(tmp_path / "configs/top.yaml", ["train.lr=0.25"])
    assert config.experiment == "a" and config.model.d_model == 32
    assert (config.train.max_steps, config.train.lr) == (20, 0.25)  # mid's, then the override's
    assert config.train.warmup_steps == Config().train.warmup_steps  # set by no file


def test_a_config_files_paths_are_relative_to_it_and_an_overrides_to_the_working_directory(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "shared").mkdir()
    (tmp_path / "pairs").mkdir()
    (tmp_path / "shared/base.yaml").write_text(
        "train: {init_from: ../runs/other/best.pt}\nserve: {api_keys: keys.txt}\n"
    )
    (tmp_path / "pairs/mine.yaml").write_text(
        "base: ../shared/base.yaml\n"
        "corpus:\n  type: sources\n  name: mine\n  src_lang: de\n  tgt_lang: en\n"
        "  train_sources: [{file: mine.tsv}, {file: /data/big.tsv}, {opus: Tatoeba}]\n"
        "  test_source: {file: 'test.{lang}'}\n"
    )
    config = load_config("pairs/mine.yaml")
    corpus = config.corpus
    assert [s.file for s in corpus.train_sources] == ["pairs/mine.tsv", "/data/big.tsv", None]
    assert corpus.test_source.file == "pairs/test.{lang}" and corpus.valid_source is None
    assert config.train.init_from == "runs/other/best.pt"
    assert config.serve.api_keys == "shared/keys.txt"
    config = load_config("pairs/mine.yaml", ["train.init_from=here.pt", "serve.api_keys=env:K"])
    assert (config.train.init_from, config.serve.api_keys) == ("here.pt", "env:K")
    parallel = tmp_path / "pairs/parallel.yaml"
    parallel.write_text(
        "corpus:\n  type: parallel\n  name: p\n  train: {src: a.de, tgt: a.en}\n"
        "  valid: {tsv: v.tsv}\n"
    )
    corpus = load_config(parallel).corpus
    assert (corpus.train.src, corpus.train.tgt) == (
        f"{tmp_path}/pairs/a.de",
        f"{tmp_path}/pairs/a.en",
    )
    assert corpus.valid.tsv == f"{tmp_path}/pairs/v.tsv"


def test_the_gpu_recipes_change_only_training_and_decoding_of_their_base():
    for gpu, cpu in [("numbers_gpu", "../config"), ("multi30k_de_en_gpu", "multi30k_de_en")]:
        gpu_config = load_config(ROOT / f"configs/{gpu}.yaml").to_dict()
        cpu_config = load_config(ROOT / f"configs/{cpu}.yaml").to_dict()
        for section in ("corpus", "vocab", "model"):  # the same data and model as on the CPU
            assert gpu_config[section] == cpu_config[section], (gpu, section)
        assert gpu_config["train"]["batch_tokens"] > cpu_config["train"]["batch_tokens"]


@pytest.mark.parametrize(
    "files, message",
    [
        ({"top.yaml": "base: gone.yaml\n"}, r"top\.yaml: the base config file .*gone\.yaml is not"),
        ({"top.yaml": "base: top.yaml\n"}, r"top\.yaml: 'base: top\.yaml' makes a cycle"),
        (
            {"top.yaml": "base: b.yaml\n", "b.yaml": "base: top.yaml\n"},
            r"b\.yaml: 'base: top\.yaml' makes a cycle",
        ),
        ({"top.yaml": "base: 3\n"}, r"top\.yaml: 'base' must be the path of another config file"),
        (
            {"top.yaml": "base: b.yaml\n", "b.yaml": "train:\n  max_step: 3\n"},
            r"b\.yaml: unknown key 'train\.max_step'",  # the file the mistake is in
        ),
    ],
)
def test_a_missing_base_or_a_cycle_is_an_error_naming_the_file(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path / "top.yaml")


def test_every_numeric_option_out_of_range_is_an_error_that_names_it():
    for section, cls in sections():
        hints = typing.get_type_hints(cls)
        for option in options(cls):
            key = f"{section}.{option.name}"
            if hints[option.name] not in (int, float) or key in ("corpus.seed", "train.seed"):
                continue  # any seed will do
            with pytest.raises(ConfigError, match=f"'{re.escape(key)}' must be"):
                config_from_dict({section: {option.name: -1}})
