"""The embedded provider: a local OpenAI-compatible chat-completions server that plays every vendor's judge
and every model under test.

It knows the ground truth (a TruthTable built from the rows being graded) and simulates per-vendor
accuracy, self-preference and persuadability, RPM/TPM quotas answered with real 429s and rate-limit
headers (or, per vendor, only ``retry-after``), latency, 5xx errors, timeouts, malformed JSON, truncation
and, for batched prompts, rows left out of the reply::

    server = await start_sim(SimConfig.planted(seed=0), TruthTable.from_rows(items, rows))
    client = AsyncOpenAI(base_url=server.url, api_key="sim")
    ...
    await server.close()

Asked with the elicitation contract (``elicitor.prompts.elicit_messages``), a model answers as a model
under test (``ModelBehaviour``: accuracy, calibration, abstention, truncation, reasoning tokens) for the
items the table knows (``TruthTable.from_items(items)``), and records in the table the verdict each
answer deserves, so the simulated judges then grade those answers against the truth.
"""

from council.sim._config import ModelBehaviour, SimConfig, VendorBehaviour
from council.sim._eliciting import prime
from council.sim._server import SimServer, build_app, serve, start_sim
from council.sim._truth import TruthTable, truth_key

__all__ = [
    "ModelBehaviour", "SimConfig", "SimServer", "TruthTable", "VendorBehaviour", "build_app", "prime", "serve",
    "start_sim",
    "truth_key",
]
