#!/bin/sh
# Entrypoint of a simulated machine (make e2e-install): makes the
# container's cgroups writable, then runs systemd as PID 1.
#
# The container has a private cgroup namespace (docker run
# --cgroupns=private, on cgroup v1 and v2), so that every cgroup mounted
# here is rooted at the container's own cgroup: systemd and containerd
# create theirs below it and never see the host's. Docker mounts them
# read-only; they are mounted again read-write (needs CAP_SYS_ADMIN).
set -eu
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  # cgroup v2: one hierarchy.
  umount /sys/fs/cgroup
  mount -t cgroup2 -o rw,nosuid,nodev,noexec,relatime,nsdelegate cgroup2 /sys/fs/cgroup
else
  # cgroup v1: a tmpfs with one mount per hierarchy (and name=systemd).
  mounts=$(awk '$3 == "cgroup" {print $2 "|" $4}' /proc/self/mounts)
  for m in $mounts; do umount "${m%%|*}"; done
  umount /sys/fs/cgroup
  mount -t tmpfs -o rw,nosuid,nodev,noexec,mode=755 tmpfs /sys/fs/cgroup
  for m in $mounts; do
    dir=${m%%|*}
    opts=$(echo "${m#*|}" | tr , '\n' | grep -Ev '^(ro|rw|nosuid|nodev|noexec|relatime)$' | paste -sd, -)
    mkdir -p "$dir"
    mount -t cgroup -o "rw,nosuid,nodev,noexec,relatime,$opts" cgroup "$dir"
  done
  # The joined controllers' other names, as systemd expects them.
  for l in cpu cpuacct net_cls net_prio; do
    for d in /sys/fs/cgroup/*,*; do
      case ",${d##*/}," in *",$l,"*) [ -e "/sys/fs/cgroup/$l" ] || ln -s "${d##*/}" "/sys/fs/cgroup/$l" ;; esac
    done
  done
fi
exec /sbin/init
