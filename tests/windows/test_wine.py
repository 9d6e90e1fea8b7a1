#!/usr/bin/env python3
"""The Windows build (mingw-w64), run under wine against the native build: a real generation with
SmolLM2 gives the native text; arguments arrive as UTF-8 (read from the wide command line), so a
prompt with accents tokenizes as it does natively; a model under a folder named
'modelos/canción ñandú/' loads; text reaches a pipe as UTF-8 bytes and a console (a pseudo-terminal
that wine turns into a Windows console) through the wide console API, accents intact; the cache
directory is made and reused through the wide API.

Usage: test_wine.py --exe BRASA.EXE --native BRASA --model SMOLLM2 [--wine WINE]
"""
import argparse
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

CHECKS = Checks("windows build under wine")
expect = CHECKS.expect
TEXT = "¿Qué tal? Canción, pingüino, ñandú"


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, capture_output=True, env=env, timeout=timeout)


def on_console(cmd, env, timeout=120):
    """Runs cmd with a pseudo-terminal for its standard streams; returns (status, bytes shown)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    shown = b""
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            p.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return p.wait(), shown


def rendered(shown):
    """What a console shows as plain bytes: wine's console draws through escape sequences, moving the
    cursor over blanks instead of writing them."""
    shown = re.sub(rb"\x1b\[(\d*)C", lambda m: b" " * int(m.group(1) or 1), shown)
    shown = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", shown)
    return shown.replace(b"\r", b"")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--native", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--wine", default=shutil.which("wine64") or shutil.which("wine") or "wine")
    a = ap.parse_args()
    if not os.path.isfile(a.model):
        print(f"skipped: {a.model} missing (run scripts/fetch_models.py)")
        return 77
    env = dict(os.environ, WINEDEBUG="-all", LANG="C.UTF-8", LC_ALL="C.UTF-8")
    win = [a.wine, a.exe]

    r = run(win + ["--version"], env)
    expect("brasa.exe starts under wine", r.returncode == 0 and b"brasa" in r.stdout, r.stderr[-400:])

    # a real generation: float activations give the native build's text exactly; the default (8-bit
    # activations) must answer too
    prompt = ["-p", "The capital of France is", "--temp", "0", "-n", "8"]
    f32 = dict(env, BRASA_CPU_ACTIVATIONS="f32")
    native = run([a.native, "run", "-m", a.model] + prompt, f32)
    windows = run(win + ["run", "-m", a.model] + prompt, f32)
    expect("generation under wine equals the native text (float activations)",
           windows.returncode == 0 and windows.stdout == native.stdout and native.stdout.strip(),
           f"{windows.stdout!r} vs {native.stdout!r}; {windows.stderr[-300:]!r}")
    q8 = run(win + ["run", "-m", a.model] + prompt, env)
    expect("generation under wine with 8-bit activations", q8.returncode == 0 and b"Paris" in q8.stdout, q8.stdout)

    # arguments: the wide command line, as UTF-8
    ids_native = run([a.native, "tokenize", "-m", a.model, "--ids", "--no-bos", TEXT], env).stdout.split()
    ids_windows = run(win + ["tokenize", "-m", a.model, "--ids", "--no-bos", TEXT], env).stdout.split()
    expect("an argument with accents tokenizes as natively", ids_windows == ids_native and ids_native,
           f"{ids_windows} vs {ids_native}")

    # output: UTF-8 bytes to a pipe, the wide console API to a console
    ids = [i.decode() for i in ids_native]
    piped = run(win + ["detokenize", "-m", a.model] + ids, env)
    expect("piped output is the text's UTF-8 bytes", piped.stdout == TEXT.encode(), piped.stdout)
    status, shown = on_console(win + ["detokenize", "-m", a.model] + ids, env)
    expect("a console shows the text with its accents", status == 0 and TEXT.encode() in rendered(shown),
           shown[-300:])
    gen = ["run", "-m", a.model, "-p", TEXT, "--temp", "0", "-n", "12"]
    want = run([a.native] + gen, f32).stdout
    status, shown = on_console(win + gen, f32)
    expect("a console shows a streamed generation as generated", status == 0 and want.strip()
           and want.strip() in rendered(shown), f"{rendered(shown)[-300:]!r} vs {want!r}")

    with tempfile.TemporaryDirectory() as tmp:
        # a model under a folder with accents
        folder = os.path.join(tmp, "modelos", "canción ñandú")
        os.makedirs(folder)
        model = os.path.join(folder, "SmolLM2 ñ.gguf")
        try:
            os.link(a.model, model)
        except OSError:
            shutil.copyfile(a.model, model)
        r = run(win + ["info", model], env)
        expect("a model under 'modelos/canción ñandú/' loads", r.returncode == 0 and b"llama" in r.stdout,
               r.stderr[-300:])
        r = run(win + ["run", "-m", model] + prompt, f32)
        expect("... and generates", r.returncode == 0 and r.stdout == native.stdout, r.stdout)

        # the cache directory, through the wide API: made with its parents, written, reused
        cache = os.path.join(tmp, "caché", "brasa")
        cenv = dict(env, BRASA_CACHE_DIR="Z:" + cache.replace("/", "\\"))
        first = run(win + ["doctor", "--json"], cenv)
        second = run(win + ["doctor", "--json"], cenv)
        try:
            m1, m2 = json.loads(first.stdout)["memory"], json.loads(second.stdout)["memory"]
        except (ValueError, KeyError) as e:
            m1 = m2 = None
            expect("doctor --json under wine", False, f"{e}: {first.stdout[:200]!r} {first.stderr[-300:]!r}")
        expect("doctor measures and keeps the figure in a folder with an accent",
               m1 and m1["bandwidth_from_cache"] is False and os.path.isfile(os.path.join(cache, "machine.txt")), m1)
        expect("... which the next run reuses", m2 and m2["bandwidth_from_cache"] is True, m2)
        expect("... leaving no temporary file", [n for n in os.listdir(cache) if ".tmp-" in n] == [],
               os.listdir(cache))
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
