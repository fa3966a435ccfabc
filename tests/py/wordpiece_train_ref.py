"""Learning a WordPiece vocabulary as Hugging Face's WordPieceTrainer does (a byte-pair
trainer over BertTokenizer's words with "##" continuations), re-written naively: every
merge recounts all pairs. An independent reference for data/wordpiece_trainer.

  wordpiece_train_ref.py VOCAB_SIZE MIN_FREQUENCY FILE...  ->  the vocabulary, one token a line

Ties between pairs seen equally often go to the pair of smaller ids (specials, then the
alphabet in code point order, then the pieces in the order they were made), as in zoo.
"""
import collections
import sys

from bert_tokenizer_ref import basic


def main():
    vocab_size, min_frequency = int(sys.argv[1]), int(sys.argv[2])
    counts = collections.Counter()
    for path in sys.argv[3:]:
        with open(path, encoding="utf-8", newline="\n") as f:
            for line in f:
                counts.update(basic(line.rstrip("\n")))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = []
    for word, n in sorted(counts.items()):
        if 0 < len(word) <= 100:
            words.append(([word[0]] + ["##" + c for c in word[1:]], n))
    ids = {}
    for s in sorted({p for w, _ in words for p in w}):
        ids[s] = len(vocab)
        vocab.append(s)
    words = [([ids[p] for p in w], n) for w, n in words]
    while len(vocab) < vocab_size:
        pairs = collections.Counter()
        for w, n in words:
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        (a, b), n = min(pairs.items(), key=lambda item: (-item[1], item[0]))
        if n < min_frequency:
            break
        right = vocab[b][2:] if vocab[b].startswith("##") else vocab[b]
        merged = vocab[a] + right
        if merged not in ids:
            ids[merged] = len(vocab)
            vocab.append(merged)
        m = ids[merged]
        new_words = []
        for w, cnt in words:
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(m)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words.append((out, cnt))
        words = new_words
    print("\n".join(vocab))


if __name__ == "__main__":
    main()
