"""Tricky input strings for brasa's tokenizer tests.

CORPUS is a list of str (valid Unicode, so valid UTF-8): accents, combining marks, CJK, emoji
(ZWJ sequences, flags, skin tones), right-to-left and Indic scripts, whitespace of every kind,
digits, code, contractions, URLs, special-token lookalikes, empty and single characters, long
runs. INVALID_UTF8 is a list of bytes objects that are not valid UTF-8, for the checks that the
tokenizer survives bad input. Invisible characters are written as escapes on purpose.
"""

SPANISH = [
    "¿Qué tal? Canción, pingüino, ñandú",
    "¡Hola, mundo! ¿Cómo estás?",
    "El niño comió piñata en el año 2024.",
    "Señor Muñoz, ¿dónde está la cigüeña?",
    "ÁÉÍÓÚÜÑ áéíóúüñ",
    "Pingüino",
    " pingüino",
    "¿¡",
]

EUROPEAN = [
    "Ça va? Où est le café? Noël, naïve, cœur, Æsir",
    "L'été dernier, j'ai vu l'hôtel.",
    "Grüße aus München! Straße, Äpfel, Öl, Übermut",
    "Die Größe ist maßgeblich: ẞ vs ß",
    "Ação, coração, pão, não, você, avô",
    "Olá! Está tudo bem? Obrigação.",
    "Dziękuję, żółć, gęślą jaźń",
    "Čeština: příliš žluťoučký kůň úpěl ďábelské ódy",
    "Ísland, þorn, ð, Færeyjar",
    "İstanbul'da ılık bir gün; ĞÜŞÖÇ ğüşöç",
    "Română: ș ț ă î â",
    "Ελληνικά: Καλημέρα κόσμε, ΑΒΓΔ αβγδ",
    "Русский: Съешь же ещё этих мягких французских булок",
    "Українська: Ґ ґ Є є І і Ї ї",
    "Српски: Љ Њ Џ ђ ћ",
]

COMBINING = [
    "e\u0301",
    "cafe\u0301",
    "Cafe\u0301 vs Caf\u00e9",
    "n\u0303andu\u0301",
    "a\u0300\u0301\u0302\u0303\u0304",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349"
    "\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L"
    "\u0368\u0367\u0369\u0358\u0320G\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b"
    "\u0348\u034d\u0354\u0339O\u0342\u030c\u030c\u0358\u0328\u0335\u0339\u033b\u031d"
    "\u0333",
    "\u0301",
    " \u0301",
    "\u0301\u0301\u0301",
    "ก\u0e31\u0e49",
    "\u1100\u1161\u11a8",  # conjoining jamo (decomposed Hangul)
]

CJK = [
    "你好，世界！",
    "我爱自然语言处理。",
    "中文分词：北京大学生前来应聘",
    "繁體中文：臺灣、香港、澳門",
    "日本語のテキストです。",
    "カタカナとひらがなと漢字",
    "東京都渋谷区、ｶﾀｶﾅ半角",
    "한국어 텍스트입니다.",
    "안녕하세요 세계",
    "ㄱㄴㄷ ㅏㅑㅓ",
    "一二三四五六七八九十",
    "〇〡〢〣",
    "𠀀𠀁𪚥",  # CJK extension B (4-byte UTF-8)
    "中",
    "日本",
    "「引用」『二重』【括弧】",
    "全角ＡＢＣ１２３",
    "中文English混合mixed文本",
]

EMOJI = [
    "😀",
    "😀😃😄😁",
    "Hello 👋 world 🌍!",
    "👨\u200d👩\u200d👧\u200d👦",
    "👩\u200d💻 and 🧑\u200d🚀",
    "🏳\ufe0f\u200d🌈",
    "🇺🇸🇪🇸🇫🇷🇯🇵",
    "🇪🇸",
    "🇪",
    "👍🏻👍🏼👍🏽👍🏾👍🏿",
    "🤷🏽\u200d♀\ufe0f",
    "❤\ufe0f ❤ ♥",
    "1\ufe0f\u20e3 #\ufe0f\u20e3",
    "🫠🫡🫶",
    "🐍 Python 🦀 Rust",
    "😀" * 20,
    "emoji:🎉,again:🎉.",
    "\U0001f9d1\U0001f3fd\u200d\U0001f91d\u200d\U0001f9d1\U0001f3fb",
]

SCRIPTS = [
    "مرحبا بالعالم",
    "اللغة العربية جميلة، أليس كذلك؟",
    "العدد ١٢٣٤٥٦٧٨٩٠",
    "שלום עולם",
    "עברית: אבגדה",
    "Hebrew \u05e9\u05dc\u05d5\u05dd mixed with English",
    "नमस्ते दुनिया",
    "हिन्दी में लिखा पाठ। १२३",
    "ক্ষ বাংলা",
    "தமிழ் மொழி",
    "สวัสดีชาวโลก",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "ქართული ენა",
    "Հայերեն",
    "አማርኛ",
    "ᚠᚢᚦᚨᚱᚲ",
    "ꦗꦮ",
    "ܐܪܡܝܐ",
    "\u202eright-to-left override\u202c",
    "\u200fRTL mark\u200e",
]

