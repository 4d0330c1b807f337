"""LibreTranslate's routes about languages: those the service has, which one a text is in, and
what LibreTranslate's page starts with.

    GET  /languages  -> [{"code", "name", "targets": [...]}]: every language of the models
                     (models.py), with the targets it reaches
    GET  /frontend/settings -> {"charLimit", "suggestions", "language": {"source", "target"},
                     "filesTranslation", "supportedFilesFormat", ...}: what LibreTranslate's
                     page reads at start-up
    POST /detect     {"q": "..."} (JSON or a form) -> [{"confidence": 0..100, "language"}]

Detection (Languages.candidates, also source "auto" of a translation or a document): with one
source language, that one, with as confidence the share of the text's words its vocabulary
knows (0 to 100, as LibreTranslate's); with several, seq2seq/documents/detection.py's.
"""

from starlette.requests import Request
from starlette.responses import Response

from seq2seq.documents import reading
from seq2seq.documents.detection import Detector
from seq2seq.serving.api import LIBRETRANSLATE, Body, HTTPError, answers, json_response, key_given
from seq2seq.serving.core import Core
from seq2seq.support.errors import UserError

DETECT_FIELDS = ("q", "api_key")


class Languages:
    """The routes about languages, over the core (core.py)."""

    def __init__(self, core: Core):
        self.core, self.settings, self.models = core, core.settings, core.models
        for option in ("frontend_source", "frontend_target"):
            code, known = getattr(self.settings, option), [*self.models.names(), "auto"]
            if code and code not in known[: None if option == "frontend_source" else -1]:
                raise UserError(f"serve.{option}: {code!r} is not a language of the service's "
                                f"models ({', '.join(self.models.names())})")  # fmt: skip
        self.detector, self.no_detector = None, ""
        if len(self.models.sources) > 1:
            try:
                self.detector = Detector(self.models.sources)
            except UserError as error:  # the extra is missing; a language it does not know
                self.no_detector = str(error)

    @property
    def frontend_languages(self) -> dict:
        """The languages LibreTranslate's page starts with: serve.frontend_source and
        frontend_target, else the first model's (the source: auto where the service detects,
        as LibreTranslate's page starts)."""
        names, default = self.models.names(), self.models.default
        auto = {"code": "auto", "name": "Auto Detect"}
        source = self.settings.frontend_source or default.source.code
        if not self.settings.frontend_source and self.detector is not None:
            source = "auto"
        target = self.settings.frontend_target or default.target.code
        named = {code: {"code": code, "name": names[code].name} for code in names}
        return {"source": auto if source == "auto" else named[source], "target": named[target]}

    async def list_languages(self, request: Request) -> Response:
        return json_response(self.models.languages())

    async def frontend_settings(self, request: Request) -> Response:
        """GET /frontend/settings: what LibreTranslate's own page, and clients that read it
        first, need to know of the service, in LibreTranslate 1.9's fields."""
        keys = self.core.checks.keys
        return json_response({
            "charLimit": self.settings.max_chars,  # a text's, as the page sends one
            "frontendTimeout": self.settings.frontend_timeout_ms,
            "apiKeys": bool(keys),
            "keyRequired": bool(keys) and keys.required,
            "suggestions": self.settings.suggestions,
            "filesTranslation": self.settings.files,
            "supportedFilesFormat": list(reading.FORMATS) if self.settings.files else [],
            "language": self.frontend_languages,
        })  # fmt: skip

    @answers(LIBRETRANSLATE)
    async def detect(self, request: Request) -> Response:
        fields = await Body(request, self.settings).fields(DETECT_FIELDS)
        self.core.checks.key(key_given(request, fields))
        q = fields.get("q")
        if not q or not isinstance(q, str):
            raise HTTPError(400, "Invalid request: missing q parameter (a string)")
        self.core.checks.text(q, "'q'")
        return json_response(self.candidates(q))

    def candidates(self, text: str) -> list[dict]:
        """The text's likely source languages, best first, with their confidence (0 to 100):
        the detector's (seq2seq/documents/detection.py) among the service's source languages;
        with one, that one, its confidence the share of the words its vocabulary knows."""
        if len(self.models.sources) == 1:
            vocab = self.models.default.engine.src_vocab
            words = vocab.normalize(text).split()
            known = 1 - len(vocab.unknown(text)) / len(words) if words else 0.0
            return [{"confidence": round(100 * known, 1), "language": self.models.sources[0]}]
        if self.detector is None:
            raise HTTPError(501, f"no language detection here: {self.no_detector}")
        ranked = self.detector.detect(text)[:3]  # as many as LibreTranslate gives
        return [{"confidence": confidence, "language": code} for code, confidence in ranked]

    def detected(self, text: str) -> dict:
        """The language `text` is most likely in: {"confidence", "language"}."""
        return self.candidates(text)[0]
