# seq2seq: `make all` installs, builds the data, trains and evaluates; `make test` runs the tests.
# Pick another experiment with CONFIG=configs/xyz.yaml; pass overrides with ARGS="train.max_steps=200".

CONFIG ?= config.yaml
ARGS ?=

# The Python that runs every target: PYTHON=... if given; else that of the active virtual
# environment (VIRTUAL_ENV, or conda's CONDA_PREFIX); else the project's own .venv/, which make
# creates with BASE_PYTHON, since a system Python may refuse to install packages (PEP 668).
BASE_PYTHON ?= python3
VENV := .venv
ACTIVE_ENV := $(filter-out $(CURDIR)/$(VENV),$(or $(VIRTUAL_ENV),$(CONDA_PREFIX)))
ifneq ($(ACTIVE_ENV),)
PYTHON ?= $(ACTIVE_ENV)/bin/python
endif
ifdef PYTHON
STAMP := .installed
else
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MAKE_VENV := $(VENV)/bin/python
endif

.PHONY: all install data train train-ddp eval package serve test test-all bench bench-quick gpu-check \
	bench-train bench-validation bench-speed-quality bench-catalog-map bench-scale recipes bench-peers bench-serve bench-detect bench-models bench-swap bench-stores bench-pairs bench-files bench-profile bench-adapt-laptop bench-adapt-import bench-adapt-package standin student terms bench-terms bench-learn bench-adapt bench-confidence config-docs docs lint install-sizes clean distclean

all: install data train eval

# What each target installs: the core (pyproject.toml's dependencies: torch, pyyaml, tqdm,
# sentencepiece, sacrebleu, sentencex) for the main job and every target without more to say; an extra
# of pyproject.toml where a target needs more: dev (the tests' set, with every other extra)
# for test, lint and the benchmarks, serve for serve, docs for docs. Each set is installed once
# into the Python above, and again only when pyproject.toml or constraints.txt change (a stamp
# per set: $(STAMP)-SET). TORCH_INDEX=URL installs torch first from that index, at the version
# constraints.txt pins: PyPI's is the CUDA build on Linux (docs/getting-started.md).
CORE := $(STAMP)-core
DEV := $(STAMP)-dev
install: $(CORE)

$(STAMP)-%: pyproject.toml constraints.txt | $(MAKE_VENV)
ifdef TORCH_INDEX
	$(PYTHON) -m pip install --quiet -c constraints.txt torch --index-url $(TORCH_INDEX)
endif
	$(PYTHON) -m pip install --quiet -c constraints.txt -e "$(if $(filter core,$*),.,.[$*])"
	@touch $@

# Debian and Ubuntu ship venv's pip installer, ensurepip, in a package of its own. A venv
# that failed half-way is removed, or the next run would take it for a working one.
NO_ENSUREPIP := error: $(BASE_PYTHON) has no ensurepip module to create $(VENV)/: \
	`sudo apt install python%d.%d-venv` (Debian, Ubuntu)
$(VENV)/bin/python:
	@$(BASE_PYTHON) -c 'import importlib.util as u, sys; \
		u.find_spec("ensurepip") or sys.exit("$(NO_ENSUREPIP)" % sys.version_info[:2])'
	$(BASE_PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }

data: $(CORE)
	$(PYTHON) -m seq2seq.data --config $(CONFIG) $(ARGS)

train: $(CORE)
	$(PYTHON) -m seq2seq.train --config $(CONFIG) $(ARGS)

