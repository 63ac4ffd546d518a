#!/usr/bin/env bash
# The port buffers as mlx5 (Linux 6.1, en/port_buffer.c and en_dcbnl.c)
# holds and checks them, on the DCB test NIC that follows it, with node1's
# agent and `dcb -j` as the independent client:
#  1. Sizes that are no multiple of mlx5's 128-byte cell apply; `dcb -j
#     buffer show` reads them back rounded down to a cell, the agent counts
#     that as what was asked for (IN_SYNC), and the same file again is "No
#     changes" with no DCB SET.
#  2. A lossless buffer (one a PFC priority maps to) below mlx5's minimum,
#     xoff + MTU + one cell, is refused by the agent before anything is
#     written: rocectl exits 1 with the error naming the buffer, the size
#     and the minimum, the PFC step before it is skipped, the test NIC saw
#     no setpfc and no setbuffer, node and generation are as before.
#  3. mlx5 checks a new map at the buffers' old sizes: by hand, moving PFC
#     priority 3 to a buffer that had no size is refused (read back
#     unchanged) however large its new size; the agent writes the sizes
#     first, then the map, then the sizes as wanted, and the layout applies.
#  4. Once a layout is manual, mlx5 writes a pfc_en change and toggles the
#     link before it finds a lossless buffer too small (ENOMEM): by hand the
#     PFC reads back changed after the error; through the agent (PFC only,
#     over such a layout) the apply fails and is rolled back, one flap each
#     way.
source "$(dirname "$0")/reconcile_lib.sh"

# buffers_cfg NAME 'PFC PRIORITIES' 'PRIORITY_TO_BUFFER' 'SIZE_BYTES': a
# config of PFC and the buffers only, printed as its path.
buffers_cfg() {
  cfg "$1" <<EOF
apiVersion: roced/v1
kind: NodeConfig
interfaces:
  - match: {netdev: eth0}
    qos:
      pfc: {priorities: [$2]}
      buffers:
        priority_to_buffer: [$3]
        size_bytes: [$4]
EOF
}
# dcb_buffer EXPR: EXPR of node1's `dcb -j buffer show dev eth0` (bound to j).
dcb_buffer() { json_get "$(lx "$REC_NODE" dcb -j buffer show dev eth0)" "$1"; }

# --- 1. sizes off the cell grid
rec_reset
ODD=$(buffers_cfg odd 3 "0, 0, 0, 1, 0, 0, 0, 0" "200000, 300000, 0, 0, 0, 0, 0, 0")
out=$(rctl apply -f "$ODD" 2>&1) || fail "apply of sizes off the cell grid failed:
$out"
grep -A4 "~ eth0 qos.buffers\$" <<<"$out" | grep -q "= applied" || fail "qos.buffers not applied:
$out"
# 200000 and 300000 bytes are 1562.5 and 2343.75 cells of 128 bytes
expect_eq "buffer_size (whole cells)" "[199936, 299904, 0, 0, 0, 0, 0, 0]" "$(dcb_buffer 'j["buffer_size"]')"
expect_eq "prio_buffer" "[0, 0, 0, 1, 0, 0, 0, 0]" "$(dcb_buffer 'j["prio_buffer"]')"
st=$(rec_wait_converged 20 "after the apply of sizes off the cell grid")
expect_eq "status qos.buffers" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" eth0 qos.buffers)"
lsh "$REC_NODE" "echo 0 > $DCBT/calls"
out=$(rctl apply -f "$ODD" 2>&1) || fail "second apply of the same file failed:
$out"
grep -q "^No changes" <<<"$out" || fail "the second apply was not empty:
$out"
calls=$(rec_calls)
for c in setpfc setbuffer; do
  expect_eq "$c calls of the second apply" 0 "$(json_get "$calls" "j['$c']")"
done

# --- 2. a lossless buffer below the minimum, refused before any write
rec_reset
gen=$(rec_generation)
before=$(rec_snapshot)
knobs=$(rec_knobs)
SMALL=$(buffers_cfg small 3 "0, 0, 0, 1, 0, 0, 0, 0" "262144, 20000, 0, 0, 0, 0, 0, 0")
lsh "$REC_NODE" "echo 0 > $DCBT/calls"
rc=0
out=$(rctl apply -f "$SMALL" 2>&1) || rc=$?
expect_eq "rocectl apply exit status (lossless buffer too small)" 3 "$rc"
# The agent's minimum, at mlx5's lowest speed (40 Gb/s) for the reset NIC's
# 7 m cable and MTU 1500: xoff (301 + 216 * 7 / 100) * 40 + 272 * 1500 / 100
# = 16720, + max(MTU, 9216) + one 128-byte cell = 26064.
want_err="eth0: qos.buffers.size_bytes[1] = 20000 bytes is below the lossless minimum 26064 (xoff 16720 + MTU 9216 + one 128-byte cell) for priority 3's buffer"
grep -A4 "~ eth0 qos.buffers\$" <<<"$out" | grep -qF "= FAILED: $want_err" ||
  fail "no refusal naming the buffer, the size and the minimum:
