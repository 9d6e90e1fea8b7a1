#!/usr/bin/env python3
"""`brasa serve` keeps a reasoning format's reasoning apart from the answer.

The model is a scripted qwen3 file (tests/tools/scripted_qwen3.py: SmolLM2's tokenizer with Qwen3's
<think> tokens, weights that make the reply "<think>plan</think>\\n\\nAnswer" after a generation
prompt, and "Answer" after thinking off's empty block), so the engine's real output is known.
Checked: message.content holds the answer and message.reasoning_content the reasoning; a stream
sends delta.reasoning_content chunks, then delta.content ones (raw SSE and the openai client);
"chat_template_kwargs": {"enable_thinking": false} closes the block in the prompt (four tokens
more) and the reply has no reasoning_content; a chat_template_kwargs or enable_thinking of the
wrong type is a 400 in OpenAI's error shape; other keys reach the template as variables; null is fine; an incoming assistant
message's reasoning (its <think> block, its reasoning_content) is not rendered back; a reply cut
inside its reasoning has an empty answer; /v1/completions is raw text, tags included. A model
without reasoning (SmolLM2, chatml) never has reasoning_content and takes the kwargs too.
Anthropic's thinking.budget_tokens, on a model whose reasoning is four tokens: a budget of 2 ends
it after two, brasa writing the closing "\n</think>\n\n" itself, and the model answers after it;
a budget of 10, or none, leaves it whole; whole and streamed.

Usage: test_server_reasoning.py --brasa PATH_TO_brasa(-asan) --model SMOLLM2_GGUF
"""
import argparse
import http.client
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402
from serverproc import Server  # noqa: E402
import scripted_qwen3  # noqa: E402

CHECKS = Checks("server reasoning")
expect = CHECKS.expect
REASONING, ANSWER = scripted_qwen3.REASONING_TEXT, scripted_qwen3.ANSWER_TEXT


