#!/usr/bin/env bash
# Make sure a local Docker engine answers on /var/run/docker.sock.
#
#   scripts/start-dockerd.sh
#
# - installs docker.io (engine, containerd, runc) and debootstrap with apt when
#   they are missing (apt-get update only if the plain install fails);
# - starts dockerd in the background, detached, when `docker info` does not
#   answer, logging to /var/log/dockerd.log (or /tmp/dockerd.log);
# - waits up to DOCKERD_WAIT_SECONDS (default 60) for `docker info`;
# - exits non-zero with a message when the engine does not come up.
#
# Idempotent: when the engine already answers it does nothing.  Must run as
# root.  Extra daemon flags can be passed in DOCKERD_FLAGS (e.g.
# DOCKERD_FLAGS="--storage-driver=vfs").  On this kind of machine (Debian
# bookworm, kernel 6.x, cgroup v1, iptables-nft) plain `dockerd` works with
# overlay2 and needs no flags; if the daemon dies because of iptables the
# script retries once with --iptables=false --ip-masq=false.
set -euo pipefail

WAIT_SECONDS="${DOCKERD_WAIT_SECONDS:-60}"
PIDFILE=/var/run/docker.pid
CONTAINERD_PIDFILE=/var/run/docker/containerd/containerd.pid

