"""Downloads, checked and resumable: every file `make data` fetches goes through here.

    Downloads(data/<corpus.name>/raw/, mirror).fetch(url, name, sha256)
        raw/<name> there, its size and SHA-256 those of raw/manifest.json (or `sha256`)?
            yes: used as it is, no request
            no:  url (its origin replaced by the mirror) --streamed, a progress bar-->
                 raw/<name>.part (a stopped download resumes there: an HTTP Range request)
                 --whole, its SHA-256 the expected one, an archive (.gz, .zip) opening to
                 its end--> raw/<name>, and in raw/manifest.json: {name: {url, the
                 mirror's mirror_url, size, sha256, and for an archive opens: true}}

So a second `make data` whose files are all in the manifest, present and intact, makes no
request at all, and one that downloads again (a file deleted, a new machine) gets exactly the
bytes of the first or an error. The expected sum is the caller's pinned one (Multi30k's) or
else the manifest's; a file without either is recorded as it comes. A download that stops
early keeps its .part, to be resumed by the next run; one whose sum is wrong, or an archive
that does not open (a server that sent a cut file and said its cut length), keeps nothing.
file:// URLs work the same (without resuming). `keep` records a file made here (a sacreBLEU
test set's text) like a download.
"""

import gzip
import http.client
import json
import shutil
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from tqdm import tqdm

from seq2seq.support.errors import UserError, warn
from seq2seq.support.files import atomic_write, file_hash, write_json

MANIFEST = "manifest.json"
BLOCK = 1 << 16  # bytes read at a time
ARCHIVES = {".gz": "gzip", ".zip": "zip"}  # opened to their end before they are recorded


class DownloadError(UserError):
    pass