WHITESPACE = [
    " ",
    "  ",
    "   ",
    "    ",
    " " * 17,
    " " * 64,
    "a b",
    "a  b",
    "a   b",
    "a    b",
    "a" + " " * 40 + "b",
    "\t",
    "\t\t",
    "\t\t\t\tindented",
    "a\tb\tc",
    "\t \t \t",
    "\n",
    "\n\n",
    "\n\n\n",
    "\n" * 10,
    "\n" * 40,
    "line1\nline2\nline3",
    "para1\n\npara2\n\n\npara3",
    "\r\n",
    "windows\r\nline\r\nendings\r\n",
    "\r",
    "old mac\rline",
    "\r\r\n\n\r",
    " \n \n ",
    "  leading spaces",
    "trailing spaces  ",
    "  both  ",
    "\n\nleading newlines",
    "trailing newlines\n\n",
    "  \t\n  mixed \t\n  ",
    "a \n b",
    "a\u00a0b",
    "\u00a0",
    "\u00a0\u00a0\u00a0",
    "a\u2003b\u2003c",
    "\u3000全角空白\u3000",
    "\u2002\u2009\u200a\u202f\u205f",
    "\u1680ogham space",
    "line\u2028separator\u2029paragraph",
    "\u0085next line",
    "\x0bvertical\x0ctab form feed",
    "end with space ",
    "x \t",
    " \u00a0 ",
]

ZERO_WIDTH = [
    "zero\u200bwidth\u200bspace",
    "\u200b",
    "join\u200dme",
    "non\u200cjoiner",
    "\ufeffBOM at start",
    "word\u2060joiner",
    "soft\u00adhyphen",
    "\u200b\u200b\u200b",
    "variation\ufe0fselector",
]

DIGITS = [
    "0",
    "7",
    "42",
    "123",
    "1234",
    "12345",
    "123456789",
    "3.14159265358979323846",
    "1,234,567,890",
    "1 234 567",
    "1.000.000,00 €",
    "-273.15°C",
    "+34 912 345 678",
    "2024-12-31T23:59:59Z",
    "0x1F 0b1010 0o777 1e-10",
    "99999999999999999999999999999999",
    "1000000 10000000 100000000",
    "abc123def456",
    "v1.2.3-rc4",
    "٣ ٤ ٥ and ३ ४ ५ and ① ② ③ and Ⅻ",
    "½ ¾ ⅓ x² y³",
    "000",
    "007 James",
    "1st 2nd 3rd 4th",
    "$1,000.00 and 50% off",
]

CODE = [
    "def f(x):\n    return x * 2\n",
    "class Foo:\n\tdef __init__(self):\n\t\tself.x = []\n",
    "if __name__ == \"__main__\":\n    main()",
    "print(f\"{name!r:>10}\")",
    "lambda x, y: x**2 + y//3 - (x % y)",
    "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }",
    "for (int i = 0; i < n; ++i) a[i] += b[i];",
    "x->y = *p++ & 0xFF; y <<= 2; z >>= 3;",
    "/* comment */ // line comment",
    "{\"key\": \"value\", \"n\": 123, \"arr\": [1, 2, 3], \"ok\": true, \"none\": null}",
    "{\n  \"nested\": {\n    \"a\": [\n      {}\n    ]\n  }\n}",
    "<!DOCTYPE html><html><head><title>Test</title></head><body></body></html>",
    "<div class=\"a\" id='b'>Hello &amp; goodbye &lt;3</div>",
    "<table><tr><td>1</td><td>2</td></tr></table>",
    "<b>bold</b> <i>italic</i> <code>x</code> <s>strike</s>",
    "SELECT * FROM users WHERE id = 1 AND name LIKE '%bob%';",
    "fn main() { let v: Vec<u8> = vec![1, 2, 3]; println!(\"{:?}\", v); }",
    "const f = async () => { await fetch(`/api/${id}`); };",
    "$ ls -la | grep \"\\.py$\" && echo done",
    "x = {'a': 1}; y = [i for i in range(10) if i % 2]",
    "    pass",
    "\t\tindented_with_tabs()",
    "a==b!=c<=d>=e&&f||g",
    "#!/usr/bin/env python3",
    "@decorator\ndef g(): pass",
    "\\n \\t \\\\ \\x00 \\u00e9",
]

