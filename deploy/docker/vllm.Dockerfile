# syntax=docker/dockerfile:1
# Upstream vLLM server image: the pixi `vllm` environment plus `install-vllm-prebuilt`
# (vLLM from PyPI, then transformers --no-deps; pixi.toml [feature.vllm]).
# Build from the repository root (pixi.lock must exist: `pixi lock`):
#   docker build -f deploy/docker/vllm.Dockerfile -t ocrstack/vllm:0.1.0 .
# The server command is not baked in: compose.yaml and deploy/k8s render it from the
# serve profile (`ocrstack deploy k8s`), the same argv as `ocrstack serve --dry-run`.

FROM ghcr.io/prefix-dev/pixi:0.71.0-noble AS build
ENV CONDA_OVERRIDE_CUDA=13.0
WORKDIR /app
COPY pixi.toml pixi.lock pyproject.toml README.md ./
COPY envs ./envs
COPY tasks ./tasks
RUN pixi install --locked -e vllm \
 && pixi run -e vllm install-vllm-prebuilt \
 && pixi shell-hook -e vllm -s bash > /shell-hook.sh

FROM ubuntu:24.04 AS runtime
WORKDIR /app
COPY --from=build /app/.pixi/envs/vllm /app/.pixi/envs/vllm
COPY --from=build /shell-hook.sh /shell-hook.sh
COPY pyproject.toml README.md ./
COPY envs ./envs
COPY tasks ./tasks
COPY --chmod=0755 deploy/docker/entrypoint.sh /entrypoint.sh
RUN useradd --create-home --uid 10001 ocrstack
USER 10001
# models are mounted here (compose volume / Kubernetes PersistentVolumeClaim)
VOLUME ["/models"]
EXPOSE 18499
ENTRYPOINT ["/entrypoint.sh"]
CMD ["ocrstack", "serve", "--help"]
