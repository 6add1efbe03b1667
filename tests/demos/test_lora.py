"""demos.lora: the adapted matrix against PyTorch (the thin path and the merged weight), the
counts against LoRA modules built in PyTorch on the real models' shapes and against the LoRA
paper's GPT-3 figures (Hu et al., 2022), and the models' sizes against transformers' configs."""

import numpy as np
import pytest

from demos import lora


@pytest.mark.parametrize("rank, alpha", [(1, 1.0), (4, 8.0), (8, 16.0)])
def test_forward_matches_torch_and_merging_changes_nothing(torch, rank, alpha):
    torch.manual_seed(rank)
    d_in, d_out, T = 12, 10, 5
    base = torch.nn.Linear(d_in, d_out, bias=False).double()
    down, up = torch.nn.Linear(d_in, rank, bias=False).double(), torch.nn.Linear(rank, d_out, bias=False).double()
    torch.nn.init.normal_(up.weight)  # trained B (it starts at zero)
    x = torch.randn(T, d_in, dtype=torch.float64)
    want = (base(x) + alpha / rank * up(down(x))).detach().numpy()
    out = lora.forward(x.tolist(), base.weight.T.tolist(), down.weight.T.tolist(), up.weight.T.tolist(), alpha)
    np.testing.assert_allclose(out["output"], want, rtol=1e-12)
    np.testing.assert_allclose(out["merged_output"], want, rtol=1e-10)
    assert out["trainable"] == down.weight.numel() + up.weight.numel() and out["frozen"] == base.weight.numel()


def test_b_at_zero_leaves_the_model_as_it_was():
    rng = np.random.default_rng(0)
    x, w, a = rng.normal(size=(3, 6)), rng.normal(size=(6, 4)), rng.normal(size=(6, 2))
    out = lora.forward(x.tolist(), w.tolist(), a.tolist(), np.zeros((2, 4)).tolist(), 16.0)
    np.testing.assert_array_equal(out["output"], x @ w)


@pytest.mark.parametrize("model", lora.MODELS)
@pytest.mark.parametrize("rank, targets", [(8, "q,v"), (2, "q,k,v,o"), (4, "up,down")])
def test_counts_match_lora_modules_built_in_torch(torch, model, rank, targets):
    spec = lora.MODELS[model]
    d, ff = spec["d_model"], spec["d_ff"]
    shapes = {"q": (d, d), "k": (d, d), "v": (d, d), "o": (d, d), "up": (d, ff), "down": (ff, d)}
    with torch.device("meta"):
        adapters = [
            torch.nn.Sequential(torch.nn.Linear(shapes[t][0], rank, bias=False), torch.nn.Linear(rank, shapes[t][1], bias=False))
            for _ in range(spec["n_layer"])
            for t in targets.split(",")
        ]
    assert lora.count(model, rank, targets)["trainable"] == sum(p.numel() for m in adapters for p in m.parameters())


def test_the_papers_gpt3_figures():
    # Table 4: 4.7M (r = 1) and 37.7M (r = 8) trainable parameters on W_q and W_v; section 4.2:
    # with r = 4 on W_q and W_v the checkpoint shrinks from 350 GB to about 35 MB.
    assert round(lora.count("gpt3-175b", 1, "q,v")["trainable"] / 1e6, 1) == 4.7
    assert round(lora.count("gpt3-175b", 8, "q,v")["trainable"] / 1e6, 1) == 37.7
    m = lora.memory("gpt3-175b", 4, "q,v")
    assert m["full_checkpoint"] / 1e9 == 350.0
    assert round(m["lora_checkpoint"] / 2**20) == 36  # 37.7 MB, 36 MiB: "35MB" in the paper


def test_model_sizes_match_transformers_configs(torch):
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config())
        llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(tie_word_embeddings=False))
    assert sum(p.numel() for p in gpt2.parameters()) == lora.MODELS["gpt2-small"]["params"]
    assert sum(p.numel() for p in llama.parameters()) == lora.MODELS["llama-7b"]["params"]
    assert (llama.config.hidden_size, llama.config.num_hidden_layers, llama.config.intermediate_size) == tuple(
        lora.MODELS["llama-7b"][k] for k in ("d_model", "n_layer", "d_ff")
    )


def test_memory_is_the_sum_of_its_parts():
    m = lora.memory("llama-7b", 8, "q,v")
    params = lora.MODELS["llama-7b"]["params"]
    assert m["full"] == 16 * params and m["lora"] == 2 * params + 16 * m["trainable"]
    assert m["lora"] < m["full"] / 7


def test_bad_input_is_refused_in_words():
    with pytest.raises(ValueError, match="model must be one of"):
        lora.count("gpt5")
    with pytest.raises(ValueError, match="targets"):
        lora.count(targets="q,q")
    with pytest.raises(ValueError, match="Shapes"):
        lora.forward([[1.0]], [[1.0]], [[1.0, 2.0]], [[1.0]])
