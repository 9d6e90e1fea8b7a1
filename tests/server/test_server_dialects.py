#!/usr/bin/env python3
"""Ollama's and Anthropic's APIs on a real `brasa serve`, driven by their official Python clients
(`ollama`, `anthropic`) beside the `openai` client on the same server: SmolLM2 served with Qwen3's
chat template (Hermes tool calls), and again with QwQ's (whose prompt opens a <think> block, so the
reply is thinking) for the thinking checks, an API key sent each client's way (Bearer, x-api-key).

- The same greedy request through the three APIs gives the same text, whole and streamed, and the
  same prompt: Anthropic's count_tokens, Ollama's prompt_eval_count and OpenAI's prompt_tokens agree
  on one conversation with a tool call and its result written in each API's own shape.
- Ollama: /api/chat and /api/generate (NDJSON and stream: false), options (num_predict,
  temperature, seed, stop, num_ctx), format json and a JSON Schema, think, /api/tags, /api/ps,
  /api/show, /api/version, a load request, /api/embed refused for a chat model.
- Anthropic: /v1/messages whole and streamed (the event sequence the SDK assembles), stop
  sequences, max_tokens, a forced tool call (tool_choice any) as a tool_use block whose input
  follows the tool's schema, thinking blocks when asked for and none otherwise, count_tokens,
  /v1/models in Anthropic's shape.
- At least 20 malformed requests per dialect, each answered with a 4xx in that dialect's error
  shape, the server answering correctly afterwards.

Usage: test_server_dialects.py --brasa PATH --model SMOLLM2_GGUF --templates-dir DIR (llama.cpp's templates)
"""
import argparse
import http.client
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402
from serverproc import Server  # noqa: E402

CHECKS = Checks("server dialects")
expect = CHECKS.expect
KEY = "dialect-test-key"
QUESTION = "Tell me a story about a cat."
GREEDY = {"temperature": 0}  # the 2026 SDK has no temperature argument; the API still takes it

WEATHER_TOOL = {"name": "get_weather", "description": "Current weather of a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                                 "unit": {"enum": ["C", "F"]}},
                               "required": ["city", "unit"], "additionalProperties": False}}


