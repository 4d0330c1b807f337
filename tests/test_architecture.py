"""The package's architecture, as tests: its layering (import-linter's contracts in
pyproject.toml), every module placed in a layer, every folder saying what it holds, and
docs/architecture.md's picture of the layers (its walks: tests/test_service_walk.py)."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: the same module, before it joined the standard library
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "seq2seq"


def contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def layers(package: str) -> list[str]:
    """The layers contract of `package` (seq2seq or benchmarks): its lines, top first."""
    (found,) = [
        contract["layers"]
        for contract in contracts()
        if contract["type"] == "layers" and contract["layers"][0].startswith(package + ".")
    ]
    return found


@pytest.mark.slow
def test_the_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken." in done.stdout


def test_every_module_and_folder_of_the_package_is_in_a_layer():
    named = {name.strip() for layer in layers("seq2seq") for name in layer.split("|")}
    top = {
        f"seq2seq.{path.stem}" if path.suffix == ".py" else f"seq2seq.{path.name}"
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    }
    assert top == named


def test_every_benchmark_room_is_in_a_layer_and_names_its_scripts():
    """benchmarks/: common.py and each room (a folder) are the lines of its layers contract, and
    each room's docstring names every script in it."""
    benchmarks = ROOT / "benchmarks"
    inits = list(benchmarks.glob("*/__init__.py"))
    named = {name.strip() for layer in layers("benchmarks") for name in layer.split("|")}
    assert named == {f"benchmarks.{init.parent.name}" for init in inits} | {"benchmarks.common"}
    assert sorted(path.name for path in benchmarks.glob("*.py")) == ["__init__.py", "common.py"]
    for init in inits:
        listed = set(re.findall(r"[\w]+\.py", ast.get_docstring(ast.parse(init.read_text()))))
        scripts = {path.name for path in init.parent.glob("*.py") if path.stem != "__init__"}
        assert scripts == listed, (init, scripts ^ listed)


def test_every_folder_says_what_it_holds_and_what_it_may_import():
    """Each chapter's docstring opens with its purpose, one sentence, lists every module of it
    and says what it may import."""
    inits = list(PACKAGE.glob("*/__init__.py"))
    assert len(inits) >= 12  # corpora, tokens, model, training, decoding, service, serving, ...
    for init in inits:
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and "May import" in doc, init
        purpose = " ".join(doc.split("\n\n")[0].split())
        assert purpose.endswith(".") and purpose.count(". ") == 0, (init, purpose)
        listed = {word.strip(",") for line in doc.splitlines() for word in line.split()}
        modules = {path.name for path in init.parent.glob("*.py") if path.stem != "__init__"}
        assert modules <= listed, (init, modules - listed)


def test_the_architecture_page_draws_the_contracts_layers_and_names_real_files():
    page = (ROOT / "docs/architecture.md").read_text()
    block = page.split("<!-- layers:start -->")[1].split("<!-- layers:end -->")[0]
    drawn = []
    for line in block.splitlines():
        names = [word for word in line.split() if word.endswith((".py", "/"))]
        if names:
            drawn.append({"seq2seq." + name.removesuffix(".py").rstrip("/") for name in names})
    assert drawn == [{name.strip() for name in layer.split("|")} for layer in layers("seq2seq")]
    modules = {path.name for path in PACKAGE.rglob("*.py")}
    for word in page.translate(str.maketrans("`,:()", "     ")).split():
        if "/" in word.rstrip("/"):  # a path: it exists, in the package or the repository
            assert (PACKAGE / word).exists() or (ROOT / word).exists(), word
        elif word.endswith(".py"):  # a module named alone: it exists somewhere in the package
            assert word in modules, word
        elif word.endswith("/") and word != "/":  # a folder: a chapter of the package
            assert (PACKAGE / word).is_dir() or (ROOT / word).is_dir(), word
