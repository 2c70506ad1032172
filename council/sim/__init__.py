"""The embedded provider: a local OpenAI-compatible chat-completions server that plays every vendor's judge
and every model under test.

It is a black box to the council: it imports none of the council's prompt, parsing or vendor code, reads
every request as text the way a model would (``council.sim._reading``), and knows the ground truth (a
TruthTable built from the rows being graded, recording which model wrote each response) and its own world
of who made which model (``WORLD`` plus ``SimConfig.world``; unknown models answer 404), independent of the
council's. Its judges err together on hard items and deceptive responses
(``ProbeProfile``), are lenient towards their own vendor's models, can be persuaded in round two by head
count and by reasons that quote the reference (rightly or wrongly), name themselves in their reasons, and
may be swayed by the other rows of a batch (``batch_contrast``). It answers RPM/TPM quotas with real 429s
and rate-limit headers (or, per vendor, only ``retry-after``), and injects latency, 5xx errors, timeouts,
malformed JSON, JSON fenced or inside prose, truncation and, for batched prompts, rows left out of the
reply::

    server = await start_sim(SimConfig.planted(seed=0), TruthTable.from_rows(items, rows))
    client = AsyncOpenAI(base_url=server.url, api_key="sim")
    ...
    await server.close()

Asked for a stated confidence and then an answer (a system message that asks for a "Confidence:" line, then
an "Answer:" line), a model answers as a model under test (``ModelBehaviour``: accuracy, calibration,
abstention, truncation, reasoning tokens) for the items the table knows (``TruthTable.from_items(items)``),
and records in the table the verdict each answer it wrote deserves, under the text it wrote, so the
simulated judges then grade those answers against the truth; ``SimServer.answers`` (with
``record_requests``) holds what each model wrote and meant.

The same answers are served through Anthropic's native Messages API (``POST /v1/messages``,
``council.sim._messages``) and through both providers' batch APIs (OpenAI's ``/v1/files`` + ``/v1/batches``,
Anthropic's ``/v1/messages/batches``; ``council.sim._batches``), in their documented shapes, and through each
provider's own API under a prefix naming its host (``/api.openai.com/v1``, ``/api.anthropic.com/v1``,
``/generativelanguage.googleapis.com/v1beta/openai``, ...; ``council.sim._hosts``), native ids only. With
``SimConfig.api_rules`` (the default) each maker's documented request rules apply (``council.sim._apis``,
listed with the pages they follow in the docs' ``reference/sim-config.md``): reasoning models refuse the
parameters their API refuses, and their reasoning comes out of the output cap and is billed as output.
"""

from council.sim._config import ModelBehaviour, ProbeProfile, SimConfig, VendorBehaviour
from council.sim._doc import sim_config_doc, sim_config_schema, sim_config_schema_json
from council.sim._eliciting import prime
from council.sim._process import SimProcess, start_sim_process
from council.sim._server import SimServer, build_app, serve, start_sim
from council.sim._truth import TruthTable, truth_key
from council.sim._world import WORLD, World

__all__ = [
    "WORLD", "ModelBehaviour", "ProbeProfile", "SimConfig", "SimProcess", "SimServer", "TruthTable", "VendorBehaviour", "World",
    "build_app", "prime", "serve", "sim_config_doc", "sim_config_schema", "sim_config_schema_json", "start_sim",
    "start_sim_process", "truth_key",
]
