"""Anonymisation that holds: every self-identification scrubbed, ordinary words left alone."""

from __future__ import annotations

import re

import pytest

from council.core.vendors import DEFAULT_ROSTER
from council.protocol.anonymise import REDACTED, Anonymiser, names_data, self_identifies

RUN_NAMES = [*DEFAULT_ROSTER, *DEFAULT_ROSTER.values(), "openai/gpt-4.1-mini", "qwen/qwen3-235b-a22b",
             "meta-llama/llama-3.3-70b-instruct", "meta"]

DEFAULT_VENDORS = ("anthropic", "google", "openai", "alibaba", "deepseek", "mistral")  # the roster and its reserve
ALL_VENDORS = tuple(names_data()["vendors"])

# (vendor, text): self-identifications as models write them.
SELF_IDS: list[tuple[str, str]] = [
    ("anthropic", "As Claude 3.5 Sonnet, I judge the answer correct."),
    ("anthropic", "I'm Claude, made by Anthropic, and I disagree."),
    ("anthropic", "Anthropic’s assistant finds the premise false."),
    ("anthropic", "claude-3-5-sonnet-20241022 here: the total is right."),
    ("anthropic", "Speaking as Claude Opus 4.1, the certificate fails."),
    ("anthropic", "Sonnet 4.5 thinks the response abstains properly."),
    ("anthropic", "As haiku-4.5 I note the arithmetic slip."),
    ("anthropic", "Claude's view: correct."),
    ("anthropic", "I, claude-haiku-4-5, agree with the reference."),
    ("anthropic", "As the 3.5 Sonnet model, I accept it."),
    ("openai", "I'm GPT‑4o and the answer matches."),
    ("openai", "gpt_4o here, the product is 391."),
    ("openai", "As an OpenAI model, I find it incorrect."),
    ("openai", "GPT-5.1 says the premise is false."),
    ("openai", "o4-mini-high checked the sum."),
    ("openai", "This is ChatGPT: the response is correct."),
    ("openai", "GPT-4o’s reading is that it abstained."),
    ("openai", "I am o3 and I agree."),
    ("openai", "gpt4o verified the certificate."),
    ("openai", "As gpt-3.5-turbo-0125, I see no error."),
    ("openai", "openai/gpt-4.1-mini judged it wrong."),
    ("google", "Gemini-2.5-Pro's view is that the answer is right."),
    ("google", "As Gemini 2.5 Pro, I agree."),
    ("google", "Google DeepMind's model says correct."),
    ("google", "gemini_pro finds the answer wrong."),
    ("google", "I am Gemma 3 27B and the total is off."),
    ("google", "Bard here: the premise is false."),
    ("google", "models/gemini-1.5-pro thinks it is fine."),
    ("google", "As PaLM 2, I disagree."),
    ("alibaba", "Qwen3-235B-A22B thinks the answer is right."),
    ("alibaba", "I am QwQ, and I checked it twice."),
    ("alibaba", "As Tongyi Qianwen, I find it correct."),
    ("alibaba", "Qwen2.5-72B-Instruct agrees."),
    ("alibaba", "The Alibaba Cloud model (qwen-max) disagrees."),
    ("deepseek", "DeepSeek-V3.2 checked: 17*23=391."),
    ("deepseek", "As deepseek-reasoner I accept the abstention."),
    ("deepseek", "DeepSeek R1 says the premise is false."),
    ("deepseek", "deepseek-ai/DeepSeek-V3 agrees with the reference."),
    ("meta", "Llama‑3.1‑70B‑Instruct says the answer is right."),
    ("meta", "As Meta's Llama 4 Maverick, I disagree."),
    ("meta", "Meta-Llama-3.1-8B-Instruct finds no error."),
    ("meta", "llama3.1:8b thinks it is correct."),
    ("meta", "I am a Meta AI model."),
    ("mistral", "Mistral Large 2 finds the premise false."),
    ("mistral", "codestral-2501 verified the certificate."),
    ("mistral", "As Mixtral-8x7B-Instruct-v0.1, I agree."),
    ("mistral", "Mistral AI's model says incorrect."),
    ("mistral", "mistralai/ministral-8b finds it right."),
    ("xai", "Grok 4 says the answer is wrong."),
    ("xai", "As xAI's Grok, I agree."),
    ("xai", "grok-3-mini-beta checked the sum."),
    ("moonshot", "Kimi K2 finds the response correct."),
    ("moonshot", "As Moonshot AI's kimi-k2-instruct, I agree."),
    ("zhipu", "GLM-4.5 thinks it is wrong."),
    ("zhipu", "As ChatGLM3-6B, I accept it."),
    ("zhipu", "Zhipu AI's GLM-4.5-Air agrees."),
    ("cohere", "Command R+ says the total is correct."),
    ("cohere", "As command-r-plus-08-2024, I disagree."),
    ("cohere", "Cohere's Command A finds it right."),
    ("cohere", "c4ai-command-r-plus checked it."),
    ("microsoft", "Phi-4 says the premise is false."),
    ("microsoft", "As Phi-3.5-mini-instruct, I agree."),
    ("microsoft", "Microsoft's phi3 model accepts it."),
    ("amazon", "Amazon Nova Pro finds the answer right."),
    ("amazon", "As amazon.nova-lite-v1:0, I disagree."),
    ("amazon", "Titan Text Express agrees."),
    ("openai", "GPT—4 (em dash) and GPT–4o (en dash) agree."),
    ("alibaba", "Qwen−3 (minus sign) and Qwen‐2.5 (hyphen) agree."),
    ("meta", "Llama‒3 (figure dash) and Llama―3 (bar) agree."),
    ("openai", "GPT‑5‑mini’s answer stands."),
]

