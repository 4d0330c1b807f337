"""The package's architecture, as tests: its layering (import-linter's contracts in
pyproject.toml), every module placed in a layer, every folder saying what it holds, and the
service's route (docs/architecture.md) stop by stop, each leading to the next."""

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
    inits = list(PACKAGE.glob("*/__init__.py"))
    assert len(inits) >= 6  # model, text, training, decoding, service, exports, support
    for init in inits:
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and "May import" in doc, init
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


def route_block() -> tuple[str, str]:
    """docs/architecture.md's route of a /translate request: the paragraph before it, and it."""
    page = (ROOT / "docs/architecture.md").read_text()
    before, block = page.split("<!-- route:end -->")[0].split("<!-- route:start -->")
    return before.strip().rsplit("\n\n", 1)[-1], block


def routes() -> dict[str, list[tuple[str, str]]]:
    """The page's two routes, each stop a (file, function or Class.method): ours, its table;
    LibreTranslate's, the table with the stops that the paragraph above it changes."""
    paragraph, block = route_block()
    ours = [tuple(line.split()[1:3]) for line in block.splitlines() if line[:3].strip().isdigit()]
    (path,) = re.findall(r"both in `([\w/.]+)`", paragraph)
    changed = re.findall(r"`([\w.]+)` at stop (\d+)", paragraph)
    assert len(changed) == 2, paragraph
    libretranslate = list(ours)
    for name, number in changed:
        libretranslate[int(number) - 1] = (path, name)
    return {"ours": ours, "LibreTranslate's": libretranslate}


def definition(path: str, name: str) -> ast.AST:
    """The function or class `name` (Class.method: a method) of the package's file `path`."""
    found = ast.parse((PACKAGE / path).read_text())
    for part in name.split("."):
        inner = [n for n in found.body if getattr(n, "name", None) == part]
        assert inner, (path, name)
        found = inner[0]
    return found


def test_the_services_route_names_real_stops_in_order_and_at_most_twelve():
    """docs/architecture.md's route of a /translate request: numbered stops 1..N (N <= 12),
    each a file of the package and a function or class (Class.method) defined in it."""
    _, block = route_block()
    numbers = [int(line.split()[0]) for line in block.splitlines() if line[:3].strip().isdigit()]
    assert numbers == list(range(1, len(numbers) + 1))
    assert 8 <= len(numbers) <= 12
    for route in routes().values():
        for path, name in route:
            definition(path, name)


