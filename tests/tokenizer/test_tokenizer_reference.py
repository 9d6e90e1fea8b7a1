#!/usr/bin/env python3
"""Check brasa's tokenizers against an independent reference (HF `tokenizers`, built from the
GGUF metadata by ref_tokenizer.py) on the strings of corpus.py.

For each model the corpus (and the INVALID_UTF8 inputs) is written to a temporary file as
records [uint32 little-endian byte length][bytes], and the C tool is run twice:
``tok_batch MODEL INFILE --special`` and ``tok_batch MODEL INFILE``. It must print one line per
record with 4 tab-separated fields: token ids separated by spaces; hex of the full decode of those
ids; hex of the concatenated streaming (token-by-token) decode chunks; the number of streamed
chunks that were not complete, valid UTF-8.

Checks for valid UTF-8 input: ids equal the reference's; the decode equals the reference decode of
those ids; the decode reproduces the input where the reference itself does (Gemma maps a literal
U+2581 to a space, SmolLM2 drops the 21 bytes it has no token for); streaming concat equals the
full decode; no invalid chunks where the full decode is valid UTF-8. For invalid UTF-8: exit 0 and
one line; byte-level (gpt2) models must reproduce the input bytes (less bytes with no token);
SentencePiece models must give the reference ids of the input with invalid bytes replaced by
U+FFFD (Python's maximal-subpart replacement or one U+FFFD per bad byte are both accepted).

Usage (ctest):
    python3 test_tokenizer_reference.py --tok-batch BUILD/tok_batch --model smollm2 --model gemma3
    python3 test_tokenizer_reference.py --self-test [--model ...]   # reference only, no C tool
A model is a name (smollm2, qwen2, gemma3; found in $BRASA_MODEL_CACHE or ~/.cache/brasa/models)
or a path; --models-dir DIR adds every .gguf in DIR (the families make_vocab_variants.py writes);
the default is the three names. --random N adds N random strings (fixed seed) over the characters
the split rules tell apart, which find what a hand-picked corpus misses. Ends with a line `tokenizer: N passed, M failed`.
Exit status: 0 all passed, 1 any failure, 2 bad arguments, 77 when no model file is present.
"""
import argparse
import codecs
import random
import signal
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import ref_tokenizer  # noqa: E402

TIMEOUT_S = 120
SKIP = 77
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "ThreadSanitizer", "MemorySanitizer")

codecs.register_error("brasa_fffd_per_byte", lambda e: ("\ufffd" * (e.end - e.start), e.end))


# ----------------------------------------------------------------------------- inputs

@dataclass
class Case:
    index: int
    data: bytes
    text: str | None  # the str when data is valid UTF-8, else None

    @property
    def valid(self):
        return self.text is not None


# The alphabet of the random strings: what the split rules tell apart (case, letters with and
# without marks, digits of several scripts, CJK, kana, Hangul, spaces and line breaks, apostrophes,
# punctuation ASCII and full-width, symbols, emoji and joiners).
RANDOM_ALPHABET = (list("aAbZ'sStT dD1209 \n\r\t.,!?/-_$+<=>^`|~\"#()[]{}") + ["'s", "'ll", "'RE", "  ", "\r\n"]
                   + list("\u00e9\u00c9\u0301\u0323\u01c5\u00bd\u00b2\u0663\u0967\u4e2d\u6587\u3042\u30ab\uac00"
                          "\u3131\uff01\uff21\u3000\u3001\u2026\u201c\u0915\u093f\u0e01\u0e31\u0627\u200d\u00a0")
                   + ["\U0001f642", "\U0001f44d\U0001f3fd"])


def random_strings(n, seed=24):
    """n strings of 1 to 24 symbols from RANDOM_ALPHABET, the same on every run."""
    rng = random.Random(seed)
    return ["".join(rng.choice(RANDOM_ALPHABET) for _ in range(rng.randint(1, 24))) for _ in range(n)]


def make_cases(n_random=0):
    cases = [Case(i, s.encode("utf-8"), s) for i, s in enumerate(corpus.CORPUS + random_strings(n_random))]
    base = len(cases)
    cases += [Case(base + i, b, None) for i, b in enumerate(corpus.INVALID_UTF8)]
    return cases


