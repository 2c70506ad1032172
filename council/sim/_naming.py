"""How the simulated judges name themselves in their reasons (``name_drop_rate``): the forms real models use.

Kept in one place so that the forms can grow without touching the judges' decisions. Names come from the
simulated world's own catalogue (``council.sim._world``) and the product words below, never from the
council's names data. The forms:

- the model's display name, id or family, or its maker's brand ("As GPT-5, I find ...", "As an OpenAI
  model, ...", "gemini_2.5_pro's view");
- its product word standing alone, the way a model says its own name without its maker's ("As Sonnet,
  I find ...", "Pro here:", "Max's view", "Medium finds"); a model with no product word uses its family
  written split instead (or, for a family shorter than four letters, its brand: "Open AI here");
- its brand, family or display name written split by a separator inside a word ("Deep-Seek",
  "Open AI", "Anthrop_ic", "Q‐wen3-Max", "Mis tral"): at a capital inside the word where there is one
  (DeepSeek, OpenAI), else at a letter chosen with the form.
"""

from __future__ import annotations

import re

from council.sim._world import BRAND, FAMILY, display_name

# The word a model uses for itself without its maker's or family's name (model id, lower-case -> word).
PRODUCT: dict[str, str] = {
    "anthropic/claude-sonnet-4.5": "Sonnet", "anthropic/claude-haiku-4.5": "Haiku",
    "anthropic/claude-opus-4.1": "Opus", "google/gemini-2.5-pro": "Pro", "google/gemini-2.5-flash": "Flash",
    "openai/gpt-4o": "4o", "qwen/qwen3-max": "Max", "deepseek/deepseek-v3.2": "V3.2", "deepseek/deepseek-r1": "R1",
    "mistralai/mistral-medium-3.1": "Medium", "codestral-latest": "Codestral",
    "meta-llama/llama-4-maverick": "Maverick", "meta-llama/llama-4-scout": "Scout", "moonshotai/kimi-k2": "K2",
    "microsoft/phi-4": "Phi", "cohere/command-a": "Command",
}
SPLIT_SEPARATORS = ("-", " ", "_", "\u2010")  # what is written inside a split name


def _lcfirst(text: str) -> str:
    return text[:1].lower() + text[1:]


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def split_word(word: str, v: float) -> str:
    """``word`` with one separator inside it (``v`` in [0, 1) picks the separator and, in a word without an
    inner capital, the point); a word shorter than four letters is left whole."""
    if len(word) < 4:
        return word
    k = int(v * 1000)
    inner = [i for i in range(1, len(word)) if word[i].isupper() and word[i - 1].islower()]
    at = inner[0] if inner else 1 + (k // len(SPLIT_SEPARATORS)) % (len(word) - 1)
    return word[:at] + SPLIT_SEPARATORS[k % len(SPLIT_SEPARATORS)] + word[at:]


def split_name(name: str, v: float) -> str:
    """``name`` with its first word of four letters or more split (see :func:`split_word`)."""
    match = re.search(r"[A-Za-z]{4,}", name)
    return name if match is None else name[:match.start()] + split_word(match.group(), v) + name[match.end():]


def name_drop(reason: str, model: str, vendor: str, u: float) -> str:
    """``reason`` with the judge naming itself, in one of sixteen forms chosen by ``u``."""
    display = display_name(model)
    family = FAMILY.get(vendor, display)
    brand = BRAND.get(vendor, vendor.capitalize() or display)
    rest = _lcfirst(reason)
    splittable = family if len(family) >= 4 else brand  # "Deep Seek", "Q-wen"; "Open AI" for GPT
    forms = (
        lambda v: f"As {display}, I find that {rest}",
        lambda v: f"{display.replace('-', chr(0x2011))} here: {reason}",  # a non-breaking hyphen, as some write it
        lambda v: f"Speaking as {_article(family)} {family} model, {rest}",
        lambda v: f"{re.sub(r'[^0-9A-Za-z.]+', '_', model.rsplit('/', 1)[-1])}'s view: {rest}",
        lambda v: f"As {_article(brand)} {brand} model, {rest}",
        lambda v: f"I, {display}, judge that {rest}",
        lambda v: f"{display} finds that {rest}",
        lambda v: f"In {display}'s judgement, {rest}",
        lambda v: f"As {product(v)}, I find that {rest}",
        lambda v: f"{product(v)} here: {reason}",
        lambda v: f"{product(v)}'s view: {rest}",
        lambda v: f"{product(v)} finds that {rest}",
        lambda v: f"As {_article(brand)} {split_name(brand, v)} model, {rest}",
        lambda v: f"{split_name(splittable, v)} here: {reason}",
        lambda v: f"Speaking as {split_name(display, v)}, {rest}",
        lambda v: f"I, {split_name(brand, v)}'s model, judge that {rest}",
    )

    def product(v: float) -> str:
        return PRODUCT.get(model.strip().lower()) or split_name(splittable, v)

    at = min(int(u * len(forms)), len(forms) - 1)
    return forms[at](u * len(forms) - at)
