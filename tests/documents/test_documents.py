"""Documents (seq2seq/documents/reading.py, formats.py, office.py): each format's texts out and
translations back, read again by the libraries made for each format (python-docx,
python-pptx, odfpy), formatting kept; bad files refused with a BadDocument that names them."""

import io
import zipfile

import docx
import pptx
import pytest
from docx.oxml.ns import qn
from odf import teletype
from odf.draw import Frame, Page, TextBox
from odf.opendocument import OpenDocumentPresentation, OpenDocumentText, load
from odf.style import MasterPage, PageLayout, Style, TextProperties
from odf.table import Table, TableCell, TableColumn, TableRow
from odf.text import A, H, P, S, Span, Tab

from seq2seq.documents import office, reading
from seq2seq.documents.formats import BadDocument, TooLarge

from samples import saved, word_xml, zipped


def translated(name: str, data: bytes, most_chars: int = 100_000) -> tuple[list[str], bytes]:
    """The document's texts, and the document with each text upper-cased as its translation."""
    document = reading.read(name, data, most_chars)
    return document.texts, document.rebuilt([text.upper() for text in document.texts])


def test_a_word_document_keeps_its_runs_styles_tables_headers_and_links():
    word = docx.Document()
    word.add_heading("one is one", level=1)
    paragraph = word.add_paragraph("two is ", style="List Bullet")
    paragraph.add_run("two").bold = True
    paragraph.add_run(" and three")
    split = word.add_paragraph()  # one sentence Word split in runs of one formatting
    for piece in ("four ", "is ", "four"):
        split.add_run(piece).italic = True
        split._p.append(split._p.makeelement(qn("w:proofErr"), {qn("w:type"): "spellStart"}))
    tabbed = word.add_paragraph("left")
    tabbed.add_run().add_tab()
    tabbed.add_run("right")
    table = word.add_table(rows=1, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "five", "six is six"
    word.sections[0].header.paragraphs[0].text = "a header"
    word.sections[0].footer.paragraphs[0].text = "one is one"  # as the heading: once
    linked = word.add_paragraph("see ")
    link = linked._p.makeelement(qn("w:hyperlink"), {qn("r:id"): "rId99"})
    run = linked.add_run("the site")._r
    link.append(run)  # the run moved into the link
    linked._p.append(link)

    texts, out = translated("report.docx", saved(word))

    assert texts == [
        "one is one", "two is", "two", "and three", "four is four", "left", "right", "five",
        "six is six", "see", "the site", "a header",
    ]  # fmt: skip
    back = docx.Document(io.BytesIO(out))
    heading, bullet, merged, tabs, *_ = back.paragraphs
    assert (heading.style.name, heading.text) == ("Heading 1", "ONE IS ONE")
    assert bullet.style.name == "List Bullet"
    assert [(r.text, r.bold) for r in bullet.runs] == [("TWO IS ", None), ("TWO", True),
                                                        (" AND THREE", None)]  # fmt: skip
    assert [r.text for r in merged.runs] == ["FOUR IS FOUR", "", ""]
    assert all(r.italic for r in merged.runs)
    assert tabs.text == "LEFT\tRIGHT"
    assert [c.text for c in back.tables[0].rows[0].cells] == ["FIVE", "SIX IS SIX"]
    assert back.sections[0].header.paragraphs[0].text == "A HEADER"
    assert back.sections[0].footer.paragraphs[0].text == "ONE IS ONE"
    assert back.paragraphs[-1]._p.find(qn("w:hyperlink")).get(qn("r:id")) == "rId99"
    assert back.paragraphs[-1].text.startswith("SEE ")
    before = {i.filename: i for i in zipfile.ZipFile(io.BytesIO(saved(word))).infolist()}
    after = zipfile.ZipFile(io.BytesIO(out)).infolist()
    assert [i.filename for i in after] == list(before)  # every member, in its order
    assert all(i.compress_type == before[i.filename].compress_type for i in after)


def test_a_presentation_keeps_its_runs_titles_and_notes():
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "seven is seven"
    body = slide.placeholders[1].text_frame
    body.text = "eight"
    bold = body.paragraphs[0].add_run()
    bold.text, bold.font.bold = " nine", True
    body.add_paragraph().text = "ten"
    slide.notes_slide.notes_text_frame.text = "say eleven"

    texts, out = translated("talk.pptx", saved(deck))

    assert texts == ["seven is seven", "eight", "nine", "ten", "say eleven"]
    back = pptx.Presentation(io.BytesIO(out)).slides[0]
    assert back.shapes.title.text == "SEVEN IS SEVEN"
    first, second = back.placeholders[1].text_frame.paragraphs
    assert [(r.text, r.font.bold) for r in first.runs] == [("EIGHT", None), (" NINE", True)]
    assert second.text == "TEN"
    assert back.notes_slide.notes_text_frame.text == "SAY ELEVEN"


def odt_document() -> OpenDocumentText:
    text = OpenDocumentText()
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    text.automaticstyles.addElement(bold)
    layout = PageLayout(name="Page")
    text.automaticstyles.addElement(layout)
    master = MasterPage(name="Standard", pagelayoutname=layout)
    from odf.style import Header

    header = Header()
    header.addElement(P(text="the header"))
    master.addElement(header)
    text.masterstyles.addElement(master)
    text.text.addElement(H(outlinelevel=1, text="one is one"))
    paragraph = P(text="two ")
    paragraph.addElement(S(c=2))
    paragraph.addText("is ")
    paragraph.addElement(Span(stylename=bold, text="two"))
    paragraph.addText(" and three")
    text.text.addElement(paragraph)
    linked = P(text="see ")
    linked.addElement(A(href="https://example.org/", text="the site"))
    linked.addElement(Tab())
    linked.addText("four")
    text.text.addElement(linked)
    table = Table(name="T")
    table.addElement(TableColumn())
    row = TableRow()
    cell = TableCell()
    cell.addElement(P(text="five"))
    row.addElement(cell)
    table.addElement(row)
    text.text.addElement(table)
    return text


def test_an_opendocument_text_keeps_its_spans_links_tables_and_headers():
    texts, out = translated("notes.odt", saved(odt_document()))

    assert texts == ["the header", "one is one", "two   is", "two", "and three", "see",
                     "the site", "four", "five"]  # fmt: skip
    back = load(io.BytesIO(out))
    heading, paragraph, linked, table = back.text.childNodes
    assert teletype.extractText(heading) == "ONE IS ONE"
    assert teletype.extractText(paragraph) == "TWO   IS TWO AND THREE"
    span = next(n for n in paragraph.childNodes if getattr(n, "qname", ("", ""))[1] == "span")
    assert (span.getAttribute("stylename"), str(span)) == ("Bold", "TWO")
    link = next(n for n in linked.childNodes if getattr(n, "qname", ("", ""))[1] == "a")
    assert (link.getAttribute("href"), str(link)) == ("https://example.org/", "THE SITE")
    assert teletype.extractText(table) == "FIVE"
    assert "THE HEADER" in zipfile.ZipFile(io.BytesIO(out)).read("styles.xml").decode()
    first = zipfile.ZipFile(io.BytesIO(out)).infolist()[0]
    assert (first.filename, first.compress_type) == ("mimetype", zipfile.ZIP_STORED)


def test_an_opendocument_presentation_translates_its_text_boxes():
    deck = OpenDocumentPresentation()
    layout = PageLayout(name="Page")
    deck.automaticstyles.addElement(layout)
    master = MasterPage(name="Default", pagelayoutname=layout)
    deck.masterstyles.addElement(master)
    page = Page(masterpagename=master)
    frame = Frame(width="10cm", height="2cm", x="1cm", y="1cm")
    box = TextBox()
    box.addElement(P(text="seven is seven"))
    frame.addElement(box)
    page.addElement(frame)
    deck.presentation.addElement(page)

    texts, out = translated("talk.odp", saved(deck))

    assert texts == ["seven is seven"]
    assert teletype.extractText(load(io.BytesIO(out)).presentation) == "SEVEN IS SEVEN"


def epub(pages: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # stored
        archive.writestr("META-INF/container.xml", "<container/>")
        for name, text in pages.items():
            archive.writestr(name, text)
    return out.getvalue()


def test_an_epub_translates_its_pages_and_table_of_contents_and_keeps_its_mimetype_first():
    page = ('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n<html><head><title>Book'
            "</title><style>p {}</style></head>"
            "<body><p>one <b>is</b> one</p></body></html>")  # fmt: skip
    toc = ("<ncx><navMap><navPoint><navLabel><text>Chapter one</text></navLabel></navPoint>"
           "</navMap></ncx>")  # fmt: skip
    texts, out = translated("book.epub", epub({"OEBPS/one.xhtml": page, "OEBPS/toc.ncx": toc}))

    assert texts == ["Book", "one", "is", "Chapter one"]
    archive = zipfile.ZipFile(io.BytesIO(out))
    assert archive.read("OEBPS/one.xhtml").decode() == page.replace("Book", "BOOK").replace(
        "one <b>is</b> one", "ONE <b>IS</b> ONE"
    )
    assert "<text>CHAPTER ONE</text>" in archive.read("OEBPS/toc.ncx").decode()
    first = archive.infolist()[0]
    assert (first.filename, first.compress_type) == ("mimetype", zipfile.ZIP_STORED)


def test_plain_text_html_and_subtitles_keep_everything_but_their_texts():
    texts, out = translated("notes.txt", b"one is one\r\n\r\n  two\r\none is one")
    assert texts == ["one is one", "two"]
    assert out.decode() == "ONE IS ONE\r\n\r\n  TWO\r\nONE IS ONE"

    page = '<!DOCTYPE html><p title="x">three &amp; four</p><script>s("x")</script>'
    assert translated("page.html", page.encode())[1].decode() == page.replace(
        "three &amp; four", "THREE &amp; FOUR"
    )

    srt = ("1\n00:00:01,000 --> 00:00:02,000\nfive is\nfive\n\n"
           "2\n00:00:03,000 --> 00:00:04,500\nsix\n")  # fmt: skip
    texts, out = translated("film.srt", srt.encode())
    assert texts == ["five is five", "six"]
    assert out.decode() == (
        "1\n00:00:01,000 --> 00:00:02,000\nFIVE IS FIVE\n\n2\n00:00:03,000 --> 00:00:04,500\nSIX\n"
    )


@pytest.mark.parametrize(
    "name, data, error",
    [
        ("report.pdf", b"%PDF-1.7", r"report.pdf: .pdf is not a file extension translated "
                                    r"here; the formats: .txt, .html, .htm, .srt, .docx"),
        ("report", b"text", "a name without an extension"),
        ("report.docx", b"plain text, not a zip", "report.docx: not a zip file"),
        ("slides.pptx", zipped({"word/document.xml": word_xml(b"")}), "no ppt/presentation.xml"),
        ("report.docx", zipped({"word/document.xml": b"<w:document"}),
         "word/document.xml is not XML"),
        ("notes.txt", b"caf\xe9", r"notes.txt: not UTF-8 text \(.txt\): byte 4"),
        ("film.srt", b"no subtitles here", "no subtitles in it"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_what_its_name_says_is_refused_naming_it(name, data, error):
    with pytest.raises(BadDocument, match=error):
        reading.read(name, data, 1000)


def test_a_zip_bomb_and_a_document_of_a_million_paragraphs_are_too_large():
    bomb = zipped({"word/document.xml": word_xml(b""), "padding": bytes(60 * 2**20)})
    assert len(bomb) < 2**20  # 60 KB, 60 MB unpacked
    with pytest.raises(TooLarge, match="unpacks to more than 50 times its size"):
        reading.read("bomb.docx", bomb, 100_000)

    paragraph = b"<w:p><w:r><w:t>one</w:t></w:r></w:p>"
    million = paragraph * 1_000_000
    with pytest.raises(TooLarge):  # 36 MB of paragraphs, packed 200 times
        reading.read("long.docx", zipped({"word/document.xml": word_xml(million)}), 100_000)

    thousand = zipped({"word/document.xml": word_xml(paragraph * 1000)})
    with pytest.raises(TooLarge, match="long.docx holds 3,000 characters of text; the limit is 2,"):
        reading.read("long.docx", thousand, 2000)

    many = zipped({"word/document.xml": word_xml(b""), **{f"{n}": b"" for n in range(10_001)}})
    with pytest.raises(TooLarge, match="a zip of 10,002 files"):
        reading.read("many.docx", many, 100)


def test_entities_are_not_expanded_so_a_billion_laughs_costs_nothing():
    laughs = (b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;&a;'
              b'&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>')  # fmt: skip
    document = laughs + word_xml(b"<w:p><w:r><w:t>&c;</w:t></w:r></w:p>")
    data = zipped({"word/document.xml": document})
    assert reading.read("laughs.docx", data, 100).texts == []  # &c; left unexpanded


def test_a_client_given_name_is_made_safe_to_write():
    assert reading.safe_name("../../etc/passwd.txt") == "passwd.txt"
    assert reading.safe_name("..\\..\\report v2.docx") == "report_v2.docx"
    assert reading.safe_name("..") == "document"
    assert reading.translated_name("report.docx", "de") == "report.de.docx"
    assert set(office.FORMATS) <= set(reading.FORMATS)
