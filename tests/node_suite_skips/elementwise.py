"""onnx node cases of the elementwise ops that jaxonnx does not run: none.

Every case whose ops are all registered runs and passes, Mod-28's float ``fmod=0`` cases
and the float16/bfloat16 ones included. (The four ``test_attention_*_bf16_expanded`` cases
that fail use the elementwise ops, but the node that differs is their Softmax.)
"""

SKIPS: dict[str, str] = {}
