#!/usr/bin/env bash
# Regenerates tests/fuzz/corpus/ (the seeds every fuzz target starts from),
# from inputs already in the repo; run once by hand after changing a seed
# source, then check the result in. Needs a fuzz build with the generator:
#   cmake --build build-fuzz --target roced_fuzz_seeds
#   bash tests/fuzz/make_seeds.sh [BUILD_DIR]      (default ./build-fuzz)
# Seeds (a corpus grows from these; libFuzzer keeps what it finds in a copy):
#   config_yaml     deploy/examples/*.yaml and the reconcile cases' desired.yaml
#   config_proto    the same configs, decoded and serialized as protobuf
#                   (roced_fuzz_seeds)
#   accepted_state  accepted.json as the agent writes it: from a file, a
#                   provisional gRPC config with priors, the same confirmed
#                   (roced_fuzz_seeds, from lossless-prio3.yaml, minimal.yaml
#                   and a restore case's journal)
#   apply_journal   tests/fixtures/reconcile/restore/*/journal.json
#   hal_text        a selector byte (see hal_text_fuzz.cc) and a file of the
#                   fixture sysfs tree, or an ethtool name / reply
#   netlink         DCB replies and link notifications (roced_fuzz_seeds)
#   probe_packet    a mesh UD request and a reply (roced_fuzz_seeds)
#   lldp            LLDP frames from the lab's switch stand-in
#                   (tests/lab/lib/lldp_switch.py --frame-out): IEEE, CEE,
#                   a shutdown LLDPDU
# Files named regress-* are inputs fuzzing found (each with a unit test);
# they are kept as they are.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$SRC/build-fuzz}
GEN=$BUILD/bin/roced_fuzz_seeds
[ -x "$GEN" ] || { echo "missing $GEN (cmake --build $BUILD --target roced_fuzz_seeds)" >&2; exit 2; }
OUT=$SRC/tests/fuzz/corpus
FIX=$SRC/tests/fixtures
# Inputs fuzzing found (regress-*, see tests/fuzz/README.md) stay.
find "$OUT" -type f ! -name 'regress-*' -delete 2>/dev/null || true
mkdir -p "$OUT"/{config_yaml,config_proto,accepted_state,apply_journal,hal_text,netlink,lldp,probe_packet}

yamls=("$SRC/deploy/examples/lossless-prio3.yaml")
cp "$SRC/deploy/examples/lossless-prio3.yaml" "$OUT/config_yaml/lossless-prio3.yaml"
for f in "$FIX"/reconcile/*/desired.yaml; do
  name=$(basename "$(dirname "$f")")
  cp "$f" "$OUT/config_yaml/$name.yaml"
  yamls+=("$OUT/config_yaml/$name.yaml")
done
cp "$SRC/deploy/examples/minimal.yaml" "$OUT/config_yaml/minimal.yaml"
yamls+=("$SRC/deploy/examples/minimal.yaml")

for f in "$FIX"/reconcile/restore/*/journal.json; do
  cp "$f" "$OUT/apply_journal/$(basename "$(dirname "$f")").json"
done

"$GEN" "$OUT" "$FIX/reconcile/restore/every_field_back_in_apply_order/journal.json" "${yamls[@]}"

# hal_text: selector byte, then the text.
seed() {  # seed NAME SELECTOR TEXT-FILE-OR-STRING
  local out=$OUT/hal_text/$1
  printf "\\x$(printf %02x "$2")" >"$out"
  if [ -f "$3" ]; then cat "$3" >>"$out"; else printf '%s' "$3" >>"$out"; fi
}
PCI=$FIX/sysfs/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0
PORT=$PCI/infiniband/mlx5_0/ports/1
RXE=$FIX/sysfs/devices/virtual/infiniband/rxe0/ports/1
seed counter_mlx5 0 "$PORT/counters/unicast_xmit_packets"
seed counter_rxe 0 "$RXE/hw_counters/rcvd_pkts"
seed ethtool_prio_pause 1 rx_prio3_pause
seed ethtool_pause_duration 1 tx_prio3_pause_duration
seed ethtool_phy 1 rx_pause_ctrl_phy
seed ethtool_storm 1 tx_pause_storm_error_events
seed pcie_speed 2 "$PCI/current_link_speed"
seed port_rate 2 "$PORT/rate"
seed port_state 3 "$PORT/state"
seed phys_state 3 "$PORT/phys_state"
seed gid_type_v1 4 "$(cat "$PORT/gid_attrs/types/0")"$'\n'"$(cat "$PORT/link_layer")"
seed gid_v6 4 "$PORT/gids/0"
seed gid_v4 4 "$PORT/gids/2"
seed pci_bdf 5 "$(basename "$PCI")"
seed hugepages_2m 6 hugepages-2048kB
seed hugepages_1g 6 hugepages-1048576kB
# An ETHTOOL_GSTRINGS reply: count 3 (u32, little-endian), 32-byte entries.
{
  printf '\x07\x03\x00\x00\x00'
  for n in rx_prio3_pause tx_prio3_pause rx_discards_phy; do
    printf '%s' "$n"; head -c $((32 - ${#n})) /dev/zero
  done
} >"$OUT/hal_text/ethtool_gstrings"
printf '\x08\x68\x10\x00\x00' >"$OUT/hal_text/netdev_mtu_4200"

du -sh "$OUT"

# lldp: frames as the lab's switch stand-in sends them.
SW="python3 $SRC/tests/lab/lib/lldp_switch.py"
$SW --frame-out "$OUT/lldp/ieee_pfc3_app26" --pfc 3 --app 26:3,48:6 --max-frame 9216 --ets-prio-tc 0,0,0,1,0,0,0,0
$SW --frame-out "$OUT/lldp/ieee_willing" --pfc 3,4 --willing --app-ethertype 0x8906:3
$SW --frame-out "$OUT/lldp/cee_pfc3" --cee --pfc 3 --ets-prio-tc 0,0,0,1,0,0,0,0 --app-ethertype 0x8906:3
$SW --frame-out "$OUT/lldp/shutdown" --ttl 0