CONTRACTIONS = [
    "don't",
    "Don't",
    "DON'T",
    "I'M here",
    "I'm",
    "we'll",
    "WE'LL",
    "you've they're she's it'd",
    "YOU'VE THEY'RE SHE'S IT'D",
    "rock 'n' roll",
    "'s 't 're 've 'm 'll 'd",
    "''",
    "'tis the season",
    "don’t (curly)",
    "l'homme qu'il",
    "o'clock O'Brien",
    "dogs' bones",
]

URLS = [
    "https://example.com/path/to/page?query=1&b=2#frag",
    "http://localhost:8080/",
    "Visit www.example.org or mailto:someone@example.com",
    "ftp://user:pass@host.example/file.tar.gz",
    "https://es.wikipedia.org/wiki/Ñandú",
    "user.name+tag@sub.domain.co.uk",
    "C:\\Users\\Name\\Documents\\file.txt",
    "/usr/local/bin/python3",
]

SPECIAL_LOOKALIKES = [
    "<|im_start|>",
    "<|im_end|>",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start",
    "im_start|>",
    "< |im_end| >",
    "<||im_start||>",
    "<|IM_START|>",
    "<|endoftext|>",
    "text<|endoftext|>more text",
    "<|endoftext|><|endoftext|>",
    "<start_of_turn>user",
    "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
    "<end_of_turn>",
    "<start_of_turn",
    "<bos>",
    "<eos>",
    "<pad>",
    "<unk>",
    "<mask>",
    "<bos><bos>",
    "< bos >",
    "<unused0>",
    "<unused6241>",
    "<s></s>",
    "<tool_call>",
    "</tool_call>",
    "<tool_call>{\"name\": \"f\"}</tool_call>",
    "<|fim_prefix|>def<|fim_suffix|>x<|fim_middle|>",
    "<repo_name>brasa<file_sep>",
    "<start_of_image>",
    "[multimodal]",
    "<|im_start|><|im_start|>",
    " <|im_start|> ",
    "x<end_of_turn>y",
    "<<|im_end|>>",
]

SHORT = [
    "",
    "a",
    "A",
    "z",
    ".",
    ",",
    "!",
    "?",
    "'",
    "\"",
    "<",
    ">",
    "|",
    "_",
    "~",
    "\\",
    "é",
    "ñ",
    "ß",
    "€",
    "\u2581",  # SentencePiece's space mark as literal input
    "\u2581hello\u2581world",
    "\x00",
    "\x01\x02\x7f",
    "\ufffd",
    "\U0010ffff",
    "\ue000",  # private use
    # bytes with no single-byte token in SmolLM2's byte-level vocab (0x04 0x06 0x13 0x14 0x16
    # 0x1d 0xc0 0xc1 0xf1 0xf2 0xf5-0xff): the reference drops them, as llama.cpp does
    "a\x04b\x06c\x13d\x14e\x16f\x1dg",
    "\U00050000 plane 5 (lead byte 0xf1)",
    "\U000E0041\U000E0042 tag characters",
]

REPEATS = [
    "a" * 100,
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
    "ab" * 50,
    "=" * 80,
    "-" * 33,
    "." * 27,
    "!" * 15,
    "ñ" * 30,
    "中" * 25,
    "ha" * 20 + "!",
    "0" * 50,
    "Z" * 300,
    "_" * 64,
    "*" * 10 + " " + "#" * 10,
]

MIXED = [
    "The quick brown fox jumps over the lazy dog.",
    "THE QUICK BROWN FOX",
    "Hello, World!",
    "hello world",
    " Hello",
    "Hello ",
    "CamelCaseIdentifier snake_case_identifier kebab-case-id",
    "Mixed: English, español, 中文, русский, العربية, 😀",
    "Ünïcödé wïth ëvërÿthïng",
    "αβγ ABC абв 123 あいう",
    "Tokyo東京Paris巴黎",
    "Математика: ∑ᵢ xᵢ² ≤ ∞, ∀x∈ℝ, √2 ≈ 1.414",
    "→ ← ↑ ↓ ⇒ ⇔ ★ ☆ ♠ ♣",
    "™ © ® ° ± × ÷ § ¶ † ‡",
    "「Hello」 said 'she' — “quoted” «guillemets» ‹single›",
    "…ellipsis… and — em dash – en dash",
    "ﬁ ﬂ ﬀ ligatures",
    "𝐁𝐨𝐥𝐝 𝑰𝒕𝒂𝒍𝒊𝒄 𝔉𝔯𝔞𝔨𝔱𝔲𝔯",
    "Ａ Ｂ Ｃ fullwidth",
    "a.b,c;d:e!f?g",
    "He said: \"It's 5 o'clock!\"",
    "Price: €10, £20, ¥30, ₹40, ₿0.001",
    "Q: What's 2+2?\nA: 4.",
    "user@host:~$ sudo apt-get install -y python3",
    "### Heading\n\n- item 1\n- item 2\n\n```python\nprint(1)\n```",
    "| col1 | col2 |\n|------|------|\n| a    | b    |",
    "Ω≈ç√∫˜µ≤≥÷",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt "
    "ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation.",
]

