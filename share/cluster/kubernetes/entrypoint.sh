#!/bin/sh
# Starts a Sandgate node in a container; the arguments go to sandgate.
#
# The node id: SANDGATE_NODE_ID when it is set, else the StatefulSet pod's
# ordinal + 1 (pod sandgate-0 is node 1, sandgate-2 node 3), since node 0
# means a node alone and every id a node makes starts with its number.
#
# cgroup v2: a cgroup that holds processes cannot hand controllers (memory,
# pids, cpu) to child cgroups, and the container starts in the root of its
# cgroup namespace. So everything here moves to a child cgroup "init" first;
# the sandboxes' cgroups then go under /sys/fs/cgroup/sandgate with their
# limits. (cgroup v1 needs nothing.)
set -eu

if [ -z "${SANDGATE_NODE_ID:-}" ]; then
  # The pod's name (the runtime sets HOSTNAME to it, and the hostname too).
  # shellcheck disable=SC3028
  pod=${HOSTNAME:-$(cat /proc/sys/kernel/hostname)}
  ordinal=${pod##*-}
  case $ordinal in
    '' | *[!0-9]*)
      echo "sandgate-entrypoint: no pod ordinal in the name '$pod'; set SANDGATE_NODE_ID" >&2
      exit 1
      ;;
  esac
  SANDGATE_NODE_ID=$((ordinal + 1))
  export SANDGATE_NODE_ID
fi

cg=/sys/fs/cgroup
if [ -f "$cg/cgroup.controllers" ] && [ -w "$cg/cgroup.subtree_control" ]; then
  mkdir -p "$cg/init"
  # Processes that end meanwhile cannot move; that is fine.
  while read -r pid; do
    echo "$pid" >"$cg/init/cgroup.procs" 2>/dev/null || true
  done <"$cg/cgroup.procs"
  read -r controllers <"$cg/cgroup.controllers"
  for controller in $controllers; do
    echo "+$controller" >"$cg/cgroup.subtree_control" 2>/dev/null || true
  done
fi

exec /opt/sandgate/bin/sandgate "$@"
