#!/usr/bin/env python3
"""Reads shardsmith token files with numpy and the real reference code, and compares
every document's ids with the reference tokenizers'.

usage: check_tokens.py tiktoken ENCODING CORPUS.jsonl FORMAT OUTDIR
       check_tokens.py hf TOKENIZER.json EOD_TOKEN CORPUS.jsonl FORMAT OUTDIR
       check_tokens.py train-bpe CORPUS.jsonl OUT.json   (byte-level BPE, GPT-2 style)
       check_tokens.py train-wordpiece CORPUS.jsonl OUT.json  (BERT normalizer, WordPiece)
       check_tokens.py parquet CORPUS.jsonl OUT.parquet  (pyarrow, small row groups)

tiktoken needs TIKTOKEN_CACHE_DIR filled from the rank files (tests/bench/reference.py
tiktoken-cache); any download attempt fails (the proxy is pointed at a dead port).
Token files are read three ways where they exist: a numpy reader written from Megatron's
format description (stricter than Megatron), megatron-core's own IndexedDataset and
IndexedDatasetBuilder (loaded from the installed wheel with import stubs; byte identity of
.bin and .idx), numpy.memmap for nanoGPT, the llm.c header rules for llm.c.
Prints one line per failure and "N passed, M failed"; exits 1 on failure.
"""
import importlib.util
import json
import os
import sys
import tempfile
import types

import numpy as np

from common import check, finish, load_manifest, sha256


