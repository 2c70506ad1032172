"""The council inside inspect_ai: the ``council()`` scorer (``grading_council/council``) and its metrics.

Needs the ``inspect`` extra (``pip install 'grading-council[inspect]'``); the rest of the council does not
depend on inspect_ai.
"""

try:
    import inspect_ai  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("council.inspect needs inspect_ai: pip install 'grading-council[inspect]'") from exc

from council.inspect._metrics import agreement_lift, deliberation_impact
from council.inspect._scorer import council

__all__ = ["agreement_lift", "council", "deliberation_impact"]
