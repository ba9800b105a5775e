#!/usr/bin/env bash
# Set up autograd-lab from scratch: a virtual environment in .venv with torch 2.13.0 (CPU) first,
# then the project and its dependencies. Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
START=$SECONDS
STEP_START=$SECONDS
step() {   # say what is being done, and how long the step before took
  local now=$SECONDS
  if [ -n "${STEP_NAME:-}" ]; then echo "setup: ${STEP_NAME}: done in $((now - STEP_START)) s"; fi
  STEP_NAME=$1
  STEP_START=$now
  if [ -n "$1" ]; then echo "setup: $1 ..."; fi
}
step "bubblewrap (the sandbox), if missing"
# bubblewrap isolates each submission (no network, read-only files, keys hidden); see docs/security.md.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } >/dev/null \
      || echo "setup: could not install bubblewrap; submissions will run without file and network isolation" >&2
  else
    echo "setup: bwrap not found; install bubblewrap (e.g. sudo apt-get install bubblewrap) to isolate submissions" >&2
  fi
fi
# Chromium and its driver: tests/test_html.py opens the HTML report in headless Chromium (via selenium).
step "chromium and chromedriver (the browser tests), if missing"
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } >/dev/null \
      || echo "setup: could not install chromium and chromium-driver; tests/test_html.py will fail" >&2
  else
    echo "setup: chromium or chromedriver not found; install them (e.g. sudo apt-get install chromium chromium-driver) for tests/test_html.py" >&2
  fi
fi
# PostgreSQL's server (initdb, postgres): tests/servers/postgres.py starts a throwaway one for the course service's
# database tests. Debian puts it in /usr/lib/postgresql/<version>/bin, which is not on PATH.
step "postgresql (the course service's database tests), if missing"
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    # postgresql-common first, told not to create the system's own cluster (nor start it on port 5432)
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-common \
        && sed -i 's/^#\?\s*create_main_cluster\s*=.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >/dev/null \
      || echo "setup: could not install postgresql; the PostgreSQL tests will fail" >&2
  else
    echo "setup: PostgreSQL's initdb not found; install it (e.g. sudo apt-get install postgresql) for the PostgreSQL tests" >&2
  fi
fi
# configurable-http-proxy (Node.js): the proxy of the JupyterHub that tests/servers/hub.py starts for the course
# service's JupyterHub mode.
step "configurable-http-proxy (the JupyterHub tests), if missing"
if ! command -v configurable-http-proxy >/dev/null 2>&1 && [ ! -x .venv/bin/configurable-http-proxy ]; then
  if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; } >/dev/null \
      || echo "setup: could not install nodejs and npm; the JupyterHub tests will fail" >&2
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "setup: npm not found; install Node.js and npm (e.g. sudo apt-get install nodejs npm) for the JupyterHub tests" >&2
  elif [ "$(id -u)" = 0 ]; then
    npm install -g -s 'configurable-http-proxy@5' >/dev/null 2>&1 \
      || echo "setup: could not install configurable-http-proxy; the JupyterHub tests will fail" >&2
  else   # no root: into .venv/bin (tests/servers/hub.py looks there too)
    mkdir -p .venv && npm install -g -s --prefix .venv 'configurable-http-proxy@5' >/dev/null 2>&1 \
      || echo "setup: could not install configurable-http-proxy; the JupyterHub tests will fail" >&2
  fi
fi
# axe-core (npm): tests/test_accessibility.py injects it into Chromium to check the pages against WCAG 2.1 AA.
step "axe-core (the accessibility tests), if missing"
if [ ! -f .venv/axe/node_modules/axe-core/axe.min.js ]; then
  if command -v npm >/dev/null 2>&1; then
    mkdir -p .venv/axe && npm install -s --prefix .venv/axe 'axe-core@4.14.1' >/dev/null 2>&1 \
      || echo "setup: could not install axe-core; the accessibility tests will fail" >&2
  else
    echo "setup: npm not found; install Node.js and npm for the accessibility tests (axe-core)" >&2
  fi
fi
step "the virtual environment .venv"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
pip_q() {   # pip, without this machine's notes about local index folders that do not exist
  "$VPY" -m pip --disable-pip-version-check "$@" 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
}
# torch first and pinned: a bare "torch" would pull a multi-GB CUDA build.
step "torch 2.13.0 (CPU)"
pip_q install -q 'torch==2.13.0'
step "autograd-lab and its staff, test, Dask, plotting, course service and JupyterHub extras"
pip_q install -q -e '.[staff,dev,dask,stats,course,hub]'
# rfc3987-syntax (pulled in by jupyter-events) adds ~2 s to every `import nbformat`; nothing we use needs it.
"$VPY" -m pip uninstall -q -y rfc3987-syntax >/dev/null 2>&1 || true
step ""
echo "setup: ready in $((SECONDS - START)) s (activate with: source .venv/bin/activate)"
