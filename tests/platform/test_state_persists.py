#!/usr/bin/env python3
"""State that persists: the machine figures brasa measures (memory bandwidth, about a second of full
memory traffic) are kept in the per-user cache directory and reused by later runs of doctor and fit;
the directory follows $BRASA_CACHE_DIR, then $XDG_CACHE_HOME; a damaged, foreign or unwritable cache
is measured over without an error; and the file is replaced atomically, so a reader running beside
repeated writers only ever sees a whole file.

Usage: test_state_persists.py --brasa BRASA --model GGUF
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

CHECKS = Checks("state persists")
expect = CHECKS.expect
FORMAT_LINE = "# brasa: figures measured on this machine (delete the file to measure again)"


def doctor(brasa, env, *extra):
    r = subprocess.run([brasa, "doctor", "--json", *extra], capture_output=True, text=True, env=env, timeout=300)
    if not expect(f"doctor {' '.join(extra)} exits 0", r.returncode == 0, r.stderr[-400:]):
        return None
    return json.loads(r.stdout)["memory"]


def parse_cache(text):
    """The fields of a cache file, or None when it is not whole."""
    lines = text.splitlines()
    fields = dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    if not lines or lines[0] != FORMAT_LINE or not {"machine", "bandwidth_gbs", "measured_at"} <= fields.keys():
        return None
    return fields


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = dict(os.environ)
        base.pop("XDG_CACHE_HOME", None)
        base.pop("BRASA_CACHE_DIR", None)  # ctest gives every test its own; this one sets it itself
        cache = os.path.join(tmp, "caché ñandú", "brasa")  # not there yet: made with its parents
        env = dict(base, BRASA_CACHE_DIR=cache)
        path = os.path.join(cache, "machine.txt")

        first = doctor(a.brasa, env)
        expect("a first run measures", first and first["bandwidth_from_cache"] is False, first)
        expect("... and keeps the figure in the cache directory", first and first["cache_file"] == path
               and os.path.isfile(path), first)
        fields = parse_cache(open(path, encoding="utf-8").read()) if os.path.isfile(path) else None
        expect("the cache file is whole and names the machine", fields is not None and "kernels=" in fields["machine"],
               fields)
        second = doctor(a.brasa, env)
        expect("a second run reuses it", second and second["bandwidth_from_cache"] is True, second)
        expect("... with the same figure and time", first and second and
               abs(second["bandwidth_gbs"] - first["bandwidth_gbs"]) < 0.002 and
               second["bandwidth_measured_at"] == first["bandwidth_measured_at"], (first, second))
        r = subprocess.run([a.brasa, "fit", "--json", "--device", "cpu", a.model], capture_output=True, text=True,
                           env=env, timeout=300)
        fit = json.loads(r.stdout) if r.returncode == 0 else None
        expect("fit uses the kept figure", fit and first and
               abs(fit["device"]["bandwidth_gbs"] - first["bandwidth_gbs"]) < 0.002, (fit or {}).get("device"))
        again = doctor(a.brasa, env, "--remeasure")
        expect("--remeasure measures again", again and again["bandwidth_from_cache"] is False, again)
        after = doctor(a.brasa, env)
        expect("... and keeps the new figure", again and after and after["bandwidth_from_cache"] and
               abs(after["bandwidth_gbs"] - again["bandwidth_gbs"]) < 0.002, (again, after))

        # damaged or foreign files: measured over and rewritten, never an error
        for name, content in (("garbage", b"\x00\xff\xfe not a cache \x80\n" * 50),
                              ("truncated", FORMAT_LINE.encode()[:30]),
                              ("another machine", (FORMAT_LINE + "\nmachine=kernels=neon cores=64 memory=1\n"
                                                   "bandwidth_gbs=500\nmeasured_at=1700000000\n").encode()),
                              ("an absurd figure", open(path, "rb").read().replace(b"bandwidth_gbs=", b"bandwidth_gbs=9e99")),
                              ("empty", b"")):
            with open(path, "wb") as f:
                f.write(content)
            got = doctor(a.brasa, env)
            expect(f"a cache file holding {name} is measured over", got and got["bandwidth_from_cache"] is False
                   and 0 < got["bandwidth_gbs"] < 1e5, got)
            fields = parse_cache(open(path, encoding="utf-8", errors="replace").read())
            expect(f"... and rewritten whole ({name})", fields is not None and float(fields["bandwidth_gbs"]) < 1e5,
                   fields)

        # a reader beside writers: every read sees a whole file (the old one or the new one)
        seen, torn, stop = [0], [], threading.Event()

        def reader():
            while not stop.is_set():
                try:
                    text = open(path, encoding="utf-8").read()
                except FileNotFoundError:
                    torn.append("missing")
                    continue
                seen[0] += 1
                if parse_cache(text) is None:
                    torn.append(text)

        t = threading.Thread(target=reader)
        t.start()
        for _ in range(3):
            doctor(a.brasa, env, "--remeasure")
        stop.set()
        t.join()
        expect(f"a reader saw only whole files ({seen[0]} reads beside 3 rewrites)", not torn and seen[0] > 0,
               torn[:2])
        expect("no temporary file is left behind", glob.glob(os.path.join(cache, "*.tmp-*")) == [],
               os.listdir(cache))

        # where the directory comes from
        xdg = os.path.join(tmp, "xdg")
        got = doctor(a.brasa, dict(base, XDG_CACHE_HOME=xdg))
        expect("without BRASA_CACHE_DIR, $XDG_CACHE_HOME/brasa holds the cache",
               got and got["cache_file"] == os.path.join(xdg, "brasa", "machine.txt"), got)
        blocked = os.path.join(tmp, "a file")
        open(blocked, "w").close()
        got = doctor(a.brasa, dict(base, BRASA_CACHE_DIR=blocked))
        expect("a cache directory that cannot be made: measured, not kept, said why",
               got and got["cache_file"] is None and got["cache_problem"] and got["bandwidth_gbs"] > 0, got)
        r = subprocess.run([a.brasa, "doctor"], capture_output=True, text=True, env=dict(base, BRASA_CACHE_DIR=blocked),
                           timeout=300)
        expect("... and the report says so", r.returncode == 0 and "not kept" in r.stdout, r.stdout[:600])
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
