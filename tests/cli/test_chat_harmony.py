#!/usr/bin/env python3
"""`brasa run --chat` and `brasa chat` read a harmony (gpt-oss) reply: the analysis channel is the
thinking, the final channel the answer, a commentary message to=functions.NAME a tool call; and
generation goes on past <|end|> (which closes the analysis) to stop at <|return|> or <|call|>.

The models are scripted harmony files (tests/tools/scripted_harmony.py: SmolLM2's tokenizer with
harmony's control tokens, <|end|> named the end of turn, weights that make a known reply), so what
the engine generates is known. Piped, standard output holds the answer alone (or the call's line)
and the thinking goes to standard error after "thinking:"; --no-think hides the thinking, which a
harmony model writes anyway; a chat keeps the answers alone, turn after turn; on a terminal
(script(1)) the thinking is dimmed before the answer.

Usage: test_chat_harmony.py --brasa PATH_TO_brasa --model SMOLLM2_GGUF
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from checks import Checks  # noqa: E402
import scripted_harmony as sh  # noqa: E402

CHECKS = Checks("chat harmony")
expect = CHECKS.expect
CALL_LINE = f"[tool call] {sh.CALL_NAME} {sh.CALL_ARGUMENTS}\n"


def run(brasa, args, stdin=b""):
    r = subprocess.run([brasa, *args], input=stdin, capture_output=True, timeout=300)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def generated_tokens(stderr):
    m = re.search(r"generation: (\d+) tokens", stderr)
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
    thinking = f"thinking:\n{sh.REASONING_TEXT}\n"
    with tempfile.TemporaryDirectory(prefix="brasa-harmony-") as work:
        answer = sh.make(a.model, os.path.join(work, "answer.gguf"), "answer")
        call = sh.make(a.model, os.path.join(work, "call.gguf"), "call")
        q = ["run", "-m", answer, "--chat", "-p", "Hello", "--temp", "0", "-n", "40"]

        rc, out, err = run(b, q)
        expect("run --chat: exit 0", rc == 0, err)
        expect("run --chat piped: standard output is the final channel alone", out == sh.ANSWER_TEXT, repr(out))
        expect("run --chat piped: the analysis channel on standard error after 'thinking:'", thinking in err,
               repr(err))
        # the reply's 12 tokens after the prompt's "assistant", <|return|> the last
        expect("generation goes past <|end|> and stops at <|return|>", generated_tokens(err) == 12, repr(err))

        rc, out, err = run(b, [*q, "--no-think"])
        expect("run --no-think: the answer, the analysis hidden",
               rc == 0 and out == sh.ANSWER_TEXT and "thinking:" not in err and sh.REASONING_TEXT not in err,
               f"rc {rc}, out {out!r}, err {err!r}")

        rc, out, err = run(b, ["run", "-m", call, "--chat", "-p", "Weather?", "--temp", "0", "-n", "60"])
        expect("a call: shown as a call, after the thinking, and generation stops at <|call|>",
               rc == 0 and out == CALL_LINE and thinking in err, f"rc {rc}, out {out!r}, err {err!r}")

        rc, out, err = run(b, ["run", "-m", answer, "-p", "<|start|>user<|message|>Hi<|end|><|start|>assistant",
                               "--temp", "0", "-n", "40"])
        expect("run without --chat: the reply as text, control tokens not shown",
               rc == 0 and out == f"analysis{sh.REASONING_TEXT}assistantfinal{sh.ANSWER_TEXT}",
               f"rc {rc}, out {out!r}, err {err!r}")

        rc, out, err = run(b, ["chat", "-m", answer, "--temp", "0", "-n", "40"], b"Hello\nAgain\n")
        expect("chat piped: each turn's answer alone on standard output",
               rc == 0 and out == f"{sh.ANSWER_TEXT}\n{sh.ANSWER_TEXT}\n", f"rc {rc}, out {out!r}, err {err!r}")
        expect("chat piped: each turn's thinking on standard error", err.count(thinking) == 2, repr(err))
        rc, out, err = run(b, ["chat", "-m", call, "--temp", "0", "-n", "60"], b"Weather?\n")
        expect("chat: a call is its own line", rc == 0 and out == CALL_LINE, f"rc {rc}, out {out!r}, err {err!r}")

        rc, out, err = run(b, ["info", answer])
        ends = next((ln for ln in out.splitlines() if ln.lstrip().startswith("ends at")), "")
        expect("info: generation ends at <|return|> and <|call|>, not <|end|>",
               rc == 0 and "<|return|>" in ends and "<|call|>" in ends and "<|end|>" not in ends, repr(ends))
        rc, out, err = run(b, ["info", answer, "--json"])
        try:
            info = json.loads(out)
            eog = info["vocab"]["end_of_generation"]
            expect("info --json: the end-of-generation ids", rc == 0 and len(eog) == 2, repr(eog))
        except (ValueError, KeyError) as e:
            expect("info --json parses", False, str(e))

        script = shutil.which("script")
        if script and sys.platform.startswith("linux"):
            cmd = " ".join(f"'{x}'" for x in [b, *q])
            r = subprocess.run([script, "-qec", cmd, "/dev/null"], capture_output=True, timeout=300,
                               env=dict(os.environ, TERM="xterm", NO_COLOR=""))
            screen = r.stdout.decode("utf-8", "replace").replace("\r", "")
            expect("on a terminal: the thinking dimmed, then the answer",
                   r.returncode == 0 and re.search(r"\x1b\[2mthinking:\nplan\x1b\[0m\n\nAnswer", screen) is not None,
                   repr(screen))
        else:
            print("note: no script(1) here: the terminal view is not checked")
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
