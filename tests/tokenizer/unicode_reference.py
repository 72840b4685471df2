"""Reference for the tokenizer's Unicode normalizers: Python's unicodedata and str.lower.

Usage: unicode_reference.py IN OUT. IN is a JSON list of strings; OUT receives, for each, an
object with the four normalization forms, the per-character lowercase mapping (what the
tokenizers library's Lowercase does: each character on its own) and the text stripped of
leading and trailing whitespace.
"""
import json
import sys
import unicodedata

with open(sys.argv[1], encoding="utf-8") as f:
    texts = json.load(f)
results = []
for text in texts:
    results.append({
        "NFC": unicodedata.normalize("NFC", text),
        "NFD": unicodedata.normalize("NFD", text),
        "NFKC": unicodedata.normalize("NFKC", text),
        "NFKD": unicodedata.normalize("NFKD", text),
        "Lowercase": "".join(c.lower() for c in text),
        "Strip": text.strip(),
    })
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(results, f, ensure_ascii=False)
