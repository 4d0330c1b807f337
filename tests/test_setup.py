"""The Makefile's choice of Python, and its one-line error where a venv cannot be made, in a
copy of the Makefile (nothing is installed: `make -n` prints the commands without running them)."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
import tomllib

from seq2seq.config import load_config
from seq2seq.data import needed_extras

from helpers import ROOT

# what `make` in a shell with nothing active inherits; MAKEFLAGS would carry the PYTHON=... of a
# `make test PYTHON=...` that runs this file
NOT_INHERITED = ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHON", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
# DeepL's Node client's pins, which `make test` installs from (npm ci)
NODE_CLIENT = ("tests/service/node/package.json", "tests/service/node/package-lock.json")

# A python3 whose `-m venv` fails half-way, as Debian's and Ubuntu's do without python3-venv: a
# message of several lines, and a half-made environment left behind. {ensurepip} hides that
# module, as there.
FAILING_PYTHON3 = f"""#!{sys.executable}
import os, sys
{{ensurepip}}
if sys.argv[1:3] == ["-m", "venv"]:
    os.makedirs(sys.argv[3] + "/bin")
    sys.exit("The virtual environment was not created successfully because ensurepip is not\\n"
             "available.  On Debian/Ubuntu systems, you need to install the python3-venv\\n"
             "package using the following command.")
assert sys.argv[1] == "-c", sys.argv
exec(sys.argv[2])
"""


MAKES_FROM = ("Makefile", "pyproject.toml", "constraints.txt", *NODE_CLIENT)  # what make reads


@pytest.fixture
def project(tmp_path):
    for name in MAKES_FROM:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def make(project, *args, **env):
    inherited = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    return subprocess.run(["make", *args], cwd=project, env=dict(inherited, **env),
                          capture_output=True, text=True, timeout=60)  # fmt: skip


@pytest.mark.slow
def test_python(project):
    """`make test` runs pytest with the chosen Python."""

    def python(*args, **env):
        done = make(project, "-n", "test", *args, **env)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()[-1].partition(" -m pytest")[0]

    assert python() == ".venv/bin/python"
    assert python(VIRTUAL_ENV="/x") == "/x/bin/python"
    assert python(CONDA_PREFIX="/c") == "/c/bin/python"
    assert python(VIRTUAL_ENV=f"{project}/.venv") == ".venv/bin/python"  # ours, activated
    assert python("PYTHON=/y/python", VIRTUAL_ENV="/x") == "/y/python"


@pytest.mark.slow
def test_venv_made_with_python3(project):
    """With nothing active, the install first creates .venv/ with python3."""
    commands = make(project, "-n", "install").stdout
    assert "python3 -m venv .venv" in commands
    assert "python3 -m venv" not in make(project, "-n", "install", VIRTUAL_ENV="/x").stdout


def install_with(python3: str, project, tmp_path_factory) -> subprocess.CompletedProcess:
    """`make install` with this script as the python3 first in PATH."""
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "python3").write_text(python3)
    (bin_dir / "python3").chmod(0o755)
    return make(project, "install", PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_no_ensurepip(project, tmp_path_factory):
    """Without python3-venv: one line naming the package, and no half-made .venv/."""
    debian = FAILING_PYTHON3.format(ensurepip='sys.modules["ensurepip"] = None')
    done = install_with(debian, project, tmp_path_factory)
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if not line.startswith("make: ***")]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert ours == [
        "error: python3 has no ensurepip module to create .venv/: "
        f"`sudo apt install python{version}-venv` (Debian, Ubuntu)"
    ]
    assert not (project / ".venv").exists()


def test_failed_venv_removed(project, tmp_path_factory):
    """A venv that fails for another reason is not left behind either."""
    done = install_with(FAILING_PYTHON3.format(ensurepip=""), project, tmp_path_factory)
    assert done.returncode != 0 and "was not created successfully" in done.stderr
    assert not (project / ".venv").exists()


def installs(project, target: str, **env) -> list[str]:
    """What `make target` would pip install, in order: "." for the core, ".[extra]" else."""
    done = make(project, "-n", target, **env)
    assert done.returncode == 0, done.stderr
    return re.findall(r'pip install --quiet -c constraints.txt -e "([^"]+)"', done.stdout)


def test_each_target_installs_what_it_runs(project):
    """The main job, the core alone; the tests, the development set; the service and the
    site, their extras."""
    for target in ("all", "install", "data", "train", "eval"):
        assert installs(project, target) == ["."], target
    assert installs(project, "test") == installs(project, "lint") == [".[dev]"]
    assert installs(project, "serve") == [".[serve]"]
    assert installs(project, "docs") == [".[docs]"]
    for target in ("standin", "terms", "student"):  # configs/standin_en_de.yaml reads catalogs
        assert ".[catalogs]" in installs(project, target), target
    assert ".[export]" in installs(project, "standin")  # its int8 package


def test_each_set_is_installed_again_only_when_the_dependencies_change(project):
    """A stamp per set, in the environment make uses (.venv/ or the active one)."""
    for stamp in (".venv/.installed-core", ".installed-core"):
        (project / stamp).parent.mkdir(exist_ok=True)
        (project / stamp).touch()
    (project / ".venv/bin").mkdir()
    (project / ".venv/bin/python").touch()
    assert installs(project, "data") == installs(project, "data", VIRTUAL_ENV="/x") == []
    assert installs(project, "test") == [".[dev]"]
    os.utime(project / "pyproject.toml", (time.time() + 10,) * 2)
    assert installs(project, "data") == installs(project, "data", VIRTUAL_ENV="/x") == ["."]


def test_the_install_sizes_are_measured_for_what_each_target_installs(project):
    """benchmarks/checks/install_sizes.py measures the sets the Makefile installs, and the tables
    of the README and docs/getting-started.md are its last measurement's (make install-sizes)."""
    from benchmarks.checks.install_sizes import MARKERS, PAGES, SETS, table
    from benchmarks.common import with_table

    for name, targets in SETS.items():
        for target in targets:
            assert installs(project, target) == ["." if name == "core" else f".[{name}]"], target
    measured = table(json.loads((ROOT / "benchmarks/results/install.json").read_text()))
    for page in PAGES:
        text = page.read_text()
        assert with_table(text, measured, MARKERS) == text, f"{page.name}: run make install-sizes"
    assert with_table(f"a\n{MARKERS[0]}\nold\n{MARKERS[1]}\nb", "new", MARKERS) == (
        f"a\n{MARKERS[0]}\nnew\n{MARKERS[1]}\nb"
    )


