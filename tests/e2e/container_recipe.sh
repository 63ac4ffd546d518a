#!/usr/bin/env bash
# What can be checked of deploy/container/Containerfile without a registry
# (its stages start from debian:12, which this machine cannot pull): its
# build stage's context, the paths it COPYs into /src, holds everything
# CMake needs to configure the project the way the stage does (no .git, the
# commit given), with roced, rocectl and the package's rules in it. A new
# directory the build reads but the Containerfile does not copy fails here.
# tests/deploy_check.py checks that each copied path exists.
# Usage: container_recipe.sh SOURCE_DIR
set -euo pipefail
SRC=$(cd "$1" && pwd)
FILE=$SRC/deploy/container/Containerfile
WORK=$(mktemp -d /tmp/roced-container.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
command -v cmake >/dev/null || { echo "SKIP: cmake not installed"; exit 77; }
command -v ninja >/dev/null || { echo "SKIP: ninja not installed"; exit 77; }

# The build stage's COPY lines (up to the second FROM): sources relative to
# the context, the destination relative to WORKDIR /src.
mkdir -p "$WORK/src"
n=0
while read -r -a words; do
  dest=${words[-1]}
  for source in "${words[@]:1:${#words[@]}-2}"; do
    case $dest in
      ./) target=$WORK/src/$(basename "$source") ;;
      *) target=$WORK/src/$dest ;;
    esac
    mkdir -p "$(dirname "$target")"
    cp -r "$SRC/$source" "$target"
    n=$((n + 1))
  done
done < <(awk '/^FROM /{stage++} stage == 1 && /^COPY / && !/--from/' "$FILE")
[ "$n" -gt 0 ] || { echo "FAIL - no COPY in the Containerfile's build stage"; exit 1; }
echo "copied $n paths as the build stage does"
[ ! -e "$WORK/src/.git" ] || { echo "FAIL - .git in the copied context"; exit 1; }

# The stage's configure command, as the Containerfile has it.
configure=$(sed -n 's/^RUN \(cmake -S \. -B build .*\) \\$/\1/p' "$FILE" | sed 's/"\$ROCED_GIT_COMMIT"/0123456789ab/')
[ -n "$configure" ] || { echo "FAIL - no 'RUN cmake -S . -B build ...' line in the Containerfile"; exit 1; }
echo "configure: $configure"
if ! (cd "$WORK/src" && eval "$configure") >"$WORK/configure.log" 2>&1; then
  cat "$WORK/configure.log"
  echo "FAIL - CMake does not configure the tree the Containerfile copies"
  exit 1
fi
targets=$(ninja -C "$WORK/src/build" -t targets all 2>/dev/null | cut -d: -f1)
for t in roced rocectl package; do
  grep -qx -- "$t" <<<"$targets" || { echo "FAIL - the configured tree has no target $t"; exit 1; }
done
grep -q '"0123456789ab"' "$WORK/src/build/generated/roced/version.h" ||
  { echo "FAIL - -DROCED_GIT_COMMIT did not reach version.h"; exit 1; }
echo "ok   - CMake configures the Containerfile's context (targets roced, rocectl, package; the given commit)"
