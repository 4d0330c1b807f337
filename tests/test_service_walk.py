"""The service's walks on docs/architecture.md, as tests: a /translate request's stops, each
leading to the next (HOPS says how, and each piece of code it names is where it says), and a
document's walk through the service's modules, call by call, in a line."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "seq2seq"


def walk_block() -> tuple[str, str]:
    """docs/architecture.md's walk of a /translate request: the paragraph before it, and it."""
    page = (ROOT / "docs/architecture.md").read_text()
    before, block = page.split("<!-- walk:end -->")[0].split("<!-- walk:start -->")
    return before.strip().rsplit("\n\n", 1)[-1], block


def walks() -> dict[str, list[tuple[str, str]]]:
    """The page's two walks, each stop a (file, function or Class.method): ours, its table;
    LibreTranslate's, the table with the stops that the paragraph above it changes."""
    paragraph, block = walk_block()
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


def test_the_services_walk_names_real_stops_in_order_and_at_most_twelve():
    """docs/architecture.md's walk of a /translate request: numbered stops 1..N (N <= 12),
    each a file of the package and a function or class (Class.method) defined in it."""
    _, block = walk_block()
    numbers = [int(line.split()[0]) for line in block.splitlines() if line[:3].strip().isdigit()]
    assert numbers == list(range(1, len(numbers) + 1))
    assert 8 <= len(numbers) <= 12
    for walk in walks().values():
        for path, name in walk:
            definition(path, name)


