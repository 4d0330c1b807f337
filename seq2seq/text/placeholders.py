"""Placeholders and markup that a translation must give back intact: found in the source,
kept from the model, put back in its output (decode.placeholders: protect | off).

    "Delete <b>%s</b>? [X7X] &amp; more"
      -> find(text): the placeables, in order: <b> %s </b> [X7X] &amp;  (PATTERNS: per kind)
      -> runs: placeables that touch each other are one run ("<b>%s</b>"); each run's
         anchor: the share of the text's words before it, and what it is glued to
      -> protect(text, mask):
           mask "[X{}X]" (the model's vocabularies spell it without UNK: mask_for)
               "Delete [X0X]? [X1X] [X2X] more"      each run replaced in place
           mask None (they cannot): the runs lifted out (the space before one that a
               mark follows with it)                 "Delete? more"
      ... the model translates Protected.source ...
      -> Protected.restore(output): each mask found in the output gives its run back; masks
         the model invented or repeated, and any placeable it wrote itself, are dropped; runs
         it dropped (all of them, lifted) go back at their anchor: the start or the end if
         they stood there, else after the same share of the output's words, glued to the
         word they were glued to, two that would touch a space apart; an output without a
         word: the runs alone

The rule: the restored output holds every run of the source exactly once. Those whose meaning
depends on their order (printf forms without n$ or (name), "{}", tags) come back in source
order among the places the model put them; the others where the model put their mask. A text
without placeables is not touched: the model sees it as it was.

What counts as a placeable (PATTERNS): printf forms (%s %d %1$s %.2f %-5d %% %(name)s, with
no space flag: "100% sure" is text), Python / .NET braces ({0} {count} {0:N2} {name!r}
{0,-10}), ICU arguments ({n, number}) and plural / select blocks, each one opaque run (its
inner text is not translated), Qt's %1 .. %99 and %L1, tags (<b> </b> <br/> <a
href="...">), entities (&amp; &#39;), escapes as catalogs write them (a literal \\n \\t \\r),
line breaks (in a text not split into its sentences), and Weblate's masks [X<n>X]. A lone
"{", "50%", "a < b" and a tab are text.

Accelerators are not placeables: the mark of a menu item's access key (GTK's "_Save", Qt's,
KDE's and Windows' "&Open", LibreOffice's "~Open"; at a word's start, not R&D, snake_case nor
an e-mail's _name@) is taken out of the text, so the model translates plain words, and put back
in the translation, one in and one out (Accelerated):

    "Save &As"  -> unaccelerated: "Save As", the mark & on "A" of word 2 of 2
    ... "Speichern unter" ...
    -> Accelerated.restore: marks the model wrote itself dropped, then & before the mark's
       letter in the output's word at the same share of its words ("unter": no "a"), else
       before that word's first letter, else before the output's first letter
                                                 "Speichern &unter"

Training reads catalogs the same way (localization/catalogs.py: accelerator_free drops the mark from
both sides of a pair, the target's wherever it stands, "Spei_chern" too), so the model never
sees at translation a form it did not see in training.

kept(source, output) says whether every placeable of the source is in the output as many times
as in the source (and its accelerator once); share_kept() counts it over pairs (the metric of
issue 53); bare(source, output) whether an output holds no letter or digit where its source
does: nothing, placeables or marks alone (what no engine may answer: engines.py).
"""

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

