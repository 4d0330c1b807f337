"""make bench-stores: the service's state in PostgreSQL (serve.database) against SQLite files,
side by side: the time of a POST /translate with the translation memory (exact and fuzzy) and
a glossary on, and of the look-ups alone.

    python -m benchmarks.service.stores [--database URL] [--checkpoint C] [--memory 5000]
        [--requests 100] [--rounds 3] [--quick] [--out DIR]

    URL: an empty PostgreSQL database to measure (its tables made there); none: a server of
      its own started on loopback (benchmarks/service/postgres.py: Debian's postgresql)
    C (default: the stand-in's, runs/standin_en_de/best.pt; not there: the seed preset,
      trained here in seconds: swap.py's experiment) and its test split: the first
      --requests sentences are sent, --memory more are the memory, every other sent one has
      a fuzzy match there (one word of it left out), every tenth is there as it is
    each kind (sqlite: serve.suggestions_file and serve.glossaries_file; postgresql:
      serve.database) filled alike (Suggestions.add_all), then, --rounds times, the two in
      turn (a change in the machine's load falls on both):
      the service (python -m seq2seq.serve --engine torch, serve.threads=1, no translation
        cache, serve.memory on, serve.memory_fuzzy 0.75), a glossary of the pair made
        (POST /v2/glossaries), each sentence sent by one client, one at a time, with it
      -> ms a request (the median of the rounds'), each answer the same on both (unlike: 0)
    then, in this process, each store's look-ups of the sent sentences: recalled and
      similar, ms a text (the median)

Results: benchmarks/results/stores.{json,md} (--out DIR elsewhere).
"""

import contextlib
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks import common
from benchmarks.service.contenders import free_port
from benchmarks.service.postgres import POSTGRES_BIN, new_database, start_postgres, stop_postgres
from benchmarks.service.process import post_json, running_server
from benchmarks.service.swap import SEEDED, STANDIN, experiment, stood_in
from seq2seq.checkpoint import read_header
from seq2seq.config import DEFAULT_CONFIG, translation_pair
from seq2seq.localization.suggestions import Suggestions

KINDS = ("sqlite", "postgresql")
FUZZY = 0.75  # serve.memory_fuzzy


@contextlib.contextmanager
def postgresql(url: str | None):
    """`url`, or a new database on a server of its own, started here and stopped after."""
    if url:
        yield url
        return
    if POSTGRES_BIN is None:
        raise SystemExit("no PostgreSQL here: --database URL, or apt install postgresql")
    port = free_port()
    server, folder = start_postgres(port)
    try:
        yield new_database(f"postgresql://postgres@127.0.0.1:{port}")
    finally:
        stop_postgres(server)
        shutil.rmtree(folder, ignore_errors=True)


def server_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as connection:
        return connection.execute("SHOW server_version").fetchone()[0].split()[0]