def raw(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        h = {"Content-Type": "application/json", "Authorization": "Bearer " + KEY}
        h.update(headers or {})
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read()
        try:
            return r.status, json.loads(text), r.getheader("Content-Type")
        except ValueError:
            return r.status, text, r.getheader("Content-Type")
    finally:
        c.close()


def openai_text(oa, text, n=16, **extra):
    r = oa.chat.completions.create(model="x", messages=[{"role": "user", "content": text}], temperature=0,
                                   max_tokens=n, extra_body={"chat_template_kwargs": {"enable_thinking": False}},
                                   **extra)
    return r.choices[0].message.content, r


def check_ollama(port, oa):
    import ollama
    import jsonschema
    cl = ollama.Client(host=f"http://127.0.0.1:{port}", headers={"Authorization": "Bearer " + KEY})
    reference, _ = openai_text(oa, QUESTION)
    opts = {"temperature": 0, "num_predict": 16, "repeat_penalty": 1.0}  # Ollama's default penalty is 1.1
    r = cl.chat(model="smollm2", messages=[{"role": "user", "content": QUESTION}], options=opts, think=False)
    expect("ollama chat equals the openai chat (greedy)", r.message.content == reference,
           f"{r.message.content!r} vs {reference!r}")
    expect("ollama chat: done, counts and durations", r.done and r.done_reason == "length" and r.eval_count == 16 and
           r.prompt_eval_count > 0 and r.total_duration > 0 and r.created_at, str(r))
    parts = list(cl.chat(model="smollm2", messages=[{"role": "user", "content": QUESTION}], options=opts, think=False,
                         stream=True))
    expect("ollama chat streamed: the same text over several NDJSON objects, the last done",
           "".join(p.message.content or "" for p in parts) == reference and len(parts) > 2 and parts[-1].done and
           not any(p.done for p in parts[:-1]) and parts[-1].eval_count == 16, str(parts[-1]))
    g = cl.generate(model="smollm2", prompt=QUESTION, options=opts, think=False)
    expect("ollama generate templates the prompt as a chat", g.response == reference, f"{g.response!r}")
    gs = "".join(p.response for p in cl.generate(model="smollm2", prompt=QUESTION, options=opts, think=False,
                                                  stream=True))
    expect("ollama generate streamed", gs == reference, gs)
    raw_gen = cl.generate(model="smollm2", prompt="The capital of France is", raw=True, options=opts)
    expect("ollama generate raw continues the text", raw_gen.done and raw_gen.eval_count >= 1, str(raw_gen))
    stop = cl.chat(model="smollm2", messages=[{"role": "user", "content": QUESTION}], think=False,
                   options=dict(opts, stop=[reference[3:6]]))
    expect("ollama options.stop ends the text before it", stop.done_reason == "stop" and
           stop.message.content == reference[:3], repr(stop.message.content))
    seeded = [cl.chat(model="smollm2", messages=[{"role": "user", "content": "Tell me a story."}], think=False,
                      options={"temperature": 1.0, "seed": 7, "num_predict": 12}).message.content for _ in range(2)]
    expect("ollama options.seed repeats a sampled reply", seeded[0] == seeded[1], str(seeded))
    j = cl.chat(model="smollm2", messages=[{"role": "user", "content": "Give a JSON object with a name."}],
                format="json", think=False, options={"temperature": 0, "num_predict": 60})
    try:
        ok = isinstance(json.loads(j.message.content), dict)
    except ValueError:
        ok = j.done_reason == "length"
    expect("ollama format json gives a JSON object", ok, j.message.content)
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    s = cl.chat(model="smollm2", messages=[{"role": "user", "content": "A person as JSON."}], format=schema,
                think=False, options={"temperature": 0, "num_predict": 80})
    try:
        jsonschema.validate(json.loads(s.message.content), schema)
        ok = True
    except Exception as e:  # noqa: BLE001
        ok, s.message.content = False, f"{s.message.content} ({e})"
    expect("ollama format with a schema gives a valid object", ok, s.message.content)
    tags = cl.list()
    m = tags.models[0] if tags.models else None
    expect("ollama /api/tags lists the model with its details",
           m is not None and m.size > 90_000_000 and m.details.format == "gguf" and m.details.family == "llama" and
           m.details.quantization_level == "Q4_1" and m.details.parameter_size.endswith("M"), str(tags))
    ps = cl.ps()
    expect("ollama /api/ps shows it loaded", len(ps.models) == 1 and ps.models[0].context_length == 2048, str(ps))
    show = cl.show("smollm2")
    expect("ollama /api/show: template, details, model_info, capabilities",
           "<|im_start|>" in (show.template or "") and show.modelinfo.get("general.architecture") == "llama" and
           show.modelinfo.get("llama.block_count") == 30 and "completion" in show.capabilities, str(show)[:300])
    st, v, _ = raw(port, "GET", "/api/version")
    expect("ollama /api/version", st == 200 and isinstance(v.get("version"), str), str(v))
    load = cl.chat(model="smollm2", messages=[])
    expect("ollama chat without messages loads the model and answers done", load.done and load.done_reason == "load",
           str(load))
    try:
        cl.embed(model="smollm2", input="hello")
        expect("ollama /api/embed on a chat model is refused", False)
    except ollama.ResponseError as e:
        expect("ollama /api/embed on a chat model is refused with 400", e.status_code == 400 and "embedding" in e.error,
               f"{e.status_code} {e.error}")
    try:
        cl.chat(model="smollm2", messages=[{"role": "user", "content": "hi"}], options={"num_ctx": 100000})
        expect("ollama num_ctx over the server's is refused", False)
    except ollama.ResponseError as e:
        expect("ollama num_ctx over the server's is refused, naming it", e.status_code == 400 and "num_ctx" in e.error,
               e.error)
    small = cl.chat(model="smollm2", messages=[{"role": "user", "content": QUESTION}], think=False,
                    options={"temperature": 0, "num_ctx": 40})
    expect("ollama num_ctx bounds prompt and reply", small.done_reason == "length" and
           small.prompt_eval_count + small.eval_count <= 40, str(small))


def conversation():
    """One conversation with a tool call and its result, in each API's shape."""
    openai_msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "Let me check.",
         "tool_calls": [{"id": "toolu_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"C\"}"}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "18 C, sunny"},
        {"role": "user", "content": "Thanks. And tomorrow?"},
    ]
    ollama_msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "Let me check.",
         "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}}]},
        {"role": "tool", "content": "18 C, sunny", "tool_name": "get_weather"},
        {"role": "user", "content": "Thanks. And tomorrow?"},
    ]
    anthropic_msgs = [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me check."},
                                          {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                           "input": {"city": "Paris", "unit": "C"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 C, sunny"},
                                     {"type": "text", "text": "Thanks. And tomorrow?"}]},
    ]
    return openai_msgs, ollama_msgs, anthropic_msgs


