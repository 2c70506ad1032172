"""A job submitted in another benchmark's record format is read by that format's importer; its problems come
back by row index, and nothing is enqueued from a submission with any."""

from __future__ import annotations

import aiohttp

from tests.service._server import auth, service
from tests.service.test_service import wait_over

GOOD = [
    {"item_id": "cal-001", "model": "openai/gpt-5", "response": "52,544", "stated_confidence": 0.95},
    {"item_id": "ign-001", "model": "google/gemini-2.5-flash", "raw_response": "I can't know what you ate.",
     "abstained": True},
    {"item_id": "cal-002", "model": "deepseek/deepseek-v3.2",
     "choices": [{"message": {"role": "assistant", "content": "648"}, "finish_reason": "stop"}]},
]


async def test_records_of_another_format(tmp_path):
    with service(tmp_path) as svc:
        async with aiohttp.ClientSession() as s:
            bad = [*GOOD, {"item_id": "cal-003", "model": "openai/gpt-5"}, {"item_id": "nope", "model": "openai/gpt-5",
                                                                          "response": "1"}]
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": bad, "format": "overlooked"},
                              headers=auth("team-a")) as resp:
                assert resp.status == 422
                problems = (await resp.json())["problems"]
            assert {p["index"] for p in problems} == {3, 4}, problems
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": GOOD, "format": "inspect"},
                              headers=auth("team-a")) as resp:
                assert resp.status == 422 and (await resp.json())["problems"][0]["field"] == "format"
            async with s.get(f"{svc.url}/v1/jobs", headers=auth("team-a")) as resp:
                assert (await resp.json())["jobs"] == []
            async with s.post(f"{svc.url}/v1/jobs", json={"rows": GOOD, "format": "overlooked"},
                              headers=auth("team-a")) as resp:
                assert resp.status == 201
                job = await resp.json()
            view = await wait_over(s, svc.url, job["id"])
    assert view["state"] == "finished" and view["progress"]["rows_total"] == 3
