"""`make bench-files`: a 20-page Word document translated through LibreTranslate's
POST /translate_file by ours and by LibreTranslate 1.9.6, serving the same Argos package.

    python -m benchmarks.service.documents --package de_en.argosmodel
        [--sentences ../shared/corpora/multi30k/test_2016_flickr.de.gz] [--pages 20]
        [--runs 3] [--out DIR] [--name files]

    the document: PAGES pages, each a heading, PARAGRAPHS paragraphs of SENTENCES sentences of
      the test set (some words bold), a table of two rows, and a page break (python-docx)
    each server started alone, like for like: the package's beam size (Argos's 4), one
      decoding thread (LibreTranslate: ARGOS_INTRA_THREADS=1; ours: serve.threads=1)
      -> one upload to warm up, then RUNS uploads one after another, each timed from the
         upload to the translated file downloaded, and the server's CPU seconds
      -> pages per second (the median run's), CPU seconds a page; the translated file read
         back (python-docx): its paragraphs and tables as many as the document's, and the
         share of its paragraphs translated (unlike their source)

Results: benchmarks/results/files.{json,md}.
"""

import io
import itertools
import statistics
import sys
from pathlib import Path

import docx
import httpx

from benchmarks import common
from benchmarks.service.contenders import PYTHON as LIBRETRANSLATE_PYTHON
from benchmarks.service.contenders import codes, contender
from benchmarks.service.process import cpu_seconds
from seq2seq.text.parallel import read_lines

PARAGRAPHS, SENTENCES = 6, 5  # a page's paragraphs, and a paragraph's sentences
BEAM = 4  # Argos's, the packages' own
TIMEOUT_S = 1800


def document(sentences: list[str], pages: int) -> bytes:
    """A Word document of `pages` pages of these sentences (see the module's docstring)."""
    word, source = docx.Document(), itertools.cycle(sentences)
    for number in range(1, pages + 1):
        word.add_heading(next(source), level=1)
        for _ in range(PARAGRAPHS):
            paragraph = word.add_paragraph(" ".join(next(source) for _ in range(SENTENCES - 1)))
            paragraph.add_run(" " + next(source)).bold = True
        table = word.add_table(rows=2, cols=2)
        for cell in table._cells:
            cell.text = next(source)
        if number < pages:
            word.add_page_break()
    out = io.BytesIO()
    word.save(out)
    return out.getvalue()


def translated(url: str, data: bytes, source: str, target: str) -> bytes:
    """The document through POST /translate_file and its download."""
    form = {"source": source, "target": target}
    files = {"file": ("report.docx", data)}
    with httpx.Client(timeout=TIMEOUT_S) as client:
        answer = client.post(f"{url.rstrip('/')}/translate_file", data=form, files=files)
        answer.raise_for_status()
        download = client.get(answer.json()["translatedFileUrl"])
        download.raise_for_status()
    return download.content


def texts(data: bytes) -> tuple[list[str], int]:
    """A document's paragraphs' texts and its tables' count."""
    word = docx.Document(io.BytesIO(data))
    return [p.text for p in word.paragraphs if p.text.strip()], len(word.tables)


def measure(service, data: bytes, pair: tuple[str, str], runs: int, pages: int) -> dict:
    translated(service.url, data, *pair)  # warm-up
    seconds, cpu = [], []
    for _ in range(runs):
        cpu_start = cpu_seconds(service.pid)
        took, out = common.timed(translated, service.url, data, *pair)
        seconds.append(took)
        cpu.append(cpu_seconds(service.pid) - cpu_start)
    (before, tables), (after, tables_after) = texts(data), texts(out)
    changed = sum(a != b for a, b in zip(before, after, strict=False))
    return {
        "seconds": seconds,
        "pages_per_s": pages / statistics.median(seconds),
        "cpu_s_per_page": statistics.median(cpu) / pages,
        "paragraphs": [len(before), len(after)],
        "tables": [tables, tables_after],
        "translated_share": changed / len(before),
    }


HEADER = ["server", "pages/s", "seconds a document", "CPU s a page", "paragraphs in / out",
          "tables in / out", "paragraphs translated"]  # fmt: skip


def markdown(results: dict) -> str:
    rows, pages = results["servers"], results["pages"]
    about = (
        f"{pages} pages ({results['sentences']:,} sentences of {Path(results['source']).name}), "
        f"the package {Path(results['package']).name}, beam {BEAM}, one decoding thread each "
        "(LibreTranslate 1.9.6 at ARGOS_INTRA_THREADS=1, ours at serve.threads=1); the median "
        f"of {results['runs']} runs, each from the upload to the download."
    )
    cells = [
        [name, f"{row['pages_per_s']:.2f}", f"{statistics.median(row['seconds']):.1f}",
         f"{row['cpu_s_per_page']:.2f}", "{} / {}".format(*row["paragraphs"]),
         "{} / {}".format(*row["tables"]), f"{100 * row['translated_share']:.0f}%"]
        for name, row in (("ours", rows["ours"]), ("LibreTranslate", rows["libretranslate"]))
    ]  # fmt: skip
    ratio = rows["ours"]["pages_per_s"] / rows["libretranslate"]["pages_per_s"]
    note = f"Ours / LibreTranslate: {ratio:.2f} times its pages per second."
    title = f"A {pages}-page document through /translate_file, against LibreTranslate"
    return common.service_page(
        title, results, "documents", about, common.markdown_table(HEADER, cells, note)
    )


def main() -> None:
    parser = common.arguments(__doc__, out=common.RESULTS, name="files")
    parser.add_argument("--package", type=Path, required=True, help="an .argosmodel file")
    default = common.ROOT.parent / "shared/corpora/multi30k/test_2016_flickr.de.gz"
    parser.add_argument("--sentences", type=Path, default=default, help="the source's text")
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--libretranslate-python", type=Path, default=LIBRETRANSLATE_PYTHON)
    args = parser.parse_args()
    if not args.libretranslate_python.exists():
        sys.exit(f"no LibreTranslate at {args.libretranslate_python}: make bench-files installs it")
    sentences = [line.strip() for line in read_lines(args.sentences) if line.strip()]
    pair = codes(args.package)
    data = document(sentences, args.pages)
    servers = {}
    settings = {"libretranslate": [], "ours": ["serve.files_dir=runs/bench-files"]}
    for name, extra in settings.items():
        python = args.libretranslate_python
        with contender(name, [args.package], BEAM, extra, python=python) as service:
            servers[name] = measure(service, data, pair, args.runs, args.pages)
        print(name, servers[name], flush=True)
    per_page = PARAGRAPHS * SENTENCES + 1 + 4
    results = {"machine": common.machine(), "package": str(args.package),
               "source": str(args.sentences), "pages": args.pages,
               "sentences": per_page * args.pages, "runs": args.runs,
               "servers": servers}  # fmt: skip
    common.save_results(args.out / args.name, results, markdown(results))


if __name__ == "__main__":
    main()
