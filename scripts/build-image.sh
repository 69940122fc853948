#!/usr/bin/env bash
# Build the sandbox image locally (no image registry needed).
#
#   scripts/build-image.sh [NAME:TAG]        default: gradeflow-python:bookworm
#
# Idempotent:
# - exits 0 at once when `docker image inspect NAME:TAG` finds the image made
#   by this recipe and import (its label org.gradeflow.recipe); an image made
#   otherwise is imported again (from the cached rootfs when that is current);
# - otherwise debootstraps a Debian bookworm minbase rootfs with python3 and
#   python3-pytest (+ python-is-python3, so `python` resolves) into
#   $GRADEFLOW_CACHE_DIR/rootfs-bookworm (default /var/cache/gradeflow), adds
#   a user "grader" (uid/gid 1000, home /home/grader), and `docker import`s it.
#   A finished rootfs is marked by a stamp file next to it and reused; an
#   unfinished one is thrown away.
#
# Environment:
#   GRADEFLOW_CACHE_DIR      cache dir (default /var/cache/gradeflow)
#   GRADEFLOW_DEBIAN_MIRROR  Debian mirror URL (default: read from
#                            /etc/apt/sources.list{,.d/*}, else deb.debian.org)
#   GRADEFLOW_FORCE_REBUILD  =1: rebuild rootfs and image even if present
#
# Starts the docker engine with scripts/start-dockerd.sh when it is not up.
# Must run as root (debootstrap, chroot).
set -euo pipefail

IMAGE="${1:-gradeflow-python:bookworm}"
SUITE=bookworm
PACKAGES="python3,python3-pytest,python-is-python3"
# Bump when the rootfs recipe below changes: a stale cached rootfs is rebuilt.
RECIPE_VERSION=1
# Bump when what the import leaves out or sets changes: the image is imported again.
# 2: debootstrap's log (it names the build folder) left out.
IMPORT_VERSION=2
# The recipe's identity: a cached rootfs built with another recipe is rebuilt.
RECIPE_ID="v$RECIPE_VERSION suite=$SUITE packages=$PACKAGES"
IMAGE_LABEL="$RECIPE_ID import=$IMPORT_VERSION"

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_DIR="${GRADEFLOW_CACHE_DIR:-/var/cache/gradeflow}"
ROOTFS="$CACHE_DIR/rootfs-$SUITE"
STAMP="$ROOTFS.stamp"

