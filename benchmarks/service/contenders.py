"""The contenders of the service benchmarks, each started from its name, its models and a beam,
like for like: the one way latency.py and pairs.py (matrix.py), documents.py, profile.py and
adapt/served.py start a server (process.py starts and stops its process).

    with contender("ours", [model, ...], beam, settings) as service:    (a Service: url, pid)
        python -m seq2seq.serve --model MODEL ... decode.beam_size=BEAM serve.threads=1 SETTINGS
        a model: a checkpoint, an export or an Argos package; SETTINGS: more of serve's
        arguments (--engine torch, serve.workers=2); its requests by either API, ours or
        LibreTranslate's (clients.Shape)
    with contender("libretranslate", [package, ...], beam, python=P) as service:
        LibreTranslate 1.9.6, the real server from PyPI, in its own venv (make installs it:
        $(LIBRETRANSLATE_VENV)/.installed), serving the packages offline, its defaults (SETTINGS)
        but like_for_like(beam): ARGOS_BEAM_SIZE=BEAM and one decoding thread, as ours

    python -m benchmarks.service.contenders --package numbers.argosmodel  # 20 requests to it

LibreTranslate 1.9.6 runs on argos-translate-lt 1.12.1 (LibreTranslate's fork of Argos
Translate, imported as argostranslate), which would download at start-up and at the first
translation. Each setting below stops one download and changes nothing else:

* A private home (HOME, XDG_DATA_HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME, TMPDIR): packages,
  settings, caches and uploads go to a temporary folder, which holds only our package, installed
  by Argos's own install_from_path. Inherited ARGOS_* and LT_* variables are dropped.
* ARGOS_PACKAGE_INDEX, a file:// folder whose index.json is []: with fewer than two packages
  installed, LibreTranslate updates the package index at start-up (libretranslate/init.py:19-22);
  from the remote index that fails offline, and argostranslate/package.py:398-400 then retries
  by recursion until Python's recursion limit (~1,000 tries). The local empty index "updates".
* --load-only SOURCE,TARGET: with the index empty, our codes are "unavailable", so init.py:36-40
  stops the update with an error that it prints and ignores (init.py:14-15), before
  init.py:74 downloads MiniSBD's 82 sentence models (offline: 10 tries of the first, 511 s of
  back-off, then the same error: minisbd/models.py:114-128).
* ARGOS_CHUNK_TYPE=SPACY and a blank spaCy pipeline: the default splitter, MiniSBD
  (argostranslate/translate.py:166-167), downloads its model at the first /translate and answers
  500 offline; STANZA needs Stanza (torch) and downloads its model; NONE is not implemented
  (translate.py:175-179: the pair is dropped, and /translate answers 400). SPACY loads a spaCy
  pipeline and adds spaCy's rule-based "sentencizer" (argostranslate/sbd.py:53-75), so
  spacy.blank("xx"), which needs no download, splits at ., ! and ?. It is saved where Argos
  caches its multilingual spaCy model, with the folder whose presence tells Argos that the cache
  is filled (argostranslate/networking.py:84-106; without it, importing sbd.py runs
  `spacy download`). Our test sentences are one sentence each: the splitter changes nothing.

Everything else is LibreTranslate's default (SETTINGS).
"""

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

from benchmarks.common import ROOT, arguments, private_home
from benchmarks.service.clients import ask, libretranslate_shape
from benchmarks.service.process import Service, running_server, started
from seq2seq.exports.argos_package import package_metadata

SERVERS = ("ours", "libretranslate")
PYTHON = ROOT / "benchmarks/.venv-libretranslate/bin/python"  # the Makefile's LIBRETRANSLATE_VENV

# How LibreTranslate 1.9.6 decodes with its defaults (files in its venv's site-packages).
SETTINGS = {
    "version": "LibreTranslate 1.9.6, argos-translate-lt 1.12.1, CTranslate2 4.8.5",
    "beam_size": 4,  # ARGOS_BEAM_SIZE (argostranslate/settings.py:171); translate.py:467 passes
    # max(num_hypotheses, 4), and LibreTranslate asks 1 + its alternatives (default 0)
    "length_penalty": 0.2,  # argostranslate/translate.py:469
    "compute_type": "the model's own (float32 for our default export)",  # ARGOS_COMPUTE_TYPE is
    # "auto" (settings.py:170), which the fork does not pass on (translate.py:190-191), so
    # CTranslate2 keeps the type the weights were saved in ("default"); it does not quantize
    "device": "cpu",  # ARGOS_DEVICE_TYPE (settings.py:164)
    "ctranslate2_threads": "inter_threads 1 (one batch at a time), intra_threads 0: "
    "OMP_NUM_THREADS or min(4, cores)",  # settings.py:167-168, CTranslate2's src/utils.cc
    "max_batch_size": "32 tokens",  # ARGOS_BATCH_SIZE (settings.py:169), batch_type "tokens"
    "server": "waitress, 4 threads (--threads), one process",  # libretranslate/main.py:286-297
    "sentence_splitter": "spaCy's rule-based sentencizer (MiniSBD, the default, downloads)",
}


