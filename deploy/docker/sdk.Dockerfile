# syntax=docker/dockerfile:1
# ocrstack sdk/api image: the pixi `sdk` environment (layout model, parse, the HTTP api).
# Build from the repository root (pixi.lock must exist: `pixi lock`):
#   docker build -f deploy/docker/sdk.Dockerfile -t ocrstack/sdk:0.1.0 .
# Pattern: https://pixi.sh/latest/deployment/container/ (build stage installs with --locked,
# runtime stage copies the environment and its activation script; pixi is not in the image).

FROM ghcr.io/prefix-dev/pixi:0.71.0-noble AS build
# GPU-less builders: pixi resolves the linux-64-cu13 platform (pixi.toml) with this override
ENV CONDA_OVERRIDE_CUDA=13.0
WORKDIR /app
COPY pixi.toml pixi.lock pyproject.toml README.md ./
COPY envs ./envs
COPY tasks ./tasks
RUN pixi install --locked -e sdk \
 && pixi shell-hook -e sdk -s bash > /shell-hook.sh

FROM ubuntu:24.04 AS runtime
WORKDIR /app
# the environment's prefix must keep its build path (conda prefixes are not relocatable)
COPY --from=build /app/.pixi/envs/sdk /app/.pixi/envs/sdk
COPY --from=build /shell-hook.sh /shell-hook.sh
# ocrstack is installed editable from /app (pixi.toml [feature.sdk.pypi-dependencies])
COPY pyproject.toml README.md ./
COPY envs ./envs
COPY tasks ./tasks
COPY --chmod=0755 deploy/docker/entrypoint.sh /entrypoint.sh
RUN useradd --create-home --uid 10001 ocrstack
USER 10001
EXPOSE 8000
ENTRYPOINT ["/entrypoint.sh"]
# binds every interface inside the container (asked for); that needs $OCRSTACK_API_KEY
CMD ["ocrstack", "api", "serve", "--host", "0.0.0.0", "--port", "8000"]
