#!/usr/bin/env python3
"""`brasa run --chat` and `brasa chat` show a reasoning format's thinking apart from its answer.

The model is a scripted qwen3 file (tests/tools/scripted_qwen3.py: SmolLM2's tokenizer with Qwen3's
<think> tokens, weights that make the reply "<think>plan</think>\\n\\nAnswer" after a generation
prompt, and "Answer" after thinking off's empty block), so what the engine generates is known. Piped,
standard output holds the answer alone and the thinking goes to standard error after "thinking:";
on a terminal (script(1)) the thinking is dimmed on standard output before the answer; --no-think
closes the block in the prompt (four tokens more) and the reply is the answer at once; a template
whose generation prompt opens the block (the thinking-only models) has its reply start inside it;
--think needs --chat; a format without reasoning (SmolLM2's chatml) is unchanged by the flags.

Usage: test_chat_reasoning.py --brasa PATH_TO_brasa --model SMOLLM2_GGUF
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from checks import Checks  # noqa: E402
import scripted_qwen3  # noqa: E402

CHECKS = Checks("chat reasoning")
expect = CHECKS.expect


def run(brasa, args, stdin=b""):
    r = subprocess.run([brasa, *args], input=stdin, capture_output=True, timeout=300)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def prompt_tokens(stderr):
    m = re.search(r"prompt: (\d+) tokens", stderr)
    return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.model):
        print(f"skipped: model missing: {a.model} (run scripts/fetch_models.py)")
        return 77
    b = a.brasa
    with tempfile.TemporaryDirectory(prefix="brasa-think-") as work:
        model = scripted_qwen3.make(a.model, os.path.join(work, "q3.gguf"), scripted_qwen3.HYBRID_TEMPLATE,
                                    scripted_qwen3.REASONING_CHAIN)
        opening = scripted_qwen3.make(a.model, os.path.join(work, "q3-opening.gguf"), scripted_qwen3.OPENING_TEMPLATE,
                                      scripted_qwen3.OPENING_CHAIN)
        q = ["run", "-m", model, "--chat", "-p", "Hello", "--temp", "0", "-n", "16"]

        rc, out, err = run(b, q)
        expect("run --chat: exit 0", rc == 0, err)
        expect("run --chat piped: standard output is the answer alone", out == "Answer", repr(out))
        expect("run --chat piped: the thinking on standard error after 'thinking:'", "thinking:\nplan\n" in err,
               repr(err))
        think_prompt = prompt_tokens(err)

        rc, out, err = run(b, [*q, "--no-think"])
        expect("run --no-think: the answer at once", rc == 0 and out == "Answer" and "thinking:" not in err,
               f"rc {rc}, out {out!r}, err {err!r}")
        n = prompt_tokens(err)
        expect("run --no-think: the prompt closes an empty block (4 tokens more)",
               think_prompt is not None and n == think_prompt + 4, f"{n} vs {think_prompt}")

        rc, out, err = run(b, [*q, "--think"])
        expect("run --think: the default", rc == 0 and out == "Answer" and "thinking:\nplan\n" in err, repr(err))

        rc, out, err = run(b, ["run", "-m", model, "-p", "Hello", "--no-think"])
        expect("run --no-think without --chat: a usage error", rc == 2 and "--no-think needs --chat" in err, err)

        rc, out, err = run(b, ["run", "-m", opening, "--chat", "-p", "Hello", "--temp", "0", "-n", "16"])
        expect("a prompt that opens the block: the reply starts inside it",
               rc == 0 and out == "Answer" and "thinking:\nplan\n" in err, f"rc {rc}, out {out!r}, err {err!r}")
        rc, out, err = run(b, ["run", "-m", opening, "--chat", "-p", "Hello", "--temp", "0", "-n", "16", "--no-think"])
        expect("a prompt that opens the block, thinking off: the answer at once",
               rc == 0 and out == "Answer" and "thinking:" not in err, f"rc {rc}, out {out!r}, err {err!r}")

        rc, out, err = run(b, ["chat", "-m", model, "--temp", "0", "-n", "16"], b"Hello\nAgain\n")
        expect("chat piped: each turn's answer alone on standard output", rc == 0 and out == "Answer\nAnswer\n",
               f"rc {rc}, out {out!r}, err {err!r}")
        expect("chat piped: each turn's thinking on standard error", err.count("thinking:\nplan\n") == 2, repr(err))
        rc, out, err = run(b, ["chat", "-m", model, "--temp", "0", "-n", "16", "--no-think"], b"Hello\nAgain\n")
        expect("chat --no-think: answers only", rc == 0 and out == "Answer\nAnswer\n" and "thinking:" not in err,
               f"rc {rc}, out {out!r}, err {err!r}")

        script = shutil.which("script")
        if script and sys.platform.startswith("linux"):
            cmd = " ".join(f"'{x}'" for x in [b, *q])
            r = subprocess.run([script, "-qec", cmd, "/dev/null"], capture_output=True, timeout=300,
                               env=dict(os.environ, TERM="xterm", NO_COLOR=""))
            screen = r.stdout.decode("utf-8", "replace").replace("\r", "")
            expect("on a terminal: the thinking dimmed, then the answer",
                   r.returncode == 0 and re.search(r"\x1b\[2mthinking:\nplan\x1b\[0m\n\nAnswer", screen) is not None,
                   repr(screen))
            r = subprocess.run([script, "-qec", cmd, "/dev/null"], capture_output=True, timeout=300,
                               env=dict(os.environ, TERM="xterm", NO_COLOR="1"))
            screen = r.stdout.decode("utf-8", "replace").replace("\r", "")
            expect("on a terminal with NO_COLOR: no styles, the label", "\x1b[" not in screen.split("thinking:")[-1]
                   and "thinking:\nplan\n\nAnswer" in screen, repr(screen))
        else:
            print("note: no script(1) here: the terminal view is not checked")

    # a format without reasoning: the flags change nothing
    base = ["run", "-m", a.model, "--chat", "-p", "Hi", "--temp", "0", "-n", "4"]
    rc1, out1, err1 = run(b, base)
    rc2, out2, err2 = run(b, [*base, "--no-think"])
    expect("chatml: --no-think changes nothing", rc1 == 0 and rc2 == 0 and out1 == out2 and out1 != ""
           and "thinking:" not in err1 + err2 and prompt_tokens(err1) == prompt_tokens(err2),
           f"{out1!r} vs {out2!r}")
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
