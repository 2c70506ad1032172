"""Pure numpy maths over council verdict arrays.

Votes are int8 arrays of shape (R rows, M members, 2 rounds) holding
``MISSING`` (-1), ``INCORRECT`` (0) or ``CORRECT`` (1); round index 0 is round
one and 1 is round two.
"""

from ._codes import CORRECT, INCORRECT, MISSING
from ._consensus import Consensus, consensus, tally
from ._deliberation import (
    agreement,
    agreement_lift,
    consensus_flip_rate,
    deliberation_impact,
    deliberation_summary,
    member_flips,
    unanimity_lift,
)
from ._scores import accuracy_against, group_scores, member_accuracy
from ._selfpref import self_preference

__all__ = [
    "CORRECT",
    "INCORRECT",
    "MISSING",
    "Consensus",
    "accuracy_against",
    "agreement",
    "agreement_lift",
    "consensus",
    "consensus_flip_rate",
    "deliberation_impact",
    "deliberation_summary",
    "group_scores",
    "member_accuracy",
    "member_flips",
    "self_preference",
    "tally",
    "unanimity_lift",
]
