"""What tests read of a Ray instance."""

from __future__ import annotations


def actors(class_name: str, *, alive: bool = True) -> list[dict]:
    """The actors of ``class_name`` in the GCS's actor table (the state API needs the dashboard, off here): the
    alive ones, or every one ever created (``alive=False``)."""
    from ray._private import state

    return [a for a in state.actors().values()
            if a["ActorClassName"] == class_name and (a["State"] == "ALIVE" or not alive)]
