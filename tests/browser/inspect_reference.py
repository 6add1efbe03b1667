"""The PyTorch side of the "Looking inside" browser tests: our module with the weights a
variant computes with, for model_export/interpret.py's hooks."""

from __future__ import annotations

import functools

import numpy as np
import torch

from faults import manifest, model_dir
from model_export.gpt2 import GPT2, GPT2Config
from model_export.pipeline import BuildDir
from model_export.tables import read_weights
from served import ROOT


@functools.cache
def hooked(variant: str) -> GPT2:
    """Our PyTorch module with the weights `variant` computes with: q4x's dequantized weights,
    else the fp32 reference's (for the int8 and int4 variants, which are compared within a bound)."""
    cfg = manifest()["config"]
    build = BuildDir(ROOT / "build" / "models" / model_dir().name)  # the export's own directory, with .build/
    source = build.runnable_graph("q4x") if variant == "q4x" else build.reference
    model = GPT2(GPT2Config(**cfg))
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in read_weights(source, cfg["n_layer"]).state_dict().items()}
    model.load_state_dict(state)
    return model