# How a request goes from each stop of the page's walks to the next: (stop, next stop) ->
# how, then the code that does it, "file function: a piece of its code", found there as it is
# written, but that a piece's call or list may stop short (`f(a)` is also `f(a, b, c=1)`) and
# `...` is anything.
ANSWERED = (  # the engine's answer returned up its calls to the batcher, and so to the route
    "serving/batcher.py Batcher.settle: job.future.set_result(answer)",
    "serving/core.py Core.run_job: answer = asyncio.wrap_future(model.batcher.submit(job))",
    "serving/core.py Core.run_job: result = await answer",
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
        "serving/access.py Guard.__call__: await self.app(scope, receive, send_securely)",
        "serving/access.py RateLimit.__call__: await self.app(scope, receive, send)",
        "service/app.py build_app: Route('/translate', post_translate, methods=['POST'])",
    ),
    ("build_app", "OurApi.post_translate"): (
        "calls (its post_translate, unless LibreTranslate's fields are found)",
        "service/app.py build_app: ours, libretranslate = OurApi(core), LibreTranslate(core)",
        "service/app.py build_app: return await ours.post_translate(request, body)",
    ),
    ("build_app", "LibreTranslate.post_translate"): (
        "calls (its post_translate, if LibreTranslate's fields are found)",
        "service/app.py build_app: ours, libretranslate = OurApi(core), LibreTranslate(core)",
        "service/app.py build_app: fields = await libretranslate.fields(body)",
        "service/app.py build_app: return await libretranslate.post_translate(request, fields)",
    ),
    ("OurApi.post_translate", "Core.translate"): (
        "calls",
        "service/ours.py OurApi.post_translate: await self.core.translate(request, chain)",
    ),
    ("LibreTranslate.post_translate", "Core.translate"): (
        "calls, through translated (DeepL's route's too), once per source language",
        "service/libretranslate.py LibreTranslate.post_translate: "
        "await self.translated(request, key, account, asked)",
        "service/libretranslate.py LibreTranslate.translated: "
        "await self.core.translate(request, chains[source])",
    ),
    ("Core.translate", "Core.run_job"): (
        "calls, through decode (the texts serve.memory does not answer), with the texts split "
        "in a worker thread if large (api.off_the_loop), and through (a job a model)",
        "serving/core.py Core.translate: decoded = await self.decode(request, chain, missing)",
        "serving/core.py Core.decode: first = await off_the_loop(..., self.split)",
        "serving/core.py Core.decode: await self.through(request, chain, first)",
        "serving/core.py Core.through: job = Job(Texts(...), options)",
        "serving/core.py Core.through: await self.run_job(request, model, job)",
    ),
    ("Core.run_job", "Batcher.run_batch"): (
        "puts the job on its model's Batcher's queue, `waiting`, which a decoder thread (one a "
        "batch the engine decodes at once: staff) takes its batches from (run, collect, take) "
        "and decodes (run_batch)",
        "serving/models.py Model: batcher: Batcher",
        "serving/core.py Core.run_job: model.batcher.submit(job)",
        "serving/batcher.py Batcher.submit: self.waiting.setdefault(job.client).append(job)",
        "serving/batcher.py Batcher.__init__: self.staff(engine.replicas if engine else 1)",
        "serving/batcher.py Batcher.staff: threading.Thread(target=self.run, name=..., daemon=...)",
        "serving/batcher.py Batcher.run: while (batch := self.collect()): ...",
        "serving/batcher.py Batcher.run: self.run_batch(batch)",
        "serving/batcher.py Batcher.collect: first = self.take(None, deadline=None)",
        "serving/batcher.py Batcher.take: client, line = next(iter(self.waiting.items()))",
        "serving/batcher.py Batcher.take: job = line.popleft()",
    ),
    ("Batcher.run_batch", "translate_texts"): (
        "calls, through settle and answers, a group of jobs (the same options) at a time, on the "
        "engine it read once for the whole batch (a version swapped in: the next batch's)",
        "serving/batcher.py Batcher.run_batch: self.settle(engine, options, jobs)",
        "serving/batcher.py Batcher.settle: answers = self.answers(engine, options, jobs)",
        "serving/batcher.py Batcher.run_batch: engine = self.loaded()",
        "serving/batcher.py Batcher.answers: translate_texts(engine, together, decoding)",
    ),
    ("translate_texts", "Exported"): (
        "calls its engine's translate (Engine's): by default (engine_choice.py) an Exported",
        "decoding/engines.py translate_texts: outputs, warnings, signals = engine.translate(...)",
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
        "service/ours.py OurApi.post_translate: translated = await self.core.translate()",
        "service/ours.py OurApi.post_translate: translate_answer(translated)",
    ),
    ("CTranslate2Engine", "libretranslate_answer"): (
        "returns, through the job's future, to LibreTranslate's route, which passes it to "
        "off_the_loop",
        *ANSWERED,
        "service/libretranslate.py LibreTranslate.translated: "
        "translated = await self.core.translate()",
        "service/libretranslate.py LibreTranslate.translated: each[number] = answer",
        "service/libretranslate.py LibreTranslate.translated: return given(parts, each)",
        "service/libretranslate.py LibreTranslate.post_translate: given = await self.translated()",
        "service/libretranslate.py LibreTranslate.post_translate: "
        "answer = await off_the_loop(asked.chars, libretranslate_answer, given)",
    ),
    ("translate_answer", "json_response"): (
        "its answer is passed to",
        "service/ours.py OurApi.post_translate: return json_response(translate_answer())",
    ),
    ("libretranslate_answer", "json_response"): (
        "its answer is passed to",
        "service/libretranslate.py LibreTranslate.post_translate: "
        "answer = await off_the_loop(asked.chars, libretranslate_answer)",
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


def test_each_stop_of_the_services_walk_leads_to_the_next():
    """Each stop of the page's walks (ours and LibreTranslate's) hands the request, or its
    answer, to the next: HOPS says how, and each piece of code it names is where it says."""
    hops = set()
    for api, walk in walks().items():
        names = [name for _, name in walk]
        for hop in zip(names, names[1:], strict=False):
            hops.add(hop)
            assert hop in HOPS, f"{api} walk: nothing here says how {hop[0]} leads to {hop[1]}"
            how, *pieces = HOPS[hop]
            for piece in pieces:
                where, code = piece.split(": ", 1)
                wanted = ast.parse(code).body[0]
                wanted = wanted.value if isinstance(wanted, ast.Expr) else wanted
                nodes = ast.walk(definition(*where.split()))
                assert any(like(wanted, node) for node in nodes), (
                    f"{' -> '.join(hop)}, {how}: {piece}"
                )
    assert hops == set(HOPS), set(HOPS) - hops  # none left over from an older walk


# A document's walk (docs/architecture.md's file-walk): the service's modules its route's
# handler calls, in order (service/: the routes; serving/: what they stand on).
SERVICE = ("service", "serving")


def file_walk() -> list[tuple[str, str]]:
    """The page's walk of a /translate_file request: (file, function or Class.method) a call."""
    page = (ROOT / "docs/architecture.md").read_text()
    block = page.split("<!-- file-walk:start -->")[1].split("<!-- file-walk:end -->")[0]
    return [tuple(line.split()[1:3]) for line in block.splitlines() if line[:2].strip().isdigit()]


def service_classes() -> dict[str, ast.ClassDef]:
    """Each class of service/ and serving/ by name, with its file's path (serving/x.py) as
    `.where`."""
    found = {}
    for folder in SERVICE:
        for path in (PACKAGE / folder).glob("*.py"):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef):
                    node.where = f"{folder}/{path.name}"
                    found[node.name] = node
    return found


