#!/usr/bin/env python3
"""A real `brasa serve` on 127.0.0.1 with real clients: the official openai client (chat, streamed
and not, completions, models), SSE framing byte by byte through curl, 8 concurrent greedy clients
getting exactly what each gets alone, more than 40 malformed requests each answered with the right
4xx (or dropped) while the server keeps answering correctly, a client leaving mid-stream freeing
its slot, slow clients timed out, the API key, the device lock (a second server refused, a stale
lock taken over), and SIGTERM ending in-flight streams cleanly with exit 0. Run against the
AddressSanitizer build, any sanitizer report or leak fails.

Usage: test_server.py --brasa PATH_TO_brasa(-asan) --model SMOLLM2_GGUF
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402
from serverproc import Server  # noqa: E402

CHECKS = Checks("server")
expect = CHECKS.expect


def request(port, method, path, body=None, headers=None, timeout=120):
    """One HTTP request on a fresh connection: (status, parsed JSON or raw bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        raw = r.read()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw
    finally:
        c.close()


def chat_body(text, n=24, **extra):
    b = {"model": "x", "messages": [{"role": "user", "content": text}], "temperature": 0, "max_tokens": n}
    b.update(extra)
    return b


def raw_exchange(port, data, read_timeout=10):
    """Sends raw bytes, returns what comes back until the server closes or goes quiet."""
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


def post_raw(port, body):
    """Opens a connection and sends a chat request on it; returns the socket, for reading or leaving."""
    s = socket.create_connection(("127.0.0.1", port))
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(data) + data)
    return s


def status_of(raw):
    try:
        return int(raw.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def check_openai_client(port):
    from openai import OpenAI
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=120)
    models = client.models.list()
    expect("openai models.list: the model by its file name without .gguf", len(models.data) == 1 and
           models.data[0].id == "SmolLM2-135M-Instruct.Q4_1", str(models))
    r = client.chat.completions.create(model=models.data[0].id, temperature=0, max_tokens=24,
                                       messages=[{"role": "system", "content": "You are a helpful assistant."},
                                                 {"role": "user", "content": "Hello!"},
                                                 {"role": "assistant", "content": "Hello! How can I help?"},
                                                 {"role": "user", "content": "Say one word."}])
    expect("openai chat with system and assistant turns", r.choices[0].message.content.strip() != "", str(r))
    # a 135M model is fragile: "What is the capital of France?" gets "L'Etoile, ..." with the
    # default 8-bit activations and f16 cache; this phrasing gets Paris (see test_run.py)
    r = client.chat.completions.create(model=models.data[0].id, temperature=0, max_tokens=24,
                                       messages=[{"role": "user", "content": "Name the capital of France."}])
    text = r.choices[0].message.content
    expect("openai chat answers", "Paris" in text, text)
    expect("openai chat usage", r.usage.prompt_tokens > 5 and 0 < r.usage.completion_tokens <= 24
           and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, str(r.usage))
    expect("openai chat finish_reason", r.choices[0].finish_reason in ("stop", "length"), r.choices[0].finish_reason)
    parts, finish, usage = [], None, None
    stream = client.chat.completions.create(model="m", temperature=0, max_tokens=24, stream=True,
                                            stream_options={"include_usage": True},
                                            messages=[{"role": "user", "content": "Name the capital of France."}])
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for ch in chunk.choices:
            if ch.delta.content:
                parts.append(ch.delta.content)
            if ch.finish_reason:
                finish = ch.finish_reason
    expect("openai streamed chat equals the whole reply", "".join(parts) == text, f"{''.join(parts)!r} vs {text!r}")
    expect("openai stream finish and usage", finish in ("stop", "length") and usage and
           usage.completion_tokens == r.usage.completion_tokens, f"{finish} {usage}")
    c = client.completions.create(model="m", prompt="The capital of France is", max_tokens=6, temperature=0)
    expect("openai completions", "Paris" in c.choices[0].text and c.choices[0].finish_reason == "length", str(c))
    streamed = "".join(ch.choices[0].text for ch in client.completions.create(
        model="m", prompt="The capital of France is", max_tokens=6, temperature=0, stream=True) if ch.choices)
    expect("openai streamed completions", streamed == c.choices[0].text, f"{streamed!r} vs {c.choices[0].text!r}")
    r = client.chat.completions.create(model="m", temperature=0, max_tokens=40, stop=["Paris"],
                                       messages=[{"role": "user", "content": "Name the capital of France."}])
    expect("stop string ends the reply before it", "Paris" not in r.choices[0].message.content
           and r.choices[0].finish_reason == "stop", str(r.choices[0]))
    # accents survive: the reply is valid UTF-8 JSON, and an accented prompt is understood
    r = client.chat.completions.create(model="m", temperature=0, max_tokens=16,
                                       messages=[{"role": "user", "content": "¿Qué tal? Canción, pingüino, ñandú"}])
    expect("accented prompt answered", len(r.choices[0].message.content) > 0, str(r))
    try:
        client.chat.completions.create(model="m", messages=[], max_tokens=4)
        expect("openai client sees a 400", False, "no error")
    except Exception as e:  # openai.BadRequestError
        expect("openai client sees a 400", getattr(e, "status_code", 0) == 400, repr(e))


