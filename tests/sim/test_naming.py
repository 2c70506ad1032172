"""The simulated judges' self-naming forms: every form names the judge, and the forms vary as real models do."""

from __future__ import annotations

import re

import pytest

from council.sim._naming import PRODUCT, SPLIT_SEPARATORS, name_drop, split_name, split_word

REASON = "The response gives 391, which matches the reference."
JUDGES = {  # the default roster and its reserve
    "anthropic/claude-sonnet-4.5": "anthropic", "google/gemini-2.5-pro": "google", "openai/gpt-5": "openai",
    "qwen/qwen3-max": "alibaba", "deepseek/deepseek-v3.2": "deepseek", "mistralai/mistral-medium-3.1": "mistral",
}
FORMS = 16


def drops(model: str, n: int = 64) -> list[str]:
    """``n`` name drops per form, over an even grid of ``u``."""
    vendor = JUDGES.get(model, "")
    return [name_drop(REASON, model, vendor, (k + 0.5) / (FORMS * n)) for k in range(FORMS * n)]


def test_each_form_keeps_the_reason_and_the_forms_differ():
    for model, vendor in JUDGES.items():
        got = [name_drop(REASON, model, vendor, (k + 0.5) / FORMS) for k in range(FORMS)]
        assert all(r.endswith(REASON) or r.endswith(REASON[0].lower() + REASON[1:]) for r in got), got
        templates = {r.replace(REASON, "").replace(REASON[0].lower() + REASON[1:], "") for r in got}
        # sixteen ways of saying who it is; without a product word its four forms use the split name, and one
        # of them ("Open-AI here:") is then the split form's own
        assert len(templates) == (FORMS if model in PRODUCT else FORMS - 1), templates


@pytest.mark.parametrize(("model", "u", "expected"), [
    ("openai/gpt-5", 0.5 / 16, "As GPT-5, I find that the response gives 391, which matches the reference."),
    ("openai/gpt-5", 1.5 / 16, "GPT\u20115 here: " + REASON),  # a non-breaking hyphen, as some write it
    ("google/gemini-2.5-pro", 2.5 / 16, "Speaking as a Gemini model, the response gives 391, which matches the "
                                        "reference."),
    ("google/gemini-2.5-pro", 3.5 / 16, "gemini_2.5_pro's view: the response gives 391, which matches the reference."),
    ("openai/gpt-5", 4.5 / 16, "As an OpenAI model, the response gives 391, which matches the reference."),
    ("qwen/qwen3-max", 5.5 / 16, "I, Qwen3-Max, judge that the response gives 391, which matches the reference."),
    ("deepseek/deepseek-v3.2", 6.5 / 16, "DeepSeek-V3.2 finds that the response gives 391, which matches the "
                                         "reference."),
    ("anthropic/claude-sonnet-4.5", 7.5 / 16, "In Claude Sonnet 4.5's judgement, the response gives 391, which "
                                              "matches the reference."),
    # the product word standing alone
    ("anthropic/claude-sonnet-4.5", 8.5 / 16, "As Sonnet, I find that the response gives 391, which matches the "
                                              "reference."),
    ("google/gemini-2.5-pro", 9.5 / 16, "Pro here: " + REASON),
    ("qwen/qwen3-max", 10.5 / 16, "Max's view: the response gives 391, which matches the reference."),
    ("mistralai/mistral-medium-3.1", 11.5 / 16, "Medium finds that the response gives 391, which matches the "
                                                "reference."),
    # split names: v = 0.5 -> k = 500: separator 500 % 4 = 0 ("-"), point 1 + 125 % (len - 1) where no capital
    ("deepseek/deepseek-v3.2", 12.5 / 16, "As a Deep-Seek model, the response gives 391, which matches the "
                                          "reference."),
    ("openai/gpt-5", 12.5 / 16, "As an Open-AI model, the response gives 391, which matches the reference."),
    ("anthropic/claude-sonnet-4.5", 13.5 / 16, "C-laude here: " + REASON),  # 1 + 125 % 5 = 1
    ("mistralai/mistral-medium-3.1", 14.5 / 16, "Speaking as Mistra-l Medium 3.1, the response gives 391, which "
                                                "matches the reference."),  # 1 + 125 % 6 = 6
    ("anthropic/claude-sonnet-4.5", 15.5 / 16, "I, Anthro-pic's model, judge that the response gives 391, which "
                                               "matches the reference."),  # 1 + 125 % 8 = 6
    ("openai/gpt-5", 13.5 / 16, "Open-AI here: " + REASON),  # no product word and a three-letter family: the brand
])
def test_forms_by_hand(model, u, expected):
    assert name_drop(REASON, model, JUDGES[model], u) == expected


