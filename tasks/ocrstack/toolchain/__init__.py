"""CUDA toolchains for building vLLM (guide 3.2).

- :mod:`ocrstack.toolchain.check`: ``ocrstack toolchain check`` -- nvcc version,
  nvcc CUDA major == torch's, host gcc accepted by nvcc, ``cuda_fp16.h`` finds
  ``nv/target``.
- :mod:`ocrstack.toolchain.pipcuda`: ``ocrstack toolchain fix-pip-cuda`` -- the
  guide 3.2 symlink surgery on the pip-wheel CUDA toolkit, idempotent and never
  leaving a dangling link (with :mod:`~ocrstack.toolchain.links`, the safe symlink, and
  :mod:`~ocrstack.toolchain.libcuda`, the driver link or generated libcuda stub).
- :mod:`ocrstack.toolchain.locate`: where a toolkit lives (pip wheels or conda-forge).
"""
