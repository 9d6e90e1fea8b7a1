#!/usr/bin/env python3
"""brasa pull, list and rm, and model names where commands take a file, against a local HTTP server
shaped like the Hugging Face hub: GET /api/models/OWNER/REPO?blobs=true lists the files with sizes
and sha256s, /OWNER/REPO/resolve/REV/FILE redirects (302) to a CDN-like path on another host name
(localhost instead of 127.0.0.1, so the token must not follow), which serves the bytes with Range
support. The models are small valid GGUF files the test writes with the gguf package, so that
`brasa info NAME`, `tokenize -m NAME`, `run -m NAME` and `fit NAME` open what was pulled.

Cases: a name with and without :QUANT (two quants; the default; an unknown quant lists the
choices; no default among several), a split model (every part, in order; refused where a command
would open it), a connection dropped mid-file (resumed with a Range request, hash checked), a
.part file left by an interrupted pull (resumed), a wrong published hash (failure, no file left),
a 404 repo, HF_TOKEN sent as a bearer header (and not to the CDN), offline mode with and without
the model cached, list and rm, malformed names (usage errors), a file that exists winning over a
name, and the progress bar on a terminal.

Usage: test_library_pull.py --brasa PATH_TO_brasa
"""
import argparse
import hashlib
import http.server
import json
import os
import pty
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

CHECKS = Checks("library")
expect = CHECKS.expect

TOKEN = "hf_brasa_test_token_0123456789"
COMMIT = "5d0f5a4e3c2b1a09f8e7d6c5b4a3928170605040"


# ------------------------------------------------------------------------------- the models


def tiny_llama(path, seed, name, parts=1):
    """A valid one-layer llama model (random weights, float32) with a SentencePiece vocabulary of
    control, byte-fallback and a few word tokens, so that any text tokenizes; its bytes. parts > 1:
    written as llama.cpp's gguf-split writes a model (path is then a prefix: the files are
    PREFIX-0000K-of-0000N.gguf, the metadata in the first, split.no, split.count and
    split.tensors.count in each, the tensors shared out in order), the same weights for the same
    seed; the files' bytes, a list."""
    import numpy as np
    from gguf import GGUFWriter, GGUFValueType as VT

    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += ["\u2581", "\u2581hello", "\u2581world", "h", "e", "l", "o", "w", "r", "d"]
    types = [2, 3, 3] + [6] * 256 + [1] * 10
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [-1.0, -2.0, -2.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0]
    n_vocab, E, F, H, KV, D = len(tokens), 32, 64, 4, 2, 8
    rng = np.random.default_rng(seed)

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def metadata(w):
        w.add_name(name)
        w.add_uint32("llama.block_count", 1)
        w.add_uint32("llama.context_length", 256)
        w.add_uint32("llama.embedding_length", E)
        w.add_uint32("llama.feed_forward_length", F)
        w.add_uint32("llama.attention.head_count", H)
        w.add_uint32("llama.attention.head_count_kv", KV)
        w.add_uint32("llama.rope.dimension_count", D)
        w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
        w.add_float32("llama.rope.freq_base", 10000.0)
        w.add_uint32("llama.vocab_size", n_vocab)
        w.add_string("tokenizer.ggml.model", "llama")
        w.add_key_value("tokenizer.ggml.tokens", tokens, VT.ARRAY, sub_type=VT.STRING)
        w.add_key_value("tokenizer.ggml.scores", scores, VT.ARRAY, sub_type=VT.FLOAT32)
        w.add_key_value("tokenizer.ggml.token_type", types, VT.ARRAY, sub_type=VT.INT32)
        w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
        w.add_uint32("tokenizer.ggml.bos_token_id", 1)
        w.add_uint32("tokenizer.ggml.eos_token_id", 2)
        w.add_bool("tokenizer.ggml.add_bos_token", True)

    tensors = [("token_embd.weight", mat(n_vocab, E)),
               ("blk.0.attn_norm.weight", np.ones(E, dtype=np.float32)),
               ("blk.0.attn_q.weight", mat(H * D, E)),
               ("blk.0.attn_k.weight", mat(KV * D, E)),
               ("blk.0.attn_v.weight", mat(KV * D, E)),
               ("blk.0.attn_output.weight", mat(E, H * D)),
               ("blk.0.ffn_norm.weight", np.ones(E, dtype=np.float32)),
               ("blk.0.ffn_gate.weight", mat(F, E)),
               ("blk.0.ffn_up.weight", mat(F, E)),
               ("blk.0.ffn_down.weight", mat(E, F)),
               ("output_norm.weight", np.ones(E, dtype=np.float32)),
               ("output.weight", mat(n_vocab, E))]
    files = [str(path)] if parts == 1 else [f"{path}-{k + 1:05d}-of-{parts:05d}.gguf" for k in range(parts)]
    share = (len(tensors) + parts - 1) // parts
    out = []
    for k, file in enumerate(files):
        w = GGUFWriter(file, "llama")
        if k == 0:
            metadata(w)
        if parts > 1:
            w.add_uint16("split.no", k)
            w.add_uint16("split.count", parts)
            w.add_int32("split.tensors.count", len(tensors))
        for n, t in tensors[k * share:(k + 1) * share]:
            w.add_tensor(n, t)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        with open(file, "rb") as f:
            out.append(f.read())
    return out[0] if parts == 1 else out