log() { printf 'build-image: %s\n' "$*" >&2; }
die() { printf 'build-image: ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap and chroot need it)"

# --- engine ---------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
    log "docker engine not answering; running start-dockerd.sh"
    "$SCRIPT_DIR/start-dockerd.sh"
fi

if [ "${GRADEFLOW_FORCE_REBUILD:-0}" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    if [ "$(docker image inspect --format '{{index .Config.Labels "org.gradeflow.recipe"}}' "$IMAGE")" = "$IMAGE_LABEL" ]; then
        log "image $IMAGE already present ($(docker image inspect --format '{{.Id}}' "$IMAGE"))"
        exit 0
    fi
    log "image $IMAGE was made by another recipe or import; making it again"
fi

command -v debootstrap >/dev/null 2>&1 || {
    log "debootstrap missing; installing it"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q debootstrap >/dev/null 2>&1 || {
        apt-get update -q >/dev/null && apt-get install -y -q debootstrap >/dev/null
    } || die "could not install debootstrap"
}

# --- mirror -------------------------------------------------------------------------
# Only the configured package mirror is reachable, so use the one apt uses:
# the first enabled "deb" source for $SUITE with component main that is not
# the security archive.  Handles one-line .list and deb822 .sources files.
find_mirror() {
    local files=()
    [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
    local f
    for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && files+=("$f")
    done
    [ "${#files[@]}" -gt 0 ] || return 1
    awk -v suite="$SUITE" '
        function emit(u) { sub(/\/+$/, "", u); print u; found = 1; exit }
        function check822() {
            if (types ~ /(^| )deb( |$)/ && enabled != "no" && (" " suites " ") ~ (" " suite " ") \
                && (" " comps " ") ~ / main / && uris !~ /security/) {
                split(uris, u, " "); emit(u[1])
            }
            types = ""; uris = ""; suites = ""; comps = ""; enabled = ""
        }
        FNR == 1 { if (is822) check822(); is822 = (FILENAME ~ /\.sources$/) }
        is822 {
            if ($0 ~ /^[ \t]*$/) { check822(); next }
            if ($0 ~ /^[ \t]*#/) next
            key = tolower($1); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
            if (key == "types:") types = val
            else if (key == "uris:") uris = val
            else if (key == "suites:") suites = val
            else if (key == "components:") comps = val
            else if (key == "enabled:") enabled = tolower(val)
            next
        }
        # one-line format: deb [opts] URI SUITE COMPONENTS...
        $1 == "deb" {
            i = 2
            if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
            uri = $i; s = $(i + 1); hasmain = 0
            for (j = i + 2; j <= NF; j++) if ($j == "main") hasmain = 1
            if (s == suite && hasmain && uri !~ /security/) emit(uri)
        }
        END { if (!found && is822) check822() }
    ' "${files[@]}" | head -n 1
}

MIRROR="${GRADEFLOW_DEBIAN_MIRROR:-}"
if [ -z "$MIRROR" ]; then
    MIRROR="$(find_mirror || true)"
fi
MIRROR="${MIRROR:-http://deb.debian.org/debian}"

# --- rootfs -------------------------------------------------------------------------
unmount_under() {   # lazily unmount anything debootstrap left mounted below $1
    local dir="$1" m
    [ -d "$dir" ] || return 0
    # deepest first
    while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done < <(awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r)
}

remove_tree() {
    local dir="$1"
    if [ -z "$dir" ] || [ "$dir" = / ]; then die "refusing to remove '$dir'"; fi
    unmount_under "$dir"
    rm -rf --one-file-system "$dir"
}

rootfs_ok=0
if [ "${GRADEFLOW_FORCE_REBUILD:-0}" != 1 ] && [ -f "$STAMP" ] && [ -d "$ROOTFS" ] \
        && [ "$(head -n 1 "$STAMP")" = "$RECIPE_ID" ]; then
    rootfs_ok=1
    log "reusing cached rootfs $ROOTFS"
fi

if [ "$rootfs_ok" != 1 ]; then
    mkdir -p "$CACHE_DIR"
    rm -f "$STAMP"
    [ -e "$ROOTFS" ] && { log "removing stale/unfinished rootfs $ROOTFS"; remove_tree "$ROOTFS"; }
    TMP_ROOTFS="$ROOTFS.tmp"
    [ -e "$TMP_ROOTFS" ] && remove_tree "$TMP_ROOTFS"
    # If we are interrupted half-way: stop debootstrap (it runs in its own
    # process group, so its dpkg children go too) and undo its mounts; the
    # next run starts over because no stamp was written.
    DB_PID=""
    cleanup() {
        if [ -n "$DB_PID" ] && kill -0 "$DB_PID" 2>/dev/null; then
            kill -TERM -- "-$DB_PID" 2>/dev/null || true
            sleep 1
            kill -KILL -- "-$DB_PID" 2>/dev/null || true
        fi
        unmount_under "$TMP_ROOTFS"
    }
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    log "debootstrap $SUITE from $MIRROR into $TMP_ROOTFS (about a minute)"
    t0=$SECONDS
    setsid debootstrap --variant=minbase --include="$PACKAGES" \
        "$SUITE" "$TMP_ROOTFS" "$MIRROR" </dev/null >"$CACHE_DIR/debootstrap.log" 2>&1 &
    DB_PID=$!
    db_rc=0
    wait "$DB_PID" || db_rc=$?
    DB_PID=""
    if [ "$db_rc" -ne 0 ]; then
        tail -n 30 "$CACHE_DIR/debootstrap.log" >&2
        [ -f "$TMP_ROOTFS/debootstrap/debootstrap.log" ] && tail -n 30 "$TMP_ROOTFS/debootstrap/debootstrap.log" >&2
        die "debootstrap failed (log: $CACHE_DIR/debootstrap.log)"
    fi
    log "debootstrap done in $((SECONDS - t0))s"
    unmount_under "$TMP_ROOTFS"

    # --- customise -------------------------------------------------------------
    in_root() { chroot "$TMP_ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
    # `python` must resolve (task test commands say `python -m pytest`);
    # python-is-python3 provides it, the symlink is a belt-and-braces fallback.
    [ -e "$TMP_ROOTFS/usr/bin/python" ] || ln -s python3 "$TMP_ROOTFS/usr/bin/python"
    # Non-root user for running untrusted code.
    in_root groupadd --gid 1000 grader
    in_root useradd --uid 1000 --gid 1000 --create-home --home-dir /home/grader \
        --shell /bin/bash grader
    # Keep the image small and reproducible-ish.
    in_root apt-get clean
    rm -rf "$TMP_ROOTFS"/var/lib/apt/lists/* "$TMP_ROOTFS"/var/cache/apt/*.bin \
        "$TMP_ROOTFS"/var/log/apt/* "$TMP_ROOTFS"/var/cache/debconf/*-old \
        "$TMP_ROOTFS"/usr/share/doc/* "$TMP_ROOTFS"/usr/share/man/* \
        "$TMP_ROOTFS"/usr/share/info/*
    # The engine manages these in each container.
    : >"$TMP_ROOTFS/etc/resolv.conf"
    : >"$TMP_ROOTFS/etc/hostname"
    # Sanity checks before we declare the rootfs finished.
    in_root python -c 'import sys, pytest; assert sys.version_info >= (3, 11)' \
        || die "python/pytest do not work in the new rootfs"
    in_root id grader >/dev/null || die "user grader missing"

    mv "$TMP_ROOTFS" "$ROOTFS"
    trap - EXIT INT TERM
    { echo "$RECIPE_ID"; echo "mirror=$MIRROR"; date -u +%FT%TZ; } >"$STAMP"
    log "rootfs ready: $ROOTFS"
fi

# --- import -------------------------------------------------------------------------
log "importing $ROOTFS as $IMAGE"
t0=$SECONDS
# /dev, /proc, /sys are provided by the engine at run time: ship them empty. debootstrap's log names the
# folder the rootfs was built in (under the grader's cache), which the code under test must not read.
tar --numeric-owner --xattrs -C "$ROOTFS" \
        --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' --exclude='./var/log/bootstrap.log' -c . \
    | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PYTHONUNBUFFERED=1' \
        --change 'WORKDIR /' \
        --change 'CMD ["/bin/bash"]' \
        --change "LABEL org.gradeflow.recipe=\"$IMAGE_LABEL\"" \
        --message "gradeflow sandbox image: debootstrap $SUITE minbase + $PACKAGES, user grader 1000:1000" \
        - "$IMAGE" >/dev/null
log "imported in $((SECONDS - t0))s: $IMAGE $(docker image inspect --format '{{.Id}}' "$IMAGE")"
