"""Documents, beside chapter 6: what the service (and `translate --file`) reads besides plain
text, its texts out to translate and the translations put back, and which language a text is in.

    a file (report.docx)  --reading.read-->  a Document: its texts, each once
                                                |  translated (seq2seq/decoding/engines.py)
                                                v
    report.de.docx  <--Document.rebuilt--  one translation a text, every other byte as it was

    reading.py     a file by its name's extension, within limits; its safe and translated names
    formats.py     Document, BadDocument, TooLarge; .txt .html .srt
    office.py      .docx .pptx .odt .odp .epub: zip files of XML, each paragraph's texts
    markup.py      HTML in, HTML out: its text nodes out, their translations back
    detection.py   which language a text is in, among a few (source "auto", /detect; an extra)

May import: corpora (the language identifier its cleaning rule loads too), support. Never the
model, training, decoding, exports or serving: the service calls these, not the other way.
"""
