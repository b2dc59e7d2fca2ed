"""The first GNN encoder of a process says that it imports torch_geometric, and that import
leaves ``transformers`` out (torch_geometric.llm imports it only for a type annotation, under
``try/except ImportError``; it was most of the import's CPU time, see ``marl.gnn._convs``):
a fresh interpreter, as ``selfplay-train encoder=gnn`` is one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="LOG %(name)s %(message)s", stream=sys.stdout)
import torch
from marl.gnn import GraphEncoder
from games.graphs import NODE_FEATURES
enc = GraphEncoder(len(NODE_FEATURES), hidden=8, layers=1, heads=2, layer="transformer")
GraphEncoder(len(NODE_FEATURES), hidden=8, layers=1, heads=2)  # a second one says nothing
print("transformers imported:", "transformers" in sys.modules, flush=True)
out = enc(torch.zeros(3, 4, len(NODE_FEATURES)), torch.zeros(3, dtype=torch.long))
print("out", tuple(out.shape))
import transformers  # noqa: F401 - imports as usual afterwards
from transformers import PreTrainedTokenizerFast  # noqa: F401
print("transformers imports afterwards:", "transformers" in sys.modules)
"""


def run(code: str) -> list[str]:
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.splitlines()


def test_first_gnn_encoder_says_it_imports_torch_geometric_and_skips_transformers():
    lines = run(CODE)
    said = [ln for ln in lines if ln.startswith("LOG marl.gnn")]
    assert said == ["LOG marl.gnn building a GNN encoder: importing torch_geometric "
                    "(seconds, once a process)"], lines
    assert "transformers imported: False" in lines, lines
    assert "out (3, 16)" in lines, lines
    assert "transformers imports afterwards: True" in lines, lines


def test_transformers_imported_before_is_left_alone():
    """A process that has transformers (an LLM member of a league built first) keeps it."""
    lines = run("import transformers, sys\n" + CODE.replace("import torch\n", "import torch\n"
                "assert sys.modules['transformers'] is transformers\n"))
    assert "transformers imported: True" in lines, lines
    assert "out (3, 16)" in lines, lines
