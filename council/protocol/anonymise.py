"""Anonymisation of judges' reasons: vendor and model names found in free text, and scrubbed.

Round two shows each member its peers' reasons; a reason that says "As Claude 3.5 Sonnet, I ..." or
"GPT-4o's answer" would tell the member who its peer is. :class:`Anonymiser` finds those names and
replaces each one whole (version tail and possessive included) by the neutral token ``[redacted]``.

The names are data (``council/protocol/names.json``): per vendor, its names and aliases and its model family and
product names (see that file's ``about``), plus the run's own model ids and vendor names passed as
``extra_names`` (an extra id contributes its full form, ``openai/gpt-4.1-mini``, and its last path part,
``gpt-4.1-mini``; a part shorter than three letters or digits is not used on its own).

How a name matches:

- as whole tokens only: never inside a longer word (``metadata``, ``claudication``, ``Qwenish`` are left
  alone), in any case, with ``-``, ``_``, ``.``, a space and the Unicode hyphens and dashes (U+2010 to
  U+2015, U+2212) interchangeable between its words and its version, and the separator optional
  (``gpt4o``, ``mistralai``);
- with an optional version tail: numbers, sizes and snapshot dates (``-4o``, `` 3.5``, ``-235B-A22B``,
  ``-20241022``, ``-v2:0``) and the model words of the family (``mini``, ``pro``, ``Sonnet``,
  ``Large``, ...): ``GPT-5.1``, ``Qwen3-235B-A22B``, ``claude-3.5-sonnet``, ``Llama‑3.1‑70B``,
  ``o4-mini-high``, ``Gemini 2.5 Pro`` are one match each;
- with an optional possessive (``Claude's``, ``GPT-4o’s``) or plural ``s`` (``GPTs``);
- names that touch (``openai/gpt-4o``, ``Google DeepMind``, ``Amazon Nova Pro``) become one
  ``[redacted]``.

Ambiguous words, and the rule chosen for each in anyone's text (a judge's own reasons read more of its
own vendor's words: see below):

- ``meta``: any case as a whole token (``Meta``, ``meta``, ``META``), except lower-case ``meta`` joined by
  a hyphen to a lower-case word (``meta-analysis``, ``meta-level``), which is the ordinary prefix;
  ``metadata``, ``metaphor`` and ``metamorphic`` are other words. A lone ``meta`` used as an adjective
  ("a meta comment") is scrubbed.
- ``claude``: the token only; ``claudication`` survives. The first name of a person (Claude Monet) is
  scrubbed too.
- ``nova`` (Amazon): only ``Amazon Nova`` or Nova followed by a version or its product word (Pro, Lite,
  Micro, Premier, Canvas, Reel, Sonic, Act); ``nova``, ``supernova``, ``novel`` and ``novelty`` survive.
  ``titan`` likewise: only ``Amazon Titan`` or Titan with a version or product word (Text, Embed, ...).
- ``command`` (Cohere): only ``Command R``, ``Command R+``, ``Command R7B``, ``command-r-plus``,
  ``Command A`` (capital A, or ``command-a-`` followed by a date), ``command-light``,
  ``command-nightly`` and ``Cohere Command``; "the command line", "command a fleet" and ``commander``
  survive. ``aya`` only with a version or Expanse/Vision.
- ``phi`` (Microsoft): only with a version (``Phi-3``, ``phi3``, ``Phi 3.5``, ``Phi-4-mini``) or as
  ``Microsoft Phi``; the Greek letter survives ("phi = 1.618", "phi 1.618", "Phi Beta Kappa").
- ``sonnet``, ``opus``, ``haiku``: inside a Claude name (``Claude Haiku``, ``claude-3-opus``), or followed
  by a one-digit version 3 to 9 (``Sonnet 4.5``, ``haiku-4.5``, ``Opus 4``), or preceded by a dotted
  version (``3.5 Sonnet``). "a haiku about autumn", "magnum opus", Shakespeare's "Sonnet 18" survive;
  a poem or opus numbered 3 to 9 ("Sonnet 4", "Opus 3") is scrubbed.
- ``o1``, ``o3``, ``o4``: any case as whole tokens, so the ozone formula "O3" is scrubbed (accepted);
  ``o2`` and ``O(1)`` are not names.
- ``gemini`` (the constellation), ``llama`` (the animal), ``mistral`` (the wind), ``grok`` (the verb),
  ``google`` (the verb), ``amazon`` (the river), ``bard`` (a poet), ``anthropic`` (the adjective): always
  scrubbed (accepted). Their longer words (``grokking``, ``googled``, ``Amazonian``) survive.
- ``gpt``: always a name; ``GPTZero`` (a detector, not a model) is one token and survives.
- ``glm`` (Zhipu): only with a version (``GLM-4.5``, ``glm4``), as ``ChatGLM`` or ``Zhipu GLM``; the
  statistical GLM survives.
- ``palm`` (Google): ``PaLM`` as written, or with a version (``PaLM 2``, ``palm-2``); the palm of a hand
  survives.
- ``xai``: ``xAI``, ``xai``, ``x.ai``; all-caps ``XAI`` (explainable AI) survives.
- ``cohere``, ``moonshot``, ``minimax``: the capitalised vendor names (``Cohere``, ``Moonshot``,
  ``MiniMax``) and ids (``cohere/...``, ``moonshot-v1``, ``minimax-m1``); the verb "cohere", "a moonshot
  idea" and the minimax algorithm survive. ``ERNIE`` only in capitals or with a version.
- "open AI research" survives: ``OpenAI`` is the vendor as one word, or split as ``Open-AI`` (below).
- ``codex``, ``davinci``: only with a version or model word (``codex-mini``, ``davinci-002``,
  ``text-davinci-003``) or as ``OpenAI Codex``; Leonardo da Vinci and a codex survive.

What a judge's own reasons add (``author_vendor``): the council knows which member wrote each reason, and
a word that is ambiguous in general is not ambiguous in the reason of that family's own judge.

- its vendor's ``own_words``: the product words a model says for itself without its maker's name
  ("As Sonnet, I find ...", "Opus here", "Flash here", "As Nova, ...", "Phi here", "Command finds",
  "Medium", "Le Chat", "Maverick", "Scout", "R1 here", "V3.2", "K2", "Max"), with an optional version
  tail; the common English ones only capitalised as written ("Command", "Medium", "Pro"; "the command
  line" survives even there). Accepted cost: in that judge's own reason "a sonnet by Shakespeare",
  "flash memory", "a haiku" or "the R1 row" are scrubbed too.
- its vendor's ``split`` names written split by one separator at any point ("Deep Seek", "Open AI",
  "Anthrop ic", "Q wen", "Mis-tral"), so "deep seek of truth" is scrubbed in a DeepSeek judge's reason.

Split names in everyone's reasons: a ``split`` name with ``-``, ``_`` or a Unicode dash inside it
("Anthrop-ic", "Q-wen", "Gem-ini", "Goo-gle"), and with a space or ``.`` in a name of six letters or
more ("Mis tral", "Chat GPT", "Gem ini"). Where the two parts make an ordinary phrase (the data's
``ordinary_splits``: "open ai", "deep seek", "deep mind", "go ogle", "ali baba", "micro soft", ...) only
an in-word separator before a capital counts ("Deep-Seek", "Open-AI"): "open AI research", "deep seek of
truth" and "deep-seek" survive in another vendor's judge's reason. Cased names (``xAI``, ``Cohere``) are
never read split; ``Meta`` (four letters) only with an in-word separator, except in a Meta judge's own
reason, where "met a" is scrubbed too (accepted).

Speed: a text is first split into letter runs. Each form of a name holds one of a few runs, its keys
(``gpt`` for every GPT form): a text with no key is returned at once (most reasons have none), and a text
with some is matched by a pattern of only the forms of those keys, in the same order as among all the forms.
Those patterns are compiled at first use and kept, a few milliseconds each; one pattern of every name
(about 3,500 alternatives) took 0.08 s of a core per author to compile, half a second per process that scrubs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from council.core.vendors import canonical_vendor, resolve_vendor

REDACTED = "[redacted]"
_NAMES_FILE = Path(__file__).with_name("names.json")

_DASHES = "\u2010-\u2015\u2212"
SEP = rf"[\s_.\-{_DASHES}]"  # one separator between the words of a name
TSEP = rf"[\s_.:\-{_DASHES}]"  # one separator inside a version tail
IDSEP = rf"[_:\-{_DASHES}]"  # a separator as written in model ids (not a space)
_INWORD = rf"[_\-{_DASHES}]"  # a separator written inside a word ("Deep-Seek", "Q_wen")
_START = r"(?<![^\W_])"  # not preceded by a letter or digit
_END = r"(?![^\W_]|[.,][0-9])"  # not followed by a letter or digit, nor by the rest of a number
_POSS = r"(?:['\u2019]s(?![^\W_]))?"  # Claude's, GPT-4o’s
_GAP = re.compile(rf"\s{{1,2}}|[/_.:\-{_DASHES}]")  # what may lie between two names that make one
_LETTERS = re.compile(r"[^\W\d_]+")
_NUMBER_UNITS = (
    r"[0-9]+[^\W\d_][^\W_]*",  # 4o, 70b, 235B, 8x7b, 3p1, 128k
    r"[0-9]{1,2}(?![0-9])",  # 3, 4, 12
    r"[^\W\d_]{1,2}[0-9][^\W_]*",  # v3, R1, K2, A22B
)
_JOIN = r"(?:[0-9][^\W_]*|[vrk][0-9][^\W_]*)"  # a version written against the name: gpt4o, qwen3, deepseekv3


_KEPT_PATTERNS = 512  # compiled patterns kept per set of names and author; the oldest goes first


class _Names:
    """The forms of one set of names as read in one author's text, in the order they are tried, with the keys of
    each (letter runs of which its every match holds one) and the patterns compiled for texts so far."""

    def __init__(self, alternatives: list[tuple[str, str, frozenset[str]]]) -> None:
        self.alternatives = [(head, tail) for head, tail, _ in alternatives]  # (head, tail): a form's pattern
        index: dict[str, list[int]] = {}
        for i, (_, _, keys) in enumerate(alternatives):
            for key in keys:
                index.setdefault(key, []).append(i)
        self._by_key = {key: tuple(forms) for key, forms in index.items()}
        self._keyless = tuple(i for i, (_, _, keys) in enumerate(alternatives) if not keys)
        self.keys = frozenset(self._by_key)
        self._patterns: dict[tuple[int, ...], re.Pattern[str]] = {}

    def pattern_for(self, text: str) -> re.Pattern[str] | None:
        """The pattern of the forms ``text`` may hold (None: no form, so no name). A form without one of its
        keys among the text's letter runs cannot match, so this finds what the pattern of every form finds."""
        found = self.keys.intersection(_LETTERS.findall(text.casefold()))
        if not found:
            return None
        forms = tuple(sorted({*self._keyless, *(i for key in found for i in self._by_key[key])}))
        pattern = self._patterns.get(forms)
        if pattern is None:
            if len(self._patterns) >= _KEPT_PATTERNS:
                del self._patterns[next(iter(self._patterns))]
            pattern = self._patterns[forms] = compile_forms([self.alternatives[i] for i in forms])
        return pattern