def check_sse_framing(port):
    body = json.dumps(chat_body("Name three colors.", 12, stream=True))
    r = subprocess.run(["curl", "-sN", "-D", "-", "-H", "Content-Type: application/json", "--data-binary", body,
                        f"http://127.0.0.1:{port}/v1/chat/completions"], capture_output=True, timeout=120)
    raw = r.stdout
    head, _, stream = raw.partition(b"\r\n\r\n")
    expect("SSE content type", b"content-type: text/event-stream" in head.lower(), head.decode(errors="replace"))
    expect("SSE ends with [DONE]", stream.endswith(b"data: [DONE]\n\n"), repr(stream[-60:]))
    events = stream.split(b"\n\n")
    expect("SSE events end with a blank line", events[-1] == b"", repr(stream[-20:]))
    bad = [e for e in events[:-1] if not e.startswith(b"data: ") or b"\n" in e]
    expect("every SSE event is one data: line", not bad, repr(bad[:2]))
    chunks = [json.loads(e[6:]) for e in events[:-2]]
    expect("SSE chunks are chat.completion.chunk objects", chunks and all(
        c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks), repr(chunks[:1]))
    expect("first delta carries the role", chunks[0]["choices"][0]["delta"].get("role") == "assistant", repr(chunks[0]))
    expect("last chunk has the finish_reason", chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")
           and all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1]), repr(chunks[-1]))


PROMPTS = ["What is the capital of France?", "Name a primary color.", "Count from one to five.",
           "What is 2 + 2?", "Say hello in Spanish.", "What animal says moo?", "Name a planet.",
           "What is the opposite of hot?"]


def check_concurrency(port):
    alone = [request(port, "POST", "/v1/chat/completions", chat_body(p, 20))[1] for p in PROMPTS]
    texts = [a["choices"][0]["message"]["content"] for a in alone]
    for _ in range(2):
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            together = list(ex.map(lambda p: request(port, "POST", "/v1/chat/completions", chat_body(p, 20))[1], PROMPTS))
        got = [t["choices"][0]["message"]["content"] for t in together]
        diff = [(p, a, g) for p, a, g in zip(PROMPTS, texts, got) if a != g]
        expect("8 concurrent greedy clients get what each gets alone", not diff, repr(diff[:2]))
    return texts[0]


