#!/usr/bin/env python3
"""A JSONL text corpus from text already on the machine (source code, docs), written by
no one here: every .py/.txt/.md/.rst file under the roots, in sorted path order, becomes
one {"id": ..., "text": ...} line, until the corpus reaches LIMIT_MB (10^6 bytes of JSONL).
Deterministic for a given machine; code-heavy, which is BPE's slow case.

usage: make_text_corpus.py OUT.jsonl LIMIT_MB [ROOT...]
       (default roots: this Python's standard library and site-packages, the system's
        /usr/lib/python3*, /usr/share/doc)
"""
import glob
import json
import os
import sys
import sysconfig

SUFFIXES = (".py", ".txt", ".md", ".rst")


def default_roots():
    paths = sysconfig.get_paths()
    roots = [paths["stdlib"], paths["purelib"], *sorted(glob.glob("/usr/lib/python3*")),
             "/usr/share/doc"]
    seen, out = set(), []
    for root in roots:
        real = os.path.realpath(root)
        if os.path.isdir(real) and real not in seen:
            seen.add(real)
            out.append(real)
    return out


def documents(roots):
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                try:
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                except (OSError, UnicodeDecodeError):
                    continue
                if text.strip():
                    yield os.path.relpath(path, root), text


def main():
    out, limit = sys.argv[1], int(float(sys.argv[2]) * 1e6)
    roots = sys.argv[3:] or default_roots()
    written = 0
    with open(out, "w", encoding="utf-8") as f:
        for rel, text in documents(roots):
            line = json.dumps({"id": rel, "text": text}, ensure_ascii=False) + "\n"
            f.write(line)
            written += len(line.encode())
            if written >= limit:
                break
    print(f"{out}: {written / 1e6:.1f} MB", file=sys.stderr)
    if written < limit:
        sys.exit(f"only {written / 1e6:.1f} MB of text found under {roots}; pass more roots")


if __name__ == "__main__":
    main()
