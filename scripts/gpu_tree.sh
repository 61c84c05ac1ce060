#!/usr/bin/env bash
# Source this on the GPU machine from the repo root: copies the checkout (code, tasks, configs, scripts,
# carried wheels) to a temporary folder and changes into it, then sources gpu_env.sh there. A run that
# outlasts one device call reads its code from this copy: a checkout replaced while the run goes on (a
# fresh copy of the same commit put on the machine) once left three evaluations without a module they
# imported late.
ARENA_TREE=$(mktemp -d)/checkout
mkdir -p "$ARENA_TREE"
cp -r arena tasks configs scripts pyproject.toml "$ARENA_TREE"/
[ -d .whl ] && cp -r .whl "$ARENA_TREE"/
cd "$ARENA_TREE" || return 1
source scripts/gpu_env.sh