# (vendor of the judge who wrote it, text): self-identifications only that judge's reason gives away, its
# product word standing alone or its name split inside a word. Each name is in braces: the expected output
# has [redacted] there and is otherwise the text as written.
OWN_IDS: list[tuple[str, str]] = [
    ("anthropic", "As {Sonnet}, I find the total right."),
    ("anthropic", "{Opus} here: the premise is false."),
    ("anthropic", "{Haiku's} view: correct."),
    ("anthropic", "I, {haiku}, agree with the reference."),
    ("anthropic", "{Sonnet} finds that the answer abstains."),
    ("anthropic", "As an {Anthrop ic} model, I disagree."),
    ("anthropic", "{Cla ude} here: wrong."),
    ("anthropic", "{Anthr-opic's} model checked it."),
    ("google", "{Flash} here: the answer is right."),
    ("google", "As {Pro}, I find it wrong."),
    ("google", "{Flash 2.5} agrees with the reference."),
    ("google", "{Gem ini} here: correct."),
    ("google", "As a {Goo gle} model, I agree."),
    ("google", "{Deep Mind's} model says no."),
    ("google", "{Ultra} finds the premise false."),
    ("google", "{Gem ini 2.5 Pro} checked the sum."),
    ("openai", "As {4o}, I find it right."),
    ("openai", "{Open AI} here: the total is wrong."),
    ("openai", "As an {Open-AI} model, I agree."),
    ("openai", "{Chat GPT} says it is correct."),
    ("openai", "{Codex} checked the arithmetic."),
    ("openai", "{Open_AI's} model disagrees."),
    ("openai", "{open ai} here, and I accept it."),
    ("alibaba", "{Max} here: the answer is right."),
    ("alibaba", "As {Q-wen}, I disagree."),
    ("alibaba", "{Q wen3-Max} finds it wrong."),
    ("alibaba", "{Ali baba's} model agrees."),
    ("alibaba", "As {Plus}, I accept it."),
    ("alibaba", "{Qw en} here: wrong."),
    ("alibaba", "{Max's} view: correct."),
    ("deepseek", "{Deep Seek} here: correct."),
    ("deepseek", "As {R1}, I find it wrong."),
    ("deepseek", "{V3.2} checked: 17*23=391."),
    ("deepseek", "{deep seek's} view: right."),
    ("deepseek", "{Deep_Seek-V3.2} agrees."),
    ("deepseek", "{R1-0528} here: the premise is false."),
    ("deepseek", "As {Reasoner}, I agree."),
    ("deepseek", "{Dee pSeek} finds that the answer abstains."),
    ("mistral", "{Medium} here: the answer is right."),
    ("mistral", "As {Le Chat}, I disagree."),
    ("mistral", "{Codestral} verified the certificate."),
    ("mistral", "{Mis tral} finds it wrong."),
    ("mistral", "{Medium 3.1's} view: correct."),
    ("mistral", "As {Large}, I accept it."),
    ("mistral", "{Nemo} here: wrong."),
    ("mistral", "As a {Mis tral AI} model, I agree."),
    ("meta", "As {Maverick}, I agree."),
    ("meta", "{Scout} here: wrong."),
    ("meta", "{Lla ma} finds it right."),
    ("meta", "{Me-ta's} model says no."),
    ("xai", "{Heavy} here: wrong."),
    ("xai", "{Gr ok} agrees."),
    ("moonshot", "{K2} here: correct."),
    ("moonshot", "As {Ki mi}, I agree."),
    ("moonshot", "{K2-Thinking} finds it wrong."),
    ("zhipu", "{GLM} here: the answer is right."),
    ("zhipu", "As {Zhi pu's} model, I agree."),
    ("cohere", "{Command} finds the total right."),
    ("cohere", "As {Aya}, I agree."),
    ("microsoft", "{Phi} here: the premise is false."),
    ("microsoft", "{Micro soft's} model agrees."),
    ("amazon", "As {Nova}, I disagree."),
    ("amazon", "{Titan} here: correct."),
    ("amazon", "{Ama-zon's} model agrees."),
    ("baidu", "{Ernie} here: wrong."),
    ("baidu", "{Bai du} agrees."),
    ("bytedance", "{Seed} here: correct."),
    ("bytedance", "{Byte Dance's} model agrees."),
    ("minimax", "{minimax} here: right."),
    ("nvidia", "{Nemo-tron} agrees."),
    ("tencent", "{Ten cent's} model agrees."),
]

