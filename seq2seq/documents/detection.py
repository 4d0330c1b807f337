"""Which language a text is in, among a few: the service's `source: "auto"` and /detect. An
optional extra: pip install 'seq2seq[detect]'.

    Detector(["de", "en"])              among these codes (BCP 47; the libraries know ISO 639-1,
                                        the primary subtag)
    detector.detect(text) -> [(code, confidence 0..100)], best first

    one word   -> lingua                lingua-language-detector, its models of these
                                        languages only
    more words -> py3langid             its naive Bayes over character n-grams

Picked by measurement (`make bench-detect`: benchmarks/results/detection.md, the Multi30k test
sets whole and cut to 1, 2 and 3 words): py3langid is right on whole sentences, and fast, but
takes many single English words ("A", "Two", "The") for German; lingua is right on nearly every
single word, less often than py3langid on two or three; langdetect, LibreTranslate's own (with
LexiLang, AGPL, under 20 characters), is right on fewer short texts than the two together, and
many times slower.
"""

from seq2seq.corpora.cleaning import primary, py3langid_identifier
from seq2seq.support.errors import UserError


class Detector:
    """The language of a text, among `codes`."""

    def __init__(self, codes: list[str]):
        self.identifier = py3langid_identifier("language detection", "detect")
        try:
            from lingua import IsoCode639_1, LanguageDetectorBuilder
        except ImportError:
            raise UserError(
                "language detection needs lingua: pip install 'seq2seq[detect]'"
            ) from None
        self.codes = {primary(code): code for code in codes}
        unknown = [c for c in self.codes if c not in self.identifier.labels]
        unknown += [c for c in self.codes if not hasattr(IsoCode639_1, c.upper())]
        if unknown:
            raise UserError(f"language detection does not know {', '.join(sorted(set(unknown)))}")
        self.identifier.set_languages(list(self.codes))
        isos = [getattr(IsoCode639_1, code.upper()) for code in self.codes]
        self.lingua = LanguageDetectorBuilder.from_iso_codes_639_1(*isos).build()

    def detect(self, text: str) -> list[tuple[str, float]]:
        if len(text.split()) == 1:
            ranked = [
                (found.language.iso_code_639_1.name.lower(), found.value)
                for found in self.lingua.compute_language_confidence_values(text)
            ]
        else:
            ranked = sorted(self.identifier.rank(text), key=lambda pair: -pair[1])
        return [(self.codes[code], round(100 * p, 1)) for code, p in ranked if code in self.codes]