def check_same_prompt(port, oa, an):
    openai_msgs, ollama_msgs, anthropic_msgs = conversation()
    tool = {"type": "function", "function": WEATHER_TOOL}
    r = oa.chat.completions.create(model="x", messages=openai_msgs, tools=[tool], max_tokens=1, temperature=0,
                                   extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    # over HTTP as Ollama's API has it (the ollama client rewrites tools into its own model of a schema)
    st, o, _ = raw(port, "POST", "/api/chat", {"model": "m", "messages": ollama_msgs, "tools": [tool], "think": False,
                                               "stream": False, "options": {"num_predict": 1}})
    c = an.messages.count_tokens(model="smollm2", system="Be brief.", messages=anthropic_msgs,
                                 tools=[{"name": WEATHER_TOOL["name"], "description": WEATHER_TOOL["description"],
                                         "input_schema": WEATHER_TOOL["parameters"]}])
    expect("one conversation with a tool call gives one prompt in the three APIs",
           st == 200 and r.usage.prompt_tokens == o["prompt_eval_count"] == c.input_tokens and c.input_tokens > 100,
           f"openai {r.usage.prompt_tokens}, ollama {o}, anthropic {c.input_tokens}")


def check_anthropic(port, oa, an):
    import anthropic
    import jsonschema
    reference, _ = openai_text(oa, QUESTION)
    msgs = [{"role": "user", "content": QUESTION}]
    m = an.messages.create(model="smollm2", max_tokens=16, messages=msgs, extra_body=GREEDY)
    expect("anthropic message equals the openai chat (greedy, thinking off by default)",
           len(m.content) == 1 and m.content[0].type == "text" and m.content[0].text == reference,
           f"{m.content!r} vs {reference!r}")
    expect("anthropic message: id, stop_reason max_tokens, usage",
           m.id.startswith("msg_") and m.stop_reason == "max_tokens" and m.usage.output_tokens == 16 and
           m.usage.input_tokens > 0 and m.role == "assistant", str(m))
    events = []
    with an.messages.stream(model="smollm2", max_tokens=16, messages=msgs, extra_body=GREEDY) as s:
        for e in s:
            events.append(e.type)
        final = s.get_final_message()
    expect("anthropic stream assembles the same message", final.content[0].text == reference and
           final.stop_reason == "max_tokens" and final.usage.output_tokens == 16, str(final))
    expect("anthropic stream: message_start, content_block_start/delta/stop, message_delta, message_stop",
           events[0] == "message_start" and "content_block_start" in events and "content_block_stop" in events and
           events[-1] == "message_stop" and "message_delta" in events, str(events))
    st = an.messages.create(model="smollm2", max_tokens=16, messages=msgs, extra_body=GREEDY,
                            stop_sequences=[reference[3:6]])
    expect("anthropic stop_sequences: stop_reason stop_sequence and which",
           st.stop_reason == "stop_sequence" and st.stop_sequence == reference[3:6] and
           st.content[0].text == reference[:3], str(st))
    tool = {"name": WEATHER_TOOL["name"], "description": WEATHER_TOOL["description"],
            "input_schema": WEATHER_TOOL["parameters"]}
    weather = [{"role": "user", "content": "What's the weather in Paris?"}]
    t = an.messages.create(model="smollm2", max_tokens=60, messages=weather, extra_body=GREEDY, tools=[tool],
                           tool_choice={"type": "any"})
    uses = [b for b in t.content if b.type == "tool_use"]
    ok = len(uses) >= 1 and uses[0].name == "get_weather" and t.stop_reason == "tool_use"
    if ok:
        try:
            jsonschema.validate(uses[0].input, WEATHER_TOOL["parameters"])
        except Exception:  # noqa: BLE001
            ok = False
    expect("anthropic tool_choice any: a tool_use block whose input follows the schema", ok, str(t.content))
    with an.messages.stream(model="smollm2", max_tokens=60, messages=weather, extra_body=GREEDY, tools=[tool],
                            tool_choice={"type": "tool", "name": "get_weather"}) as s:
        streamed = s.get_final_message()
    su = [b for b in streamed.content if b.type == "tool_use"]
    expect("anthropic streamed tool_use (input_json_delta) assembles the same call",
           su and uses and su[0].input == uses[0].input and streamed.stop_reason == "tool_use", str(streamed.content))
    st, models, _ = raw(port, "GET", "/v1/models", headers={"anthropic-version": "2023-06-01"})
    expect("/v1/models in Anthropic's shape with anthropic-version", st == 200 and models.get("has_more") is False and
           models["data"][0]["type"] == "model", str(models))
    st, models, _ = raw(port, "GET", "/v1/models")
    expect("/v1/models in OpenAI's shape otherwise", st == 200 and models.get("object") == "list", str(models))
    try:
        anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="wrong").messages.create(
            model="smollm2", max_tokens=4, messages=msgs)
        expect("a wrong x-api-key is refused", False)
    except anthropic.AuthenticationError as e:
        expect("a wrong x-api-key is refused with Anthropic's authentication_error",
               e.status_code == 401 and e.body["error"]["type"] == "authentication_error", str(e.body))


