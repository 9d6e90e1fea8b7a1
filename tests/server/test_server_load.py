#!/usr/bin/env python3
"""A bounded load run on loopback: 32 concurrent clients send chat requests (half streamed) for a
fixed time; every request must succeed. Prints throughput and latency percentiles, time to first
token under load, and the batching gain: aggregate decode tokens/s of 4 concurrent streams against
one stream alone (figures, not pass/fail: timings on a shared machine are noisy).

Usage: test_server_load.py --brasa PATH_TO_brasa --model GGUF [--seconds 30] [--clients 32] [--json FILE]
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402
from serverproc import Server  # noqa: E402

CHECKS = Checks("server load")
expect = CHECKS.expect
QUESTIONS = ["What is the capital of France?", "Name a primary color.", "Count from one to five.",
             "What is 2 + 2?", "Say hello in Spanish.", "Name a planet.", "What is the opposite of hot?"]


def one_request(port, question, max_tokens, stream, stamps=None):
    """Returns (ok, seconds, seconds to first token, completion tokens); a list `stamps` gets the
    arrival time of each streamed content chunk."""
    t0 = time.time()
    stamps = [] if stamps is None else stamps
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        body = {"messages": [{"role": "user", "content": question}], "max_tokens": max_tokens, "temperature": 0,
                "stream": stream, "stream_options": {"include_usage": True}}
        c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            r.read()
            return False, time.time() - t0, None, 0
        if not stream:
            j = json.loads(r.read())
            return True, time.time() - t0, None, j["usage"]["completion_tokens"]
        tokens, done, pending = 0, False, b""
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            pending += chunk
            while b"\n\n" in pending:
                event, pending = pending.split(b"\n\n", 1)
                data = event[6:]
                if data == b"[DONE]":
                    done = True
                    continue
                j = json.loads(data)
                if j.get("usage"):
                    tokens = j["usage"]["completion_tokens"]
                elif j["choices"] and j["choices"][0]["delta"].get("content"):
                    stamps.append(time.time())
        return done, time.time() - t0, stamps[0] - t0 if stamps else None, tokens
    except (OSError, ValueError, http.client.HTTPException):
        return False, time.time() - t0, None, 0
    finally:
        c.close()


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else float("nan")


def load_run(port, clients, seconds):
    stop_at = time.time() + seconds
    results, lock = [], threading.Lock()

    def client(i):
        k = 0
        while time.time() < stop_at:
            r = one_request(port, QUESTIONS[(i + k) % len(QUESTIONS)], 16, stream=(i % 2 == 0))
            with lock:
                results.append(r)
            k += 1

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.time() - t0


def decode_rate(port, streams, tokens=96):
    """Generated tokens per second of `streams` concurrent streamed requests, all together: end to
    end (prompts included), and decoding only (the tokens after each first one, over the time from
    the earliest first token to the last stream's end), and steady (the chunks that arrived while
    every stream was decoding: after the last first token, before the first stream ended)."""
    def timed(_):
        start, stamps = time.time(), []
        ok, seconds, first, n = one_request(port, "Write a story about a dragon.", tokens, True, stamps)
        return ok and first is not None and len(stamps) > 1, start + seconds, start + (first or 0), n, stamps

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(streams) as ex:
        rs = list(ex.map(timed, range(streams)))
    end = max(r[1] for r in rs)
    decode = sum(r[3] - 1 for r in rs) / max(end - min(r[2] for r in rs), 1e-9)
    ok = all(r[0] for r in rs)
    steady = float("nan")
    if ok:
        lo, hi = max(r[4][0] for r in rs), min(r[4][-1] for r in rs)
        # a chunk may carry more than one token (text held back until a character is whole):
        # each stream's chunks are weighted by its tokens per chunk
        inside = sum((r[3] - 1) / (len(r[4]) - 1) * sum(1 for s in r[4] if lo < s <= hi) for r in rs)
        steady = inside / (hi - lo) if hi > lo else float("nan")
    return sum(r[3] for r in rs) / (end - t0), decode, steady, ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--json")
    args = ap.parse_args()
    if not os.path.exists(args.model):
        print(f"SKIP: {args.model} is missing (fetch it with scripts/fetch_models.py)")
        return 77
    srv = Server(args.brasa, args.model, "--parallel", "4", "--ctx", "1024", "--queue", "64")
    if not expect("server starts", srv.port is not None, srv.stderr()):
        return CHECKS.finish()
    try:
        results, elapsed = load_run(srv.port, args.clients, args.seconds)
        failed = sum(1 for r in results if not r[0])
        lat = [r[1] for r in results if r[0]]
        ttft = [r[2] for r in results if r[0] and r[2] is not None]
        tokens = sum(r[3] for r in results if r[0])
        expect("load run: requests made", len(results) >= args.clients, str(len(results)))
        expect("load run: zero failed requests", failed == 0, f"{failed} of {len(results)} failed")
        print(f"load: {args.clients} clients for {elapsed:.0f} s: {len(results)} requests, {failed} failed, "
              f"{len(results) / elapsed:.2f} requests/s, {tokens / elapsed:.1f} generated tokens/s")
        print(f"latency p50 {pct(lat, 50):.2f} s, p90 {pct(lat, 90):.2f} s, p99 {pct(lat, 99):.2f} s; "
              f"time to first token (streams) p50 {pct(ttft, 50):.2f} s, p90 {pct(ttft, 90):.2f} s")
        one_all, one, one_steady, ok1 = decode_rate(srv.port, 1)
        four_all, four, four_steady, ok4 = decode_rate(srv.port, 4)
        expect("batching runs succeed", ok1 and ok4, "")
        print(f"decode: 1 stream {one:.1f} tokens/s, 4 streams {four:.1f} tokens/s together ({four / one:.2f}x); "
              f"steady, all 4 decoding: {one_steady:.1f} and {four_steady:.1f} ({four_steady / one_steady:.2f}x); "
              f"prompts included {one_all:.1f} and {four_all:.1f} ({four_all / one_all:.2f}x)")
        # time to first token of a short prompt while 3 long streams run
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            bg = [ex.submit(one_request, srv.port, "Write a story about a dragon.", 96, True) for _ in range(3)]
            time.sleep(1.0)
            probe = one_request(srv.port, "Hi", 4, True)
            for f in bg:
                f.result()
        print(f"time to first token of a short prompt beside 3 running streams: {probe[2]:.3f} s")
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as f:
                json.dump({"clients": args.clients, "seconds": elapsed, "requests": len(results), "failed": failed,
                           "latency_p50": pct(lat, 50), "latency_p90": pct(lat, 90), "latency_p99": pct(lat, 99),
                           "ttft_p50": pct(ttft, 50), "decode_1": one, "decode_4": four,
                           "steady_1": one_steady, "steady_4": four_steady,
                           "end_to_end_1": one_all, "end_to_end_4": four_all,
                           "ttft_under_load": probe[2]}, f, indent=1)
    finally:
        code = srv.stop()
    expect("server exits 0", code == 0, srv.stderr()[-1000:])
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
