#!/usr/bin/env python3
"""Several models in one `brasa serve --models-dir`: SmolLM2 and Gemma 3 listed by /v1/models and
/api/tags, picked by a request's "model", loaded on first use; with a memory budget that holds one
of them but not both (--max-memory, set from the sizes the server itself plans, read in a first
run), concurrent requests for both models alternate (each swap unloads the idle model) and none
fails, each answer equal to the one its model gives alone; a request's keep_alive 0 unloads its
model once it is answered; an unknown model is a 404 in each API's shape.

Usage: test_server_models.py --brasa PATH --smollm2 GGUF --gemma3 GGUF
"""
import argparse
import concurrent.futures
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402
from serverproc import Server  # noqa: E402
from test_server_dialects import KEY, raw  # noqa: E402  (raw sends KEY)

CHECKS = Checks("server models")
expect = CHECKS.expect
NAMES = ("SmolLM2-135M-Instruct.Q4_1", "gemma-3-270m-q4_k_m")
PROMPTS = ("Tell me a story about a cat.", "What is the capital of France?", "Name a color.")


def ask(port, model, prompt):
    st, r, _ = raw(port, "POST", "/v1/chat/completions",
                   {"model": model, "messages": [{"role": "user", "content": prompt}], "temperature": 0,
                    "max_tokens": 12})
    return st, r["choices"][0]["message"]["content"] if st == 200 else r


def loaded(port):
    st, ps, _ = raw(port, "GET", "/api/ps")
    return {m["name"]: m for m in ps["models"]} if st == 200 else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--smollm2", required=True)
    ap.add_argument("--gemma3", required=True)
    a = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="brasa-models-")
    for path in (a.smollm2, a.gemma3):
        os.symlink(os.path.abspath(path), os.path.join(folder, os.path.basename(path)))
    common = ["--models-dir", folder, "--parallel", "2", "--ctx", "1024", "--api-key", KEY]

    # first run: room for both; the answers alone and the memory each plans
    srv = Server(a.brasa, a.smollm2, *common[2:], "--models-dir", folder)  # -m and the folder's copy: refused
    expect("the same model twice (-m and --models-dir) is refused at the start",
           srv.port is None and "two models are named" in srv.stderr(), srv.stderr()[-500:])
    srv.stop()
    srv = Server(a.brasa, None, *common)
    reference, sizes = {}, {}
    try:
        expect("server of a folder starts", srv.port is not None, srv.stderr())
        if srv.port is None:
            return CHECKS.finish()
        st, models, _ = raw(srv.port, "GET", "/v1/models")
        expect("/v1/models lists both", st == 200 and sorted(m["id"] for m in models["data"]) == sorted(NAMES),
               str(models))
        st, tags, _ = raw(srv.port, "GET", "/api/tags")
        expect("/api/tags lists both with their details", st == 200 and len(tags["models"]) == 2 and
               {m["details"]["family"] for m in tags["models"]} == {"llama", "gemma3"}, str(tags)[:400])
        expect("nothing is loaded before the first request", loaded(srv.port) == {}, str(loaded(srv.port)))
        for name in NAMES:
            for p in PROMPTS:
                st, text = ask(srv.port, name, p)
                expect(f"{name} answers", st == 200, str(text))
                reference[(name, p)] = text
        ps = loaded(srv.port)
        expect("both are loaded when both fit", ps is not None and set(ps) == set(NAMES), str(ps))
        sizes = {n: ps[n]["size"] for n in ps} if ps else {}
        st, r = ask(srv.port, NAMES[0] + ".gguf", PROMPTS[0])
        expect("a model is also named with .gguf", st == 200 and r == reference[(NAMES[0], PROMPTS[0])], str(r))
        st, r = ask(srv.port, "no-such-model", "hi")
        expect("an unknown model is a 404 in OpenAI's shape", st == 404 and "not found" in r["error"]["message"], str(r))
        st, r, _ = raw(srv.port, "POST", "/api/chat", {"model": "nope", "messages": [{"role": "user", "content": "x"}]})
        expect("an unknown model is a 404 in Ollama's shape", st == 404 and set(r) == {"error"}, str(r))
        st, r, _ = raw(srv.port, "POST", "/api/show", {"model": "nope"})
        expect("/api/show of an unknown model is a 404", st == 404, str(r))
        expect("server exits 0", srv.stop() == 0, srv.stderr()[-1000:])
    finally:
        srv.stop()
    if len(sizes) != 2:
        return CHECKS.finish()

    # second run: a budget that holds the larger model but not both
    budget = (max(sizes.values()) + min(sizes.values()) // 2) / 1e9
    srv = Server(a.brasa, None, *common, "--max-memory", f"{budget:.4f}")
    try:
        expect("server with a budget starts", srv.port is not None, srv.stderr())
        jobs = [(NAMES[i % 2], PROMPTS[i % 3]) for i in range(12)]
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            results = list(pool.map(lambda j: ask(srv.port, *j), jobs))
        failed = [(j, r) for j, r in zip(jobs, results) if r[0] != 200]
        expect("concurrent requests for two models that do not fit together: none fails", not failed, str(failed[:3]))
        wrong = [(j, r) for j, r in zip(jobs, results) if r[0] == 200 and r[1] != reference[j]]
        expect("each answer is the one its model gives alone", not wrong, str(wrong[:2]))
        ps = loaded(srv.port)
        expect("at most one model is loaded under the budget", ps is not None and len(ps) <= 1, str(ps))
        log = srv.stderr()
        expect("the models took turns: loaded and unloaded for room more than once",
               log.count("brasa serve: loading ") >= 3 and log.count("(room for another)") >= 2, log[-1500:])
        st, r, _ = raw(srv.port, "POST", "/api/generate", {"model": NAMES[1], "prompt": "Hi", "stream": False,
                                                          "keep_alive": 0, "options": {"num_predict": 2}})
        deadline = time.time() + 5
        while time.time() < deadline and loaded(srv.port):
            time.sleep(0.1)
        expect("keep_alive 0 unloads the model after its reply", st == 200 and loaded(srv.port) == {},
               f"{st} {r} {loaded(srv.port)}")
        st, r, _ = raw(srv.port, "POST", "/api/generate", {"model": NAMES[0], "keep_alive": "10m"})
        ps = loaded(srv.port)
        expect("a load request loads the model, expiring in about its keep_alive",
               st == 200 and r.get("done_reason") == "load" and ps and NAMES[0] in ps, f"{st} {r} {ps}")
        expect("server exits 0", srv.stop() == 0, srv.stderr()[-1000:])
        expect("no sanitizer report", "ERROR: AddressSanitizer" not in srv.stderr() and
               "runtime error:" not in srv.stderr(), srv.stderr()[-3000:])
    finally:
        srv.stop()
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
