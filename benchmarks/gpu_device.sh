#!/usr/bin/env bash
# The device machine's run for issue 34, in one call (device time is scarce): the GPU-relevant
# tests with full float32 products, then benchmarks/gpu.py. Writes its logs to $OUT.
#   bash benchmarks/gpu_device.sh            (OUT defaults to /tmp/gpu_out)
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
# The working tree as it is (the device copy's .git may be older than the checkout).
git log --oneline -1 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/machine.txt"
python3 -c "import jax, torch, onnx, onnxruntime; print('jax', jax.__version__, jax.devices(), 'torch', torch.__version__, 'onnx', onnx.__version__, 'ort', onnxruntime.__version__)" | tee -a "$OUT/machine.txt"
for flags in "--xla_cpu_use_fusion_emitters=false" "--xla_backend_optimization_level=0"; do
  XLA_FLAGS=$flags timeout 60 python3 -c "import jax.numpy as n; n.ones(2).block_until_ready()" >/dev/null 2>"$OUT/flag.err"
  echo "XLA_FLAGS=$flags with this jax: rc $? $(grep -m1 -i 'unknown\|fatal' "$OUT/flag.err")" | tee -a "$OUT/machine.txt"
done
t0=$(date +%s)
JAX_DEFAULT_MATMUL_PRECISION=highest timeout ${TESTS_A_S:-130} python3 -m pytest -n 8 -v -p no:cacheprovider -W ignore::DeprecationWarning \
  tests/test_gpu.py tests/test_conv_formulations.py tests/test_pool_formulations.py tests/test_resize_nearest.py \
  tests/test_conv_winograd.py tests/test_real_models.py tests/test_attention_family.py tests/test_recurrent.py > "$OUT/tests_models.log" 2>&1
echo "models/formulations: rc $? in $(( $(date +%s) - t0 )) s" | tee "$OUT/tests_summary.txt"
t0=$(date +%s)
JAX_DEFAULT_MATMUL_PRECISION=highest timeout ${TESTS_B_S:-150} python3 -m pytest -n 12 -v -p no:cacheprovider -W ignore::DeprecationWarning \
  tests/test_op_table.py > "$OUT/tests_op_table.log" 2>&1
echo "op table: rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests_summary.txt"
for f in "$OUT"/tests_models.log "$OUT"/tests_op_table.log; do
  echo "$(basename $f): $(grep -c ' PASSED' $f) passed, $(grep -c ' FAILED' $f) failed, $(grep -c ' SKIPPED' $f) skipped" | tee -a "$OUT/tests_summary.txt"
  grep ' FAILED' "$f" | sed 's/^\[gw[0-9]*\] \[ *[0-9]*%\] //' | head -40 >> "$OUT/tests_summary.txt"
done
timeout ${BENCH_S:-290} python3 benchmarks/gpu.py --budget-s ${MODELS_S:-150} --cpu-timeout-s ${CPU_S:-60} \
  --tests "$OUT/tests_summary.txt" --out "$OUT/gpu_results.md" --chart "$OUT/gpu.png" > "$OUT/bench.log" 2>&1
echo "bench rc $?"; tail -5 "$OUT/bench.log"; cat "$OUT/tests_summary.txt"