# (vendor named, text): names split inside a word that everyone's reasons give away (read whoever wrote them).
SPLIT_IDS: list[tuple[str, str]] = [
    ("deepseek", "I agree with {Deep-Seek} here."),
    ("deepseek", "{Deep\u2013Seek-V3} says yes."),
    ("openai", "{Open-AI's} model is wrong."),
    ("openai", "{Chat GPT} says yes."),
    ("anthropic", "{Anthrop-ic} says yes."),
    ("anthropic", "{Clau\u2010de} says yes."),
    ("alibaba", "{Q-wen} says yes."),
    ("alibaba", "{Qw_en3-235B-A22B} says yes."),
    ("alibaba", "{Ali-Baba's} model says yes."),
    ("mistral", "{Mis tral} says yes."),
    ("mistral", "{Mix tral} says yes."),
    ("mistral", "{Code-stral} says yes."),
    ("google", "{Gem-ini} says yes."),
    ("google", "{Goo-gle} says yes."),
    ("google", "{Gem ini 2.5 Pro} says yes."),
    ("google", "{Deep-Mind} says yes."),
    ("meta", "{Lla-ma 3.1} says yes."),
    ("meta", "{Me-ta} says yes."),
    ("xai", "{Gr-ok 4} says yes."),
    ("moonshot", "{Ki-mi K2} says yes."),
    ("microsoft", "{Micro-Soft} says yes."),
    ("amazon", "{Ama zon} says yes."),
]