def check_thinking(port):
    """The prompt opens <think> (QwQ's template), so what SmolLM2 writes is thinking."""
    import anthropic
    import ollama
    cl = ollama.Client(host=f"http://127.0.0.1:{port}", headers={"Authorization": "Bearer " + KEY})
    msgs = [{"role": "user", "content": QUESTION}]
    t = cl.chat(model="smollm2", messages=msgs, think=True, options={"temperature": 0, "num_predict": 24, "repeat_penalty": 1.0})
    expect("ollama think: true gives the thinking apart from the content",
           t.message.thinking and "<think>" not in t.message.thinking and not t.message.content, str(t.message))
    ts = list(cl.chat(model="smollm2", messages=msgs, think=True, options={"temperature": 0, "num_predict": 24, "repeat_penalty": 1.0},
                      stream=True))
    expect("ollama think streamed: the same thinking", "".join(p.message.thinking or "" for p in ts) ==
           t.message.thinking, str(ts[:3]))
    g = cl.generate(model="smollm2", prompt=QUESTION, think=True, options={"temperature": 0, "num_predict": 24, "repeat_penalty": 1.0})
    expect("ollama generate think: thinking apart", g.thinking == t.message.thinking and not g.response, str(g))
    an = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key=KEY)
    th = an.messages.create(model="smollm2", max_tokens=24, messages=msgs, extra_body=GREEDY,
                            thinking={"type": "enabled", "budget_tokens": 1024})
    expect("anthropic thinking enabled: a thinking block, the same thinking",
           th.content and th.content[0].type == "thinking" and th.content[0].thinking == t.message.thinking,
           str(th.content))
    with an.messages.stream(model="smollm2", max_tokens=24, messages=msgs, extra_body=GREEDY,
                            thinking={"type": "adaptive"}) as s:
        ths = s.get_final_message()
    expect("anthropic thinking streamed (thinking_delta) assembles the same",
           ths.content and ths.content[0].type == "thinking" and ths.content[0].thinking == th.content[0].thinking,
           str(ths.content))
    hidden = an.messages.create(model="smollm2", max_tokens=24, messages=msgs, extra_body=GREEDY,
                                thinking={"type": "adaptive", "display": "omitted"})
    expect("anthropic thinking display omitted: no thinking text", all(b.type != "thinking" for b in hidden.content),
           str(hidden.content))