# Cases that once tokenized differently from the reference, and the splits the newer
# pre-tokenizers draw (case changes, marks, CJK and kana runs, digit groups, full-width forms).
VIETNAMESE = [
    "Cửa Việt",
    " Cửa Việt, Việt Nam",
    "Tiếng Việt: ắ ằ ẳ ẵ ặ ấ ầ ẩ ẫ ậ ế ề ể ễ ệ ố ồ ổ ỗ ộ ớ ờ ở ỡ ợ ứ ừ ử ữ ự",
    "Vie\u0323\u0302t Nam (decomposed)",
    "Hà Nội và Thành phố Hồ Chí Minh",
    "ied 4 \u00bd months",
]

NEWER_SPLITS = [
    "camelCaseWord HTTPServer getHTTPResponseCode XMLHttpRequest iPhone",
    "ALLCAPS lowercase Titlecase \u01c5emal \u01c8 \u1f88",
    "McDonald's O'NEIL'S don't WON'T I'M you'Re",
    "日本語のテキスト、カタカナとひらがな。東京タワーは333メートル",
    "한국어 문장입니다. 안녕하세요! ㄱㄴㄷ",
    "中文，日本語，한국어 mixed with English and 漢字かな交じり文",
    "全角！＂＃＄％ＡＢＣａｂｃ１２３　空白「引用」",
    "〇一二三 \u3007\u4e00",
    "1234567890123 3.14159 2,147,483,647 1e-10 0x1F 007",
    "\u00bd \u00be \u00b2 \u00b3 \u00b9 \u2153 \u216b",
    "\u0663\u0664\u0665 \u06f4\u06f5\u06f6 \u0967\u0968\u0969 \u0e51\u0e52\u0e53",
    "path/to/file.txt\nC:\\Users\\me\r\n//comment\n\n/* block */",
    "line one\r\n\r\nline two\n\n\n  indented\n\t\ttabs",
    "a+b<=c>d^e|f~g`h$i",
    "मैंने किताब पढ़ी। क्षत्रिय द्वारा",
    "กรุงเทพมหานคร อมรรัตนโกสินทร์",
    "السَّلَامُ عَلَيْكُمْ",
    "👩🏽\u200d🔬 👨🏿\u200d❤\ufe0f\u200d💋\u200d👨🏻 🧔🏼\u200d♂\ufe0f",
    "¿¡Qué!? ¡Sí!... ¿No?",
]

CORPUS = (SPANISH + EUROPEAN + COMBINING + CJK + EMOJI + SCRIPTS + WHITESPACE + ZERO_WIDTH
          + DIGITS + CODE + CONTRACTIONS + URLS + SPECIAL_LOOKALIKES + SHORT + REPEATS + MIXED
          + VIETNAMESE + NEWER_SPLITS)

INVALID_UTF8 = [
    b"\x80",                      # lone continuation byte
    b"abc\x80def",
    b"\xbf\xbf\xbf",              # run of continuation bytes
    b"\xc3",                      # truncated 2-byte sequence
    b"caf\xc3",                   # truncated at end
    b"\xc3 x",                    # truncated, then space
    b"\xe2\x82",                  # truncated 3-byte sequence (euro sign without last byte)
    b"\xe2\x82 \xe2",
    b"\xf0\x9f\x98",              # truncated 4-byte sequence (emoji without last byte)
    b"hi \xf0\x9f",
    b"\xc0\xaf",                  # overlong '/'
    b"\xc1\xbf",                  # overlong
    b"\xe0\x80\xaf",              # overlong 3-byte
    b"\xf0\x80\x80\xaf",          # overlong 4-byte
    b"\xed\xa0\x80",              # UTF-8-encoded high surrogate U+D800
    b"\xed\xbf\xbf",              # low surrogate U+DFFF
    b"\xed\xa0\xbd\xed\xb8\x80",  # surrogate pair encoded as CESU-8
    b"\xff",
    b"\xfe\xff",
    b"a\xffb\xfec",
    b"\xf4\x90\x80\x80",          # above U+10FFFF
    b"\xf8\x88\x80\x80\x80",      # 5-byte form
    b"\xc3\xa9\x80",              # valid then stray continuation
    b"ok \xe4\xb8 \xe4\xb8\xad",  # truncated CJK then a valid one
    b"<|im_start|>\xff<|im_end|>",
    b"<start_of_turn>\x80",
    b"\x00\xff\x00",
    b"\x80" * 10,
]