# Ordinary text scrubbed only in the reason of one vendor's own judge (the accepted cost of reading its own
# words): text -> (that vendor, what its judge's reason becomes). Every other judge's reason keeps it whole.
OWN_COST: dict[str, tuple[str, str]] = {
    "She is a member of Phi Beta Kappa.": ("microsoft", "She is a member of [redacted] Beta Kappa."),
    "The response is a haiku about autumn.": ("anthropic", "The response is a [redacted] about autumn."),
    "Shakespeare's Sonnet 18 compares a lover to summer.": (
        "anthropic", "Shakespeare's [redacted] compares a lover to summer."),
    "It was his magnum opus.": ("anthropic", "It was his magnum [redacted]."),
    "A sonnet by Shakespeare opens the collection.": ("anthropic", "A [redacted] by Shakespeare opens the collection."),
    "Open AI research is growing.": ("openai", "[redacted] research is growing."),
    "The codex was written on vellum.": ("openai", "The [redacted] was written on vellum."),
    "Titan is Saturn's largest moon.": ("amazon", "[redacted] is Saturn's largest moon."),
    "The Nova Scotia coast is rocky.": ("amazon", "The [redacted] Scotia coast is rocky."),
    "The minimax algorithm searches the game tree.": ("minimax", "The [redacted] algorithm searches the game tree."),
    "We fit a GLM to the data.": ("zhipu", "We fit a [redacted] to the data."),
    "Aya is the name of the narrator.": ("cohere", "[redacted] is the name of the narrator."),
    "Deep seek and you will find.": ("deepseek", "[redacted] and you will find."),
    "The deep seek of truth goes on.": ("deepseek", "The [redacted] of truth goes on."),
    "The flash memory is full.": ("google", "The [redacted] memory is full."),
    "Pro tip: check the units.": ("google", "[redacted] tip: check the units."),
    "She has a deep mind.": ("google", "She has a [redacted]."),
    "Max Planck was a physicist.": ("alibaba", "[redacted] Planck was a physicist."),
    "Ali Baba and the forty thieves.": ("alibaba", "[redacted] and the forty thieves."),
    "A maverick approach won.": ("meta", "A [redacted] approach won."),
    "The response met a requirement.": ("meta", "The response [redacted] requirement."),
    "Mount K2 is tall.": ("moonshot", "Mount [redacted] is tall."),
    "The R1 resistor failed.": ("deepseek", "The [redacted] resistor failed."),
    "Le Chat Noir was a cabaret.": ("mistral", "[redacted] Noir was a cabaret."),
    "Captain Nemo sails on.": ("mistral", "Captain [redacted] sails on."),
    "Heavy rain fell.": ("xai", "[redacted] rain fell."),
    "Ten cent stamps.": ("tencent", "[redacted] stamps."),
    "Command the fleet.": ("cohere", "[redacted] the fleet."),
    "Micro soft drinks.": ("microsoft", "[redacted] drinks."),
    "deep-seek behaviour is rare.": ("deepseek", "[redacted] behaviour is rare."),
    "Go ogle the stars.": ("google", "[redacted] the stars."),
    "The Flash is a comic hero.": ("google", "The [redacted] is a comic hero."),
}

# Independent check: after scrubbing, none of these stems may be left as a token.
STEMS = {
    "claude", "anthropic", "sonnet", "opus", "haiku", "gpt", "chatgpt", "openai", "gemini", "gemma", "google",
    "deepmind", "bard", "palm", "qwen", "qwq", "alibaba", "tongyi", "qianwen", "deepseek", "llama", "meta",
    "mistral", "mistralai", "mixtral", "codestral", "ministral", "grok", "xai", "kimi", "moonshot", "glm", "chatglm",
    "zhipu", "cohere", "command", "phi", "microsoft", "nova", "amazon", "titan", "maverick",
}

