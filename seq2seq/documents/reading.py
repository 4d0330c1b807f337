"""Documents to translate (LibreTranslate's POST /translate_file, `translate --file`): a file
read as the format its name's extension says, within limits.

    read(name, data, most_chars) -> a Document (formats.py): its texts, each once, and the
      file rebuilt from their translations, every other byte as it was
        .txt .html .srt                  formats.py
        .docx .pptx .odt .odp .epub      office.py: zip files of XML, each paragraph's text
                                         of one formatting (a run, a span, a link)
    safe_name(a client's name) -> a name to write; translated_name -> report.de.docx

Bad input is a BadDocument (a UserError; formats.py) naming the file and what is wrong: a
format not listed, a file that is not what its extension says (not UTF-8 text, not a zip, XML
that does not parse); TooLarge past `most_chars` characters of text, or a zip that unpacks to
more than office.UNZIPPED_PER_BYTE times its size or holds over office.MOST_MEMBERS files.
"""

import re
from pathlib import PurePosixPath, PureWindowsPath

from seq2seq.documents import formats, office

FORMATS = {**formats.FORMATS, **office.FORMATS}  # extension -> reader of its bytes


def read(name: str, data: bytes, most_chars: int) -> formats.Document:
    """The document `name`, from its bytes (see the module's docstring)."""
    suffix = PurePosixPath(name).suffix.lower()
    reader = FORMATS.get(suffix)
    if reader is None:
        raise formats.BadDocument(
            f"{name}: {suffix or 'a name without an extension'} is not a file extension translated "
            f"here; the formats: {', '.join(FORMATS)}"
        )
    try:
        document = reader(data)
    except formats.BadDocument as error:
        raise type(error)(f"{name}: {error}") from None
    if document.chars > most_chars:
        raise formats.TooLarge(
            f"{name} holds {document.chars:,} characters of text; the limit is {most_chars:,}"
        )
    return document


def safe_name(name: str) -> str:
    """A client's file name as one we may write: its last part (no folders, no `..`), each
    character but letters, digits, `.`, `-` and `_` made `_`."""
    base = PureWindowsPath(PurePosixPath(name).name).name  # either kind of slash
    cleaned = re.sub(r"[^\w.-]", "_", base).lstrip(".")
    return cleaned[-120:] or "document"


def translated_name(name: str, target: str) -> str:
    """report.docx, translated to de -> report.de.docx."""
    path = PurePosixPath(name)
    return f"{path.stem}.{target}{path.suffix}"
