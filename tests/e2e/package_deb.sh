#!/usr/bin/env bash
# The Debian package as a node gets it: `cpack -G DEB` from a built tree
# (nothing is compiled: cpack installs what the build made), then
#   - the package holds the binaries, the shim, the unit, the node's config
#     files (as conffiles), the paths the DaemonSet runs (its command and its
#     probes' rocectl), and Depends derived by dpkg-shlibdeps;
#   - `dpkg -i` on this machine installs it (the Depends are met);
#   - `systemd-analyze verify` of the installed unit says nothing about it
#     (its ExecStart binary is there, every directive parses);
#   - the installed roced, started with the installed unit's ExecStart and
#     env file as systemd would (plus flags that keep it off the host: the
#     fixture sysfs tree, a scratch state directory and socket), loads the
#     installed config and is ready by the installed rocectl;
#   - `dpkg --purge` removes it again.
# Needs root (dpkg -i) and leaves a roced package installed by someone else
# alone (SKIP). scripts/test.sh runs it as its package stage, on the release
# build; `ctest -L package` by hand.
# Usage: package_deb.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
WORK=$(mktemp -d /tmp/roced-package.XXXXXX)
PID=
installed=0
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  if [ "$installed" = 1 ]; then dpkg --purge roced >"$WORK/purge.log" 2>&1 || cat "$WORK/purge.log"; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"

for tool in cpack dpkg dpkg-deb dpkg-shlibdeps systemd-analyze python3; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
[ -f "$BUILD/CPackConfig.cmake" ] || { echo "FAIL - $BUILD has no CPackConfig.cmake (not configured?)"; exit 1; }

start=$(date +%s.%N)
if ! cpack --config "$BUILD/CPackConfig.cmake" -G DEB -B "$WORK/out" >"$WORK/cpack.log" 2>&1; then
  cat "$WORK/cpack.log"
  echo "FAIL - cpack"
  exit 1
fi
DEB=$(ls "$WORK"/out/roced_*.deb)
echo "cpack: $(basename "$DEB"), $(du -k "$DEB" | cut -f1) KiB, $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

dpkg-deb -c "$DEB" | awk '{ sub(/^\./, "", $6); print $6 }' >"$WORK/files"
for f in /usr/bin/roced /usr/bin/rocectl /usr/lib/roced/libssl.so /usr/lib/roced/libcrypto.so \
  /usr/lib/systemd/system/roced.service /etc/roced/roced.yaml /etc/roced/roced.env \
  /usr/share/doc/roced/docs/operations.md; do
  check_quiet "the package holds $f" grep -qx -- "$f" "$WORK/files"
done
dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles >"$WORK/conffiles"
check_quiet "the node's config files are conffiles (an upgrade keeps the site's edits)" \
  diff <(sort "$WORK/conffiles") <(printf '/etc/roced/roced.env\n/etc/roced/roced.yaml\n')
depends=$(dpkg-deb -f "$DEB" Depends)
echo "Depends: $depends"
for lib in libgrpc++ libprotobuf libibverbs1 libnl-route-3 libcivetweb libssl3 libyaml-cpp; do
  check_quiet "Depends names $lib (dpkg-shlibdeps ran)" grep -q -- "$lib" <<<"$depends"
done
# What the DaemonSet's container runs: the package is what its image installs.
python3 - "$SRC/deploy/kubernetes/daemonset.yaml" >"$WORK/k8s-paths" <<'PY'
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc.get("kind") == "DaemonSet":
        for c in doc["spec"]["template"]["spec"]["containers"]:
            print(c["command"][0])
            for probe in ("readinessProbe", "livenessProbe"):
                print(c[probe]["exec"]["command"][0])
PY
while read -r path; do
  check_quiet "the DaemonSet's $path is in the package" grep -qx -- "$path" "$WORK/files"
done <"$WORK/k8s-paths"

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: not root: the package was built and checked, not installed ($pass passed, $fail failed)"
  [ "$fail" = 0 ] && exit 77 || exit 1