def like_for_like(beam: int) -> dict[str, str]:
    """LibreTranslate's settings beside ours at beam size `beam`: its beam size the same, and
    one CTranslate2 thread (ARGOS_INTRA_THREADS=1), which is faster on 2 cores than its default
    (and ours decodes on one thread)."""
    return {"ARGOS_BEAM_SIZE": str(beam), "ARGOS_INTRA_THREADS": "1"}


INSTALL = """
import sys
import argostranslate.package, argostranslate.settings, spacy

spacy_cache = argostranslate.settings.cache_dir / "spacy"  # before argostranslate.sbd's import
spacy.blank("xx").to_disk(spacy_cache)
(spacy_cache / "senter" / "model").mkdir(parents=True)
for path in sys.argv[1:]:
    argostranslate.package.install_from_path(path)
installed = argostranslate.package.get_installed_packages()
print(",".join(sorted({code for p in installed for code in (p.from_code, p.to_code)})))
"""


def codes(package: Path) -> tuple[str, str]:
    """An Argos package's languages: from, to."""
    metadata = package_metadata(package)
    return metadata["from_code"], metadata["to_code"]


def environment(home: Path) -> dict[str, str]:
    """The variables of LibreTranslate's processes (the module's docstring says why), their
    folders made under `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARGOS_", "LT_"))}
    env |= private_home(home)
    index = home / "index"
    index.mkdir()
    (index / "index.json").write_text("[]")
    env["ARGOS_PACKAGE_INDEX"] = index.as_uri() + "/"  # Argos appends "index.json"
    env["ARGOS_CHUNK_TYPE"] = "SPACY"
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@contextlib.contextmanager
def running_libretranslate(
    python: Path, packages: list[Path], settings: dict[str, str] | None = None
) -> Iterator[Service]:
    """LibreTranslate on a free port of 127.0.0.1, serving `packages` (.argosmodel files) alone,
    once it answers GET /languages; stopped with SIGTERM at the end. `python`: its venv's;
    `settings`: ARGOS_* variables to set (ARGOS_BEAM_SIZE, ARGOS_INTRA_THREADS)."""
    python = python.absolute()  # it runs in its home; not resolve(): that leaves the venv
    with tempfile.TemporaryDirectory(prefix="libretranslate-") as tmp:
        home = Path(tmp)
        env = environment(home) | (settings or {})
        paths = [str(package.resolve()) for package in packages]
        installed = subprocess.run([python, "-c", INSTALL, *paths], env=env,
                                   cwd=home, capture_output=True, text=True)  # fmt: skip
        if installed.returncode != 0:
            sys.exit(f"installing {paths} for LibreTranslate failed:\n{installed.stderr}")
        languages = installed.stdout.strip()
        url = f"http://127.0.0.1:{free_port()}"
        command = [python.parent / "libretranslate", "--host", "127.0.0.1",
                   "--port", url.rpartition(":")[2], "--load-only", languages]  # fmt: skip
        ready = lambda _: answers(url + "/languages") and url  # noqa: E731
        with started(command, ready, "LibreTranslate", env=env, cwd=home) as server:
            yield server


@contextlib.contextmanager
def contender(
    name: str,
    models: Sequence[Path],
    beam: int,
    settings: Sequence[str] = (),
    config: str = "config.yaml",
    python: Path = PYTHON,
) -> Iterator[Service]:
    """The contender `name` (SERVERS) serving `models` at beam size `beam` (see the module)."""
    if name == "libretranslate":
        with running_libretranslate(python, list(models), like_for_like(beam)) as service:
            yield service
        return
    args = [arg for model in models for arg in ("--model", str(model))]
    overrides = [f"decode.beam_size={beam}", "serve.threads=1", *settings]
    with running_server(args, config, overrides) as service:
        yield service


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--python", type=Path, default=PYTHON, help="LibreTranslate's venv's")
    parser.add_argument("--package", type=Path, required=True, help="an .argosmodel file")
    parser.add_argument(
        "--data", type=Path, default=ROOT / "data/numbers", help="sends test.src's first 20 lines"
    )
    args = parser.parse_args()
    sentences = (args.data / "test.src").read_text().splitlines()[:20]
    references = (args.data / "test.tgt").read_text().splitlines()[:20]
    with running_libretranslate(args.python, [args.package]) as server:
        shape = libretranslate_shape(server.url)
        failed = same = 0
        for sentence, reference in zip(sentences, references, strict=True):
            status, translation = ask(server.url, shape, sentence)
            failed += status != 200
            same += translation == reference
            print(status, repr(sentence), "->", translation)
    print(f"{len(sentences) - failed} of {len(sentences)} answered 200, {same} as test.tgt")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