PRINTF_CONVERSION = r"(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcsp@]"
PATTERNS = {  # kind -> regex; the first that matches at a place wins
    "mask": r"\[X\d+X\]",  # Weblate's
    "icu": r"\{\s*\w+\s*,\s*\w+\s*(?:,(?:[^{}]|\{[^{}]*\})*)?\}",  # one level of nesting
    "brace": r"\{\{\s*[\w.]+\s*\}\}|\{[\w.\[\]]*(?:,-?\d+)?(?:![rsa])?(?::[^{}\s]*)?\}",
    "printf": r"%%|(?<!\d)%(?:\d+\$|\([\w.-]+\))?[-+0#']*(?:\d+|\*)?(?:\.(?:\d+|\*))?"
    + PRINTF_CONVERSION,
    "qt": r"(?<!%)%L?[1-9]\d?(?!\d)",
    "tag": r"</?[A-Za-z][\w:.-]*(?:\s+[^<>]*?)?\s*/?>",
    "entity": r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#\d{1,7}|#x[0-9A-Fa-f]{1,6});",
    "escape": r"\\[ntr]",
    "break": r"\r\n|[\n\r]",  # a tab is white space
}
PLACEABLE = re.compile("|".join(f"(?P<{kind}>{regex})" for kind, regex in PATTERNS.items()))
WORD = re.compile(r"\w+")
LETTERS = re.compile(r"[^\W\d_]+")
ENTITY = re.compile(PATTERNS["entity"])
# an accelerator: a mark at a word's start before a letter, not in an e-mail address nor an
# entity's "&amp;"; ACCELERATOR_ANYWHERE: a translation's, which may stand inside its word
ACCELERATOR = re.compile(r"(?<![\w&/.\\~-])[&_~](?=[^\W\d_])(?!\S*@)")
ACCELERATOR_ANYWHERE = re.compile(r"\(\s*[&_~](\w)\s*\)|[&_~](?=[^\W_])")
SPACES = re.compile(r"\s*")
MARKS = re.compile(r"\s*[^\w\s]*")  # punctuation after a word
MASKS = ("[X{}X]",)  # the forms tried, in order; the first the vocabularies spell is used


class Placeable(NamedTuple):
    text: str
    kind: str  # of PATTERNS
    start: int
    end: int

    @property
    def ordered(self) -> bool:
        """Whether its meaning depends on its order: a printf form without n$ or (name), "{}",
        a tag."""
        if self.kind == "printf":
            return self.text != "%%" and not any(c in self.text for c in "$(")
        return self.kind == "tag" or self.text == "{}"


def find(text: str) -> list[Placeable]:
    """The placeables of `text`, in order."""
    return [Placeable(m.group(), m.lastgroup, m.start(), m.end()) for m in PLACEABLE.finditer(text)]


def has_placeables(text: str) -> bool:
    return PLACEABLE.search(text) is not None


@dataclass(frozen=True)
class Run:
    """Placeables next to each other, as one: what the model gets one mask for."""

    text: str
    start: int
    end: int
    ordered: bool  # one of its placeables is: it keeps its order among the ordered ones
    share: float  # of the source's words, those before it
    glued: str  # to the word after it ("next", no space between), "previous", "start", "end"
    space_before: bool
    space_after: bool
    glued_before: bool  # to the word before it (no space between)
    glued_after: bool  # to the word after it (no space between)
    marks_before: int  # punctuation marks between it and the word before it


def runs(text: str, placeables: list[Placeable]) -> list[Run]:
    """The runs of `text`'s `placeables` (in order), each run giving back its placeables'
    texts."""
    groups: list[list[Placeable]] = []
    for one in placeables:
        if groups and groups[-1][-1].end == one.start:
            groups[-1].append(one)
        else:
            groups.append([one])
    blanked = blank(text, [(group[0].start, group[-1].end) for group in groups])
    words = list(WORD.finditer(blanked))
    return [run_of(text, blanked, group, words) for group in groups]


def run_of(text: str, blanked: str, group: list[Placeable], words: list[re.Match]) -> Run:
    """The run of the placeables `group`; `blanked`: the text, its placeables as spaces,
    `words` its words."""
    start, end = group[0].start, group[-1].end
    before, after = blanked[:start], blanked[end:]
    if not before.strip():
        glued = "start"
    elif not after.strip():
        glued = "end"
    elif WORD.match(text, end) and not WORD.fullmatch(text[start - 1]):
        glued = "next"
    else:
        glued = "previous"
    previous = [word.end() for word in words if word.end() <= start]
    share = len(previous) / len(words) if words else 0.0
    between = blanked[previous[-1] if previous else 0 : start]
    given = "".join(one.text for one in group)  # the text's own, or a term's target
    return Run(
        given, start, end, any(one.ordered for one in group), share, glued,
        space_before=text[start - 1 : start].isspace(), space_after=text[end : end + 1].isspace(),
        glued_before=bool(WORD.fullmatch(text[start - 1 : start])),
        glued_after=bool(WORD.match(text, end)),
        marks_before=len(re.findall(r"[^\w\s]", between)),
    )  # fmt: skip


