#!/usr/bin/env bash
# Prepares this machine for the RoCE lab (tests/lab/lab). Idempotent: what is
# already in place is left alone, so `lab up` runs it every time.
#
#  1. installs the lab's Debian packages (non-interactive, no recommends);
#  2. downloads Debian's stock kernel image + matching headers/kbuild with
#     `apt-get download` and unpacks them with `dpkg -x` into
#     $LAB_CACHE/<kver>/root (nothing is installed into the host's /boot or
#     /lib/modules; no initramfs hooks run);
#  3. builds the DCB test NIC module (module/) against those headers;
#  4. builds the guests' initramfs (static busybox + the modules needed to
#     mount the host's / over virtio-9p with a tmpfs overlay).
#
# Usage: tests/lab/setup.sh [--quiet] [--no-install]
#   --no-install  fail instead of calling apt-get install for missing packages
# Environment: LAB_CACHE (default /var/cache/roced-lab), LAB_KVER (kernel
# version to use instead of the linux-image-amd64 metapackage's).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

QUIET=0
INSTALL=1
for a in "$@"; do
  case $a in
    --quiet) QUIET=1 ;;
    --no-install) INSTALL=0 ;;
    -h|--help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done

say() { [[ $QUIET == 1 ]] || printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "must run as root (installs packages, writes $LAB_CACHE)"

# kbuild's prebuilt tools (objtool, modpost, sign-file) need libelf1/libssl3
# because dpkg -x does not pull in dependencies.
PKGS=(qemu-system-x86 busybox-static cpio kmod ethtool iproute2 rdma-core
      ibverbs-utils perftest iputils-ping python3 gcc-12 make libc6-dev libelf1 libssl3
      coreutils util-linux procps)

export DEBIAN_FRONTEND=noninteractive
APT_UPDATED=0
apt_update() {
  if [[ $APT_UPDATED == 0 ]]; then
    say "apt-get update"
    apt-get update -q >/dev/null </dev/null || die "apt-get update failed"
    APT_UPDATED=1
  fi
}

missing=()
declare -A installed=()
while read -r name status; do
  [[ $status == installed ]] && installed[${name%%:*}]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PKGS[@]}" 2>/dev/null || true)
