#!/usr/bin/env bash
# README's two commands, verbatim, as a new user runs them: in a fresh Debian root made with
# mmdebstrap (minbase, with only python3, python3-venv, git and ca-certificates), on a clone of
# this checkout's HEAD. Prints each command's time, what it downloaded and the venv's size.
#
# Usage: sudo bash tools/fresh_root.sh [--suite trixie|bookworm] [--tests] [--serving] [--newest] [--keep]
#   --suite   Debian release: trixie (13, Python 3.13; the default) or bookworm (12, Python 3.11)
#   --tests   also run the second command (the whole test suite); without it, only the first
#   --serving with --tests: `heard serve` runs from .venv on 8000 while the second command runs,
#             as a user's own server would, and must still answer / afterwards
#   --newest  the second command as `bash tools/test.sh --newest`: the newest releases of every
#             dependency instead of constraints.txt
#   --keep    leave the root in place (its path is printed) instead of deleting it
#   --print-commands  print the two commands as taken from README.md, one a line, and stop
# Needs root (mmdebstrap, chroot, mounts) and Debian's archive; the root goes under $TMPDIR.
set -euo pipefail
suite=trixie tests=0 serving=0 newest=0 keep=0 print=0
while (($#)); do
  case "$1" in
    --suite) suite="${2:?--suite needs a name}"; shift 2 ;;
    --tests) tests=1; shift ;;
    --newest) newest=1; tests=1; shift ;;
    --keep) keep=1; shift ;;
    --print-commands) print=1; shift ;;
    --serving) serving=1; tests=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh_root.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$suite" in trixie|bookworm) ;; *) echo "fresh_root.sh: --suite trixie or bookworm" >&2; exit 2 ;; esac
repo=$(cd "$(dirname "$0")/.." && pwd)

# The two commands, taken from README's quick start: its first two ```bash blocks.
mapfile -t commands < <(awk '/^## Quick start/{on=1} on&&/^```bash$/{b=1;next} b&&/^```$/{b=0;n++; if(n==2)exit} b' "$repo/README.md")
((${#commands[@]} == 2)) || { echo "fresh_root.sh: README's quick start has no two commands" >&2; exit 1; }
if ((print)); then printf '%s\n' "${commands[@]}"; exit 0; fi
[ "$(id -u)" -eq 0 ] || { echo "fresh_root.sh: run as root (mmdebstrap, chroot)" >&2; exit 2; }
if ! command -v mmdebstrap >/dev/null; then
  echo "== installing mmdebstrap"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/heard-$suite.XXXXXX")
chmod 755 "$root"  # a root directory every user can enter (postgres, _apt)
mounted=()
cleanup() {
  # what the commands left running in the root (PostgreSQL, Redis, Chromium) goes first
  for proc in /proc/[0-9]*; do
    [ "$(readlink "$proc/root" 2>/dev/null)" = "$root" ] && kill -9 "${proc#/proc/}" 2>/dev/null
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  if ((keep)); then
    echo "== the root is kept at $root"
  elif grep -q " $root/" /proc/mounts; then  # never delete through a mount into this machine
    echo "fresh_root.sh: $root still has mounts; left in place" >&2
  else
    rm -rf --one-file-system "$root"
  fi
}
trap cleanup EXIT
echo "== making a Debian $suite root in $root"
mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,git,ca-certificates \
  "$suite" "$root" http://deb.debian.org/debian
proxy_env=()
in_root() {  # a command in the root, with none of this machine's environment ($TMPDIR, say)
  chroot "$root" env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${proxy_env[@]}" "$@"
}
for d in proc sys dev dev/pts; do mount --bind "/$d" "$root/$d"; mounted+=("$root/$d"); done
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A machine whose HTTPS goes through a proxy with a certificate authority of its own (these
# build machines) has it in /usr/local/share/ca-certificates: the root trusts it too, and pip
# is pointed at the system's bundle (its build subprocesses use certifi's otherwise).
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  in_root update-ca-certificates >/dev/null
  proxy_env=(PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
fi
git clone --quiet --no-hardlinks "$repo" "$root/root/heard"
python=$(in_root python3 --version)
echo "== $python in Debian $(cat "$root/etc/debian_version")"

size() { du -sb "$@" 2>/dev/null | awk '{s += $1} END {printf "%.0f", s / 1e6}'; }
# MB received by this machine's network interfaces (the root shares them): what the command
# downloaded, and whatever else this machine fetched meanwhile (nothing, on an idle one)
downloaded() { awk 'NR > 2 {sub(":", " "); if ($1 != "lo") s += $2} END {printf "%.0f", s / 1e6}' /proc/net/dev; }
run() {  # the command as a user types it, in a new shell at the clone
  local before start rc
  before=$(downloaded) start=$(date +%s)
  echo "== \$ $1"
  set +e
  in_root bash -c "cd /root/heard && $1"
  rc=$?
  set -e
  echo "== exit $rc after $(($(date +%s) - start)) s; $(($(downloaded) - before)) MB downloaded;" \
    ".venv holds $(size "$root/root/heard/.venv") MB, .venv-test $(size "$root/root/heard/.venv-test") MB"
  return $rc
}
run "${commands[0]}"
in_root /root/heard/.venv/bin/python -c \
  'import av, numpy, faster_whisper; print("== PyAV", av.__version__, "numpy", numpy.__version__, "faster-whisper", faster_whisper.__version__)'
# GET / of the server on 8000, from inside the root: its HTTP status, or the error
answers() {
  in_root /root/heard/.venv/bin/python -c 'import sys, urllib.request as u
try: print(u.urlopen("http://127.0.0.1:8000/", timeout=10).status)
except Exception as e: print(getattr(e, "code", None) or type(e).__name__); sys.exit(1)'
}
if ((serving)); then
  if answers >/dev/null 2>&1; then  # the root shares this machine's network
    echo "fresh_root.sh: something already answers on 127.0.0.1:8000; stop it first" >&2
    exit 1
  fi
  echo "== heard serve from .venv on 8000, as a user leaves it running"
  in_root bash -c 'cd /root/heard && (setsid .venv/bin/heard serve >/root/serve.log 2>&1 &)'
  for _ in $(seq 120); do answers >/dev/null 2>&1 && break; sleep 1; done
  echo "== GET / before the test command: $(answers || true)"
fi
if ((tests)); then
  second="${commands[1]}"
  ((newest)) && second="$second --newest"
  rc=0
  run "$second" || rc=$?
  if ((serving)); then
    status=$(answers || true)
    echo "== GET / after the test command: $status"
    [ "$status" = 200 ] || { tail -20 "$root/root/serve.log"; rc=1; }
  fi
  exit $rc
fi
