"""What inspect's ``inspect_ai`` entry point ``grading_council`` loads: importing it registers the scorer
``grading_council/council`` and its metrics, so ``inspect score LOG --scorer grading_council/council`` finds them."""

from council.inspect import agreement_lift, council, deliberation_impact

__all__ = ["agreement_lift", "council", "deliberation_impact"]
