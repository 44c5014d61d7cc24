#!/usr/bin/env bash
# Runs on the GPU machine: a job longer than one call (a peer's 30k steps at full size), started
# in its own session so that it outlives the call that started it, while the machine stays warm.
# Its log and exit status stay in $state/detached/; a later call waits for it.
#   tools/gpu-machine/detach.sh start NAME CMD [ARGS...]   # returns at once
#   tools/gpu-machine/detach.sh wait NAME [SECONDS]         # until it ends or SECONDS pass (default 540)
#   tools/gpu-machine/detach.sh stop NAME                   # ends it (its whole process group)
#   tools/gpu-machine/detach.sh list                        # every job: running, or its exit status
# wait exits with the job's status (124 while it still runs) and copies its log to $OUT/detached/.
#   detach.sh start gsplat-fox tools/gpu-machine/peer.sh fox   # then, in the next call:
#   detach.sh wait gsplat-fox
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
jobs_dir=$state/detached
mkdir -p "$jobs_dir"

status_of() {
  if [ -f "$jobs_dir/$1.rc" ]; then echo "exit $(cat "$jobs_dir/$1.rc")"
  elif kill -0 "$(cat "$jobs_dir/$1.pid" 2>/dev/null)" 2>/dev/null; then echo running
  else echo "gone (ended without a status: stopped, or the machine ended it)"; fi
}

case ${1:-} in
  start)
    [ $# -ge 3 ] || { echo "usage: $0 start NAME CMD [ARGS...]" >&2; exit 2; }
    name=$2
    shift 2
    [ ! -f "$jobs_dir/$name.pid" ] || [ -f "$jobs_dir/$name.rc" ] ||
      ! kill -0 "$(cat "$jobs_dir/$name.pid")" 2>/dev/null ||
      { echo "error: job $name is still running" >&2; exit 1; }
    rm -rf "$jobs_dir/$name".{rc,log,pid,tree}
    # The job runs from a copy of the scripts (a later call's copy of the working tree may
    # replace the files bash is still reading), in a new session (setsid: the call's end
    # signals its own process group, not this one), with the machine's state folder, and an OUT
    # of its own there (the call's OUT goes back with the call).
    mkdir -p "$jobs_dir/$name.tree"
    tar -cf - --exclude=tools/gpu-machine/state --exclude='tools/gpu-machine/carry*' tools configs |
      tar -C "$jobs_dir/$name.tree" -xf -
    # The job writes its own pid: $! would be the subshell's, which the call's end kills while
    # the job runs on (2026-12-06: `list` called a running job gone, and a second run shared the
    # GPU with it). setsid makes that pid the job's process group too, which `stop` signals.
    # Every process of the start reads and writes /dev/null: the subshell that runs the list
    # stays alive beside the job, and with the call's stdout it would hold a pipe open (2026-12-06:
    # `detach.sh start ... | tee` kept the call waiting for the job's end, to the call's limit).
    (cd "$jobs_dir/$name.tree" && GPU_STATE=$state OUT=$state/out/$name \
      setsid bash -c 'echo $$ >"$0.pid"; "$@" >"$0.log" 2>&1; echo $? >"$0.rc"' "$jobs_dir/$name" "$@" &
    ) </dev/null >/dev/null 2>&1
    for _ in $(seq 50); do [ -s "$jobs_dir/$name.pid" ] && break; sleep 0.1; done
    [ -s "$jobs_dir/$name.pid" ] || { echo "error: job $name did not start" >&2; exit 1; }
    echo "started $name (pid $(cat "$jobs_dir/$name.pid")): $*; log $jobs_dir/$name.log"
    ;;
  wait)
    [ $# -ge 2 ] || { echo "usage: $0 wait NAME [SECONDS]" >&2; exit 2; }
    name=$2 limit=${3:-540}
    [ -f "$jobs_dir/$name.pid" ] || { echo "error: no job $name (detach.sh list)" >&2; exit 2; }
    t0=$SECONDS
    while [ "$(status_of "$name")" = running ] && [ $((SECONDS - t0)) -lt "$limit" ]; do sleep 2; done
    mkdir -p "$out/detached"
    cp "$jobs_dir/$name.log" "$out/detached/" 2>/dev/null
    [ -d "$state/out/$name" ] && cp -r "$state/out/$name" "$out/detached/"
    tail -20 "$jobs_dir/$name.log" 2>/dev/null
    s=$(status_of "$name")
    echo "$name: $s after $((SECONDS - t0)) s of waiting"
    case $s in "exit "*) exit "${s#exit }" ;; running) exit 124 ;; *) exit 1 ;; esac
    ;;
  stop)
    [ $# -eq 2 ] || { echo "usage: $0 stop NAME" >&2; exit 2; }
    name=$2
    [ "$(status_of "$name")" = running ] || { echo "$name: $(status_of "$name")"; exit 0; }
    kill -- "-$(cat "$jobs_dir/$name.pid")" && echo "stopped $name"
    ;;
  list)
    for f in "$jobs_dir"/*.pid; do
      [ -f "$f" ] || continue
      n=$(basename "$f" .pid)
      echo "$n: $(status_of "$n")"
    done
    ;;
  *) echo "usage: $0 start NAME CMD [ARGS...] | wait NAME [SECONDS] | stop NAME | list" >&2; exit 2 ;;
esac
