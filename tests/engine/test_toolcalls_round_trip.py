#!/usr/bin/env python3
"""Tool calls read back what the real chat templates render.

A chat template renders an assistant turn's past tool calls exactly as the model writes them, so
the text it renders for a turn is what the model generates for it. For each template of the
corpus (the models/templates directory of the llama-cpp-python sdist, which vendors llama.cpp's
collection of real templates) whose format brasa reads: jinja2, set up as Hugging Face transformers
sets it up for apply_chat_template, renders a conversation [system?, user, assistant with
tool_calls]; the assistant turn as the model would generate it is that rendering minus the
rendering of the history with add_generation_prompt, without the end-of-turn marker (the server
stops on it). tests/engine/toolcall_parse (engine/toolcall.h, in many chunkings) must read back
exactly the calls given (names, and arguments equal as JSON) and no other content. A reasoning
block (<think> ... </think>) that a template renders before the calls is taken off first, as
src/engine/reasoning.c does in the server. Harmony (gpt-oss) also: analysis text must come out as
reasoning and the final text as content. toolcall_detect must give each corpus template its
format, and "none" to templates without tools or with a call syntax brasa does not read.

Where a template cannot render what the model writes, the family is also tested with hand-written
text in the syntax of the family's public docs: Llama 3.x templates raise on two calls in a turn
and gpt-oss's renders only the first ("We assume max 1 tool call per message"), though the models
may write several (Llama 3.2 separated by ';').

Usage: test_toolcalls_round_trip.py --toolcall-parse PATH --templates DIR
Exits 77 (skipped) when DIR is missing: scripts/fetch_models.py caches it.
"""
import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

try:
    import jinja2
    import jinja2.ext
    import jinja2.sandbox
except ImportError:
    print("test_toolcalls_round_trip: needs jinja2 (pip install -r tests/requirements.txt)")
    sys.exit(77)

# The format toolcall_detect must give each corpus template; every other template: "none".
EXPECTED_FORMAT = {
    "Qwen-Qwen2.5-7B-Instruct": "hermes",
    "Qwen-Qwen3-0.6B": "hermes",
    "Qwen-QwQ-32B": "hermes",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": "hermes",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": "hermes",
    "Bielik-11B-v3.0-Instruct": "hermes",
    "MiMo-VL": "hermes",
    "Reka-Edge": "hermes",
    "ibm-granite-granite-4.0": "hermes",
    "ibm-granite-granite-4.1": "hermes",
    "meta-llama-Llama-3.1-8B-Instruct": "llama3",
    "meta-llama-Llama-3.2-3B-Instruct": "llama3",
    "meta-llama-Llama-3.3-70B-Instruct": "llama3",
    "mistralai-Mistral-Nemo-Instruct-2407": "mistral",
    "Mistral-Small-3.2-24B-Instruct-2506": "mistral-args",
    "unsloth-mistral-Devstral-Small-2507": "mistral-args",
    "mistralai-Ministral-3-14B-Reasoning-2512": "mistral-args",
    "openai-gpt-oss-120b": "harmony",
    "Qwen3-Coder": "qwen3-coder",
    "Qwen3.5-4B": "qwen3-coder",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": "qwen3-coder",
    "StepFun3.5-Flash": "qwen3-coder",
    "GLM-4.6": "glm",
    "GLM-4.7-Flash": "glm",
    "Spark2.5": "glm",
    "inclusionai-ling-3.0-flash": "glm",
    "poolside-Laguna-S-2.1": "glm",
    "poolside-Laguna-XS-2.1": "glm",
    "poolside-Laguna-XS.2": "glm",
}
# Templates that must be in the corpus and must round-trip (the brief's families).
REQUIRED = ["Qwen-Qwen2.5-7B-Instruct", "Qwen-Qwen3-0.6B", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
            "meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.2-3B-Instruct",
            "meta-llama-Llama-3.3-70B-Instruct", "mistralai-Mistral-Nemo-Instruct-2407",
            "Mistral-Small-3.2-24B-Instruct-2506", "unsloth-mistral-Devstral-Small-2507", "openai-gpt-oss-120b",
            "Qwen3-Coder", "GLM-4.6", "GLM-4.7-Flash"]
