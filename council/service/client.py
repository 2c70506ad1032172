"""A Python client of the grading service (``council serve``), for benchmarks that submit jobs to it::

    async with Client("http://127.0.0.1:8080", token) as client:
        job = await client.submit("rows.jsonl")            # NDJSON, streamed from disk
        async for verdict in client.verdicts(job["id"]):   # each row's verdict as it is decided
            ...
        view = await client.wait(job["id"])
        summary = await client.summary(job["id"])

Answers are the service's JSON as dicts. Every error (an error answer, or a service that cannot be reached) is a
:class:`~council.errors.ServiceError` with the answer's ``status`` and Problem body. Redirects are not followed,
so the token goes to ``url`` only.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from council.core.errors import InputError, ServiceError

NDJSON = "application/x-ndjson"
TERMINAL = frozenset({"finished", "stopped", "cancelled", "failed"})
_NETWORK = (aiohttp.ClientError, TimeoutError, OSError)


class Client:
    def __init__(self, url: str, token: str, *, timeout_s: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self._auth = {"Authorization": f"Bearer {token}"}
        self._timeout = aiohttp.ClientTimeout(sock_connect=timeout_s, sock_read=timeout_s)
        self._stream_timeout = aiohttp.ClientTimeout(sock_connect=timeout_s)  # a verdict may be minutes away
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._auth)
        return self._session

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            async with self._http().request(method, self.url + path, allow_redirects=False, timeout=self._timeout,
                                            **kwargs) as resp:
                await _raise_for(resp)
                return orjson.loads(await resp.read())
        except _NETWORK as exc:
            raise ServiceError(f"{self.url}: cannot reach the service: {type(exc).__name__}: {exc}") from None

    async def submit(self, rows: Iterable[dict[str, Any]] | str | os.PathLike[str], *,
                     bank: list[dict[str, Any]] | str | os.PathLike[str] | None = None,
                     options: dict[str, Any] | None = None, budget_usd: float | None = None,
                     callback_url: str | None = None, idempotency_key: str | None = None, format: str = "jsonl",
                     model: str | None = None) -> dict[str, Any]:
        """Submit a job: rows as dicts (sent as JSON), or a JSONL file's path (sent as NDJSON, streamed from disk;
        as JSON when a ``bank`` goes with it). ``bank``: items, or a bank JSONL file; default the service's."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        fields = {k: v for k, v in (("format", format), ("model", model), ("budget_usd", budget_usd),
                                    ("callback_url", callback_url), ("options", options)) if v is not None}
        is_path = isinstance(rows, str | os.PathLike)
        if is_path and bank is None:
            query = {k: orjson.dumps(v).decode() if k == "options" else str(v) for k, v in fields.items()}
            try:
                handle = open(rows, "rb")  # noqa: SIM115 - closed below, after the upload
            except OSError as exc:
                raise InputError([f"{rows}: {exc.strerror}"]) from None
            with handle:
                return await self._call("POST", "/v1/jobs", data=handle, params=query,
                                        headers={**headers, "Content-Type": NDJSON})
        if isinstance(bank, str | os.PathLike):
            bank = read_jsonl(bank)
        body = {"rows": read_jsonl(rows) if is_path else list(rows), **fields,  # type: ignore[arg-type]
                **({"bank": bank} if bank is not None else {})}
        return await self._call("POST", "/v1/jobs", data=orjson.dumps(body),
                                headers={**headers, "Content-Type": "application/json"})

    async def job(self, job_id: str) -> dict[str, Any]:
        return await self._call("GET", f"/v1/jobs/{job_id}")

    async def jobs(self) -> list[dict[str, Any]]:
        return (await self._call("GET", "/v1/jobs"))["jobs"]

    async def cancel(self, job_id: str) -> dict[str, Any]:
        return await self._call("DELETE", f"/v1/jobs/{job_id}")

    async def summary(self, job_id: str) -> dict[str, Any]:
        """The job's ``summary.json`` (409 until the job has ended)."""
        return await self._call("GET", f"/v1/jobs/{job_id}/summary")

    async def verdict_lines(self, job_id: str) -> AsyncIterator[bytes]:
        """The job's verdicts as NDJSON lines (each ending in a newline), as the service sends them: a running
        job's as they are decided, until it ends."""
        try:
            async with self._http().get(f"{self.url}/v1/jobs/{job_id}/verdicts", allow_redirects=False,
                                        timeout=self._stream_timeout) as resp:
                await _raise_for(resp)
                pending = b""
                async for chunk in resp.content.iter_any():
                    *lines, pending = (pending + chunk).split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield line + b"\n"
                if pending.strip():
                    yield pending + b"\n"
        except _NETWORK as exc:
            raise ServiceError(f"{self.url}: the verdict stream broke: {type(exc).__name__}: {exc}") from None

    async def verdicts(self, job_id: str) -> AsyncIterator[dict[str, Any]]:
        """The job's verdicts as dicts, streamed (see :meth:`verdict_lines`)."""
        async for line in self.verdict_lines(job_id):
            yield orjson.loads(line)

    async def wait(self, job_id: str, poll_s: float = 1.0, timeout_s: float | None = None) -> dict[str, Any]:
        """The job's view once it has ended, asking every ``poll_s``; TimeoutError after ``timeout_s``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            view = await self.job(job_id)
            if view["state"] in TERMINAL:
                return view
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} is still {view['state']} after {timeout_s} s")
            await asyncio.sleep(poll_s)


async def _raise_for(resp: aiohttp.ClientResponse) -> None:
    """ServiceError for an answer that is not 2xx, with its Problem body."""
    if 200 <= resp.status < 300:
        return
    body = await resp.read()
    try:
        problem = orjson.loads(body)
    except orjson.JSONDecodeError:
        problem = None
    if not isinstance(problem, dict):
        problem = {"error": resp.reason or "error", "detail": body[:200].decode("utf-8", "replace") or None}
    message = f"{resp.status} {problem.get('error')}" + (f": {problem['detail']}" if problem.get("detail") else "")
    rows = problem.get("problems") or []
    for p in rows[:5]:
        where = f"row {p.get('index')}: " if isinstance(p.get("index"), int) and p["index"] >= 0 else ""
        message += f"\n  {where}{p.get('field')}: {p.get('problem')}"
    if len(rows) > 5:
        message += f"\n  ... and {len(rows) - 5} more problems"
    raise ServiceError(message, status=resp.status, problem=problem)


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """A JSONL file's records; InputError naming every bad line."""
    try:
        lines = Path(path).read_bytes().splitlines()
    except OSError as exc:
        raise InputError([f"{path}: {exc.strerror}"]) from None
    out, problems = [], []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                out.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                problems.append(f"{path}:{number}: not JSON: {exc}")
    if problems:
        raise InputError(problems)
    return out