def compile_forms(alternatives: list[tuple[str, str]]) -> re.Pattern[str]:
    """One pattern of ``alternatives`` (head, tail), tried in their order, each as a whole token."""
    return re.compile(rf"{_START}(?:{_alternation(alternatives)}){_POSS}{_END}", re.IGNORECASE)


class Anonymiser:
    """Finds and scrubs vendor and model names: the built-in names data plus ``extra_names``.

    ``vendors`` restricts the built-in names to those vendors (canonical ids); None means all of them.
    Each method takes the vendor of the text's author (``author_vendor``, any spelling
    :func:`~council.core.vendors.canonical_vendor` knows): its own product words and split names count as
    names too (see the module docstring). None, or a vendor the names data does not know, reads the text
    as anyone's.
    """

    def __init__(self, extra_names: Iterable[str] = (), *, vendors: Iterable[str] | None = None) -> None:
        self._extras = frozenset(n.strip() for n in extra_names if isinstance(n, str) and n.strip())
        self._scope = None if vendors is None else frozenset(canonical_vendor(v) for v in vendors)
        self._by_author: dict[str, _Names] = {}

    def scrub(self, text: str, author_vendor: str | None = None) -> str:
        """``text`` with every vendor or model name replaced by ``[redacted]``."""
        return self.redact(text, author_vendor)[0]

    def redact(self, text: str, author_vendor: str | None = None) -> tuple[str, int]:
        """``text`` scrubbed (as :meth:`scrub`) and the number of names it replaced."""
        spans = self._spans(text, author_vendor)
        if not spans:
            return text, 0
        out: list[str] = []
        last = 0
        for start, end in spans:
            out.append(text[last:start])
            out.append(REDACTED)
            last = end
        out.append(text[last:])
        return "".join(out), len(spans)

    def names_in(self, text: str, author_vendor: str | None = None) -> list[str]:
        """The names found in ``text``, in order, each as the span :meth:`scrub` replaces."""
        return [text[start:end] for start, end in self._spans(text, author_vendor)]

    def _for(self, author_vendor: str | None) -> _Names:
        """The forms of texts by ``author_vendor`` (anyone's when None or unknown), gathered at first use."""
        key = author_vendor or ""
        names = self._by_author.get(key)
        if names is None:
            vendor = canonical_vendor(author_vendor) if author_vendor else None
            known = vendor in names_data()["vendors"]
            names = _names(self._extras, self._scope, vendor if known else None)
            self._by_author[key] = names
        return names

    def _spans(self, text: str, author_vendor: str | None = None) -> list[tuple[int, int]]:
        pattern = self._for(author_vendor).pattern_for(text) if text else None
        if pattern is None:
            return []
        spans: list[tuple[int, int]] = []
        for match in pattern.finditer(text):
            start, end = match.span()
            if spans and _GAP.fullmatch(text, spans[-1][1], start):
                spans[-1] = (spans[-1][0], end)  # "openai/gpt-4o", "Google DeepMind": one name
            else:
                spans.append((start, end))
        return spans