# ------------------------------------------------------------------------------- the hub


class Hub:
    """What the server serves: repos of files, and what it saw."""

    def __init__(self):
        self.repos = {}      # "owner/repo" -> {"files": {path: bytes}, "lfs": set, "wrong": set, "private": bool}
        self.drop_once = {}  # file path -> bytes sent before the connection is cut, once
        self.requests = []   # (path, range header, authorization header)
        self.lock = threading.Lock()

    def add(self, repo, files, lfs=None, private=False, wrong=()):
        self.repos[repo] = {"files": dict(files), "lfs": set(files) if lfs is None else set(lfs),
                            "wrong": set(wrong), "private": private}

    def find(self, owner, repo):
        for name, r in self.repos.items():  # the hub ignores case in names
            if name.lower() == f"{owner}/{repo}".lower():
                return name, r
        return None, None

    def seen(self, part):
        with self.lock:
            return [r for r in self.requests if part in r[0]]


def make_handler(hub):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send(self, status, body=b"", ctype="application/json", headers=()):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def authorized(self, r):
            return not r["private"] or self.headers.get("Authorization") == f"Bearer {TOKEN}"

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            path = urllib.parse.unquote(url.path)
            with hub.lock:
                hub.requests.append((path, self.headers.get("Range"), self.headers.get("Authorization")))
            parts = path.strip("/").split("/")
            if parts[:2] == ["api", "models"] and len(parts) == 4:
                return self.listing(parts[2], parts[3], urllib.parse.parse_qs(url.query))
            if len(parts) >= 5 and parts[2] == "resolve":
                return self.resolve(parts[0], parts[1], parts[3], "/".join(parts[4:]))
            if parts[0] == "cdn" and len(parts) >= 4:
                return self.cdn(parts[1], parts[2], "/".join(parts[3:]))
            self.send(404, b'{"error": "not found"}')

        def listing(self, owner, repo, query):
            name, r = hub.find(owner, repo)
            if r is None:
                return self.send(404, b'{"error": "Repository not found"}')
            if not self.authorized(r):
                return self.send(401, b'{"error": "Invalid credentials in Authorization header"}')
            siblings = []
            for path, data in r["files"].items():
                s = {"rfilename": path}
                if query.get("blobs") == ["true"]:
                    s["size"] = len(data)
                    s["blobId"] = hashlib.sha1(data).hexdigest()
                    if path in r["lfs"]:
                        digest = hashlib.sha256(data).hexdigest()
                        if path in r["wrong"]:
                            digest = hashlib.sha256(data + b"tampered").hexdigest()
                        s["lfs"] = {"sha256": digest, "size": len(data), "pointerSize": 134}
                siblings.append(s)
            body = {"_id": "66aa", "id": name, "modelId": name, "sha": COMMIT, "private": r["private"],
                    "tags": ["gguf"], "siblings": siblings}
            self.send(200, json.dumps(body).encode())

        def resolve(self, owner, repo, rev, path):
            name, r = hub.find(owner, repo)
            if r is None or rev not in (COMMIT, "main"):
                return self.send(404, b'{"error": "Repository not found"}')
            if not self.authorized(r):
                return self.send(401, b'{"error": "Invalid credentials"}')
            if path not in r["files"]:
                return self.send(404, b'{"error": "Entry not found"}', headers=[("X-Error-Code", "EntryNotFound")])
            if path in r["lfs"]:  # LFS files go to the CDN, another host
                port = self.server.server_address[1]
                where = f"http://localhost:{port}/cdn/{owner}/{repo}/{urllib.parse.quote(path)}"
                return self.send(302, b"", headers=[("Location", where), ("X-Repo-Commit", COMMIT),
                                                     ("X-Linked-Size", str(len(r["files"][path])))])
            self.serve_bytes(path, r["files"][path])

        def cdn(self, owner, repo, path):
            name, r = hub.find(owner, repo)
            if r is None or path not in r["files"]:
                return self.send(404, b"<Error>NoSuchKey</Error>", "application/xml")
            self.serve_bytes(path, r["files"][path])

        def serve_bytes(self, path, data):
            start, total = 0, len(data)
            rng = self.headers.get("Range")
            if rng:
                spec = rng.split("=", 1)[1] if rng.startswith("bytes=") else ""
                first = spec.split("-", 1)[0]
                if not first.isdigit():
                    return self.send(400, b"bad range")
                start = int(first)
                if start >= total:
                    return self.send(416, b"", headers=[("Content-Range", f"bytes */{total}")])
            body = data[start:]
            self.send_response(206 if rng else 200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
            if rng:
                self.send_header("Content-Range", f"bytes {start}-{total - 1}/{total}")
            self.end_headers()
            with hub.lock:
                cut = hub.drop_once.pop(path, None)
            if cut is not None and cut < len(body):
                self.wfile.write(body[:cut])  # then the connection drops, mid-file
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(body)

    return Handler


# ------------------------------------------------------------------------------- the checks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    a = ap.parse_args()
    try:
        import gguf  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        print("skipped: the gguf and numpy packages are missing (pip install -r tests/requirements.txt)")
        return 77
    tmp = tempfile.mkdtemp(prefix="brasa-library-")
    try:
        return run_checks(os.path.abspath(a.brasa), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_checks(brasa, tmp):
    models_src = os.path.join(tmp, "src")
    os.makedirs(models_src)
    q4 = tiny_llama(os.path.join(models_src, "a.gguf"), 1, "tiny Q4_K_M")
    q8 = tiny_llama(os.path.join(models_src, "b.gguf"), 2, "tiny Q8_0")
    other = [tiny_llama(os.path.join(models_src, f"c{i}.gguf"), 3 + i, f"tiny {i}") for i in range(5)]
    split = tiny_llama(os.path.join(models_src, "split"), 3, "tiny 0", parts=3)  # other[0]'s weights, in 3 files
    big = b"".join(split)

    hub = Hub()
    hub.add("test/tiny-GGUF", {"tiny-Q4_K_M.gguf": q4, "tiny-Q8_0.gguf": q8, "README.md": b"# tiny\n",
                               ".gitattributes": b"*.gguf filter=lfs\n"}, lfs={"tiny-Q4_K_M.gguf", "tiny-Q8_0.gguf"})
    hub.add("test/many-GGUF", {"many-Q8_0.gguf": q8, "many-Q5_K_M.gguf": q4})
    hub.add("test/split-GGUF", {f"Q8_0/split-Q8_0-{k + 1:05d}-of-00003.gguf": split[k] for k in range(3)})
    hub.add("test/flaky-GGUF", {"flaky-Q4_K_M.gguf": other[1]})
    hub.add("test/resume-GGUF", {"resume-Q4_K_M.gguf": other[2]})
    hub.add("test/badhash-GGUF", {"bad-Q4_K_M.gguf": other[3]}, wrong={"bad-Q4_K_M.gguf"})
    hub.add("test/private-GGUF", {"private-Q4_K_M.gguf": other[4]}, private=True)
    hub.add("test/fresh-GGUF", {"fresh-Q4_K_M.gguf": q4})
    hub.add("test/nogguf", {"README.md": b"no model here\n"})
    hub.drop_once["flaky-Q4_K_M.gguf"] = 40000

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(hub))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    models = os.path.join(tmp, "models")
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_TOKEN", "HF_HUB_OFFLINE", "BRASA_OFFLINE", "HF_ENDPOINT", "BRASA_MODELS")}
    env.update({"BRASA_MODELS": models, "HF_ENDPOINT": endpoint, "BRASA_CACHE_DIR": os.path.join(tmp, "cache"),
                "NO_COLOR": "1"})

    def run(args, extra=None, cwd=None, timeout=60):
        e = dict(env)
        e.update(extra or {})
        r = subprocess.run([brasa, *args], env=e, cwd=cwd, capture_output=True, timeout=timeout)
        return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")

    def check(name, args, want_rc, want_err=None, want_out=None, extra=None, cwd=None):
        rc, out, err = run(args, extra, cwd)
        ok = rc == want_rc and (want_err is None or want_err in err) and (want_out is None or want_out in out)
        expect(name, ok, f"rc {rc} (want {want_rc}); stdout {out.strip()[-300:]!r}; stderr {err.strip()[-500:]!r}")
        return rc, out, err

    def in_library(*parts):
        return os.path.join(models, "test", *parts)

    def leftovers(repo):
        found = []
        for root, _, files in os.walk(in_library(repo)):
            found += [os.path.join(root, f) for f in files if not f.startswith(".lock")]
        return found

    # ---- pull by name, default and by quant
    rc, out, err = check("pull without a quant takes Q4_K_M", ["pull", "test/tiny-GGUF"], 0)
    path = out.strip()
    expect("pull prints the file's path", path == in_library("tiny-GGUF", "tiny-Q4_K_M.gguf"), path)
    expect("the pulled file is the hub's", os.path.exists(path) and open(path, "rb").read() == q4)
    expect("off a terminal: no progress bar, one summary line", "\r" not in err and "pulled test/tiny-GGUF:Q4_K_M" in err
           and "sha256 checked" in err, err)
    rc, out, err = check("pull :q8_0 (any case) --json", ["pull", "test/tiny-GGUF:q8_0", "--json"], 0)
    try:
        j = json.loads(out)
    except ValueError:
        j = {}
    expect("pull --json names the model and its file", j.get("name") == "test/tiny-GGUF:Q8_0" and j.get("quant") == "Q8_0"
           and j.get("path") == in_library("tiny-GGUF", "tiny-Q8_0.gguf") and j.get("size") == len(q8)
           and j.get("files", [{}])[0].get("sha256") == hashlib.sha256(q8).hexdigest() and j.get("downloaded") == len(q8),
           out[:400])
    expect("the Q8_0 file is the hub's", open(in_library("tiny-GGUF", "tiny-Q8_0.gguf"), "rb").read() == q8)
    check("an unknown quant lists the choices", ["pull", "test/tiny-GGUF:Q2_K"], 1, "no Q2_K")
    rc, out, err = run(["pull", "test/tiny-GGUF:Q2_K"])
    expect("the choices name both quants with their files", "Q4_K_M (tiny-Q4_K_M.gguf" in err and "Q8_0 (tiny-Q8_0.gguf" in err,
           err)
    check("without Q4_K_M, several models need a quant", ["pull", "test/many-GGUF"], 1, "2 GGUF models")
    check("a repo without GGUF files", ["pull", "test/nogguf"], 1, "no GGUF model")
    before = len(hub.seen("/cdn/test/tiny-GGUF"))
    check("a second pull is up to date", ["pull", "test/tiny-GGUF"], 0, "up to date")
    expect("an up-to-date pull downloads nothing", len(hub.seen("/cdn/test/tiny-GGUF")) == before)
    check("a name in another case is the same model", ["pull", "TEST/Tiny-gguf:q4_k_m"], 0, "up to date",
          want_out=in_library("tiny-GGUF", "tiny-Q4_K_M.gguf"))
    expect("downloads ask for the listed commit", any(COMMIT in r[0] for r in hub.seen("/resolve/")), hub.requests[-3:])

    # ---- split models
    rc, out, err = check("pull a split model", ["pull", "test/split-GGUF:Q8_0"], 0, "in 3 files")
    parts = [in_library("split-GGUF", "Q8_0", f"split-Q8_0-{k + 1:05d}-of-00003.gguf") for k in range(3)]
    expect("every part is there, in order", all(os.path.exists(p) for p in parts)
           and b"".join(open(p, "rb").read() for p in parts) == big)
    expect("pull prints the first part", out.strip() == parts[0], out)
    rc, out, err = check("a split model opens by name", ["info", "test/split-GGUF:Q8_0", "--json"], 0)
    whole = os.path.join(models_src, "c0.gguf")
    rc2, out2, _ = check("its unsplit twin opens", ["info", whole, "--json"], 0)
    try:
        a, b = json.loads(out), json.loads(out2)
        same = a.get("n_params") == b.get("n_params") and a.get("n_params") and a.get("n_tensors") == \
            b.get("n_tensors") == 12
    except ValueError:
        same = False
    expect("the split model has its twin's tensors", same, out[:300])
    greedy = ["run", "-p", "hello world", "-n", "8", "--temp", "0", "--threads", "1"]
    rc, split_text, _ = check("a split model runs", greedy[:1] + ["-m", "test/split-GGUF:Q8_0"] + greedy[1:], 0)
    rc, whole_text, _ = check("its twin runs", greedy[:1] + ["-m", whole] + greedy[1:], 0)
    expect("the same greedy text from the split model and the whole one", split_text == whole_text and split_text,
           f"{split_text!r} vs {whole_text!r}")
    check("a later part alone is refused, naming the first", ["info", parts[1]], 1, "open the first part")
    renamed = os.path.join(tmp, "renamed.gguf")
    shutil.copy(parts[0], renamed)
    check("a first part not named as gguf-split names it is refused", ["info", renamed], 1, "must be named")
    lonely = os.path.join(tmp, "lonely-00001-of-00003.gguf")
    shutil.copy(parts[0], lonely)
    check("a missing part is an error naming it", ["info", lonely], 1, "lonely-00002-of-00003.gguf")
    shutil.copy(parts[1], os.path.join(tmp, "lonely-00002-of-00003.gguf"))
    shutil.copy(parts[1], os.path.join(tmp, "lonely-00003-of-00003.gguf"))
    check("a part that says it is another is refused", ["info", lonely], 1, "not part 3 of 3")

    # ---- a dropped connection, and a pull interrupted earlier
    rc, out, err = check("a connection dropped mid-file is resumed", ["pull", "test/flaky-GGUF"], 0, "resuming")
    cdn = hub.seen("/cdn/test/flaky-GGUF")
    expect("the resume asks for the rest with a Range request", len(cdn) == 2 and cdn[0][1] is None
           and cdn[1][1] == "bytes=40000-", cdn)
    expect("the resumed file is whole and right", open(in_library("flaky-GGUF", "flaky-Q4_K_M.gguf"), "rb").read() == other[1])
    os.makedirs(in_library("resume-GGUF"), exist_ok=True)
    with open(in_library("resume-GGUF", "resume-Q4_K_M.gguf.part"), "wb") as f:
        f.write(other[2][:12345])  # what a killed pull left
    check("a part file left by an interrupted pull is resumed", ["pull", "test/resume-GGUF"], 0)
    cdn = hub.seen("/cdn/test/resume-GGUF")
    expect("only the missing bytes are asked for", [r[1] for r in cdn] == ["bytes=12345-"], cdn)
    expect("the file is whole, its part file gone", open(in_library("resume-GGUF", "resume-Q4_K_M.gguf"), "rb").read()
           == other[2] and not os.path.exists(in_library("resume-GGUF", "resume-Q4_K_M.gguf.part")))

    # ---- failures
    check("a wrong published hash fails", ["pull", "test/badhash-GGUF"], 1, "sha256")
    expect("a wrong hash leaves no file", leftovers("badhash-GGUF") == [], leftovers("badhash-GGUF"))
    check("a repo the hub does not have", ["pull", "test/missing-GGUF"], 1, "not found on the hub (404")
    check("an unreachable hub", ["pull", "test/tiny-GGUF"], 1, "cannot reach",
          extra={"HF_ENDPOINT": "http://127.0.0.1:9"})
    check("HF_ENDPOINT must be http(s)", ["pull", "test/tiny-GGUF"], 1, "HF_ENDPOINT", extra={"HF_ENDPOINT": "ftp://x"})

    # ---- the token
    check("a private repo without HF_TOKEN", ["pull", "test/private-GGUF"], 1, "HF_TOKEN")
    check("a private repo with HF_TOKEN", ["pull", "test/private-GGUF"], 0, extra={"HF_TOKEN": TOKEN})
    seen = hub.seen("test/private-GGUF")
    api = [r for r in seen if r[0].startswith("/api/") and r[2]]
    resolve = [r for r in seen if "/resolve/" in r[0]]
    cdn = [r for r in seen if r[0].startswith("/cdn/")]
    expect("the token goes to the hub as a bearer header", api and all(r[2] == f"Bearer {TOKEN}" for r in api + resolve)
           and resolve, seen)
    expect("the token does not follow the redirect to the CDN", cdn and all(r[2] is None for r in cdn), cdn)

    # ---- offline
    n_before = len(hub.requests)
    check("offline, a cached model", ["pull", "test/tiny-GGUF:Q8_0"], 0, "offline", extra={"HF_HUB_OFFLINE": "1"})
    check("--offline, a cached model by its default name", ["pull", "test/tiny-GGUF", "--offline"], 0,
          want_out=in_library("tiny-GGUF", "tiny-Q4_K_M.gguf"))
    check("offline, a model not in the library", ["pull", "test/fresh-GGUF"], 1, "offline", extra={"HF_HUB_OFFLINE": "1"})
    check("BRASA_OFFLINE: a command does not pull", ["info", "test/fresh-GGUF"], 1, "not in the library",
          extra={"BRASA_OFFLINE": "1"})
    check("offline, a command opens a cached model", ["info", "test/tiny-GGUF:Q4_K_M"], 0, extra={"BRASA_OFFLINE": "yes"})
    expect("offline, the hub is not asked", len(hub.requests) == n_before, hub.requests[n_before:])

    # ---- names where commands take a file
    rc, out, err = check("info by name", ["info", "test/tiny-GGUF:Q4_K_M"], 0, want_out="llama")
    rc, out, err = check("info --json by name without a quant", ["info", "--json", "test/tiny-GGUF"], 0)
    try:
        info = json.loads(out)
    except ValueError:
        info = {}
    expect("info names the library's file", info.get("file") == in_library("tiny-GGUF", "tiny-Q4_K_M.gguf"), out[:200])
    rc, out, err = check("tokenize -m NAME", ["tokenize", "-m", "test/tiny-GGUF:Q8_0", "--ids", "hello world"], 0)
    expect("tokenize by name gives ids", out.split() and all(t.isdigit() for t in out.split()), out)
    check("run -m NAME", ["run", "-m", "test/tiny-GGUF", "-p", "hello", "-n", "2", "--temp", "0"], 0)
    check("fit NAME", ["fit", "test/tiny-GGUF:Q8_0", "--device", "RTX 4090", "--json"], 0, want_out='"fits"')
    n_before = len(hub.seen("/cdn/test/fresh-GGUF"))
    check("a name not in the library is pulled first", ["info", "test/fresh-GGUF"], 0, "pulling it from")
    expect("and downloaded once", len(hub.seen("/cdn/test/fresh-GGUF")) == n_before + 1)
    check("a missing path stays a path", ["info", "./nowhere/model.gguf"], 1, "cannot open")
    cwd = os.path.join(tmp, "cwd")
    os.makedirs(os.path.join(cwd, "test"))
    with open(os.path.join(cwd, "test", "tiny-GGUF"), "wb") as f:
        f.write(q8)
    rc, out, err = check("a file that exists wins over a name", ["info", "--json", "test/tiny-GGUF"], 0, cwd=cwd)
    expect("the file, not the library's model", '"file": "test/tiny-GGUF"' in out, out[:200])

    # ---- list and rm
    rc, out, err = check("list --json", ["list", "--json"], 0)
    try:
        listed = {e["name"]: e for e in json.loads(out)}
    except (ValueError, KeyError, TypeError):
        listed = {}
    want = {"test/tiny-GGUF:Q4_K_M", "test/tiny-GGUF:Q8_0", "test/split-GGUF:Q8_0", "test/flaky-GGUF:Q4_K_M",
            "test/resume-GGUF:Q4_K_M", "test/private-GGUF:Q4_K_M", "test/fresh-GGUF:Q4_K_M"}
    expect("list holds what was pulled, and not the failures", set(listed) == want, sorted(listed))
    t8 = listed.get("test/tiny-GGUF:Q8_0", {})
    expect("list's fields", t8.get("quant") == "Q8_0" and t8.get("size") == len(q8) and t8.get("complete") is True
           and t8.get("path") == in_library("tiny-GGUF", "tiny-Q8_0.gguf") and t8.get("modified", "").endswith("Z")
           and listed.get("test/split-GGUF:Q8_0", {}).get("size") == len(big), t8)
    rc, out, err = check("list for people", ["list"], 0, want_out="test/tiny-GGUF:Q8_0")
    expect("list's columns", "NAME" in out and "QUANT" in out and "SIZE" in out and "MODIFIED" in out and "PATH" in out, out)
    check("rm a model", ["rm", "test/tiny-GGUF:Q8_0"], 0, "removed test/tiny-GGUF:Q8_0")
    expect("rm removes its file, keeps the other quant", not os.path.exists(in_library("tiny-GGUF", "tiny-Q8_0.gguf"))
           and os.path.exists(in_library("tiny-GGUF", "tiny-Q4_K_M.gguf")))
    check("rm it again: not in the library", ["rm", "test/tiny-GGUF:Q8_0"], 1, "not in the library")
    check("rm a split model", ["rm", "test/split-GGUF:Q8_0"], 0)
    expect("rm removes every part and the empty folders", not os.path.exists(in_library("split-GGUF")))
    check("rm by the default name", ["rm", "test/tiny-GGUF"], 0)
    expect("the repo's folder goes with its last model", not os.path.exists(in_library("tiny-GGUF")))
    check("a name offline after rm", ["info", "test/tiny-GGUF"], 1, "not in the library", extra={"HF_HUB_OFFLINE": "1"})

    # ---- the repo's default changes: the name without a quant follows the last pull
    hub.add("test/moving-GGUF", {"moving-Q4_K_M.gguf": q4, "moving-Q8_0.gguf": q8})
    check("pull the default", ["pull", "test/moving-GGUF"], 0, want_out="moving-Q4_K_M.gguf")
    hub.add("test/moving-GGUF", {"moving-Q8_0.gguf": q8})  # Q4_K_M gone: the only model is the default now
    check("pull the new default", ["pull", "test/moving-GGUF"], 0, want_out="moving-Q8_0.gguf")
    check("the name means the new default", ["pull", "test/moving-GGUF", "--offline"], 0, want_out="moving-Q8_0.gguf")
    check("the old one keeps its quant", ["pull", "test/moving-GGUF:Q4_K_M", "--offline"], 0,
          want_out="moving-Q4_K_M.gguf")

    # ---- usage errors
    for bad in ("noslash", "a/b/c", "a b/c", "a/b:", "-a/b"):
        check(f"pull '{bad}' is a usage error", ["pull", bad], 2, "brasa pull:")
    check("rm a malformed name", ["rm", "x"], 2, "not a model name")
    check("pull without a name", ["pull"], 2, "missing OWNER/REPO")
    check("pull with an unknown option", ["pull", "a/b", "--fast"], 2, "unknown option")
    check("list with an argument", ["list", "a/b"], 2)
    for cmd in ("pull", "list", "rm"):
        check(f"{cmd} --help", [cmd, "--help"], 0, want_out=f"Usage: brasa {cmd}")

    # ---- the progress bar, on a terminal
    hub.add("test/bar-GGUF", {"bar-Q4_K_M.gguf": q4})
    master, slave = pty.openpty()
    p = subprocess.Popen([brasa, "pull", "test/bar-GGUF"], env=env, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen_bytes = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen_bytes += chunk
    p.wait(timeout=60)
    os.close(master)
    text = seen_bytes.decode(errors="replace")
    expect("on a terminal, a progress bar with the speed", p.returncode == 0 and "MB/s" in text and "100%" in text
           and "sha256 ok" in text, text[-400:])

    server.shutdown()
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