class Downloads:
    """The downloaded files of one corpus, in `raw_dir`, and their manifest."""

    def __init__(self, raw_dir: Path, mirror: str = ""):
        self.raw_dir = raw_dir
        self.mirror = mirror
        self.manifest_path = raw_dir / MANIFEST
        self.manifest = self._read_manifest()

    def _read_manifest(self) -> dict:
        if not self.manifest_path.exists():
            return {}
        try:
            return json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            raise DownloadError(
                f"{self.manifest_path}: not a manifest ({error}); delete it to download again"
            ) from None

    def mirrored(self, url: str) -> str:
        """`url` with its scheme and host replaced by the mirror's base URL, if there is one."""
        parts = urllib.parse.urlsplit(url)
        if not self.mirror or parts.scheme not in ("http", "https"):
            return url
        query = f"?{parts.query}" if parts.query else ""
        return f"{self.mirror.rstrip('/')}{parts.path}{query}"

    def cached(self, name: str, sha256: str | None = None) -> Path | None:
        """raw/<name> if it is there, its size and SHA-256 are the expected ones, and, for
        an archive, it opens (an archive recorded before downloads were opened is opened once:
        one that does not is deleted, with a warning, to be downloaded again)."""
        path, expected = self.raw_dir / name, self._expected(name, sha256)
        entry = self.manifest.get(name, {})
        if not path.is_file() or expected is None:
            return None
        if "size" in entry and path.stat().st_size != entry["size"]:
            return None
        if file_hash(path) != expected:
            return None
        if name.endswith(tuple(ARCHIVES)) and not entry.get("opens"):
            if problem := unreadable(path):
                warn(f"{path}: {problem}; downloading it again")
                path.unlink()
                self.manifest.pop(name, None)
                self._write_manifest()
                return None
            if entry:
                self._record(name, entry["url"], path, expected, entry.get("mirror_url", ""))
        return path

    def _expected(self, name: str, sha256: str | None) -> str | None:
        return sha256 or self.manifest.get(name, {}).get("sha256")

    def fetch(self, url: str, name: str, sha256: str | None = None) -> Path:
        """raw/<name>, from the cache if it is intact, else downloaded from `url` and checked."""
        if path := self.cached(name, sha256):
            return path
        part = self.raw_dir / f"{name}.part"
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        source = self.mirrored(url)
        if source != url:
            print(f"{name}: from {source}, the mirror of {url}")
        self._download(source, part, name)
        digest, expected = file_hash(part), self._expected(name, sha256)
        if expected is not None and digest != expected:
            part.unlink()
            where = "the expected" if sha256 else f"the one in {self.manifest_path}"
            raise DownloadError(
                f"{source}: SHA-256 {digest} does not match {where} {expected}; nothing was "
                "kept (a corrupt download, or the file changed at its source)"
            )
        if problem := unreadable(part, name):
            part.unlink()
            raise DownloadError(
                f"{source}: {problem}; nothing was kept (the server sent a cut or damaged "
                "file): run `make data` again to download it again"
            )
        path = self.raw_dir / name
        part.replace(path)
        self._record(name, url, path, digest, source)
        return path

    def keep(self, name: str, made_from: Path, origin: str) -> Path:
        """Copy a file made here into raw/<name> and record it, `origin` in place of its URL; if
        the manifest has it, it must have the recorded sum."""
        digest, expected = file_hash(made_from), self._expected(name, None)
        if expected is not None and digest != expected:
            raise DownloadError(
                f"{made_from} (from {origin}): SHA-256 {digest} does not match the one in "
                f"{self.manifest_path} {expected}; nothing was kept"
            )
        path = self.raw_dir / name
        with made_from.open("rb") as source, atomic_write(path, "wb") as target:
            shutil.copyfileobj(source, target)
        self._record(name, origin, path, digest)
        return path

    def _record(self, name: str, url: str, path: Path, digest: str, source: str = "") -> None:
        """The manifest's entry of `name`: its URL (and the mirror's, `source`, if it came
        from one), size and SHA-256."""
        mirror = {"mirror_url": source} if source and source != url else {}
        entry = {"url": url, **mirror, "size": path.stat().st_size, "sha256": digest}
        archive = name.endswith(tuple(ARCHIVES))
        self.manifest[name] = {**entry, "opens": True} if archive else entry
        self._write_manifest()

    def _write_manifest(self) -> None:
        write_json(self.manifest_path, dict(sorted(self.manifest.items())))

    def read_json(self, url: str):
        """The JSON answer of a web API (the OPUS API), through the mirror."""
        source = self.mirrored(url)
        try:
            with urllib.request.urlopen(source, timeout=60) as response:
                return json.loads(response.read())
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            raise DownloadError(f"could not download {source} ({describe(error)})") from None
        except ValueError as error:
            raise DownloadError(f"{source}: not a JSON answer ({error})") from None

    def _download(self, url: str, part: Path, name: str) -> None:
        """Stream `url` into `part`, going on from where an earlier download of it stopped."""
        start = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={start}-"} if start else {}
        try:
            response = urllib.request.urlopen(
                urllib.request.Request(url, headers=headers), timeout=60
            )
        except urllib.error.HTTPError as error:
            if error.code == 416 and start:  # the .part is no prefix of the file: start over
                part.unlink()
                return self._download(url, part, name)
            raise DownloadError(f"could not download {url} ({describe(error)})") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            raise DownloadError(f"could not download {url} ({describe(error)})") from None
        with response:
            if response.status != 206:  # the whole file (a server or file:// URL without ranges)
                start = 0
            length = response.headers.get("Content-Length")
            total = start + int(length) if length is not None else None
            with (
                part.open("ab" if start else "wb") as out,
                tqdm(total=total, initial=start, unit="B", unit_scale=True, desc=name) as bar,
            ):
                try:
                    while block := response.read(BLOCK):
                        out.write(block)
                        bar.update(len(block))
                except (OSError, http.client.HTTPException):
                    pass  # a connection that broke: the size check below says so
        size = part.stat().st_size
        if total is not None and size != total:
            raise DownloadError(
                f"{url}: the download stopped at {size:,} of {total:,} bytes; run `make data` "
                f"again to resume it ({part} is kept)"
            )


SCHEMES = ("https", "http", "file")  # what urllib opens here


def url_problems(key: str, url: str) -> Iterator[str]:
    """A config's URL (corpus.base_url, corpus.mirror) that urllib cannot open, as an error
    message: a local folder is a file:// URL."""
    if url and urllib.parse.urlsplit(url).scheme not in SCHEMES:
        local = f" (a local folder: file://{Path(url).absolute()})" if "://" not in url else ""
        yield f"'{key}' must be an http(s):// or file:// URL, got {url!r}{local}"


def unreadable(path: Path, name: str = "") -> str | None:
    """What is wrong with the archive `path` (named `name`, else as itself), read to its end:
    a gzip stream cut short or a zip member whose checksum fails; None if it is whole or not
    an archive."""
    name = name or path.name
    try:
        if name.endswith(".gz"):
            with gzip.open(path, "rb") as stream:
                while stream.read(BLOCK):
                    pass
        elif name.endswith(".zip"):
            with zipfile.ZipFile(path) as archive:
                if bad := archive.testzip():
                    return f"not a whole zip file ({bad} is damaged)"
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as error:
        return f"not a whole {ARCHIVES['.' + name.rpartition('.')[2]]} file ({error})"
    return None


def describe(error: Exception) -> str:
    """An error of urllib as a few words: "HTTP 404 Not Found", "Connection refused"."""
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    if isinstance(error, urllib.error.URLError):
        return str(error.reason)
    return str(error) or type(error).__name__