# How a request goes from each stop of the page's routes to the next: (stop, next stop) ->
# how, then the code that does it, "file function: a piece of its code", found there as it is
# written, but that a piece's call or list may stop short (`f(a)` is also `f(a, b, c=1)`) and
# `...` is anything.
ANSWERED = (  # the engine's answer returned up its calls to the batcher, and so to the route
    "service/batcher.py Batcher.settle: job.future.set_result(answer)",
    "service/backend.py Backend.run_job: answer = asyncio.wrap_future(model.batcher.submit(job))",
    "service/backend.py Backend.run_job: result = await answer",
)
HOPS = {
    ("Connection", "Guard"): (
        "uvicorn runs a Connection's requests through Server's app, build_app's: Guard first",
        "service/server.py Server.__init__: app = build_app()",
        "service/server.py Server.__init__: uvicorn.Config(app, http=Connection.limited(settings))",
        "service/app.py build_app: Starlette(middleware=[Middleware(Guard)])",
    ),
    ("Guard", "build_app"): (
        "calls the app inside it (CORS, RateLimit, the routes): POST /translate, build_app's",
        "service/access.py Guard.__call__: await self.app(scope, receive, send_securely)",
        "service/access.py RateLimit.__call__: await self.app(scope, receive, send)",
        "service/app.py build_app: Route('/translate', post_translate, methods=['POST'])",
    ),
    ("build_app", "OurApi.post_translate"): (
        "calls (its post_translate, unless LibreTranslate's fields are found)",
        "service/app.py build_app: ours, libretranslate = OurApi(backend), LibreTranslate(backend)",
        "service/app.py build_app: return await ours.post_translate(request, body)",
    ),
    ("build_app", "LibreTranslate.post_translate"): (
        "calls (its post_translate, if LibreTranslate's fields are found)",
        "service/app.py build_app: ours, libretranslate = OurApi(backend), LibreTranslate(backend)",
        "service/app.py build_app: fields = await libretranslate.fields(request, body)",
        "service/app.py build_app: return await libretranslate.post_translate(request, fields)",
    ),
    ("OurApi.post_translate", "Backend.translate"): (
        "calls",
        "service/ours.py OurApi.post_translate: await self.backend.translate(request, route)",
    ),
    ("LibreTranslate.post_translate", "Backend.translate"): (
        "calls, through its translated, once per source language",
        "service/libretranslate.py LibreTranslate.post_translate: await self.translated(request)",
        "service/libretranslate.py LibreTranslate.translated: await self.backend.translate()",
    ),
    ("Backend.translate", "Backend.run_job"): (
        "calls, with the texts split in a worker thread if large (api.off_the_loop)",
        "service/backend.py Backend.translate: split = await off_the_loop(..., self.split)",
        "service/backend.py Backend.translate: await self.run_job(request, model, Job(split))",
    ),
    ("Backend.run_job", "Batcher.run_batch"): (
        "puts the job on its model's Batcher's queue, `waiting`, which the decoder thread takes "
        "its batches from (run, collect, take) and decodes (run_batch)",
        "service/models.py Model: batcher: Batcher",
        "service/backend.py Backend.run_job: model.batcher.submit(job)",
        "service/batcher.py Batcher.submit: self.waiting.setdefault(job.client).append(job)",
        "service/batcher.py Batcher.__init__: threading.Thread(target=self.run)",
        "service/batcher.py Batcher.run: while (batch := self.collect()): ...",
        "service/batcher.py Batcher.run: self.run_batch(batch)",
        "service/batcher.py Batcher.collect: first = self.take(None, deadline=None)",
        "service/batcher.py Batcher.take: client, line = next(iter(self.waiting.items()))",
        "service/batcher.py Batcher.take: job = line.popleft()",
    ),
    ("Batcher.run_batch", "translate_texts"): (
        "calls, through settle and answers, a group of jobs (the same options) at a time",
        "service/batcher.py Batcher.run_batch: self.settle(options, jobs)",
        "service/batcher.py Batcher.settle: answers = self.answers(options, jobs)",
        "service/batcher.py Batcher.answers: engine = self.loaded()",
        "service/batcher.py Batcher.answers: translate_texts(engine, together, decoding)",
    ),
    ("translate_texts", "Exported"): (
        "calls its engine's translate (Engine's): by default (engine_choice.py) an Exported",
        "decoding/engines.py translate_texts: outputs, warnings = engine.translate(sentences)",
        "decoding/engine_choice.py engine_of: return ... if ... else Exported(ours.checkpoint)",
        "decoding/exported.py Exported: def translate(self, sentences, decoding): ...",
    ),
    ("Exported", "CTranslate2Engine"): (
        "calls, for translations",
        "decoding/exported.py Exported: fast: CTranslate2Engine",
        "decoding/exported.py Exported.translate: return self.fast.translate(sentences, decoding)",
    ),
    ("CTranslate2Engine", "translate_answer"): (
        "returns, through the job's future, to our route, which passes it to",
        *ANSWERED,
        "service/ours.py OurApi.post_translate: translated = await self.backend.translate()",
        "service/ours.py OurApi.post_translate: translate_answer(translated)",
    ),
    ("CTranslate2Engine", "libretranslate_answer"): (
        "returns, through the job's future, to LibreTranslate's route, which passes it to "
        "off_the_loop",
        *ANSWERED,
        "service/libretranslate.py LibreTranslate.translated: return (await ...).translations",
        "service/libretranslate.py LibreTranslate.post_translate: "
        "translated = await self.translated()",
        "service/libretranslate.py LibreTranslate.post_translate: "
        "translations[number] = translation",
        "service/libretranslate.py LibreTranslate.post_translate: "
        "answer = await off_the_loop(chars, libretranslate_answer, translations)",
    ),
    ("translate_answer", "json_response"): (
        "its answer is passed to",
        "service/ours.py OurApi.post_translate: return json_response(translate_answer())",
    ),
    ("libretranslate_answer", "json_response"): (
        "its answer is passed to",
        "service/libretranslate.py LibreTranslate.post_translate: "
        "answer = await off_the_loop(chars, libretranslate_answer)",
        "service/libretranslate.py LibreTranslate.post_translate: return json_response(answer)",
    ),
}


def like(piece: ast.AST, code: ast.AST) -> bool:
    """Whether `code` is `piece` (HOPS: a list, a call's arguments, may stop short; `...`)."""
    if isinstance(piece, ast.Constant) and piece.value is Ellipsis:
        return True
    if isinstance(piece, ast.Expr) and isinstance(code, ast.stmt) and like(piece.value, code):
        return True  # a statement `...`
    if type(piece) is not type(code):
        return False
    for field, want in ast.iter_fields(piece):
        have = getattr(code, field)
        if field == "keywords":  # some of the call's keywords, in any order
            if not all(any(like(w, h) for h in have) for w in want):
                return False
        elif isinstance(want, list):  # the first of the code's
            if len(want) > len(have) or not all(map(like, want, have)):
                return False
        elif isinstance(want, ast.AST):
            if not like(want, have):
                return False
        elif want != have and (want is not None or isinstance(piece, ast.Constant)):
            return False  # (a None not a constant's: a part that the piece leaves out)
    return True


def test_each_stop_of_the_services_route_leads_to_the_next():
    """Each stop of the page's routes (ours and LibreTranslate's) hands the request, or its
    answer, to the next: HOPS says how, and each piece of code it names is where it says."""
    hops = set()
    for api, route in routes().items():
        names = [name for _, name in route]
        for hop in zip(names, names[1:], strict=False):
            hops.add(hop)
            assert hop in HOPS, f"{api} route: nothing here says how {hop[0]} leads to {hop[1]}"
            how, *pieces = HOPS[hop]
            for piece in pieces:
                where, code = piece.split(": ", 1)
                wanted = ast.parse(code).body[0]
                wanted = wanted.value if isinstance(wanted, ast.Expr) else wanted
                nodes = ast.walk(definition(*where.split()))
                assert any(like(wanted, node) for node in nodes), (
                    f"{' -> '.join(hop)}, {how}: {piece}"
                )
    assert hops == set(HOPS), set(HOPS) - hops  # none left over from an older route
