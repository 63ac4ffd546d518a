// SPDX-License-Identifier: GPL-2.0
/*
 * roce_dcbtest: a DCB-capable "test NIC" for the roced lab.
 *
 * No virtual driver in mainline implements DCB, so the lab loads this module
 * on a guest's virtio_net interface. It attaches to an existing net_device
 * (module parameter ifname) and gives it:
 *
 *  - dcbnl_ops: IEEE PFC (with per-priority requests/indications), ETS,
 *    the DSCP app table, DCBX mode and the port buffer, behaving like the
 *    upstream mlx5 driver where that matters to a host agent:
 *      * only DSCP app entries are accepted (-EINVAL otherwise);
 *      * the first DSCP entry switches the port to DSCP trust, deleting the
 *        last one switches it back to PCP;
 *      * a pfc_en change toggles the port link: counted in link_flaps, and
 *        the carrier really goes down for flap_ms (100 ms by default).
 *    The rows, with the mlx5 function each follows, are in docs/drivers.md.
 *  - mlx5-style ethtool statistics appended to the driver's own
 *    (rx_prio<N>_pause, tx_prio<N>_pause, rx_prio<N>_pause_duration, ...,
 *    rx_pause_ctrl_phy, tx_pause_ctrl_phy, rx_discards_phy, ...).
 *  - the inbox driver's DCQCN parameters in debugfs,
 *    <debugfs>/mlx5/<device>/cc_params/ (drivers/infiniband/hw/mlx5/cong.c);
 *    with ofed_ecn=1 also MLNX_OFED's sysfs form over the same values:
 *    <netdev>/ecn/roce_np|roce_rp/enable/<0..7>, the CNP DSCP and priority
 *    and the DCQCN parameters.
 *  - the ethtool PFC storm prevention tunable (ETHTOOL_PFC_PREVENTION_TOUT),
 *    with mlx5's range (0, or 80-8000 ms) and its reading of "auto" (100).
 *  - test controls in <netdev>/dcbtest/ (documented in tests/lab/README.md):
 *    trust, link_flaps, flap_ms, refuse_{pfc,ets,app,dcbx,buffer,cc,tunable},
 *    storm, set_counter, stats_mode, calls, dscp2prio, dscp_app_cnt, reset.
 *    storm is "PRIO RATE [rx|tx|both] [drain|stuck]": PRIO's pause counters
 *    climb by RATE frames/s; "drain" (congestion) makes its
 *    tx_prio<PRIO>_packets and _bytes (always present, as mlx5's
 *    per-priority traffic group) climb too, "stuck" (a storm, the default)
 *    leaves them flat; a stuck tx storm past the PFC storm prevention
 *    timeout counts tx_pause_storm_error_events (see storm_work_fn).
 *
 * Unloading restores the device's original dcbnl_ops (NULL) and
 * ethtool_ops, deletes the app entries it added and removes its sysfs files.
 *
 * Locking: every dcbnl and ethtool callback runs under RTNL, and so do the
 * sysfs handlers that touch DCB state (with rtnl_trylock/restart_syscall,
 * because sysfs removal under RTNL waits for running handlers). Counters
 * are atomic64 so that the storm worker can bump them without RTNL.
 */

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/ethtool.h>
#include <linux/slab.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/debugfs.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/atomic.h>
#include <linux/spinlock.h>
#include <linux/utsname.h>
#include <net/dcbnl.h>

#define NPRIO 8
#define MAX_DSCP 64
#define MAX_CABLE_LENGTH 1000
#define STORM_TICK_MS 100
/* mlx5's PFC storm prevention limits (en_ethtool.c) */
#define PFC_PREVEN_AUTO_MS 100
#define PFC_PREVEN_MIN_MS 80
#define PFC_PREVEN_MAX_MS 8000

static char *ifname = "eth0";
module_param(ifname, charp, 0444);
MODULE_PARM_DESC(ifname, "interface to give DCB support to (default eth0)");

/*
 * DCBX mode at load: "host" (the inbox driver after `setdcbx host`, or
 * firmware with LLDP off) or "firmware" (ConnectX's default when the
 * firmware LLDP/DCBX agent is enabled: mlx5e_dcbnl_query_dcbx_mode reads
 * version_oper != HOST and the HOST bit stays out of dcbx.cap).
 */
static char *dcbx_mode = "host";
module_param(dcbx_mode, charp, 0444);
MODULE_PARM_DESC(dcbx_mode, "DCBX mode at load: host (default) or firmware");

/*
 * In firmware mode with the port willing, the switch's DCBX decides: the
 * stand-in rewrites pfc_en to this mask fw_dcbx_ms after every host write
 * (and at load), as the firmware does when it next hears the switch. -1:
 * the switch advertises nothing.
 */
static int peer_pfc = -1;
module_param(peer_pfc, int, 0444);
MODULE_PARM_DESC(peer_pfc, "firmware mode: the switch's PFC enable mask the willing port adopts (-1 none)");

/*
 * mlx5e_dcbnl_ieee_getets reads strict and vendor classes back at 100% in
 * every kernel since "net/mlx5e: Read ETS settings directly from firmware"
 * (820c2c5e773d) until the 2026 fix "Report 0 for non ETS TSA" (in Debian's
 * 6.1.192), which reports them at 0% and tells zero-bandwidth ETS classes
 * by their cached tsa. 0: the kernels before the fix (the default: what
 * most fleets run); 1: with it.
 */
static bool ets_zero_non_ets;
module_param(ets_zero_non_ets, bool, 0444);
MODULE_PARM_DESC(ets_zero_non_ets, "getets as after the 2026 fix: strict/vendor classes read back at 0% (default 0: at 100%)");

/*
 * MLX5_BUFFER_SUPPORTED (pcam_reg with pbmc and pptb: ConnectX-5 on): the
 * port-buffer ops and the PFC delay. Without it mlx5e_dcbnl_getbuffer and
 * _setbuffer answer EOPNOTSUPP and mlx5e_dcbnl_ieee_getpfc reports no delay.
 */
static bool buffer_support = true;
module_param(buffer_support, bool, 0444);
MODULE_PARM_DESC(buffer_support, "port buffers and the PFC delay, as MLX5_BUFFER_SUPPORTED (default 1)");

/*
 * MLNX_OFED's per-priority ECN enables and DCQCN files under
 * /sys/class/net/<netdev>/ecn/. The inbox mlx5 driver (the default here)
 * has none: its DCQCN parameters are debugfs files, which the test NIC
 * always has (see "debugfs cc_params" below). ofed_ecn=1 adds the ecn/
 * directory, over the same parameter values.
 */
static bool ofed_ecn;
module_param(ofed_ecn, bool, 0444);
MODULE_PARM_DESC(ofed_ecn, "MLNX_OFED's ecn/ sysfs directory (default 0: the inbox driver, none)");

/*
 * mlx5_toggle_port_link() (from mlx5e_dcbnl_ieee_setpfc on a pfc_en change)
 * takes the port down and up: the carrier really drops. A ConnectX link
 * takes seconds to train again; the lab keeps it short (its tests share one
 * lab and time out in seconds), and the `flap_ms` control changes it.
 */
static unsigned int flap_ms = 100;
module_param(flap_ms, uint, 0444);
MODULE_PARM_DESC(flap_ms, "how long a pfc_en change drops the carrier, ms (default 100; 0: counted only)");

static unsigned int fw_dcbx_ms = 300;
module_param(fw_dcbx_ms, uint, 0444);
MODULE_PARM_DESC(fw_dcbx_ms, "firmware mode: delay before the switch's PFC replaces a host write (ms)");

/*
 * The driver the test NIC behaves as (docs/drivers.md has a column each):
 *  - "mlx5": ConnectX's inbox mlx5_core (the default; everything above);
 *  - "bnxt_en": Broadcom's bnxt_en (drivers/net/ethernet/broadcom/bnxt/
 *    bnxt_dcb.c), with its ethtool statistics (bnxt_ethtool.c);
 *  - "ice": Intel's ice (drivers/net/ethernet/intel/ice/ice_dcb_nl.c,
 *    ice_dcb_lib.c), with its statistics and its fw-lldp-agent private
 *    flag (ice_ethtool.c).
 * `ethtool -i` reports the driver's name. The port buffer ops, the PFC
 * storm prevention tunable, debugfs cc_params and the ecn/ directory are
 * mlx5's and exist under mlx5 only. Each imitated behaviour names its
 * function in Linux 6.1.192.
 */
static char *driver = "mlx5";
module_param(driver, charp, 0444);
MODULE_PARM_DESC(driver, "the driver to behave as: mlx5 (default), bnxt_en or ice");

enum personality { P_MLX5, P_BNXT, P_ICE, P_NUM };
static enum personality pers;
static const char *const pers_param[P_NUM] = { "mlx5", "bnxt_en", "ice" };
/* ethtool -i's driver: mlx5e_ethtool_get_drvinfo (KBUILD_MODNAME),
 * bnxt_get_drvinfo (DRV_MODULE_NAME), __ice_get_drvinfo (KBUILD_MODNAME) */
static const char *const pers_driver[P_NUM] = { "mlx5_core", "bnxt_en", "ice" };

/* ---------------------------------------------------------------- stats */

enum prio_stat {
	PS_RX_PAUSE,
	PS_RX_PAUSE_DURATION,
	PS_TX_PAUSE,
	PS_TX_PAUSE_DURATION,
	PS_RX_PAUSE_TRANSITION,
	PS_NUM_PFC, /* the ones above exist only for PFC-enabled prios in "pfc" mode */
	PS_RX_BUF_DISCARD = PS_NUM_PFC,
	PS_RX_CONG_DISCARD,
	PS_RX_MARKED,
	/* mlx5's per-priority traffic group (pport_per_prio_traffic_stats_desc) */
	PS_TX_BYTES,
	PS_TX_PACKETS,
	PS_NUM,
};

/*
 * Each driver's ethtool -S name for each counter; NULL: the driver has no
 * such counter. mlx5: en_stats.c (pport_per_prio_pfc_stats_desc,
 * pport_per_tc_prio_stats_desc, pport_per_tc_congest_prio_stats_desc,
 * pport_per_prio_traffic_stats_desc). bnxt_en: bnxt_ethtool.c
 * (bnxt_port_stats_arr: rx/tx_pfc_ena_frames_pri<N>;
 * bnxt_port_stats_ext_arr: pfc_pri<N>_rx|tx_duration_us and _transitions,
 * rx_discard_packets_cos<N>; bnxt_tx_bytes_pri_arr, bnxt_tx_pkts_pri_arr).
 * ice: ice_ethtool.c (ice_get_strings: rx|tx_priority_<N>_xon|xoff.nic;
 * the XOFF counts are getpfc's requests and indications in
 * ice_dcbnl_getpfc). The transition counter stands for ice's XON frames.
 */
static const char *const prio_stat_fmt[P_NUM][PS_NUM] = {
	[P_MLX5] = {
		[PS_RX_PAUSE] = "rx_prio%d_pause",
		[PS_RX_PAUSE_DURATION] = "rx_prio%d_pause_duration",
		[PS_TX_PAUSE] = "tx_prio%d_pause",
		[PS_TX_PAUSE_DURATION] = "tx_prio%d_pause_duration",
		[PS_RX_PAUSE_TRANSITION] = "rx_prio%d_pause_transition",
		[PS_RX_BUF_DISCARD] = "rx_prio%d_buf_discard",
		[PS_RX_CONG_DISCARD] = "rx_prio%d_cong_discard",
		[PS_RX_MARKED] = "rx_prio%d_marked",
		[PS_TX_BYTES] = "tx_prio%d_bytes",
		[PS_TX_PACKETS] = "tx_prio%d_packets",
	},
	[P_BNXT] = {
		[PS_RX_PAUSE] = "rx_pfc_ena_frames_pri%d",
		[PS_RX_PAUSE_DURATION] = "pfc_pri%d_rx_duration_us",
		[PS_TX_PAUSE] = "tx_pfc_ena_frames_pri%d",
		[PS_TX_PAUSE_DURATION] = "pfc_pri%d_tx_duration_us",
		[PS_RX_PAUSE_TRANSITION] = "pfc_pri%d_rx_transitions",
		[PS_RX_BUF_DISCARD] = "rx_discard_packets_cos%d",
		[PS_TX_BYTES] = "tx_bytes_pri%d",
		[PS_TX_PACKETS] = "tx_packets_pri%d",
	},
	[P_ICE] = {
		[PS_RX_PAUSE] = "rx_priority_%d_xoff.nic",
		[PS_TX_PAUSE] = "tx_priority_%d_xoff.nic",
		[PS_RX_PAUSE_TRANSITION] = "rx_priority_%d_xon.nic",
	},
};

enum global_stat {
	GS_RX_PAUSE_CTRL_PHY,
	GS_TX_PAUSE_CTRL_PHY,
	GS_RX_DISCARDS_PHY,
	GS_TX_PAUSE_STORM_WARNING,
	GS_TX_PAUSE_STORM_ERROR,
	GS_NUM,
};

/* mlx5: pport_phy_statistical / pport_802_3 / pport_pfc_stall groups;
 * bnxt_en: rx|tx_pause_frames, rx_stat_discard (bnxt_port_stats_arr);
 * ice: link_xoff_rx|tx.nic, rx_dropped.nic (ice_gstrings_pf_stats). */
static const char *const global_stat_name[P_NUM][GS_NUM] = {
	[P_MLX5] = {
		[GS_RX_PAUSE_CTRL_PHY] = "rx_pause_ctrl_phy",
		[GS_TX_PAUSE_CTRL_PHY] = "tx_pause_ctrl_phy",
		[GS_RX_DISCARDS_PHY] = "rx_discards_phy",
		[GS_TX_PAUSE_STORM_WARNING] = "tx_pause_storm_warning_events",
		[GS_TX_PAUSE_STORM_ERROR] = "tx_pause_storm_error_events",
	},
	[P_BNXT] = {
		[GS_RX_PAUSE_CTRL_PHY] = "rx_pause_frames",
		[GS_TX_PAUSE_CTRL_PHY] = "tx_pause_frames",
		[GS_RX_DISCARDS_PHY] = "rx_stat_discard",
	},
	[P_ICE] = {
		[GS_RX_PAUSE_CTRL_PHY] = "link_xoff_rx.nic",
		[GS_TX_PAUSE_CTRL_PHY] = "link_xoff_tx.nic",
		[GS_RX_DISCARDS_PHY] = "rx_dropped.nic",
	},
};

/* ---------------------------------------------------------------- state */

enum call_kind {
	C_SETPFC, C_SETETS, C_SETAPP, C_DELAPP, C_SETDCBX, C_SETBUFFER,
	C_SETTUNABLE, C_NUM,
};

static const char *const call_name[C_NUM] = {
	"setpfc", "setets", "setapp", "delapp", "setdcbx", "setbuffer",
	"settunable",
};

