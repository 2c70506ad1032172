"""Eliciting answers from the models under test (predict-then-answer) for the council to grade."""

from elicitor._elicitor import ElicitTask, Elicitor, elicit_key

__all__ = ["ElicitTask", "Elicitor", "elicit_key"]