def texts(corpus):
    with open(corpus, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def files(outdir, suffix):
    return [f["path"] for f in load_manifest(outdir)["files"] if f["path"].endswith(suffix)]


def read_megatron(outdir):
    """Documents of every prefix, in manifest order, by the format description."""
    docs = []
    for name in files(outdir, ".idx"):
        prefix = os.path.join(outdir, name[:-4])
        idx = np.fromfile(prefix + ".idx", dtype=np.uint8)
        check(bytes(idx[:9]) == b"MMIDIDX\x00\x00", f"{name}: magic")
        version, = np.frombuffer(idx[9:17].tobytes(), "<u8")
        check(version == 1, f"{name}: version {version}")
        code = int(idx[17])
        check(code in (4, 8), f"{name}: dtype code {code}")
        dtype = np.dtype("<u2") if code == 8 else np.dtype("<i4")
        s, d = np.frombuffer(idx[18:34].tobytes(), "<u8")
        s, d = int(s), int(d)
        check(idx.size == 34 + 12 * s + 8 * d, f"{name}: size {idx.size} vs counts")
        lens = np.frombuffer(idx.tobytes(), "<i4", s, 34)
        ptrs = np.frombuffer(idx.tobytes(), "<i8", s, 34 + 4 * s)
        bounds = np.frombuffer(idx.tobytes(), "<i8", d, 34 + 12 * s)
        expect = np.concatenate([[0], np.cumsum(lens.astype(np.int64) * dtype.itemsize)[:-1]]) if s else ptrs
        check(np.array_equal(ptrs, expect), f"{name}: pointers are the running sum")
        check(bounds[0] == 0 and bounds[-1] == s and np.all(np.diff(bounds) >= 0), f"{name}: document indices")
        toks = np.fromfile(prefix + ".bin", dtype=dtype)
        check(toks.size * dtype.itemsize == int(lens.astype(np.int64).sum()) * dtype.itemsize, f"{name}: .bin size")
        for i in range(d - 1):
            doc = [toks[ptrs[k] // dtype.itemsize: ptrs[k] // dtype.itemsize + lens[k]] for k in range(bounds[i], bounds[i + 1])]
            docs.append(np.concatenate(doc).tolist() if doc else [])
    return docs


def megatron_core():
    """megatron-core's indexed_dataset module from the installed wheel, without torch."""
    spec = importlib.util.find_spec("megatron")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = os.path.join(list(spec.submodule_search_locations)[0], "core")
    for name in ["megatron", "megatron.core", "megatron.core.datasets"]:
        module = types.ModuleType(name)
        module.__path__ = []
        sys.modules[name] = module
    utils = types.ModuleType("megatron.core.utils")
    utils.log_single_rank = lambda *args, **kwargs: None
    sys.modules["megatron.core.utils"] = utils
    loaded = None
    for name, rel in [("megatron.core.msc_utils", "msc_utils.py"),
                      ("megatron.core.datasets.object_storage_utils", "datasets/object_storage_utils.py"),
                      ("megatron.core.datasets.indexed_dataset", "datasets/indexed_dataset.py")]:
        spec = importlib.util.spec_from_file_location(name, os.path.join(root, rel))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        loaded = module
    return loaded


def check_megatron_core(outdir, want_docs, eod):
    mc = megatron_core()
    if mc is None:
        print("megatron-core not installed: its reader and builder were not run")
        return
    got = []
    for name in files(outdir, ".idx"):
        prefix = os.path.join(outdir, name[:-4])
        ds = mc.IndexedDataset(prefix)
        bounds = ds.document_indices
        for i in range(len(bounds) - 1):
            seqs = [ds[k].tolist() for k in range(bounds[i], bounds[i + 1])]
            got.append([t for s in seqs for t in s])
        # Byte identity: the real builder fed the same documents writes the same files.
        idx_code = int(np.fromfile(prefix + ".idx", np.uint8, 18)[17])
        dtype = np.uint16 if idx_code == 8 else np.int32
        with tempfile.TemporaryDirectory() as tmp:
            ref = os.path.join(tmp, "ref")
            builder = mc.IndexedDatasetBuilder(ref + ".bin", dtype=dtype)
            for i in range(len(bounds) - 1):
                doc = [t for k in range(bounds[i], bounds[i + 1]) for t in ds[k].tolist()]
                builder.add_document(np.array(doc, dtype=dtype), [len(doc)] if doc else [])
            builder.finalize(ref + ".idx")
            for ext in (".bin", ".idx"):
                with open(ref + ext, "rb") as a, open(prefix + ext, "rb") as b:
                    check(a.read() == b.read(), f"{name[:-4]}{ext}: byte-identical to megatron-core's IndexedDatasetBuilder")
    check(got == want_docs, "megatron-core's IndexedDataset reads the same documents")


def compare(fmt, outdir, want, eod):
    """want: the reference ids of every document (without EOD)."""
    opts = load_manifest(outdir)["options"]
    if fmt == "megatron":
        docs = [w + [eod] if w and eod is not None else list(w) for w in want]
        got = read_megatron(outdir)
        check(len(got) == len(docs), f"megatron: {len(got)} documents, expected {len(docs)}")
        bad = [i for i, (g, w) in enumerate(zip(got, docs)) if g != w]
        check(not bad, f"megatron: documents differ from the reference, first {bad[:3]}")
        check_megatron_core(outdir, docs, eod)
        return
    stream = []
    for w in want:
        if eod is not None and fmt == "llmc":
            stream.append(eod)
        stream.extend(w)
        if eod is not None and fmt == "nanogpt":
            stream.append(eod)
    dtype = np.dtype("<u2") if opts["dtype"] == "uint16" else np.dtype("<u4")
    got = []
    for name in files(outdir, ".bin"):
        path = os.path.join(outdir, name)
        if fmt == "nanogpt":
            arr = np.memmap(path, dtype=dtype, mode="r")
            check(os.path.getsize(path) == arr.size * dtype.itemsize, f"{name}: whole tokens")
            got.extend(arr.tolist())
        else:
            header = np.fromfile(path, dtype="<i4", count=256)
            magic = (20240520, 1) if dtype.itemsize == 2 else (20240801, 7)
            check((header[0], header[1]) == magic, f"{name}: llm.c magic/version {header[:2]}")
            check(header[2] > 0 and not header[3:].any(), f"{name}: count {header[2]}, rest zero")
            toks = np.fromfile(path, dtype=dtype, offset=1024)
            check(len(toks) == header[2], f"{name}: header count {header[2]} vs {len(toks)} tokens")
            check(os.path.getsize(path) == 1024 + dtype.itemsize * int(header[2]), f"{name}: size")
            got.extend(toks.tolist())
    check(len(got) == len(stream), f"{fmt}: {len(got)} tokens, expected {len(stream)}")
    first = next((i for i, (a, b) in enumerate(zip(got, stream)) if a != b), None)
    check(first is None and len(got) == len(stream), f"{fmt}: ids differ from the reference at token {first}")


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "tiktoken":
        import tiktoken
        encoding, corpus, fmt, outdir = args
        enc = tiktoken.get_encoding(encoding)
        want = enc.encode_ordinary_batch(texts(corpus), num_threads=os.cpu_count())
        opts = load_manifest(outdir)["options"]
        check(opts["vocab_size"] == enc.n_vocab, f"vocab {opts['vocab_size']} vs tiktoken {enc.n_vocab}")
        check(opts["eod_id"] == enc.eot_token, f"eod {opts['eod_id']} vs tiktoken {enc.eot_token}")
        compare(fmt, outdir, want, opts["eod_id"])
    elif mode == "hf":
        from tokenizers import Tokenizer
        path, eod_token, corpus, fmt, outdir = args
        tok = Tokenizer.from_file(path)
        tok.no_padding()
        tok.no_truncation()
        tok.encode_special_tokens = True
        want = [e.ids for e in tok.encode_batch(texts(corpus), add_special_tokens=False)]
        opts = load_manifest(outdir)["options"]
        check(opts["eod_id"] == tok.token_to_id(eod_token), f"eod id {opts['eod_id']}")
        with open(path, "rb") as f:
            check(opts["tokenizer_sha256"] == sha256(f.read()), "tokenizer digest")
        compare(fmt, outdir, want, opts["eod_id"])
    elif mode == "train-bpe":
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        corpus, out = args
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=["<|endoftext|>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
        tok.train_from_iterator(texts(corpus), trainer)
        tok.save(out)
        return
    elif mode == "train-wordpiece":
        from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
        corpus, out = args
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=2000, special_tokens=["[UNK]", "[SEP]"],
                                            show_progress=False)
        tok.train_from_iterator(texts(corpus), trainer)
        tok.save(out)
        return
    elif mode == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq
        corpus, out = args
        docs = texts(corpus)
        table = pa.table({"id": list(range(len(docs))), "body": docs})
        pq.write_table(table, out, row_group_size=max(1, len(docs) // 5), compression="snappy")
        return
    else:
        sys.exit(f"unknown mode {mode}")
    finish()


if __name__ == "__main__":
    main()