log() { printf 'start-dockerd: %s\n' "$*" >&2; }
die() { printf 'start-dockerd: ERROR: %s\n' "$*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
    die "must run as root (dockerd and apt-get need it)"
fi

# The engine already answers: nothing to do (whatever started it).
if docker info >/dev/null 2>&1; then
    log "docker engine already running"
    exit 0
fi

# --- 1. packages --------------------------------------------------------------
need_pkgs=()
command -v dockerd >/dev/null 2>&1 || need_pkgs+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need_pkgs+=(debootstrap)
command -v docker >/dev/null 2>&1 || need_pkgs+=(docker.io)
if [ "${#need_pkgs[@]}" -gt 0 ]; then
    # de-duplicate
    mapfile -t need_pkgs < <(printf '%s\n' "${need_pkgs[@]}" | sort -u)
    export DEBIAN_FRONTEND=noninteractive
    log "installing ${need_pkgs[*]}"
    if ! apt-get install -y -q --no-install-recommends "${need_pkgs[@]}" ca-certificates iptables >/tmp/start-dockerd-apt.log 2>&1; then
        log "plain install failed; running apt-get update and retrying"
        apt-get update -q >>/tmp/start-dockerd-apt.log 2>&1 || die "apt-get update failed (see /tmp/start-dockerd-apt.log)"
        apt-get install -y -q --no-install-recommends "${need_pkgs[@]}" ca-certificates iptables >>/tmp/start-dockerd-apt.log 2>&1 \
            || die "apt-get install ${need_pkgs[*]} failed (see /tmp/start-dockerd-apt.log)"
    fi
fi
command -v dockerd >/dev/null 2>&1 || die "dockerd not found after installing docker.io"
command -v docker >/dev/null 2>&1 || die "docker client not found after installing docker.io"

# --- 2. log file ----------------------------------------------------------------
LOGFILE="${DOCKERD_LOG:-/var/log/dockerd.log}"
if ! { : >>"$LOGFILE"; } 2>/dev/null; then
    LOGFILE=/tmp/dockerd.log
fi

# --- 3. kernel prerequisites (best effort) -----------------------------------
# cgroups: dockerd needs a mounted cgroup hierarchy (v1 or v2).
if ! grep -qE '^[^ ]+ /sys/fs/cgroup[/ ]' /proc/mounts; then
    log "no cgroup filesystem mounted on /sys/fs/cgroup; trying to mount cgroup2"
    mkdir -p /sys/fs/cgroup
    mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null || log "WARNING: could not mount cgroup2; dockerd may fail"
fi

pid_alive() {   # running and not a zombie (a killed daemon may linger as one)
    local pid="$1" state
    [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
    state="$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$pid/stat" 2>/dev/null || true)"
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

dockerd_alive() {
    local pid
    [ -s "$PIDFILE" ] || return 1
    pid="$(cat "$PIDFILE" 2>/dev/null || true)"
    pid_alive "$pid" && grep -q dockerd "/proc/$pid/comm" 2>/dev/null
}

wait_for_engine() {   # $1 = seconds; returns 0 once `docker info` answers
    local deadline=$((SECONDS + $1))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if docker info >/dev/null 2>&1; then
            return 0
        fi
        # The daemon we started died: stop waiting early.
        if [ -n "${started_pid:-}" ] && ! pid_alive "$started_pid"; then
            return 1
        fi
        sleep 0.5
    done
    return 1
}

start_daemon() {   # args: extra flags
    # A pidfile left by a daemon that was killed makes dockerd refuse to start.
    if [ -e "$PIDFILE" ] && ! dockerd_alive; then
        log "removing stale $PIDFILE"
        rm -f "$PIDFILE"
    fi
    # Same for the containerd that dockerd manages: after `kill -9 dockerd`
    # it dies too but may linger as a zombie, and a new dockerd that finds its
    # pidfile waits for it and gives up ("timeout waiting for containerd").
    local cpid
    cpid="$(cat "$CONTAINERD_PIDFILE" 2>/dev/null || true)"
    if [ -n "$cpid" ] && ! pid_alive "$cpid"; then
        log "removing stale $CONTAINERD_PIDFILE"
        rm -f "$CONTAINERD_PIDFILE"
    fi
    # shellcheck disable=SC2086
    log "starting: dockerd ${DOCKERD_FLAGS:-} $* (log: $LOGFILE)"
    {
        printf '\n==== %s start-dockerd.sh: dockerd %s %s\n' "$(date -u +%FT%TZ)" "${DOCKERD_FLAGS:-}" "$*"
    } >>"$LOGFILE"
    # setsid + nohup: detach from this shell so the daemon outlives the script.
    # shellcheck disable=SC2086
    setsid nohup dockerd ${DOCKERD_FLAGS:-} "$@" </dev/null >>"$LOGFILE" 2>&1 &
    started_pid=$!
}

# --- 4. start ---------------------------------------------------------------------
started_pid=""
if dockerd_alive; then
    # Another dockerd is starting up (or hung): give it the same time budget.
    started_pid="$(cat "$PIDFILE")"
    log "dockerd (pid $started_pid) is running but not answering yet; waiting"
    if wait_for_engine "$WAIT_SECONDS"; then
        log "docker engine is up"
        exit 0
    fi
    if pid_alive "$started_pid"; then
        die "dockerd (pid $started_pid) runs but 'docker info' got no answer within ${WAIT_SECONDS}s; see $LOGFILE"
    fi
    log "dockerd (pid $started_pid) died; starting a new one"
fi
start_daemon

if wait_for_engine "$WAIT_SECONDS"; then
    log "docker engine is up ($(docker version --format 'server {{.Server.Version}}, storage driver' 2>/dev/null) $(docker info --format '{{.Driver}}, cgroup v{{.CgroupVersion}}' 2>/dev/null))"
    exit 0
fi

# One retry for the common "iptables does not work in this sandbox" failure.
if [ -n "$started_pid" ] && ! pid_alive "$started_pid" \
        && tail -n 50 "$LOGFILE" | grep -qiE 'iptables|nat chain|ip6tables'; then
    log "dockerd failed on iptables; retrying with --iptables=false --ip-masq=false"
    start_daemon --iptables=false --ip-masq=false
    if wait_for_engine "$WAIT_SECONDS"; then
        log "docker engine is up (without iptables management)"
        exit 0
    fi
fi

log "last lines of $LOGFILE:"
tail -n 20 "$LOGFILE" >&2 || true
die "docker engine did not answer 'docker info' within ${WAIT_SECONDS}s (dockerd log: $LOGFILE)"