struct dcbtest {
	struct net_device *dev;
	netdevice_tracker tracker;
	const struct ethtool_ops *orig_ethtool_ops;
	struct ethtool_ops ethtool_ops;

	/* DCB state, RTNL */
	struct ieee_pfc pfc;
	/*
	 * ETS as mlx5 keeps it: the port (firmware) holds prio->tc, a group per
	 * tc and a bandwidth per tc; the driver caches only the tsa it was last
	 * given (priv->dcbx.tc_tsa) and derives the rest on every read.
	 */
	u8 fw_prio_tc[NPRIO];
	u8 fw_tc_group[NPRIO];
	u8 fw_tc_bw[NPRIO];
	u8 tc_tsa[NPRIO];
	bool ets_zero_non_ets;	/* getets as after the 2026 fix (module parameter, test control) */
	/* DCBX: the mode the firmware runs (mlx5e_dcbx.mode) and what getdcbx reports (.cap) */
	bool dcbx_host;
	/* firmware DCBX stand-in: the switch's PFC as a willing port takes it (-1: none) */
	int peer_pfc;
	struct delayed_work fw_dcbx_work;
	/*
	 * The port buffer as mlx5 splits it (en/port_buffer.c): the port holds
	 * prio->buffer (PPTB) and per buffer a size in cells and a lossy bit
	 * (PBMC); the driver whether the layout is manual and the xoff it last
	 * programmed (priv->dcbx.manual_buffer, priv->dcbx.xoff).
	 */
	struct {
		u8 prio2buffer[NPRIO];
		u32 cells[DCBX_MAX_BUFFERS];
		bool lossy[DCBX_MAX_BUFFERS];	/* kept in manual mode only */
		u32 total;			/* bytes: getbuffer's total_size */
		bool manual;
		u32 xoff;
	} buf;
	u8 dcbx_cap;
	bool trust_dscp;
	u8 dscp2prio[MAX_DSCP];
	int dscp_app_cnt;
	u64 link_flaps;
	u64 calls[C_NUM];
	bool stats_pfc_only;

	u16 pfc_prevention_tout; /* ms, 0 = disabled; RTNL */

	/* test controls: errno to return (positive), 0 = accept */
	int refuse_pfc, refuse_ets, refuse_app, refuse_dcbx, refuse_buffer;
	int refuse_cc, refuse_tunable;
	unsigned int flap_ms;

	/* counters */
	atomic64_t prio_stats[PS_NUM][NPRIO];
	atomic64_t global_stats[GS_NUM];

	/* storm */
	spinlock_t storm_lock;
	bool storm_on;
	int storm_prio;
	unsigned int storm_rate; /* pause frames per second */
	bool storm_rx, storm_tx;
	u64 storm_carry; /* frames * 1000 not yet counted */
	struct delayed_work storm_work;
	struct delayed_work carrier_work;

	/* MLNX_OFED-style ecn */
	u8 np_enable[NPRIO], rp_enable[NPRIO];

	/* bnxt_en and ice: the DSCPs the firmware's DSCP table maps (to dscp2prio) */
	u64 fw_dscp_valid;
	/* bnxt_en (RTNL): bp->ieee_ets and bp->ieee_pfc (have_*: allocated),
	 * what the firmware's DCBX agent runs, tc_to_qidx, the TC count */
	struct {
		bool have_ets, have_pfc;
		struct ieee_ets ets, fw_ets;
		struct ieee_pfc pfc;
		u8 tc_to_qidx[NPRIO];
		u8 num_tc;
	} bx;
	/* ice (RTNL): ICE_FLAG_FW_LLDP_AGENT, pfc_mode DSCP, local_dcbx_cfg */
	struct {
		bool fw_lldp, dscp_mode;
		struct ieee_ets ets;
		u8 pfc_cap, pfc_en, mbc, pfc_willing;
	} ic;

	struct kobject *ctl_kobj;
	struct kobject *ecn_kobj, *np_kobj, *rp_kobj, *np_en_kobj, *rp_en_kobj;
};

static struct dcbtest *g;

/* -------------------------------------------------------------- helpers */

/* mlx5 shows the per-priority PFC counters of PFC-enabled priorities only
 * (stats_mode pfc); bnxt_en and ice show all eight always. */
static bool pfc_visible(int prio)
{
	return pers != P_MLX5 || !g->stats_pfc_only || (g->pfc.pfc_en & BIT(prio));
}

/*
 * Calls fn(name, counter) for each of our stats in ethtool order.
 * Order follows mlx5: phy counters, per-prio buffer counters, per-prio PFC.
 */
typedef void (*stat_fn)(const char *name, atomic64_t *ctr, void *arg);

static void for_each_stat(stat_fn fn, void *arg)
{
	char name[ETH_GSTRING_LEN];
	int p, s;

	for (s = 0; s < GS_NUM; s++)
		if (global_stat_name[pers][s])
			fn(global_stat_name[pers][s], &g->global_stats[s], arg);
	for (p = 0; p < NPRIO; p++)
		for (s = PS_NUM_PFC; s < PS_NUM; s++) {
			if (!prio_stat_fmt[pers][s])
				continue;
			snprintf(name, sizeof(name), prio_stat_fmt[pers][s], p);
			fn(name, &g->prio_stats[s][p], arg);
		}
	for (p = 0; p < NPRIO; p++) {
		if (!pfc_visible(p))
			continue;
		for (s = 0; s < PS_NUM_PFC; s++) {
			if (!prio_stat_fmt[pers][s])
				continue;
			snprintf(name, sizeof(name), prio_stat_fmt[pers][s], p);
			fn(name, &g->prio_stats[s][p], arg);
		}
	}
}

static void count_stat(const char *name, atomic64_t *ctr, void *arg)
{
	(*(int *)arg)++;
}

static int n_our_stats(void)
{
	int n = 0;

	for_each_stat(count_stat, &n);
	return n;
}

/* ------------------------------------------------------- ethtool wrappers */

static int orig_stats_count(struct net_device *dev)
{
	int n = 0;

	if (g->orig_ethtool_ops && g->orig_ethtool_ops->get_sset_count)
		n = g->orig_ethtool_ops->get_sset_count(dev, ETH_SS_STATS);
	return n < 0 ? 0 : n;
}

static const char *const ice_priv_flag_names[2];

static int dt_get_sset_count(struct net_device *dev, int sset)
{
	if (sset == ETH_SS_STATS)
		return orig_stats_count(dev) + n_our_stats();
	if (sset == ETH_SS_PRIV_FLAGS && pers == P_ICE)
		return ARRAY_SIZE(ice_priv_flag_names);
	if (g->orig_ethtool_ops && g->orig_ethtool_ops->get_sset_count)
		return g->orig_ethtool_ops->get_sset_count(dev, sset);
	return -EOPNOTSUPP;
}

static void put_string(const char *name, atomic64_t *ctr, void *arg)
{
	u8 **p = arg;

	strscpy(*p, name, ETH_GSTRING_LEN);
	*p += ETH_GSTRING_LEN;
}

static void dt_get_strings(struct net_device *dev, u32 sset, u8 *data)
{
	int n;

	if (sset == ETH_SS_PRIV_FLAGS && pers == P_ICE) {
		for (n = 0; n < ARRAY_SIZE(ice_priv_flag_names); n++)
			strscpy(data + n * ETH_GSTRING_LEN, ice_priv_flag_names[n], ETH_GSTRING_LEN);
		return;
	}
	if (sset != ETH_SS_STATS) {
		if (g->orig_ethtool_ops && g->orig_ethtool_ops->get_strings)
			g->orig_ethtool_ops->get_strings(dev, sset, data);
		return;
	}
	n = orig_stats_count(dev);
	if (n && g->orig_ethtool_ops->get_strings)
		g->orig_ethtool_ops->get_strings(dev, sset, data);
	data += n * ETH_GSTRING_LEN;
	for_each_stat(put_string, &data);
}

static void put_value(const char *name, atomic64_t *ctr, void *arg)
{
	u64 **p = arg;

	**p = atomic64_read(ctr);
	(*p)++;
}

static void dt_get_ethtool_stats(struct net_device *dev,
				 struct ethtool_stats *stats, u64 *data)
{
	int n = orig_stats_count(dev);

	if (n && g->orig_ethtool_ops->get_ethtool_stats)
		g->orig_ethtool_ops->get_ethtool_stats(dev, stats, data);
	data += n;
	for_each_stat(put_value, &data);
}

/* ----------------------------------------------------------------- dcbnl */

static void carrier_work_fn(struct work_struct *w)
{
	rtnl_lock();
	if (g->dev)
		netif_carrier_on(g->dev);
	rtnl_unlock();
}

/* mlx5_toggle_port_link(): a PFC change is a short link flap. */
static void toggle_port_link(void)
{
	g->link_flaps++;
	if (g->flap_ms) {
		netif_carrier_off(g->dev);
		schedule_delayed_work(&g->carrier_work,
				      msecs_to_jiffies(g->flap_ms));
	}
}

/* ETHTOOL_PFC_PREVENTION_TOUT, as mlx5e_get/set_tunable: other ids -EINVAL */
static int dt_get_tunable(struct net_device *dev,
			  const struct ethtool_tunable *tuna, void *data)
{
	if (tuna->id != ETHTOOL_PFC_PREVENTION_TOUT)
		return -EINVAL;
	*(u16 *)data = g->pfc_prevention_tout;
	return 0;
}

static int dt_set_tunable(struct net_device *dev,
			  const struct ethtool_tunable *tuna, const void *data)
{
	u16 v = *(const u16 *)data;

	if (tuna->id != ETHTOOL_PFC_PREVENTION_TOUT)
		return -EINVAL;
	g->calls[C_SETTUNABLE]++;
	if (g->refuse_tunable)
		return -g->refuse_tunable;
	/* mlx5 keeps "auto" as its own timeout, and reads that back */
	if (v == PFC_STORM_PREVENTION_AUTO)
		v = PFC_PREVEN_AUTO_MS;
	if (v != PFC_STORM_PREVENTION_DISABLE &&
	    (v < PFC_PREVEN_MIN_MS || v > PFC_PREVEN_MAX_MS))
		return -EINVAL;
	g->pfc_prevention_tout = v;
	return 0;
}

/* Follows mlx5e_dcbnl_ieee_getpfc(): the delay (cable length) only with buffer support. */
static int dt_ieee_getpfc(struct net_device *dev, struct ieee_pfc *pfc)
{
	int p;

	pfc->pfc_cap = NPRIO;
	for (p = 0; p < NPRIO; p++) {
		pfc->requests[p] = atomic64_read(&g->prio_stats[PS_TX_PAUSE][p]);
		pfc->indications[p] = atomic64_read(&g->prio_stats[PS_RX_PAUSE][p]);
	}
	if (buffer_support)
		pfc->delay = g->pfc.delay;
	pfc->pfc_en = g->pfc.pfc_en;
	return 0;
}

static void fw_dcbx_schedule(void);
static int buffer_after_setpfc(struct net_device *dev, u8 old_pfc_en, u16 old_delay);

/*
 * Follows mlx5e_dcbnl_ieee_setpfc(): a pfc_en change is written and the
 * link toggled; the delay is taken as the cable length when it is non-zero,
 * below 1000 and different; mbc is not kept. Then, with a manual buffer
 * layout, the buffers are recomputed for it (buffer_after_setpfc), which
 * can fail with -ENOMEM after pfc_en was written and the link toggled.
 */
static int dt_ieee_setpfc(struct net_device *dev, struct ieee_pfc *pfc)
{
	const u8 old_pfc_en = g->pfc.pfc_en;
	const u16 old_delay = g->pfc.delay;
	int err;

	g->calls[C_SETPFC]++;
	if (g->refuse_pfc)
		return -g->refuse_pfc;
	if (pfc->pfc_en != g->pfc.pfc_en) {
		g->pfc.pfc_en = pfc->pfc_en;
		toggle_port_link();
	}
	if (pfc->delay && pfc->delay < MAX_CABLE_LENGTH)
		g->pfc.delay = pfc->delay;
	err = buffer_after_setpfc(dev, old_pfc_en, old_delay);
	fw_dcbx_schedule();
	return err;
}

#define MAX_BW_ALLOC 100	/* MLX5E_MAX_BW_ALLOC */
#define VENDOR_TC_GROUP 7	/* MLX5E_VENDOR_TC_GROUP_NUM */
#define LOWEST_PRIO_GROUP 0	/* MLX5E_LOWEST_PRIO_GROUP */

/*
 * Follows mlx5e_dcbnl_ieee_getets(): prio->tc, group and bandwidth are read
 * from the port; a tc below 100% is ETS, a tc of the vendor group (7) with
 * no group 6 in use is vendor, any other keeps the cached tsa. So strict
 * and vendor classes read back at 100% (the port's figure), or at 0% with
 * the 2026 fix (ets_zero_non_ets). With a zero-bandwidth ETS class (group 1
 * holding the non-zero ETS classes) the classes of group 0 read back as 0%.
 * willing is never reported (dcbnl zeroes the struct; mlx5 leaves it).
 */
static int dt_ieee_getets(struct net_device *dev, struct ieee_ets *ets)
{
	bool group6 = false, zero_bw_ets = false;
	int i;

	ets->ets_cap = NPRIO;
	for (i = 0; i < NPRIO; i++) {
		bool ets_tc = g->ets_zero_non_ets ?
			g->tc_tsa[i] == IEEE_8021QAZ_TSA_ETS :
			g->fw_tc_bw[i] < MAX_BW_ALLOC;

		ets->prio_tc[i] = g->fw_prio_tc[i];
		ets->tc_tx_bw[i] = g->fw_tc_bw[i];
		if (ets_tc && g->fw_tc_group[i] == LOWEST_PRIO_GROUP + 1)
			zero_bw_ets = true;
		if (g->fw_tc_group[i] == VENDOR_TC_GROUP - 1)
			group6 = true;
	}
	if (zero_bw_ets)
		for (i = 0; i < NPRIO; i++)
			if (g->fw_tc_group[i] == LOWEST_PRIO_GROUP)
				ets->tc_tx_bw[i] = 0;
	for (i = 0; i < NPRIO; i++) {
		if (ets->tc_tx_bw[i] < MAX_BW_ALLOC)
			g->tc_tsa[i] = IEEE_8021QAZ_TSA_ETS;
		else if (g->fw_tc_group[i] == VENDOR_TC_GROUP && !group6)
			g->tc_tsa[i] = IEEE_8021QAZ_TSA_VENDOR;
	}
	memcpy(ets->tc_tsa, g->tc_tsa, sizeof(ets->tc_tsa));
	if (g->ets_zero_non_ets)
		for (i = 0; i < NPRIO; i++)
			if (ets->tc_tx_bw[i] == MAX_BW_ALLOC &&
			    g->tc_tsa[i] != IEEE_8021QAZ_TSA_ETS)
				ets->tc_tx_bw[i] = 0;
	return 0;
}