def self_identifies(text: str, model: str, vendor: str | None) -> bool:
    """Whether ``text``, written by ``model`` of ``vendor``, names its own model or vendor (any form the
    :class:`Anonymiser` knows in anyone's text: ``I am GPT-4o``, ``as an OpenAI model``, ``ChatGPT here``). A
    response's product words ("a haiku", "flash memory") are its answer's words, so the own words that
    :meth:`Anonymiser.scrub` reads in a judge's own reason do not count here."""
    return bool(_own_names(model, vendor).names_in(text))


@lru_cache(maxsize=256)
def _own_names(model: str, vendor: str | None) -> Anonymiser:
    vendors = {canonical_vendor(vendor)} if vendor and vendor.strip() else set()
    resolved = resolve_vendor(model)
    if resolved:
        vendors.add(resolved)
    return Anonymiser([model, *([vendor] if vendor else [])], vendors=vendors)


# ---- building the pattern --------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def names_data() -> dict[str, Any]:
    """The names data (``council/protocol/names.json``)."""
    return json.loads(_NAMES_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=256)
def _names(extras: frozenset[str], scope: frozenset[str] | None, author: str | None) -> _Names:
    """The forms of ``extras`` and of the names data's vendors in ``scope`` (None: all), read as written by a
    judge of ``author`` (its own words and splits; None: anyone's)."""
    data = names_data()
    vendors = {v: spec for v, spec in data["vendors"].items() if scope is None or v in scope or v == author}
    any_words, id_words = data["words"]["any"], data["words"]["id"]
    ordinary = frozenset(data.get("ordinary_splits", []))
    # (priority, head, tail, keys): tried in order of priority, longer and more specific forms first; the pattern
    # of each is its head then its tail, and its every match holds one of its keys.
    alternatives: list[tuple[int, str, str, frozenset[str]]] = []
    for vendor, spec in vendors.items():
        tail = _tail([*any_words, *spec.get("words", [])], id_words)
        own_vendor = vendor == author
        split = _Split(frozenset(w.casefold() for w in spec.get("split", [])), own_vendor, ordinary)
        guarded: list[str] = []
        name_patterns: list[str] = []
        name_keys: set[str] = set()
        for entry in spec.get("names", []):
            form = _form(entry)
            pattern, form_keys = _stem(form, split=split)
            name_patterns.append(pattern)
            name_keys |= form_keys
            alternatives.append((_priority(form, 0), pattern, "", frozenset(form_keys)))
        for entry in spec.get("families", []):
            form = _form(entry)
            if "regex" in form:
                pattern = _fill(form["regex"], tail)
                alternatives.append((_priority(form, 2), pattern, "", frozenset(k.casefold() for k in form["keys"])))
                continue
            stem, form_keys = _stem(form, family=True, split=split)
            need = form.get("tail", "optional")
            own_words = form.get("words", [])
            own = _tail_unit(own_words, [])
            form_tail = _tail([*any_words, *spec.get("words", []), *own_words], id_words) if own_words else tail
            if need == "version":
                after = rf"(?:{_JOIN}|{TSEP}(?:{'|'.join(_NUMBER_UNITS)})(?![^\W_])){form_tail}\+?"
                guarded.append(stem)
            elif need == "required":
                after = (rf"(?:{_JOIN}|{TSEP}(?:{'|'.join(_NUMBER_UNITS)}|{own})(?![^\W_])"
                         rf"|{IDSEP}[0-9]{{3,8}}(?![0-9])){form_tail}\+?")
                guarded.append(stem)
            else:
                after = rf"(?:s(?![^\W_])|{_JOIN}?{form_tail}\+?)"
            alternatives.append((_priority(form, 2), stem, after, frozenset(form_keys)))
        if guarded and name_patterns:  # "Amazon Nova", "Microsoft Phi", "Zhipu GLM": a name's keys
            alternatives.append((5_000, rf"(?:{'|'.join(name_patterns)}){SEP}(?:{'|'.join(guarded)})", rf"{tail}\+?",
                                 frozenset(name_keys)))
        for entry in spec.get("own_words", []) if own_vendor else ():  # "As Sonnet, I ...", "R1-0528 here"
            form = _form(entry)
            stem, form_keys = _stem(form)
            alternatives.append((_priority(form, 1), stem, rf"{tail}\+?", frozenset(form_keys)))
    known = set(vendors)
    generic = _tail(any_words, id_words)
    for extra in sorted(extras):
        for name in _extra_forms(extra):
            if name.casefold() in known:
                continue  # a vendor id of the names data: its own rules cover it
            head, form_keys = _extra_pattern(name)
            if form_keys:  # a name without letters cannot be told from a number
                alternatives.append((20_000 + len(name), head, generic, frozenset(form_keys)))
    alternatives.sort(key=lambda a: -a[0])
    return _Names([(head, tail, keys) for _, head, tail, keys in alternatives])