def replacement_variants(data):
    """The ways brasa may turn invalid UTF-8 into text before SentencePiece tokenisation."""
    out = [data.decode("utf-8", "replace")]
    per_byte = data.decode("utf-8", "brasa_fffd_per_byte")
    if per_byte != out[0]:
        out.append(per_byte)
    return out


def write_records(path, cases):
    with open(path, "wb") as f:
        for c in cases:
            f.write(struct.pack("<I", len(c.data)))
            f.write(c.data)


# ----------------------------------------------------------------------------- report

@dataclass
class Tally:
    passed: int = 0
    failed: int = 0
    skipped: list = field(default_factory=list)
    notes: list = field(default_factory=list)


class Reporter:
    def __init__(self, max_diffs, verbose):
        self.max_diffs, self.verbose = max_diffs, verbose
        self.shown = 0
        self.tally = Tally()

    def ok(self, what=None):
        self.tally.passed += 1
        if what and self.verbose:
            print(f"  ok   {what}")

    def fail(self, title, lines=()):
        self.tally.failed += 1
        if self.shown < self.max_diffs or self.verbose:
            print(f"FAIL {title}")
            for line in lines:
                print(f"     {line}")
        elif self.shown == self.max_diffs:
            print("     (more failures not shown; use --verbose or --max-diffs)")
        self.shown += 1

    def note(self, text):
        self.tally.notes.append(text)
        print(f"note: {text}")


def short(b, limit=160):
    h = b.hex()
    return h if len(h) <= limit else h[:limit] + f"... ({len(b)} bytes)"


def show_input(case):
    return repr(case.text) if case.valid else f"{case.data!r} (invalid UTF-8)"


# ----------------------------------------------------------------------------- running tok_batch

@dataclass
class Row:
    ids: list[int]
    decoded: bytes
    streamed: bytes
    bad_chunks: int


def parse_row(line):
    fields = line.split("\t")
    if len(fields) != 4:
        raise ValueError(f"expected 4 tab-separated fields, got {len(fields)}")
    ids = [int(x) for x in fields[0].split(" ")] if fields[0] else []
    return Row(ids, bytes.fromhex(fields[1]), bytes.fromhex(fields[2]), int(fields[3]))


def run_tok_batch(tok_batch, model, infile, special, n_records):
    """Run the tool; returns (rows, None) or (None, error message)."""
    cmd = [str(tok_batch), str(model), str(infile)] + (["--special"] if special else [])
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"tok_batch timed out after {TIMEOUT_S} s: {' '.join(cmd)}"
    except OSError as e:
        return None, f"cannot run tok_batch: {e}"
    stderr = p.stderr.decode("utf-8", "replace")
    tail = "\n".join(stderr.strip().splitlines()[-15:])
    if p.returncode < 0:
        name = signal.Signals(-p.returncode).name
        return None, f"tok_batch crashed ({name}): {' '.join(cmd)}\n{tail}"
    if p.returncode != 0:
        return None, f"tok_batch exited with status {p.returncode}: {' '.join(cmd)}\n{tail}"
    if any(m in stderr for m in SANITIZER_MARKERS):
        return None, f"sanitizer report from tok_batch: {' '.join(cmd)}\n{tail}"
    try:
        text = p.stdout.decode("ascii")
    except UnicodeDecodeError:
        return None, "tok_batch stdout is not ASCII"
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != n_records:
        head = "\n".join(lines[:3])
        return None, f"tok_batch printed {len(lines)} lines for {n_records} records; first lines:\n{head}"
    rows = []
    for n, line in enumerate(lines):
        try:
            rows.append(parse_row(line))
        except ValueError as e:
            return None, f"line {n + 1} of tok_batch output: {e}: {line[:200]!r}"
    return rows, None


# ----------------------------------------------------------------------------- checks