# Ordinary text that must come out unchanged.
ORDINARY: list[str] = [
    "The metadata is incomplete.",
    "It is a metaphor for loss.",
    "The metamorphosis of the caterpillar is complete.",
    "Marble is a metamorphic rock.",
    "A meta-analysis of the trials supports the reference.",
    "She wrote a novel about it.",
    "The novelty wore off quickly.",
    "Type the answer on the command line.",
    "The general kept command and control.",
    "The commander of the fleet agreed.",
    "They command a fleet of ships.",
    "The golden ratio is phi = 1.618.",
    "phi 1.618 is the golden ratio.",
    "She is a member of Phi Beta Kappa.",
    "The response is a haiku about autumn.",
    "Shakespeare's Sonnet 18 compares a lover to summer.",
    "It was his magnum opus.",
    "Open AI research is growing.",
    "GPTZero flagged the essay.",
    "Claudication is pain in the leg when walking.",
    "Hold it in the palm of your hand.",
    "A supernova remnant was observed.",
    "Titan is Saturn's largest moon.",
    "The arguments do not cohere.",
    "It was a moonshot idea.",
    "The minimax algorithm searches the game tree.",
    "Explainable AI (XAI) methods were used.",
    "We fit a GLM to the data.",
    "Grokking the concept takes time.",
    "He googled the answer.",
    "The Amazonian rainforest is vast.",
    "Lookup takes O(1) time.",
    "17 x 23 = 391, so the response is right.",
    "The codex was written on vellum.",
    "Leonardo da Vinci painted it.",
    "Aya is the name of the narrator.",
    "The Nova Scotia coast is rocky.",
    "The response says 648 bottles, which matches the reference.",
    "It correctly rejects the false premise.",
    "The answer abstains, as the rubric requires.",
    "Metaverse and metaphysics are different words.",
    "The sonnets and haikus were collected.",
    "Deep seek and you will find.",
    "The metallic sheen is misleading.",
    "Correct: the certificate 41 x 43 checks.",
    # ordinary uses of the words a judge's own reasons scrub (see OWN_COST), and of split names
    *OWN_COST,
    "Type it on the command line.",
    "A supernova lit the sky.",
    "Take the max of the two values.",
    "A medium difficulty item.",
    "The large share is right.",
    "A small error remains.",
    "The scout leader agreed.",
    "A seed of doubt.",
    "The turbo engine is loud.",
    "The open-source model is cited.",
    "The chat window closed.",
]


def _tokens(text: str) -> set[str]:
    lowered = text.lower()
    return set(re.findall(r"[a-z]+", lowered)) | set(re.findall(r"[a-z0-9]+", lowered))


@pytest.fixture(scope="module")
def anonymiser() -> Anonymiser:
    return Anonymiser(RUN_NAMES)


def test_the_banks_are_broad():
    assert len(SELF_IDS) >= 60 and len({v for v, _ in SELF_IDS}) >= 10
    assert len(ORDINARY) >= 40
    own = {v for v, _ in OWN_IDS}
    assert {"anthropic", "google", "openai", "alibaba", "deepseek", "mistral"} <= own and len(own) >= 15
    assert all(sum(v == vendor for v, _ in OWN_IDS) >= 6 for vendor in DEFAULT_VENDORS)


def _braced(text: str) -> tuple[str, str, int]:
    """A bank entry's text as written, as it must come out, and how many names it holds."""
    return re.sub(r"[{}]", "", text), re.sub(r"\{[^}]*\}", REDACTED, text), text.count("{")


@pytest.mark.parametrize("vendor, text", OWN_IDS)
def test_own_words_and_splits_are_scrubbed_in_the_own_judges_reason(anonymiser, vendor, text):
    written, expected, names = _braced(text)
    assert anonymiser.redact(written, vendor) == (expected, names)
    assert anonymiser.redact(written, vendor.capitalize()) == (expected, names)  # any spelling of the vendor


@pytest.mark.parametrize("vendor, text", SPLIT_IDS)
def test_split_names_are_scrubbed_in_everyones_reason(anonymiser, vendor, text):
    written, expected, names = _braced(text)
    for author in (None, "cohere", vendor):
        assert anonymiser.redact(written, author) == (expected, names), author