def attribute_types(cls: ast.ClassDef) -> dict[str, str]:
    """A class's attributes' class names: its annotated fields, its __init__'s annotated
    arguments (self.x = x) and what it makes there (self.x = X(...))."""
    found = {
        n.target.id: ast.unparse(n.annotation) for n in cls.body if isinstance(n, ast.AnnAssign)
    }
    for init in (n for n in cls.body if getattr(n, "name", "") == "__init__"):
        found |= {a.arg: ast.unparse(a.annotation) for a in init.args.args if a.annotation}
        for node in ast.walk(init):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                for target in node.targets:
                    if isinstance(target, ast.Attribute):
                        found[target.attr] = ast.unparse(node.value.func)
    return found


def calls_in_order(function: ast.AST) -> list[ast.Call]:
    """The calls `function` makes, in the order Python makes them (arguments first), but
    those that make the error it raises."""
    found = []

    class Calls(ast.NodeVisitor):
        def visit_Call(self, node: ast.Call) -> None:
            self.generic_visit(node)
            found.append(node)

        def visit_Raise(self, node: ast.Raise) -> None:
            pass  # an error raised: the request goes no further

    for statement in function.body:
        Calls().visit(statement)
    return found


def walk_of(path: str, name: str) -> list[tuple[str, str]]:
    """The calls a route's handler (`name` in `path`) makes into the service's other modules,
    (file, function or Class.method), in order: its own class's methods followed (those it
    calls, or hands to a worker thread), what it calls of its own module or outside the
    service left out."""
    classes = service_classes()
    owner = classes[name.split(".")[0]]
    imported = {
        alias.asname or alias.name: "/".join(node.module.split(".")[1:]) + ".py"
        for node in ast.parse((PACKAGE / path).read_text()).body
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith(tuple(f"seq2seq.{folder}." for folder in SERVICE))
        for alias in node.names
    }
    methods = {
        n.name: n for n in owner.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }

    def walk(function) -> list[tuple[str, str]]:
        local = {}  # a variable's class, where it is made by one: body = Body(...)
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        local[target.id] = ast.unparse(node.value.func)
        found = []
        for call in calls_in_order(function):
            handed = [a for a in call.args if ast.unparse(a).startswith("self.")]  # to_thread
            for callee in [call.func, *handed]:
                parts = ast.unparse(callee).split(".")
                if parts[0] == "self" and len(parts) == 2 and parts[1] in methods:
                    found += walk(methods[parts[1]])
                    continue
                if callee is not call.func:
                    continue
                kind = owner.name if parts[0] == "self" else local.get(parts[0])
                if kind is None and len(parts) == 1 and parts[0] in imported:
                    found.append((imported[parts[0]], parts[0]))
                    continue
                for part in parts[1:-1]:
                    kind = attribute_types(classes[kind]).get(part) if kind in classes else None
                if kind in classes and classes[kind].where != path and len(parts) > 1:
                    found.append((classes[kind].where, f"{kind}.{parts[-1]}"))
        return found

    return walk(definition(path, name))


def test_a_documents_walk_goes_through_the_service_in_a_line():
    """docs/architecture.md's walk of a /translate_file request is its handler's calls into the
    service's other modules, in order: at most 7 stops (a module entered; the handler's own
    the first), at most one return to a module already left."""
    (start, *calls) = file_walk()
    for path, name in [start, *calls]:
        definition(path, name)
    assert walk_of(*start) == calls
    stops = [start[0]]
    for path, _ in calls:
        if path != stops[-1]:
            stops.append(path)
    returns = len(stops) - len(set(stops))
    assert len(stops) <= 7 and returns <= 1, (stops, returns)
