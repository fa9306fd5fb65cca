#!/usr/bin/env bash
# The device machine's run for text generation (issue 33), in one call: the generation tests
# with the GPU as JAX's default backend (greedy tokens against onnxruntime's CPU loop), the
# GPU-against-CPU tests of tests/test_gpu.py, then benchmarks/gpu_generation.py.
#   bash benchmarks/gpu_generation_device.sh      (OUT defaults to /tmp/gpu_out)
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/machine.txt"
python3 -c "import jax, onnx, onnxruntime; print('jax', jax.__version__, jax.devices(), 'onnx', onnx.__version__, 'ort', onnxruntime.__version__)" | tee -a "$OUT/machine.txt"
python3 -c "import chex, scipy, xdist; print('test deps ok')" 2>&1 | tail -1 | tee -a "$OUT/machine.txt"
t0=$(date +%s)
# Full float32 products: greedy tokens of random tiny models flip on TF32's rounding.
JAX_DEFAULT_MATMUL_PRECISION=highest timeout ${TESTS_S:-300} python3 -m pytest -n 8 -v -p no:cacheprovider \
  -W ignore::DeprecationWarning tests/test_generation.py tests/test_gpu.py > "$OUT/tests.log" 2>&1
echo "tests: rc $? in $(( $(date +%s) - t0 )) s: $(grep -c ' PASSED' "$OUT/tests.log") passed, $(grep -c ' FAILED' "$OUT/tests.log") failed, $(grep -c ' SKIPPED' "$OUT/tests.log") skipped" | tee "$OUT/summary.txt"
grep -E ' FAILED|^E ' "$OUT/tests.log" | head -30 >> "$OUT/summary.txt"
JAX_DEFAULT_MATMUL_PRECISION=highest timeout ${BENCH_S:-200} python3 benchmarks/gpu_generation.py --out "$OUT/gpu_generation.md" > "$OUT/bench.log" 2>&1
echo "bench rc $?" | tee -a "$OUT/summary.txt"; cat "$OUT/gpu_generation.md" 2>/dev/null || tail -20 "$OUT/bench.log"
cat "$OUT/summary.txt"