def blank(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each span of it as spaces."""
    return apply(text, [(start, end, " " * (end - start)) for start, end in spans])


def mask_pattern(mask: str) -> re.Pattern:
    """A regex for the mask's forms in an output, white space the model put inside allowed."""
    head, tail = mask.split("{}")
    spaced = (r"\s*".join(map(re.escape, part)) for part in (head, tail))
    return re.compile(r"\s*(\d+)\s*".join(spaced), re.IGNORECASE)  # a lowercasing vocabulary


@dataclass(frozen=True)
class Protected:
    """A text as the model gets it, and what puts its runs back in the model's output."""

    text: str  # the source
    source: str  # what the model translates
    runs: list[Run]
    mask: str | None  # None: lifted out

    def restore(self, output: str) -> str:
        """`output` with every run back exactly once (the module's docstring says where)."""
        if not self.runs:
            return output
        if not WORD.search(blank(self.text, [(run.start, run.end) for run in self.runs])):
            return apply(self.text, [(r.start, r.end, r.text) for r in self.runs])  # all kept
        edits, placed = self.found(output)
        spans = [(edit.start, edit.end) for edit in edits]
        words = [w for w in WORD.finditer(output) if not inside(w.start(), spans)]
        if not words:  # the model wrote nothing of the text
            return " ".join(run.text for run in self.runs)
        missing = [run for number, run in enumerate(self.runs) if number not in placed]
        edits += [insertion(run, words, output) for run in missing]
        edits = spaced(in_order(sorted(edits, key=lambda edit: (edit.start, edit.end))))
        return apply(output, [(edit.start, edit.end, edit.text) for edit in edits])

    def found(self, output: str) -> tuple[list["Edit"], set[int]]:
        """The edits that turn the masks of `output` into their runs (an invented or repeated
        one into nothing), and the numbers of the runs so placed. Every other placeable of
        `output` is the model's own, into nothing, unless what the model saw reads as one too
        ("%%%1": the run "%%" masked, "[X0X]%1")."""
        masks = list(mask_pattern(self.mask).finditer(output)) if self.mask else []
        seen = {p.text for p in find(self.source) if p.kind != "mask"}
        spans = [mask.span() for mask in masks]
        own = [p for p in find(output) if p.text not in seen and not inside(p.start, spans)]
        edits = [Edit(*dropped(output, p.start, p.end), None) for p in own]
        placed = set()
        for match in masks:
            number = int(match.group(1))
            if number < len(self.runs) and number not in placed:
                placed.add(number)
                edits.append(Edit(*snug(output, match, self.runs[number]), self.runs[number]))
            else:
                edits.append(Edit(*dropped(output, *match.span()), None))
        return edits, placed


class Edit(NamedTuple):
    """output[start:end] replaced by a run (None: by nothing), with white space around it."""

    start: int
    end: int
    run: Run | None
    before: str = ""
    after: str = ""

    @property
    def text(self) -> str:
        return self.before + self.run.text + self.after if self.run else ""


def in_order(edits: list[Edit]) -> list[Edit]:
    """The edits (in output order) with the ordered runs among them in source order."""
    ordered = iter(sorted((e.run for e in edits if e.run and e.run.ordered), key=lambda r: r.start))
    return [e._replace(run=next(ordered)) if e.run and e.run.ordered else e for e in edits]


def spaced(edits: list[Edit]) -> list[Edit]:
    """The edits, two runs that would touch (nothing but deletions between them) separated by
    a space: they did not touch in the source, or they would be one run."""
    result: list[Edit] = []
    run_ends_at = -1  # where the last run put back ends, in the output
    for edit in edits:
        if edit.run and edit.start == run_ends_at:
            edit = edit._replace(before=edit.before or " ")
        if edit.run or edit.start == run_ends_at:
            run_ends_at = edit.end
        result.append(edit)
    return result


def inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def dropped(output: str, start: int, end: int) -> tuple[int, int]:
    """The span to delete for an unwanted placeable: with the white space before it (at the
    output's start: after it; before a word it is glued to: none, "zu \\nwarten" -> "zu
    warten")."""
    if not output[:start].strip():
        return 0, SPACES.match(output, end).end()
    if WORD.match(output, end):
        return start, end
    return len(output[:start].rstrip()), end


def snug(output: str, mask: re.Match, run: Run) -> tuple[int, int]:
    """The span a mask's run replaces: with the white space the model put between it and a
    word it was glued to in the source."""
    start, end = mask.span()
    if run.glued_after and WORD.match(output, SPACES.match(output, end).end()):
        end = SPACES.match(output, end).end()
    trimmed = output[:start].rstrip()
    if run.glued_before and WORD.fullmatch(trimmed[-1:]):
        start = len(trimmed)
    return start, end


def insertion(run: Run, words: list[re.Match], output: str) -> Edit:
    """Where a run the output lacks goes: at the output's start or end if it stood at the
    source's, else after round(share x the output's words) words (and as many marks after
    them as stood between it and its word), glued as it was."""
    space = " " if run.space_before else ""
    if run.glued == "start":
        return Edit(0, 0, run, after=" " if run.space_after else "")
    if run.glued == "end":
        end = len(output.rstrip())
        return Edit(end, end, run, before=space)
    index = min(math.floor(run.share * len(words) + 0.5), len(words))
    if run.glued == "next" and index < len(words):
        return Edit(words[index].start(), words[index].start(), run)
    after = words[max(index, 1) - 1].end()
    after += len(re.match(r"[^\w\s]*", output[after : after + run.marks_before]).group())
    gap = SPACES.match(output, after).end() if run.text.isspace() else after
    return Edit(after, gap, run, before=space)


def apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each (start, end, replacement) done, in order."""
    parts, done = [], 0
    for start, end, replacement in edits:
        parts += [text[done:start], replacement]
        done = max(done, end)
    return "".join([*parts, text[done:]])


def protect(text: str, mask: str | None, placeables: list[Placeable] | None = None) -> Protected:
    """`text` with the runs of its `placeables` (None: those `find` finds) masked (`mask`,
    e.g. "[X{}X]") or lifted out (None: the white space before a run that a mark follows
    goes with it)."""
    found = runs(text, find(text) if placeables is None else placeables)
    if not found:
        return Protected(text, text, [], mask)
    if mask is not None:
        source = apply(text, [(r.start, r.end, mask.format(n)) for n, r in enumerate(found)])
        return Protected(text, source, found, mask)
    edits = []
    for run in found:
        mark = re.match(r"[^\w\s]", text[run.end : run.end + 1])
        start = len(text[: run.start].rstrip()) if mark else run.start
        edits.append((start, run.end, "" if mark else " "))
    return Protected(text, " ".join(apply(text, edits).split()), found, None)


class Accelerator(NamedTuple):
    """A text's access key: its mark, the letter it marks, and where its word stands."""

    mark: str  # & _ ~
    letter: str
    share: float  # of the text's words (placeables aside), those before the marked one


def accelerators(text: str) -> list[re.Match]:
    """The accelerator marks of `text` (an entity's & aside)."""
    entities = {entity.start() for entity in ENTITY.finditer(text)}
    return [m for m in ACCELERATOR.finditer(text) if m.start() not in entities]


def words_of(text: str) -> list[re.Match]:
    """The words of letters of `text` that no placeable holds ("b" of "<b>" is none)."""
    spans = [(p.start, p.end) for p in find(text)]
    return [word for word in LETTERS.finditer(text) if not inside(word.start(), spans)]


class Accelerated(NamedTuple):
    """A text without its accelerator, as the model gets it, and what puts the accelerator
    back in the translation."""

    text: str
    accelerator: Accelerator | None  # None: the text had none, or several (then as it was)

    def restore(self, output: str) -> str:
        """`output` with the accelerator once: the marks the model wrote itself dropped, then
        the mark before its letter in the output's word at the same share of the words, else
        before that word's first letter, else before the output's first letter."""
        if self.accelerator is None:
            return output
        mark, letter, share = self.accelerator
        output = self.own_marks_dropped(output, mark)
        words = words_of(output)
        if not words:
            return mark + output
        word = words[min(math.floor(share * len(words) + 0.5), len(words) - 1)]
        position = word.start() + max(word.group().lower().find(letter.lower()), 0)
        return output[:position] + mark + output[position:]

    def own_marks_dropped(self, output: str, mark: str) -> str:
        """`output` without the marks `mark` the model wrote itself ("Lä_rm", a bare "_"), but
        in a word the source has too (its snake_case names)."""
        kept = set(self.text.split())
        own = [m for m in marks(output, mark) if word_around(output, m.start()) not in kept]
        own += re.finditer(rf"(?<!\S){re.escape(mark)}(?!\S)", output)
        return " ".join(
            apply(output, [(*m.span(), "") for m in sorted(own, key=re.Match.start)]).split()
        )


def word_around(text: str, position: int) -> str:
    """The run of non-space characters of `text` that holds `position`."""
    return re.search(r"\S*\Z", text[:position]).group() + re.match(r"\S*", text[position:]).group()


def unaccelerated(text: str) -> Accelerated:
    """`text` without its accelerator (one mark: several are not a label's access key, and
    stay as they are), and the accelerator."""
    found = accelerators(text)
    if len(found) != 1:
        return Accelerated(text, None)
    at = found[0].start()
    plain = text[:at] + text[at + 1 :]
    words = words_of(plain)
    index = next((i for i, word in enumerate(words) if word.end() > at), 0)
    return Accelerated(plain, Accelerator(text[at], text[at + 1], index / max(len(words), 1)))


def accelerator_free(source: str, target: str) -> tuple[str, str]:
    """A catalog's pair as the model learns it: without the source's accelerator and the
    target's (the first of the same mark, wherever it stands: "Spei_chern", "保存(_S)"); a
    pair whose source has none, or several, as it is."""
    plain = unaccelerated(source)
    if plain.accelerator is None:
        return source, target
    for mark in marks(target, plain.accelerator.mark)[:1]:
        start = len(target[: mark.start()].rstrip()) if mark.group(1) else mark.start()
        return plain.text, target[:start] + target[mark.end() :]
    return plain.text, target


def marks(text: str, mark: str) -> list[re.Match]:
    """The accelerator marks `mark` of a translation, wherever they stand (an entity's &
    aside)."""
    entities = {entity.start() for entity in ENTITY.finditer(text)}
    found = ACCELERATOR_ANYWHERE.finditer(text)
    return [m for m in found if mark in m.group() and m.start() not in entities]


def bare(source: str, output: str) -> bool:
    """Whether `output` holds no letter or digit (placeables aside) where `source` holds one:
    empty, its placeables alone, or marks alone ("_", ".")."""
    return bool(alphanumeric(source)) and not alphanumeric(output)


def alphanumeric(text: str) -> str:
    """The letters and digits of `text` that no placeable holds."""
    return "".join(re.findall(r"[^\W_]", blank(text, [(p.start, p.end) for p in find(text)])))


class Kept(NamedTuple):
    """How many outputs kept every placeable of their source, of those whose source has one."""

    kept: int
    sources: int

    @property
    def share(self) -> float | None:
        return self.kept / self.sources if self.sources else None


def kept(source: str, output: str, kinds: Iterable[str] | None = None) -> bool | None:
    """Whether `output` has each placeable of `source` (of `kinds`: all if None; "accelerator"
    among them) exactly as many times as `source` has it; None if `source` has none."""
    wanted = Counter(p.text for p in find(source) if kinds is None or p.kind in kinds)
    accelerator = unaccelerated(source).accelerator
    if kinds is not None and "accelerator" not in kinds:
        accelerator = None
    if not wanted and accelerator is None:
        return None
    got = Counter(p.text for p in find(output))
    once = accelerator is None or len(marks(output, accelerator.mark)) == 1
    return once and all(got[text] == count for text, count in wanted.items())


def share_kept(pairs: Iterable[tuple[str, str]], kinds: Iterable[str] | None = None) -> Kept:
    """Over (source, output) pairs: the outputs that kept every placeable of their source (of
    `kinds`, e.g. ("mask",) for Weblate's alone), of the sources that have one."""
    verdicts = [kept(source, output, kinds) for source, output in pairs]
    counted = [verdict for verdict in verdicts if verdict is not None]
    return Kept(sum(counted), len(counted))