@pytest.mark.parametrize("text", list(OWN_COST))
def test_the_own_judges_reason_pays_the_accepted_cost(anonymiser, text):
    vendor, expected = OWN_COST[text]
    assert anonymiser.scrub(text, vendor) == expected


@pytest.mark.parametrize("vendor, text", SELF_IDS)
def test_self_identifications_leave_no_name(anonymiser, vendor, text):
    scrubbed = anonymiser.scrub(text)
    assert REDACTED in scrubbed
    left = _tokens(scrubbed)
    assert not left & STEMS, (text, scrubbed)
    assert not any(re.fullmatch(r"o[1-9]", t) for t in left), (text, scrubbed)
    assert anonymiser.names_in(text)


@pytest.mark.parametrize("vendor, text", SELF_IDS)
def test_self_identifies(vendor, text):
    model = {**DEFAULT_ROSTER, "meta": "meta-llama/llama-3.3-70b-instruct"}.get(vendor, f"{vendor}/some-model")
    assert self_identifies(text, model, vendor)


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_unchanged(anonymiser, text):
    """Unchanged in anyone's text and in the reason of every vendor's judge but the one whose own word it is."""
    own = OWN_COST.get(text, (None, ""))[0]
    assert anonymiser.scrub(text) == text
    assert anonymiser.names_in(text) == []
    for vendor in ALL_VENDORS:
        if vendor != own:
            assert anonymiser.redact(text, vendor) == (text, 0), vendor
    assert not self_identifies(text, "openai/gpt-5", "openai")
    if own:
        assert not self_identifies(text, f"{own}/some-model", own)  # a response's words are not its name


def test_a_name_is_replaced_whole(anonymiser):
    cases = {
        "GPT-5.1 is right.": "[redacted] is right.",
        "Qwen3-235B-A22B's answer stands.": "[redacted] answer stands.",
        "As claude-3.5-sonnet, I agree.": "As [redacted], I agree.",
        "Llama‑3.1‑70B says no.": "[redacted] says no.",
        "o4-mini-high and Gemini 2.5 Pro agree.": "[redacted] and [redacted] agree.",
        "openai/gpt-4o said so.": "[redacted] said so.",
        "Claude 3.5 Sonnet, GPT-4o and Gemini 2.5 Pro agree.": "[redacted], [redacted] and [redacted] agree.",
        "I am GPT-4.": "I am [redacted].",
        "Google DeepMind and Amazon Nova Pro disagree.": "[redacted] and [redacted] disagree.",
    }
    for text, expected in cases.items():
        assert anonymiser.scrub(text) == expected, text


def test_names_in_gives_the_spans(anonymiser):
    assert anonymiser.names_in("As Claude 3.5 Sonnet's peer, GPT-4o’s view and metadata differ.") == [
        "Claude 3.5 Sonnet's", "GPT-4o’s"]


@pytest.mark.parametrize("dash", ["\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2015", "\u2212"])
def test_unicode_hyphens_are_separators(anonymiser, dash):
    assert anonymiser.scrub(f"GPT{dash}4o and Llama{dash}3.1{dash}70B agree") == "[redacted] and [redacted] agree"


def test_extra_names_match_whole_tokens_only():
    anonymiser = Anonymiser(["openai/gpt-4.1-mini", "acme/zeta-lm-7", "meta"])
    assert anonymiser.scrub("zeta-lm-7 and acme/zeta-lm-7 said so") == "[redacted] and [redacted] said so"
    assert anonymiser.scrub("ZETA_LM_7's reason") == "[redacted] reason"
    assert anonymiser.scrub("the zeta function and metadata") == "the zeta function and metadata"
    assert anonymiser.scrub("meta and META agree") == "[redacted] and [redacted] agree"