def check_valid(ref, case, special, row):
    """Problems (list of str) with brasa's row for a valid UTF-8 input."""
    problems = []
    want = ref.encode(case.text, special)
    if row.ids != want:
        problems.append("ids differ from reference")
    n_vocab = len(ref.vocab.tokens)
    if any(not 0 <= i < n_vocab for i in row.ids):
        return problems + ["id out of range"]
    if row.decoded != ref.decode(row.ids):
        problems.append("decode differs from reference decode of the same ids")
    if ref.decode(want) == case.data and row.decoded != case.data:
        problems.append("decode does not reproduce the input")
    return problems + check_stream(row)


def is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def check_stream(row):
    """Streamed chunks must rebuild the full decode and, where that decode is valid UTF-8, each
    chunk must be complete, valid UTF-8 (held-back partial characters)."""
    problems = []
    if row.streamed != row.decoded:
        problems.append("streamed chunks do not concatenate to the full decode")
    if row.bad_chunks != 0 and is_utf8(row.decoded):
        problems.append(f"{row.bad_chunks} streamed chunk(s) not valid UTF-8")
    return problems


def check_invalid(ref, case, special, row):
    """Problems with brasa's row for an invalid UTF-8 input."""
    problems = []
    n_vocab = len(ref.vocab.tokens)
    if any(not 0 <= i < n_vocab for i in row.ids):
        return ["id out of range"]
    if row.decoded != ref.decode(row.ids):
        problems.append("decode differs from reference decode of the same ids")
    problems += check_stream(row)
    if ref.byte_level:
        missing = ref.unrepresentable_bytes()
        want = bytes(b for b in case.data if b not in missing)
        if row.decoded != want:
            problems.append("byte-level decode does not reproduce the input bytes"
                            + (" (less those with no token)" if want != case.data else ""))
    else:
        wants = [ref.encode(t, special) for t in replacement_variants(case.data)]
        if row.ids not in wants:
            problems.append("ids match no U+FFFD-replaced reference encoding")
    return problems


def first_difference(a, b):
    """Index of the first differing token, or None when the lists are equal."""
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return k
    return None if len(a) == len(b) else min(len(a), len(b))


def clip(x, limit=400):
    text = str(x)
    return text if len(text) <= limit else text[:limit] + " ..."


def diff_lines(ref, case, special, row, problems):
    if case.valid:
        want, label = ref.encode(case.text, special), "ref ids  "
    else:  # no byte-level reference exists for invalid input: show the U+FFFD-replaced one
        want, label = ref.encode(replacement_variants(case.data)[0], special), "ref(FFFD)"
    at = first_difference(want, row.ids)
    lo = max(0, at - 8) if at is not None else 0
    where = "" if at is None else f" (first difference at token {at}; showing from {lo})"
    lines = [f"input     {show_input(case)[:300]}",
             f"problems  {'; '.join(problems)}{where}",
             f"{label} {clip(want[lo:])}",
             f"ref pcs   {clip(ref.describe(want[lo:lo + 24]))}",
             f"brasa ids {clip(row.ids[lo:])}",
             f"brasa pcs {clip(ref.describe(row.ids[lo:lo + 24]))}"]
    if "decode" in " ".join(problems):
        lines += [f"input     {short(case.data)}",
                  f"brasa dec {short(row.decoded)}",
                  f"ref dec   {short(ref.decode(row.ids))}",
                  f"streamed  {short(row.streamed)}"]
    return lines


def compare_model(ref, name, tok_batch, cases, rep):
    with tempfile.TemporaryDirectory(prefix="brasa_tok_") as tmp:
        infile = Path(tmp) / "records.bin"
        write_records(infile, cases)
        for special in (True, False):
            mode = "special" if special else "plain"
            rows, err = run_tok_batch(tok_batch, ref.path, infile, special, len(cases))
            if err:
                print(f"FAIL {name} [{mode}]: {err}")
                rep.tally.failed += len(cases)
                continue
            for case, row in zip(cases, rows):
                check = check_valid if case.valid else check_invalid
                problems = check(ref, case, special, row)
                title = f"{name} [{mode}] #{case.index}"
                if problems:
                    rep.fail(title, diff_lines(ref, case, special, row, problems))
                else:
                    rep.ok(f"{title} {show_input(case)[:60]}")


