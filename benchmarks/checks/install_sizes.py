"""`make install-sizes`: what each make target installs, and how big and slow that is.

    python -m benchmarks.checks.install_sizes [--python python3] [--out benchmarks]

For each set of packages that a make target installs (the core of pyproject.toml for the main
job, an extra for the others; the Makefile says which), a fresh virtual environment made with
`--python`, into which pip installs the project with that set, as make does
(`pip install -c constraints.txt -e ".[set]"`, pip's cache off, so that every wheel is fetched
and unpacked as on a new machine): the packages installed, the environment's size on disk and
the install's wall time. -> <out>/install.json and <out>/install.md, and the table between the
install-sizes markers of README.md and docs/getting-started.md (tests/test_setup.py checks that
they are the table of install.json).

A few minutes: the development set alone is over a hundred packages.
"""

import json
import sys
import tempfile
from pathlib import Path

from benchmarks import common

# Each set, and the make targets that install it (tests/test_setup.py checks them against the
# Makefile), in the order of the table.
SETS = {
    "core": ["all", "data", "train", "eval"],
    "serve": ["serve"],
    "docs": ["docs"],
    "dev": ["test", "lint", "gpu-check"],
}
MARKERS = ("<!-- install-sizes:start -->", "<!-- install-sizes:end -->")
PAGES = (common.ROOT / "README.md", common.ROOT / "docs/getting-started.md")


def measure(python: str, name: str) -> dict:
    """A fresh venv with the project and this set -> packages, bytes, seconds."""
    spec = "." if name == "core" else f".[{name}]"
    with tempfile.TemporaryDirectory(prefix=f"install-{name}-") as tmp:
        venv = Path(tmp) / "venv"
        common.run([python, "-m", "venv", str(venv)])
        pip = [str(venv / "bin/python"), "-m", "pip"]
        install = [*pip, "install", "--quiet", "--no-cache-dir", "-c", "constraints.txt"]
        seconds = common.run([*install, "-e", spec], cwd=common.ROOT).seconds
        listed = common.run([*pip, "list", "--format=json"]).stdout
        packages = len(json.loads(listed)) - 2  # not pip and the project itself
        size = sum(p.stat().st_size for p in venv.rglob("*") if p.is_file() and not p.is_symlink())
    return {"targets": SETS[name], "packages": packages, "bytes": size, "seconds": round(seconds)}


def size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def duration(seconds: int) -> str:
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


def table(results: dict) -> str:
    """The Markdown table of the sets, with the machine it was measured on."""
    info, rows = results["machine"], []
    for name, figures in results["sets"].items():
        targets = ", ".join(f"`{target}`" for target in figures["targets"])
        what = "the core" if name == "core" else f"the core and the `{name}` extra"
        rows.append([targets, what, figures["packages"], size(figures["bytes"]),
                     duration(figures["seconds"])])  # fmt: skip
    header = ["make", "installs", "packages", "on disk", "install time"]
    note = (
        f"Each in a new environment, pip's cache off: Python {info['python']}, torch "
        f"{info['torch']}, {info['device_name']}, {info['date'][:10]} (`make install-sizes`)."
    )
    return common.markdown_table(header, rows, note)


def main() -> None:
    parser = common.arguments(__doc__, out=common.RESULTS)
    parser.add_argument("--python", default="python3", help="the Python the venvs are made with")
    args = parser.parse_args()
    version = [args.python, "-c", "import platform; print(platform.python_version())"]
    python = common.run(version).stdout.strip()
    results = {"machine": common.machine() | {"python": python}, "sets": {}}
    for name in SETS:
        print(f"installing {name} ...", file=sys.stderr, flush=True)
        results["sets"][name] = measure(args.python, name)
    text = table(results)
    common.save_results(
        args.out / "install", results, f"# What each make target installs\n\n{text}\n"
    )
    for page in PAGES:
        page.write_text(common.with_table(page.read_text(), text, MARKERS))


if __name__ == "__main__":
    main()
