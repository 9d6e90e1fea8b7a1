"""scripted_qwen3.py: tiny qwen3 GGUF files for the chat and server tests of reasoning, made with the
gguf package from SmolLM2's tokenizer (its vocabulary, merges and ChatML markers) plus Qwen3's two
reasoning tokens, <think> and </think>, added as user-defined tokens as in Qwen3's own files.

make(..., chain=None) writes only the vocabulary and a chat template (for rendering tests). With a
chain of token texts, it also writes weights for a model that, greedy or sampled, follows the chain:
after chain[i] it says chain[i + 1]. Every layer's output projections are zero, so the residual
stream is the last token's embedding; the chain's tokens have one-hot embeddings and the output
rows of their successors point the same way, 32 logits above every other token. So a prompt that
ends in chain[0] gets the reply chain[1:], whatever came before. Its text means nothing: the
point is a real reasoning block coming out of the real engine, through the CLI and the server.
Other tokens can be added in place of Qwen3's (scripted_harmony.py adds gpt-oss's).

Usage as a program: scripted_qwen3.py --base SMOLLM2_GGUF --out OUT.gguf [--template FILE]
"""
import argparse
import os
import sys

import numpy as np
from gguf import GGUFReader, GGUFWriter, GGUFValueType

USER_DEFINED = 4
N_EMBD = 64

# the reply to a prompt that ends with "<|im_start|>assistant\n" (which ends in the token "\n"):
# a reasoning block, then the answer; after "</think>\n\n" (thinking off) only the answer follows
REASONING_CHAIN = ["Ċ", "<think>", "plan", "</think>", "ĊĊ", "Answer", "<|im_end|>"]
REASONING_TEXT, ANSWER_TEXT = "plan", "Answer"
# the same reply after a prompt that opened the block itself ("...assistant\n<think>\n")
OPENING_CHAIN = ["Ċ", "plan", "</think>", "ĊĊ", "Answer", "<|im_end|>"]

# A minimal template with the documented rules of Qwen3's (no tools): a first system message first,
# no default one; an assistant turn keeps only the text after its last </think>, except those after
# the last user query, which keep their reasoning in a block (the last message always); with
# enable_thinking false the generation prompt closes an empty block.
HYBRID_TEMPLATE = """{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}{%- endif %}
{%- set ns = namespace(last_query_index=messages|length - 1, found=false) %}
{%- for message in messages[::-1] %}{%- set index = (messages|length - 1) - loop.index0 %}
{%- if not ns.found and message.role == 'user' and not (message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}{%- set ns.found = true %}{%- set ns.last_query_index = index %}{%- endif %}
{%- endfor %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}{%- set content = message.content %}{%- set reasoning = '' %}
{%- if '</think>' in content %}{%- set reasoning = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}{%- set content = content.split('</think>')[-1].lstrip('\\n') %}{%- endif %}
{%- if loop.index0 > ns.last_query_index and (loop.last or reasoning) %}{{- '<|im_start|>assistant\\n<think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
{%- else %}{{- '<|im_start|>assistant\\n' + content }}{%- endif %}{{- '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}
"""

# The same rules with the generation prompt of the thinking-only models (Qwen3 ...-Thinking-2507),
# which opens the reasoning block itself.
OPENING_TEMPLATE = HYBRID_TEMPLATE.replace(
    "{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}",
    "{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- else %}{{- '<think>\\n' }}{%- endif %}")
assert OPENING_TEMPLATE != HYBRID_TEMPLATE


def _field(r, key):
    f = r.fields[key]
    return f.contents()


QWEN3_ADDED = [("<think>", USER_DEFINED), ("</think>", USER_DEFINED)]


def base_tokens(base):
    """base's token texts (the ids an added token gets follow them)."""
    return list(_field(GGUFReader(base), "tokenizer.ggml.tokens"))


def make(base, out, template, chain=None, added=QWEN3_ADDED, special_ids=None):
    """Writes OUT: base's tokenizer plus the added (text, type) tokens (Qwen3's <think> and </think>
    unless told), the template, and (with a chain) weights. A chain names its tokens by text, or by id
    where a text is there twice (a chain's tokens must be distinct). special_ids: tokenizer.ggml.*_id
    keys (e.g. "eos_token_id") to write instead of base's."""
    r = GGUFReader(base)
    tokens = list(_field(r, "tokenizer.ggml.tokens")) + [t for t, _ in added]
    types = list(_field(r, "tokenizer.ggml.token_type")) + [k for _, k in added]
    merges = list(_field(r, "tokenizer.ggml.merges"))
    special_ids = special_ids or {}
    n_vocab = len(tokens)
    w = GGUFWriter(out, "qwen3")
    w.add_block_count(1)
    w.add_context_length(4096)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_EMBD)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_key_length(32)
    w.add_value_length(32)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model(_field(r, "tokenizer.ggml.model"))
    w.add_tokenizer_pre(_field(r, "tokenizer.ggml.pre"))
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    for key in ("bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"):
        if "tokenizer.ggml." + key in r.fields and key not in special_ids:
            w.add_uint32("tokenizer.ggml." + key, int(_field(r, "tokenizer.ggml." + key)))
    for key, value in special_ids.items():
        w.add_uint32("tokenizer.ggml." + key, value)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_chat_template(template)
    if chain:
        ids = [t if isinstance(t, int) else tokens.index(t) for t in chain]
        if len(set(ids)) != len(ids) or len(ids) > N_EMBD:
            raise ValueError("a chain's tokens must be distinct, at most 64")
        embd = np.zeros((n_vocab, N_EMBD), np.float32)
        output = np.zeros((n_vocab, N_EMBD), np.float32)
        for j, (prev, nxt) in enumerate(zip(ids, ids[1:])):
            embd[prev, j] = 1.0
            output[nxt, j] = 4.0  # the final norm makes the one-hot 8: a logit of 32
        w.add_tensor("token_embd.weight", embd.astype(np.float16))
        w.add_tensor("output.weight", output.astype(np.float16))
        w.add_tensor("output_norm.weight", np.ones(N_EMBD, np.float32))
        zeros = lambda rows, cols: np.zeros((rows, cols), np.float16)  # noqa: E731
        for name, arr in (("attn_norm", np.ones(N_EMBD, np.float32)), ("ffn_norm", np.ones(N_EMBD, np.float32)),
                          ("attn_q_norm", np.ones(32, np.float32)), ("attn_k_norm", np.ones(32, np.float32)),
                          ("attn_q", zeros(64, N_EMBD)), ("attn_k", zeros(32, N_EMBD)), ("attn_v", zeros(32, N_EMBD)),
                          ("attn_output", zeros(N_EMBD, 64)), ("ffn_gate", zeros(N_EMBD, N_EMBD)),
                          ("ffn_up", zeros(N_EMBD, N_EMBD)), ("ffn_down", zeros(N_EMBD, N_EMBD))):
            w.add_tensor(f"blk.0.{name}.weight", arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--template")
    ap.add_argument("--opening", action="store_true", help="the thinking-only template (opens the block)")
    a = ap.parse_args()
    tpl = open(a.template, encoding="utf-8").read() if a.template else (OPENING_TEMPLATE if a.opening else HYBRID_TEMPLATE)
    make(a.base, a.out, tpl, OPENING_CHAIN if a.opening else REASONING_CHAIN)
    print(os.path.abspath(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