NO_TOOLS = ["google-gemma-2-2b-it", "microsoft-Phi-3.5-mini-instruct"]
# Templates that render one call per assistant turn (see the docstring).
ONE_CALL_ONLY = {"meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.2-3B-Instruct",
                 "meta-llama-Llama-3.3-70B-Instruct", "openai-gpt-oss-120b"}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "set_options", "description": "Sets options.",
        "parameters": {"type": "object", "properties": {
            "options": {"type": "object"},
            "flags": {"type": "array", "items": {"type": "string"}},
            "verbose": {"type": "boolean"},
            "ratio": {"type": "number"},
            "note": {"type": "string"}}}}},
]
CALL_WEATHER = ("get_weather", {"city": "São Paulo \"Centro\"", "days": 3, "unit": "celsius"})
CALL_OPTIONS = ("set_options", {"options": {"nested": {"deep": [1, 2.5, "x"]}, "emoji": "🌧️ ü"},
                                "flags": ["a", "b c"], "verbose": True, "ratio": 0.75,
                                "note": "line one\nline 'two' {not json}"})

END_MARKERS = ["<|im_end|>", "<|eot_id|>", "<|eom_id|>", "</s>", "<|return|>", "<|call|>", "<|end|>",
               "<|endoftext|>", "<|end_of_text|>", "<|user|>", "<|observation|>", "<sep>", "<|role_end|>",
               "<｜end▁of▁sentence｜>", "</assistant>"]


class GenerationTag(jinja2.ext.Extension):
    """{% generation %}: transformers marks the assistant's tokens with it; it renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    """jinja2 as transformers' apply_chat_template sets it up."""
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols, GenerationTag])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env


def render(template, messages, add_generation_prompt):
    return template.render(messages=messages, tools=TOOLS, add_generation_prompt=add_generation_prompt,
                           bos_token="<s>", eos_token="</s>")


def assistant_turn(template, history, assistant):
    """The text the model generates for `assistant` after `history`, or raises ValueError."""
    prompt = render(template, history, True)
    full = render(template, history + [assistant], False)
    cut = len(prompt)
    if not full.startswith(prompt):
        # The generation prompt opens a reasoning block that the history rendering writes closed or
        # leaves out (GLM 4.7: "<think>" against "</think>"; QwQ's "<think>\n</think>" against no
        # block): the model's text goes on from where the block opens.
        cut = prompt.rfind("<think>")
        if cut < 0 or len(prompt) - cut > 24 or not full.startswith(prompt[:cut]):
            raise ValueError("the rendering does not continue the prompt: "
                             f"{prompt[len(os.path.commonprefix([prompt, full])):][:80]!r}")
    reply = full[cut:]
    changed = True
    while changed:
        changed = False
        for marker in END_MARKERS:
            stripped = reply.rstrip("\n")
            if stripped.endswith(marker):
                reply = stripped[: -len(marker)]
                changed = True
    return reply


def strip_reasoning(reply):
    """What src/engine/reasoning.c leaves as the answer: after the first </think>, spaces dropped."""
    at = reply.find("</think>")
    if at >= 0 and "<tool_call>" not in reply[:at]:
        return reply[at + len("</think>"):].lstrip()
    return reply


def tool_call(name, args, i):
    return {"id": f"call{i:05d}", "type": "function", "function": {"name": name, "arguments": args}}


def parse(exe, fmt, reply):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(TOOLS, f)
        tools_path = f.name
    try:
        r = subprocess.run([exe, "parse", fmt, "--tools", tools_path, "--chunkings", "12"],
                           input=reply.encode("utf-8", "surrogateescape"), capture_output=True, timeout=60)
    finally:
        os.unlink(tools_path)
    events = [json.loads(line) for line in r.stdout.decode("utf-8", "surrogateescape").splitlines() if line.strip()]
    return r.returncode, r.stderr.decode(), events


