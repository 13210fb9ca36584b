#!/usr/bin/env python3
"""Writes samples/corpus.jsonl: a small, deterministic JSONL text corpus for
`shardsmith tokenize` (the README's tokenize example). Standard library only.

usage: python3 samples/make_corpus.py   (run from anywhere)
300 documents of made-up English under "text", with an "id"; the last line has no
"text" field, so the example shows how a malformed record is reported.
"""
import json, os, random

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus.jsonl")
SUBJECTS = ["The river", "A small robot", "Our team", "The old library", "Every shard",
            "The training run", "A curious fox", "The night shift", "This checkpoint", "The harbour"]
VERBS = ["carries", "remembers", "checks", "counts", "rebuilds", "follows", "repairs",
         "measures", "watches", "packs"]
OBJECTS = ["the morning light", "eleven thousand files", "a broken tensor", "the last manifest",
           "quiet mountain roads", "every byte twice", "the lost partition", "fresh bread",
           "a list of names", "the slow disk"]
ENDINGS = [".", "!", "?", " again.", " before dawn.", ", as always."]


def sentence(r):
    return f"{r.choice(SUBJECTS)} {r.choice(VERBS)} {r.choice(OBJECTS)}{r.choice(ENDINGS)}"


def main():
    r = random.Random(2026)
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        for i in range(300):
            text = " ".join(sentence(r) for _ in range(r.randint(1, 12)))
            if i % 50 == 7:
                text += " Zürich, São Paulo, 東京: non-ASCII text tokenizes too."
            f.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")
        f.write(json.dumps({"id": 300, "body": "no text field here"}) + "\n")


if __name__ == "__main__":
    main()
