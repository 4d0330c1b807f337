"""LibreTranslate's file translation: a document in (seq2seq/documents/reading.py reads it and
rebuilds it translated), its translation kept for a while to download.

    POST /translate_file  multipart/form-data: file, source (or "auto"), target, api_key,
                          min_confidence, withheld_as (ours: api.withholding_field)
      -> {"translatedFileUrl": ".../download_file/<32 hex digits>.report.de.docx",
          "confidence": {"min_confidence": 0.5, "below": 2, "least_sure": [{"segment": 7,
          "confidence": 0.31, "text": "..."}, ...]} (ours: confidence_report; null where a
          model has no calibration)}: a format not listed, a file that is not what its
         name says, 400; more than
         serve.max_file_chars of text or a zip bomb, 413; its texts through the pair's
         chain, serve.max_sentences texts a job (as many as a request may send), one job
         after another, so that other clients' requests are decoded between; kept
         (KeptFiles: serve.files_dir, written whole or not at all; no room on the disk ->
         507, and the service goes on)
    GET /download_file/<name> -> the file, as an attachment named report.de.docx; a name
      not given by this service, or kept past serve.files_keep_minutes: 404
    serve.files off: both 403, as LibreTranslate's /translate_file (its /download_file
      answers 400: one answer here for one reason)

A /translate_file request's way, stop by stop, is docs/architecture.md's.
"""

import asyncio
import re
import time
import uuid
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response

from seq2seq.documents import reading
from seq2seq.documents.formats import BadDocument, TooLarge
from seq2seq.service.languages import Languages
from seq2seq.serving.api import (
    LIBRETRANSLATE,
    Body,
    HTTPError,
    answers,
    json_response,
    key_given,
    withholding_field,
)
from seq2seq.serving.batcher import Options
from seq2seq.serving.confidences import Sentences, Withholding, rounded
from seq2seq.serving.core import Core
from seq2seq.serving.refusals import NoRoom
from seq2seq.support.files import atomic_write

FILE_FIELDS = ("file", "source", "target", "api_key", "min_confidence", "withheld_as")
MODELS_OWN = Options()  # a document's texts are decoded with each model's own decode settings
DETECTED_CHARS = 4096  # characters of a document's texts its source language is told from
REPORT_BELOW = 0.5  # no min_confidence in force: the report's bound (even chances)
REPORTED = 20  # the least sure segments a report lists, at most (all are counted)
REPORTED_CHARS = 100  # of each one's text


class FileTranslation:
    """The routes of LibreTranslate's file translation, over the core (core.py) and its
    languages (languages.py)."""

    def __init__(self, core: Core, languages: Languages):
        self.core, self.languages, self.settings = core, languages, core.settings
        s = self.settings
        self.kept = KeptFiles(Path(s.files_dir), 60 * s.files_keep_minutes, s.files_max_mib * 2**20)

    def refuse_if_off(self) -> None:
        if not self.settings.files:
            raise HTTPError(403, "Files translation are disabled on this server.")

    @answers(LIBRETRANSLATE)
    async def translate_file(self, request: Request) -> Response:
        self.refuse_if_off()
        body = Body(request, self.settings, "max_file_bytes")
        upload, fields = await body.file_fields(FILE_FIELDS, required=("source", "target"))
        bound = withholding_field(fields, self.settings)
        account = self.core.checks.key(key_given(request, fields))
        source, target = fields["source"], fields["target"]
        stored, report = await self.kept_translation(
            request, upload, source, target, account, bound
        )
        url = request.url_for("download_file", name=stored)
        return json_response({"translatedFileUrl": str(url), "confidence": report})

    async def kept_translation(
        self, request: Request, upload, source, target, account, bound: Withholding,
        options: Options = MODELS_OWN,
    ) -> tuple[str, dict | None]:  # fmt: skip
        """The uploaded document translated from `source` ("auto": detected) to `target`
        within the limits of the key's `account` (checks.py), decoded with `options` (DeepL's:
        a glossary's terms), each sentence below `bound` withheld, and kept: its stored name
        (DeepL's /v2/document's too), and the confidence_report of its segments."""
        name, data = reading.safe_name(upload.filename or ""), await upload.read()
        document = await asyncio.to_thread(self.read, name, data)
        await self.core.checks.charge(account, document.chars)
        if source == "auto":
            first = " ".join(document.texts)[:DETECTED_CHARS]
            source = self.languages.detected(first)["language"] if first else target
        chain = self.core.models.chain(source, target, itself=True)
        answers = await self.translated(request, document.texts, chain, options, bound)
        built = await asyncio.to_thread(document.rebuilt, [a.text for a in answers])
        out_name = reading.translated_name(name, target)
        stored = await asyncio.to_thread(self.kept.keep, out_name, built)
        return stored, confidence_report(document.texts, answers, bound)

    def read(self, name: str, data: bytes):
        """The document (reading.read), its mistakes a 400, too much of it a 413."""
        if not data:
            raise HTTPError(400, "Invalid request: empty file")
        try:
            return reading.read(name, data, self.settings.max_file_chars)
        except TooLarge as error:
            raise HTTPError(413, f"{error} (serve.max_file_chars)") from None
        except BadDocument as error:
            raise HTTPError(400, str(error)) from None

    async def translated(
        self, request: Request, texts: list[str], chain: list, options: Options,
        bound: Withholding,
    ) -> list[Sentences]:  # fmt: skip
        """The texts through the pair's `chain`, serve.max_sentences a job in turn (the most
        a request may send), each sentence below `bound` withheld: each text's Sentences
        (.text: its translation); their sentences not counted: serve.max_file_chars holds
        them."""
        step, answers = self.settings.max_sentences, []
        for start in range(0, len(texts), step):
            chunk = texts[start : start + step]
            done = await self.core.translate(request, chain, chunk, options, False, bound)
            answers += done.sentences
        return answers

    async def download_file(self, request: Request) -> Response:
        self.refuse_if_off()
        name = request.path_params["name"]
        path = await asyncio.to_thread(self.kept.path, name)
        if path is None:
            raise HTTPError(404, f"no file {name!r} here: each is kept "
                            f"{self.settings.files_keep_minutes:g} minutes "
                            "(serve.files_keep_minutes)")  # fmt: skip
        return attachment(path)


