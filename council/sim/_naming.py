"""How the simulated judges name themselves in their reasons (``name_drop_rate``): the forms real models use.

Kept in one place so that the forms can grow without touching the judges' decisions. Names come from the
simulated world's own catalogue (``council.sim._world``), never from the council's names data.
"""

from __future__ import annotations

import re

from council.sim._world import BRAND, FAMILY, display_name


def _lcfirst(text: str) -> str:
    return text[:1].lower() + text[1:]


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def name_drop(reason: str, model: str, vendor: str, u: float) -> str:
    """``reason`` with the judge naming itself, in one of eight forms chosen by ``u``."""
    display = display_name(model)
    family = FAMILY.get(vendor, display)
    brand = BRAND.get(vendor, vendor.capitalize() or display)
    rest = _lcfirst(reason)
    forms = (
        lambda: f"As {display}, I find that {rest}",
        lambda: f"{display.replace('-', chr(0x2011))} here: {reason}",  # a non-breaking hyphen, as some write it
        lambda: f"Speaking as {_article(family)} {family} model, {rest}",
        lambda: f"{re.sub(r'[^0-9A-Za-z.]+', '_', model.rsplit('/', 1)[-1])}'s view: {rest}",
        lambda: f"As {_article(brand)} {brand} model, {rest}",
        lambda: f"I, {display}, judge that {rest}",
        lambda: f"{display} finds that {rest}",
        lambda: f"In {display}'s judgement, {rest}",
    )
    return forms[min(int(u * len(forms)), len(forms) - 1)]()
