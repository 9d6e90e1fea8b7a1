#!/usr/bin/env python3
"""brasa's WordPiece tokenizer (tokenizer.ggml.model = bert) against Hugging Face `tokenizers` on
the model's own tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece), not on anything
rebuilt from the GGUF file, so the conversion is checked too.

Inputs: the tokenizer corpus (corpus.py), strings aimed at BERT's rules (accents and combining
marks, uppercase of every kind, CJK ideographs around the edges of HF's blocks, compatibility
ideographs, Hangul, punctuation and ASCII symbols, control and format characters, whitespace of
every kind, words of 100 and 101 characters, special-token lookalikes), 1500 random strings over
those characters, and ill-formed UTF-8 (which must tokenize as its text with each bad sequence
dropped, as the replacement character is). Left out on purpose: nonspacing marks and format
characters assigned after about Unicode 9 (U+1AC1, U+1DFA, ...), which HF's older category table
keeps and brasa's (Unicode 14, scripts/gen_bert_norm_tables.py) strips.

Checks, through tok_batch (tokenize and decode, no [CLS]/[SEP]):
  ids       equal HF's, with control tokens parsed ([CLS] written in the text is the token) and
            without (HF's encode_special_tokens: written specials are text);
  decode    tokenizing brasa's decode of the ids gives the ids again, when they hold no [UNK];
  specials  `brasa tokenize --ids` (BOS and EOS added) equals HF's encode with its template.
Usage: test_wordpiece_reference.py --tok-batch PATH --brasa PATH --model GGUF --hf-dir DIR
Exit status: 0 passed, 1 failed, 77 when the model is missing. Last line: `wordpiece: N passed, M failed`.
"""
import argparse
import os
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402

SKIP = 77

EXTRAS = [
    "Hello, World! HELLO world hello WoRlD",
    "Ça va? Où est le café? Noël, naïve, cœur, Æsir, Ångström, résumé, façade",
    "ÀÁÂÃÄÅ àáâãäå ÈÉÊË ÌÍÎÏ ÒÓÔÕÖ ÙÚÛÜ Ýÿ Ññ Çç",
    "e\u0301 a\u0300\u0301\u0302 o\u0308\u0304 \u0301leading mark",
    "ΣΑΣ σας ΌΛΑ Ελληνικά ΆΈΉΊΌΎΏ",
    "İstanbul IĞDIR ǅǈǋ ǄǇǊ ẞ ß ﬁ ﬂ Ⅻ ⅻ ① ㈱ ＡＢＣ ａｂｃ",
    "中文字符和English混合,日本語のテキスト。カタカナ ひらがな",
    "x\u4dbfy x\u4e00y x\u9fffy x\ua000y x\U0002B81Fy x\U0002B820y x\U0002B91Fy x\U0002B920y x\U0002CEAFy x\U0002CEB0y",
    "\uF900\uF901\uFA0E\uFAFF \U0002F800\U0002FA1D compatibility ideographs",
    "한국어 텍스트입니다 ㄱㄴㄷ 각",
    "Price: $100.00 + 5% = ~$105 ^_^ `code` |pipe| <tag> {brace} [bracket] @user #tag &amp;",
    "«quotes» „Anführungszeichen“ ‘single’ — dash – en ‐ hyphen … ellipsis ¿¡ ·",
    "tab\there\nnewline\r\ncarriage \x0bvertical\x0cfeed\x85next\u00a0nbsp\u2028line\u2029para\u3000ideo",
    "zero\u200bwidth\u200cnon\u200djoiner\u2060word\ufeffbom\u00adsoft\U000E0041tag",
    "ctrl\x00nul\x01\x07\x1b\x7f\x9fdone \ufffd replacement",
    "private\ue000use\U000F0000 and unassigned\u0378\U000E0080 and noncharacter\ufffe",
    "🙂🙃 emoji 👍🏽 👨‍👩‍👧 🇺🇳 ✅ ❤️",
    "a" * 100, "b" * 101, "Ä" * 100, "Ä" * 101, "supercalifragilisticexpialidocious " * 5,
    "pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism",
    "[CLS] hello [SEP] [MASK] [UNK] [PAD] [cls] [unused0] [UNK]x x[SEP]y",
    "don't can't won't I'm you're it's l'été",
    "3.14159 1,000,000 2024-01-01 12:34:56 0x1F 1e-9 ½ ¼ ²³",
    "https://example.com/path?query=1&x=2#frag user@example.org",
    "def f(x):\n    return x ** 2  # comment\n\tif (a && b) { c++; }",
    "x\u0f39y x\u0345y x\u0488y x\u0483y \u0300\u0301\u0302",
    "Ｆｕｌｌｗｉｄｔｈ　ｓｐａｃｅ、句読点。",
    "Vietnamese: Tiếng Việt có dấu: ắ ằ ẳ ẵ ặ ế ề ể ễ ệ",
    "Devanagari हिन्दी Thai ภาษาไทย Arabic العربية Hebrew עִבְרִית",
    "", " ", "   \t\n ", ".", "##", "##ing", "▁", "▁word",
]