def _alternation(alternatives: list[tuple[str, str]]) -> str:
    """The alternatives, in their order, as one alternation; neighbours with the same tail share it:
    ``(?:h1|h2)t`` tries exactly what ``(?:h1t)|(?:h2t)`` tries, in the same order, and is a far shorter
    pattern to compile (most forms end in one of a few long version tails)."""
    groups: list[tuple[str, list[str]]] = []
    for head, tail in alternatives:
        if groups and groups[-1][0] == tail:
            groups[-1][1].append(head)
        else:
            groups.append((tail, [head]))
    return "|".join(f"(?:{'|'.join(f'(?:{h})' for h in heads)}){tail}" for tail, heads in groups)


def _form(entry: str | dict[str, Any]) -> dict[str, Any]:
    return {"form": entry} if isinstance(entry, str) else dict(entry)


def _priority(form: dict[str, Any], kind: int) -> int:
    """Alternatives are tried in order: longer forms first ("Mistral AI" before "Mistral")."""
    return 10 * len(form.get("form", "")) + kind


def _fill(regex: str, tail: str) -> str:
    return regex.replace("{SEP}", SEP).replace("{TSEP}", TSEP).replace("{IDSEP}", IDSEP).replace("{TAIL}", tail)


def _tail_unit(words: Iterable[str], numbers: Iterable[str]) -> str:
    alts = [*numbers, *(re.escape(w) for w in sorted(set(words), key=len, reverse=True))]
    return "(?:" + "|".join(alts) + ")" if alts else "(?!)"


