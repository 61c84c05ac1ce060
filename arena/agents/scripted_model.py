"""A scripted model endpoint: an HTTP server on 127.0.0.1 that answers the model APIs coding
agent programs call, replaying a fixed session instead of thinking.

It speaks Anthropic Messages (``/v1/messages``, streamed as server-sent events or not, with
tool use), OpenAI Chat Completions (``/chat/completions``) and Responses (``/responses``),
streamed or not, and Gemini's ``generateContent`` / ``streamGenerateContent`` (and
``countTokens``). Pointed at it through its base-URL setting, a real agent program runs
the default script (``session_script``): read the workspace README, run the feedback
tool, read the editable file, write the task's solution into it, run the feedback tool
again, stop. Each step is sent as a call of the program's own tools, found by name in the
tools the request offers (a shell, a file reader, a file writer or Codex's apply_patch).
The step is read off the conversation the request carries (how many tool results it
holds), so retries and a program's side requests (titles, summaries, safety checks:
requests without the shell tool) do not advance the script.

Every reply reports token usage in its API's own fields, from a known plan
(``UsagePlan``), and is written into a ledger (``ScriptedModel.served``), so that a test
can compare what a program says it used with what it was served.

Modes: ``tools`` (the default); ``aider``, for a program that edits through its replies
(an edit in the format its system prompt asks for: SEARCH/REPLACE blocks or the whole
file); ``reject``, the API's own authentication error for every model request. A ``wait``
step holds its request open until the endpoint stops (a model that never answers).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, Sequence
from urllib.parse import urlparse

# -- the script ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    """One step: ``shell`` (run ``arg``), ``read`` (the file ``arg``), ``write`` (``content``
    into the file ``arg``), ``say`` (reply ``arg`` and stop) or ``wait`` (never answer: the
    request is held open until the endpoint stops)."""

    kind: str
    arg: str
    content: str = ""


CWD_MARK = "arena-cwd="


def session_script(kernel_file: str, kernel_source: str, check: str = "./arena-check") -> tuple[Action, ...]:
    """The session every program is taken through."""
    return (Action("shell", f'echo "{CWD_MARK}$PWD" && cat README.md'),
            Action("shell", check),
            Action("read", kernel_file),
            Action("write", kernel_file, kernel_source),
            Action("shell", check),
            Action("say", f"Done: {kernel_file} holds the new kernel and {check} passes."))


@dataclass(frozen=True)
class Usage:
    """Tokens of one reply: ``input`` excludes the cached ``cache_read`` (Anthropic's sense);
    OpenAI and Gemini report prompt tokens as ``input + cache_read``. ``cache_write`` exists
    only in Anthropic's API."""

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read


@dataclass(frozen=True)
class UsagePlan:
    """The usage of the reply to step k of the script, and of any side request."""

    input: int = 2100
    input_step: int = 200
    output: int = 130
    output_step: int = 11
    cache_read: int = 600
    cache_read_step: int = 100
    cache_write: int = 40
    side: Usage = Usage(input=300, output=20)

    def step(self, k: int) -> Usage:
        return Usage(self.input + k * self.input_step, self.output + k * self.output_step,
                     self.cache_read + k * self.cache_read_step, self.cache_write)


@dataclass
class Served:
    """One answered request, as the ledger keeps it."""

    api: str
    path: str
    model: str
    kind: str                 # script | side | rejected | held
    step: int | None
    usage: Usage | None
    tool: str | None = None
    stream: bool = False
    at: float = field(default_factory=time.time)


SHELL_TOOLS = ("Bash", "bash", "shell", "exec_command", "run_shell_command", "shell_command")
READ_TOOLS = ("Read", "read_file", "read", "view")
WRITE_TOOLS = ("Write", "write_file", "write", "create_file")
PATCH_TOOLS = ("apply_patch",)
PATH_KEYS = ("file_path", "absolute_path", "filePath", "path", "filename")
CONTENT_KEYS = ("content", "file_text", "contents")


@dataclass(frozen=True)
class Tool:
    name: str
    params: Mapping[str, Any] | None     # JSON schema of the arguments; None: a freeform (custom) tool

    @property
    def props(self) -> Mapping[str, Any]:
        return (self.params or {}).get("properties") or {}


@dataclass(frozen=True)
class Call:
    """A tool call to send: ``args`` is a dict (function tools) or a string (freeform tools)."""

    tool: Tool
    args: Any
    id: str = field(default_factory=lambda: "call_" + uuid.uuid4().hex[:20])

    @property
    def arguments(self) -> str:
        return self.args if isinstance(self.args, str) else json.dumps(self.args)


def _pick(tools: Sequence[Tool], names: Sequence[str]) -> Tool | None:
    by = {t.name: t for t in tools}
    return next((by[n] for n in names if n in by), None)


def _fill_required(tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
    """Required arguments the step does not set: a short description where a string is asked."""
    for key in (tool.params or {}).get("required", []) or []:
        if key in args:
            continue
        typ = (tool.props.get(key) or {}).get("type")
        if key == "description" or typ == "string":
            args[key] = "a step of the kernel task"
        elif typ == "boolean":
            args[key] = False
    return args


def _shell_call(tool: Tool, command: str) -> Call:
    props = tool.props
    if "command" in props or not props:
        typ = (props.get("command") or {}).get("type")
        args: dict[str, Any] = {"command": ["bash", "-lc", command] if typ == "array" else command}
    elif "cmd" in props:
        args = {"cmd": command}
    else:
        args = {next(iter(props)): command}
    if tool.name == "Bash":
        args.setdefault("description", "a step of the kernel task")
    return Call(tool, _fill_required(tool, args))


def _path_arg(tool: Tool, rel: str, cwd: str | None) -> dict[str, Any]:
    key = next((k for k in PATH_KEYS if k in tool.props), "file_path")
    return {key: f"{cwd}/{rel}" if cwd else rel}


def _heredoc(path: str, content: str) -> str:
    return f"cat > {path} <<'ARENA_KERNEL_EOF'\n{content.rstrip(chr(10))}\nARENA_KERNEL_EOF"


def _patch(path: str, content: str) -> str:
    lines = "".join(f"+{ln}\n" for ln in content.rstrip("\n").split("\n"))
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def tool_call(action: Action, tools: Sequence[Tool], cwd: str | None) -> Call | None:
    """The call of the program's own tools that carries out ``action`` (None: no tool can)."""
    shell = _pick(tools, SHELL_TOOLS)
    if action.kind == "shell":
        return _shell_call(shell, action.arg) if shell else None
    if action.kind == "read":
        reader = _pick(tools, READ_TOOLS)
        if reader is not None:
            return Call(reader, _fill_required(reader, _path_arg(reader, action.arg, cwd)))
        return _shell_call(shell, f"cat {action.arg}") if shell else None
    if action.kind == "write":
        writer = _pick(tools, WRITE_TOOLS)
        if writer is not None:
            args = _path_arg(writer, action.arg, cwd)
            args[next((k for k in CONTENT_KEYS if k in writer.props), "content")] = action.content
            return Call(writer, _fill_required(writer, args))
        patcher = _pick(tools, PATCH_TOOLS)
        if patcher is not None:
            patch = _patch(action.arg, action.content)
            if patcher.params is None:
                return Call(patcher, patch)
            return Call(patcher, {next(iter(patcher.props), "input"): patch})
        return _shell_call(shell, _heredoc(action.arg, action.content)) if shell else None
    return None


SUBMIT_WORD = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"     # mini-swe-agent: how its prompt says to stop


def _file_in_chat(text: str, path: str) -> str | None:
    """The latest copy of ``path`` a chat shows as aider does: the name, then a fenced block."""
    found = None
    for m in re.finditer(re.escape(path) + r"\n(`{3,}|~{3,})[^\n]*\n(.*?)\n?\1", text, re.S):
        found = m.group(2)
    return found


def aider_reply(chat: str, system: str, path: str, content: str) -> str:
    """An edit as aider asks for it in its system prompt: SEARCH/REPLACE blocks (its ``diff``
    format, the whole current file as the search) or the whole file."""
    new = content.rstrip("\n")
    old = _file_in_chat(chat, path)
    if "<<<<<<< SEARCH" in system and old is not None:
        return (f"I rewrote the kernel.\n\n{path}\n```python\n<<<<<<< SEARCH\n{old.rstrip(chr(10))}\n=======\n"
                f"{new}\n>>>>>>> REPLACE\n```\n")
    return f"I rewrote the kernel.\n\n{path}\n```python\n{new}\n```\n"


# -- the server ------------------------------------------------------------------------------------


def _sse(events: Sequence[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


@dataclass(frozen=True)
class Request:
    """What the script looks at in a model request, whatever its API."""

    tools: Sequence[Tool]
    results: int           # tool results in the conversation so far
    system: str            # the system prompt
    chat: str              # the text of every message, in order


TEXT_KEYS = ("text", "content", "output")


def _texts(obj: Any) -> list[str]:
    """Every string under a text, content or output key (or a bare string in a list), depth first."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, list):
        return [t for v in obj for t in _texts(v)]
    if isinstance(obj, dict):
        out: list[str] = []
        for k, v in obj.items():
            if isinstance(v, str):
                if k in TEXT_KEYS:
                    out.append(v)
            else:
                out += _texts(v)
        return out
    return []


class ScriptedModel:
    """The endpoint. ``with ScriptedModel(script) as m:`` gives ``m.url`` (http://127.0.0.1:PORT);
    ``m.served`` is the ledger, ``m.requests`` every request as received.

    ``mode``: ``tools`` (the default: each step a call of the program's tools), ``aider`` (each
    step an edit written in the reply, in the edit format the program's system prompt asks
    for) or ``reject`` (the API's authentication error for every model request)."""

    MODES = ("tools", "aider", "reject")

    def __init__(self, script: Sequence[Action], *, plan: UsagePlan | None = None, mode: str = "tools",
                 model: str | None = None) -> None:
        if mode not in self.MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {', '.join(self.MODES)}")
        self.script = tuple(script)
        self.plan = plan or UsagePlan()
        self.mode = mode
        self.model = model
        self.served: list[Served] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> "ScriptedModel":
        handler = type("Handler", (_Handler,), {"model": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "ScriptedModel":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # what was served
    def replies(self, kinds: Sequence[str] = ("script",)) -> list[Served]:
        return [s for s in self.served if s.kind in kinds]

    def totals(self, kinds: Sequence[str] = ("script",)) -> Usage:
        us = [s.usage for s in self.served if s.kind in kinds and s.usage is not None]
        return Usage(sum(u.input for u in us), sum(u.output for u in us), sum(u.cache_read for u in us),
                     sum(u.cache_write for u in us))

    def _record(self, entry: Served) -> None:
        with self._lock:
            self.served.append(entry)

    def _final(self) -> Action:
        return next((a for a in reversed(self.script) if a.kind == "say"), Action("say", "Done."))

    # the step a conversation is at
    def decide(self, req: Request) -> tuple[str, int | None, Call | None, str]:
        """(kind, step, call, text): ``kind`` is script or side (a request of the program's own
        that is no step of the session); a tool call to make, or the text to reply."""
        if self.mode == "aider":
            write = next((a for a in self.script if a.kind == "write"), None)
            if write is None or _file_in_chat(req.chat, write.arg) is None:
                return "side", None, None, "kernel task"
            if write.content.strip() in req.chat:
                return "script", 1, None, self._final().arg
            return "script", 0, None, aider_reply(req.chat, req.system, write.arg, write.content)
        if _pick(req.tools, SHELL_TOOLS) is None:
            return "side", None, None, "kernel task"
        k = req.results
        action = self.script[k] if k < len(self.script) else self._final()
        if action.kind == "wait":
            return "held", k, None, ""
        if action.kind == "say" and SUBMIT_WORD in req.system + req.chat:
            action = Action("shell", f"echo {SUBMIT_WORD}")
        call = tool_call(action, req.tools, _cwd_of(req.chat))
        return "script", k, call, action.arg if call is None else ""

    def usage_for(self, kind: str, step: int | None) -> Usage:
        return self.plan.step(step) if kind == "script" and step is not None else self.plan.side


_CWD = re.compile(re.escape(CWD_MARK) + r"(/[^\s\"'\\]+)")


def _cwd_of(text: str) -> str | None:
    m = _CWD.search(text)
    return m.group(1) if m else None


class _Handler(BaseHTTPRequestHandler):
    model: ScriptedModel
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:      # quiet
        pass

    # plumbing
    def _body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw and self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self._read_chunked()
        try:
            return json.loads(raw or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            return {}

    def _read_chunked(self) -> bytes:
        out = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return out
            out += self.rfile.read(size)
            self.rfile.readline()

    def _send(self, code: int, payload: Any, ctype: str = "application/json", extra: Mapping[str, str] = {}) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True

    def _sse(self, events: Sequence[tuple[str | None, Any]]) -> None:
        self._send(200, _sse(events), "text/event-stream", {"Cache-Control": "no-cache"})

    def do_GET(self) -> None:
        path = urlparse(self.path).path
        self.model.requests.append({"method": "GET", "path": self.path})
        if path.rstrip("/").endswith("/models"):
            name = self.model.model or "scripted"
            if "/v1beta/" in path:
                self._send(200, {"models": [{"name": f"models/{name}", "displayName": name,
                                             "supportedGenerationMethods": ["generateContent"]}]})
            else:
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model", "created": 0,
                                                             "owned_by": "arena"}]})
            return
        self._send(404, {"error": {"message": f"no such path {path}", "type": "not_found"}})

    def do_POST(self) -> None:
        path = urlparse(self.path).path
        body = self._body()
        self.model.requests.append({"method": "POST", "path": self.path, "body": body})
        try:
            if path.endswith("/messages/count_tokens"):
                self._send(200, {"input_tokens": self.model.plan.side.input})
            elif path.endswith("/messages"):
                self._anthropic(path, body)
            elif path.endswith("/chat/completions"):
                self._chat(path, body)
            elif path.endswith("/responses"):
                self._responses(path, body)
            elif ":countTokens" in path:
                self._send(200, {"totalTokens": self.model.plan.side.input})
            elif ":generateContent" in path or ":streamGenerateContent" in path:
                self._gemini(path, body)
            else:
                self._send(404, {"error": {"message": f"no such path {path}", "type": "not_found"}})
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _hold(self, api: str, path: str, model: str, step: int | None) -> None:
        """A model that does not answer (a ``wait`` step): the request stays open until stop()."""
        self.model._record(Served(api, path, model, "held", step, None))
        self.model._stopping.wait()
        self.close_connection = True

    # Anthropic Messages
    def _anthropic(self, path: str, body: Mapping[str, Any]) -> None:
        model = str(body.get("model") or self.model.model or "scripted")
        stream = bool(body.get("stream"))
        if self.model.mode == "reject":
            self.model._record(Served("anthropic", path, model, "rejected", None, None, stream=stream))
            self._send(401, {"type": "error", "error": {"type": "authentication_error",
                                                        "message": "invalid x-api-key"}},
                       extra={"x-should-retry": "false", "request-id": "req_" + uuid.uuid4().hex[:24]})
            return
        msgs = body.get("messages") or []
        req = Request(tools=[Tool(t["name"], t.get("input_schema")) for t in body.get("tools") or [] if "name" in t],
                      results=sum(1 for m in msgs if m.get("role") == "user" and isinstance(m.get("content"), list)
                                  for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"),
                      system="\n".join(_texts(body.get("system") or "")), chat="\n".join(_texts(msgs)))
        kind, step, call, text = self.model.decide(req)
        if kind == "held":
            return self._hold("anthropic", path, model, step)
        usage = self.model.usage_for(kind, step)
        self.model._record(Served("anthropic", path, model, kind, step, usage, call.tool.name if call else None,
                                  stream))
        mid = "msg_" + uuid.uuid4().hex[:24]
        content: list[dict[str, Any]] = []
        if call is not None:
            content.append({"type": "tool_use", "id": "toolu_" + call.id[5:], "name": call.tool.name,
                            "input": call.args if isinstance(call.args, dict) else {"input": call.args}})
        else:
            content.append({"type": "text", "text": text})
        stop = "tool_use" if call is not None else "end_turn"
        full = {"input_tokens": usage.input, "cache_creation_input_tokens": usage.cache_write,
                "cache_read_input_tokens": usage.cache_read, "output_tokens": usage.output}
        if not stream:
            self._send(200, {"id": mid, "type": "message", "role": "assistant", "model": model, "content": content,
                             "stop_reason": stop, "stop_sequence": None, "usage": full})
            return
        start_usage = {**full, "output_tokens": 1}
        events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None,
            "stop_sequence": None, "usage": start_usage}})]
        for i, block in enumerate(content):
            if block["type"] == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "text", "text": ""}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "text_delta", "text": block["text"]}}))
            else:
                events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": usage.output}}))
        events.append(("message_stop", {"type": "message_stop"}))
        self._sse(events)

    # OpenAI Chat Completions
    def _chat(self, path: str, body: Mapping[str, Any]) -> None:
        model = str(body.get("model") or self.model.model or "scripted")
        stream = bool(body.get("stream"))
        if self.model.mode == "reject":
            self.model._record(Served("chat", path, model, "rejected", None, None, stream=stream))
            self._send(401, {"error": {"message": "Incorrect API key provided: sk-arena. You can find your API key "
                                                  "at https://platform.openai.com/account/api-keys.",
                                       "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})
            return
        msgs = body.get("messages") or []
        req = Request(tools=[Tool(t["function"]["name"], t["function"].get("parameters"))
                             for t in body.get("tools") or [] if isinstance(t.get("function"), dict)],
                      results=sum(1 for m in msgs if m.get("role") == "tool"),
                      system="\n".join(t for m in msgs if m.get("role") in ("system", "developer")
                                       for t in _texts(m.get("content"))),
                      chat="\n".join(t for m in msgs if m.get("role") not in ("system", "developer")
                                     for t in _texts(m)))
        kind, step, call, text = self.model.decide(req)
        if kind == "held":
            return self._hold("chat", path, model, step)
        usage = self.model.usage_for(kind, step)
        self.model._record(Served("chat", path, model, kind, step, usage, call.tool.name if call else None, stream))
        cid = "chatcmpl-" + uuid.uuid4().hex[:24]
        created = int(time.time())
        wire_usage = {"prompt_tokens": usage.prompt, "completion_tokens": usage.output,
                      "total_tokens": usage.prompt + usage.output,
                      "prompt_tokens_details": {"cached_tokens": usage.cache_read},
                      "completion_tokens_details": {"reasoning_tokens": 0}}
        finish = "tool_calls" if call is not None else "stop"
        tc = [{"index": 0, "id": call.id, "type": "function",
               "function": {"name": call.tool.name, "arguments": call.arguments}}] if call is not None else None
        if not stream:
            msg: dict[str, Any] = {"role": "assistant", "content": None if call is not None else text}
            if tc:
                msg["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in tc]
            self._send(200, {"id": cid, "object": "chat.completion", "created": created, "model": model,
                             "choices": [{"index": 0, "message": msg, "finish_reason": finish}], "usage": wire_usage})
            return
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
        chunks: list[tuple[str | None, Any]] = [
            (None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                         "finish_reason": None}]})]
        if tc:
            choice = {"index": 0, "delta": {"tool_calls": tc}, "finish_reason": None}
            chunks.append((None, {**base, "choices": [choice]}))
        else:
            chunks.append(
                (None, {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})
            )
        include = bool((body.get("stream_options") or {}).get("include_usage"))
        last: dict[str, Any] = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        if not include:
            last["usage"] = wire_usage  # servers differ; a usage on the last chunk is what most send
        chunks.append((None, last))
        if include:
            chunks.append((None, {**base, "choices": [], "usage": wire_usage}))
        chunks.append((None, "[DONE]"))
        self._sse(chunks)

    # OpenAI Responses
    def _responses(self, path: str, body: Mapping[str, Any]) -> None:
        model = str(body.get("model") or self.model.model or "scripted")
        stream = bool(body.get("stream"))
        if self.model.mode == "reject":
            self.model._record(Served("responses", path, model, "rejected", None, None, stream=stream))
            self._send(
                401,
                {
                    "error": {
                        "message": "Incorrect API key provided: sk-arena. You can find your API key "
                        "at https://platform.openai.com/account/api-keys.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_api_key",
                    }
                },
            )
            return
        tools = []
        for t in body.get("tools") or []:
            if t.get("type") == "function" and "name" in t:
                tools.append(Tool(t["name"], t.get("parameters") or {}))
            elif t.get("type") == "custom" and "name" in t:
                tools.append(Tool(t["name"], None))
        items = body.get("input") if isinstance(body.get("input"), list) else [body.get("input") or ""]
        req = Request(
            tools=tools,
            results=sum(1 for it in items if isinstance(it, dict) and str(it.get("type", "")).endswith("_call_output")),
            system=str(body.get("instructions") or ""),
            chat="\n".join(_texts(items)),
        )
        kind, step, call, text = self.model.decide(req)
        if kind == "held":
            return self._hold("responses", path, model, step)
        usage = self.model.usage_for(kind, step)
        self.model._record(
            Served("responses", path, model, kind, step, usage, call.tool.name if call else None, stream)
        )
        rid = "resp_" + uuid.uuid4().hex[:24]
        wire_usage = {
            "input_tokens": usage.prompt,
            "input_tokens_details": {"cached_tokens": usage.cache_read},
            "output_tokens": usage.output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.prompt + usage.output,
        }
        if call is None:
            item: dict[str, Any] = {
                "type": "message",
                "id": "msg_" + uuid.uuid4().hex[:20],
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        elif call.tool.params is None:
            item = {
                "type": "custom_tool_call",
                "id": "ctc_" + call.id[5:],
                "call_id": call.id,
                "status": "completed",
                "name": call.tool.name,
                "input": call.args,
            }
        else:
            item = {
                "type": "function_call",
                "id": "fc_" + call.id[5:],
                "call_id": call.id,
                "status": "completed",
                "name": call.tool.name,
                "arguments": call.arguments,
            }
        created = int(time.time())
        resp = {
            "id": rid,
            "object": "response",
            "created_at": created,
            "status": "completed",
            "model": model,
            "output": [item],
            "usage": wire_usage,
            "error": None,
            "incomplete_details": None,
        }
        if not stream:
            self._send(200, resp)
            return
        seq = iter(range(1000))
        pending = {**resp, "status": "in_progress", "output": [], "usage": None}
        events: list[tuple[str | None, Any]] = [
            ("response.created", {"type": "response.created", "sequence_number": next(seq), "response": pending}),
            (
                "response.in_progress",
                {"type": "response.in_progress", "sequence_number": next(seq), "response": pending},
            ),
        ]
        added = {**item, "status": "in_progress"}
        if item["type"] == "message":
            added["content"] = []
        events.append(
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": 0, "item": added},
            )
        )
        if item["type"] == "message":
            part = {"type": "output_text", "text": "", "annotations": []}
            events += [
                (
                    "response.content_part.added",
                    {
                        "type": "response.content_part.added",
                        "sequence_number": next(seq),
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "part": part,
                    },
                ),
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "sequence_number": next(seq),
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "delta": text,
                    },
                ),
                (
                    "response.output_text.done",
                    {
                        "type": "response.output_text.done",
                        "sequence_number": next(seq),
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "text": text,
                    },
                ),
                (
                    "response.content_part.done",
                    {
                        "type": "response.content_part.done",
                        "sequence_number": next(seq),
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "part": {**part, "text": text},
                    },
                ),
            ]
        elif item["type"] == "function_call":
            events += [
                (
                    "response.function_call_arguments.delta",
                    {
                        "type": "response.function_call_arguments.delta",
                        "sequence_number": next(seq),
                        "item_id": item["id"],
                        "output_index": 0,
                        "delta": item["arguments"],
                    },
                ),
                (
                    "response.function_call_arguments.done",
                    {
                        "type": "response.function_call_arguments.done",
                        "sequence_number": next(seq),
                        "item_id": item["id"],
                        "output_index": 0,
                        "arguments": item["arguments"],
                    },
                ),
            ]
        elif item["type"] == "custom_tool_call":
            events += [
                (
                    "response.custom_tool_call_input.delta",
                    {
                        "type": "response.custom_tool_call_input.delta",
                        "sequence_number": next(seq),
                        "item_id": item["id"],
                        "output_index": 0,
                        "delta": item["input"],
                    },
                ),
                (
                    "response.custom_tool_call_input.done",
                    {
                        "type": "response.custom_tool_call_input.done",
                        "sequence_number": next(seq),
                        "item_id": item["id"],
                        "output_index": 0,
                        "input": item["input"],
                    },
                ),
            ]
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 0, "item": item},
            )
        )
        events.append(
            ("response.completed", {"type": "response.completed", "sequence_number": next(seq), "response": resp})
        )
        self._sse(events)

    # Gemini generateContent / streamGenerateContent
    def _gemini(self, path: str, body: Mapping[str, Any]) -> None:
        model = path.rsplit("/", 1)[-1].split(":")[0]
        stream = ":streamGenerateContent" in path
        if self.model.mode == "reject":
            self.model._record(Served("gemini", path, model, "rejected", None, None, stream=stream))
            self._send(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": "API key not valid. Please pass a valid API key.",
                        "status": "INVALID_ARGUMENT",
                        "details": [
                            {
                                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                "reason": "API_KEY_INVALID",
                                "domain": "googleapis.com",
                            }
                        ],
                    }
                },
            )
            return
        contents = body.get("contents") or []
        req = Request(
            tools=[
                Tool(f["name"], f.get("parametersJsonSchema") or f.get("parameters"))
                for t in body.get("tools") or []
                for f in t.get("functionDeclarations") or []
                if "name" in f
            ],
            results=sum(
                1 for c in contents for p in c.get("parts") or [] if isinstance(p, dict) and "functionResponse" in p
            ),
            system="\n".join(_texts(body.get("systemInstruction") or "")),
            chat="\n".join(_texts(contents)),
        )
        kind, step, call, text = self.model.decide(req)
        if kind == "held":
            return self._hold("gemini", path, model, step)
        gen = body.get("generationConfig") or {}
        if kind == "side" and gen.get("responseMimeType") == "application/json":
            text = _json_for_schema(gen.get("responseJsonSchema") or gen.get("responseSchema") or {})
        usage = self.model.usage_for(kind, step)
        self.model._record(Served("gemini", path, model, kind, step, usage, call.tool.name if call else None, stream))
        part = (
            {
                "functionCall": {
                    "name": call.tool.name,
                    "args": call.args if isinstance(call.args, dict) else {"input": call.args},
                }
            }
            if call is not None
            else {"text": text}
        )
        meta = {
            "promptTokenCount": usage.prompt,
            "candidatesTokenCount": usage.output,
            "totalTokenCount": usage.prompt + usage.output,
            "cachedContentTokenCount": usage.cache_read,
        }
        if not usage.cache_read:
            meta.pop("cachedContentTokenCount")
        doc = {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": meta,
            "modelVersion": model,
            "responseId": uuid.uuid4().hex[:20],
        }
        if not stream:
            self._send(200, doc)
            return
        self._sse([(None, doc)])


def _json_for_schema(schema: Mapping[str, Any]) -> str:
    """A JSON value shaped by a response schema (side requests that ask for JSON)."""

    def value(s: Mapping[str, Any]) -> Any:
        typ = str(s.get("type", "object")).lower()
        if s.get("enum"):
            return s["enum"][-1] if "user" not in s["enum"] else "user"
        if typ == "object":
            return {k: value(v) for k, v in (s.get("properties") or {}).items()}
        if typ == "array":
            return []
        if typ in ("integer", "number"):
            return 0
        if typ == "boolean":
            return False
        return "done"

    return json.dumps(value(schema))
