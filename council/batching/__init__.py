"""The batch transport: a vendor's votes through its provider's batch API (OpenAI's Batch API and the services that
copy it, Anthropic's Message Batches) at the batch price, durable in the run folder and resumed from it.

- :mod:`council.batching.api`: the providers' batch endpoints over HTTP (create, poll, results, find).
- :mod:`council.batching.journal`: the run folder's record of every batch (``batches.jsonl``, ``batches.json``).
- :mod:`council.batching.judge`: :class:`BatchJudge`, a judge with the synchronous judge's face.
- :mod:`council.batching.pool`: the pool that routes a batching vendor's votes to its :class:`BatchJudge`.
"""