def check_bad_input(port, reference):
    P = "/v1/chat/completions"
    ok_msgs = [{"role": "user", "content": "hi"}]
    cases = [
        ("invalid JSON", P, b"{bad", 400), ("empty body", P, b"", 400), ("JSON array", P, b"[1,2]", 400),
        ("JSON string", P, b'"hi"', 400), ("JSON null", P, b"null", 400), ("truncated JSON", P, b'{"messages": [', 400),
        ("missing messages", P, {"model": "m"}, 400), ("messages not an array", P, {"messages": "hi"}, 400),
        ("empty messages", P, {"messages": []}, 400), ("message not an object", P, {"messages": [1]}, 400),
        ("missing role", P, {"messages": [{"content": "hi"}]}, 400),
        ("unknown role", P, {"messages": [{"role": "wizard", "content": "hi"}]}, 400),
        ("role not a string", P, {"messages": [{"role": 5, "content": "hi"}]}, 400),
        ("missing content", P, {"messages": [{"role": "user"}]}, 400),
        ("content a number", P, {"messages": [{"role": "user", "content": 5}]}, 400),
        ("empty content", P, {"messages": [{"role": "user", "content": ""}]}, 400),
        ("bad content part", P, {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400),
        ("tool_calls on a user message", P, {"messages": [{"role": "user", "content": "x", "tool_calls": []}]}, 400),
        ("a role the API does not have", P, {"messages": [{"role": "function", "content": "x"}]}, 400),
        ("max_tokens negative", P, {"messages": ok_msgs, "max_tokens": -5}, 400),
        ("max_tokens zero", P, {"messages": ok_msgs, "max_tokens": 0}, 400),
        ("max_tokens huge", P, {"messages": ok_msgs, "max_tokens": 1e300}, 400),
        ("max_tokens fractional", P, {"messages": ok_msgs, "max_tokens": 2.5}, 400),
        ("max_tokens a string", P, {"messages": ok_msgs, "max_tokens": "10"}, 400),
        ("max_completion_tokens negative", P, {"messages": ok_msgs, "max_completion_tokens": -1}, 400),
        ("temperature too high", P, {"messages": ok_msgs, "temperature": 7}, 400),
        ("temperature a string", P, {"messages": ok_msgs, "temperature": "hot"}, 400),
        ("top_p zero", P, {"messages": ok_msgs, "top_p": 0}, 400),
        ("top_p above one", P, {"messages": ok_msgs, "top_p": 1.5}, 400),
        ("presence_penalty out of range", P, {"messages": ok_msgs, "presence_penalty": 3}, 400),
        ("frequency_penalty out of range", P, {"messages": ok_msgs, "frequency_penalty": -9}, 400),
        ("n of two", P, {"messages": ok_msgs, "n": 2}, 400), ("stream a string", P, {"messages": ok_msgs, "stream": "yes"}, 400),
        ("stop a number", P, {"messages": ok_msgs, "stop": 5}, 400),
        ("five stop strings", P, {"messages": ok_msgs, "stop": ["a", "b", "c", "d", "e"]}, 400),
        ("empty stop string", P, {"messages": ok_msgs, "stop": [""]}, 400),
        ("seed fractional", P, {"messages": ok_msgs, "seed": 1.5}, 400),
        ("stream_options not an object", P, {"messages": ok_msgs, "stream_options": 1}, 400),
        ("model a number", P, {"messages": ok_msgs, "model": 7}, 400),
        ("invalid UTF-8", P, b'{"messages":[{"role":"user","content":"\xff\xfe"}]}', 400),
        ("lone surrogate escape", P, b'{"messages":[{"role":"user","content":"\\ud800"}]}', 400),
        ("deep nesting", P, b"[" * 100000, 400),
        ("prompt longer than the context", P, {"messages": [{"role": "user", "content": "word " * 3000}]}, 400),
        ("completions without prompt", "/v1/completions", {"model": "m"}, 400),
        ("completions empty prompt", "/v1/completions", {"prompt": ""}, 400),
        ("completions prompt a number", "/v1/completions", {"prompt": 5}, 400),
    ]
    for name, path, body, want in cases:
        st, reply = request(port, "POST", path, body)
        err = reply.get("error") if isinstance(reply, dict) else None
        shaped = isinstance(err, dict) and {"message", "type", "param", "code"} <= set(err)
        expect(f"bad input: {name} -> {want}", st == want and shaped, f"{st} {str(reply)[:200]}")
    n = len(cases)
    st, reply = request(port, "POST", P, {"messages": [{"role": "system", "content": "x"}], "max_tokens": 2})
    expect("only a system message: the template decides (SmolLM2's renders it)", st == 200, f"{st} {reply}")
    # routes and methods
    for name, method, path, want in [("unknown route", "GET", "/v1/nothing", 404), ("GET on chat", "GET", P, 405),
                                     ("DELETE on models", "DELETE", "/v1/models", 405),
                                     ("POST on health", "POST", "/health", 405)]:
        st, reply = request(port, method, path, b"{}" if method == "POST" else None)
        expect(f"{name} -> {want}", st == want and isinstance(reply, dict) and "error" in reply, f"{st} {reply}")
        n += 1
    # a 20 MB body, announced and not
    big = b'{"messages":[{"role":"user","content":"' + b"a" * (20 << 20) + b'"}]}'
    try:
        st, _ = request(port, "POST", P, big)
    except (ConnectionError, BrokenPipeError):
        st = 413  # dropped while sending is also acceptable
    expect("20 MB body -> 413", st == 413, str(st))
    raw = raw_exchange(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                       b"".join(b"%x\r\n" % (1 << 20) + b"a" * (1 << 20) + b"\r\n" for _ in range(10)) + b"0\r\n\r\n")
    expect("10 MB chunked body -> 413", status_of(raw) == 413, repr(raw[:80]))
    # a 1 MB header
    raw = raw_exchange(port, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
    expect("1 MB header -> 4xx or dropped", raw == b"" or 400 <= status_of(raw) < 500, repr(raw[:80]))
    # garbage instead of HTTP
    raw = raw_exchange(port, b"\x00\x01\x02 garbage\r\n\r\n")
    expect("not HTTP -> 400 or dropped", raw == b"" or status_of(raw) == 400, repr(raw[:80]))
    n += 4
    expect("at least 40 malformed requests tried", n >= 40, str(n))
    st, reply = request(port, "POST", P, chat_body(PROMPTS[0], 20))
    expect("still correct after the bad input", st == 200 and reply["choices"][0]["message"]["content"] == reference,
           str(reply)[:200])


def wait_idle(port, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        st, h = request(port, "GET", "/health")
        if st == 200 and h["active"] == 0 and h["queued"] == 0:
            return True
        time.sleep(0.1)
    return False


def check_disconnect_and_slow_clients(port, reference):
    # a streamed request left after its first event frees its slot at once
    s = post_raw(port, chat_body("Write a long story about a dragon.", 2000, stream=True))
    got = b""
    while b"data: " not in got:
        got += s.recv(4096)
    s.close()
    t0 = time.time()
    expect("a client that leaves mid-stream frees its slot", wait_idle(port, 10), "slot still busy")
    expect("... quickly", time.time() - t0 < 5, f"{time.time() - t0:.1f} s")
    # the same for a whole (not streamed) reply
    s = post_raw(port, chat_body("Write a long story about a dragon.", 2000))
    time.sleep(1.0)
    s.close()
    expect("a client that leaves before a whole reply frees its slot", wait_idle(port, 10), "slot still busy")
    # slow-loris: headers trickled, then stalled; and a body that never comes: both timed out
    slow = socket.create_connection(("127.0.0.1", port))
    slow.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
    stalled = socket.create_connection(("127.0.0.1", port))
    stalled.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    st, reply = request(port, "POST", "/v1/chat/completions", chat_body(PROMPTS[0], 20))
    expect("served while slow clients hang on", st == 200 and reply["choices"][0]["message"]["content"] == reference,
           str(reply)[:100])
    for name, sock in (("slow-loris headers", slow), ("stalled body", stalled)):
        sock.settimeout(15)
        t0 = time.time()
        try:
            data = sock.recv(4096)
        except (socket.timeout, ConnectionResetError):
            data = None
        expect(f"{name} timed out by the server", data is not None and time.time() - t0 < 10, f"{data!r}")
        sock.close()


def check_metrics(port):
    st, raw = request(port, "GET", "/metrics")
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    for name in ("brasa_requests_total", "brasa_prompt_tokens_total", "brasa_generated_tokens_total",
                 "brasa_time_to_first_token_seconds_bucket", "brasa_token_latency_seconds_count",
                 "brasa_queue_depth", "brasa_active_slots"):
        expect(f"/metrics has {name}", st == 200 and name in text, text[:200])
    st, page = request(port, "GET", "/")
    expect("the chat page is served", st == 200 and b"<html" in page and b"/v1/chat/completions" in page, str(st))


def check_auth_and_lock(brasa, model):
    srv = Server(brasa, model, "--parallel", "1", "--ctx", "512", "--api-key", "s3cret")
    try:
        expect("server with a key starts", srv.port is not None, srv.stderr())
        st, _ = request(srv.port, "GET", "/v1/models")
        expect("no key -> 401", st == 401, str(st))
        st, _ = request(srv.port, "GET", "/v1/models", headers={"Authorization": "Bearer wrong"})
        expect("wrong key -> 401", st == 401, str(st))
        st, _ = request(srv.port, "GET", "/v1/models", headers={"Authorization": "Bearer s3cret"})
        expect("right key -> 200", st == 200, str(st))
        st, _ = request(srv.port, "GET", "/health")
        expect("/health needs no key", st == 200, str(st))
        # one server per device: a second one is refused and names the first one's PID
        r = subprocess.run([brasa, "serve", "-m", model, "--port", "0"], capture_output=True, timeout=60,
                           env=dict(os.environ, XDG_RUNTIME_DIR=srv.runtime_dir))
        err = r.stderr.decode()
        expect("a second server is refused", r.returncode != 0 and f"PID {srv.proc.pid}" in err, err)
        srv.proc.kill()  # dies without cleaning up: its lock file stays
        srv.proc.wait()
        again = Server(brasa, model, "--parallel", "1", "--ctx", "512", runtime_dir=srv.runtime_dir)
        expect("a stale lock is taken over", again.port is not None and "no longer running" in again.stderr(),
               again.stderr())
        expect("... and that server exits 0", again.stop() == 0, again.stderr())
    finally:
        srv.stop(signal.SIGKILL)
    r = subprocess.run([brasa, "serve", "-m", model, "--host", "0.0.0.0", "--port", "0"], capture_output=True, timeout=60)
    expect("non-loopback without a key is refused", r.returncode == 2 and b"--api-key" in r.stderr, r.stderr.decode())
    for args in (["--port", "99999"], ["--parallel", "0"], ["--ctx", "x"], ["--kv-type", "q8"], ["--gpu-layers", "some"],
                 ["--bogus", "1"], []):
        r = subprocess.run([brasa, "serve", *args] + (["-m", model] if args else []), capture_output=True, timeout=60)
        expect(f"bad flags {args} -> usage error", r.returncode == 2, r.stderr.decode())


def check_sigterm(srv):
    """SIGTERM with a stream in flight: the stream ends with [DONE], the server exits 0."""
    s = post_raw(srv.port, chat_body("Count from one to twenty.", 40, stream=True))
    got = b""
    while b"data: " not in got:
        got += s.recv(4096)
    srv.proc.send_signal(signal.SIGTERM)
    s.settimeout(120)
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
        if b"data: [DONE]" in got:
            break
    s.close()
    expect("in-flight stream finishes on SIGTERM", b"data: [DONE]" in got, repr(got[-100:]))
    code = srv.stop()
    expect("SIGTERM: exit status 0", code == 0, f"{code}\n{srv.stderr()[-2000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        print(f"SKIP: {args.model} is missing (fetch it with scripts/fetch_models.py)")
        return 77
    srv = Server(args.brasa, args.model, "--parallel", "4", "--ctx", "1024", "--timeout", "3")
    if not expect("server starts", srv.port is not None, srv.stderr()):
        srv.stop()
        return CHECKS.finish()
    try:
        check_openai_client(srv.port)
        check_sse_framing(srv.port)
        reference = check_concurrency(srv.port)
        check_bad_input(srv.port, reference)
        check_disconnect_and_slow_clients(srv.port, reference)
        check_metrics(srv.port)
        check_sigterm(srv)
    finally:
        srv.stop()
    log = srv.stderr()
    expect("no sanitizer report", "Sanitizer" not in log and "runtime error" not in log, log[-3000:])
    check_auth_and_lock(args.brasa, args.model)
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