fi
if dpkg-query -W -f='${Status}' roced 2>/dev/null | grep -q "installed"; then
  echo "SKIP: a roced package is installed here already; not replacing it ($pass passed, $fail failed)"
  [ "$fail" = 0 ] && exit 77 || exit 1
fi

installed=1
if dpkg -i "$DEB" >"$WORK/dpkg.log" 2>&1; then
  ok "dpkg -i $(basename "$DEB")"
else
  bad "dpkg -i $(basename "$DEB")"; sed 's/^/    /' "$WORK/dpkg.log"
  finish
fi
UNIT=/usr/lib/systemd/system/roced.service
check_quiet "the installed unit starts the installed roced" grep -qx 'ExecStart=/usr/bin/roced .*' "$UNIT"
verify_rc=0
verify=$(systemd-analyze verify "$UNIT" 2>&1) || verify_rc=$?
echo "systemd-analyze verify (exit $verify_rc):"
sed 's/^/    /' <<<"$verify"
# Only the lines about our unit count: verify also loads the units ours is
# ordered after and reports on those.
ours=$(grep -F roced <<<"$verify" || true)
check_quiet "systemd-analyze verify says nothing about roced.service" test -z "$ours"
check_quiet "systemd-analyze verify exits 0" test "$verify_rc" = 0
check_quiet "the installed roced runs (its libraries and the shim resolve)" /usr/bin/roced --version
check_quiet "the installed config is valid" /usr/bin/roced --check-config --config /etc/roced/roced.yaml

# The unit's ExecStart, expanded with the installed env file as systemd does
# (VAR=value lines, optional quotes; an unquoted $VAR split at whitespace,
# nothing when unset), then flags that keep the agent off this host (the
# last of a repeated flag wins).
declare -A env=()
while IFS= read -r line; do
  if [[ $line =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]]; then
    name=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
    if [[ $value =~ ^\"(.*)\"$ || $value =~ ^\'(.*)\'$ ]]; then value=${BASH_REMATCH[1]}; fi
    env[$name]=$value
  fi
done </etc/roced/roced.env
read -ra words <<<"$(sed -n 's/^ExecStart=//p' "$UNIT")"
cmd=()
for w in "${words[@]}"; do
  if [[ $w == \$* ]]; then
    name=${w#\$}; name=${name#\{}; name=${name%\}}
    read -ra v <<<"${env[$name]:-}"
    cmd+=(${v[@]+"${v[@]}"})
  else
    cmd+=("$w")
  fi
done
echo "as the unit starts it: ${cmd[*]}"
# lib.sh's await_agent_socket asks $BIN/rocectl: the installed one.
# shellcheck disable=SC2034
BIN=/usr/bin
mkdir -p "$WORK/configfs" "$WORK/debugfs"
"${cmd[@]}" --sysfs-root "$SRC/tests/fixtures/sysfs" --configfs-root "$WORK/configfs" \
  --debugfs-root "$WORK/debugfs" --state-dir "$WORK/state" --socket "$WORK/roced.sock" \
  --metrics-listen "127.0.0.1:$(free_port)" 2>"$WORK/roced.log" &
PID=$!
if await_agent_socket; then
  ok "the installed roced, started as the unit starts it, answers the installed rocectl"
  check_quiet "... and is ready (rocectl ready)" /usr/bin/rocectl --socket "$WORK/roced.sock" ready
  check_quiet "... with the installed config in force" \
    grep -q "from /etc/roced/roced.yaml" <(/usr/bin/rocectl --socket "$WORK/roced.sock" status)
else
  bad "the installed roced did not answer within 10 s"; sed 's/^/    /' "$WORK/roced.log"
fi
kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
PID=

installed=0
check_quiet "dpkg --purge roced" dpkg --purge roced
check_quiet "nothing of the package is left" test ! -e /usr/bin/roced -a ! -e "$UNIT" -a ! -e /etc/roced/roced.yaml

finish
