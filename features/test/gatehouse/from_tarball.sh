#!/bin/bash
# The Feature with a packed tarball in its folder (tests/blackbox/package.test.ts puts it there).
set -e
source dev-container-features-test-lib

check "the gatehouse command is on the PATH" bash -c "gatehouse --version | grep -Ex '[0-9]+\.[0-9]+\.[0-9]+.*'"
check "it is the npm package gatehouse-agents" bash -c "npm ls --global gatehouse-agents"
check "a plan review runs and times out with exit 3" bash -c \
  "printf '# Plan\n\n1. Step\n' | SERVICE_REMOTE=1 SERVICE_TIMEOUT=1s gatehouse plan > /tmp/decision.json; test \$? -eq 3"
check "its decision line says timeout" bash -c "grep -q '\"decision\":\"timeout\"' /tmp/decision.json"

reportResults
