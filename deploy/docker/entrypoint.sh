#!/bin/bash
# Container entrypoint: activate the pixi environment copied from the build stage
# (/shell-hook.sh = `pixi shell-hook -e ENV -s bash`, prefix-dev's documented pattern),
# then run the container's command in it.
set -euo pipefail
# shellcheck disable=SC1091
source /shell-hook.sh
exec "$@"