def confidence_report(texts: list[str], answers: list[Sentences], bound: Withholding):
    """/translate_file's "confidence": None if a segment's (a text of the document: from its
    sentences', Sentences.confidence) is not known (a model without a calibration); else the bound
    (the min_confidence in force, withheld below it; else REPORT_BELOW), how many segments
    are below it, and the REPORTED least sure of those, each with its number (from 1, in
    the document's order), its confidence and its source text's first REPORTED_CHARS."""
    sure = [answer.confidence for answer in answers]
    if None in sure:
        return None
    least = bound.least or REPORT_BELOW
    below = sorted((p, number) for number, p in enumerate(sure, 1) if p < least)
    listed = [
        {"segment": n, "confidence": rounded(p), "text": texts[n - 1][:REPORTED_CHARS]}
        for p, n in below[:REPORTED]
    ]
    return {"min_confidence": least, "below": len(below), "least_sure": listed}


def attachment(path: Path) -> FileResponse:
    """A kept file as an attachment named as it was uploaded, translated (report.de.docx)."""
    return FileResponse(path, filename=path.name.partition(".")[2])


class KeptFiles:
    """The translated files, in one folder: each kept `keep_s` seconds, all of them in
    `most_bytes` at most (the oldest removed first); written whole or not at all."""

    NAME = re.compile(r"[0-9a-f]{32}\.[\w.-]+")  # the names keep() gives

    def __init__(self, folder: Path, keep_s: float, most_bytes: int):
        self.folder, self.keep_s, self.most_bytes = folder, keep_s, most_bytes

    def keep(self, name: str, data: bytes) -> str:
        """`data` kept as a new file (<32 hex digits>.name); its stored name."""
        self.sweep(len(data))
        stored = f"{uuid.uuid4().hex}.{name}"
        try:
            with atomic_write(self.folder / stored, "wb") as file:
                file.write(data)
        except OSError as error:  # a full disk: this request fails, the service goes on
            raise NoRoom(f"no room to keep the translated file: {error.strerror}") from None
        return stored

    def path(self, stored: str) -> Path | None:
        """The file of a name keep() gave, if it is still kept."""
        if not self.NAME.fullmatch(stored):
            return None
        path = self.folder / stored
        try:
            fresh = time.time() - path.stat().st_mtime < self.keep_s
        except OSError:
            return None
        return path if fresh else None

    def by_key(self, key: str) -> Path | None:
        """The file kept under the random part of its name, `key` (DeepL's document_key), if
        it is still kept."""
        if not re.fullmatch(r"[0-9a-f]{32}", key):
            return None
        found = sorted(self.folder.glob(f"{key}.*")) if self.folder.is_dir() else []
        return self.path(found[0].name) if found else None

    def sweep(self, coming: int = 0) -> None:
        """Removes the files kept past keep_s, then the oldest until `coming` more bytes fit
        in most_bytes (another worker process may remove a file first: then it is gone)."""
        now, files = time.time(), []
        for path in self.folder.glob("*") if self.folder.is_dir() else []:
            try:
                stat = path.stat()
            except OSError:
                continue
            if now - stat.st_mtime > self.keep_s:
                path.unlink(missing_ok=True)
            else:
                files.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in files) + coming
        for _, size, path in sorted(files):
            if total <= self.most_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size