# ----------------------------------------------------------------------------- self-test

def expect(rep, cond, title, lines=()):
    if cond:
        rep.ok(title)
    else:
        rep.fail(title, lines)


def self_test_sanity(ref, name, rep):
    """Fixed facts about each model's special tokens."""
    v = ref.vocab
    index = {t: i for i, t in enumerate(v.tokens)}
    probes = []
    if ref.byte_level:
        probes += [("<|im_start|>", True, [index["<|im_start|>"]]),
                   ("<|endoftext|>", True, [index["<|endoftext|>"]])]
        if "<tool_call>" in index:  # user-defined: matched in both modes
            probes += [("<tool_call>", s, [index["<tool_call>"]]) for s in (True, False)]
    else:
        probes += [("<start_of_turn>", True, [index["<start_of_turn>"]]),
                   ("<end_of_turn>", True, [index["<end_of_turn>"]]),
                   ("<bos>", True, [index["<bos>"]])]
        probes += [("\n\n", s, [index["\n\n"]]) for s in (True, False)]
        probes += [("<table>", s, [index["<table>"]]) for s in (True, False)]
    for text, special, want in probes:
        got = ref.encode(text, special)
        expect(rep, got == want, f"{name} sanity {text!r} special={special} -> {want}",
               [f"got {got} {ref.describe(got)}"])
    for text in ("<|im_start|>", "<start_of_turn>", "<bos>", "<|endoftext|>"):
        if text in index and v.types[index[text]] == ref_tokenizer.TOKEN_CONTROL:
            got = ref.encode(text, False)
            expect(rep, got != [index[text]] and len(got) > 1,
                   f"{name} sanity {text!r} special=False is not the control token",
                   [f"got {got} {ref.describe(got)}"])


def self_test_corpus(ref, name, cases, rep):
    """Round trips and decoder cross-checks on the corpus; returns the lossy inputs."""
    lossy = []
    control_without_special = []
    for case in cases:
        for special in (True, False):
            if case.valid:
                ids = ref.encode(case.text, special)
                dec = ref.decode(ids)
                hf = ref.hf_decode(ids)  # a str: invalid UTF-8 comes back as U+FFFD
                expect(rep, dec.decode("utf-8", "replace") == hf,
                       f"{name} decode==HF decode #{case.index}",
                       [f"input {show_input(case)}", f"ours {short(dec)}",
                        f"HF   {short(hf.encode('utf-8'))}"])
                if dec != case.data:
                    # SentencePiece models lose a literal U+2581; byte-level ones drop bytes that
                    # have no token (SmolLM2 lacks 21 of the 256)
                    missing = ref.unrepresentable_bytes()
                    expected_loss = ("\u2581" in case.text if not ref.byte_level
                                     else any(b in missing for b in case.data))
                    expect(rep, expected_loss, f"{name} round trip #{case.index} special={special}",
                           [f"input {show_input(case)}", f"ids {ids} {ref.describe(ids)}",
                            f"decoded {dec!r}"])
                    if special:
                        lossy.append(case.text)
                else:
                    rep.ok()
                if not special and any(ref.vocab.types[i] == ref_tokenizer.TOKEN_CONTROL
                                       for i in ids):
                    control_without_special.append((case.text, ids))
            else:
                for text in replacement_variants(case.data):
                    ids = ref.encode(text, special)
                    expect(rep, ref.decode(ids) == text.encode("utf-8"),
                           f"{name} replaced-input round trip #{case.index}",
                           [f"input {show_input(case)}", f"ids {ids}"])
    for text, ids in control_without_special:
        rep.note(f"{name}: control id produced without parse_special for {text!r}: "
                 f"{ref.describe(ids)}")
    return lossy


