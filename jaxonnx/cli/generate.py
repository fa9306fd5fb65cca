"""``jaxonnx generate MODEL``: text (or token ids) from a causal LM's ONNX file.

    jaxonnx generate MODEL_DIR --prompt "Once upon a time" --max-new-tokens 32
    jaxonnx generate model.onnx --prompt-ids 1,2,3 --max-new-tokens 8

``MODEL`` is an ``.onnx`` file or a folder with one (``model.onnx`` first). A text prompt needs
the ``tokenizers`` package (``pip install 'jaxonnx[generate]'``) and the ``tokenizer.json``
beside the model; token ids need neither. The end-of-sequence and padding ids come from the
``generation_config.json`` or ``config.json`` beside the model (Optimum and onnxruntime-genai
write them), unless given. Several ``--prompt`` (or ``--prompt-ids``) make one batch of
left-padded prompts, decoded together. The text (or the ids) goes to stdout, one line per
prompt; how long it took goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from jaxonnx.cli.errors import _UsageError


def add_parser(commands) -> None:
    """Adds the ``generate`` subcommand to the command line's subparsers."""
    generate = commands.add_parser(
        "generate",
        help="generate text (or token ids) from a causal LM with its KV cache, the loop under one jax.jit",
        description=_plain(__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n", 2)[2]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    generate.add_argument("model", help="an .onnx file, or a folder with model.onnx (and tokenizer.json, config.json)")
    prompt = generate.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", action="append", metavar="TEXT", help="a text prompt (repeatable: one batch)")
    prompt.add_argument("--prompt-ids", action="append", metavar="ID,ID,...", help="a prompt as token ids (repeatable)")
    generate.add_argument("--max-new-tokens", type=int, default=32, metavar="N", help="tokens to add (default 32)")
    generate.add_argument("--sample", action="store_true", help="sample instead of greedy decoding")
    generate.add_argument("--seed", type=int, default=0, help="the jax.random key's seed when sampling (default 0)")
    generate.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default 1)")
    generate.add_argument("--top-k", type=int, metavar="K", help="sample among the K most likely tokens")
    generate.add_argument("--top-p", type=float, metavar="P", help="sample among the most likely tokens adding up to P")
    generate.add_argument(
        "--eos-token-id",
        type=int,
        action="append",
        metavar="ID",
        help="a token that ends a prompt's generation (repeatable; default from the model's config)",
    )
    generate.add_argument(
        "--pad-token-id", type=int, metavar="ID", help="what follows the end (default from the config)"
    )


def _plain(text: str) -> str:
    """A docstring as help text: reStructuredText's ``literal`` marks dropped, so that
    ``--help`` reads as plain text (its paragraphs stay as written)."""
    return text.replace("``", "")


def run(args) -> int:
    import jax

    import jaxonnx
    from jaxonnx.generation import cache_dims_beside, find_cache, load_causal_lm

    if args.max_new_tokens < 1:
        raise _UsageError(f"--max-new-tokens must be at least 1, got {args.max_new_tokens}.", exit_code=2)
    if not os.path.exists(args.model):
        raise _UsageError(f"No such file or folder: {args.model!r}.")
    folder = args.model if os.path.isdir(args.model) else os.path.dirname(os.path.abspath(args.model))
    config = _config(folder)
    tokenizer = _tokenizer(folder, needed=args.prompt is not None)
    if args.prompt is not None:
        prompts = [tokenizer.encode(text).ids for text in args.prompt]
    else:
        prompts = [_ids(text) for text in args.prompt_ids]
    if not all(prompts):
        raise _UsageError("A prompt is empty (no tokens).", exit_code=2)
    eos = args.eos_token_id if args.eos_token_id is not None else config.get("eos_token_id")
    pad = args.pad_token_id if args.pad_token_id is not None else config.get("pad_token_id")
    if pad is None:
        pad = (eos[0] if isinstance(eos, list) else eos) if eos is not None else 0
    width = max(len(p) for p in prompts)
    ids = np.array([[pad] * (width - len(p)) + list(p) for p in prompts], np.int64)
    mask = np.array([[0] * (width - len(p)) + [1] * len(p) for p in prompts], np.int64)
    model = load_causal_lm(args.model, routed_tokens=ids.size)  # Mixture-of-Experts routing: see load_causal_lm
    layout = find_cache(model, dims=cache_dims_beside(args.model))
    start = time.perf_counter()
    out = jaxonnx.generate(
        model,
        ids,
        args.max_new_tokens,
        attention_mask=mask,
        cache=layout,
        rng=jax.random.key(args.seed) if args.sample else None,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        eos_token_id=eos,
        pad_token_id=pad,
    )
    out = np.asarray(jax.block_until_ready(out))
    seconds = time.perf_counter() - start
    ended = set(np.ravel(eos).tolist()) if eos is not None else set()
    for row, prompt in zip(out, prompts):
        new = row[width:].tolist()
        if ended & set(new):  # drop the padding after the end
            new = new[: next(i for i, t in enumerate(new) if t in ended) + 1]
        if args.prompt is not None:
            print(tokenizer.decode(list(prompt) + new, skip_special_tokens=True))
        else:
            print(",".join(str(t) for t in list(prompt) + new))
    print(f"{out.shape[0]} x {args.max_new_tokens} tokens in {seconds:.2f} s, compilation included", file=sys.stderr)
    return 0


def _ids(text: str) -> list[int]:

    try:
        return [int(t) for t in text.replace(" ", "").split(",") if t]
    except ValueError:
        raise _UsageError(f"--prompt-ids takes comma-separated integers, got {text!r}.", exit_code=2) from None


def _config(folder: str) -> dict:
    """The end and padding ids the exporter wrote beside the model (generation_config.json first)."""
    found = {}
    for name in ("config.json", "generation_config.json"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path) as f:
                values = json.load(f)
            found.update({k: values[k] for k in ("eos_token_id", "pad_token_id") if values.get(k) is not None})
    return found


def _tokenizer(folder: str, *, needed: bool):

    path = os.path.join(folder, "tokenizer.json")
    if not needed:
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise _UsageError(
            "A text --prompt needs the `tokenizers` package (pip install 'jaxonnx[generate]'); "
            "--prompt-ids takes token ids without it."
        ) from None
    if not os.path.exists(path):
        raise _UsageError(f"A text --prompt needs {path!r}, which does not exist; give --prompt-ids instead.")
    return Tokenizer.from_file(path)
