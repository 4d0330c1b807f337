"""The versions of an experiment's model that `python -m seq2seq.improve` makes, and which one
the service serves (the files: seq2seq/support/paths.py).

    runs/<experiment>/versions/<NNNN>/version.json   each try: what it was trained on, its
                                                     scores, its verdict (served | kept aside)
    runs/<experiment>/versions/current               the one served (one line: its folder's
                                                     name); absent: the experiment's best.pt

    improve        next_number -> the try -> serve(run_dir, name) if it passed the gate
    --list         listed(run_dir): a line each (its verdict's reason names its scores), the
                   one served marked
    --rollback N   roll_back(run_dir, "0003" | "original", force): `current` rewritten
                   (atomically: support/files.py) or removed

A try kept aside was never served: rolling back to it is refused unless forced.
"""

import json
from pathlib import Path

from seq2seq.support.errors import UserError
from seq2seq.support.files import atomic_write
from seq2seq.support.paths import BEST, CURRENT, VERSION_ABOUT, VERSIONS, served_version

ORIGINAL = "original"  # --rollback original: the experiment's own best.pt
SERVED = "served"  # a verdict: passed the gate, made current
KEPT_ASIDE = "kept aside"  # a verdict: failed the gate


def versions(run_dir: Path) -> dict[str, dict]:
    """Each version's version.json, by folder name, oldest first (a try under way, or one that
    stopped before its verdict, has none: left out)."""
    found = {}
    for about in sorted((run_dir / VERSIONS).glob(f"[0-9][0-9][0-9][0-9]/{VERSION_ABOUT}")):
        try:
            found[about.parent.name] = json.loads(about.read_text("utf-8"))
        except ValueError:
            raise UserError(f"{about}: not JSON (written by hand?)") from None
    return found


def next_number(run_dir: Path) -> int:
    """The number of the next try: one past every folder in versions/, finished or not."""
    numbers = [int(p.name) for p in (run_dir / VERSIONS).glob("[0-9][0-9][0-9][0-9]")]
    return max(numbers, default=0) + 1


def serve(run_dir: Path, name: str | None) -> None:
    """Make `name` the version served (None: the original), atomically."""
    path = run_dir / VERSIONS / CURRENT
    if name is None:
        path.unlink(missing_ok=True)
        return
    with atomic_write(path) as file:
        file.write(name + "\n")


def roll_back(run_dir: Path, target: str, force: bool = False) -> str:
    """Serve `target` again ("0003", "3" or "original"); what was done, in a line. A version
    kept aside by its gate is refused unless `force`."""
    if target == ORIGINAL:
        serve(run_dir, None)
        return f"serving the original, {run_dir / BEST}"
    known = versions(run_dir)
    name = f"{int(target):04d}" if target.isdigit() else target
    if name not in known:
        listed = ", ".join(known) or "none"
        raise UserError(f"--rollback {target}: no such version in {run_dir / VERSIONS} ({listed})")
    about = known[name]
    if about["verdict"] != SERVED and not force:
        raise UserError(
            f"--rollback {target}: version {name} was kept aside ({about['reason']}); "
            "--force to serve it anyway"
        )
    serve(run_dir, name)
    return f"serving version {name}, {run_dir / VERSIONS / name / BEST}"


def listed(run_dir: Path) -> list[str]:
    """A line each version: number, made, verdict and reason (its scores); the one served
    marked with *."""
    served = served_version(run_dir)
    lines = [f"{'*' if served is None else ' '} original  {run_dir / BEST}"]
    for name, about in versions(run_dir).items():
        mark = "*" if name == served else " "
        lines.append(f"{mark} {name}      {about['made']}  {about['verdict']}: {about['reason']}")
    return lines