$out"
grep -A4 "~ eth0 qos.pfc\$" <<<"$out" | grep -q "= skipped" || fail "the PFC step before it was not skipped:
$out"
calls=$(rec_calls)
for c in setpfc setbuffer; do
  expect_eq "$c calls of the refused apply" 0 "$(json_get "$calls" "j['$c']")"
done
expect_same_state "refused apply: DCB, ECN, MTU" "$before" "$(rec_snapshot)"
expect_same_state "refused apply: buffers" "$knobs" "$(rec_knobs)"
expect_eq "accepted generation after the refused apply" "$gen" "$(rec_generation)"

# --- 3. a map to a buffer that had no size
rec_reset
lsh "$REC_NODE" "dcb pfc set dev eth0 prio-pfc 3:on
  dcb buffer set dev eth0 prio-buffer all:0 3:2 buffer-size all:0 0:192K 1:128K 2:64K || true"
expect_eq "prio_buffer after mapping 3 to an empty buffer by hand (ENOMEM)" "[0, 0, 0, 0, 0, 0, 0, 0]" \
  "$(dcb_buffer 'j["prio_buffer"]')"
expect_eq "buffer_size after it" "[262144, 131072, 0, 0, 0, 0, 0, 0]" "$(dcb_buffer 'j["buffer_size"]')"
rec_reset
GROW=$(buffers_cfg grow 3 "0, 0, 0, 2, 0, 0, 0, 0" "196608, 131072, 65536, 0, 0, 0, 0, 0")
out=$(rctl apply -f "$GROW" 2>&1) || fail "apply mapping 3 to an empty buffer failed:
$out"
expect_eq "prio_buffer after the agent's apply" "[0, 0, 0, 2, 0, 0, 0, 0]" "$(dcb_buffer 'j["prio_buffer"]')"
expect_eq "buffer_size after it" "[196608, 131072, 65536, 0, 0, 0, 0, 0]" "$(dcb_buffer 'j["buffer_size"]')"
expect_eq "setbuffer calls (sizes, map, sizes)" 3 "$(json_get "$(rec_calls)" "j['setbuffer']")"

# --- 4. a PFC change over a manual layout too small for it
rec_reset
lsh "$REC_NODE" "dcb buffer set dev eth0 prio-buffer all:0 3:1 buffer-size all:0 0:256K 1:20K
  echo 0 > $DCBT/link_flaps
  dcb pfc set dev eth0 prio-pfc 3:on || true"
expect_eq "PFC after a refused (ENOMEM) PFC set by hand: written" "[False, False, False, True, False, False, False, False]" \
  "$(json_get "$(lx "$REC_NODE" dcb -j pfc show dev eth0)" 'j["prio_pfc"]')"
expect_eq "link flaps of that PFC set" 1 "$(lx "$REC_NODE" cat "$DCBT/link_flaps")"
expect_eq "buffer_size after it" "[262144, 20480, 0, 0, 0, 0, 0, 0]" "$(dcb_buffer 'j["buffer_size"]')"
lsh "$REC_NODE" "dcb pfc set dev eth0 prio-pfc 3:off; echo 0 > $DCBT/link_flaps"
before=$(rec_snapshot)
PFC3=$(cfg pfc3 <<'EOF'
apiVersion: roced/v1
kind: NodeConfig
interfaces:
  - match: {netdev: eth0}
    qos: {pfc: {priorities: [3]}}
EOF
)
rc=0
out=$(rctl apply -f "$PFC3" 2>&1) || rc=$?
expect_eq "rocectl apply exit status (PFC over a too small manual layout)" 3 "$rc"
grep -A5 "~ eth0 qos.pfc\$" <<<"$out" | grep -q "= FAILED: .*Cannot allocate memory" ||
  fail "the PFC step did not fail with ENOMEM:
$out"
grep -q "Apply failed; every step was rolled back" <<<"$out" || fail "no rollback said:
$out"
expect_same_state "PFC apply rolled back" "$before" "$(rec_snapshot)"
expect_eq "link flaps (one each way)" 2 "$(lx "$REC_NODE" cat "$DCBT/link_flaps")"
pass "cell-rounded sizes in sync; lossless minimum refused before any write; map to an empty buffer applied in 3 SETs; late ENOMEM on PFC rolled back with one flap each way"