def check_calls(checks, label, exe, fmt, reply, calls, content="", reasoning=None):
    rc, err, events = parse(exe, fmt, reply)
    if not checks.expect(f"{label}: driver checks", rc == 0, f"rc {rc}: {err.strip()} reply {reply!r}"):
        return
    got = [(e["name"], json.loads(e["arguments"])) for e in events if e["kind"] == "call"]
    text = "".join(e["text"] for e in events if e["kind"] == "content")
    thought = "".join(e["text"] for e in events if e["kind"] == "reasoning")
    checks.expect(f"{label}: calls", got == [(n, a) for n, a in calls], f"got {got} from {reply!r}")
    checks.expect(f"{label}: content", text.strip() == content, f"content {text!r} from {reply!r}")
    if reasoning is not None:
        checks.expect(f"{label}: reasoning", thought.strip() == reasoning, f"reasoning {thought!r} from {reply!r}")


def round_trip(checks, exe, name, template, fmt):
    user = {"role": "user", "content": "What's the weather in São Paulo? Then set my options."}
    histories = [[{"role": "system", "content": "You are a helpful assistant."}, user], [user]]
    cases = [("one call", [CALL_WEATHER], ""), ("two calls", [CALL_WEATHER, CALL_OPTIONS], "")]
    if name in ONE_CALL_ONLY:
        cases = cases[:1] + [("one call with objects", [CALL_OPTIONS], "")]
    if fmt == "hermes":
        cases.append(("content then a call", [CALL_OPTIONS], "Let me check."))
    for case, calls, content in cases:
        assistant = {"role": "assistant", "content": content,
                     "tool_calls": [tool_call(n, a, i) for i, (n, a) in enumerate(calls)]}
        reply, problem = None, None
        for history in histories:
            # (Mistral Nemo puts the system message into the last user turn, so the prompt then
            # differs from the history; without one it does not)
            try:
                reply = strip_reasoning(assistant_turn(template, history, assistant))
                break
            except (jinja2.exceptions.TemplateError, ValueError, TypeError) as e:
                problem = str(e)
        if not checks.expect(f"{name} {case}: renders", reply is not None, problem):
            continue
        # (Hermes 2 Pro and 3 render only the calls of a turn that has both)
        check_calls(checks, f"{name} {case}", exe, fmt, reply, calls, content if content in reply else "")
    if fmt == "harmony":
        thinking = "The user wants the weather; call get_weather."
        assistant = {"role": "assistant", "thinking": thinking, "tool_calls": [tool_call(*CALL_WEATHER, 0)]}
        reply = assistant_turn(template, histories[0], assistant)
        check_calls(checks, f"{name} analysis then a call", exe, fmt, reply, [CALL_WEATHER], "", thinking)
        final = {"role": "assistant", "thinking": "Easy: answer.", "content": "It is sunny, 25 °C."}
        reply = assistant_turn(template, histories[0], final)
        check_calls(checks, f"{name} analysis then final", exe, fmt, reply, [], "It is sunny, 25 °C.",
                    "Easy: answer.")


def args_json(args):
    return json.dumps(args, ensure_ascii=False)