/*
 * Follows mlx5e_dcbnl_ieee_setets_core() with mlx5e_build_tc_group() and
 * mlx5e_build_tc_tx_bw(): vendor classes go to group 7, strict classes to
 * one group each above the ETS groups, ETS classes to group 0 (or 1 for the
 * non-zero ones when some ETS class asks for 0%); strict and vendor
 * classes are given 100%, zero-bandwidth ETS classes share 100% (the
 * remainder to the last). The tsa asked for is cached.
 */
static void fw_write_ets(const struct ieee_ets *ets)
{
	bool any_ets = false, ets_zero_bw = false;
	int i, strict_group, n_zero = 0, last_zero = -1, zero_share = 0;

	for (i = 0; i < NPRIO; i++) {
		if (ets->tc_tsa[i] != IEEE_8021QAZ_TSA_ETS)
			continue;
		any_ets = true;
		if (!ets->tc_tx_bw[i]) {
			ets_zero_bw = true;
			n_zero++;
			last_zero = i;
		}
	}
	strict_group = LOWEST_PRIO_GROUP + any_ets + ets_zero_bw;
	if (n_zero)
		zero_share = MAX_BW_ALLOC / n_zero;
	for (i = 0; i < NPRIO; i++) {
		switch (ets->tc_tsa[i]) {
		case IEEE_8021QAZ_TSA_VENDOR:
			g->fw_tc_group[i] = VENDOR_TC_GROUP;
			g->fw_tc_bw[i] = MAX_BW_ALLOC;
			break;
		case IEEE_8021QAZ_TSA_STRICT:
			g->fw_tc_group[i] = strict_group++;
			g->fw_tc_bw[i] = MAX_BW_ALLOC;
			break;
		case IEEE_8021QAZ_TSA_ETS:
			g->fw_tc_group[i] = LOWEST_PRIO_GROUP +
				(ets->tc_tx_bw[i] && ets_zero_bw);
			g->fw_tc_bw[i] = ets->tc_tx_bw[i] ?: zero_share;
			break;
		}
	}
	if (last_zero >= 0)
		g->fw_tc_bw[last_zero] += MAX_BW_ALLOC % n_zero;
	memcpy(g->fw_prio_tc, ets->prio_tc, sizeof(g->fw_prio_tc));
	memcpy(g->tc_tsa, ets->tc_tsa, sizeof(g->tc_tsa));
}

/*
 * Follows mlx5e_dcbnl_ieee_setets() and mlx5e_dbcnl_validate_ets(): a
 * priority's tc must be below 8 and the ETS classes' bandwidth must sum to
 * 100. (mlx5 gives a tsa other than strict, ETS or vendor no group at all,
 * an uninitialised one; the test NIC refuses it instead.)
 */
static int dt_ieee_setets(struct net_device *dev, struct ieee_ets *ets)
{
	bool have_ets = false;
	int i, bw_sum = 0;

	g->calls[C_SETETS]++;
	if (g->refuse_ets)
		return -g->refuse_ets;
	for (i = 0; i < IEEE_8021QAZ_MAX_TCS; i++) {
		if (ets->prio_tc[i] >= NPRIO) {
			netdev_err(dev, "Failed to validate ETS: priority value greater than max(%d)\n",
				   NPRIO);
			return -EINVAL;
		}
	}
	for (i = 0; i < IEEE_8021QAZ_MAX_TCS; i++) {
		switch (ets->tc_tsa[i]) {
		case IEEE_8021QAZ_TSA_STRICT:
		case IEEE_8021QAZ_TSA_VENDOR:
			break;
		case IEEE_8021QAZ_TSA_ETS:
			have_ets = true;
			bw_sum += ets->tc_tx_bw[i];
			break;
		default:
			return -EINVAL;
		}
	}
	if (have_ets && bw_sum != 100) {
		netdev_err(dev, "Failed to validate ETS: BW sum is illegal\n");
		return -EINVAL;
	}
	fw_write_ets(ets);
	fw_dcbx_schedule();
	return 0;
}

/*
 * mlx5e_ets_init() at driver load: every tc vendor at 100%, prio 0 -> tc 1,
 * prio 1 -> tc 0, prio i -> tc i above.
 */
static void init_ets(void)
{
	struct ieee_ets ets = {};
	int i;

	for (i = 0; i < NPRIO; i++) {
		ets.tc_tx_bw[i] = MAX_BW_ALLOC;
		ets.tc_tsa[i] = IEEE_8021QAZ_TSA_VENDOR;
		ets.prio_tc[i] = i;
	}
	ets.prio_tc[0] = 1;
	ets.prio_tc[1] = 0;
	fw_write_ets(&ets);
}

/* ------------------------------------------------- firmware DCBX stand-in */

/*
 * What the ConnectX firmware's DCBX agent does in non-host mode with the
 * port willing: once it hears the switch, the switch's PFC replaces what
 * the host wrote (a pfc_en change toggles the link, as any other).
 */
static void fw_dcbx_work_fn(struct work_struct *w)
{
	rtnl_lock();
	if (g->dev && !g->dcbx_host && g->peer_pfc >= 0 &&
	    g->pfc.pfc_en != (u8)g->peer_pfc) {
		g->pfc.pfc_en = (u8)g->peer_pfc;
		toggle_port_link();
		dcbnl_ieee_notify(g->dev, RTM_SETDCB, DCB_CMD_IEEE_SET, 0, 0);
	}
	rtnl_unlock();
}

static void fw_dcbx_schedule(void)
{
	if (!g->dcbx_host && g->peer_pfc >= 0)
		mod_delayed_work(system_wq, &g->fw_dcbx_work,
				 msecs_to_jiffies(fw_dcbx_ms));
}

static u8 dt_getdcbx(struct net_device *dev)
{
	return g->dcbx_cap;
}

/*
 * Follows mlx5e_dcbnl_setdcbx(): LLD_MANAGED is refused; 0 hands DCBX to
 * the firmware (non-host, willing: mlx5e_dcbnl_set_dcbx_mode) and clears
 * HOST from the reported mode; a mode with HOST switches the firmware to
 * host mode and is reported as given; anything else is refused. 0 =
 * success, 1 = refused.
 */
static u8 dt_setdcbx(struct net_device *dev, u8 mode)
{
	g->calls[C_SETDCBX]++;
	if (g->refuse_dcbx)
		return 1;
	if (mode & DCB_CAP_DCBX_LLD_MANAGED)
		return 1;
	if (!mode) {
		if (!g->dcbx_host)
			return 0;
		g->dcbx_host = false;
		g->dcbx_cap &= ~DCB_CAP_DCBX_HOST;
		fw_dcbx_schedule();
		return 0;
	}
	if (!(mode & DCB_CAP_DCBX_HOST))
		return 1;
	g->dcbx_host = true;
	cancel_delayed_work(&g->fw_dcbx_work);
	g->dcbx_cap = mode;
	return 0;
}

/* Follows mlx5e_dcbnl_ieee_setapp(). */
static int dt_ieee_setapp(struct net_device *dev, struct dcb_app *app)
{
	struct dcb_app temp;
	bool is_new;
	int err;

	g->calls[C_SETAPP]++;
	if (app->selector != IEEE_8021QAZ_APP_SEL_DSCP ||
	    app->protocol >= MAX_DSCP || app->priority >= NPRIO)
		return -EINVAL;
	if (g->refuse_app)
		return -g->refuse_app;

	temp.selector = IEEE_8021QAZ_APP_SEL_DSCP;
	temp.protocol = app->protocol;
	temp.priority = g->dscp2prio[app->protocol];

	if (!g->dscp_app_cnt)
		g->trust_dscp = true;
	g->dscp2prio[app->protocol] = app->priority;

	is_new = dcb_ieee_delapp(dev, &temp) != 0;
	err = dcb_ieee_setapp(dev, app);
	if (err)
		return err;
	if (is_new)
		g->dscp_app_cnt++;
	return 0;
}

/* Follows mlx5e_dcbnl_ieee_delapp(). */
static int dt_ieee_delapp(struct net_device *dev, struct dcb_app *app)
{
	int err;

	g->calls[C_DELAPP]++;
	if (app->selector != IEEE_8021QAZ_APP_SEL_DSCP ||
	    app->protocol >= MAX_DSCP)
		return -EINVAL;
	if (g->refuse_app)
		return -g->refuse_app;
	if (!g->dscp_app_cnt)
		return -ENOENT;
	if (app->priority != g->dscp2prio[app->protocol])
		return -ENOENT;
	err = dcb_ieee_delapp(dev, app);
	if (err)
		return err;
	g->dscp2prio[app->protocol] = 0;
	g->dscp_app_cnt--;
	if (!g->dscp_app_cnt)
		g->trust_dscp = false;
	return 0;
}

/* ----------------------------------------------------------- port buffer */

/*
 * The port buffer as mlx5 handles it in Linux 6.1 (en/port_buffer.c,
 * en_dcbnl.c), for a port whose SBCAM gives 128-byte cells:
 *  - sizes are kept by the port in cells and read back rounded down to one
 *    (port_set_buffer divides by the cell size, mlx5e_port_query_buffer
 *    multiplies);
 *  - a buffer is lossless when a PFC priority maps to it
 *    (update_buffer_lossy);
 *  - a lossless buffer below xoff + max_mtu + one cell is refused with
 *    -ENOMEM (update_xoff_threshold), xoff from the cable length (the PFC
 *    delay), the port speed and the MTU (calculate_xoff);
 *  - sizes summing to more than the port's total are refused with -EINVAL
 *    (mlx5e_port_manual_buffer_config), and so are sizes leaving fewer than
 *    4 cells of shared buffer (port_update_shared_buffer);
 *  - the first setbuffer that changes anything makes the layout manual for
 *    good (mlx5e_dcbnl_setbuffer: priv->dcbx.manual_buffer = true, also when
 *    it then fails), after which a PFC or cable length change recomputes the
 *    lossy bits and thresholds on that layout (mlx5e_dcbnl_ieee_setpfc),
 *    with the same -ENOMEM, returned after pfc_en was written.
 * Before that (the driver's default) the firmware runs the buffers by
 * itself: the stand-in keeps their sizes and derives the lossy bits from PFC.
 */
#define PORT_BUFF_CELL_SZ 128	/* 1 << MLX5E_BUFFER_CELL_SHIFT */
#define MINIMUM_MAX_MTU 9216	/* port_buffer.c */
#define XOFF_MIN_SPEED 40000	/* calculate_xoff(): SPEED_40000 at least */
#define SHARED_MIN_CELLS 4	/* port_update_shared_buffer() */
#define CX_MAX_MTU 9978		/* a ConnectX netdev's max_mtu */

/* the MLX5E_PORT_BUFFER_* changes of mlx5e_port_manual_buffer_config() */
#define BUF_CABLE_LEN BIT(0)
#define BUF_PFC BIT(1)
#define BUF_PRIO2BUFFER BIT(2)
#define BUF_SIZE BIT(3)

/* calculate_xoff() takes the port's speed (PTYS); virtio reports none. */
static unsigned int port_speed_mbps = 100000;
module_param(port_speed_mbps, uint, 0444);
MODULE_PARM_DESC(port_speed_mbps, "port speed (Mb/s) mlx5's xoff is computed for; virtio reports none (default 100000)");

/* struct mlx5e_port_buffer, the part the driver computes with (bytes) */
struct port_buf {
	u32 size[DCBX_MAX_BUFFERS];
	bool lossy[DCBX_MAX_BUFFERS];
};

/* update_buffer_lossy(): lossy unless a PFC priority maps to the buffer */
static bool buffer_lossy(int i, u8 pfc_en, const u8 *prio2buffer)
{
	int p;

	for (p = 0; p < NPRIO; p++)
		if (prio2buffer[p] == i && (pfc_en & BIT(p)))
			return false;
	return true;
}

/*
 * mlx5e_port_query_buffer(): the sizes in bytes of whole cells and the
 * lossy bits; before the layout is manual the firmware's, which follow PFC.
 */
static void query_buffer(struct port_buf *pb)
{
	int i;

	for (i = 0; i < DCBX_MAX_BUFFERS; i++) {
		pb->size[i] = g->buf.cells[i] * PORT_BUFF_CELL_SZ;
		pb->lossy[i] = g->buf.manual ? g->buf.lossy[i] :
			       buffer_lossy(i, g->pfc.pfc_en, g->buf.prio2buffer);
	}
}

/*
 * calculate_xoff(): xoff = (301 + 2.16 * cable [m]) * speed [Gb/s]
 * + 2.72 * MTU [B], at 40 Gb/s at least; integer arithmetic as the driver's.
 */
static u32 calculate_xoff(unsigned int mtu)
{
	u32 speed = max_t(u32, port_speed_mbps, XOFF_MIN_SPEED);

	return (301 + 216 * g->pfc.delay / 100) * speed / 1000 + 272 * mtu / 100;
}

/*
 * mlx5e_port_manual_buffer_config() takes max(netdev->max_mtu,
 * MINIMUM_MAX_MTU). mlx5 sets max_mtu from the port's
 * (mlx5e_set_netdev_mtu_boundaries): 9978 on a ConnectX. virtio_net sets
 * ETH_MAX_MTU, 65535, unless the device offers VIRTIO_NET_F_MTU, which the
 * lab's QEMU (no host_mtu) does not: no port limit at all, so the stand-in
 * takes the ConnectX figure (lower if the netdev's max_mtu is).
 */
static unsigned int buffer_max_mtu(struct net_device *dev)
{
	unsigned int max_mtu = min_t(unsigned int, dev->max_mtu, CX_MAX_MTU);

	return max_t(unsigned int, max_mtu, MINIMUM_MAX_MTU);
}

