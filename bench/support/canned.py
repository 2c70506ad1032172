"""A provider that costs almost nothing: an OpenAI-style chat-completions endpoint on 127.0.0.1 that answers
every POST with the same verdict, for benchmarks of the client side (``bench/client_overhead.py``).

Plain asyncio (no web framework): HTTP/1.1 with keep-alive, each request read by its Content-Length and
answered at once with one canned body. Run: ``python bench/support/canned.py``; it prints
``canned provider listening on http://127.0.0.1:PORT/v1`` and serves until terminated.
"""

from __future__ import annotations

import asyncio

import orjson

PREFIX = "canned provider listening on "
_VERDICT = orjson.dumps({"verdict": "correct", "reason": "The response agrees with the reference."}).decode()
_BODY = orjson.dumps({
    "id": "chatcmpl-canned", "object": "chat.completion", "created": 0, "model": "canned",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": _VERDICT}, "finish_reason": "stop",
                 "logprobs": None}],
    "usage": {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320},
})
_ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: keep-alive\r\nContent-Length: "
           + str(len(_BODY)).encode() + b"\r\n\r\n" + _BODY)


class _Canned(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in self.buffer[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length:]
            self.transport.write(_ANSWER)  # type: ignore[attr-defined]


async def _serve() -> None:
    server = await asyncio.get_running_loop().create_server(_Canned, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"{PREFIX}http://127.0.0.1:{port}/v1", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(_serve())
    except KeyboardInterrupt:
        pass
