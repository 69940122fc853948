#!/usr/bin/env bash
# Quick check that the local engine + sandbox image behave as gradeflow needs.
#
#   scripts/docker-smoke.sh [NAME:TAG]        default: gradeflow-python:bookworm
#
# Checks: `python -m pytest` runs as uid 1000 with --network none; only `lo`
# exists without a network; --pids-limit and --memory are applied; a memory
# hog is OOM-killed (exit 137, State.OOMKilled true).  Exits non-zero on the
# first failure.  Assumes start-dockerd.sh and build-image.sh have run.
set -euo pipefail

IMAGE="${1:-gradeflow-python:bookworm}"
RUN=(docker run --rm --network none --user 1000:1000 --pids-limit 64 --memory 256m "$IMAGE")
fail() { printf 'docker-smoke: FAIL: %s\n' "$*" >&2; exit 1; }
ok() { printf 'docker-smoke: ok: %s\n' "$*" >&2; }

out="$("${RUN[@]}" python -m pytest --version 2>&1)" || fail "python -m pytest --version: $out"
ok "$out"

out="$("${RUN[@]}" id -u)"
[ "$out" = 1000 ] || fail "expected uid 1000, got $out"
ok "runs as uid 1000"

out="$("${RUN[@]}" ls /sys/class/net)"
[ "$out" = lo ] || fail "expected only lo with --network none, got: $out"
ok "--network none: only lo"

out="$("${RUN[@]}" sh -c 'cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max')"
[ "$out" = 64 ] || fail "pids limit not applied (pids.max=$out)"
out="$("${RUN[@]}" sh -c 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max')"
[ "$out" = 268435456 ] || fail "memory limit not applied (limit=$out)"
ok "pids and memory limits applied"

name="gradeflow-smoke-oom-$$"
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
rc=0
docker run --name "$name" --network none --user 1000:1000 --pids-limit 64 --memory 256m \
    "$IMAGE" python3 -c 'x = bytearray(10**9)' >/dev/null 2>&1 || rc=$?
oom="$(docker inspect --format '{{.State.OOMKilled}}' "$name")"
if [ "$rc" != 137 ] || [ "$oom" != true ]; then fail "memory hog: exit $rc, OOMKilled=$oom (expected 137, true)"; fi
ok "memory hog OOM-killed (exit 137, OOMKilled=true)"
echo "docker-smoke: all checks passed"
