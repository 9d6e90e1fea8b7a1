#!/usr/bin/env python3
"""`brasa template` prints exactly the prompt a chat template renders, byte for byte what Python
jinja2 (configured as transformers configures it) renders from the same messages and tools:
the real models' own templates (SmolLM2, Qwen2.5-Coder: tools, tool calls with their arguments as a
JSON string, tool results), a template given with --chat-template-file (Qwen3's, with reasoning,
and enable_thinking false through --no-think), without the generation prompt, and --kwargs.
Nothing is added: no final newline. Bad input is a clear error with exit status 1: messages that
are not JSON, a template that does not parse (the line named), raise_exception's message, tools
given to a file without a template (Gemma 3's: the built-in format renders it); usage errors exit 2.

Usage: test_template_command.py --brasa PATH --model GGUF [--model GGUF ...] [--qwen3-template FILE]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import jinja2
import jinja2.ext
import jinja2.sandbox
from gguf import GGUFReader

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

CHECKS = Checks("brasa template")
expect = CHECKS.expect

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                           "parameters": {"type": "object", "properties": {
                                               "city": {"type": "string"}, "days": {"type": "integer"}},
                                               "required": ["city"]}}}]
CALL_ARGS = '{"city": "São Paulo", "days": 2}'
CONVERSATIONS = {
    "plain": [{"role": "user", "content": "Hello there"}],
    "system": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|im_start|> ünïcödé"},
               {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "And again?"}],
    "tools": [{"role": "user", "content": "Weather in São Paulo?"},
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": CALL_ARGS}}]},
              {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 25}"}],
}


def reference_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env


def as_transformers_passes(messages):
    """Tool-call arguments decoded from their JSON string, as brasa hands them to templates."""
    out = json.loads(json.dumps(messages))
    for m in out:
        for c in m.get("tool_calls") or []:
            if isinstance(c["function"].get("arguments"), str):
                c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    return out


def special_tokens(path):
    r = GGUFReader(path)

    def field(name):
        f = r.fields.get(name)
        return None if f is None else f.parts[f.data[0]]

    tokens = r.fields["tokenizer.ggml.tokens"]
    template = field("tokenizer.chat_template")

    def token(key):
        ids = r.fields.get(key)
        if ids is None:
            return None
        i = int(ids.parts[ids.data[0]][0])
        return bytes(tokens.parts[tokens.data[i]]).decode("utf-8")

    return (bytes(template).decode("utf-8") if template is not None else None,
            token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id"))


def brasa(args, *extra):
    p = subprocess.run([args.brasa, "template", *extra], capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def compare(args, work, name, model, template, bos, eos, messages, tools=None, gen=True, kwargs=None,
            template_file=None):
    ctx = {"messages": as_transformers_passes(messages), "add_generation_prompt": gen, "bos_token": bos,
           "eos_token": eos}
    if tools:
        ctx["tools"] = tools
    ctx.update(kwargs or {})
    try:
        want = reference_env().from_string(template).render(**ctx).encode("utf-8")
    except Exception as e:  # noqa: BLE001 - whatever jinja2 raises, brasa must fail too
        want = e
    mpath = os.path.join(work, "messages.json")
    with open(mpath, "w", encoding="utf-8") as f:
        json.dump(messages, f, ensure_ascii=False)
    extra = [model, "--messages", mpath]
    if tools:
        tpath = os.path.join(work, "tools.json")
        with open(tpath, "w", encoding="utf-8") as f:
            json.dump(tools, f)
        extra += ["--tools", tpath]
    if not gen:
        extra.append("--no-generation-prompt")
    if kwargs:
        extra += ["--kwargs", json.dumps(kwargs)]
    if template_file:
        extra += ["--chat-template-file", template_file]
    rc, out, err = brasa(args, *extra)
    if isinstance(want, Exception):
        said = not isinstance(want, jinja2.exceptions.TemplateError) or str(want) in err
        expect(f"{name}: the template's error is an error", rc == 1 and said and not out, f"{rc} {err}")
    else:
        expect(f"{name}: byte-identical to jinja2", rc == 0 and out == want, f"rc {rc} {err}\n{out!r}\nvs\n{want!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--qwen3-template")
    args = ap.parse_args()
    for m in args.model:
        if not os.path.exists(m):
            print(f"skipped: model missing: {m} (run scripts/fetch_models.py)")
            return 77
    with tempfile.TemporaryDirectory(prefix="brasa-template-") as work:
        with_template = None
        for model in args.model:
            template, bos, eos = special_tokens(model)
            base = os.path.basename(model)
            if template is None:
                # a file without a template: the built-in format, which has no tools
                mpath = os.path.join(work, "m.json")
                with open(mpath, "w") as f:
                    json.dump(CONVERSATIONS["plain"], f)
                tpath = os.path.join(work, "t.json")
                with open(tpath, "w") as f:
                    json.dump(TOOLS, f)
                rc, out, err = brasa(args, model, "--messages", mpath)
                expect(f"{base} (no template): the built-in format renders", rc == 0 and b"Hello there" in out, err)
                rc, out, err = brasa(args, model, "--messages", mpath, "--tools", tpath)
                expect(f"{base} (no template): tools are an error naming why", rc == 1 and "tools" in err, err)
                continue
            with_template = with_template or (model, bos, eos)
            supports_tools = "tools" in template
            for cname, msgs in CONVERSATIONS.items():
                if cname == "tools" and not supports_tools:
                    continue
                compare(args, work, f"{base} {cname}", model, template, bos, eos, msgs,
                        tools=TOOLS if cname == "tools" else None)
                compare(args, work, f"{base} {cname}, no generation prompt", model, template, bos, eos, msgs,
                        gen=False, tools=TOOLS if cname == "tools" else None)
            compare(args, work, f"{base} kwargs", model, template, bos, eos, CONVERSATIONS["plain"],
                    kwargs={"custom_flag": True})

        if with_template and args.qwen3_template and os.path.exists(args.qwen3_template):
            model, bos, eos = with_template
            with open(args.qwen3_template, encoding="utf-8") as f:
                q3 = f.read()
            for cname, msgs in CONVERSATIONS.items():
                compare(args, work, f"--chat-template-file Qwen3 {cname}", model, q3, bos, eos, msgs,
                        tools=TOOLS if cname == "tools" else None, template_file=args.qwen3_template)
            compare(args, work, "--chat-template-file Qwen3, thinking off", model, q3, bos, eos,
                    CONVERSATIONS["plain"], kwargs={"enable_thinking": False}, template_file=args.qwen3_template)

        if with_template:
            model = with_template[0]
            mpath = os.path.join(work, "m.json")
            with open(mpath, "w") as f:
                json.dump(CONVERSATIONS["plain"], f)
            bad = os.path.join(work, "bad.json")
            with open(bad, "w") as f:
                f.write('[{"role": "user", "content": "x"}')
            rc, out, err = brasa(args, model, "--messages", bad)
            expect("messages that are not JSON: exit 1 with the place", rc == 1 and "line 1" in err and not out, err)
            broken = os.path.join(work, "broken.jinja")
            with open(broken, "w") as f:
                f.write("{% for m in messages %}\n{{ m.content }}\n{% endif %}\n")
            rc, out, err = brasa(args, model, "--messages", mpath, "--chat-template-file", broken)
            expect("a template that does not parse: exit 1 naming the line", rc == 1 and "line 3" in err, err)
            raising = os.path.join(work, "raise.jinja")
            with open(raising, "w") as f:
                f.write("{{ raise_exception('Only user turns, please') }}")
            rc, out, err = brasa(args, model, "--messages", mpath, "--chat-template-file", raising)
            expect("raise_exception: exit 1 with its message", rc == 1 and "Only user turns, please" in err, err)
            nl = os.path.join(work, "nl.jinja")
            with open(nl, "w") as f:
                f.write("{{ messages[0].content }}\n")
            rc, out, err = brasa(args, model, "--messages", mpath, "--chat-template-file", nl)
            expect("nothing added (the template's single final newline is dropped, as jinja2 does)",
                   rc == 0 and out == b"Hello there", repr(out))
            # run and chat take the same file (the error proves they render with it)
            for cmd in (["run", "-m", model, "-p", "Hi", "--chat", "-n", "1"], ["chat", "-m", model, "-n", "1"]):
                p = subprocess.run([args.brasa, *cmd, "--chat-template-file", raising], input=b"Hi\n",
                                   capture_output=True, timeout=120)
                err_text = p.stderr.decode("utf-8", "replace")
                expect(f"{cmd[0]} --chat-template-file: the file's template renders the chat",
                       p.returncode == 1 and "Only user turns, please" in err_text, err_text[-300:])
            p = subprocess.run([args.brasa, "run", "-m", model, "-p", "Hi", "--chat", "-n", "1",
                                "--chat-template-file", os.path.join(work, "missing.jinja")], capture_output=True,
                               timeout=120)
            expect("run --chat-template-file with no such file: exit 1 naming it", p.returncode == 1 and
                   b"missing.jinja" in p.stderr, p.stderr[-300:])
            rc, out, err = brasa(args, model)
            expect("no --messages: a usage error", rc == 2 and "--messages" in err, err)
            rc, out, err = brasa(args, model, "--messages", mpath, "--frobnicate", "1")
            expect("an unknown option: a usage error", rc == 2 and "frobnicate" in err, err)
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