def _tail(any_words: list[str], id_words: list[str]) -> str:
    """Any number of version units and model words after the name, each after one separator."""
    prose = _tail_unit(any_words, _NUMBER_UNITS)
    ids = _tail_unit(id_words, [])
    return (rf"(?:{TSEP}{prose}(?![^\W_])|[._:\-{_DASHES}]{ids}(?![^\W_])"
            rf"|{IDSEP}[0-9]{{3,8}}(?![0-9]))*")


@dataclass(frozen=True)
class _Split:
    """Which one-word names of a vendor are read split by a separator, and where (see ``names.json``)."""

    words: frozenset[str]  # the vendor's ``split`` names, lower-case
    own: bool  # the text's author is this vendor's judge: any separator at any point
    ordinary: frozenset[str]  # splits that make an ordinary phrase ("open ai"): see ``names.json``

    def body(self, word: str) -> str | None:
        """The pattern of ``word`` with at most one separator between two of its letters, or None when the
        word is not read split."""
        lower = word.casefold()
        if lower not in self.words or len(word) < 2 or not word.isalpha():
            return None
        body = re.escape(word[-1])
        for i in range(len(word) - 1, 0, -1):  # body: word[i:], one separator at most
            if self.own:
                sep = SEP
            elif f"{lower[:i]} {lower[i:]}" in self.ordinary:
                sep = rf"{_INWORD}(?-i:(?=[A-Z]))"  # "Deep-Seek", "Open-AI"; not "deep seek", "open AI", "deep-seek"
            else:
                sep = SEP if len(word) >= 6 else _INWORD
            body = rf"{re.escape(word[i - 1])}(?:{sep}{re.escape(word[i:])}|{body})"
        return body

    def keys(self, word: str) -> set[str]:
        """Letter runs of which a split match holds one: the longer part (a trailing part may run on into a
        plural ``s`` or a joined ``v``/``r``/``k`` version)."""
        lower, n = word.casefold(), len(word)
        heads = {lower[:i] for i in range(1, n) if 2 * i >= n}
        tails = {lower[i:] for i in range(1, n) if 2 * (n - i) >= n}
        return heads | tails | {t + extra for t in tails for extra in ("s", "v", "r", "k")}


