"""The tiny GPT of demos.backprop written again with torch.nn.functional, for autograd to differentiate.

layer_norm, scaled-dot-product attention with its causal flag, gelu in its tanh form and
cross_entropy with ignore_index: PyTorch's own operators, not the demo's formulas.
"""


def torch_loss(torch, params, cfg, idx, targets):
    """The mean cross-entropy of the model on `idx` against `targets` (-1: not counted).

    Args:
        torch: The torch module (the `torch` fixture).
        params: Parameter arrays by name, or leaf tensors (then used as they are).
        cfg: A demos.backprop.TinyConfig.
        idx: Token ids (B, T).
        targets: Next-token ids (B, T).

    Returns:
        (loss, tensors): the loss tensor and the parameters as float64 tensors that require grad.
    """
    F = torch.nn.functional
    t = {k: v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    B, T = idx.shape
    C, H = cfg.n_embd, cfg.n_head
    x = t["wte"][torch.as_tensor(idx)] + t["wpe"][:T]
    for layer in range(cfg.n_layer):
        p = f"h.{layer}."
        h = F.layer_norm(x, (C,), t[p + "ln_1.weight"], t[p + "ln_1.bias"], eps=1e-5)
        q, k, v = (h @ t[p + "attn.c_attn.weight"] + t[p + "attn.c_attn.bias"]).split(C, dim=-1)
        q, k, v = (a.view(B, T, H, C // H).transpose(1, 2) for a in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + y @ t[p + "attn.c_proj.weight"] + t[p + "attn.c_proj.bias"]
        if cfg.mlp:
            h = F.layer_norm(x, (C,), t[p + "ln_2.weight"], t[p + "ln_2.bias"], eps=1e-5)
            h = F.gelu(h @ t[p + "mlp.c_fc.weight"] + t[p + "mlp.c_fc.bias"], approximate="tanh")
            x = x + h @ t[p + "mlp.c_proj.weight"] + t[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), t["ln_f.weight"], t["ln_f.bias"], eps=1e-5)
    logits = x @ t["wte"].T
    loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), torch.as_tensor(targets).reshape(-1), ignore_index=-1)
    return loss, t