# Data-parallel training in NPROC processes on this machine (torchrun; docs/torchrun.md for
# several machines): by default one per GPU that nvidia-smi lists, else 2 on the CPU.
# train.batch_tokens stays the token budget of a whole step.
GPUS = $(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU')
NPROC ?= $(if $(filter-out 0,$(GPUS)),$(GPUS),2)
train-ddp: $(CORE)
	$(PYTHON) -m torch.distributed.run --standalone --nproc_per_node=$(NPROC) -m seq2seq.train --config $(CONFIG) $(ARGS)

eval: $(CORE)
	$(PYTHON) -m seq2seq.evaluate --config $(CONFIG) $(ARGS)

# A language pair's config to its Argos Translate package, for LibreTranslate (docs/package.md):
# data, train (which averages its last checkpoints: train.average_last), eval, then the package
# runs/<experiment>/<from>_<to>.argosmodel with the test scores in its card. Nothing is redone
# that is done: a finished run is not trained again. int8 weights where they lose at most
# decode.compute_type_bleu_loss BLEU, in <from>_<to>.int8.argosmodel (PACKAGE_ARGS="--quantization float32": never).
PACKAGE_ARGS ?=
package: data train eval $(STAMP)-export
	$(PYTHON) -m seq2seq.export argos --config $(CONFIG) $(PACKAGE_ARGS) $(ARGS)

# The translation service and its page on http://127.0.0.1:8000/ (config.yaml's serve section).
serve: $(STAMP)-serve
	$(PYTHON) -m seq2seq.serve --config $(CONFIG) $(ARGS)

# DeepL's official Node client (deepl-node) and LibreTranslate's npm client (libretranslate,
# AGPL: installed here, not shipped), pinned by tests/service/node/package-lock.json, for
# tests/service/test_deepl_node.py and test_libretranslate.py, installed as the dev extra is:
# once, and again when the lock changes. No npm on PATH: nothing installed, and those tests
# skip, saying why. npm there but
# failing (offline, say): make stops, as a failing pip does, rather than pass with a test quietly
# skipped; `make test NPM=` goes on without it.
NPM ?= $(shell command -v npm)
DEEPL_NODE := tests/service/node/node_modules/.installed
$(DEEPL_NODE): tests/service/node/package.json tests/service/node/package-lock.json
ifneq ($(NPM),)
	$(NPM) ci --prefix tests/service/node --no-audit --no-fund || { echo "error: npm ci failed:" \
		"DeepL's Node client is not installed (make test NPM= skips its test)" >&2; exit 1; }
	@touch $@
else
	@echo "no npm (none on PATH, or NPM= given): DeepL's Node client is not installed," \
		"tests/service/test_deepl_node.py skips"
endif

# The suite in one process a core (pytest-xdist), each computing on one thread
# (tests/conftest.py): most tests wait on processes, servers and files as much as they compute.
# test-all adds the tests marked long: whole benchmark and check scripts, whose parts the others
# cover (pyproject.toml's markers).
test: $(DEV) $(DEEPL_NODE)
	$(PYTHON) -m pytest -q -n auto -m "not long"

test-all: $(DEV) $(DEEPL_NODE)
	$(PYTHON) -m pytest -q -n auto

# Speed figures against baselines measured in the same run -> benchmarks/results/bench.{json,md}.
# The full mode trains the config to 99% valid exact match (minutes); the quick one takes seconds.
bench: data $(DEV)
	$(PYTHON) -m benchmarks.speed.bench --config $(CONFIG) $(ARGS)

bench-quick: data $(DEV)
	$(PYTHON) -m benchmarks.speed.bench --quick --config $(CONFIG) --out runs/bench-quick $(ARGS)

# The whole CUDA path on this machine's GPU -> benchmarks/results/gpu.{json,md}: training at three batch
# sizes in bf16, fp16 and compiled, resuming, torchrun, eval, the service, CTranslate2 and the
# tests (planned for under 10 minutes on one H200; docs/gpu.md). Without a GPU: one line, exit 0.
gpu-check: $(DEV)
	$(PYTHON) -m benchmarks.checks.gpu_check

# Training speed on this machine under each CPU lever (precision, threads, batch size, dropout,
# vocabulary size, torch.compile), in alternating rounds -> benchmarks/results/train_speed.{json,md}
# (docs/training-speed.md; a few minutes; each setting's data is built first, with ARGS).
# TRAIN_SPEED_ARGS="--profile --setting bf16 train.precision=bf16": where a step's time goes,
# torch.profiler's table; TRAIN_SPEED_ARGS="--bleu-steps 1000": each lever that changes
# the arithmetic, trained 1,000 steps, its valid BLEU -> benchmarks/results/train_bleu.{json,md} (~30 min).
TRAIN_SPEED_ARGS ?=
bench-train: $(DEV)
	$(PYTHON) -m benchmarks.speed.train_speed --config configs/multi30k_de_en.yaml --data-args "$(ARGS)" $(TRAIN_SPEED_ARGS)

# A validation of the Multi30k hour recipe's best checkpoint (train it first), decoded by each
# engine train.valid_engine can name, in alternating rounds -> benchmarks/results/validation.{json,md}
# (docs/training-speed.md). ARGS="--config ... --checkpoint ...": another.
bench-validation: $(DEV)
	$(PYTHON) -m benchmarks.speed.validation $(ARGS)

# Each model (the stand-in and its student, where trained) in each of CTranslate2's compute types:
# test BLEU against sentences per CPU second, greedy and beam 4, and that speed as a share of
# CTranslate2 alone's on the same export (the limit) -> benchmarks/results/
# speed_quality.{json,md} (a table per CPU) and docs/benchmarks/speed_quality.png.
bench-speed-quality: $(DEV)
	$(PYTHON) -m benchmarks.speed.speed_quality $(ARGS)

# The stand-in package with a vocabulary map made of this system's German catalogs (translate
# --vmap DIR), the held-out programs' left out, against it without: chrF and BLEU on those
# programs' strings and on Multi30k's test captions, and sentences per CPU second, greedy and
# beam 4 -> benchmarks/results/catalog_map.{json,md} (a table per CPU; a minute). The stand-in
# first: `make standin`.
bench-catalog-map: $(DEV)
	$(PYTHON) -m benchmarks.adapt.catalog_map $(ARGS)

# The data path from 20,000 to 5,000,000 training pairs -> benchmarks/results/scale.{json,md}
# (many minutes, several GB of disk under runs/bench-scale/; --quick: 2,000 and 20,000 pairs).
bench-scale: $(CORE)
	$(PYTHON) -m benchmarks.speed.scale $(ARGS)

# The Multi30k recipes run to the end, one after the other, then their results table in
# docs/corpora.md, read from runs/<experiment>/ (benchmarks/checks/recipes.py). RECIPE_SET=hour (the
# default: an hour of training each on a CPU), hour_fp32 (the hour on a CPU without bf16; on one
# with it, ARGS="train.precision=fp32" stands in), full (configs/multi30k_de_en.yaml and
# multi30k_en_de.yaml) or try (ten minutes); RECIPES="configs/xyz.yaml ..." picks the set's
# configs. Not in CI.
RECIPE_SET ?= hour
RECIPES_hour := configs/multi30k_de_en_hour.yaml configs/multi30k_en_de_hour.yaml
RECIPES_full := configs/multi30k_de_en.yaml configs/multi30k_en_de.yaml
RECIPES_hour_fp32 := configs/multi30k_de_en_hour_fp32.yaml configs/multi30k_en_de_hour_fp32.yaml
RECIPES_try := configs/multi30k_de_en_try.yaml
RECIPES ?= $(RECIPES_$(RECIPE_SET))
recipes: $(CORE)
	for recipe in $(RECIPES); do $(MAKE) data train eval CONFIG=$$recipe || exit 1; done
	$(PYTHON) -m benchmarks.checks.recipes --collect $(RECIPES) --set $(RECIPE_SET)

# Against JoeyNMT 2.3.0 and OpenNMT-py 3.5.1: the same data, vocabulary, model size and time
# budget, one after the other -> benchmarks/results/peers.{json,md}, or peers_<corpus>.{json,md} for another
# CONFIG (about 20 minutes; PEERS_ARGS="--quick": 3, "--budget 600", "--peers opennmt").
# Not in CI: the first run installs each peer from the package index into its own venv, with our
# torch pin. ARGS are config overrides, as for the other targets.
JOEYNMT_VENV := benchmarks/.venv-joeynmt
OPENNMT_VENV := benchmarks/.venv-opennmt
PEERS_ARGS ?=
bench-peers: data $(JOEYNMT_VENV)/.installed $(OPENNMT_VENV)/.installed
	$(PYTHON) -m benchmarks.peers.compare --config $(CONFIG) --joeynmt-python $(JOEYNMT_VENV)/bin/python \
		--opennmt-python $(OPENNMT_VENV)/bin/python $(PEERS_ARGS) $(ARGS)

# JoeyNMT needs importlib-metadata but does not declare it.
$(JOEYNMT_VENV)/.installed: constraints.txt
	test -x $(JOEYNMT_VENV)/bin/python || $(PYTHON) -m venv $(JOEYNMT_VENV)
	$(JOEYNMT_VENV)/bin/python -m pip install --quiet -c constraints.txt joeynmt==2.3.0 importlib-metadata
	@touch $@

# OpenNMT-py 3.5.1 declares torch<2.3, which has no build for newer Pythons and is a CUDA download
# of GBs: its dependencies are installed with our torch pin, then it without its declared ones
# (it runs on torch 2.13: benchmarks/README.md).
OPENNMT_DEPS := torch configargparse "ctranslate2>=4,<5" tensorboard flask waitress \
	"pyonmttok>=1.37,<2" pyyaml sacrebleu sentencepiece rapidfuzz pyahocorasick fasttext-wheel spacy six
$(OPENNMT_VENV)/.installed: constraints.txt
	test -x $(OPENNMT_VENV)/bin/python || $(PYTHON) -m venv $(OPENNMT_VENV)
	$(OPENNMT_VENV)/bin/python -m pip install --quiet -c constraints.txt $(OPENNMT_DEPS)
	$(OPENNMT_VENV)/bin/python -m pip install --quiet --no-deps OpenNMT-py==3.5.1
	@touch $@

# LibreTranslate 1.9.6 for the load benchmark (benchmarks/service/contenders.py), with our torch
# pin (it needs no torch: it runs argos-translate-lt, CTranslate2 and MiniSBD on onnxruntime).
# spaCy too: MiniSBD, its sentence splitter, downloads a model at the first translation, while
# spaCy's rule-based sentencizer needs none (the module says how it is switched).
LIBRETRANSLATE_VENV := benchmarks/.venv-libretranslate
$(LIBRETRANSLATE_VENV)/.installed: constraints.txt
	test -x $(LIBRETRANSLATE_VENV)/bin/python || $(PYTHON) -m venv $(LIBRETRANSLATE_VENV)
	$(LIBRETRANSLATE_VENV)/bin/python -m pip install --quiet -c constraints.txt libretranslate==1.9.6 \
		"spacy>=3.8,<4"
	@touch $@

# The service from 1 to 64 clients, with each engine and 2 workers, against LibreTranslate 1.9.6
# serving our Argos export of the same model (after make train), and with torch by each API it
# speaks (ours, LibreTranslate's, DeepL's) -> benchmarks/results/serve_latency.{json,md}
# (a few minutes; SERVE_ARGS="--quick": seconds). Not in CI: the first run installs LibreTranslate.
SERVE_ARGS ?=
bench-serve: $(DEV) $(LIBRETRANSLATE_VENV)/.installed
	$(PYTHON) -m benchmarks.service.latency --config $(CONFIG) \
		--libretranslate-python $(LIBRETRANSLATE_VENV)/bin/python $(SERVE_ARGS)

# The language detectors for source "auto" and /detect (py3langid, lingua, langdetect, and the
# pick: seq2seq/documents/detection.py) against LibreTranslate 1.9.6's own, on the Multi30k test
# sets in ../shared -> benchmarks/results/detection.{json,md} (a minute). Not in CI.
bench-detect: $(DEV) $(LIBRETRANSLATE_VENV)/.installed
	$(PYTHON) -m benchmarks.service.detection

# Two pairs and a pivot from one address, against LibreTranslate 1.9.6 serving the same two
# Argos packages (PAIRS_PACKAGES="A.argosmodel B.argosmodel": B translates from A's target
# language), greedy and beam 4, 1 and 16 clients, loaded by wrk (apt-get install wrk), and ours
# as a share of CTranslate2 alone on the first package (the limit) ->
# benchmarks/results/pairs.{json,md} (minutes; PAIRS_ARGS="--quick": 3 s a row). Not in CI.
PAIRS_PACKAGES ?=
PAIRS_ARGS ?=
bench-pairs: $(DEV) $(LIBRETRANSLATE_VENV)/.installed
	$(PYTHON) -m benchmarks.service.pairs $(foreach p,$(PAIRS_PACKAGES),--package $(p)) $(PAIRS_ARGS)

# A 20-page Word document through /translate_file, ours against LibreTranslate 1.9.6 serving the
# same Argos package (FILES_PACKAGE, de-en by default: its sentences are Multi30k's German test
# set in ../shared), beam 4, one decoding thread each -> benchmarks/results/files.{json,md}
# (minutes). Not in CI.
FILES_PACKAGE ?= runs/multi30k_de_en/de_en.argosmodel
bench-files: $(DEV) $(LIBRETRANSLATE_VENV)/.installed
	$(PYTHON) -m benchmarks.service.documents --package $(FILES_PACKAGE)

# Where our server's CPU goes on one-sentence requests (py-spy on the server under wrk's load,
# apt-get install wrk), greedy and beam 4, 1 and 16 clients, on each package with its test
# sentences (PROFILE_ARGS: the numbers model's package, from make all and make package, and
# the Multi30k de-en package's) -> benchmarks/results/profile.{json,md} (minutes). Not in CI.
PROFILE_ARGS ?= --package runs/numbers/en_digits.argosmodel --sentences data/numbers/test.src \
	--package $(FILES_PACKAGE) --sentences data/multi30k_de_en/test.src
bench-profile: $(DEV)
	$(PYTHON) -m benchmarks.service.profile $(PROFILE_ARGS)

# One model's weights on disk, the memory loading it takes and its load time, in each form it
# is served in (checkpoint, CTranslate2 export and Argos package, float32 and int8), from the
# Multi30k recipe's checkpoint -> benchmarks/results/model_memory.{json,md} (seconds).
bench-models: $(DEV)
	$(PYTHON) -m benchmarks.service.model_memory

# Versions of a model swapped in while the service serves under wrk's load (apt-get install
# wrk): failed requests, p99 with and without swaps, load seconds, resident memory before and
# after, on the stand-in (runs/standin_en_de/best.pt; not there: the seed preset, trained in
# seconds) -> benchmarks/results/swap.{json,md} (a minute; SWAP_ARGS="--quick": seconds).
SWAP_ARGS ?=
bench-swap: $(DEV)
	$(PYTHON) -m benchmarks.service.swap $(SWAP_ARGS)

# The service's state (the translation memory, exact and fuzzy, and a glossary) in PostgreSQL
# against SQLite files, side by side: ms a POST /translate and a look-up, on the stand-in (not
# there: the seed preset) -> benchmarks/results/stores.{json,md} (minutes; a PostgreSQL server
# of its own: apt-get install postgresql, or STORES_ARGS="--database URL").
STORES_ARGS ?=
bench-stores: $(DEV)
	$(PYTHON) -m benchmarks.service.stores $(STORES_ARGS)

# Fine-tuning a Transformer-base Argos package (random weights, Locomotive's shape) on this
# machine: tokens/s and peak memory under each way of keeping what it knew ->
# benchmarks/results/adapt_laptop.{json,md} (minutes; Multi30k from ../shared/corpora/multi30k).
bench-adapt-laptop: $(DEV)
	$(PYTHON) -m benchmarks.adapt.laptop $(ARGS)

# An English -> German Argos package made as LibreTranslate's Locomotive makes them (OpenNMT-py
# 3.5.1, scaled to 2 CPU cores; minutes) -> runs/bench-adapt-package/en_de.argosmodel (int8) and
# en_de_float32.argosmodel: the package bench-adapt-import measures (bench-adapt: the stand-in).
bench-adapt-package: $(DEV) $(OPENNMT_VENV)/.installed
	nice -n 5 $(PYTHON) -m benchmarks.adapt.locomotive $(ARGS)

# A real Argos package imported, against CTranslate2 on it (the Multi30k test set, en -> de):
# PACKAGES="en_de.argosmodel en_de.int8.argosmodel" -> benchmarks/results/adapt_import.{json,md}
PACKAGES ?=
bench-adapt-import: $(DEV)
	$(PYTHON) -m benchmarks.adapt.exactness $(PACKAGES) $(ARGS)

# The stand-in base package every adaptation figure starts from (docs/adapt.md): this system's
# German catalogs of the `base` programs and Multi30k (../shared/corpora/multi30k) trained for
# an hour -> runs/standin_en_de/en_de.int8.argosmodel. Resumed where it stopped; nothing done
# is redone. Its data reads catalogs: the catalogs extra.
standin: $(STAMP)-catalogs
	$(MAKE) package CONFIG=configs/standin_en_de.yaml PACKAGE_ARGS="--quantization int8"

# A student of the stand-in (configs/standin_en_de_student.yaml, docs/distill.md): one decoder
# layer, trained on the teacher's beam-4 translations of its training sources
# (data/standin_en_de_distilled/, by seq2seq/distill.py: resumed where it stopped), then data,
# train, eval and int8 package as `make standin` -> runs/standin_en_de_student/
# en_de.int8.argosmodel. The teacher first: `make standin`.
student: $(STAMP)-export $(STAMP)-catalogs
	$(PYTHON) -m seq2seq.distill --config configs/standin_en_de.yaml
	$(MAKE) package CONFIG=configs/standin_en_de_student.yaml PACKAGE_ARGS="--quantization int8"

# The stand-in taught to follow glossaries (configs/standin_en_de_terms.yaml, docs/terms.md):
# a 15-minute fine-tune on its own pairs with term pairs written into half of their sources,
# then eval and int8 package as `make standin` -> runs/standin_en_de_terms/. The stand-in
# first: `make standin`.
terms: $(STAMP)-catalogs
	$(MAKE) package CONFIG=configs/standin_en_de_terms.yaml PACKAGE_ARGS="--quantization int8"

# Glossaries followed by the stand-in as it is (terms masked) and taught (`make terms`: terms
# annotated), with the right glossary, a random one and none, on Multi30k's test set and on
# the held-out programs' strings: term use, do-not-translate kept, BLEU, chrF, CPU per
# sentence -> benchmarks/results/terms.{json,md}
bench-terms: $(DEV)
	$(PYTHON) -m benchmarks.adapt.terms $(ARGS)

# The service learning from its users' corrections, replayed offline on a held-out program's
# catalog (git's, 400 strings): each string translated, then its human translation sent;
# the model alone, the memory (exact and fuzzy), and the memory with an improvement after the
# first half: chrF and BLEU of the later half, repeat errors, the improvement's time and
# verdict -> benchmarks/results/learn.{json,md}. The stand-in first: `make standin`.
bench-learn: $(DEV)
	$(PYTHON) -m benchmarks.adapt.learn $(ARGS)

# The stand-in fine-tuned on the German catalogs of the `user` programs, each way measured
# against itself and a model trained from scratch for the same time: chrF and BLEU on programs
# never seen (the `held_out` programs) and on the user's programs' newer strings, Multi30k
# BLEU, placeholders kept, minutes, peak RSS -> benchmarks/results/adapt.{json,md} (60 minutes
# a run: ARGS="--minutes 15" for less; ARGS="--settings ..." for some); then the single-program
# case: one program's catalog alone, each fine-tune alone and mixed with the stand-in, empty or
# bare outputs, strings with accelerators apart -> benchmarks/results/adapt_program.{json,md}
# (10 minutes a run: PROGRAM_ARGS="--minutes 15").
PROGRAM_ARGS ?= --minutes 10
bench-adapt: $(DEV)
	$(PYTHON) -m benchmarks.adapt.target $(ARGS)
	$(PYTHON) -m benchmarks.adapt.program $(PROGRAM_ARGS)

# How sure each translation is (docs/confidence.md): every confidence signal tried (the mean
# log-probability a piece, the kept one; the sum; greedy-beam and n-best agreement) against
# sentence chrF, on Multi30k's test set and the held-out programs' strings with the stand-in
# package and on the user program's newer strings with its fine-tune: correlation, ROC AUC,
# chrF kept when the least sure are withheld, calibration error (and a calibration fitted on
# captions and software strings), a text's confidence as the lowest or the mean, CPU per
# sentence with and without -> benchmarks/results/confidence.{json,md} and docs/confidence.png
# (minutes). The stand-in and its fine-tune first: `make standin`, `make bench-adapt`.
bench-confidence: $(DEV)
	$(PYTHON) -m benchmarks.adapt.confidence $(ARGS)

# config.yaml and docs/configuration.md from the comments beside the options in
# seq2seq/config.py, their one source (tests/test_config_docs.py checks they are up to date).
config-docs: $(CORE)
	$(PYTHON) -m seq2seq.config_docs --write

# The documentation site, from docs/ and mkdocs.yml, into site/; fails on a broken link.
# `mkdocs serve` previews it while you edit (tests/test_docs.py builds it too).
docs: $(STAMP)-docs
	$(PYTHON) -m mkdocs build --strict --site-dir site

lint: $(DEV)
	$(PYTHON) -m ruff check seq2seq tests benchmarks examples docs
	$(PYTHON) -m ruff format --check seq2seq tests benchmarks examples docs

# What each target installs: the packages, size on disk and install time of each set, each in
# a new venv -> benchmarks/results/install.{json,md} and the tables of README.md and
# docs/getting-started.md (a few minutes).
install-sizes: $(CORE)
	$(PYTHON) -m benchmarks.checks.install_sizes --python $(BASE_PYTHON)

# clean: what the pipeline wrote; distclean: the installed environments too.
clean:
	rm -rf runs site
	find data -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) .installed-* $(JOEYNMT_VENV) tests/service/node/node_modules
