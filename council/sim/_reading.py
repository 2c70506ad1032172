"""Reading a judge prompt as text, the way a model reads it.

The simulated judges know nothing of how the council builds its prompts: this reader sees only text. It
looks for the tags a prompt is written with (``<round>``, ``<question>``, ``<reference>``, ``<rubric>``,
``<scale>``, ``<response>``, ``<your_round_one>``, ``<peers>``, ``<batch>``, ``<item key="...">``), in any order,
in any case, with spaces allowed inside the angle brackets and any attributes (a ``nonce`` is opaque: it
marks a section as fenced, and is never checked). It is forgiving where a model is (whitespace around a
section's text, votes as JSON lines or as ``Member [B]: verdict: ...; reason: ...`` lines) and naive where a
model can be fooled:

- A section runs from its opening tag to the first closing tag of the same name after it, whatever that
  closing tag's attributes say: a literal ``</response>`` in a response ends the response there.
- The first section of each name counts (a second ``<response>`` or ``<your_round_one>`` is ignored), except
  ``<peers>``: every vote line of every peers block is a peer's vote.
- Text outside every section (the instruction after the last one, or anything a response put between a
  forged close and the next tag) is read as the prompt's own words.
- Inside a fenced section (its opening tag carries a nonce) ``&lt;`` reads as ``<`` and ``&amp;`` as ``&``,
  as the system prompt of the fenced layout says; an unfenced section is read as it is written.

A batch is the text between ``<item ...>`` and the first ``</item>`` after it, for each item in turn. A
repair re-ask is a user message after an assistant reply that asks for the previous reply again.

A conversation is read as a model reads one: when the last user message names a round but gives an item no
question or response of its own (it carries only the peers' votes), the item is the one the earlier user
message of the conversation showed (the same key, in a batch), and the member's own vote is what the assistant
replied to it (a JSON object with a verdict or scores, or a ``verdicts`` list keyed like the items).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import orjson

Message = tuple[str, str]  # (role, content)

SECTIONS = ("question", "reference", "rubric", "scale", "response", "your_round_one", "peers")
_NAMES = "round|batch|item|" + "|".join(SECTIONS)
_TAG_RE = re.compile(r"<\s*(?P<close>/)?\s*(?P<name>" + _NAMES + r")\b(?P<attrs>[^<>]*)>", re.IGNORECASE)
_ATTR_RE = re.compile(r"""(?P<key>[A-Za-z_][\w-]*)\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"'>]+))""")
_ENTITY_RE = re.compile(r"&(?:lt|amp);")
_VOTE_LINE_RE = re.compile(
    r"^\s*member\s*\[\s*(?P<member>[^\]]*?)\s*\]\s*:?\s*verdict\s*:\s*(?P<verdict>[A-Za-z]+)\s*;?\s*"
    r"(?:reason\s*:\s*(?P<reason>.*))?$", re.IGNORECASE)
