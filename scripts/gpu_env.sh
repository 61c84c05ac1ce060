#!/usr/bin/env bash
# Source this on the GPU machine: installs the wheels carried in .whl/ (packages the
# machine's image lacks, e.g. jsonschema) into /tmp/site and puts the repo on PYTHONPATH.
# Installed once a machine: several runs side by side (one a GPU) source this at once, and must not install over
# each other.
if ls .whl/*.whl >/dev/null 2>&1; then
  if [ "$(cat /tmp/site/.arena-wheels 2>/dev/null)" != "$(ls .whl)" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      || return 1 2>/dev/null || exit 1
    ls .whl > /tmp/site/.arena-wheels
  fi
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 COLUMNS=200
