"""A second, deliberately naive tokenizer, used only by ``--self-test`` to cross-check
ref_tokenizer.py (the HF `tokenizers` build) on the corpus.

It follows llama.cpp's algorithms literally, in plain Python, from the same GGUF metadata:
special/user-defined tokens split the raw text longest-token-first; gpt2 models then split each
fragment with the `regex` module's copy of the pre-tokenizer pattern and run rank-ordered BPE on
byte-level characters; SentencePiece models replace spaces with U+2581 and repeatedly merge the
adjacent pair whose concatenation is the highest-scoring vocab piece (leftmost on ties), with byte
fallback for characters outside the vocab. Slow (pure Python), but with no shared code paths
except the metadata reader.
"""
import regex

import ref_tokenizer as rt

GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


class SlowReference:
    def __init__(self, vocab):
        self.v = vocab
        self.index = {t: i for i, t in enumerate(vocab.tokens)}
        matchable = [i for i, t in enumerate(vocab.types)
                     if t in (rt.TOKEN_CONTROL, rt.TOKEN_USER_DEFINED, rt.TOKEN_UNKNOWN)]
        # longest first, stable by id, as llama.cpp sorts its special-token cache
        self.specials = sorted(matchable, key=lambda i: -len(vocab.tokens[i].encode("utf-8")))
        if vocab.model == "gpt2":
            self.ranks = {tuple(m.split(" ")): r for r, m in enumerate(vocab.merges)}
            if vocab.pre == "smollm":
                self.splitters = [regex.compile(r"\p{N}"), regex.compile(GPT2_PATTERN)]
            elif vocab.pre == "qwen2":
                self.splitters = [regex.compile(rt.QWEN2_PATTERN)]
            else:
                raise ValueError(f"unsupported pre {vocab.pre!r}")
        self.scores = vocab.scores

    # -- special-token partition (llama.cpp's tokenizer_st_partition) --------------------------

    def partition(self, text, parse_special):
        frags = [text]  # str = raw text, int = token id
        for tid in self.specials:
            t = self.v.types[tid]
            if not parse_special and t in (rt.TOKEN_CONTROL, rt.TOKEN_UNKNOWN):
                continue
            piece = self.v.tokens[tid]
            out = []
            for f in frags:
                if isinstance(f, int) or piece not in f:
                    out.append(f)
                    continue
                parts = f.split(piece)
                for k, p in enumerate(parts):
                    if k:
                        out.append(tid)
                    if p:
                        out.append(p)
            frags = out
        return frags

    # -- gpt2 ----------------------------------------------------------------------------------

    def pre_split(self, text):
        words = [text]
        for rx in self.splitters:
            nxt = []
            for w in words:
                pos = 0
                for m in rx.finditer(w):
                    if m.start() > pos:
                        nxt.append(w[pos:m.start()])
                    nxt.append(m.group())
                    pos = m.end()
                if pos < len(w):
                    nxt.append(w[pos:])
            words = nxt
        return words

    def bpe(self, word):
        syms = [rt.BYTE_TO_CHAR[b] for b in word.encode("utf-8")]
        while len(syms) > 1:
            best, best_rank = None, None
            for k in range(len(syms) - 1):
                r = self.ranks.get((syms[k], syms[k + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = k, r
            if best is None:
                break
            syms[best:best + 2] = [syms[best] + syms[best + 1]]
        # a byte with no token of its own is dropped, as llama.cpp and HF (no unk) do
        return [self.index[s] for s in syms if s in self.index]

    # -- SentencePiece -------------------------------------------------------------------------

    def spm(self, text):
        if self.v.add_space_prefix:
            text = " " + text
        syms = list(text.replace(" ", rt.SPACE_MARK))
        while len(syms) > 1:
            best, best_score = None, None
            for k in range(len(syms) - 1):
                tid = self.index.get(syms[k] + syms[k + 1])
                if tid is not None and (best_score is None or self.scores[tid] > best_score):
                    best, best_score = k, self.scores[tid]
            if best is None:
                break
            syms[best:best + 2] = [syms[best] + syms[best + 1]]
        ids = []
        for s in syms:
            if s in self.index:
                ids.append(self.index[s])
            else:
                ids += [self.index[f"<0x{b:02X}>"] for b in s.encode("utf-8")]
        return ids

    def encode(self, text, parse_special):
        ids = []
        for f in self.partition(text, parse_special):
            if isinstance(f, int):
                ids.append(f)
            elif self.v.model == "gpt2":
                for w in self.pre_split(f):
                    ids += self.bpe(w)
            else:
                ids += self.spm(f)
        return ids