_FIELD_LINE_RE = re.compile(r"^\s*(?P<key>verdict|reason)\s*:\s*(?P<value>.*)$", re.IGNORECASE)
_REPAIR_RE = re.compile(r"\b(?:previous|last)\s+(?:reply|answer|response)\b|\breply\s+again\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Vote:
    """A vote the reader found: its member letter ("" for the member's own), the verdict as written, lower
    case ("" when it gave none), the levels object of a graded vote (None otherwise) and the reason."""

    member: str
    verdict: str
    reason: str
    scores: object = None


@dataclass(frozen=True, slots=True)
class ItemText:
    """One item as read: the texts of its sections (stripped; None for a section it lacks), whether its
    response is fenced, its own vote and its peers' votes, the text read as the prompt's own words (outside
    every section, the request's instruction included) and the item's text from its first tag to its last."""

    question: str | None
    reference: str | None
    rubric: str | None
    scale: str | None
    response: str | None
    fenced: bool = False
    raw_response: str | None = field(default=None, repr=False)  # as written, before reading entities
    own: Vote | None = None
    peers: tuple[Vote, ...] = ()
    words: str = ""
    body: str = field(default="", repr=False)
    key: str = ""


@dataclass(frozen=True, slots=True)
class RequestText:
    """A user message as read: the round it names (0 when none), whether it is a batch, and its items (one
    for a single-row prompt)."""

    round: int
    batch: bool
    items: tuple[ItemText, ...]


def read_entities(text: str) -> str:
    """``&lt;`` as ``<`` and ``&amp;`` as ``&``, in one pass (so ``&amp;lt;`` reads ``&lt;``)."""
    return _ENTITY_RE.sub(lambda m: "<" if m[0] == "&lt;" else "&", text)


def _attrs(text: str) -> dict[str, str]:
    return {m["key"].lower(): next(v for v in (m["dq"], m["sq"], m["bare"]) if v is not None)
            for m in _ATTR_RE.finditer(text)}


def _tags(text: str, start: int = 0, stop: int | None = None) -> list[re.Match]:
    return list(_TAG_RE.finditer(text, start, len(text) if stop is None else stop))


def _vote_json(line: str) -> Vote | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not ("verdict" in value or "scores" in value):
        return None
    member, verdict, reason = value.get("member", ""), value.get("verdict", ""), value.get("reason", "")
    return Vote(
        member.strip() if isinstance(member, str) else str(member),
        verdict.strip().lower() if isinstance(verdict, str) else "",
        reason if isinstance(reason, str) else "",
        value.get("scores"),
    )


def _read_own(text: str, fenced: bool) -> Vote | None:
    """The member's own vote: one JSON object, or ``verdict: ...`` and ``reason: ...`` lines."""
    vote = _vote_json(text.strip())
    if vote is not None:
        return Vote("", vote.verdict, read_entities(vote.reason) if fenced else vote.reason, vote.scores)
    got: dict[str, str] = {}
    for line in text.splitlines():
        m = _FIELD_LINE_RE.match(line)
        if m is not None:
            got.setdefault(m["key"].lower(), m["value"].strip())
    if "verdict" not in got:
        return None
    reason = got.get("reason", "")
    return Vote("", got["verdict"].lower(), read_entities(reason) if fenced else reason)


def _read_peers(text: str, fenced: bool) -> list[Vote]:
    """Every vote line of a peers block (a JSON object with a member, or a ``Member [B]: ...`` line)."""
    out: list[Vote] = []
    for line in text.splitlines():
        vote = _vote_json(line.strip())
        if vote is None:
            m = _VOTE_LINE_RE.match(line)
            if m is None:
                continue
            vote = Vote(m["member"], m["verdict"].lower(), (m["reason"] or "").strip())
        if vote.member:
            out.append(Vote(vote.member, vote.verdict, read_entities(vote.reason) if fenced else vote.reason,
                            vote.scores))
    return out


def _closing(tags: list[re.Match], i: int) -> int | None:
    """The index of the first closing tag after ``tags[i]`` with its name (None when there is none)."""
    name = tags[i]["name"].lower()
    return next((j for j in range(i + 1, len(tags)) if tags[j]["close"] and tags[j]["name"].lower() == name), None)


def read_item(text: str, start: int = 0, stop: int | None = None, key: str = "", words: str = "") -> ItemText:
    """The item in ``text[start:stop]``; ``words`` (the request's own words outside the item) are added to the
    item's."""
    stop = len(text) if stop is None else stop
    found: dict[str, str] = {}
    fenced: dict[str, bool] = {}
    raw: dict[str, str] = {}
    own: Vote | None = None
    peers: list[Vote] = []
    outside: list[str] = []
    first = last = None
    pos = start
    tags = _tags(text, start, stop)
    i = 0
    while i < len(tags):
        tag = tags[i]
        name = tag["name"].lower()
        if tag["close"] or name not in SECTIONS:  # a stray close, or a tag that holds no text: the prompt's words
            outside.append(text[pos : tag.start()])
            pos, i = tag.end(), i + 1
            first = tag.start() if first is None else first
            last = tag.end()
            continue
        close = _closing(tags, i)
        outside.append(text[pos : tag.start()])
        first = tag.start() if first is None else first
        end = tags[close].start() if close is not None else stop
        content = text[tag.end() : end]
        nonce = "nonce" in _attrs(tag["attrs"])
        if name == "peers":
            peers += _read_peers(content, nonce)
        elif name not in found:
            raw[name] = content.strip()
            found[name] = read_entities(raw[name]) if nonce else raw[name]
            fenced[name] = nonce
            if name == "your_round_one":
                own = _read_own(content, nonce)
        if close is None:
            pos = last = stop
            break
        pos = last = tags[close].end()
        i = close + 1
    outside.append(text[pos:stop])
    said = " ".join(" ".join(part.split()) for part in (*outside, words) if part.strip())
    return ItemText(
        question=found.get("question"), reference=found.get("reference"), rubric=found.get("rubric"),
        scale=found.get("scale"), response=found.get("response"), fenced=fenced.get("response", False),
        raw_response=raw.get("response"), own=own, peers=tuple(peers), words=said,
        body=text[first:last] if first is not None else "", key=key,
    )


def read_request(text: str) -> RequestText | None:
    """A user message as read; None when it names no round (``<round>1</round>`` or ``<round>2</round>``).

    Outside the sections (whose text, tags and all, is the section's), a ``<batch>`` tag makes the message a
    batch, whose items each run from an ``<item>`` tag to the first ``</item>`` after it."""
    tags = _tags(text)
    at = next((k for k, t in enumerate(tags) if not t["close"] and t["name"].lower() == "round"), None)
    if at is None:
        return None
    close = _closing(tags, at)
    said = text[tags[at].end() : tags[close].start() if close is not None else len(text)].strip()
    if said not in ("1", "2"):
        return None
    after = tags[close].end() if close is not None else tags[at].end()
    spans: list[tuple[str, int, int]] = []
    words: list[str] = []
    is_batch, item, pos = False, None, after
    i = (close if close is not None else at) + 1
    while i < len(tags):
        tag, name = tags[i], tags[i]["name"].lower()
        if not tag["close"] and name in SECTIONS:
            end = _closing(tags, i)
            if item is None:  # a section outside every item: not the request's words
                words.append(text[pos : tag.start()])
                pos = tags[end].end() if end is not None else len(text)
            i = end + 1 if end is not None else len(tags)
            continue
        if name == "batch" and not tag["close"]:
            is_batch = True
        elif name == "item" and not tag["close"] and item is None:
            words.append(text[pos : tag.start()])
            item = (_attrs(tag["attrs"]).get("key", ""), tag.end())
        elif name == "item" and tag["close"] and item is not None:
            spans.append((*item, tag.start()))
            item, pos = None, tag.end()
        i += 1
    if item is not None:
        spans.append((*item, len(text)))
        pos = len(text)
    if not is_batch:
        return RequestText(int(said), False, (read_item(text, after),))
    words.append(text[pos:])
    outside = _TAG_RE.sub(" ", " ".join(words))  # the batch's own tags are no words
    return RequestText(int(said), True, tuple(read_item(text, a, b, key, outside) for key, a, b in spans))


def is_repair(messages: list[Message]) -> bool:
    """Whether the last message asks again for the previous reply (a user re-ask after an assistant reply,
    naming no round of its own)."""
    return (len(messages) >= 3 and messages[-1][0] == "user" and messages[-2][0] == "assistant"
            and read_request(messages[-1][1]) is None and _REPAIR_RE.search(messages[-1][1]) is not None)


def _replies(text: str) -> dict[str, Vote]:
    """The votes an assistant reply gave, by item key ("" for a single row's): one JSON object, or a
    ``verdicts`` list of objects each with a key; nothing when it is not JSON."""
    try:
        value = orjson.loads(text.strip())
    except orjson.JSONDecodeError:
        return {}
    if isinstance(value, dict) and isinstance(value.get("verdicts"), list):
        out = {}
        for entry in value["verdicts"]:
            vote = _vote_json(orjson.dumps(entry).decode()) if isinstance(entry, dict) else None
            if vote is not None:
                out.setdefault(str(entry.get("key", "")), vote)
        return out
    vote = _vote_json(text.strip()) if isinstance(value, dict) else None
    return {"": vote} if vote is not None else {}


def read_conversation(messages: list[Message]) -> RequestText | None:
    """The request a conversation makes (see the module docstring): its last user message, with each item that
    shows no question nor response of its own read as the earlier user message's item, answered by the
    assistant's reply in between. None when the last user message names no round."""
    users = [k for k, (role, _) in enumerate(messages) if role == "user"]
    if not users:
        return None
    last = read_request(messages[users[-1]][1])
    if last is None or all(i.question is not None or i.response is not None for i in last.items) or len(users) < 2:
        return last
    earlier = read_request(messages[users[-2]][1])
    if earlier is None:
        return last
    replies: dict[str, Vote] = {}
    for role, content in messages[users[-2] + 1 : users[-1]]:
        if role == "assistant":
            replies = _replies(content)
    shown = {i.key: i for i in earlier.items}
    items = []
    for item in last.items:
        before = shown.get(item.key)
        if before is None or item.question is not None or item.response is not None:
            items.append(item)
            continue
        own = replies.get(item.key)
        if own is not None:
            own = Vote("", own.verdict, own.reason, own.scores)
        items.append(replace(before, own=own, peers=item.peers, words=" ".join(filter(None, (before.words, item.words))),
                             body="\n".join((before.body, item.body)), key=item.key))
    return RequestText(last.round, last.batch, tuple(items))
