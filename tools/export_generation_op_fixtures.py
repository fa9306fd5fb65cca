"""Writes tests/fixtures/generation_ops/: onnxruntime's generation ops as its own tool writes them.

onnxruntime's `convert_generation` (in the onnxruntime wheel) wraps a GPT-2 or T5 decoder
into one file whose com.microsoft `BeamSearch`, `GreedySearch` or `Sampling` node holds the
decoder (and T5's encoder) as subgraphs. This script builds tiny random GPT-2 and T5 models
from configs (nothing from a model hub) and runs that tool on them, so the tests check
jaxonnx against onnxruntime on files another tool wrote.

What makes them: torch 2.13 (CPU), transformers 4.46 (onnxruntime's GPT-2 exporter passes
the cache as tuples, which transformers 5 refuses), onnxruntime 1.32. Run it in an
environment that has those, e.g.::

    python -m venv --system-site-packages /tmp/genvenv
    /tmp/genvenv/bin/pip install transformers==4.46.3
    /tmp/genvenv/bin/python tools/export_generation_op_fixtures.py

The committed tests need none of them: only the .onnx files this writes.
"""

import shutil
import sys
import tempfile
from pathlib import Path

import torch
import transformers
from onnxruntime.transformers import convert_generation

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "generation_ops"
VOCAB = 96


def _eager_attention_only():
    # The exporter onnxruntime drives is torch's TorchScript one at opset 11, which has no
    # scaled_dot_product_attention: keep transformers on its eager attention.
    transformers.modeling_utils.PreTrainedModel._check_and_enable_sdpa = classmethod(
        lambda cls, config, hard_check_only=False: config
    )


def _t5_without_fusions():
    # The tool fuses T5's attention bias into RelativePositionBias, which onnxruntime's CPU
    # provider lacks: export T5's encoder and decoder unfused so that onnxruntime CPU runs them.
    export = convert_generation.export_t5_onnx_models

    def unfused(*args, **kwargs):
        return export(*args, **{**kwargs, "optimize_onnx": False})

    convert_generation.export_t5_onnx_models = unfused


def _tiny_models(folder: Path):
    torch.manual_seed(0)
    gpt2 = transformers.GPT2Config(
        n_layer=2,
        n_embd=32,
        n_head=2,
        vocab_size=VOCAB,
        n_positions=64,
        bos_token_id=VOCAB - 1,
        eos_token_id=VOCAB - 1,
    )
    transformers.GPT2LMHeadModel(gpt2).save_pretrained(folder / "tiny_gpt2")
    t5 = transformers.T5Config(
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        vocab_size=VOCAB,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    transformers.T5ForConditionalGeneration(t5).save_pretrained(folder / "tiny_t5")


def _convert(model: Path, model_type: str, output: Path, *flags: str):
    args = [
        "-m",
        str(model),
        "--model_type",
        model_type,
        "--output",
        str(output),
        "--disable_parity",
        "--disable_perf_test",
        *flags,
    ]
    output.parent.mkdir(parents=True, exist_ok=True)
    # The tool's main() would go on to test the file with a tokenizer the tiny models lack;
    # convert_generation_model is the part that writes it.
    parsed = convert_generation.parse_arguments(args)
    kinds = convert_generation.GenerationType
    if "--top_p" in flags:
        kind = kinds.SAMPLING
    elif parsed.num_beams == 1 and parsed.num_return_sequences == 1:
        kind = kinds.GREEDYSEARCH
    else:
        kind = kinds.BEAMSEARCH
    convert_generation.convert_generation_model(parsed, kind)


def main():
    _eager_attention_only()
    _t5_without_fusions()
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        _tiny_models(tmp)
        gpt2, t5 = tmp / "tiny_gpt2", tmp / "tiny_t5"
        every_input = ["--vocab_mask", "--prefix_vocab_mask", "--custom_attention_mask"]
        _convert(
            gpt2,
            "gpt2",
            tmp / "gpt2" / "gpt2_beam_search.onnx",
            "--num_beams",
            "4",
            "--num_return_sequences",
            "2",
            "--output_sequences_scores",
            "--output_token_scores",
            *every_input,
        )
        _convert(
            gpt2,
            "gpt2",
            tmp / "gpt2_ngram" / "gpt2_beam_search_no_repeat_ngram.onnx",
            "--num_beams",
            "4",
            "--num_return_sequences",
            "2",
            "--early_stopping",
            "--no_repeat_ngram_size",
            "2",
            "--output_sequences_scores",
            "--output_token_scores",
            "--custom_attention_mask",
        )
        _convert(
            gpt2,
            "gpt2",
            tmp / "greedy" / "gpt2_greedy_search.onnx",
            "--num_beams",
            "1",
            "--num_return_sequences",
            "1",
            *every_input,
        )
        _convert(
            gpt2,
            "gpt2",
            tmp / "sampling" / "gpt2_sampling.onnx",
            "--num_beams",
            "1",
            "--num_return_sequences",
            "1",
            "--top_p",
            "0.6",
            *every_input,
        )
        _convert(
            t5,
            "t5",
            tmp / "t5" / "t5_beam_search.onnx",
            "--num_beams",
            "4",
            "--num_return_sequences",
            "2",
            "--output_sequences_scores",
            "--output_token_scores",
            *every_input,
        )
        for made in [
            "gpt2/gpt2_beam_search.onnx",
            "gpt2_ngram/gpt2_beam_search_no_repeat_ngram.onnx",
            "greedy/gpt2_greedy_search.onnx",
            "sampling/gpt2_sampling.onnx",
            "t5/t5_beam_search.onnx",
        ]:
            shutil.copy(tmp / made, OUT / Path(made).name)
    for written in sorted(OUT.glob("*.onnx")):
        print(f"{written.name}: {written.stat().st_size / 1e6:.2f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
