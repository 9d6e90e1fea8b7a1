#!/usr/bin/env python3
"""Embeddings from `brasa serve` through the official clients, against an independent reference:
all-MiniLM-L6-v2 (the GGUF scripts/fetch_models.py converts) served beside SmolLM2 in one
--models-dir, its vectors from OpenAI's /v1/embeddings (the openai client: a string and a list,
floats and base64, which the client asks for by default) and Ollama's /api/embed (the ollama
client) against ref_bert.py (NumPy over the Hugging Face folder's model.safetensors, tokenized by HF
`tokenizers`, mean-pooled and normalized as the model's pooling config says). Token inputs,
truncation (Ollama's default) and its refusal, `dimensions`, and the errors: a chat model asked for
embeddings, an embedding model asked for a chat, bad inputs, each in its API's shape.

Usage: test_server_embeddings.py --brasa PATH --model MINILM_GGUF --hf-dir DIR --chat-model SMOLLM2_GGUF
"""
import argparse
import base64
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "model"))
from checks import Checks  # noqa: E402
from serverproc import Server  # noqa: E402
from test_server_dialects import KEY, raw  # noqa: E402

CHECKS = Checks("server embeddings")
expect = CHECKS.expect
TEXTS = ["The cat sat on the mat.", "A feline rested on a rug.", "Dogs are mammals.",
         "¿Dónde está la biblioteca? Große Straße, 東京タワー 🚀"]
COS_MIN, ABS_MAX = 0.99999, 1e-3  # the F16 file against float64: the bounds test_embeddings_reference.py holds


