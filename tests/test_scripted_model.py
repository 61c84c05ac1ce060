"""The scripted model endpoint (arena.agents.scripted_model) over HTTP, as a program's client
sees it: each API's wire format (streamed and not), tool calls chosen from the tools a
request offers, the step read off the conversation, usage in each API's own fields, side
requests kept apart, the authentication error of each API, aider's edit formats, and a
step that never answers."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.request

import pytest

from arena.agents.scripted_model import SUBMIT_WORD, Action, ScriptedModel, UsagePlan, aider_reply, session_script

KERNEL = "def entry():\n    return 42\n"
SCRIPT = session_script("kernel.py", KERNEL)
PLAN = UsagePlan()


def _post(url: str, body: dict, headers: dict | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _sse(text: str) -> list[tuple[str | None, object]]:
    out, name = [], None
    for line in text.splitlines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
            out.append((name, data if data == "[DONE]" else json.loads(data)))
            name = None
    return out


ANTHROPIC_TOOLS = [
    {
        "name": "Bash",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
            "required": ["command"],
        },
    },
    {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
    {
        "name": "Write",
        "input_schema": {
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        },
    },
]


def _anthropic_history(k: int, cwd: str = "/w") -> list[dict]:
    """A conversation after k tool calls, the first of which printed the working folder."""
    msgs: list[dict] = [{"role": "user", "content": "do the task"}]
    for i in range(k):
        msgs.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "x"}}],
            }
        )
        out = f"arena-cwd={cwd}\n# README" if i == 0 else "ok"
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": out}]})
    return msgs


def test_anthropic_stream_walks_the_script_with_the_programs_own_tools():
    with ScriptedModel(SCRIPT) as m:
        calls = []
        for k in range(len(SCRIPT)):
            code, text = _post(
                f"{m.url}/v1/messages?beta=true",
                {"model": "claude-x", "stream": True, "tools": ANTHROPIC_TOOLS, "messages": _anthropic_history(k)},
            )
            assert code == 200
            events = _sse(text)
            names = [n for n, _ in events]
            assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
            start = events[0][1]["message"]
            u = PLAN.step(k)
            assert start["usage"]["input_tokens"] == u.input
            assert start["usage"]["cache_read_input_tokens"] == u.cache_read
            assert start["usage"]["cache_creation_input_tokens"] == u.cache_write
            delta = next(d for n, d in events if n == "message_delta")
            assert delta["usage"]["output_tokens"] == u.output
            block = next(d["content_block"] for n, d in events if n == "content_block_start")
            if block["type"] == "tool_use":
                args = json.loads("".join(d["delta"]["partial_json"] for n, d in events if n == "content_block_delta"))
                calls.append((block["name"], args))
                assert delta["delta"]["stop_reason"] == "tool_use"
            else:
                assert delta["delta"]["stop_reason"] == "end_turn"
                calls.append(("text", "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")))
    assert [c[0] for c in calls] == ["Bash", "Bash", "Read", "Write", "Bash", "text"]
    assert "README.md" in calls[0][1]["command"] and calls[1][1]["command"] == "./arena-check"
    assert calls[2][1] == {"file_path": "/w/kernel.py"}  # absolute, from the first tool result
    assert calls[3][1] == {"file_path": "/w/kernel.py", "content": KERNEL}
    assert [s.step for s in m.replies()] == list(range(6)) and m.totals().input == sum(
        PLAN.step(k).input for k in range(6)
    )


def test_a_request_without_the_shell_tool_is_a_side_request():
    with ScriptedModel(SCRIPT) as m:
        code, text = _post(
            f"{m.url}/v1/messages", {"model": "small", "messages": [{"role": "user", "content": "title?"}]}
        )
    doc = json.loads(text)
    assert code == 200 and doc["content"][0]["type"] == "text" and doc["usage"]["input_tokens"] == PLAN.side.input
    assert [s.kind for s in m.served] == ["side"] and m.replies() == []


def test_chat_completions_stream_with_usage_and_a_submit_word():
    tools = [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            },
        }
    ]
    msgs = [{"role": "system", "content": f"finish with echo {SUBMIT_WORD}"}, {"role": "user", "content": "go"}]
    for i in range(5):
        msgs += [
            {
                "role": "assistant",
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"},
        ]
    with ScriptedModel(SCRIPT) as m:
        code, text = _post(
            f"{m.url}/v1/chat/completions",
            {
                "model": "gpt-x",
                "stream": True,
                "tools": tools,
                "stream_options": {"include_usage": True},
                "messages": msgs,
            },
        )
    chunks = [d for _, d in _sse(text)]
    assert code == 200 and chunks[-1] == "[DONE]"
    call = next(
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in chunks[:-1]
        if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    )
    # the script's closing reply, as the prompt asks to finish: the submit command
    assert json.loads(call["function"]["arguments"]) == {"command": f"echo {SUBMIT_WORD}"}
    usage = chunks[-2]["usage"]
    u = PLAN.step(5)
    assert chunks[-2]["choices"] == [] and usage["prompt_tokens"] == u.input + u.cache_read
    assert usage["prompt_tokens_details"]["cached_tokens"] == u.cache_read and usage["completion_tokens"] == u.output


def test_responses_stream_with_a_freeform_patch_tool():
    tools = [
        {
            "type": "function",
            "name": "exec_command",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        },
        {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
    ]
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]
    for i in range(3):
        items += [
            {"type": "function_call", "call_id": f"c{i}", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{i}", "output": "arena-cwd=/w" if i == 0 else "ok"},
        ]
    with ScriptedModel(SCRIPT) as m:
        code, text = _post(f"{m.url}/v1/responses", {"model": "gpt-x", "stream": True, "tools": tools, "input": items})
    events = _sse(text)
    assert code == 200 and events[0][0] == "response.created" and events[-1][0] == "response.completed"
    assert all(n == d["type"] for n, d in events)
    item = next(d["item"] for n, d in events if n == "response.output_item.done")
    assert item["type"] == "custom_tool_call" and item["name"] == "apply_patch"
    assert item["input"] == "*** Begin Patch\n*** Add File: kernel.py\n+def entry():\n+    return 42\n*** End Patch\n"
    usage = events[-1][1]["response"]["usage"]
    assert usage["input_tokens"] == PLAN.step(3).prompt and usage["input_tokens_details"]["cached_tokens"] == 900


def test_gemini_stream_generate_content():
    tools = [
        {
            "functionDeclarations": [
                {
                    "name": "run_shell_command",
                    "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"}}},
                }
            ]
        }
    ]
    with ScriptedModel(SCRIPT) as m:
        code, text = _post(
            f"{m.url}/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
            {"contents": [{"role": "user", "parts": [{"text": "go"}]}], "tools": tools},
        )
        code2, text2 = _post(
            f"{m.url}/v1beta/models/gemini-x:generateContent",
            {
                "contents": [{"role": "user", "parts": [{"text": "next speaker?"}]}],
                "generationConfig": {
                    "responseMimeType": "application/json",
                    "responseJsonSchema": {
                        "type": "object",
                        "properties": {"next_speaker": {"type": "string", "enum": ["user", "model"]}},
                    },
                },
            },
        )
    [(_, doc)] = _sse(text)
    part = doc["candidates"][0]["content"]["parts"][0]
    assert code == 200 and part["functionCall"]["name"] == "run_shell_command"
    assert doc["usageMetadata"]["promptTokenCount"] == PLAN.step(0).prompt
    assert doc["usageMetadata"]["cachedContentTokenCount"] == PLAN.step(0).cache_read
    assert doc["usageMetadata"]["candidatesTokenCount"] == PLAN.step(0).output and doc["modelVersion"] == "gemini-x"
    side = json.loads(json.loads(text2)["candidates"][0]["content"]["parts"][0]["text"])
    assert code2 == 200 and side == {"next_speaker": "user"}


@pytest.mark.parametrize(
    "path,status,words",
    [
        ("/v1/messages", 401, "authentication_error"),
        ("/v1/chat/completions", 401, "invalid_api_key"),
        ("/v1/responses", 401, "Incorrect API key"),
        ("/v1beta/models/g:streamGenerateContent", 400, "API_KEY_INVALID"),
    ],
)
def test_reject_mode_answers_each_apis_authentication_error(path, status, words):
    with ScriptedModel(SCRIPT, mode="reject") as m:
        code, text = _post(m.url + path, {"model": "x", "messages": [], "contents": []})
    assert code == status and words in text and [s.kind for s in m.served] == ["rejected"]


def test_aider_mode_edits_in_the_format_the_prompt_asks_for():
    chat = "kernel.py\n```\ndef entry():\n    return 0\n```\n"
    diff = aider_reply(chat, "Every *SEARCH/REPLACE block* must use this format: <<<<<<< SEARCH", "kernel.py", KERNEL)
    assert "<<<<<<< SEARCH\ndef entry():\n    return 0\n=======\ndef entry():\n    return 42\n>>>>>>> REPLACE" in diff
    whole = aider_reply(chat, "return the entire file listing", "kernel.py", KERNEL)
    assert "kernel.py\n```python\ndef entry():\n    return 42\n```" in whole
    with ScriptedModel(SCRIPT, mode="aider") as m:
        _, first = _post(
            f"{m.url}/v1/chat/completions",
            {
                "model": "x",
                "messages": [{"role": "system", "content": "<<<<<<< SEARCH"}, {"role": "user", "content": chat}],
            },
        )
        edited = chat.replace("return 0", "return 42")
        _, second = _post(
            f"{m.url}/v1/chat/completions",
            {
                "model": "x",
                "messages": [{"role": "system", "content": "<<<<<<< SEARCH"}, {"role": "user", "content": edited}],
            },
        )
    assert ">>>>>>> REPLACE" in json.loads(first)["choices"][0]["message"]["content"]
    assert json.loads(second)["choices"][0]["message"]["content"] == SCRIPT[-1].arg  # the file holds it: done
    assert [s.step for s in m.replies()] == [0, 1]


def test_a_wait_step_holds_the_request_until_the_endpoint_stops():
    m = ScriptedModel([Action("wait", "")]).start()
    got: list = []

    def ask() -> None:
        try:
            got.append(
                _post(
                    f"{m.url}/v1/messages",
                    {"model": "x", "tools": ANTHROPIC_TOOLS, "messages": [{"role": "user", "content": "go"}]},
                )
            )
        except (OSError, http.client.HTTPException) as exc:  # closed without an answer
            got.append(exc)

    t = threading.Thread(target=ask, daemon=True)
    try:
        t.start()
        t.join(1.5)
        assert t.is_alive() and [s.kind for s in m.served] == ["held"]
    finally:
        m.stop()
    t.join(10)
    assert not t.is_alive() and isinstance(got[0], Exception)  # it never got an answer
