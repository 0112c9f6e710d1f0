#!/bin/sh
# A job that prints progress on stdout, then PyTorch's CUDA error on
# stderr, and exits 1.
echo "epoch 1 step 10 loss 2.3041"
echo "epoch 1 step 20 loss 2.1187"
echo "Traceback (most recent call last):" >&2
echo '  File "train.py", line 88, in <module>' >&2
echo "RuntimeError: CUDA error: an illegal memory access was encountered" >&2
echo "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect." >&2
exit 1