def post(port, path, body, timeout=120):
    """(status, parsed JSON or raw bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        raw = r.read()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw
    finally:
        c.close()


def stream_events(port, body):
    """The data of each SSE event of a streamed chat request, parsed ([DONE] as the string)."""
    status, raw = post(port, "/v1/chat/completions", dict(body, stream=True))
    if status != 200 or not isinstance(raw, bytes):
        return status, []
    events = []
    for ev in raw.decode("utf-8").split("\n\n"):
        if ev.startswith("data: "):
            data = ev[6:]
            events.append(data if data == "[DONE]" else json.loads(data))
    return status, events


def chat(text="Hello", **extra):
    return dict({"model": "x", "messages": [{"role": "user", "content": text}], "max_tokens": 16}, **extra)


def check_reasoning_server(port):
    status, r = post(port, "/v1/chat/completions", chat())
    msg = r["choices"][0]["message"] if status == 200 else {}
    expect("whole reply: content is the answer", msg.get("content") == ANSWER, str(r))
    expect("whole reply: reasoning_content is the reasoning", msg.get("reasoning_content") == REASONING, str(r))
    expect("whole reply: finish_reason stop", status == 200 and r["choices"][0]["finish_reason"] == "stop", str(r))
    think_prompt = r["usage"]["prompt_tokens"] if status == 200 else None

    status, events = stream_events(port, chat(stream_options={"include_usage": True}))
    chunks = [e for e in events if isinstance(e, dict) and e.get("choices")]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    kinds = ["reasoning" if "reasoning_content" in d else "content" if d.get("content") else "other" for d in deltas]
    expect("stream: reasoning chunks, then content chunks", status == 200 and "reasoning" in kinds and "content" in kinds
           and kinds.index("content") > max(i for i, k in enumerate(kinds) if k == "reasoning"), str(kinds))
    expect("stream: the role on the first chunk", deltas and deltas[0].get("role") == "assistant", str(deltas[:1]))
    expect("stream: the reasoning joined", "".join(d.get("reasoning_content", "") for d in deltas) == REASONING,
           str(deltas))
    expect("stream: the answer joined", "".join(d.get("content") or "" for d in deltas) == ANSWER, str(deltas))
    expect("stream: no chunk has both", not any("reasoning_content" in d and d.get("content") for d in deltas),
           str(deltas))
    expect("stream: finish, usage, [DONE]", chunks and chunks[-1]["choices"][0]["finish_reason"] == "stop"
           and any(isinstance(e, dict) and e.get("usage") for e in events) and events[-1] == "[DONE]", str(events[-3:]))

    off = chat(chat_template_kwargs={"enable_thinking": False})
    status, r = post(port, "/v1/chat/completions", off)
    msg = r["choices"][0]["message"] if status == 200 else {}
    expect("thinking off: the answer at once, no reasoning_content",
           msg.get("content") == ANSWER and "reasoning_content" not in msg, str(r))
    expect("thinking off: the prompt closes an empty block (4 tokens more)",
           status == 200 and think_prompt is not None and r["usage"]["prompt_tokens"] == think_prompt + 4,
           f"{r.get('usage') if status == 200 else r} vs {think_prompt}")
    status, events = stream_events(port, off)
    deltas = [e["choices"][0]["delta"] for e in events if isinstance(e, dict) and e.get("choices")]
    expect("thinking off, streamed: content only", status == 200 and not any("reasoning_content" in d for d in deltas)
           and "".join(d.get("content") or "" for d in deltas) == ANSWER, str(deltas))

    for name, kwargs in (("a string", "no thinking"), ("an array", [False]), ("a number", 0)):
        status, r = post(port, "/v1/chat/completions", chat(chat_template_kwargs=kwargs))
        err = r.get("error", {}) if isinstance(r, dict) else {}
        expect(f"chat_template_kwargs {name}: 400 in OpenAI's shape", status == 400 and err.get("param") ==
               "chat_template_kwargs" and err.get("type") == "invalid_request_error" and "object" in err.get("message", ""),
               f"{status} {r}")
    for name, value in (("a string", "false"), ("a number", 0), ("an object", {})):
        status, r = post(port, "/v1/chat/completions", chat(chat_template_kwargs={"enable_thinking": value}))
        err = r.get("error", {}) if isinstance(r, dict) else {}
        expect(f"enable_thinking {name}: 400", status == 400 and err.get("param") == "chat_template_kwargs"
               and "enable_thinking" in err.get("message", ""), f"{status} {r}")
    status, r = post(port, "/v1/chat/completions", chat(chat_template_kwargs={"enable_thinking": True, "add_vision_id": True}))
    expect("another chat_template_kwargs key goes to the template as a variable", status == 200, f"{status} {r}")
    for name, kwargs in (("null", None), ("enable_thinking null", {"enable_thinking": None})):
        status, r = post(port, "/v1/chat/completions", chat(chat_template_kwargs=kwargs))
        expect(f"chat_template_kwargs {name}: thinking stays on", status == 200 and
               r["choices"][0]["message"].get("reasoning_content") == REASONING, f"{status} {r}")

    history = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": ANSWER},
               {"role": "user", "content": "Again"}]
    with_reasoning = [dict(m) for m in history]
    with_reasoning[1] = {"role": "assistant", "content": "<think>\nA long line of earlier reasoning.\n</think>\n\n"
                         + ANSWER, "reasoning_content": "A long line of earlier reasoning."}
    s1, r1 = post(port, "/v1/chat/completions", {"messages": history, "max_tokens": 16})
    s2, r2 = post(port, "/v1/chat/completions", {"messages": with_reasoning, "max_tokens": 16})
    expect("an assistant message's reasoning is not rendered back", s1 == 200 and s2 == 200 and
           r1["usage"]["prompt_tokens"] == r2["usage"]["prompt_tokens"] and
           r2["choices"][0]["message"].get("content") == ANSWER, f"{r1} vs {r2}")

    status, r = post(port, "/v1/chat/completions", chat(max_tokens=2))
    msg = r["choices"][0]["message"] if status == 200 else {}
    expect("cut inside the reasoning: an empty answer", msg.get("content") == "" and
           msg.get("reasoning_content") == REASONING and r["choices"][0]["finish_reason"] == "length", str(r))
    status, events = stream_events(port, chat(max_tokens=2))
    deltas = [e["choices"][0]["delta"] for e in events if isinstance(e, dict) and e.get("choices")]
    expect("cut inside the reasoning, streamed: no content", status == 200 and
           "".join(d.get("reasoning_content", "") for d in deltas) == REASONING and
           not any(d.get("content") for d in deltas), str(deltas))

    status, r = post(port, "/v1/completions", {"prompt": "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
                                               "max_tokens": 16})
    expect("completions: raw text, tags included", status == 200 and r["choices"][0]["text"] ==
           f"<think>{REASONING}</think>\n\n{ANSWER}", str(r))

    from openai import OpenAI
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=120)
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hello"}], max_tokens=16)
    expect("openai client: content and reasoning_content", r.choices[0].message.content == ANSWER and
           getattr(r.choices[0].message, "reasoning_content", None) == REASONING, str(r))
    reasoning, content = [], []
    for chunk in client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hello"}],
                                                max_tokens=16, stream=True):
        for ch in chunk.choices:
            if getattr(ch.delta, "reasoning_content", None):
                reasoning.append(ch.delta.reasoning_content)
            if ch.delta.content:
                content.append(ch.delta.content)
    expect("openai client, streamed", "".join(reasoning) == REASONING and "".join(content) == ANSWER,
           f"{reasoning} {content}")
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hello"}], max_tokens=16,
                                       extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    expect("openai client, thinking off through extra_body", r.choices[0].message.content == ANSWER and
           getattr(r.choices[0].message, "reasoning_content", None) is None, str(r))


# the reply after a generation prompt: a reasoning block of four tokens, then the answer
LONG_CHAIN = ["Ċ", "<think>", "plan", "a", "b", "c", "</think>", "ĊĊ", "Answer", "<|im_end|>"]


def anthropic(port, budget, stream=False):
    """(status, thinking text, answer text) of an Anthropic request, whole or streamed."""
    body = {"model": "x", "max_tokens": 32, "messages": [{"role": "user", "content": "Hello"}], "stream": stream}
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    status, r = post(port, "/v1/messages", body)
    if status != 200:
        return status, None, str(r)
    if not stream:
        blocks = r.get("content", [])
        return (status, "".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking"),
                "".join(b.get("text", "") for b in blocks if b.get("type") == "text"))
    thinking = text = ""
    for ev in r.decode("utf-8").split("\n\n"):
        data = next((ln[6:] for ln in ev.split("\n") if ln.startswith("data: ")), None)
        delta = json.loads(data).get("delta", {}) if data else {}
        thinking += delta.get("thinking", "")
        text += delta.get("text", "")
    return status, thinking, text


def check_budget_server(port):
    for stream in (False, True):
        how = "streamed" if stream else "whole"
        st, thinking, text = anthropic(port, None, stream)
        expect(f"anthropic {how}, thinking off: no reasoning budget applies", st == 200 and text.endswith(ANSWER),
               f"{st} {thinking!r} {text!r}")
        st, thinking, text = anthropic(port, 10, stream)
        expect(f"anthropic {how}, budget 10 over 4 tokens: the reasoning whole",
               st == 200 and thinking.strip() == "planabc" and text == ANSWER, f"{st} {thinking!r} {text!r}")
        st, thinking, text = anthropic(port, 2, stream)
        expect(f"anthropic {how}, budget 2: the reasoning closed after two tokens, then the answer",
               st == 200 and thinking.strip() == "plana" and text == ANSWER, f"{st} {thinking!r} {text!r}")
    st, thinking, text = anthropic(port, 0, False)
    expect("anthropic: budget_tokens 0 is a 400", st == 400, f"{st} {text}")


def check_plain_server(port):
    status, r = post(port, "/v1/chat/completions", chat("Say hi.", max_tokens=6, temperature=0))
    expect("chatml: no reasoning_content", status == 200 and "reasoning_content" not in r["choices"][0]["message"],
           str(r))
    status, r2 = post(port, "/v1/chat/completions", chat("Say hi.", max_tokens=6, temperature=0,
                                                         chat_template_kwargs={"enable_thinking": False}))
    expect("chatml: enable_thinking false changes nothing", status == 200 and
           r2["choices"][0]["message"]["content"] == r["choices"][0]["message"]["content"] and
           r2["usage"]["prompt_tokens"] == r["usage"]["prompt_tokens"], f"{r} vs {r2}")
    status, events = stream_events(port, chat("Say hi.", max_tokens=6, temperature=0))
    expect("chatml, streamed: no reasoning_content", status == 200 and events and not any(
        "reasoning_content" in e["choices"][0]["delta"] for e in events if isinstance(e, dict) and e.get("choices")),
        str(events[:3]))
    status, r = post(port, "/v1/chat/completions", chat(chat_template_kwargs="x"))
    expect("chatml: a bad chat_template_kwargs is still a 400", status == 400, f"{status} {r}")


def run_server(brasa, model, check):
    s = Server(brasa, model, "--parallel", "2", "--ctx", "512")
    try:
        if not expect(f"{os.path.basename(model)}: the server starts", s.port is not None, s.stderr()):
            return
        check(s.port)
    finally:
        rc = s.stop()
        log = s.stderr()
        expect(f"{os.path.basename(model)}: a clean stop", rc == 0, f"exit {rc}")
        expect(f"{os.path.basename(model)}: no sanitizer report", not re.search(r"ERROR: (Address|Leak)Sanitizer|"
                                                                                r"runtime error:", log), log[-3000:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.model):
        print(f"skipped: model missing: {a.model} (run scripts/fetch_models.py)")
        return 77
    with tempfile.TemporaryDirectory(prefix="brasa-think-") as work:
        model = scripted_qwen3.make(a.model, os.path.join(work, "q3.gguf"), scripted_qwen3.HYBRID_TEMPLATE,
                                    scripted_qwen3.REASONING_CHAIN)
        run_server(a.brasa, model, check_reasoning_server)
        model = scripted_qwen3.make(a.model, os.path.join(work, "q3-long.gguf"), scripted_qwen3.HYBRID_TEMPLATE,
                                    LONG_CHAIN)
        run_server(a.brasa, model, check_budget_server)
    run_server(a.brasa, a.model, check_plain_server)
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
