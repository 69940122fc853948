#!/usr/bin/env bash
# Unmount and detach what isolated sandboxes of killed gradeflow processes left behind: their workspace
# overlays, their own file systems and the loop devices under them (a sandbox closed normally leaves nothing).
# Only gradeflow's: mounts under /tmp/gradeflow-* and loop devices backed by /tmp/gradeflow-isolated-*/disk.ext4.
set -uo pipefail
mount | awk '$3 ~ /^\/tmp\/gradeflow-/ {print $3}' | sort -r | while read -r target; do
  umount -l "$target" 2>/dev/null || true
done
losetup -a 2>/dev/null | awk -F: '/\/tmp\/gradeflow-isolated-[^)]*\/disk\.ext4/ {print $1}' | while read -r device; do
  losetup -d "$device" 2>/dev/null || true
done
echo "clean-sandboxes: $(losetup -a 2>/dev/null | grep -c gradeflow-isolated || true) gradeflow loop devices left"