# characters the random strings draw from: one or more of each class BERT's rules tell apart
ALPHABET = list("aAbBzZ09 .,;!?'\"-_()[]{}<>$+^`|~@#%&*/\\") + [
    "\t", "\n", "\u00a0", "\u3000", "\u2028", "\x0b", "\x85", "\u200b", "\u200d", "\ufeff", "\x00", "\x7f",
    "é", "É", "ü", "Ü", "ñ", "ç", "å", "ø", "ß", "ẞ", "İ", "ı", "Σ", "σ", "ς", "Ω", "Я", "я", "ǅ",
    "e\u0301", "\u0301", "\u0308", "\u0345", "\u0488", "\u0903",
    "中", "国", "\u4dbf", "\u9fff", "\uf900", "\U0002B820", "\U0002B920", "日", "カ", "ひ", "한", "글", "ㄱ",
    "、", "。", "「", "」", "…", "—", "‘", "’", "«", "»", "¿", "¡", "·", "€", "£", "©", "°",
    "🙂", "👍", "🏽", "\u200d", "❤", "\ufe0f", "ﬁ", "①", "Ⅻ", "ａ", "Ａ", "\ue000", "\ufffd",
]

INVALID = [b"abc\xffdef", b"\xc3(", b"\xe2\x82", b"caf\xc3", b"\xf0\x9f\x98", b"ok \xed\xa0\x80 surrogate",
           b"\xc0\xaf overlong", b"Hello\x80World", b"\xf4\x90\x80\x80 beyond"]

passed = failed = 0


def report(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}: {detail}")


def random_strings(n, seed=7):
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 20))) for _ in range(n)]


def run_tok_batch(tok_batch, model, datas, special):
    with tempfile.TemporaryDirectory(prefix="brasa-wpm-") as d:
        path = os.path.join(d, "in.bin")
        with open(path, "wb") as f:
            for b in datas:
                f.write(struct.pack("<I", len(b)) + b)
        args = [tok_batch, model, path] + (["--special"] if special else [])
        out = subprocess.run(args, capture_output=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"tok_batch exited {out.returncode}: {out.stderr.decode(errors='replace')[-500:]}")
    lines = out.stdout.decode().split("\n")[:len(datas)]
    rows = []
    for line in lines:
        f = line.split("\t")
        rows.append(([int(x) for x in f[0].split()], bytes.fromhex(f[1])))
    return rows


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--tok-batch", required=True)
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--hf-dir", required=True)
    ap.add_argument("--random", type=int, default=1500)
    a = ap.parse_args(argv)
    if not os.path.exists(a.model) or not os.path.exists(os.path.join(a.hf_dir, "tokenizer.json")):
        print(f"skipped: {a.model} or {a.hf_dir} is missing (scripts/fetch_models.py minilm fetches them)")
        return SKIP
    from tokenizers import Tokenizer
    hf = Tokenizer.from_file(os.path.join(a.hf_dir, "tokenizer.json"))
    hf.no_truncation()
    hf.no_padding()
    unk = hf.token_to_id("[UNK]")

    texts = list(corpus.CORPUS) + EXTRAS + random_strings(a.random)
    datas = [s.encode("utf-8", "surrogatepass") for s in texts] + INVALID
    # ill-formed bytes are replacement characters to brasa, which cleaning drops: HF gets the text
    # with them already dropped
    ref_texts = texts + [b.decode("utf-8", "replace").replace("\ufffd", "") for b in INVALID]

    for special in (True, False):
        hf.encode_special_tokens = not special
        rows = run_tok_batch(a.tok_batch, a.model, datas, special)
        mode = "specials parsed" if special else "specials as text"
        diffs = 0
        for s, (ids, _) in zip(ref_texts, rows):
            want = hf.encode(s, add_special_tokens=False).ids
            if ids != want:
                diffs += 1
                if diffs <= 8:
                    report(False, f"ids ({mode}) of {s[:60]!r}",
                           f"brasa {ids[:16]} HF {want[:16]} {[hf.id_to_token(i) for i in want[:8]]}")
        report(diffs == 0, f"ids ({mode})", f"{diffs} of {len(datas)} differ")
        print(f"{'ok' if diffs == 0 else 'FAIL'}   ids equal HF's ({mode}) on {len(datas)} inputs")
        if not special:
            continue
        # decoding: brasa's text tokenizes back to the same ids (no [UNK], no specials)
        hf.encode_special_tokens = True
        back_bad = checked = 0
        for ids, decoded in rows:
            if not ids or unk in ids or any(i in (0, 101, 102, 103) for i in ids):
                continue
            checked += 1
            again = hf.encode(decoded.decode("utf-8"), add_special_tokens=False).ids
            if again != ids:
                back_bad += 1
                if back_bad <= 5:
                    report(False, "decode round trip", f"{decoded[:60]!r}: {ids[:12]} -> {again[:12]}")
        report(back_bad == 0, "decode round trip", f"{back_bad} of {checked}")
        print(f"{'ok' if back_bad == 0 else 'FAIL'}   decode tokenizes back to the ids ({checked} inputs)")

    # the model's add-special rule: [CLS] text [SEP]
    hf.encode_special_tokens = False
    before = failed
    for s in ("A sentence.", "¿Qué tal?", "中文"):
        out = subprocess.run([a.brasa, "tokenize", "-m", a.model, "--ids", s], capture_output=True, text=True, timeout=60)
        ids = [int(x) for x in out.stdout.split()] if out.returncode == 0 else out.stderr.strip()
        want = hf.encode(s).ids
        report(ids == want, f"brasa tokenize {s!r}", f"brasa {ids} HF {want}")
    print(f"{'ok' if failed == before else 'FAIL'}   [CLS] ... [SEP] added as the template says")
    print(f"wordpiece: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