def check_bad_input(port, oa):
    good_ollama = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False}
    ollama_bad = [
        b"not json", b"[1,2]", b"\xff\xfe", {"messages": [{"role": "user", "content": "hi"}]},
        {"model": 3, "messages": []}, {"model": "m", "messages": "hi"},
        {"model": "m", "messages": [{"role": "robot", "content": "hi"}]},
        {"model": "m", "messages": [{"role": "user", "content": 5}]},
        dict(good_ollama, options={"temperature": "hot"}), dict(good_ollama, options={"top_k": -3}),
        dict(good_ollama, options={"num_predict": 0}), dict(good_ollama, options={"mirostat": 2}),
        dict(good_ollama, options={"no_such_option": 1}), dict(good_ollama, options=[1]),
        dict(good_ollama, format="yaml"), dict(good_ollama, format={"type": "string", "pattern": "a+"}),
        dict(good_ollama, think="very"), dict(good_ollama, keep_alive="5 minutes"), dict(good_ollama, stream="no"),
        dict(good_ollama, tools=[{"type": "function", "function": {"name": "bad name!"}}]),
        {"model": "m", "messages": [{"role": "user", "content": "hi", "images": ["aGk="]}]},
        dict(good_ollama, options={"stop": [""]}), dict(good_ollama, logprobs=True, top_logprobs=99),
    ]
    for i, body in enumerate(ollama_bad):
        st, r, _ = raw(port, "POST", "/api/chat", body)
        expect(f"ollama bad request {i} gets 400 {{\"error\": text}}", st == 400 and isinstance(r, dict) and
               isinstance(r.get("error"), str) and set(r) == {"error"}, f"{st} {r}")
    gen_bad = [{"model": "m", "prompt": 5}, {"model": "m", "prompt": "x", "suffix": "y"},
               {"model": "m", "prompt": "x", "template": "{{ .Prompt }}"}, {"model": "m", "prompt": "x", "context": [1]},
               {"model": "m", "prompt": "x", "images": ["aGk="]}, {"model": "m", "prompt": "x", "raw": "yes"}]
    for i, body in enumerate(gen_bad):
        st, r, _ = raw(port, "POST", "/api/generate", body)
        expect(f"ollama bad generate {i} gets 400", st == 400 and isinstance(r.get("error"), str), f"{st} {r}")
    st, r, _ = raw(port, "POST", "/api/embed", {"model": "m", "input": [1.5]})
    expect("ollama bad embed input gets 400", st == 400 and "input" in r.get("error", ""), f"{st} {r}")
    st, r, _ = raw(port, "POST", "/api/embed", {"model": "m", "input": "x", "options": {"temperature": 0.5}})
    expect("ollama embed with a sampling option gets 400", st == 400 and "options.temperature" in r.get("error", ""),
           f"{st} {r}")
    st, r, _ = raw(port, "GET", "/api/nothing")
    expect("an unknown /api/ path gets 404 in Ollama's shape", st == 404 and set(r) == {"error"}, f"{st} {r}")
    st, r, _ = raw(port, "GET", "/api/chat")
    expect("GET /api/chat gets 405 in Ollama's shape", st == 405 and set(r) == {"error"}, f"{st} {r}")

    good = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    anthropic_bad = [
        b"{", b"\"text\"", {"max_tokens": 8, "messages": good["messages"]}, {"model": "m", "messages": good["messages"]},
        dict(good, max_tokens=0), dict(good, max_tokens="8"), dict(good, messages=[]), dict(good, messages="hi"),
        dict(good, messages=[{"role": "system", "content": "x"}]),
        dict(good, messages=[{"role": "user", "content": [{"type": "image", "source": {}}]}]),
        dict(good, messages=[{"role": "user", "content": [{"type": "text"}]}]),
        dict(good, messages=[{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}]),
        dict(good, messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": "prefill"}]),
        dict(good, temperature=1.5), dict(good, top_p=0), dict(good, stop_sequences="x"),
        dict(good, stop_sequences=[""]), dict(good, thinking={"type": "sometimes"}),
        dict(good, tools=[{"name": "f"}]), dict(good, tools=[{"type": "web_search_20250305", "name": "web_search"}]),
        dict(good, tool_choice={"type": "tool"}), dict(good, tool_choice="auto"), dict(good, system=5),
        dict(good, tools=[{"name": "f", "input_schema": {"type": "object"}}], tool_choice={"type": "tool", "name": "g"}),
        dict(good, metadata="x"), dict(good, mcp_servers=[{"type": "url", "url": "http://x", "name": "x"}]),
        dict(good, output_config={"format": {"type": "json_object"}}), dict(good, output_config={"effort": "extreme"}),
    ]
    for i, body in enumerate(anthropic_bad):
        st, r, _ = raw(port, "POST", "/v1/messages", body, headers={"anthropic-version": "2023-06-01"})
        expect(f"anthropic bad request {i} gets 400 in Anthropic's error shape",
               st == 400 and isinstance(r, dict) and r.get("type") == "error" and
               r.get("error", {}).get("type") == "invalid_request_error" and r["error"].get("message"), f"{st} {r}")
    st, r, _ = raw(port, "POST", "/v1/messages", good, headers={"Authorization": "", "x-api-key": "nope"})
    expect("anthropic: a wrong key gets 401 authentication_error", st == 401 and
           r.get("error", {}).get("type") == "authentication_error", f"{st} {r}")
    big = dict(good, messages=[{"role": "user", "content": "word " * 3000}])
    st, r, _ = raw(port, "POST", "/v1/messages", big)
    expect("anthropic: a prompt past the context gets 400", st == 400 and r.get("type") == "error", f"{st} {r}")
    again, _ = openai_text(oa, QUESTION)
    reference, _ = openai_text(oa, QUESTION)
    expect("the server answers the same after the bad requests", again == reference)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--templates-dir", required=True, help="holds Qwen-Qwen3-0.6B.jinja and Qwen-QwQ-32B.jinja")
    a = ap.parse_args()
    import anthropic
    import openai
    srv = Server(a.brasa, a.model, "--parallel", "2", "--ctx", "2048", "--api-key", KEY,
                 "--chat-template-file", os.path.join(a.templates_dir, "Qwen-Qwen3-0.6B.jinja"))
    try:
        expect("server starts", srv.port is not None, srv.stderr())
        if srv.port is None:
            return CHECKS.finish()
        oa = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key=KEY)
        an = anthropic.Anthropic(base_url=f"http://127.0.0.1:{srv.port}", api_key=KEY)
        check_ollama(srv.port, oa)
        check_same_prompt(srv.port, oa, an)
        check_anthropic(srv.port, oa, an)
        check_bad_input(srv.port, oa)
        expect("server exits 0 on SIGTERM", srv.stop() == 0, srv.stderr()[-2000:])
        expect("no sanitizer report", "ERROR: AddressSanitizer" not in srv.stderr() and
               "runtime error:" not in srv.stderr(), srv.stderr()[-3000:])
    finally:
        srv.stop()
    thinker = Server(a.brasa, a.model, "--parallel", "1", "--ctx", "1024", "--api-key", KEY,
                     "--chat-template-file", os.path.join(a.templates_dir, "Qwen-QwQ-32B.jinja"))
    try:
        expect("the thinking server starts", thinker.port is not None, thinker.stderr())
        if thinker.port is not None:
            check_thinking(thinker.port)
        expect("the thinking server exits 0", thinker.stop() == 0, thinker.stderr()[-2000:])
    finally:
        thinker.stop()
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