/* update_xoff_threshold(): a lossless buffer holds xoff + max_mtu + a cell */
static int update_xoff_threshold(const struct port_buf *pb, u32 xoff,
				 unsigned int max_mtu)
{
	int i;

	for (i = 0; i < DCBX_MAX_BUFFERS; i++) {
		if (pb->lossy[i])
			continue;
		if (pb->size[i] < xoff + max_mtu + PORT_BUFF_CELL_SZ) {
			pr_err("buffer_size[%d]=%d is not enough for lossless buffer\n",
			       i, pb->size[i]);
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * update_buffer_lossy(): the lossy bits for pfc_en and the map; when one
 * changes, every lossless buffer is checked again, at the sizes pb has.
 */
static int update_buffer_lossy(struct port_buf *pb, u8 pfc_en,
			       const u8 *prio2buffer, u32 xoff,
			       unsigned int max_mtu, bool *change)
{
	bool changed = false;
	int i, err;

	for (i = 0; i < DCBX_MAX_BUFFERS; i++) {
		bool lossy = buffer_lossy(i, pfc_en, prio2buffer);

		if (lossy != pb->lossy[i]) {
			pb->lossy[i] = lossy;
			changed = true;
		}
	}
	if (!changed)
		return 0;
	err = update_xoff_threshold(pb, xoff, max_mtu);
	if (!err)
		*change = true;
	return err;
}

/*
 * The MLX5E_PORT_BUFFER_SIZE part of mlx5e_port_manual_buffer_config(): a
 * lossless buffer of 0 or a total beyond the port (headroom + spare) is
 * -EINVAL, then the thresholds at the new sizes.
 */
static int update_buffer_size(struct port_buf *pb, const u32 *buffer_size,
			      u32 xoff, unsigned int max_mtu)
{
	u32 headroom = 0, total_used = 0, spare;
	int i;

	for (i = 0; i < DCBX_MAX_BUFFERS; i++)
		headroom += pb->size[i];
	spare = g->buf.total - headroom;
	for (i = 0; i < DCBX_MAX_BUFFERS; i++) {
		if (!pb->lossy[i] && !buffer_size[i])
			return -EINVAL;
		pb->size[i] = buffer_size[i];
		total_used += buffer_size[i];
	}
	if (total_used > headroom && total_used - headroom > spare)
		return -EINVAL;
	return update_xoff_threshold(pb, xoff, max_mtu);
}

/*
 * port_set_buffer(): the sizes go to the port in cells (rounded down), after
 * port_update_shared_buffer() has checked that the shared pools keep 4
 * cells (they hold what the buffers leave of the port; u32 as there).
 */
static int port_set_buffer(const struct port_buf *pb)
{
	u32 cells[DCBX_MAX_BUFFERS], new_cells = 0;
	u32 total_cells = g->buf.total / PORT_BUFF_CELL_SZ;
	int i;

	for (i = 0; i < DCBX_MAX_BUFFERS; i++) {
		cells[i] = pb->size[i] / PORT_BUFF_CELL_SZ;
		new_cells += cells[i];
	}
	if (total_cells - new_cells < SHARED_MIN_CELLS) {
		pr_err("Requested port buffer is too large, not enough space left for shared buffer\n");
		return -EINVAL;
	}
	for (i = 0; i < DCBX_MAX_BUFFERS; i++) {
		g->buf.cells[i] = cells[i];
		g->buf.lossy[i] = pb->lossy[i];
	}
	return 0;
}

/*
 * mlx5e_port_manual_buffer_config() for the changes the stand-in sees: cable
 * length and PFC (setpfc), map and sizes (setbuffer), in the driver's order.
 * Nothing is kept unless all of it passes. mlx5's quirk stays: a new map
 * that makes a buffer lossless is checked at the buffer's old size first.
 */
static int manual_buffer_config(struct net_device *dev, u32 change,
				const u32 *buffer_size, const u8 *prio2buffer)
{
	u32 xoff = calculate_xoff(dev->mtu);
	unsigned int max_mtu = buffer_max_mtu(dev);
	bool update_buffer = false;
	struct port_buf pb;
	int err = 0;

	query_buffer(&pb);
	if (change & BUF_CABLE_LEN) {
		update_buffer = true;
		err = update_xoff_threshold(&pb, xoff, max_mtu);
	}
	if (!err && (change & BUF_PFC))
		err = update_buffer_lossy(&pb, g->pfc.pfc_en, g->buf.prio2buffer,
					  xoff, max_mtu, &update_buffer);
	if (!err && (change & BUF_PRIO2BUFFER))
		err = update_buffer_lossy(&pb, g->pfc.pfc_en, prio2buffer, xoff,
					  max_mtu, &update_buffer);
	if (!err && (change & BUF_SIZE)) {
		update_buffer = true;
		err = update_buffer_size(&pb, buffer_size, xoff, max_mtu);
	}
	/* the thresholds follow a new xoff (an MTU change since) */
	if (!err && !update_buffer && xoff != g->buf.xoff) {
		update_buffer = true;
		err = update_xoff_threshold(&pb, xoff, max_mtu);
	}
	if (!err && update_buffer)
		err = port_set_buffer(&pb);
	if (err)
		return err;
	g->buf.xoff = xoff;
	if (change & BUF_PRIO2BUFFER)
		memcpy(g->buf.prio2buffer, prio2buffer, NPRIO);
	return 0;
}

/*
 * The buffer side of mlx5e_dcbnl_ieee_setpfc(), once pfc_en is written and
 * the link toggled: with a manual layout, mlx5e_port_manual_buffer_config()
 * for what changed (also for nothing: a new xoff), and on an error the old
 * cable length back; the error is returned, pfc_en stays written.
 */
static int buffer_after_setpfc(struct net_device *dev, u8 old_pfc_en, u16 old_delay)
{
	u32 change = 0;
	int err;

	if (!buffer_support || !g->buf.manual)
		return 0;
	if (g->pfc.pfc_en != old_pfc_en)
		change |= BUF_PFC;
	if (g->pfc.delay != old_delay)
		change |= BUF_CABLE_LEN;
	err = manual_buffer_config(dev, change, NULL, NULL);
	if (err && (change & BUF_CABLE_LEN))
		g->pfc.delay = old_delay;
	return err;
}

/*
 * Follows mlx5e_dcbnl_getbuffer(): the map, the sizes as the port keeps
 * them (whole cells) and the port's total.
 */
static int dt_getbuffer(struct net_device *dev, struct dcbnl_buffer *buf)
{
	int i;

	if (!buffer_support)
		return -EOPNOTSUPP;
	memcpy(buf->prio2buffer, g->buf.prio2buffer, sizeof(buf->prio2buffer));
	for (i = 0; i < DCBX_MAX_BUFFERS; i++)
		buf->buffer_size[i] = g->buf.cells[i] * PORT_BUFF_CELL_SZ;
	buf->total_size = g->buf.total;
	return 0;
}

/*
 * Follows mlx5e_dcbnl_setbuffer(): the map and the sizes are compared with
 * the port's (a size that is no multiple of a cell always differs); if any
 * differs the layout turns manual for good and goes through
 * mlx5e_port_manual_buffer_config(). (dcbnl_ieee_set() refuses a buffer
 * index of 8 or more before; checked again here.)
 */
static int dt_setbuffer(struct net_device *dev, struct dcbnl_buffer *buf)
{
	u32 change = 0;
	struct port_buf pb;
	int i;

	if (!buffer_support)
		return -EOPNOTSUPP;
	g->calls[C_SETBUFFER]++;
	if (g->refuse_buffer)
		return -g->refuse_buffer;
	for (i = 0; i < NPRIO; i++) {
		if (buf->prio2buffer[i] >= DCBX_MAX_BUFFERS)
			return -EINVAL;
		if (buf->prio2buffer[i] != g->buf.prio2buffer[i])
			change |= BUF_PRIO2BUFFER;
	}
	for (i = 0; i < DCBX_MAX_BUFFERS; i++)
		if (buf->buffer_size[i] != g->buf.cells[i] * PORT_BUFF_CELL_SZ)
			change |= BUF_SIZE;
	if (!change)
		return 0;
	if (!g->buf.manual) {
		/* the port keeps the lossy bits the firmware had */
		query_buffer(&pb);
		memcpy(g->buf.lossy, pb.lossy, sizeof(g->buf.lossy));
		g->buf.manual = true;
	}
	return manual_buffer_config(dev, change, buf->buffer_size, buf->prio2buffer);
}

static const struct dcbnl_rtnl_ops dt_dcbnl_ops = {
	.ieee_getpfc = dt_ieee_getpfc,
	.ieee_setpfc = dt_ieee_setpfc,
	.ieee_getets = dt_ieee_getets,
	.ieee_setets = dt_ieee_setets,
	.ieee_setapp = dt_ieee_setapp,
	.ieee_delapp = dt_ieee_delapp,
	.getdcbx = dt_getdcbx,
	.setdcbx = dt_setdcbx,
	.dcbnl_getbuffer = dt_getbuffer,
	.dcbnl_setbuffer = dt_setbuffer,
};

/* ------------------------------------------------------ bnxt_en (Broadcom) */

/*
 * bnxt_en as bnxt_dcb.c has it in Linux 6.1.192, for a PF whose firmware
 * reports 8 CoS queues of which queues 1 and 2 have a lossless profile
 * (BNXT_LLQ) and 2 lossless queues at most (max_lltc):
 *  - dcbx_cap at load (bnxt_dcb_init): IEEE, plus HOST without the
 *    firmware LLDP agent, plus LLD_MANAGED with the firmware DCBX agent
 *    (dcbx_mode=firmware here); every set op is -EINVAL without HOST;
 *  - getets/getpfc (bnxt_dcbnl_ieee_getets, _getpfc): in host mode the
 *    driver's cached copy of the last accepted set, or nothing (zeroes,
 *    and getpfc's counters unread) before the first; in firmware mode the
 *    firmware's (queried once, then cached);
 *  - setets (bnxt_ets_validate): a priority's TC above max_tc, a tsa other
 *    than strict or ETS below the highest TC in use (-ENOTSUPP), ETS
 *    bandwidth over 100, or a 0% ETS class when they sum to 100 (-EINVAL)
 *    are refused; a change in the number of TCs (bnxt_setup_mq_tc) closes
 *    and opens the NIC;
 *  - setpfc (bnxt_hwrm_queue_pfc_cfg): -EINVAL before any ETS was set, or
 *    for more lossless TCs than max_lltc; a lossless TC on a queue without
 *    a lossless profile remaps the queues (bnxt_queue_remap: the NIC closed
 *    and opened); delay and mbc are cached as given;
 *  - setapp/delapp: the kernel's app table (dcb_ieee_setapp, which adds a
 *    second entry for a DSCP mapped to another priority; dcb_ieee_delapp)
 *    and, for DSCP, the firmware's DSCP table (bnxt_hwrm_queue_dscp2pri_cfg:
 *    add writes the DSCP's priority; delete writes mask 0 for the DSCP,
 *    which the stand-in takes as "unmapped" whatever the priority);
 *  - setdcbx (bnxt_dcbnl_setdcbx): 1 (refused) under LLD_MANAGED, for HOST
 *    with CEE or without IEEE; no buffer ops, no tunable.
 */
#define BNXT_MAX_TC 8
#define BNXT_MAX_LLTC 2
static const bool bnxt_llq[BNXT_MAX_TC] = { [1] = true, [2] = true };

static void bnxt_close_open(void)
{
	/* bnxt_close_nic + bnxt_open_nic: the carrier goes down and up */
	toggle_port_link();
}

static int bx_getets(struct net_device *dev, struct ieee_ets *ets)
{
	ets->ets_cap = BNXT_MAX_TC;
	if (!g->bx.have_ets) {
		if (g->dcbx_cap & DCB_CAP_DCBX_HOST)
			return 0;
		g->bx.ets = g->bx.fw_ets;
		g->bx.have_ets = true;
	}
	ets->cbs = g->bx.ets.cbs;
	memcpy(ets->tc_tx_bw, g->bx.ets.tc_tx_bw, sizeof(ets->tc_tx_bw));
	memcpy(ets->tc_rx_bw, g->bx.ets.tc_rx_bw, sizeof(ets->tc_rx_bw));
	memcpy(ets->tc_tsa, g->bx.ets.tc_tsa, sizeof(ets->tc_tsa));
	memcpy(ets->prio_tc, g->bx.ets.prio_tc, sizeof(ets->prio_tc));
	return 0;
}

static int bx_ets_validate(struct net_device *dev, const struct ieee_ets *ets, u8 *tc)
{
	int i, total = 0;
	bool zero = false;
	u8 max_tc = 0;

	for (i = 0; i < IEEE_8021QAZ_MAX_TCS; i++) {
		if (ets->prio_tc[i] > BNXT_MAX_TC) {
			netdev_err(dev, "priority to TC mapping exceeds TC count %d\n",
				   ets->prio_tc[i]);
			return -EINVAL;
		}
		if (ets->prio_tc[i] > max_tc)
			max_tc = ets->prio_tc[i];
		if ((ets->tc_tx_bw[i] || ets->tc_tsa[i]) && i > BNXT_MAX_TC)
			return -EINVAL;
	}
	for (i = 0; i < max_tc; i++) {
		switch (ets->tc_tsa[i]) {
		case IEEE_8021QAZ_TSA_STRICT:
			break;
		case IEEE_8021QAZ_TSA_ETS:
			total += ets->tc_tx_bw[i];
			zero = zero || !ets->tc_tx_bw[i];
			break;
		default:
			return -ENOTSUPP;
		}
	}
	if (total > 100) {
		netdev_warn(dev, "rejecting ETS config exceeding available bandwidth\n");
		return -EINVAL;
	}
	if (zero && total == 100) {
		netdev_warn(dev, "rejecting ETS config starving a TC\n");
		return -EINVAL;
	}
	*tc = max_tc >= BNXT_MAX_TC ? BNXT_MAX_TC : max_tc + 1;
	return 0;
}

static int bx_setets(struct net_device *dev, struct ieee_ets *ets)
{
	u8 num_tc = 0;
	int err, i;

	g->calls[C_SETETS]++;
	if (!(g->dcbx_cap & DCB_CAP_DCBX_VER_IEEE) || !(g->dcbx_cap & DCB_CAP_DCBX_HOST))
		return -EINVAL;
	if (g->refuse_ets)
		return -g->refuse_ets;
	err = bx_ets_validate(dev, ets, &num_tc);
	if (err)
		return err;
	if (!g->bx.have_ets) {
		for (i = 0; i < IEEE_8021QAZ_MAX_TCS; i++)
			g->bx.ets.prio_tc[i] = IEEE_8021QAZ_MAX_TCS;
		g->bx.have_ets = true;
	}
	/* bnxt_setup_mq_tc: a new TC count closes and opens a running NIC */
	if (num_tc != g->bx.num_tc) {
		g->bx.num_tc = num_tc;
		if (netif_running(dev))
			bnxt_close_open();
	}
	g->bx.ets = *ets;
	return 0;
}

static int bx_getpfc(struct net_device *dev, struct ieee_pfc *pfc)
{
	int p;

	pfc->pfc_cap = BNXT_MAX_LLTC;
	if (!g->bx.have_pfc) {
		if (g->dcbx_cap & DCB_CAP_DCBX_HOST)
			return 0;
		g->bx.have_pfc = true;
		g->bx.pfc.pfc_en = g->peer_pfc >= 0 ? (u8)g->peer_pfc : 0;
	}
	pfc->pfc_en = g->bx.pfc.pfc_en;
	pfc->mbc = g->bx.pfc.mbc;
	pfc->delay = g->bx.pfc.delay;
	for (p = 0; p < NPRIO; p++) {
		pfc->requests[p] = atomic64_read(&g->prio_stats[PS_TX_PAUSE][p]);
		pfc->indications[p] = atomic64_read(&g->prio_stats[PS_RX_PAUSE][p]);
	}
	return 0;
}

/* bnxt_queue_remap: lossless TCs onto lossless queues first, in order */
static void bx_queue_remap(unsigned int lltc_mask)
{
	unsigned long qmap = 0;
	int i, j;

	for (i = 0, j = 0; i < BNXT_MAX_TC && j < BNXT_MAX_TC;) {
		if (lltc_mask & BIT(i)) {
			if (bnxt_llq[j]) {
				g->bx.tc_to_qidx[i] = j;
				__set_bit(j, &qmap);
				i++;
			}
			j++;
			continue;
		}
		i++;
	}
	for (i = 0, j = 0; i < BNXT_MAX_TC; i++) {
		if (lltc_mask & BIT(i))
			continue;
		j = find_next_zero_bit(&qmap, BNXT_MAX_TC, j);
		g->bx.tc_to_qidx[i] = j;
		__set_bit(j, &qmap);
		j++;
	}
	if (netif_running(g->dev))
		bnxt_close_open();
}

static int bx_setpfc(struct net_device *dev, struct ieee_pfc *pfc)
{
	unsigned int tc_mask = 0;
	int i, pri, lltc = 0;

	g->calls[C_SETPFC]++;
	if (!(g->dcbx_cap & DCB_CAP_DCBX_VER_IEEE) || !(g->dcbx_cap & DCB_CAP_DCBX_HOST))
		return -EINVAL;
	if (g->refuse_pfc)
		return -g->refuse_pfc;
	/* bnxt_hwrm_queue_pfc_cfg */
	if (!g->bx.have_ets)
		return -EINVAL;
	for (i = 0; i < BNXT_MAX_TC; i++) {
		for (pri = 0; pri < IEEE_8021QAZ_MAX_TCS; pri++)
			if ((pfc->pfc_en & BIT(pri)) && g->bx.ets.prio_tc[pri] == i)
				tc_mask |= BIT(i);
		if (tc_mask & BIT(i))
			lltc++;
	}
	if (lltc > BNXT_MAX_LLTC)
		return -EINVAL;
	for (i = 0; i < BNXT_MAX_TC; i++)
		if ((tc_mask & BIT(i)) && !bnxt_llq[g->bx.tc_to_qidx[i]]) {
			bx_queue_remap(tc_mask);
			break;
		}
	g->bx.pfc = *pfc;
	g->bx.have_pfc = true;
	g->pfc.pfc_en = pfc->pfc_en;	/* the storm's and pfc_visible's view */
	return 0;
}

static int bx_setapp(struct net_device *dev, struct dcb_app *app)
{
	int err;

	g->calls[C_SETAPP]++;
	if (!(g->dcbx_cap & DCB_CAP_DCBX_VER_IEEE) || !(g->dcbx_cap & DCB_CAP_DCBX_HOST))
		return -EINVAL;
	/* bnxt_dcbnl_ieee_dscp_app_prep: max_dscp_value 63 */
	if (app->selector == IEEE_8021QAZ_APP_SEL_DSCP && app->protocol >= MAX_DSCP)
		return -EINVAL;
	if (g->refuse_app)
		return -g->refuse_app;
	err = dcb_ieee_setapp(dev, app);
	if (err)
		return err;
	if (app->selector == IEEE_8021QAZ_APP_SEL_DSCP) {
		g->dscp2prio[app->protocol] = app->priority;
		g->fw_dscp_valid |= BIT_ULL(app->protocol);
	}
	return 0;
}

static int bx_delapp(struct net_device *dev, struct dcb_app *app)
{
	int err;

	g->calls[C_DELAPP]++;
	if (!(g->dcbx_cap & DCB_CAP_DCBX_VER_IEEE) || !(g->dcbx_cap & DCB_CAP_DCBX_HOST))
		return -EINVAL;
	if (app->selector == IEEE_8021QAZ_APP_SEL_DSCP && app->protocol >= MAX_DSCP)
		return -EINVAL;
	if (g->refuse_app)
		return -g->refuse_app;
	err = dcb_ieee_delapp(dev, app);
	if (err)
		return err;
	if (app->selector == IEEE_8021QAZ_APP_SEL_DSCP)
		g->fw_dscp_valid &= ~BIT_ULL(app->protocol);
	return 0;
}

static u8 bx_setdcbx(struct net_device *dev, u8 mode)
{
	g->calls[C_SETDCBX]++;
	if (g->refuse_dcbx)
		return 1;
	/* "All firmware DCBX settings are set in NVRAM" */
	if (g->dcbx_cap & DCB_CAP_DCBX_LLD_MANAGED)
		return 1;
	if (mode & DCB_CAP_DCBX_HOST) {
		if ((mode & DCB_CAP_DCBX_VER_CEE) || !(mode & DCB_CAP_DCBX_VER_IEEE))
			return 1;
	}
	g->dcbx_cap = mode;
	g->dcbx_host = !!(mode & DCB_CAP_DCBX_HOST);
	return 0;
}

static const struct dcbnl_rtnl_ops bx_dcbnl_ops = {
	.ieee_getets = bx_getets,
	.ieee_setets = bx_setets,
	.ieee_getpfc = bx_getpfc,
	.ieee_setpfc = bx_setpfc,
	.ieee_setapp = bx_setapp,
	.ieee_delapp = bx_delapp,
	.getdcbx = dt_getdcbx,
	.setdcbx = bx_setdcbx,
};

/* ----------------------------------------------------------- ice (Intel) */

/*
 * ice as ice_dcb_nl.c and ice_dcb_lib.c have it in Linux 6.1.192, for an
 * E810 port with 8 TCs (maxtc) and the DSCP feature (ICE_F_DSCP):
 *  - the firmware LLDP agent (private flag fw-lldp-agent, ice_set_priv_flags):
 *    on, dcbx_cap is LLD_MANAGED|IEEE and setets, setpfc, setapp and
 *    delapp are -EINVAL, setdcbx refused; turning it off stops the agent,
 *    takes the software default configuration (ice_init_pf_dcb ->
 *    ice_dcb_sw_dflt_cfg) and reports HOST|IEEE; turning it on is
 *    -EOPNOTSUPP in DSCP mode, else LLD_MANAGED and a link reset;
 *  - the software default (ice_dcb_sw_dflt_cfg): ETS willing, TC 0 at 100%
 *    ETS, the other TCs strict at 0%, every priority on TC 0; PFC willing,
 *    pfc_cap 8, none enabled;
 *  - getets/getpfc (ice_dcbnl_getets, ice_dcbnl_getpfc) read the port's
 *    local configuration: what was last applied, willing included; the PFC
 *    delay is the port's register (PRTDCB_GENC.PFCLDA, 0 here), never what
 *    was set; requests and indications are the XOFF counters;
 *  - setets (ice_dcbnl_setets, ice_dcb_bwchk): the bandwidth of the TCs in
 *    use (contiguous from TC 0) must sum to 100, or to 0 (TC 0 then 100);
 *    in DSCP mode the priority-to-TC map cannot change and is left as it
 *    is, silently; setpfc (ice_dcbnl_setpfc) keeps pfc_en and pfc_cap (0:
 *    maxtc), not the delay. A change is committed with a reset of the
 *    netdev (ice_pf_dcb_cfg, ice_dcbnl_devreset: dev_close and dev_open);
 *  - setapp (ice_dcbnl_setapp): DSCP entries only (-EINVAL otherwise); a
 *    priority of maxtc or above, or a DSCP already mapped (delete it
 *    first), -EINVAL; the first entry switches the port to L3 DSCP mode,
 *    which resets ETS to TC 0 at 100% with priority i on TC i;
 *  - delapp (ice_dcbnl_delapp): an entry not in the table is refused; the
 *    last one switches back to L2 VLAN mode and the software default.
 */
#define ICE_MAXTC 8

static void ice_sw_default(void)
{
	memset(&g->ic.ets, 0, sizeof(g->ic.ets));
	g->ic.ets.willing = 1;
	g->ic.ets.ets_cap = ICE_MAXTC;
	g->ic.ets.tc_tx_bw[0] = 100;
	g->ic.ets.tc_tsa[0] = IEEE_8021QAZ_TSA_ETS;
	g->ic.pfc_willing = 1;
	g->ic.pfc_cap = ICE_MAXTC;
	g->ic.pfc_en = 0;
	g->ic.mbc = 0;
}

static void ice_devreset(void)
{
	/* ice_dcbnl_devreset: dev_close + dev_open */
	toggle_port_link();
}

static int ice_getets(struct net_device *dev, struct ieee_ets *ets)
{
	ets->willing = g->ic.ets.willing;
	ets->ets_cap = ICE_MAXTC;
	ets->cbs = g->ic.ets.cbs;
	memcpy(ets->tc_tx_bw, g->ic.ets.tc_tx_bw, sizeof(ets->tc_tx_bw));
	memcpy(ets->tc_rx_bw, g->ic.ets.tc_tx_bw, sizeof(ets->tc_rx_bw));
	memcpy(ets->tc_tsa, g->ic.ets.tc_tsa, sizeof(ets->tc_tsa));
	memcpy(ets->prio_tc, g->ic.ets.prio_tc, sizeof(ets->prio_tc));
	return 0;
}

/* ice_dcb_get_num_tc: TCs in use, contiguous from TC 0 (1 otherwise) */
static int ice_num_tc(const u8 *prio_tc)
{
	u8 used = 0;
	bool gap = false;
	int i, n = 0;

	for (i = 0; i < NPRIO; i++)
		used |= BIT(prio_tc[i]);
	for (i = 0; i < IEEE_8021QAZ_MAX_TCS; i++) {
		if (used & BIT(i)) {
			if (gap)
				return 1;
			n++;
		} else {
			gap = true;
		}
	}
	return n ?: 1;
}

/* ice_dcb_bwchk */
static int ice_bwchk(struct net_device *dev, struct ieee_ets *e)
{
	int i, n = ice_num_tc(e->prio_tc), total = 0;

	if (n == 1) {
		e->tc_tx_bw[0] = 100;
		return 0;
	}
	for (i = 0; i < n; i++)
		total += e->tc_tx_bw[i];
	if (!total) {
		e->tc_tx_bw[0] = 100;
	} else if (total != 100) {
		netdev_err(dev, "Invalid config, total bandwidth must equal 100\n");
		return -EINVAL;
	}
	return 0;
}

static bool ice_lld_managed(void)
{
	return g->dcbx_cap & DCB_CAP_DCBX_LLD_MANAGED;
}

static int ice_setets(struct net_device *dev, struct ieee_ets *ets)
{
	struct ieee_ets n = g->ic.ets;
	int i, bw = 0;

	g->calls[C_SETETS]++;
	if (ice_lld_managed() || !(g->dcbx_cap & DCB_CAP_DCBX_VER_IEEE))
		return -EINVAL;
	if (g->refuse_ets)
		return -g->refuse_ets;
	n.willing = ets->willing;
	n.cbs = ets->cbs;
	for (i = 0; i < IEEE_8021QAZ_MAX_TCS; i++) {
		n.tc_tx_bw[i] = ets->tc_tx_bw[i];
		bw += ets->tc_tx_bw[i];
		n.tc_tsa[i] = ets->tc_tsa[i];
		if (!g->ic.dscp_mode)	/* in DSCP mode up->tc cannot change */
			n.prio_tc[i] = ets->prio_tc[i];
	}
	if (ice_bwchk(dev, &n))
		return -EINVAL;
	if (!bw)
		n.tc_tx_bw[0] = 100;
	if (memcmp(&n, &g->ic.ets, sizeof(n))) {
		g->ic.ets = n;
		ice_devreset();
	}
	return 0;
}

static int ice_getpfc(struct net_device *dev, struct ieee_pfc *pfc)
{
	int p;

	pfc->pfc_cap = g->ic.pfc_cap;
	pfc->pfc_en = g->ic.pfc_en;
	pfc->mbc = g->ic.mbc;
	pfc->delay = 0;	/* PRTDCB_GENC.PFCLDA */
	for (p = 0; p < NPRIO; p++) {
		pfc->requests[p] = atomic64_read(&g->prio_stats[PS_TX_PAUSE][p]);
		pfc->indications[p] = atomic64_read(&g->prio_stats[PS_RX_PAUSE][p]);
	}
	return 0;
}

static int ice_setpfc(struct net_device *dev, struct ieee_pfc *pfc)
{
	u8 cap;

	g->calls[C_SETPFC]++;
	if (ice_lld_managed() || !(g->dcbx_cap & DCB_CAP_DCBX_VER_IEEE))
		return -EINVAL;
	if (g->refuse_pfc)
		return -g->refuse_pfc;
	cap = pfc->pfc_cap ?: ICE_MAXTC;
	if (cap != g->ic.pfc_cap || pfc->pfc_en != g->ic.pfc_en) {
		g->ic.pfc_cap = cap;
		g->ic.pfc_en = pfc->pfc_en;
		g->pfc.pfc_en = pfc->pfc_en;
		ice_devreset();
	}
	return 0;
}

static int ice_setapp(struct net_device *dev, struct dcb_app *app)
{
	int err, i;

	g->calls[C_SETAPP]++;
	if (app->selector != IEEE_8021QAZ_APP_SEL_DSCP)
		return -EINVAL;
	if (ice_lld_managed()) {
		netdev_err(dev, "can't do DSCP QoS when FW DCB agent active\n");
		return -EINVAL;
	}
	if (!(g->dcbx_cap & DCB_CAP_DCBX_VER_IEEE))
		return -EINVAL;
	if (app->protocol >= MAX_DSCP || app->priority >= ICE_MAXTC)
		return -EINVAL;
	if (g->refuse_app)
		return -g->refuse_app;
	err = dcb_ieee_setapp(dev, app);
	if (err)
		return err;
	if (g->fw_dscp_valid & BIT_ULL(app->protocol)) {
		netdev_err(dev, "DSCP value 0x%04X already user mapped\n", app->protocol);
		dcb_ieee_delapp(dev, app);
		return -EINVAL;
	}
	g->fw_dscp_valid |= BIT_ULL(app->protocol);
	if (!g->ic.dscp_mode) {
		netdev_info(dev, "Switched QoS to L3 DSCP mode\n");
		g->ic.dscp_mode = true;
		g->ic.ets.willing = 0;
		g->ic.pfc_cap = ICE_MAXTC;
		g->ic.pfc_willing = 0;
		for (i = 0; i < ICE_MAXTC; i++) {
			g->ic.ets.tc_tx_bw[i] = i ? 0 : 100;
			g->ic.ets.tc_tsa[i] = IEEE_8021QAZ_TSA_ETS;
			g->ic.ets.prio_tc[i] = i;
		}
	}
	g->dscp2prio[app->protocol] = app->priority;
	ice_devreset();
	return 0;
}

static int ice_delapp(struct net_device *dev, struct dcb_app *app)
{
	int err;

	g->calls[C_DELAPP]++;
	if (ice_lld_managed()) {
		netdev_err(dev, "can't delete DSCP netlink app when FW DCB agent is active\n");
		return -EINVAL;
	}
	if (g->refuse_app)
		return -g->refuse_app;
	err = dcb_ieee_delapp(dev, app);
	if (err)
		return err;
	if (app->selector != IEEE_8021QAZ_APP_SEL_DSCP || app->protocol >= MAX_DSCP ||
	    !(g->fw_dscp_valid & BIT_ULL(app->protocol)) ||
	    g->dscp2prio[app->protocol] != app->priority)
		return -EINVAL;	/* not in the port's app list */
	g->fw_dscp_valid &= ~BIT_ULL(app->protocol);
	g->dscp2prio[app->protocol] = app->protocol % 8;
	if (!g->fw_dscp_valid && g->ic.dscp_mode) {
		netdev_info(dev, "Switched QoS to L2 VLAN mode\n");
		g->ic.dscp_mode = false;
		ice_sw_default();
		g->pfc.pfc_en = 0;
	}
	ice_devreset();
	return 0;
}

static u8 ice_setdcbx(struct net_device *dev, u8 mode)
{
	g->calls[C_SETDCBX]++;
	if (g->refuse_dcbx)
		return 1;
	if (g->ic.fw_lldp)	/* ICE_DCB_NO_HW_CHG */
		return 1;
	if ((mode & DCB_CAP_DCBX_LLD_MANAGED) ||
	    ((mode & DCB_CAP_DCBX_VER_IEEE) && (mode & DCB_CAP_DCBX_VER_CEE)) ||
	    !(mode & DCB_CAP_DCBX_HOST))
		return 1;
	if (mode == g->dcbx_cap || g->ic.dscp_mode)
		return 1;
	g->dcbx_cap = mode;
	return 0;
}

static const struct dcbnl_rtnl_ops ice_dcbnl_ops = {
	.ieee_getets = ice_getets,
	.ieee_setets = ice_setets,
	.ieee_getpfc = ice_getpfc,
	.ieee_setpfc = ice_setpfc,
	.ieee_setapp = ice_setapp,
	.ieee_delapp = ice_delapp,
	.getdcbx = dt_getdcbx,
	.setdcbx = ice_setdcbx,
};

/* The firmware LLDP agent on (dcbx_mode=firmware at load) or off. */
static void ice_set_fw_lldp(bool on)
{
	g->ic.fw_lldp = on;
	g->dcbx_host = !on;
	g->dcbx_cap = (on ? DCB_CAP_DCBX_LLD_MANAGED : DCB_CAP_DCBX_HOST) |
		      DCB_CAP_DCBX_VER_IEEE;
	ice_sw_default();
	/* with the agent on, the port runs what the switch's DCBX gave it */
	if (on && g->peer_pfc >= 0)
		g->ic.pfc_en = (u8)g->peer_pfc;
	g->pfc.pfc_en = g->ic.pfc_en;
}

/* ice_gstrings_priv_flags, in ice's order (the first two of six) */
static const char *const ice_priv_flag_names[2] = { "link-down-on-close", "fw-lldp-agent" };
#define ICE_PRIV_FW_LLDP BIT(1)

static u32 ice_get_priv_flags(struct net_device *dev)
{
	return g->ic.fw_lldp ? ICE_PRIV_FW_LLDP : 0;
}

/* ice_set_priv_flags: the fw-lldp-agent part */
static int ice_set_priv_flags(struct net_device *dev, u32 flags)
{
	bool on = flags & ICE_PRIV_FW_LLDP;

	if (flags & ~(u32)(BIT(ARRAY_SIZE(ice_priv_flag_names)) - 1))
		return -EINVAL;
	if (on == g->ic.fw_lldp)
		return 0;
	if (on && g->ic.dscp_mode) {
		netdev_err(dev, "QoS in L3 DSCP mode, FW Agent not allowed to start\n");
		return -EOPNOTSUPP;
	}
	ice_set_fw_lldp(on);
	/* off: ice_init_pf_dcb re-inits DCB (VSIs down and up); on: ice_nway_reset */
	ice_devreset();
	dcbnl_ieee_notify(dev, RTM_SETDCB, DCB_CMD_IEEE_SET, 0, 0);
	return 0;
}

/* ------------------------------------------------------ per-driver setup */

static void dt_get_drvinfo(struct net_device *dev, struct ethtool_drvinfo *info)
{
	if (g->orig_ethtool_ops && g->orig_ethtool_ops->get_drvinfo)
		g->orig_ethtool_ops->get_drvinfo(dev, info);
	strscpy(info->driver, pers_driver[pers], sizeof(info->driver));
	/* in-tree drivers report the kernel's release as their version */
	strscpy(info->version, init_utsname()->release, sizeof(info->version));
	snprintf(info->fw_version, sizeof(info->fw_version), "dcbtest-%s", pers_param[pers]);
}

static void pers_init_state(void)
{
	int i;

	g->fw_dscp_valid = 0;
	switch (pers) {
	case P_BNXT:
		memset(&g->bx, 0, sizeof(g->bx));
		for (i = 0; i < BNXT_MAX_TC; i++)
			g->bx.tc_to_qidx[i] = i;
		g->bx.num_tc = 0;	/* netdev_get_num_tc() after probe */
		/* what the firmware's DCBX agent runs: every priority on TC 0, ETS 100% */
		g->bx.fw_ets.tc_tsa[0] = IEEE_8021QAZ_TSA_ETS;
		g->bx.fw_ets.tc_tx_bw[0] = 100;
		g->dcbx_cap = DCB_CAP_DCBX_VER_IEEE |
			(g->dcbx_host ? DCB_CAP_DCBX_HOST : DCB_CAP_DCBX_LLD_MANAGED);
		g->pfc.pfc_en = 0;
		break;
	case P_ICE:
		memset(&g->ic, 0, sizeof(g->ic));
		ice_set_fw_lldp(!g->dcbx_host);
		break;
	default:
		break;
	}
}

/* ----------------------------------------------------------------- storm */

/*
 * How the paused queue behaves, with the storm_* fields of struct dcbtest
 * (under storm_lock; store_storm sets them on every write):
 *  - drain (incast congestion): it still transmits while paused,
 *    tx_prio<PRIO>_packets climbs by STORM_DRAIN_PKTS per tick (and
 *    tx_prio<PRIO>_bytes by that many 1024-byte packets);
 *  - stuck (a storm, the default): it does not, those counters stay flat.
 * storm_stall_ms: how long a stuck storm has lasted. A stuck storm that
 * sends pauses (tx, both) stands for the NIC's own receive side stalling:
 * once the stall reaches the PFC storm prevention timeout (when set), it
 * counts one tx_pause_storm_error_events, as mlx5's firmware counts
 * device_stall_critical_watermark_cnt when a stall crosses the critical
 * watermark (mlx5e_set_pfc_prevention_tout: critical = the timeout). The
 * pause frames go on being counted (prevention's stop is not modelled).
 */
#define STORM_DRAIN_PKTS 64
#define STORM_DRAIN_PKT_BYTES 1024
static bool storm_drain;
static unsigned int storm_stall_ms;

static void storm_work_fn(struct work_struct *w)
{
	unsigned int tout = READ_ONCE(g->pfc_prevention_tout);
	bool on, rx, tx, drain, critical = false;
	unsigned long flags;
	u64 frames, dur;
	int p;

	/* store_storm changes a running storm without stopping this work */
	spin_lock_irqsave(&g->storm_lock, flags);
	on = g->storm_on;
	p = g->storm_prio;
	rx = g->storm_rx;
	tx = g->storm_tx;
	drain = storm_drain;
	g->storm_carry += (u64)g->storm_rate * STORM_TICK_MS;
	frames = div_u64(g->storm_carry, 1000);
	g->storm_carry -= frames * 1000;
	if (on && !drain && tx) {
		critical = tout && storm_stall_ms < tout &&
			   storm_stall_ms + STORM_TICK_MS >= tout;
		storm_stall_ms += STORM_TICK_MS;
	}
	spin_unlock_irqrestore(&g->storm_lock, flags);
	if (!on)
		return;

	/* one pause quantum of 65535 x 512 bit times at 100G is ~335 us */
	dur = frames * 335;
	if (rx) {
		atomic64_add(frames, &g->prio_stats[PS_RX_PAUSE][p]);
		atomic64_add(dur, &g->prio_stats[PS_RX_PAUSE_DURATION][p]);
	}
	if (tx) {
		atomic64_add(frames, &g->prio_stats[PS_TX_PAUSE][p]);
		atomic64_add(dur, &g->prio_stats[PS_TX_PAUSE_DURATION][p]);
	}
	if (drain) {
		atomic64_add(STORM_DRAIN_PKTS, &g->prio_stats[PS_TX_PACKETS][p]);
		atomic64_add(STORM_DRAIN_PKTS * STORM_DRAIN_PKT_BYTES,
			     &g->prio_stats[PS_TX_BYTES][p]);
	}
	if (critical)
		atomic64_inc(&g->global_stats[GS_TX_PAUSE_STORM_ERROR]);
	schedule_delayed_work(&g->storm_work, msecs_to_jiffies(STORM_TICK_MS));
}

/* ----------------------------------------------------------------- sysfs */

static ssize_t ctl_show(struct kobject *kobj, struct kobj_attribute *attr,
			char *buf);
static ssize_t ctl_store(struct kobject *kobj, struct kobj_attribute *attr,
			 const char *buf, size_t count);

#define CTL_RO(n) struct kobj_attribute ctl_##n = __ATTR(n, 0444, ctl_show, NULL)
#define CTL_RW(n) struct kobj_attribute ctl_##n = __ATTR(n, 0644, ctl_show, ctl_store)
#define CTL_WO(n) struct kobj_attribute ctl_##n = __ATTR(n, 0200, NULL, ctl_store)

static CTL_RO(trust);
static CTL_RW(link_flaps);
static CTL_RW(flap_ms);
static CTL_RW(refuse_pfc);
static CTL_RW(refuse_ets);
static CTL_RW(refuse_app);
static CTL_RW(refuse_dcbx);
static CTL_RW(refuse_buffer);
static CTL_RW(refuse_cc);
static CTL_RW(refuse_tunable);
static CTL_RW(storm);
static CTL_WO(set_counter);
static CTL_RW(stats_mode);
static CTL_RW(calls);
static CTL_RO(dscp2prio);
static CTL_RO(dscp_app_cnt);
static CTL_WO(reset);
static CTL_RW(dcbx_fw);
static CTL_RW(peer_pfc);
static CTL_RW(ets_zero_non_ets);

static struct attribute *ctl_attrs[] = {
	&ctl_trust.attr, &ctl_link_flaps.attr, &ctl_flap_ms.attr,
	&ctl_refuse_pfc.attr, &ctl_refuse_ets.attr, &ctl_refuse_app.attr,
	&ctl_refuse_dcbx.attr, &ctl_refuse_buffer.attr, &ctl_storm.attr,
	&ctl_set_counter.attr, &ctl_stats_mode.attr, &ctl_calls.attr,
	&ctl_dscp2prio.attr, &ctl_dscp_app_cnt.attr, &ctl_reset.attr,
	&ctl_refuse_cc.attr, &ctl_refuse_tunable.attr,
	&ctl_dcbx_fw.attr, &ctl_peer_pfc.attr, &ctl_ets_zero_non_ets.attr,
	NULL,
};

static const struct attribute_group ctl_group = { .attrs = ctl_attrs };

static int *refuse_ptr(struct kobj_attribute *attr)
{
	if (attr == &ctl_refuse_pfc)
		return &g->refuse_pfc;
	if (attr == &ctl_refuse_ets)
		return &g->refuse_ets;
	if (attr == &ctl_refuse_app)
		return &g->refuse_app;
	if (attr == &ctl_refuse_dcbx)
		return &g->refuse_dcbx;
	if (attr == &ctl_refuse_buffer)
		return &g->refuse_buffer;
	if (attr == &ctl_refuse_cc)
		return &g->refuse_cc;
	if (attr == &ctl_refuse_tunable)
		return &g->refuse_tunable;
	return NULL;
}

static ssize_t ctl_show(struct kobject *kobj, struct kobj_attribute *attr,
			char *buf)
{
	int *r = refuse_ptr(attr);
	ssize_t n = 0;
	int i;

	if (r)
		return sysfs_emit(buf, "%d\n", *r);
	if (attr == &ctl_trust) {
		bool dscp = pers == P_MLX5 ? g->trust_dscp :
			    pers == P_ICE ? g->ic.dscp_mode : g->fw_dscp_valid != 0;

		return sysfs_emit(buf, "%s\n", dscp ? "dscp" : "pcp");
	}
	if (attr == &ctl_link_flaps)
		return sysfs_emit(buf, "%llu\n", g->link_flaps);
	if (attr == &ctl_flap_ms)
		return sysfs_emit(buf, "%u\n", g->flap_ms);
	if (attr == &ctl_stats_mode)
		return sysfs_emit(buf, "%s\n", g->stats_pfc_only ? "pfc" : "all");
	if (attr == &ctl_dscp_app_cnt)
		return sysfs_emit(buf, "%d\n", g->dscp_app_cnt);
	if (attr == &ctl_dcbx_fw)
		return sysfs_emit(buf, "%s\n", g->dcbx_host ? "host" : "firmware");
	if (attr == &ctl_peer_pfc)
		return sysfs_emit(buf, "%d\n", g->peer_pfc);
	if (attr == &ctl_ets_zero_non_ets)
		return sysfs_emit(buf, "%d\n", g->ets_zero_non_ets);
	if (attr == &ctl_storm) {
		unsigned long flags;

		/* "stuck", the default, is left out: "3 1000 rx" as before */
		spin_lock_irqsave(&g->storm_lock, flags);
		if (g->storm_on)
			n = sysfs_emit(buf, "%d %u %s%s\n", g->storm_prio,
				       g->storm_rate,
				       g->storm_rx && g->storm_tx ? "both" :
				       g->storm_rx ? "rx" : "tx",
				       storm_drain ? " drain" : "");
		else
			n = sysfs_emit(buf, "off\n");
		spin_unlock_irqrestore(&g->storm_lock, flags);
		return n;
	}
	if (attr == &ctl_calls) {
		if (!rtnl_trylock())
			return restart_syscall();
		for (i = 0; i < C_NUM; i++)
			n += sysfs_emit_at(buf, n, "%s %llu\n", call_name[i],
					   g->calls[i]);
		rtnl_unlock();
		return n;
	}
	if (attr == &ctl_dscp2prio) {
		/* the dscp->prio entries this NIC holds (the app table) */
		if (!rtnl_trylock())
			return restart_syscall();
		for (i = 0; i < MAX_DSCP; i++) {
			struct dcb_app a = {
				.selector = IEEE_8021QAZ_APP_SEL_DSCP,
				.protocol = i,
			};

			/* bnxt_en, ice: the firmware's DSCP table */
			if (pers == P_MLX5 ? dcb_ieee_getapp_mask(g->dev, &a) != 0 :
			    (g->fw_dscp_valid & BIT_ULL(i)) != 0)
				n += sysfs_emit_at(buf, n, "%d %d\n", i,
						   g->dscp2prio[i]);
		}
		rtnl_unlock();
		return n;
	}
	return -EINVAL;
}

struct find_ctr_arg {
	const char *name;
	atomic64_t *found;
};

static void find_ctr(const char *name, atomic64_t *ctr, void *arg)
{
	struct find_ctr_arg *a = arg;

	if (!a->found && !strcmp(name, a->name))
		a->found = ctr;
}

static int store_set_counter(const char *buf)
{
	char name[ETH_GSTRING_LEN], val[24];
	struct find_ctr_arg a = { .name = name };
	bool saved_mode;
	u64 v;
	int err;

	/* "NAME VALUE" sets, "NAME +VALUE" adds */
	if (sscanf(buf, "%31s %23s", name, val) != 2)
		return -EINVAL;
	err = kstrtou64(val[0] == '+' ? val + 1 : val, 0, &v);
	if (err)
		return err;
	if (!rtnl_trylock())
		return restart_syscall();
	saved_mode = g->stats_pfc_only;
	g->stats_pfc_only = false; /* every counter is settable */
	for_each_stat(find_ctr, &a);
	g->stats_pfc_only = saved_mode;
	rtnl_unlock();
	if (!a.found)
		return -ENOENT;
	if (val[0] == '+')
		atomic64_add(v, a.found);
	else
		atomic64_set(a.found, v);
	return 0;
}

static int store_storm(const char *buf)
{
	char dir[8] = "rx", mode[8] = "stuck";
	unsigned int prio, rate;
	unsigned long flags;
	bool was_on, drain;
	int n;

	if (sysfs_streq(buf, "off") || sysfs_streq(buf, "0")) {
		spin_lock_irqsave(&g->storm_lock, flags);
		g->storm_on = false;
		spin_unlock_irqrestore(&g->storm_lock, flags);
		cancel_delayed_work_sync(&g->storm_work);
		return 0;
	}
	/* "PRIO RATE [rx|tx|both] [drain|stuck]" */
	n = sscanf(buf, "%u %u %7s %7s", &prio, &rate, dir, mode);
	if (n < 2 || prio >= NPRIO || !rate)
		return -EINVAL;
	if (strcmp(dir, "rx") && strcmp(dir, "tx") && strcmp(dir, "both"))
		return -EINVAL;
	if (strcmp(mode, "drain") && strcmp(mode, "stuck"))
		return -EINVAL;
	drain = !strcmp(mode, "drain");
	/*
	 * A running storm's work is left pending, not cancelled: its ticks
	 * keep their rhythm, so a storm that turns from drain to stuck goes on
	 * pausing without a gap.
	 */
	spin_lock_irqsave(&g->storm_lock, flags);
	was_on = g->storm_on && g->storm_prio == prio;
	if (!was_on || storm_drain != drain)
		storm_stall_ms = 0;
	g->storm_on = true;
	g->storm_prio = prio;
	g->storm_rate = rate;
	g->storm_rx = strcmp(dir, "tx") != 0;
	g->storm_tx = strcmp(dir, "rx") != 0;
	g->storm_carry = 0;
	storm_drain = drain;
	spin_unlock_irqrestore(&g->storm_lock, flags);
	if (!was_on && g->storm_rx)
		atomic64_inc(&g->prio_stats[PS_RX_PAUSE_TRANSITION][prio]);
	if (!was_on && g->storm_tx)
		atomic64_inc(&g->global_stats[GS_TX_PAUSE_STORM_WARNING]);
	/* a no-op while the work is pending */
	schedule_delayed_work(&g->storm_work, msecs_to_jiffies(STORM_TICK_MS));
	return 0;
}

static int store_reset(void);
static void delete_app_entries(void);
static void pers_init_state(void);

/*
 * The firmware's own DCBX mode, as mlxconfig LLDP_NB_DCBX_P1 and a reboot
 * would leave it: "firmware" (non-host, willing) or "host". The agent can
 * only leave firmware mode through setdcbx.
 */
static int store_dcbx_fw(const char *buf)
{
	bool host;

	if (sysfs_streq(buf, "host"))
		host = true;
	else if (sysfs_streq(buf, "firmware"))
		host = false;
	else
		return -EINVAL;
	if (!rtnl_trylock())
		return restart_syscall();
	g->dcbx_host = host;
	if (pers != P_MLX5) {
		/* bnxt_en: NVM and a reload; ice: as the fw-lldp-agent flag */
		delete_app_entries();
		pers_init_state();
		dcbnl_ieee_notify(g->dev, RTM_SETDCB, DCB_CMD_IEEE_SET, 0, 0);
		rtnl_unlock();
		return 0;
	}
	g->dcbx_cap = DCB_CAP_DCBX_VER_IEEE | DCB_CAP_DCBX_VER_CEE;
	if (host)
		g->dcbx_cap |= DCB_CAP_DCBX_HOST;
	else
		fw_dcbx_schedule();
	rtnl_unlock();
	return 0;
}

static ssize_t ctl_store(struct kobject *kobj, struct kobj_attribute *attr,
			 const char *buf, size_t count)
{
	int *r = refuse_ptr(attr);
	int err = 0, v, i;
	unsigned int u;

	if (r) {
		/* 0 = accept; 1 = refuse with EIO; N > 1 = refuse with errno N */
		err = kstrtoint(buf, 0, &v);
		if (!err && (v < 0 || v > 4095))
			err = -EINVAL;
		if (!err)
			*r = v == 1 ? EIO : v;
	} else if (attr == &ctl_link_flaps) {
		if (!rtnl_trylock())
			return restart_syscall();
		g->link_flaps = 0; /* any write resets */
		rtnl_unlock();
	} else if (attr == &ctl_calls) {
		if (!rtnl_trylock())
			return restart_syscall();
		for (i = 0; i < C_NUM; i++)
			g->calls[i] = 0; /* any write resets */
		rtnl_unlock();
	} else if (attr == &ctl_flap_ms) {
		err = kstrtouint(buf, 0, &u);
		if (!err && u > 10000)
			err = -EINVAL;
		if (!err)
			g->flap_ms = u;
	} else if (attr == &ctl_stats_mode) {
		if (sysfs_streq(buf, "all"))
			g->stats_pfc_only = false;
		else if (sysfs_streq(buf, "pfc"))
			g->stats_pfc_only = true;
		else
			err = -EINVAL;
	} else if (attr == &ctl_storm) {
		err = store_storm(buf);
	} else if (attr == &ctl_set_counter) {
		err = store_set_counter(buf);
	} else if (attr == &ctl_reset) {
		err = store_reset();
	} else if (attr == &ctl_dcbx_fw) {
		err = store_dcbx_fw(buf);
	} else if (attr == &ctl_ets_zero_non_ets) {
		bool b;

		err = kstrtobool(buf, &b);
		if (!err && !rtnl_trylock())
			return restart_syscall();
		if (!err) {
			g->ets_zero_non_ets = b;
			rtnl_unlock();
		}
	} else if (attr == &ctl_peer_pfc) {
		err = kstrtoint(buf, 0, &v);
		if (!err && (v < -1 || v > 255))
			err = -EINVAL;
		if (!err && !rtnl_trylock())
			return restart_syscall();
		if (!err) {
			g->peer_pfc = v;
			fw_dcbx_schedule();
			rtnl_unlock();
		}
	} else {
		err = -EINVAL;
	}
	return err ? err : count;
}

/* ecn/roce_np|roce_rp/enable/<prio> and DCQCN parameters */

static ssize_t ecn_en_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	u8 *arr = kobj == g->np_en_kobj ? g->np_enable : g->rp_enable;
	int prio = attr->attr.name[0] - '0';

	return sysfs_emit(buf, "%d\n", arr[prio]);
}

static ssize_t ecn_en_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	u8 *arr = kobj == g->np_en_kobj ? g->np_enable : g->rp_enable;
	int prio = attr->attr.name[0] - '0';
	int v, err;

	err = kstrtoint(buf, 0, &v);
	if (err)
		return err;
	if (v != 0 && v != 1)
		return -EINVAL;
	arr[prio] = v;
	return count;
}

#define ECN_EN(n) __ATTR(n, 0644, ecn_en_show, ecn_en_store)
static struct kobj_attribute ecn_en_attrs[NPRIO] = {
	ECN_EN(0), ECN_EN(1), ECN_EN(2), ECN_EN(3),
	ECN_EN(4), ECN_EN(5), ECN_EN(6), ECN_EN(7),
};

static struct attribute *ecn_en_attr_list[] = {
	&ecn_en_attrs[0].attr, &ecn_en_attrs[1].attr, &ecn_en_attrs[2].attr,
	&ecn_en_attrs[3].attr, &ecn_en_attrs[4].attr, &ecn_en_attrs[5].attr,
	&ecn_en_attrs[6].attr, &ecn_en_attrs[7].attr, NULL,
};

static const struct attribute_group ecn_en_group = {
	.attrs = ecn_en_attr_list,
};

struct ecn_param {
	struct kobj_attribute attr;
	bool np;
	u32 value, def, max;
};

static ssize_t ecn_param_show(struct kobject *kobj, struct kobj_attribute *a,
			      char *buf)
{
	return sysfs_emit(buf, "%u\n", container_of(a, struct ecn_param, attr)->value);
}

static ssize_t ecn_param_store(struct kobject *kobj, struct kobj_attribute *a,
			       const char *buf, size_t count)
{
	struct ecn_param *p = container_of(a, struct ecn_param, attr);
	u32 v;
	int err = kstrtou32(buf, 0, &v);

	if (err)
		return err;
	if (g->refuse_cc)
		return -g->refuse_cc;
	if (v > p->max)
		return -EINVAL;
	p->value = v;
	return count;
}

#define ECN_PARAM(n, is_np, dflt, mx) \
	{ .attr = __ATTR(n, 0644, ecn_param_show, ecn_param_store), \
	  .np = is_np, .value = dflt, .def = dflt, .max = mx }

/* MLNX_OFED defaults */
static struct ecn_param ecn_params[] = {
	ECN_PARAM(cnp_dscp, true, 48, 63),
	ECN_PARAM(cnp_802p_prio, true, 6, 7),
	ECN_PARAM(min_time_between_cnps, true, 4, 4095),
	ECN_PARAM(rpg_time_reset, false, 300, 131071),
	ECN_PARAM(rpg_byte_reset, false, 32767, 32767),
	ECN_PARAM(rpg_threshold, false, 1, 31),
	ECN_PARAM(rpg_max_rate, false, 0, 400000),
	ECN_PARAM(rpg_ai_rate, false, 5, 400000),
	ECN_PARAM(rpg_hai_rate, false, 50, 400000),
	ECN_PARAM(rpg_gd, false, 11, 15),
	ECN_PARAM(rpg_min_dec_fac, false, 50, 100),
	ECN_PARAM(rpg_min_rate, false, 1, 400000),
	ECN_PARAM(rate_to_set_on_first_cnp, false, 0, 400000),
	ECN_PARAM(dce_tcp_g, false, 1019, 1023),
	ECN_PARAM(dce_tcp_rtt, false, 1, 131071),
	ECN_PARAM(rate_reduce_monitor_period, false, 4, 0x7fffffff),
	ECN_PARAM(initial_alpha_value, false, 1023, 1023),
	ECN_PARAM(clamp_tgt_rate, false, 0, 1),
	ECN_PARAM(clamp_tgt_rate_after_time_inc, false, 1, 1),
};
static const int n_ecn_params = ARRAY_SIZE(ecn_params);

/*
 * debugfs cc_params: the inbox driver's DCQCN files,
 * <debugfs>/mlx5/<device>/cc_params/<name>, as
 * drivers/infiniband/hw/mlx5/cong.c in Linux 6.1.192 makes them
 * (mlx5_ib_init_cong_debugfs): the 20 names of mlx5_ib_dbg_cc_name, mode
 * 0600; a read prints the value and a newline (get_param); a write takes at
 * most 11 bytes, parsed by kstrtou32 with base 0 (set_param); writing
 * np_cnp_prio also sets np_cnp_prio_mode to 0 (mlx5_ib_set_cc_param_mask_val).
 * The values are the ecn_params above (one firmware setting behind both
 * forms); the firmware's range check is the stand-in's max. <device> is
 * the netdev's parent, what /sys/class/net/<netdev>/device names (a PCI
 * address on a ConnectX, virtio0 in the lab).
 */
struct cc_file {
	const char *name;	/* the debugfs name (cong.c) */
	const char *ofed;	/* the ecn_params entry; NULL: np_cnp_prio_mode */
};

static const struct cc_file cc_files[] = {
	{ "rp_clamp_tgt_rate", "clamp_tgt_rate" },
	{ "rp_clamp_tgt_rate_ati", "clamp_tgt_rate_after_time_inc" },
	{ "rp_time_reset", "rpg_time_reset" },
	{ "rp_byte_reset", "rpg_byte_reset" },
	{ "rp_threshold", "rpg_threshold" },
	{ "rp_ai_rate", "rpg_ai_rate" },
	{ "rp_max_rate", "rpg_max_rate" },
	{ "rp_hai_rate", "rpg_hai_rate" },
	{ "rp_min_dec_fac", "rpg_min_dec_fac" },
	{ "rp_min_rate", "rpg_min_rate" },
	{ "rp_rate_to_set_on_first_cnp", "rate_to_set_on_first_cnp" },
	{ "rp_dce_tcp_g", "dce_tcp_g" },
	{ "rp_dce_tcp_rtt", "dce_tcp_rtt" },
	{ "rp_rate_reduce_monitor_period", "rate_reduce_monitor_period" },
	{ "rp_initial_alpha_value", "initial_alpha_value" },
	{ "rp_gd", "rpg_gd" },
	{ "np_min_time_between_cnps", "min_time_between_cnps" },
	{ "np_cnp_dscp", "cnp_dscp" },
	{ "np_cnp_prio_mode", NULL },
	{ "np_cnp_prio", "cnp_802p_prio" },
};

/* np_cnp_prio_mode: 1 until np_cnp_prio is written (the stand-in's default) */
static u32 cnp_prio_mode = 1;
static struct dentry *cc_mlx5_dir;	/* <debugfs>/mlx5, when this module made it */
static struct dentry *cc_dev_dir;	/* <debugfs>/mlx5/<device> */
static struct ecn_param *cc_param_of[ARRAY_SIZE(cc_files)];

static ssize_t cc_read(struct file *f, char __user *buf, size_t count, loff_t *pos)
{
	const struct ecn_param *p = cc_param_of[(uintptr_t)f->private_data];
	char lbuf[12];
	int n = scnprintf(lbuf, sizeof(lbuf), "%u\n", p ? READ_ONCE(p->value) : READ_ONCE(cnp_prio_mode));

	return simple_read_from_buffer(buf, count, pos, lbuf, n);
}

static ssize_t cc_write(struct file *f, const char __user *buf, size_t count, loff_t *pos)
{
	struct ecn_param *p = cc_param_of[(uintptr_t)f->private_data];
	char lbuf[11] = { };
	u32 v;

	if (count > sizeof(lbuf))
		return -EINVAL;
	if (copy_from_user(lbuf, buf, count))
		return -EFAULT;
	lbuf[sizeof(lbuf) - 1] = '\0';
	if (kstrtou32(lbuf, 0, &v))
		return -EINVAL;
	if (READ_ONCE(g->refuse_cc))
		return -READ_ONCE(g->refuse_cc);
	if (!p) {	/* np_cnp_prio_mode */
		if (v > 1)
			return -EINVAL;
		WRITE_ONCE(cnp_prio_mode, v);
		return count;
	}
	if (v > p->max)
		return -EINVAL;
	WRITE_ONCE(p->value, v);
	if (!strcmp(p->attr.attr.name, "cnp_802p_prio"))
		WRITE_ONCE(cnp_prio_mode, 0);
	return count;
}

static const struct file_operations cc_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = cc_read,
	.write = cc_write,
	.llseek = default_llseek,
};

