"""demos.sharding: ZeRO's per-GPU memory against the numbers its paper reports (Rajbhandari et
al., 2020, Figure 1) and K = 12 against the state torch.optim.AdamW keeps; the tensor-parallel
MLP and the data-parallel gradient against PyTorch autograd on the unsplit model."""

import numpy as np
import pytest

from demos import sharding

# ZeRO's Figure 1: Ψ = 7.5 billion parameters, N_d = 64 GPUs, K = 12; GB as printed there.
ZERO_FIGURE_1 = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.88}


@pytest.mark.parametrize("stage, gb", ZERO_FIGURE_1.items())
def test_zero_stages_reproduce_the_papers_figure(stage, gb):
    out = sharding.model_state_memory(7.5e9, 64, stage)
    assert round(out["total_gb"], 2 if gb < 10 else 1) == gb
    assert out["total"] == out["weights"] + out["gradients"] + out["optimizer"]


def test_k_is_what_adamw_keeps_beside_a_float32_master_copy(torch):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(3, 8)).sum().backward()
    opt.step()
    n = sum(p.numel() for p in model.parameters())
    moments = sum(t.numel() * t.element_size() for s in opt.state.values() for k, t in s.items() if k != "step")
    master = sum(p.float().numel() * 4 for p in model.parameters())  # float32
    assert (moments + master) / n == sharding.OPTIMIZER_BYTES
    half = sum(p.half().numel() * p.half().element_size() for p in model.parameters()) / n
    assert half == sharding.WEIGHT_BYTES == sharding.GRAD_BYTES


def test_model_parallel_degrees_divide_and_stage_3_divides_everything():
    base = sharding.model_state_memory(1e9, data=8, stage=0)
    split = sharding.model_state_memory(1e9, data=8, stage=0, tensor=4, pipeline=2)
    assert split["total"] == pytest.approx(base["total"] / 8) and split["gpus"] == 64
    assert sharding.model_state_memory(1e9, data=8, stage=3)["total"] == pytest.approx(base["total"] / 8)


@pytest.mark.parametrize("shards", [1, 2, 4, 8])
def test_tensor_parallel_mlp_equals_the_whole_mlp(torch, shards):
    torch.manual_seed(shards)
    C, T = 8, 5
    fc, proj = torch.nn.Linear(C, 4 * C).double(), torch.nn.Linear(4 * C, C).double()
    x = torch.randn(T, C, dtype=torch.float64)
    want = proj(torch.nn.functional.gelu(fc(x), approximate="tanh")).detach().numpy()
    out = sharding.tensor_parallel_mlp(x.tolist(), fc.weight.T.tolist(), fc.bias.tolist(), proj.weight.T.tolist(), proj.bias.tolist(), shards)
    np.testing.assert_allclose(out["output"], want, rtol=1e-12, atol=1e-12)
    assert len(out["partials"]) == shards
    assert out["per_gpu_params"] * shards == fc.weight.numel() + fc.bias.numel() + proj.weight.numel()
    if shards > 1:  # no GPU alone has the answer
        assert not np.allclose(np.array(out["partials"][0]) + proj.bias.detach().numpy(), want)


@pytest.mark.parametrize("gpus", [1, 2, 3, 6])
def test_averaged_slice_gradients_equal_the_whole_batch_gradient(torch, gpus):
    rng = np.random.default_rng(gpus)
    x, y, w = rng.normal(size=(6, 4)), rng.normal(size=(6, 3)), rng.normal(size=(4, 3))
    wt = torch.tensor(w, requires_grad=True)
    ((torch.tensor(x) @ wt - torch.tensor(y)) ** 2).mean().backward()
    out = sharding.data_parallel_grads(x.tolist(), y.tolist(), w.tolist(), gpus)
    np.testing.assert_allclose(out["whole"], wt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(out["averaged"], wt.grad.numpy(), rtol=1e-12)
    assert len(out["per_gpu"]) == gpus


def test_bad_input_is_refused_in_words():
    with pytest.raises(ValueError, match="stage"):
        sharding.model_state_memory(stage=4)
    with pytest.raises(ValueError, match="divide the hidden width"):
        sharding.tensor_parallel_mlp(np.ones((2, 2)).tolist(), np.ones((2, 6)).tolist(), [0] * 6, np.ones((6, 2)).tolist(), [0, 0], 4)
    with pytest.raises(ValueError, match="divide the batch"):
        sharding.data_parallel_grads([[1.0]] * 3, [[0.0]] * 3, [[1.0]], 2)
