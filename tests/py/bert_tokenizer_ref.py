"""BERT's tokenizer as Hugging Face's BertTokenizer (BasicTokenizer + WordpieceTokenizer of
transformers' tokenization_bert.py) does it, re-written over unicodedata (transformers is not
packaged for Debian): an independent reference for data/wordpiece.

  bert_tokenizer_ref.py VOCAB.txt < lines   ->  the tokens of each line, space-separated
"""
import sys
import unicodedata


def is_whitespace(c):
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def is_control(c):
    if c in "\t\n\r":
        return False
    return unicodedata.category(c) in ("Cc", "Cf")


def is_punctuation(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


def basic(text):
    out = []
    for c in text:
        cp = ord(c)
        if cp == 0 or cp == 0xFFFD or is_control(c):
            continue
        out.append(" " if is_whitespace(c) else (f" {c} " if is_cjk(cp) else c))
    tokens = []
    for word in "".join(out).strip().split():
        word = word.lower()
        word = "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")
        piece = ""
        for c in word:
            if is_punctuation(c):
                if piece:
                    tokens.append(piece)
                piece = ""
                tokens.append(c)
            else:
                piece += c
        if piece:
            tokens.append(piece)
    return tokens


def wordpiece(word, vocab):
    if len(word) > 100:
        return ["[UNK]"]
    out, start = [], 0
    while start < len(word):
        end, cur = len(word), None
        while start < end:
            sub = word[start:end]
            if start > 0:
                sub = "##" + sub
            if sub in vocab:
                cur = sub
                break
            end -= 1
        if cur is None:
            return ["[UNK]"]
        out.append(cur)
        start = end
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        vocab = set(f.read().splitlines())
    for line in sys.stdin.read().split("\n"):
        print(" ".join(t for w in basic(line) for t in wordpiece(w, vocab)))


if __name__ == "__main__":
    main()