static void remove_cc_debugfs(void)
{
	debugfs_remove_recursive(cc_dev_dir);
	cc_dev_dir = NULL;
	debugfs_remove(cc_mlx5_dir);	/* NULL unless this module made it */
	cc_mlx5_dir = NULL;
}

/* A debugfs failure leaves the files out, as mlx5 does: not an error. */
static void create_cc_debugfs(struct net_device *dev)
{
	struct dentry *mlx5 = debugfs_lookup("mlx5", NULL), *cc;
	size_t i;
	int j;

	if (!dev->dev.parent)
		return;
	if (!mlx5)
		mlx5 = cc_mlx5_dir = debugfs_create_dir("mlx5", NULL);
	else
		dput(mlx5);
	if (IS_ERR_OR_NULL(mlx5))
		return;
	cc_dev_dir = debugfs_create_dir(dev_name(dev->dev.parent), mlx5);
	cc = debugfs_create_dir("cc_params", cc_dev_dir);
	for (i = 0; i < ARRAY_SIZE(cc_files); i++) {
		cc_param_of[i] = NULL;
		for (j = 0; cc_files[i].ofed && j < n_ecn_params; j++)
			if (!strcmp(ecn_params[j].attr.attr.name, cc_files[i].ofed))
				cc_param_of[i] = &ecn_params[j];
		debugfs_create_file(cc_files[i].name, 0600, cc, (void *)(uintptr_t)i, &cc_fops);
	}
}