_NO_SPLIT = _Split(frozenset(), False, frozenset())


def _stem(form: dict[str, Any], family: bool = False, split: _Split = _NO_SPLIT) -> tuple[str, set[str]]:
    """The pattern of a form's text (a space or hyphen: an optional separator; a ``split`` name also with a
    separator inside it), and its keys."""
    text = form["form"]
    words = [w for w in re.split(r"[\s\-]+", text) if w]
    keys = _keys(words, family)
    bodies = []
    for word in words:
        split_body = split.body(word) if form.get("case") != "exact" else None
        bodies.append(re.escape(word) if split_body is None else split_body)
        if split_body is not None:
            keys |= split.keys(word)
    body = f"{SEP}?".join(bodies)
    if form.get("case") == "exact":
        body = rf"(?:(?-i:{body})|{body}(?=[/.][^\W\d_]))"
    if form.get("guard_prefix"):
        lower = text.lower()
        body = rf"(?:(?-i:{re.escape(lower)})(?![\-{_DASHES}][a-z])|(?!(?-i:{re.escape(lower)})){body})"
    return body, keys


def _keys(words: list[str], family: bool) -> set[str]:
    """Letter runs of which every match of a name with these words holds one (see ``Anonymiser._spans``).

    Words joined by optional separators may be written as one run ("mistralai"), so the key is every run
    that can hold the form's longest letter part. A family may also end in a plural ``s`` or a joined
    ``v``/``r``/``k`` version ("deepseekv3").
    """
    chains: list[list[str]] = [[]]
    ends_in_letters = False
    for word in words:
        for piece in re.findall(r"[^\W\d_]+|[\W\d_]+", word.casefold()):
            ends_in_letters = piece.isalpha()
            if ends_in_letters:
                chains[-1].append(piece)
            elif chains[-1]:
                chains.append([])
    return _chain_keys(chains, family and ends_in_letters)


def _chain_keys(chains: list[list[str]], extendable: bool) -> set[str]:
    chains = [c for c in chains if c]
    if not chains:
        return set()
    chain, at = max(((c, i) for c in chains for i in range(len(c))), key=lambda ci: len(ci[0][ci[1]]))
    found = {"".join(chain[i:j + 1]) for i in range(at + 1) for j in range(at, len(chain))}
    if extendable and chain is chains[-1]:
        found |= {k + extra for k in found if k.endswith(chain[-1]) for extra in ("s", "v", "r", "k")}
    return found


def _extra_forms(extra: str) -> list[str]:
    """An extra name's forms: itself and, for an id with a path, its last part (at least three characters)."""
    forms = [extra]
    last = re.split(r"[/:]", extra.rstrip("/:"))[-1]
    if last and last != extra and len(re.sub(r"[\W_]", "", last)) >= 3:
        forms.append(last)
    if len(re.sub(r"[\W_]", "", extra)) < 3:
        forms.remove(extra)
    return forms


def _extra_pattern(name: str) -> tuple[str, set[str]]:
    """An extra name matches with any separators (or none) between its letter and digit runs (its optional
    version tail follows: the generic tail)."""
    runs = re.findall(r"[^\W\d_]+|[0-9]+", name)
    sep = rf"[\s_.:/\-{_DASHES}]?"
    chains: list[list[str]] = [[]]
    for run in runs:
        if run.isdigit():
            chains.append([])
        else:
            chains[-1].append(run.casefold())
    return sep.join(re.escape(r) for r in runs), _chain_keys(chains, extendable=False)