def hand_written(checks, exe):
    """Model-style text in the families' documented syntax, where templates cannot render it."""
    w, o = CALL_WEATHER, CALL_OPTIONS
    cases = [
        ("llama3 two calls with ';'", "llama3",
         '{"name": "%s", "parameters": %s}; {"name": "%s", "parameters": %s}' % (w[0], args_json(w[1]), o[0],
                                                                                  args_json(o[1])), [w, o], ""),
        ("llama3 after <|python_tag|>", "llama3",
         '<|python_tag|>{"name": "%s", "arguments": %s}' % (w[0], args_json(w[1])), [w], ""),
        ("llama3 a JSON answer is content", "llama3", '{"city": "Paris"}', [], '{"city": "Paris"}'),
        ("harmony two calls, recipient after the channel", "harmony",
         '<|channel|>commentary to=functions.%s <|constrain|>json<|message|>%s<|call|>'
         '<|start|>assistant<|channel|>commentary to=functions.%s <|constrain|>json<|message|>%s<|call|>'
         % (w[0], args_json(w[1]), o[0], args_json(o[1])), [w, o], ""),
        ("mistral list without ids", "mistral",
         '[TOOL_CALLS][{"name": "%s", "arguments": %s}]' % (w[0], args_json(w[1])), [w], ""),
        ("hermes invalid JSON stays content", "hermes",
         'a <tool_call>\n{"name": "f", "arguments": {</tool_call> b', [], 'a <tool_call>\n{"name": "f", "arguments": {</tool_call> b'),
        ("qwen3-coder without the wrapper", "qwen3-coder",
         '<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>', [("get_weather", {"city": "Paris"})], ""),
    ]
    for label, fmt, reply, calls, content in cases:
        check_calls(checks, label, exe, fmt, reply, calls, content)
    # Hostile text: the driver itself checks that no byte is lost and every chunking agrees.
    huge = '{"name": "f", "arguments": {"s": "%s"}}' % ("x\\\"" * 200000)
    hostile = [("hermes", "<tool_call>\n{\"name\": \"f\", \"argu"), ("hermes", "<tool_call>" + huge[:-1]),
               ("hermes", "<tool_call>" + huge + "</tool_call>"), ("llama3", huge), ("llama3", "{" * 5000),
               ("mistral", "[TOOL_CALLS][" + "[" * 300 + "]" * 300 + "]"), ("mistral-args", "[TOOL_CALLS]f[ARGS]{\"a\":"),
               ("harmony", "<|channel|>commentary to=functions.f json<|message|>{bad<|call|>after"),
               ("harmony", "plain text <|end|> and <|start|>"), ("glm", "<tool_call>f<arg_key>k</arg_key>"),
               ("qwen3-coder", "a <tool_call>\n<function=f>\n<parameter=x>\n1"),
               ("hermes", "text <tool_call> in the middle </tool_call> of text")]
    rng = random.Random(7)
    for fmt in ["hermes", "llama3", "mistral", "mistral-args", "harmony", "qwen3-coder", "glm"]:
        hostile.append((fmt, bytes(rng.randrange(256) for _ in range(3000)).decode("utf-8", "surrogateescape")))
    for fmt, reply in hostile:
        rc, err, _ = parse(exe, fmt, reply)
        checks.expect(f"hostile {fmt} {reply[:40]!r}: driver checks", rc == 0, err.strip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolcall-parse", required=True)
    ap.add_argument("--templates", required=True)
    args = ap.parse_args()
    if not os.path.isdir(args.templates):
        print(f"test_toolcalls_round_trip: no templates at {args.templates} (scripts/fetch_models.py caches them)")
        return 77
    checks = Checks("test_tool_calls_read_back_what_templates_render")
    env = make_env()
    names = sorted(f[:-len(".jinja")] for f in os.listdir(args.templates) if f.endswith(".jinja"))
    for required in REQUIRED + NO_TOOLS:
        checks.expect(f"{required}: in the corpus", required in names)
    paths = [os.path.join(args.templates, n + ".jinja") for n in names]
    out = subprocess.run([args.toolcall_parse, "detect"] + paths, capture_output=True, text=True, check=True).stdout
    detected = {os.path.basename(p)[:-len(".jinja")]: f for f, p in (line.split("\t", 1) for line in out.splitlines())}
    for n in names:
        checks.expect(f"{n}: detected", detected.get(n) == EXPECTED_FORMAT.get(n, "none"),
                      f"detected {detected.get(n)}, expected {EXPECTED_FORMAT.get(n, 'none')}")
    for n in names:
        if n in EXPECTED_FORMAT:
            with open(os.path.join(args.templates, n + ".jinja"), encoding="utf-8") as f:
                template = env.from_string(f.read())
            round_trip(checks, args.toolcall_parse, n, template, EXPECTED_FORMAT[n])
    hand_written(checks, args.toolcall_parse)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