def close(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    cos = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))
    return got.shape == want.shape and cos >= COS_MIN and float(np.abs(got - want).max()) <= ABS_MAX, cos


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--hf-dir", required=True)
    ap.add_argument("--chat-model", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.model) or not os.path.isdir(a.hf_dir):
        print("embedding model missing (scripts/fetch_models.py minilm)")
        return 77
    from ref_bert import RefBert
    import ollama
    import openai
    ref = RefBert(a.hf_dir)
    want = [ref.embed(ref.tokenize(t)) for t in TEXTS]
    name = os.path.basename(a.model)[:-len(".gguf")]
    chat = os.path.basename(a.chat_model)[:-len(".gguf")]
    folder = tempfile.mkdtemp(prefix="brasa-embed-")
    for p in (a.model, a.chat_model):
        os.symlink(os.path.abspath(p), os.path.join(folder, os.path.basename(p)))
    srv = Server(a.brasa, None, "--models-dir", folder, "--parallel", "1", "--ctx", "512", "--api-key", KEY)
    try:
        expect("server starts", srv.port is not None, srv.stderr())
        if srv.port is None:
            return CHECKS.finish()
        oa = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key=KEY)
        r = oa.embeddings.create(model=name, input=TEXTS[0], encoding_format="float")
        ok, cos = close(r.data[0].embedding, want[0])
        expect("openai: one string, floats, matches the reference", ok and r.usage.prompt_tokens > 5, f"cos {cos}")
        r = oa.embeddings.create(model=name, input=TEXTS)  # the client asks for base64 and decodes it
        results = [close(d.embedding, w) for d, w in zip(r.data, want)]
        expect("openai: a list, base64 (the client's default), every vector matches",
               len(r.data) == len(TEXTS) and all(ok for ok, _ in results) and
               [d.index for d in r.data] == list(range(len(TEXTS))), str([c for _, c in results]))
        st, body, _ = raw(srv.port, "POST", "/v1/embeddings", {"model": name, "input": "x", "encoding_format": "base64"})
        vec = np.frombuffer(base64.b64decode(body["data"][0]["embedding"]), dtype="<f4") if st == 200 else []
        expect("base64 is the little-endian float32 bytes of a unit vector",
               st == 200 and len(vec) == 384 and abs(float(np.linalg.norm(vec)) - 1) < 1e-5, str(body)[:200])
        ids = ref.tokenize(TEXTS[2])
        r = oa.embeddings.create(model=name, input=[ids], encoding_format="float")
        expect("openai: tokens as input", close(r.data[0].embedding, want[2])[0], str(ids))
        cosines = np.array([[float(np.dot(x, y)) for y in want] for x in want])
        expect("the paraphrase is nearer than the unrelated sentence (reference sanity)",
               cosines[0, 1] > cosines[0, 2], str(cosines))

        cl = ollama.Client(host=f"http://127.0.0.1:{srv.port}", headers={"Authorization": "Bearer " + KEY})
        e = cl.embed(model=name, input=TEXTS)
        expect("ollama: /api/embed matches the reference",
               len(e.embeddings) == len(TEXTS) and all(close(v, w)[0] for v, w in zip(e.embeddings, want)) and
               e.prompt_eval_count > 20, str(e)[:200])
        e1 = cl.embed(model=name, input=TEXTS[1])
        expect("ollama: one string", len(e1.embeddings) == 1 and close(e1.embeddings[0], want[1])[0])
        long_text = "word " * 700
        e2 = cl.embed(model=name, input=long_text)
        expect("ollama truncates a long input by default", len(e2.embeddings) == 1 and e2.prompt_eval_count == 512,
               str(e2.prompt_eval_count))
        try:
            cl.embed(model=name, input=long_text, truncate=False)
            expect("ollama truncate false refuses a long input", False)
        except ollama.ResponseError as err:
            expect("ollama truncate false refuses a long input with 400", err.status_code == 400 and
                   "context" in err.error, err.error)
        try:
            oa.embeddings.create(model=name, input=long_text, encoding_format="float")
            expect("openai refuses an input past the context", False)
        except openai.BadRequestError as err:
            expect("openai refuses an input past the context with 400", "context" in str(err), str(err))

        bad = [({"model": name, "input": ""}, "input"), ({"model": name, "input": []}, "input"),
               ({"model": name, "input": [1.5]}, "input"), ({"model": name, "input": [[-1]]}, "input"),
               ({"model": name, "input": [[999999]]}, "input"), ({"model": name, "input": 5}, "input"),
               ({"model": name, "input": "x", "encoding_format": "int8"}, "encoding_format"),
               ({"model": name, "input": "x", "dimensions": 128}, "dimensions"),
               ({"model": chat, "input": "x"}, "model"), ({"model": "nope", "input": "x"}, "model")]
        for i, (body, param) in enumerate(bad):
            st, r, _ = raw(srv.port, "POST", "/v1/embeddings", body)
            expect(f"openai bad embeddings request {i} is a 4xx naming '{param}'",
                   st in (400, 404) and r["error"]["param"] == param, f"{st} {r}")
        st, r, _ = raw(srv.port, "POST", "/api/embed", {"model": chat, "input": "x"})
        expect("ollama: a chat model asked for embeddings is a 400 in Ollama's shape",
               st == 400 and set(r) == {"error"} and "embedding" in r["error"], f"{st} {r}")
        st, r, _ = raw(srv.port, "POST", "/v1/chat/completions",
                       {"model": name, "messages": [{"role": "user", "content": "hi"}]})
        expect("an embedding model asked for a chat is a 400", st == 400 and "embedding model" in r["error"]["message"],
               f"{st} {r}")
        st, show, _ = raw(srv.port, "POST", "/api/show", {"model": name})
        expect("ollama /api/show: the embedding capability", st == 200 and show["capabilities"] == ["embedding"] and
               show["model_info"]["general.architecture"] == "bert", str(show)[:300])
        r = oa.embeddings.create(model=name, input=TEXTS[0], encoding_format="float")
        expect("the server answers the same after the bad requests", close(r.data[0].embedding, want[0])[0])
        expect("server exits 0", srv.stop() == 0, srv.stderr()[-1000:])
        expect("no sanitizer report", "ERROR: AddressSanitizer" not in srv.stderr() and
               "runtime error:" not in srv.stderr(), srv.stderr()[-3000:])
    finally:
        srv.stop()
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