def self_test_slow(ref, name, cases, rep):
    """Compare the HF reference with the naive one of slow_ref.py (skipped without `regex`)."""
    try:
        import slow_ref
    except ImportError as e:
        print(f"{name}: slow cross-check skipped ({e})")
        return
    slow = slow_ref.SlowReference(ref.vocab)
    same = 0
    for case in cases:
        texts = [case.text] if case.valid else replacement_variants(case.data)
        for text in texts:
            for special in (True, False):
                a, b = ref.encode(text, special), slow.encode(text, special)
                expect(rep, a == b, f"{name} HF reference == naive reference #{case.index} "
                       f"special={special}",
                       [f"input {text!r}", f"HF    {a} {ref.describe(a)}",
                        f"naive {b} {ref.describe(b)}"])
                same += a == b
    print(f"{name}: HF reference and naive llama.cpp-style reference agree on {same} encodings")


def self_test_model(ref, name, cases, rep, verbose, gguf_reader_check):
    if gguf_reader_check:
        problems = ref_tokenizer.check_against_gguf_reader(ref.path, ref.vocab)
        expect(rep, not problems, f"{name} metadata matches gguf.GGUFReader", problems)
    self_test_sanity(ref, name, rep)
    self_test_slow(ref, name, cases, rep)
    lossy = self_test_corpus(ref, name, cases, rep)
    kind = "lossless" if not lossy else f"lossy on {len(lossy)} input(s): " + ", ".join(
        repr(t) for t in lossy[:4])
    print(f"{name}: reference round trip {kind}")
    if verbose:
        for case in cases[:len(corpus.CORPUS)]:
            ids = ref.encode(case.text, True)
            print(f"  {case.text[:40]!r}: {len(ids)} tokens")


# ----------------------------------------------------------------------------- main

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--tok-batch", type=Path, help="path of the tok_batch tool")
    ap.add_argument("--model", action="append", help="model name or GGUF path (repeatable)")
    ap.add_argument("--models-dir", type=Path,
                    help="also every *.gguf in this folder (make_vocab_variants.py's families)")
    ap.add_argument("--random", type=int, default=0, metavar="N",
                    help="also N random strings over the characters the split rules tell apart")
    ap.add_argument("--self-test", action="store_true", help="check the reference only")
    ap.add_argument("--gguf-reader-check", action="store_true",
                    help="with --self-test: also compare the metadata with gguf.GGUFReader (slow)")
    ap.add_argument("--max-diffs", type=int, default=5, help="failures shown in full (default 5)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if not args.self_test and args.tok_batch is None:
        ap.error("give --tok-batch PATH, or --self-test")
    if args.tok_batch is not None and not args.self_test and not args.tok_batch.is_file():
        ap.error(f"tok_batch not found: {args.tok_batch}")
    return args


def main(argv):
    args = parse_args(argv)
    rep = Reporter(args.max_diffs, args.verbose)
    cases = make_cases(args.random)
    models = list(args.model or [])
    if args.models_dir:
        found = sorted(str(p) for p in args.models_dir.glob("*.gguf"))
        if not found:
            print(f"SKIP: no .gguf files in {args.models_dir}")
            return SKIP
        models += found
    models = models or list(ref_tokenizer.MODEL_FILES)
    print(f"corpus: {len(corpus.CORPUS)} valid strings, {len(corpus.INVALID_UTF8)} invalid inputs")
    for name in models:
        path = ref_tokenizer.resolve_model(name)
        if not path.is_file():
            print(f"SKIP {name}: model file not found: {path}")
            rep.tally.skipped.append(name)
            continue
        ref = ref_tokenizer.load(path)
        print(f"{name}: {path.name} model={ref.kind} pre={ref.vocab.pre} "
              f"vocab={len(ref.vocab.tokens)} merges={ref.n_merges} control={ref.n_control} "
              f"user_defined={ref.n_user} add_bos={ref.vocab.add_bos} "
              f"add_space_prefix={ref.vocab.add_space_prefix}; reference built in "
              f"{ref.build_seconds:.1f} s")
        if args.self_test:
            self_test_model(ref, name, cases, rep, args.verbose, args.gguf_reader_check)
        else:
            compare_model(ref, name, args.tok_batch, cases, rep)
    t = rep.tally
    print(f"tokenizer: {t.passed} passed, {t.failed} failed")
    if t.failed:
        return 1
    if len(t.skipped) == len(models):
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