/* ------------------------------------------------------- attach / detach */

static void init_state(void);
static void delete_app_entries(void);

/* Back to the state after insmod: DCB config, app entries, counters, controls. */
static int store_reset(void)
{
	struct net_device *dev = g->dev;
	unsigned long flags;
	int s, p;

	if (!rtnl_trylock())
		return restart_syscall();
	spin_lock_irqsave(&g->storm_lock, flags);
	g->storm_on = false;
	spin_unlock_irqrestore(&g->storm_lock, flags);
	cancel_delayed_work_sync(&g->storm_work);
	delete_app_entries();
	memset(&g->pfc, 0, sizeof(g->pfc));
	cancel_delayed_work(&g->fw_dcbx_work);
	memset(&g->buf, 0, sizeof(g->buf));	/* manual off: mlx5e_dcbnl_initialize() */
	g->trust_dscp = false;
	g->dscp_app_cnt = 0;
	g->link_flaps = 0;
	memset(g->calls, 0, sizeof(g->calls));
	g->stats_pfc_only = false;
	g->refuse_pfc = g->refuse_ets = g->refuse_app = 0;
	g->refuse_dcbx = g->refuse_buffer = 0;
	g->refuse_cc = g->refuse_tunable = 0;
	g->pfc_prevention_tout = 0;
	for (s = 0; s < PS_NUM; s++)
		for (p = 0; p < NPRIO; p++)
			atomic64_set(&g->prio_stats[s][p], 0);
	for (s = 0; s < GS_NUM; s++)
		atomic64_set(&g->global_stats[s], 0);
	for (s = 0; s < n_ecn_params; s++)
		ecn_params[s].value = ecn_params[s].def;
	cnp_prio_mode = 1;
	init_state();
	/* tell RTNLGRP_DCB listeners (e.g. the agent) that everything changed */
	dcbnl_ieee_notify(dev, RTM_SETDCB, DCB_CMD_IEEE_SET, 0, 0);
	rtnl_unlock();
	return 0;
}


