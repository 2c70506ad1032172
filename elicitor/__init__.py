"""Elicitation of the models under test (predict-then-answer). Not built yet: the council grades
responses that already exist (``council run`` / ``council grade``)."""
