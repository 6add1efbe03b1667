"""Figures of the Looking-inside pages, measured on the book's own trained model
(``model_export/book_model``): what a linear translator changes in the logit lens's readings
(``model_export.interpret.fit_translators`` and ``lens_fidelity``)."""

from __future__ import annotations

import functools

import numpy as np

from sitebuild.figures.svg import Svg

LENS_FIT_WINDOWS, LENS_EVAL_WINDOWS = 8, 4  # training-text windows the translators are fitted on; held-out windows read
LENS_LINES = {"logit": ("logit lens (the stream as it is)", "curve warn"), "linear": ("the stream through a fitted translator", "curve")}


@functools.cache
def book_gpt2():
    """The book's trained model as the readable GPT-2 with every output on, loaded once per
    build for the figures that run it (here and ``attention.sink_shares``)."""
    from model_export.gpt2 import GPT2
    from model_export.weights import BOOK_SOURCE, load_hf

    return GPT2.from_hf(load_hf(BOOK_SOURCE).model, output_attentions=True, output_hidden_states=True)


@functools.cache
def lens_windows() -> dict[str, list[list[int]]]:
    """``{"fit": ..., "eval": ...}``: context-long id windows spread evenly over the training
    text, and the first held-out ones (as ``train.held_out_windows`` cuts them)."""
    from model_export import corpus, train
    from model_export.weights import BOOK_MODEL_DIR

    recipe = train.Recipe()
    streams = train.tokenize(corpus.load_pages(BOOK_MODEL_DIR / train.CORPUS_FILE), train.gpt2_tokenizer())
    starts = np.linspace(0, len(streams.train) - recipe.context, LENS_FIT_WINDOWS).astype(int)
    fit = [streams.train[s : s + recipe.context].tolist() for s in starts]
    held_out = [w[:-1].tolist() for w in train.held_out_windows(recipe, streams)[:LENS_EVAL_WINDOWS]]
    return {"fit": fit, "eval": held_out}


@functools.cache
def lens_fidelities() -> dict:
    """Each depth's mean KL to the output and top-1 agreement on held-out text, read plainly
    and through least-squares translators: ``{"logit": {...}, "linear": {...}, "tokens": N}``."""
    from model_export.interpret import fit_translators, lens_fidelity, residual_streams

    model = book_gpt2()
    windows = lens_windows()
    maps = fit_translators(residual_streams(model, windows["fit"]))
    held_out = residual_streams(model, windows["eval"])  # (L + 1, N, C)
    return {"logit": lens_fidelity(model, held_out), "linear": lens_fidelity(model, held_out, maps), "tokens": held_out.shape[1]}


def lens_translators():
    """Top-1 agreement with the output at every depth of the book's model, logit lens against
    a fitted linear translator, with each reading's KL divergence written under it."""
    found = lens_fidelities()
    depths = len(found["logit"]["top1"])
    left, width, top, height = 40, 290, 26, 130
    s = Svg(360, top + height + 112)
    x_of = lambda d: left + width * d / (depths - 1)  # noqa: E731
    y_of = lambda share: top + height * (1 - share)  # noqa: E731
    for share in (0, 0.25, 0.5, 0.75, 1):
        s.line(left, y_of(share), left + width, y_of(share), cls="line thin")
        s.text(left - 4, y_of(share) + 3, f"{share:.0%}", cls="label small", anchor="end")
    for k, (key, (label, cls)) in enumerate(LENS_LINES.items()):
        top1, kl = found[key]["top1"], found[key]["kl"]
        s.polyline([(x_of(d), y_of(v)) for d, v in enumerate(top1)], cls=cls)
        for d in range(depths):
            s.circle(x_of(d), y_of(top1[d]), 3, cls="box", data={"lens": key, "depth": d, "top1": f"{top1[d]:.4f}", "kl": f"{kl[d]:.4f}"})
            s.text(x_of(d), top + height + 44 + 12 * k, f"{kl[d]:.2f}", cls="label small")
        s.polyline([(4, top + height + 41 + 12 * k), (18, top + height + 41 + 12 * k)], cls=cls)
        s.legend_entry(left, top + height + 76 + 14 * k, label, cls)
    for d in range(depths):
        s.text(x_of(d), top + height + 14, "embeddings" if d == 0 else f"after {d - 1}", cls="label small")
    s.text(4, top + height + 30, "mean KL divergence from the output (nats)", cls="label small dim", anchor="start")
    s.text(left - 30, top - 12, "top-1 token the same as the output's", cls="label small dim", anchor="start")
    logit, linear = found["logit"], found["linear"]
    alt = (
        f"Two lines over the {depths} depths of the book's model (the embeddings, then after each block), the share of "
        f"{found['tokens']:,} held-out positions whose top-1 token matches the model's output. Read as it is, the stream "
        f"agrees {', '.join(f'{v:.0%}' for v in logit['top1'])}; through a fitted translator "
        f"{', '.join(f'{v:.0%}' for v in linear['top1'])}. The KL divergences to the output: "
        f"{', '.join(f'{v:.2f}' for v in logit['kl'])} nats plain, {', '.join(f'{v:.2f}' for v in linear['kl'])} translated."
    )
    caption = (
        f"The logit lens and a linear translator on the book's own model: one affine map per depth, fitted by least squares on "
        f"{LENS_FIT_WINDOWS} windows of its training text, then both read {found['tokens']:,} positions of held-out pages. "
        "Under the axis, each reading's mean KL divergence from the output."
    )
    return s.render("lens-translators", alt), alt, caption