static void remove_sysfs(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(ecn_params); i++) {
		struct kobject *k = ecn_params[i].np ? g->np_kobj : g->rp_kobj;

		if (k)
			sysfs_remove_file(k, &ecn_params[i].attr.attr);
	}
	if (g->np_en_kobj) {
		sysfs_remove_group(g->np_en_kobj, &ecn_en_group);
		kobject_put(g->np_en_kobj);
	}
	if (g->rp_en_kobj) {
		sysfs_remove_group(g->rp_en_kobj, &ecn_en_group);
		kobject_put(g->rp_en_kobj);
	}
	kobject_put(g->np_kobj);
	kobject_put(g->rp_kobj);
	kobject_put(g->ecn_kobj);
	if (g->ctl_kobj) {
		sysfs_remove_group(g->ctl_kobj, &ctl_group);
		kobject_put(g->ctl_kobj);
	}
	g->np_en_kobj = g->rp_en_kobj = g->np_kobj = g->rp_kobj = NULL;
	g->ecn_kobj = g->ctl_kobj = NULL;
}

static int create_sysfs(struct net_device *dev)
{
	struct kobject *parent = &dev->dev.kobj;
	int i, err;

	g->ctl_kobj = kobject_create_and_add("dcbtest", parent);
	if (!g->ctl_kobj)
		return -ENOMEM;
	/* the inbox driver (and bnxt_en, ice): no ecn/ directory at all */
	if (!ofed_ecn || pers != P_MLX5)
		return sysfs_create_group(g->ctl_kobj, &ctl_group);
	g->ecn_kobj = kobject_create_and_add("ecn", parent);
	if (!g->ecn_kobj)
		return -ENOMEM;
	g->np_kobj = kobject_create_and_add("roce_np", g->ecn_kobj);
	g->rp_kobj = kobject_create_and_add("roce_rp", g->ecn_kobj);
	if (!g->np_kobj || !g->rp_kobj)
		return -ENOMEM;
	g->np_en_kobj = kobject_create_and_add("enable", g->np_kobj);
	g->rp_en_kobj = kobject_create_and_add("enable", g->rp_kobj);
	if (!g->np_en_kobj || !g->rp_en_kobj)
		return -ENOMEM;
	err = sysfs_create_group(g->ctl_kobj, &ctl_group);
	if (!err)
		err = sysfs_create_group(g->np_en_kobj, &ecn_en_group);
	if (!err)
		err = sysfs_create_group(g->rp_en_kobj, &ecn_en_group);
	for (i = 0; !err && i < ARRAY_SIZE(ecn_params); i++)
		err = sysfs_create_file(ecn_params[i].np ? g->np_kobj : g->rp_kobj,
					&ecn_params[i].attr.attr);
	return err;
}