def extras_of(spec: str, pyproject: dict) -> set[str]:
    """The extras a `pip install -e SPEC` installs: "." none, ".[a,b]" those, dev's with it."""
    named = set(re.findall(r"\w+", spec.partition("[")[2]))
    for extra in list(named):
        for requirement in pyproject["project"]["optional-dependencies"][extra]:
            named |= extras_of(requirement.replace("seq2seq", "."), pyproject) if (
                requirement.startswith("seq2seq[")) else set()  # fmt: skip
    return named


def test_each_target_installs_the_extras_its_configs_data_needs(project):
    """Every `seq2seq.data --config X` a target runs (a sub-make's too) comes after the install
    of each extra that X's corpus needs (seq2seq.data.needed_extras: make standin, on a fresh
    clone, stopped at once for want of polib)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    phony = re.search(r"^\.PHONY:(.*?)\n\n", (ROOT / "Makefile").read_text(), re.M | re.S)
    checked = 0
    for target in phony[1].replace("\\\n", " ").split():
        installed: set[str] = set()
        for line in make(project, "-n", target).stdout.splitlines():
            if spec := re.search(r'pip install --quiet -c constraints.txt -e "([^"]+)"', line):
                installed |= extras_of(spec[1], pyproject)
            if config := re.search(r"-m seq2seq\.data --config (\S+)", line):
                needed = needed_extras(load_config(str(ROOT / config[1])))
                assert set(needed) <= installed, (target, config[1], needed)
                checked += 1
    assert checked >= 8  # data, all, package, standin's, terms', student's ...
    catalogs = load_config(str(ROOT / "configs/standin_en_de.yaml"))
    assert needed_extras(catalogs) == {"catalogs": "corpus.train_sources[1]"}