def memory_of(sentences: list[str], sent: int, size: int) -> list[tuple[str, str]]:
    """The memory's (q, s) pairs, s: q in upper case: every tenth sent sentence as it is (the
    memory answers it), every other with its last word left out (a fuzzy match of it), then
    `size` more: the sentences not sent, each with one word left out (the first, then the
    second, ... a round each)."""
    near = [" ".join(text.split()[:-1]) for text in sentences[1:sent:2] if len(text.split()) > 4]
    near += sentences[:sent:10]
    others = [text.split() for text in sentences[sent:]]
    more = [others[k % len(others)] for k in range(size)]
    left = [
        words[: k // len(others)] + words[k // len(others) + 1 :] for k, words in enumerate(more)
    ]
    return [(q, q.upper()) for q in near + [" ".join(words) for words in left]]


def served(service, texts: list[str], pair: tuple[str, str]) -> tuple[float, list]:
    """A glossary of the pair made, then each text sent with it, one at a time: ms a
    request, and the answers."""
    glossary = {"name": "g", "source_lang": pair[0], "target_lang": pair[1],
                "entries": "man\tMann\ndog\tHund\n"}  # fmt: skip
    status, made = post_json(service.url, "/v2/glossaries", glossary)
    assert status == 201, made
    answers, start = [], time.perf_counter()
    for text in texts:
        body = {"text": [text], "source": pair[0], "target": pair[1]}
        status, answer = post_json(
            service.url, "/translate", {**body, "glossary": made["glossary_id"]}
        )
        assert status == 200, answer
        answers.append((answer["translations"], answer["memory"], answer.get("fuzzy")))
    return (time.perf_counter() - start) / len(texts) * 1000, answers


def look_ups(where: str, texts: list[str], pair: tuple[str, str]) -> dict:
    """The store's recalled and similar, each text alone: ms a text (the median)."""
    store = Suggestions(where)
    store.similar(texts[:1], *pair, FUZZY)  # the words' counts read once, before
    looks = {"recall_ms": lambda text: store.recalled([text], *pair),
             "fuzzy_ms": lambda text: store.similar([text], *pair, FUZZY)}  # fmt: skip
    figures = {name: statistics.median(timed_ms(look, texts)) for name, look in looks.items()}
    store.close()
    return figures


def timed_ms(look, texts: list[str]) -> list[float]:
    """Each text's look(text), in ms."""
    times = []
    for text in texts:
        start = time.perf_counter()
        look(text)
        times.append((time.perf_counter() - start) * 1000)
    return times


def measure(best: Path, sentences: list[str], url: str, folder: Path, args) -> dict:
    """Both kinds filled alike, then served in turn, --rounds times (the module)."""
    config, _ = read_header(best)
    pair = tuple(language.code for language in translation_pair(config, config.serve))
    texts = sentences[: args.requests]
    where = {"sqlite": str(folder / "suggestions.db"), "postgresql": url}
    settings = {
        "sqlite": [f"serve.suggestions_file={where['sqlite']}",
                   f"serve.glossaries_file={folder / 'glossaries.db'}"],
        "postgresql": [f"serve.database={url}"],
    }  # fmt: skip
    for kind in KINDS:
        Suggestions(where[kind]).add_all(memory_of(sentences, args.requests, args.memory), *pair)
    common_settings = ["serve.threads=1", "serve.translation_cache=0", "serve.memory=true",
                       f"serve.memory_fuzzy={FUZZY}"]  # fmt: skip
    times, answers = {kind: [] for kind in KINDS}, {}
    for number in range(args.rounds):
        for kind in KINDS:
            command = ["--checkpoint", str(best), "--engine", "torch"]
            with running_server(command, args.config, common_settings + settings[kind]) as service:
                served(service, texts[:5], pair)  # a warm-up
                ms, answers[kind] = served(service, texts, pair)
            times[kind].append(ms)
            print(f"round {number + 1}, {kind}: {ms:.1f} ms a request", flush=True)
    unlike = sum(a != b for a, b in zip(answers["sqlite"], answers["postgresql"], strict=True))
    remembered = sum(any(flags) for _, flags, _ in answers["sqlite"])
    repaired = sum(any(f is not None for f in fuzzy or []) for *_, fuzzy in answers["sqlite"])
    kinds = {kind: {"ms_per_request": statistics.median(times[kind]), "rounds": times[kind],
                    **look_ups(where[kind], texts, pair)} for kind in KINDS}  # fmt: skip
    ratio = kinds["postgresql"]["ms_per_request"] / kinds["sqlite"]["ms_per_request"]
    return {"pair": pair, "kinds": kinds, "ratio": ratio, "unlike": unlike,
            "remembered": remembered, "repaired": repaired}  # fmt: skip


def markdown(results: dict) -> str:
    settings = results["settings"]
    seed = SEEDED if results["seed"] else ""
    about = (
        f"On `{results['checkpoint']}`{seed}, torch, greedy, serve.threads=1, no translation "
        f"cache; serve.memory with {settings['memory']:,} more entries than the sent "
        f"sentences' fuzzy matches, serve.memory_fuzzy {FUZZY}, a glossary; "
        f"{settings['requests']} sentences sent one at a time by one client, {settings['rounds']} "
        f"rounds alternating the kinds. PostgreSQL {results['postgresql']}."
    )
    header = ["state in", "ms a request, median", "each round", "recall, ms a text",
              "fuzzy look-up, ms a text"]  # fmt: skip
    rows = []
    for kind, figures in results["kinds"].items():
        _, cells = common.median_and_rounds(figures["rounds"], ".1f")
        rows.append([kind, cells, f"{figures['recall_ms']:.2f}", f"{figures['fuzzy_ms']:.2f}"])
    notes = (
        f"PostgreSQL's time a request is {results['ratio']:.2f}x SQLite's; answers unlike: "
        f"{results['unlike']} of {settings['requests']} ({results['remembered']} from the "
        f"memory, {results['repaired']} repaired by a fuzzy match, on both)."
    )
    title = "The service's state in PostgreSQL against SQLite"
    return common.service_page(
        title, results, "stores", about, common.markdown_table(header, rows), notes
    )


def main() -> None:
    parser = common.arguments(
        __doc__, out=common.RESULTS, config=DEFAULT_CONFIG, quick="1 round of 20 requests"
    )
    parser.add_argument("--database", help="an empty PostgreSQL database's URL")
    parser.add_argument("--checkpoint", type=Path, default=STANDIN)
    parser.add_argument("--memory", type=int, default=5000, help="memory entries beyond the sent")
    parser.add_argument("--requests", type=int, default=100, help="sentences sent, each round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.requests = 1, 20
    settings = {key: getattr(args, key) for key in ("memory", "requests", "rounds")}
    with tempfile.TemporaryDirectory() as folder, postgresql(args.database) as url:
        best, sentences = experiment(args.checkpoint, Path(folder), 0, "torch")
        figures = measure(best, sentences, url, Path(folder), args)
        version = server_version(url) + (" (--database)" if args.database else ", on loopback")
    results = {"machine": common.machine(), **stood_in(args.checkpoint),
               "postgresql": version, "settings": settings, **figures}  # fmt: skip
    common.save_results(args.out / "stores", results, markdown(results))


if __name__ == "__main__":
    main()
