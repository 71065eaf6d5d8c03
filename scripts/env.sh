# Shared environment for every project command; sourced, never run.
# Keeps Reflex, bun and caches inside the project and off every host but the package registries.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
export PATH="$ROOT/.venv/bin:$PATH"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export REFLEX_BUN_PATH="$ROOT/.tools/node_modules/@oven/bun-linux-x64/bin/bun"
export REFLEX_DIR="$ROOT/.tools/reflex"
export BUN_INSTALL_CACHE_DIR="$ROOT/.tools/bun-cache"
export BUN_RUNTIME_TRANSPILER_CACHE_PATH="$ROOT/.tools/bun-transpiler-cache"
# Python caches compiled modules (__pycache__, ignored by git) even where the machine's environment
# says not to: without it every scheduler, CLI, web worker and test worker compiles the project and
# its tests from source again (half of a test worker's start-up; docs/TESTING.md).
unset PYTHONDONTWRITEBYTECODE
export REFLEX_CHECK_LATEST_VERSION=false
export REFLEX_TELEMETRY_ENABLED=false
if [ -z "${NPM_CONFIG_REGISTRY:-}" ] && command -v npm >/dev/null 2>&1; then
  NPM_CONFIG_REGISTRY="$(npm config get registry 2>/dev/null)"
  export NPM_CONFIG_REGISTRY
fi
