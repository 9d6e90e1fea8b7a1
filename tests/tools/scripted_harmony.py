"""scripted_harmony.py: tiny GGUF files that reply in gpt-oss's harmony format, for the tests of how
brasa shows and stops such replies: scripted_qwen3.make's chain-following weights on SmolLM2's
tokenizer plus harmony's control tokens (<|start|>, <|channel|>, <|message|>, <|end|>, <|return|>,
<|call|>, <|constrain|>), with <|return|> the end of text and <|end|> named the end of turn, as a
file may; "assistant" is a user-defined token, as in the o200k vocabulary it is one token.

The weights follow a chain of distinct tokens, but a harmony reply repeats <|channel|>, <|message|>
and "assistant" (each message has a header), so each of those is in the vocabulary twice, the
second copy used for the second message: both decode to the same text.

The reply to a prompt ending in "<|start|>assistant" (the template's generation prompt):
  ANSWER: <|channel|>analysis<|message|>plan<|end|><|start|>assistant<|channel|>final<|message|>Answer<|return|>
  CALL:   ...plan<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json
          <|message|>{"city":"Paris"}<|call|>
Generation must go past <|end|> and stop at <|return|> or <|call|>.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scripted_qwen3  # noqa: E402

CONTROL = 3
REASONING_TEXT, ANSWER_TEXT = "plan", "Answer"
CALL_NAME, CALL_ARGUMENTS = "get_weather", '{"city":"Paris"}'

# harmony's markers, then the second copies
ADDED = [("<|start|>", CONTROL), ("<|channel|>", CONTROL), ("<|message|>", CONTROL), ("<|end|>", CONTROL),
         ("<|return|>", CONTROL), ("<|call|>", CONTROL), ("<|constrain|>", CONTROL),
         ("assistant", scripted_qwen3.USER_DEFINED),
         ("<|channel|>", CONTROL), ("<|message|>", CONTROL), ("assistant", scripted_qwen3.USER_DEFINED)]

# A minimal template in harmony's shape (the calls' <|call|> is what marks the format): past answers
# as final messages, past calls as commentary messages to functions.NAME.
TEMPLATE = """{%- for message in messages %}
{%- if message.role == 'assistant' and message.tool_calls %}{%- for tc in message.tool_calls %}{{- '<|start|>assistant<|channel|>commentary to=functions.' + tc.function.name + ' <|constrain|>json<|message|>' + (tc.function.arguments | tojson) + '<|call|>' }}{%- endfor %}
{%- elif message.role == 'assistant' %}{{- '<|start|>assistant<|channel|>final<|message|>' + message.content + '<|end|>' }}
{%- else %}{{- '<|start|>' + message.role + '<|message|>' + message.content + '<|end|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start|>assistant' }}{%- endif %}
"""


def _byte_decoder():
    """GPT-2's printable code point of each byte, inverted: how byte-level token texts read."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def _spell(text, by_bytes, used):
    """Ids of base tokens whose bytes make text, longest first, none of them in used (which grows)."""
    data, ids, at = text.encode("utf-8"), [], 0
    while at < len(data):
        for end in range(len(data), at, -1):
            t = by_bytes.get(data[at:end])
            if t is not None and t not in used:
                ids.append(t)
                used.add(t)
                at = end
                break
        else:
            raise ValueError(f"no unused token spells {data[at:]!r}")
    return ids


def make(base, out, kind):
    """Writes OUT, whose reply is the ANSWER or the CALL one (kind "answer" or "call")."""
    tokens = scripted_qwen3.base_tokens(base)
    n = len(tokens)
    (start, channel, message, end, ret, call, constrain, assistant, channel2, message2,
     assistant2) = range(n, n + len(ADDED))
    decode = _byte_decoder()
    by_bytes = {}
    for i, t in enumerate(tokens):
        try:
            by_bytes.setdefault(bytes(decode[c] for c in t), i)
        except KeyError:
            pass  # a control token's text, not byte-level
    used = set()
    words = lambda s: _spell(s, by_bytes, used)  # noqa: E731
    chain = [assistant, channel, *words("analysis"), message, *words(REASONING_TEXT), end, start, assistant2, channel2]
    if kind == "answer":
        chain += [*words("final"), message2, *words(ANSWER_TEXT), ret]
    else:
        chain += [*words(f"commentary to=functions.{CALL_NAME} "), constrain, *words("json"), message2,
                  *words(CALL_ARGUMENTS), call]
    return scripted_qwen3.make(base, out, TEMPLATE, chain, added=ADDED,
                               special_ids={"eos_token_id": ret, "eot_token_id": end})
