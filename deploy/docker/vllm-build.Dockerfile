# syntax=docker/dockerfile:1
# vLLM built from the feat-ocr source (guide 3.2): the pixi `vllm-build` environment and its
# `build-vllm` task (torch pins, vLLM editable --no-build-isolation, the feat-ocr transformers
# --no-deps, version assertions). The two source checkouts are build contexts of their own:
#   docker build -f deploy/docker/vllm-build.Dockerfile \
#     --build-context vllm-src=/path/to/vllm --build-context transformers-src=/path/to/transformers \
#     --build-arg TORCH_CUDA_ARCH_LIST="9.0" -t ocrstack/vllm-build:0.1.0 .
# (pixi.lock must exist: `pixi lock`.) nvcc comes from the environment (cuda-toolchain feature);
# no GPU is needed to compile.

FROM scratch AS vllm-src
FROM scratch AS transformers-src

FROM ghcr.io/prefix-dev/pixi:0.71.0-noble AS build
ENV CONDA_OVERRIDE_CUDA=13.0
# compute capabilities to compile for (vLLM's setup.py reads it); default: Hopper
ARG TORCH_CUDA_ARCH_LIST="9.0"
ENV TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST}
WORKDIR /app
COPY pixi.toml pixi.lock pyproject.toml README.md ./
COPY envs ./envs
COPY tasks ./tasks
COPY patches ./patches
COPY --from=vllm-src / /src/vllm
COPY --from=transformers-src / /src/transformers
RUN pixi install --locked -e vllm-build \
 && pixi run -e vllm-build build-vllm /src/vllm /src/transformers \
 && pixi shell-hook -e vllm-build -s bash > /shell-hook.sh

FROM ubuntu:24.04 AS runtime
WORKDIR /app
COPY --from=build /app/.pixi/envs/vllm-build /app/.pixi/envs/vllm-build
COPY --from=build /shell-hook.sh /shell-hook.sh
# vLLM and the feat-ocr transformers are editable installs: their sources stay at the same paths
COPY --from=build /src /src
COPY pyproject.toml README.md ./
COPY envs ./envs
COPY tasks ./tasks
COPY --chmod=0755 deploy/docker/entrypoint.sh /entrypoint.sh
RUN useradd --create-home --uid 10001 ocrstack
USER 10001
VOLUME ["/models"]
EXPOSE 18499
ENTRYPOINT ["/entrypoint.sh"]
CMD ["ocrstack", "serve", "--help"]