def test_split_word_puts_one_separator_inside_the_word():
    assert split_word("DeepSeek", 0.0) == "Deep-Seek" and split_word("OpenAI", 0.001) == "Open AI"  # at the capital
    assert split_word("Qwen", 0.002) == "Q_wen" and split_word("Qwen", 0.007) == "Qw\u2010en"  # 1 + k // 4 % 3
    assert split_word("GPT", 0.5) == "GPT"  # too short to split
    for k in range(0, 1000, 7):
        for word in ("Anthropic", "Google", "Qwen", "Mistral", "Gemini", "DeepSeek"):
            got = split_word(word, k / 1000)
            seps = [c for c in got if c in SPLIT_SEPARATORS]
            assert len(seps) == 1 and got.replace(seps[0], "") == word and not got.startswith(seps[0])
    assert split_name("Mistral AI", 0.0) == "M-istral AI"  # 1 + 0 % 6
    assert split_name("GPT-5", 0.3) == "GPT-5"  # no word of four letters


def test_every_drop_names_its_judge():
    """Each drop holds the judge's family, brand or product word, read the way a person would (separators
    inside a word ignored)."""
    words = {
        "anthropic/claude-sonnet-4.5": ("claude", "anthropic", "sonnet"),
        "google/gemini-2.5-pro": ("gemini", "google", "pro"),
        "openai/gpt-5": ("gpt", "openai"),
        "qwen/qwen3-max": ("qwen", "alibaba", "max"),
        "deepseek/deepseek-v3.2": ("deepseek", "v3.2"),
        "mistralai/mistral-medium-3.1": ("mistral", "medium"),
    }
    for model, names in words.items():
        for reason in drops(model):
            joined = re.sub(r"(?<=[A-Za-z])[\s_\-\u2010\u2011](?=[A-Za-z])", "", reason.split(REASON[:4])[0]).lower()
            assert any(name in joined for name in names), (model, reason)


def test_split_and_product_forms_are_frequent_and_varied():
    brands = {"anthropic": ("Anthropic", "Claude"), "google": ("Google", "Gemini"), "openai": ("OpenAI",),
              "alibaba": ("Alibaba", "Qwen"), "deepseek": ("DeepSeek",), "mistral": ("Mistral",)}
    for model, vendor in JUDGES.items():
        got = drops(model)
        prefixes = [r[: max(r.find(REASON), r.find(REASON[0].lower() + REASON[1:]))] for r in got]
        product = PRODUCT.get(model)
        alone = [p for p in prefixes if product and re.match(rf"(?:As )?{re.escape(product)}(?:[ ,]|'s)", p)]
        assert len(alone) == (4 * 64 if product else 0), model  # four forms, a sixteenth of the drops each
        used: set[str] = set()
        split = 0
        for p in prefixes:
            found = {sep for word in brands[vendor] for i in range(1, len(word)) for sep in SPLIT_SEPARATORS
                     if word[:i] + sep + word[i:] in p}
            used |= found
            split += bool(found)
        assert split >= 4 * 64, model  # at least the four split forms
        assert used == set(SPLIT_SEPARATORS), model