static void init_state(void)
{
	int i;

	g->pfc.pfc_cap = NPRIO;
	g->pfc.delay = 7; /* MLX5E_DEFAULT_CABLE_LEN (m) */
	init_ets();
	for (i = 0; i < NPRIO; i++) {
		g->np_enable[i] = 0;
		g->rp_enable[i] = 0;
	}
	for (i = 0; i < MAX_DSCP; i++)
		g->dscp2prio[i] = i >> 3;
	/* mlx5e_dcbnl_initialize(): CEE and IEEE always, HOST in host mode */
	g->dcbx_host = strcmp(dcbx_mode, "firmware") != 0;
	g->dcbx_cap = DCB_CAP_DCBX_VER_IEEE | DCB_CAP_DCBX_VER_CEE;
	if (g->dcbx_host)
		g->dcbx_cap |= DCB_CAP_DCBX_HOST;
	g->peer_pfc = peer_pfc < 0 ? -1 : peer_pfc & 0xff;
	g->ets_zero_non_ets = ets_zero_non_ets;
	g->flap_ms = flap_ms;
	/* 512 KiB, buffers 0 and 1 at 256 and 128 KiB, in 128-byte cells */
	g->buf.total = 512 * 1024;
	g->buf.cells[0] = 256 * 1024 / PORT_BUFF_CELL_SZ;
	g->buf.cells[1] = 128 * 1024 / PORT_BUFF_CELL_SZ;
	pers_init_state();
}

/* Called under RTNL: removes the DSCP app entries this NIC holds. */
static void delete_app_entries(void)
{
	int i;

	int p;

	/* every priority: bnxt_en's table can hold two entries for a DSCP */
	for (i = 0; i < MAX_DSCP; i++)
		for (p = 0; p < NPRIO; p++) {
			struct dcb_app a = {
				.selector = IEEE_8021QAZ_APP_SEL_DSCP,
				.protocol = i,
				.priority = p,
			};

			dcb_ieee_delapp(g->dev, &a);
		}
	g->fw_dscp_valid = 0;
}

/* Called under RTNL. Gives the device its original ops back. */
static void detach_locked(void)
{
	struct net_device *dev = g->dev;

	if (!dev)
		return;
	delete_app_entries();
	dev->dcbnl_ops = NULL;
	dev->ethtool_ops = g->orig_ethtool_ops;
	if (!netif_carrier_ok(dev) && g->flap_ms)
		netif_carrier_on(dev);
	g->dev = NULL;
	remove_sysfs();
	remove_cc_debugfs();
	netdev_put(dev, &g->tracker);
	netdev_info(dev, "roce_dcbtest: detached\n");
}

static int dt_netdev_event(struct notifier_block *nb, unsigned long event,
			   void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);

	if (event == NETDEV_UNREGISTER && g && dev == g->dev)
		detach_locked();
	return NOTIFY_DONE;
}

static struct notifier_block dt_notifier = {
	.notifier_call = dt_netdev_event,
};

static int __init dt_init(void)
{
	struct net_device *dev;
	int err;

	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return -ENOMEM;
	spin_lock_init(&g->storm_lock);
	INIT_DELAYED_WORK(&g->storm_work, storm_work_fn);
	INIT_DELAYED_WORK(&g->carrier_work, carrier_work_fn);
	INIT_DELAYED_WORK(&g->fw_dcbx_work, fw_dcbx_work_fn);
	for (pers = 0; pers < P_NUM; pers++)
		if (!strcmp(driver, pers_param[pers]) || !strcmp(driver, pers_driver[pers]))
			break;
	if (pers == P_NUM) {
		pr_err("roce_dcbtest: driver=%s: want mlx5, bnxt_en or ice\n", driver);
		kfree(g);
		g = NULL;
		return -EINVAL;
	}
	if (strcmp(dcbx_mode, "host") && strcmp(dcbx_mode, "firmware")) {
		pr_err("roce_dcbtest: dcbx_mode=%s: want host or firmware\n", dcbx_mode);
		kfree(g);
		g = NULL;
		return -EINVAL;
	}
	init_state();

	rtnl_lock();
	dev = __dev_get_by_name(&init_net, ifname);
	if (!dev) {
		rtnl_unlock();
		pr_err("roce_dcbtest: no interface %s\n", ifname);
		kfree(g);
		g = NULL;
		return -ENODEV;
	}
	if (dev->dcbnl_ops) {
		rtnl_unlock();
		pr_err("roce_dcbtest: %s already has dcbnl_ops\n", ifname);
		kfree(g);
		g = NULL;
		return -EBUSY;
	}
	err = create_sysfs(dev);
	if (err) {
		remove_sysfs();
		rtnl_unlock();
		kfree(g);
		g = NULL;
		return err;
	}
	if (pers == P_MLX5)
		create_cc_debugfs(dev);
	netdev_hold(dev, &g->tracker, GFP_KERNEL);
	g->dev = dev;
	g->orig_ethtool_ops = dev->ethtool_ops;
	if (g->orig_ethtool_ops)
		g->ethtool_ops = *g->orig_ethtool_ops;
	g->ethtool_ops.get_sset_count = dt_get_sset_count;
	g->ethtool_ops.get_strings = dt_get_strings;
	g->ethtool_ops.get_ethtool_stats = dt_get_ethtool_stats;
	g->ethtool_ops.get_drvinfo = dt_get_drvinfo;
	if (pers == P_MLX5) {
		g->ethtool_ops.get_tunable = dt_get_tunable;
		g->ethtool_ops.set_tunable = dt_set_tunable;
	}
	if (pers == P_ICE) {
		g->ethtool_ops.get_priv_flags = ice_get_priv_flags;
		g->ethtool_ops.set_priv_flags = ice_set_priv_flags;
	}
	dev->ethtool_ops = &g->ethtool_ops;
	dev->dcbnl_ops = pers == P_BNXT ? &bx_dcbnl_ops :
			 pers == P_ICE ? &ice_dcbnl_ops : &dt_dcbnl_ops;
	rtnl_unlock();

	err = register_netdevice_notifier(&dt_notifier);
	if (err) {
		rtnl_lock();
		detach_locked();
		rtnl_unlock();
		kfree(g);
		g = NULL;
		return err;
	}
	netdev_info(dev, "roce_dcbtest: attached (DCB test NIC as %s)\n", pers_driver[pers]);
	return 0;
}

static void __exit dt_exit(void)
{
	unregister_netdevice_notifier(&dt_notifier);
	spin_lock_irq(&g->storm_lock);
	g->storm_on = false;
	spin_unlock_irq(&g->storm_lock);
	cancel_delayed_work_sync(&g->storm_work);
	cancel_delayed_work_sync(&g->carrier_work);
	cancel_delayed_work_sync(&g->fw_dcbx_work);
	rtnl_lock();
	detach_locked();
	rtnl_unlock();
	kfree(g);
	g = NULL;
}

module_init(dt_init);
module_exit(dt_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("roced project");
MODULE_DESCRIPTION("DCB test NIC for the roced RoCE lab (mlx5-like dcbnl, PFC counters, ECN sysfs, PFC prevention)");