def test_self_identifies_only_its_own_names():
    assert self_identifies("I am GPT-4o.", "openai/gpt-4o", "openai")
    assert self_identifies("Made by OpenAI.", "openai/gpt-4o", "OpenAI")
    assert self_identifies("zeta-lm-7 here", "acme/zeta-lm-7", "acme")
    assert not self_identifies("As Claude, I disagree.", "openai/gpt-4o", "openai")
    assert not self_identifies("The product is 391.", "qwen/qwen3-max", "alibaba")


def test_patterns_are_built_once_per_set_of_names():
    first, second = Anonymiser(RUN_NAMES), Anonymiser(list(reversed(RUN_NAMES)))
    assert first._for(None) is second._for(None) and first._for("openai") is second._for("OpenAI")


def test_a_text_is_matched_by_a_pattern_of_only_the_names_it_may_hold():
    """One pattern of every name took 0.08 s of a core to compile per author (half a second in each process that
    scrubs, on the event loop of the calls in flight). A text with no name's key compiles nothing; one with keys
    compiles a pattern of only their names' forms, once."""
    from council.protocol import anonymise

    anonymiser = Anonymiser([*RUN_NAMES, "acme/pattern-per-text-1"])  # a set of names no other test uses
    forms = anonymiser._for("anthropic")
    assert anonymiser.scrub("The response matches the reference.", "anthropic") == "The response matches the reference."
    assert not forms._patterns
    assert anonymiser.scrub("As Sonnet, I agree.", "anthropic") == f"As {REDACTED}, I agree."
    assert anonymiser.scrub("Sonnet here: correct.", "anthropic") == f"{REDACTED} here: correct."
    (pattern,) = forms._patterns.values()  # one set of keys, one pattern
    whole = len(anonymise._alternation(forms.alternatives))  # one pattern of every form, not compiled
    assert len(pattern.pattern) * 20 < whole, (len(pattern.pattern), whole)


def _corpus(seed: int) -> list[str]:
    """This module's texts as models write them (self-identifications, product words, split names, ordinary
    words), texts that name models as the embedded provider's judges do (its own naming code and catalogue, not
    the council's names data), and short random runs of the names data's words, separators and versions."""
    import random

    from council.sim import WORLD
    from council.sim._naming import name_drop

    rng = random.Random(seed)
    texts = [text.replace("{", "").replace("}", "") for _, text in (*SELF_IDS, *OWN_IDS, *SPLIT_IDS)]
    texts += ORDINARY
    texts += [name_drop("The response matches the reference answer.", model, vendor, rng.random())
              for model, vendor in WORLD.items() for _ in range(3)]
    data = names_data()
    words = {"the", "meta", "analysis", "line", "3.5", "4o", "70B", "-0528", "v2", "'s", "\u2019s", "1.618",
             *data["words"]["any"]}
    for spec in data["vendors"].values():
        for key in ("names", "families", "own_words", "split"):
            for entry in spec.get(key, []):
                form = entry if isinstance(entry, str) else entry.get("form", "")
                words.update(w for w in re.split(r"[\s\-]+", form) if w)
    words = sorted(words)
    separators = [" ", "-", "_", ".", "/", ":", "\u2011", "", ", "]
    for _ in range(300):
        text = "".join(rng.choice(words) + rng.choice(separators) for _ in range(rng.randint(1, 3)))
        texts.append(text.lower() if rng.random() < 0.5 else text)
    return texts


@pytest.mark.parametrize("author", [None, "anthropic", "meta", "amazon", "deepseek"])
def test_the_patterns_of_a_texts_names_find_what_one_pattern_of_every_name_finds(author):
    from council.protocol.anonymise import compile_forms

    forms = Anonymiser(RUN_NAMES)._for(author)
    whole = compile_forms(forms.alternatives)
    for text in _corpus(seed=len(author or "")):
        pattern = forms.pattern_for(text)
        found = [m.span() for m in pattern.finditer(text)] if pattern is not None else []
        assert found == [m.span() for m in whole.finditer(text)], (author, text)