for p in "${PKGS[@]}"; do
  [[ -n ${installed[$p]:-} ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  [[ $INSTALL == 1 ]] || die "missing packages: ${missing[*]} (run tests/lab/setup.sh)"
  say "installing ${missing[*]}"
  apt_update
  apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >/dev/null ||
    die "apt-get install ${missing[*]} failed"
fi

mkdir -p "$LAB_CACHE"
exec 9>"$LAB_CACHE/.lock"
flock 9   # one setup at a time (a test fixture and a user may race)

kver=$(lab_resolve_kver || true)
if [[ -z $kver ]]; then
  apt_update
  kver=$(lab_resolve_kver) || die "cannot resolve the kernel version from linux-image-amd64"
fi
lab_kpaths "$kver"

# ---------------------------------------------------------------- kernel
if [[ ! -f $KCACHE/.ready ]]; then
  say "fetching kernel $kver into $KCACHE"
  abi=${kver%-amd64}
  debs=$KCACHE/debs
  mkdir -p "$debs"
  rm -f "$debs"/*.deb.tmp
  hdr_deps=$(apt-cache depends "linux-headers-$kver" 2>/dev/null || true)
  if [[ -z $hdr_deps ]]; then apt_update; hdr_deps=$(apt-cache depends "linux-headers-$kver"); fi
  kbuild=$(sed -n 's/^ *Depends: \(linux-kbuild-[0-9.]*\)$/\1/p' <<<"$hdr_deps" | head -1)
  [[ -n $kbuild ]] || die "cannot find the linux-kbuild package for linux-headers-$kver"
  want=("linux-image-$kver" "linux-headers-$kver" "linux-headers-$abi-common" "$kbuild")
  for p in "${want[@]}"; do
    if ! compgen -G "$debs/${p}_*.deb" >/dev/null; then
      (cd "$debs" && apt-get download -q -o APT::Sandbox::User=root "$p" </dev/null >/dev/null) ||
        { apt_update; (cd "$debs" && apt-get download -q -o APT::Sandbox::User=root "$p" </dev/null >/dev/null); } ||
        die "apt-get download $p failed"
    fi
  done
  rm -rf "$KROOT.tmp"
  mkdir -p "$KROOT.tmp"
  for p in "${want[@]}"; do
    dpkg -x "$(compgen -G "$debs/${p}_*.deb" | head -1)" "$KROOT.tmp"
  done
  # The headers' Makefile includes the common tree by absolute path.
  sed -i "s|^include /usr/src/|include $KROOT/usr/src/|" \
    "$KROOT.tmp/usr/src/linux-headers-$kver/Makefile"
  ln -sfn "../../../usr/src/linux-headers-$kver" "$KROOT.tmp/lib/modules/$kver/build"
  rm -rf "$KROOT"
  mv "$KROOT.tmp" "$KROOT"
  depmod -b "$KROOT" "$kver"
  rm -rf "$debs"   # 85 MB of .deb files; the unpacked tree is what we use
  touch "$KCACHE/.ready"
  say "kernel $kver ready"
fi
[[ -f $KIMAGE ]] || die "kernel image $KIMAGE missing; remove $KCACHE and run again"

# Debian's bzImage carries an XZ-compressed kernel; decompressing it under
# TCG takes ~10 s per boot. The payload is an ELF vmlinux with a PVH entry
# note (CONFIG_PVH=y), which QEMU boots directly: decompress it once here.
if [[ ! -f $KVMLINUX ]]; then
  say "extracting an uncompressed vmlinux (PVH boot) from $(basename "$KIMAGE")"
  /usr/bin/python3 - "$KIMAGE" "$KVMLINUX.tmp" <<'PY' || { rm -f "$KVMLINUX.tmp"; say "extraction failed; guests boot the bzImage (slower)"; }
import lzma, sys
bz = open(sys.argv[1], "rb").read()
start = bz.find(b"\xfd7zXZ\x00")
if start < 0:
    sys.exit("no XZ payload")
elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(bz[start:])
if elf[:4] != b"\x7fELF" or b"Xen\x00" not in elf:
    sys.exit("payload is not an ELF kernel with Xen/PVH notes")
open(sys.argv[2], "wb").write(elf)
PY
  [[ -f $KVMLINUX.tmp ]] && mv "$KVMLINUX.tmp" "$KVMLINUX"
fi

# ------------------------------------------------------------ DCB module
src_hash=$( (cd "$LAB_DIR/module" && cat Kbuild Makefile ./*.c; echo "$kver") | sha256sum | cut -c1-16)
if [[ ! -f $KMODULE || $(cat "$KCACHE/module/.hash" 2>/dev/null) != "$src_hash" ]]; then
  say "building the DCB test module against linux-headers-$kver"
  rm -rf "$KCACHE/module"
  mkdir -p "$KCACHE/module"
  cp "$LAB_DIR/module/Kbuild" "$LAB_DIR/module/Makefile" "$LAB_DIR"/module/*.c "$KCACHE/module/"
  if ! nice make -s -C "$KHEADERS" M="$KCACHE/module" modules >"$KCACHE/module/build.log" 2>&1; then
    cat "$KCACHE/module/build.log" >&2
    die "module build failed"
  fi
  [[ -f $KMODULE ]] || die "module build produced no $KMODULE"
  echo "$src_hash" >"$KCACHE/module/.hash"
fi

# -------------------------------------------------------------- initramfs
# Modules needed before the root is mounted; the rest is loaded from the
# cached /lib/modules/<kver> once the guest has chrooted.
INITRD_MODS=(virtio_pci 9pnet_virtio 9p overlay)
BUSYBOX=$(command -v busybox || true)
[[ -n $BUSYBOX ]] && file_is_static=$(ldd "$BUSYBOX" 2>&1 | grep -c "not a dynamic" || true)
[[ -n $BUSYBOX && ${file_is_static:-0} -ge 1 ]] || die "static busybox not found (package busybox-static)"
init_hash=$( (cat "$LAB_DIR/guest/init"; echo "${INITRD_MODS[*]}"; sha256sum "$BUSYBOX"; echo "$kver") |
             sha256sum | cut -c1-16)
if [[ ! -f $KINITRD || $(cat "$KCACHE/initramfs.hash" 2>/dev/null) != "$init_hash" ]]; then
  say "building initramfs"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp"/{bin,dev,proc,sys,mnt,modules}
  cp "$BUSYBOX" "$tmp/bin/busybox"
  : >"$tmp/modules/load.list"
  declare -A seen=()
  for m in "${INITRD_MODS[@]}"; do
    while read -r kind path _; do
      [[ $kind == insmod ]] || continue
      base=$(basename "$path")
      [[ -n ${seen[$base]:-} ]] && continue
      seen[$base]=1
      cp "$path" "$tmp/modules/$base"
      echo "$base" >>"$tmp/modules/load.list"
    done < <(modprobe -d "$KROOT" -S "$kver" --show-depends "$m")
  done
  install -m 0755 "$LAB_DIR/guest/init" "$tmp/init"
  (cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$KINITRD.tmp"
  mv "$KINITRD.tmp" "$KINITRD"
  echo "$init_hash" >"$KCACHE/initramfs.hash"
  rm -rf "$tmp"
  trap - EXIT
fi

ln -sfn "$kver" "$LAB_CACHE/current"

# Drop kernels the metapackage has moved away from, unless a running lab uses one.
for d in "$LAB_CACHE"/*/; do
  old=$(basename "$d")
  [[ -L ${d%/} || $old == "$kver" || ! -f $d/.ready ]] && continue
  grep -qsx "KVER=$old" /run/*/state && continue
  say "removing old kernel cache $old"
  rm -rf "${d%/}"
done
say "ready: kernel $kver, module $KMODULE, initramfs $KINITRD"
