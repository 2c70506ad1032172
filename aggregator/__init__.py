"""Pure numpy maths over council verdict arrays.

Votes are int8 arrays of shape (R rows, M members, 2 rounds) holding
``MISSING`` (-1), ``INCORRECT`` (0) or ``CORRECT`` (1); round index 0 is round
one and 1 is round two.
"""

from ._agreement import (
    agreement_summary,
    cohens_kappa_pairs,
    fleiss_kappa,
    fleiss_kappa_table,
    krippendorff_alpha_nominal,
    pairwise_agreement,
)
from ._bootstrap import (
    BootstrapResult,
    adjacent_outranks,
    bootstrap_by_group,
    bootstrap_ratio,
    bootstrap_scores,
    bootstrap_summary,
    outrank_probability,
    score_matrix,
)
from ._calibration import brier, calibration_by_model, calibration_summary, expected_calibration_error, selective_score
from ._codes import CORRECT, INCORRECT, MISSING
from ._consensus import Consensus, Tally, consensus, tally, tally_rounds
from ._deliberation import (
    agreement,
    agreement_lift,
    consensus_flip_rate,
    deliberation_impact,
    deliberation_summary,
    member_flips,
    unanimity_lift,
)
from ._herding import classify_flips, herding_summary, weak_majority_lift
from ._scores import accuracy_against, group_scores, member_accuracy
from ._paired import paired_agreement, wilson_interval
from ._scales import (
    ICC,
    ScoreConsensus,
    ScoreImpact,
    ScoreLift,
    bootstrap_rubric,
    icc2,
    krippendorff_alpha_interval,
    krippendorff_alpha_ordinal,
    normalised_scores,
    quadratic_kappa_pairs,
    score_agreement_lift,
    score_consensus,
    score_deliberation_impact,
)
from ._selfpref import self_preference
from ._sensitivity import kendall_tau_b, rule_scores, sensitivity_summary
from ._truth import council_versus_members, effective_judges, error_correlation, kappa_against, truth_summary

__all__ = [
    "council_versus_members",
    "paired_agreement",
    "wilson_interval",
    "BootstrapResult",
    "CORRECT",
    "Consensus",
    "INCORRECT",
    "MISSING",
    "accuracy_against",
    "adjacent_outranks",
    "agreement",
    "agreement_lift",
    "agreement_summary",
    "bootstrap_by_group",
    "bootstrap_ratio",
    "bootstrap_scores",
    "bootstrap_summary",
    "brier",
    "calibration_by_model",
    "calibration_summary",
    "classify_flips",
    "cohens_kappa_pairs",
    "consensus",
    "consensus_flip_rate",
    "deliberation_impact",
    "deliberation_summary",
    "effective_judges",
    "error_correlation",
    "expected_calibration_error",
    "fleiss_kappa",
    "fleiss_kappa_table",
    "group_scores",
    "herding_summary",
    "kappa_against",
    "kendall_tau_b",
    "krippendorff_alpha_nominal",
    "member_accuracy",
    "member_flips",
    "outrank_probability",
    "pairwise_agreement",
    "rule_scores",
    "score_matrix",
    "selective_score",
    "self_preference",
    "sensitivity_summary",
    "Tally",
    "tally",
    "tally_rounds",
    "truth_summary",
    "unanimity_lift",
    "weak_majority_lift",
    "ICC",
    "ScoreConsensus",
    "ScoreImpact",
    "ScoreLift",
    "bootstrap_rubric",
    "icc2",
    "krippendorff_alpha_interval",
    "krippendorff_alpha_ordinal",
    "normalised_scores",
    "quadratic_kappa_pairs",
    "score_agreement_lift",
    "score_consensus",
    "score_deliberation_impact",
]
