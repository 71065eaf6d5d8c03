"""The scripted Responses server, driven by a plain HTTP client: what it streams and what it records."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agents.responses_server import (
    SHELL_TOOL,
    Call,
    Custom,
    Reasoning,
    ResponsesServer,
    Text,
    Usage,
    fail,
    hang,
    shell,
    step,
)

SHELL = {"type": "function", "name": SHELL_TOOL, "parameters": {"type": "object"}}


@pytest.fixture
def server() -> Iterator[ResponsesServer]:
    with ResponsesServer() as srv:
        yield srv


def body(*items: dict[str, Any], tools: list[dict[str, Any]] | None = None, stream: bool = True) -> dict[str, Any]:
    return {"model": "m", "input": list(items), "tools": tools if tools is not None else [SHELL], "stream": stream}


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def post(srv: ResponsesServer, payload: object, headers: dict[str, str] | None = None,
         path: str = "/v1/responses") -> tuple[int, str, list[dict[str, Any]] | Any]:
    """POST and read the whole answer: (status, content type, parsed SSE events or the JSON body)."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    raw = json.dumps(payload).encode()
    conn.request("POST", path, raw, {"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    kind = resp.getheader("Content-Type", "")
    if kind.startswith("text/event-stream"):
        return resp.status, kind, parse_sse(text)
    return resp.status, kind, json.loads(text)


def parse_sse(text: str) -> list[dict[str, Any]]:
    events = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            data = json.loads(lines["data"])
            assert lines.get("event") == data["type"], "the event line names the data's type"
            events.append(data)
    return events


def test_a_text_step_streams_word_deltas_between_created_and_completed(server: ResponsesServer) -> None:
    server.add(step(Text("# Plan\n\n- **one** thing"), usage=Usage(input_tokens=11, output_tokens=5, cached_tokens=3)))
    status, kind, events = post(server, body(user("hi")))
    assert (status, kind) == (200, "text/event-stream")
    types = [e["type"] for e in events]
    assert types[0] == "response.created" and types[1] == "response.output_item.added"
    assert types[-2:] == ["response.output_item.done", "response.completed"]
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == "# Plan\n\n- **one** thing"
    done = events[-2]["item"]
    assert done["content"] == [{"type": "output_text", "text": "# Plan\n\n- **one** thing", "annotations": []}]
    assert {e.get("item_id") for e in events if "delta" in e} == {done["id"]}
    assert events[-1]["response"]["usage"] == {
        "input_tokens": 11, "input_tokens_details": {"cached_tokens": 3}, "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 16}
    assert server.problems == []


def test_steps_are_played_in_order_and_every_request_is_recorded(server: ResponsesServer) -> None:
    server.add(step(shell("scripts/remote-schedule list")), step(Text("done")))
    _, _, first = post(server, body({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}, user("list them")),
        headers={"Authorization": "Bearer k-1"})
    call = next(e["item"] for e in first if e["type"] == "response.output_item.done")
    assert call["type"] == "function_call" and call["name"] == SHELL_TOOL
    assert json.loads(call["arguments"]) == {"command": "scripts/remote-schedule list"}
    echoed = {"type": "function_call", "name": SHELL_TOOL, "arguments": call["arguments"], "call_id": call["call_id"]}
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "Exit code: 0\nOutput:\n[]\n"}
    _, _, second = post(server, body(user("list them"), echoed, output))
    assert "".join(e.get("delta", "") for e in second) == "done"

    one, two = server.requests
    assert one.headers["authorization"] == "Bearer k-1"
    assert one.user_texts() == ["list them"], "codex's <environment_context> message is not a user text"
    assert two.function_calls() == [Call(SHELL_TOOL, {"command": "scripts/remote-schedule list"}, call["call_id"])]
    assert two.function_outputs() == {call["call_id"]: "Exit code: 0\nOutput:\n[]\n"}
    assert two.last_item()["type"] == "function_call_output"
    assert server.remaining == 0 and server.problems == []


def test_call_ids_are_unique_unless_the_script_names_one(server: ResponsesServer) -> None:
    server.add(step(shell("a"), shell("b")), step(shell("c", call_id="call_fixed")))
    _, _, events = post(server, body(user("x")))
    ids = [e["item"]["call_id"] for e in events if e["type"] == "response.output_item.done"]
    _, _, events = post(server, body(user("x")))
    ids += [e["item"]["call_id"] for e in events if e["type"] == "response.output_item.done"]
    assert len(set(ids)) == 3 and ids[2] == "call_fixed"
    indexes = [e["output_index"] for e in events if e["type"].startswith("response.output_item")]
    assert indexes == [0, 0]


def test_a_reasoning_step_streams_a_summary(server: ResponsesServer) -> None:
    server.add(step(Reasoning("Weighing it."), Text("ok")))
    _, _, events = post(server, body(user("x")))
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done[0] == {"type": "reasoning", "id": done[0]["id"], "summary": [{"type": "summary_text",
                                                                            "text": "Weighing it."}]}
    assert [e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta"] == ["Weighing it."]
    assert done[1]["type"] == "message"


def test_a_custom_tool_call_carries_its_freeform_input(server: ResponsesServer) -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    server.add(step(Custom("apply_patch", patch)))
    _, _, events = post(server, body(user("x"), tools=[{"type": "custom", "name": "apply_patch"}]))
    (item,) = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert item["type"] == "custom_tool_call" and item["input"] == patch
    post(server, body(user("x"), {"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "ok"}))
    assert server.requests[1].custom_outputs() == {item["call_id"]: "ok"}
    assert server.problems[1:] == [] and "no step left" in server.problems[0]


def test_calling_a_tool_the_request_did_not_offer_is_a_problem(server: ResponsesServer) -> None:
    server.add(step(shell("ls")))
    post(server, body(user("x"), tools=[]))
    assert len(server.problems) == 1 and SHELL_TOOL in server.problems[0]


def test_a_request_past_the_script_gets_a_visible_answer_and_is_a_problem(server: ResponsesServer) -> None:
    _, _, events = post(server, body(user("anything")))
    assert "".join(e.get("delta", "") for e in events) == ResponsesServer.EXHAUSTED
    assert events[-1]["type"] == "response.completed"
    assert len(server.problems) == 1 and "no step left" in server.problems[0]


def test_an_error_step_answers_with_its_status_and_message(server: ResponsesServer) -> None:
    server.add(fail(400, "context too long"))
    status, kind, answer = post(server, body(user("x")))
    assert (status, kind) == (400, "application/json")
    assert answer["error"]["message"] == "context too long"


def test_a_request_that_does_not_stream_is_refused_and_is_a_problem(server: ResponsesServer) -> None:
    server.add(step(Text("never sent")))
    status, _, answer = post(server, body(user("x"), stream=False))
    assert status == 400 and "stream" in answer["error"]["message"]
    assert server.remaining == 1, "the step is kept for a real request"
    assert len(server.problems) == 1


def test_other_paths_are_recorded_but_are_not_model_requests(server: ResponsesServer) -> None:
    status, _, answer = post(server, {}, path="/v1/chat/completions")
    assert status == 404
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/v1/models")
    models = conn.getresponse()
    assert models.status == 200 and json.loads(models.read()) == {"object": "list", "data": []}
    conn.close()
    assert server.requests == []
    assert [(r.method, r.path) for r in server.all_requests] == [("POST", "/v1/chat/completions"),
                                                                 ("GET", "/v1/models")]


def test_a_hanging_step_holds_its_stream_while_other_requests_are_answered(server: ResponsesServer) -> None:
    server.add(hang(), step(Text("meanwhile")))
    result: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: result.update(answer=post(server, body(user("stuck")))), daemon=True)
    waiter.start()
    server.wait_for_requests(1)
    _, _, events = post(server, body(user("other")))
    assert "".join(e.get("delta", "") for e in events) == "meanwhile"
    assert waiter.is_alive(), "the hanging stream is still open"
    server.release()
    waiter.join(10)
    status, _, events = result["answer"]
    assert status == 200 and [e["type"] for e in events] == ["response.created"], "released without completing"


def test_close_ends_a_hanging_stream() -> None:
    srv = ResponsesServer([hang()]).start()
    result: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: result.update(answer=post(srv, body(user("stuck")))), daemon=True)
    waiter.start()
    srv.wait_for_requests(1)
    srv.close()
    waiter.join(10)
    assert not waiter.is_alive() and result["answer"][0] == 200


def test_waiting_for_requests_that_never_come_fails_with_the_count(server: ResponsesServer) -> None:
    with pytest.raises(AssertionError, match="got 0 requests, expected 1"):
        server.wait_for_requests(1, timeout=0.2)
