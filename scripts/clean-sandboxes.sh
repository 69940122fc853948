#!/usr/bin/env bash
# Unmount, detach and remove what isolated sandboxes of killed gradeflow processes left behind: their workspace
# overlays, their own file systems, the loop devices under them and their files (a sandbox closed normally
# leaves nothing).
# Only gradeflow's: loop devices backed by a disk.ext4 in a temporary folder of /tmp (/tmp/tmp*/disk.ext4, or
# /tmp/gradeflow-isolated-*/disk.ext4 from before their folders were named as any), the file systems mounted
# from them and the overlays whose upper layers lie on those file systems.
set -uo pipefail
ours='^/tmp/(tmp[a-z0-9_]{8}|gradeflow-isolated-[a-z0-9_]+)/disk\.ext4$'
# grep -E, not awk: mawk takes no {8}.
devices=$(losetup -nO NAME,BACK-FILE --list 2>/dev/null | while read -r name file; do
  if grep -qE "$ours" <<<"$file"; then echo "$name"; fi
done)
for device in $devices; do
  for root in $(findmnt -rn -S "$device" -o TARGET 2>/dev/null); do
    findmnt -rn -t overlay -o TARGET,OPTIONS | awk -v upper="upperdir=$root/" 'index($2, upper) {print $1}' |
      sort -r | while read -r target; do umount -l "$target" 2>/dev/null || true; done
    umount -l "$root" 2>/dev/null || true
  done
  losetup -d "$device" 2>/dev/null || true
done
left=$(losetup -nO BACK-FILE --list 2>/dev/null | grep -cE "$ours" || true)
echo "clean-sandboxes: $left gradeflow loop devices left"
# Their files: a killed process's sandbox disk keeps its room on the host's disk (environment.disk and more,
# taken whole when it opened) until removed. Only a folder whose disk backs no loop device, with nothing
# mounted in it, untouched for ten minutes (a sandbox opening now makes its file before it mounts it).
looped=$(losetup -nO BACK-FILE --list 2>/dev/null)
mounted=$(findmnt -rn -o TARGET)
removed=0
for image in /tmp/tmp*/disk.ext4 /tmp/gradeflow-isolated-*/disk.ext4; do
  [[ -f "$image" ]] && grep -qE "$ours" <<<"$image" || continue
  folder=${image%/disk.ext4}
  grep -qxF "$image" <<<"$looped" && continue
  grep -qE "^$folder(/|$)" <<<"$mounted" && continue
  [[ -n $(find "$image" -maxdepth 0 -mmin +10) ]] || continue
  rm -rf --one-file-system -- "$folder" && removed=$((removed + 1))
done
echo "clean-sandboxes: $removed left-over sandbox disks removed"
# A shaped (varied) run's / and /etc files, made beside the system's /usr (a temporary folder holding top,
# etc-passwd, etc-group, hostname and a link "disk" to its sandbox's disk): a few KiB each, left by a killed
# process. Only once that disk backs no loop device (it is in use while it does: its / is bound in the sandbox's
# own mount namespace, which the host's mount table does not show), untouched for ten minutes.
looped=$(losetup -nO BACK-FILE --list 2>/dev/null)
shaped=0
for folder in /tmp/tmp*/; do
  folder=${folder%/}
  [[ $folder =~ ^/tmp/tmp[a-z0-9_]{8}$ && -d $folder/top && -f $folder/etc-passwd && -L $folder/disk ]] || continue
  grep -qxF "$(readlink "$folder/disk")" <<<"$looped" && continue
  [[ -n $(find "$folder/etc-passwd" -maxdepth 0 -mmin +10) ]] || continue
  rm -rf --one-file-system -- "$folder" && shaped=$((shaped + 1))
done
echo "clean-sandboxes: $shaped left-over shaped-run roots removed"
# The docker sandbox's tmpfs under HOME's writes (gradeflow-home, in /tmp/gradeflow-home-upper-*): left mounted by
# a killed process once no container uses it (the engine's overlay over it went with the container).
home_left=0
for target in $(findmnt -rn -t tmpfs -S gradeflow-home -o TARGET 2>/dev/null); do
  [[ $target == /tmp/gradeflow-home-upper-* ]] || continue
  findmnt -rn -t overlay -o OPTIONS | grep -qF "upperdir=$target/" && continue
  umount -l "$target" 2>/dev/null && rmdir "$target" 2>/dev/null && home_left=$((home_left + 1))
done
echo "clean-sandboxes: $home_left left-over docker HOME layers removed"
