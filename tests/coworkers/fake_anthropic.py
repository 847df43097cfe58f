"""A fake Anthropic Messages API on 127.0.0.1 for testing the real SDK path: scripted streamed replies, errors and cuts.
Test support only: imports the standard library alone (no anthropic, no Django), so it tests the SDK, not itself.

The SDK sends its requests through httpx2, which request-mocking libraries do
not see; a real socket does. Each POST /v1/messages plays the next scripted
step and is recorded (body and headers) for assertions. Like the real API, it
answers a body Claude would reject with a 400, so a wire-format bug cannot
pass unnoticed.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union

MODEL = "claude-haiku-4-5-20251001"


@dataclass(frozen=True)
class Tool:
    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class Reply:
    """A streamed message: text (in chunk_size pieces), then tool_use blocks.

    cut_after: stop after this many characters of text, then either send
    error_event as an SSE `error` event (what the API does when it fails after
    the 200), or drop the socket mid-body (clean=False: a network cut), or end
    the HTTP body properly without message_delta/message_stop (clean=True: a
    server that gave up).
    """

    text: str = ""
    tools: Sequence[Tool] = ()
    chunk_size: int = 4
    stop_reason: str | None = None  # default: tool_use with tools, else end_turn
    model: str = MODEL
    input_tokens: int = 12
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 7
    cut_after: int | None = None
    clean: bool = False
    error_event: Error | None = None  # at cut_after, send an SSE `error` event (after the 200) and end the body
    delay: float = 0.0  # seconds between text chunks, so a test can stop or time out mid-stream


@dataclass(frozen=True)
class Error:
    """An HTTP error with Anthropic's JSON error body. retry_after_ms keeps the SDK's retries fast."""

    status: int
    type: str
    message: str
    retry_after_ms: int | None = 10


@dataclass(frozen=True)
class Stall:
    """Wait this long before answering at all (longer than the client's timeout), then play `then`."""

    seconds: float
    then: Reply | Error | None = None


Step = Union[Reply, Error, Stall]

ERRORS = {
    "rate_limit": Error(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    "overloaded": Error(529, "overloaded_error", "Overloaded"),
    "bad_key": Error(401, "authentication_error", "invalid x-api-key", retry_after_ms=None),
    "internal": Error(500, "api_error", "Internal server error"),
}


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]


@dataclass
class FakeAnthropic:
    """Start with start(), stop with stop(); add steps with add() (one per request, in order)."""

    api_key: str = "sk-ant-fake-test-key"
    requests: list[Recorded] = field(default_factory=list)
    _steps: deque = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    def add(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self._steps)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeAnthropic:
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: a free one
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval, at every test's teardown.
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-anthropic", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def _next(self, recorded: Recorded) -> Step | None:
        with self._lock:
            self.requests.append(recorded)
            return self._steps.popleft() if self._steps else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked bodies, so a cut mid-body is visible to the client
    server_fake: FakeAnthropic

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean

    def do_POST(self) -> None:
        try:
            self._answer()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout, or a stop): nothing left to tell it

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self._error(Error(400, "invalid_request_error", "request body is not valid JSON", None))
        fake = self.server_fake
        # Path check before the script, so a wrong base URL does not eat a step.
        if self.path.split("?")[0] != "/v1/messages":
            return self._error(Error(404, "not_found_error", f"Not found: {self.path}", None))
        recorded = Recorded(self.path, headers, body)
        # Either header carries the key: SDK versions differ (x-api-key, or Authorization: Bearer).
        keys = {headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer ")}
        if fake.api_key not in keys:
            fake._record(recorded)  # a rejected key does not use up a scripted step
            return self._error(ERRORS["bad_key"])
        step = fake._next(recorded)
        if step is None:
            return self._error(Error(400, "invalid_request_error", "fake_anthropic: the script has no step left", None))
        while isinstance(step, Stall):
            time.sleep(step.seconds)
            step = step.then or Reply("late")
        if isinstance(step, Error):
            return self._error(step)
        if problem := check_body(body):
            return self._error(Error(400, "invalid_request_error", problem, None))
        if not body.get("stream"):
            return self._error(Error(400, "invalid_request_error", "fake_anthropic: only streaming is scripted", None))
        self._stream(step, body)

    # -- responses -------------------------------------------------------------

    def _error(self, error: Error) -> None:
        payload = json.dumps({"type": "error", "error": {"type": error.type, "message": error.message}}).encode()
        self.send_response(error.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", "req_fake_error")
        if error.retry_after_ms is not None:
            self.send_header("retry-after-ms", str(error.retry_after_ms))
            self.send_header("retry-after", "0")
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, reply: Reply, body: Mapping[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", "req_fake_stream")
        self.end_headers()
        self.close_connection = True

        # Like the API, the writes are broken down by the lifetime the request's breakpoints asked for.
        hour = "1h" in cache_ttls(body)
        usage = {
            "input_tokens": reply.input_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 0 if hour else reply.cache_write_tokens,
                "ephemeral_1h_input_tokens": reply.cache_write_tokens if hour else 0,
            },
            "cache_read_input_tokens": reply.cache_read_tokens,
            "output_tokens": 1,
        }
        message = {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": reply.model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage,
        }
        self._event("message_start", {"type": "message_start", "message": message})
        self._event("ping", {"type": "ping"})

        index = 0
        text = reply.text if reply.cut_after is None else reply.text[: reply.cut_after]
        if reply.text:
            self._event("content_block_start", {
                "type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""},
            })
            for start in range(0, len(text), max(1, reply.chunk_size)):
                if start and reply.delay:
                    time.sleep(reply.delay)
                delta = {"type": "text_delta", "text": text[start : start + reply.chunk_size]}
                self._event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        if reply.cut_after is not None and reply.error_event is not None:
            error = {"type": "error", "error": {"type": reply.error_event.type, "message": reply.error_event.message}}
            self._event("error", error)
            return self._end_body()
        if reply.cut_after is not None:
            return self._cut(clean=reply.clean)
        if reply.text:
            self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
            index = 1
        for offset, tool in enumerate(reply.tools):
            block = {"type": "tool_use", "id": tool.id, "name": tool.name, "input": {}}
            self._event("content_block_start", {"type": "content_block_start", "index": index + offset, "content_block": block})
            encoded = json.dumps(dict(tool.input))
            # Split the JSON like the API does: partial strings that parse only once joined.
            for start in range(0, len(encoded), 5):
                delta = {"type": "input_json_delta", "partial_json": encoded[start : start + 5]}
                self._event("content_block_delta", {"type": "content_block_delta", "index": index + offset, "delta": delta})
            self._event("content_block_stop", {"type": "content_block_stop", "index": index + offset})

        stop_reason = reply.stop_reason or ("tool_use" if reply.tools else "end_turn")
        self._event("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": reply.output_tokens},
        })
        self._event("message_stop", {"type": "message_stop"})
        self._end_body()

    def _event(self, name: str, data: Mapping[str, Any]) -> None:
        chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.flush()

    def _end_body(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _cut(self, *, clean: bool) -> None:
        if clean:
            return self._end_body()
        # Drop the socket without the last chunk: the client sees a body that ends mid-way.
        self.wfile.flush()
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def check_body(body: Mapping[str, Any]) -> str | None:
    """The 400s the real API gives for the mistakes a converter can make (its wording where known)."""
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    messages = body["messages"]
    if not messages or messages[0].get("role") != "user":
        return "messages: first message must use the \"user\" role"
    breakpoints = 0
    for block in body.get("system", ()):
        breakpoints += "cache_control" in block
        if block.get("type") != "text" or not str(block.get("text", "")).strip():
            return "system: text content blocks must contain non-whitespace text"
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        if index and message["role"] == messages[index - 1]["role"]:
            return "messages: roles must alternate between \"user\" and \"assistant\""
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not content:
            return f"messages.{index}: all messages must have non-empty content"
        results_done = False
        answered: set[str] = set()
        for block in content:
            breakpoints += "cache_control" in block
            kind = block.get("type")
            if kind == "text" and not block.get("text", "").strip():
                return f"messages.{index}: text content blocks must contain non-whitespace text"
            if kind == "tool_result":
                if message["role"] != "user" or results_done:
                    return f"messages.{index}: tool_result blocks must come first in a user message"
                if block.get("tool_use_id") not in open_calls:
                    return f"messages.{index}: unexpected `tool_use_id` found in `tool_result` blocks"
                answered.add(block["tool_use_id"])
            else:
                results_done = True
        if open_calls - answered:
            return (
                f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                + ", ".join(sorted(open_calls - answered))
            )
        open_calls = (
            {block["id"] for block in content if block.get("type") == "tool_use"}
            if message["role"] == "assistant" else set()
        )
    if open_calls:
        return "messages: the last assistant message has tool_use blocks without a following tool_result"
    if breakpoints > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
    ttls = cache_ttls(body)
    if unknown := [ttl for ttl in ttls if ttl not in ("5m", "1h")]:
        return f"cache_control.ttl: Input should be '5m' or '1h', got {unknown[0]!r}"
    if "5m" in ttls and "1h" in ttls[ttls.index("5m"):]:
        return "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"
    return None


def cache_ttls(body: Mapping[str, Any]) -> list[str]:
    """The lifetime every cache breakpoint of a request asked for, in the API's order (tools, system,
    messages); a breakpoint without a ttl is the default 5 minutes."""
    blocks = [*body.get("tools", ()), *body.get("system", ())]
    for message in body.get("messages", ()):
        if not isinstance(message.get("content"), str):
            blocks += message["content"]
    return [block["cache_control"].get("ttl", "5m") for block in blocks if "cache_control" in block]


def texts(blocks: Iterable[Mapping[str, Any]]) -> list[str]:
    """The text of each text block, for assertions."""
    return [block["text"] for block in blocks if block.get("type") == "text"]
