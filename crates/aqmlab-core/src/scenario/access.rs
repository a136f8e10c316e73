//! Access-network parts of the scenario schema: link shapers and WiFi BSSes (`[[wifi]]`,
//! `[dumbbell.wifi]`); the `[docsis]` topology is in [`super::docsis`]. The models
//! themselves are in `link::{shaper, wifi}`; `docs/link-models.md` has examples.
//!
//! ```toml
//! [dumbbell.down]                       # shape a 100 Mbit/s line down to 14 Mbit/s
//! rate = "100Mbit"
//! shaper = { rate = "14Mbit", burst = "3KB" }
//!
//! [[wifi]]                              # an AP with two stations
//! ap = "ap"
//! stations = ["sta0", "sta1"]
//! [wifi.station.sta1]
//! mcs = 4
//! access = { cwmin = 31 }
//! ```

use super::build::{check_qdisc, Builder};
use super::{d_mtu, d_true, d_zero, ScenarioError, ScenarioWarning};
use crate::link::wifi::{
    max_mcs, Access, MediumParams, PhyMode, WifiPhy, WifiPortParams, AC_BE, AC_NAMES,
    SUBFRAME_OVERHEAD,
};
use crate::link::wifi_budget::{
    best_mcs, residential_path_loss, Radio, INTEL_5100, NANOSTATION_M5,
};
use crate::link::{LinkParams, LowerParams, ShaperConfig};
use crate::packet::NodeId;
use crate::params::{check_range, ParamDoc};
use crate::qdisc::QdiscConfig;
use crate::time::{Rate, SimDuration};
use crate::units::{DurationSpec, RateSpec, SizeSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// EDCA access parameters; any key left out falls back to the next level (`access`,
/// then the 802.11 defaults of the access category: see [`STA_EDCA`] / [`AP_EDCA`]).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccessConfig {
    /// Slots of AIFS after SIFS (1 to 15).
    pub aifsn: Option<u32>,
    /// Initial contention window, 2^k − 1 (0 to 32767).
    pub cwmin: Option<u32>,
    /// Largest contention window, 2^k − 1, ≥ cwmin.
    pub cwmax: Option<u32>,
    /// TXOP limit: 0 (one frame exchange per access) up to 65535 × 32 µs, a multiple
    /// of 32 µs (the unit of the EDCA parameter set's TXOP Limit field).
    pub txop: Option<DurationSpec>,
}

impl AccessConfig {
    fn over(&self, base: Access) -> Access {
        Access {
            aifsn: self.aifsn.unwrap_or(base.aifsn),
            cwmin: self.cwmin.unwrap_or(base.cwmin),
            cwmax: self.cwmax.unwrap_or(base.cwmax),
            txop: self.txop.map_or(base.txop, |t| t.0),
        }
    }
}

/// Per-station overrides: `[wifi.station.NAME]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StationConfig {
    /// PHY rate between this station and the AP, both directions (instead of MCS).
    pub phy_rate: Option<RateSpec>,
    /// This station's transmit MCS (uplink).
    pub mcs: Option<u32>,
    /// This station's transmit spatial streams.
    pub streams: Option<u32>,
    /// The AP's MCS towards this station (downlink).
    pub ap_mcs: Option<u32>,
    /// This station's driver.
    pub driver: Option<WifiDriver>,
    /// Subframe error rate between this station and the AP (both directions).
    pub fer: Option<f64>,
    /// Path loss between this station and the AP in dB (over the BSS's geometry).
    pub path_loss: Option<f64>,
    /// This station's distance from the AP in metres.
    pub distance: Option<f64>,
    /// Walls between this station and the AP.
    pub walls: Option<u32>,
    /// Floors between this station and the AP.
    pub floors: Option<u32>,
    /// This station's access parameters (over the BSS's `access`).
    #[serde(default)]
    pub access: AccessConfig,
    /// Qdisc on this station's WiFi interface.
    pub qdisc: Option<QdiscConfig>,
}

/// The WiFi driver of an interface: sets the queue below the qdisc and the aggregation
/// limits (`docs/link-models.md` has each value's source).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WifiDriver {
    /// ath9k (Atheros 802.11n, the AP of the residential testbed, OpenWrt 14.07).
    Ath9k,
    /// iwlwifi's dvm driver (Intel WiFi Link 5100, the testbed's client, Linux 3.14).
    Iwlwifi,
}

/// Queue and aggregation parameters a driver brings.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DriverDefaults {
    /// Frames below the qdisc at which the driver stops the mac80211 queue.
    pub queue: u32,
    /// Frames at or below which it wakes the queue again.
    pub wake: u32,
    /// Aggregates prepared ahead of the medium.
    pub hw_aggregates: u32,
    /// Subframes per A-MPDU.
    pub max_frames: u32,
    /// PPDU duration limit of an A-MPDU.
    pub max_airtime: SimDuration,
    /// Retransmissions of a subframe before it is dropped.
    pub retry_limit: u32,
    /// Whether voice (AC_VO) frames are aggregated.
    pub aggregate_vo: bool,
}

impl WifiDriver {
    /// The driver's defaults (sources in `docs/link-models.md`).
    pub fn defaults(self) -> DriverDefaults {
        match self {
            // ath9k: txq_max_pending = ATH_MAX_QDEPTH = 512 / 4 - 5 = 123 per access
            // category, woken as soon as fewer are pending; ATH_AGGR_MIN_QDEPTH 2 aggregates
            // in hardware; ATH_AMPDU_SUBFRAME_DEFAULT 32; 4 ms aggregates;
            // ATH_MAX_SW_RETRIES 30. Its rate control, mac80211's minstrel_ht, starts no
            // block-ack session for a VO frame (`minstrel_aggr_check`), so voice goes
            // unaggregated.
            WifiDriver::Ath9k => DriverDefaults {
                queue: 123,
                wake: 122,
                hw_aggregates: 2,
                max_frames: 32,
                max_airtime: SimDuration::from_millis(4),
                retry_limit: 30,
                aggregate_vo: false,
            },
            // iwlwifi (pcie/tx.c, Linux 3.14): a 256-slot TFD ring per queue, 255 usable;
            // stopped when fewer than high_mark = 256 / 8 = 32 slots are free (224 frames),
            // woken when more than low_mark = 256 / 4 = 64 are free (190 frames); frames
            // stay in the ring until the block ack reclaims them. The firmware aggregates
            // from the ring when it transmits (one aggregate at a time), at most
            // LINK_QUAL_AGG_FRAME_LIMIT_DEF = 63 frames and LINK_QUAL_AGG_TIME_LIMIT_DEF =
            // 4 ms (dvm/commands.h); a data frame is retried IWLAGN_DEFAULT_TX_RETRY = 15
            // times (the tx command's data_retry_limit, dvm/tx.c
            // iwlagn_tx_cmd_build_rate; LINK_QUAL_MAX_RETRY_NUM = 16 is the length of the
            // rate table those tries walk, not a retry count). Each access category has its
            // own ring with these marks. Its rate scaling (dvm/rs.c) turns aggregation on
            // for every TID in `tx_agg_tid_en` = IWL_AGG_ALL_TID, voice included, without
            // waiting for load (`auto_agg`, on by default).
            WifiDriver::Iwlwifi => DriverDefaults {
                queue: 224,
                wake: 190,
                hw_aggregates: 1,
                max_frames: 63,
                max_airtime: SimDuration::from_millis(4),
                retry_limit: 15,
                aggregate_vo: true,
            },
        }
    }
    fn name(self) -> &'static str {
        match self {
            WifiDriver::Ath9k => "ath9k",
            WifiDriver::Iwlwifi => "iwlwifi",
        }
    }
}

/// How each direction's MCS is chosen where no `mcs` / `ap_mcs` key gives it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateControl {
    /// The fastest MCS whose minimum receiver sensitivity the received power meets
    /// (`link::wifi_budget`).
    #[default]
    LinkBudget,
    /// MCS 15 from the AP, MCS 7 from each station (the top MCS of a 2×2 AP and of a
    /// one-stream client).
    Fixed,
}

fn d_distance() -> f64 {
    5.0
}
fn d_walls() -> u32 {
    1
}
fn d_frequency() -> u32 {
    5180
}

fn d_ap_driver() -> WifiDriver {
    WifiDriver::Ath9k
}
fn d_station_driver() -> WifiDriver {
    WifiDriver::Iwlwifi
}
fn d_ap_mcs() -> u32 {
    15
}
fn d_mcs() -> u32 {
    7
}
fn d_ap_streams() -> u32 {
    2
}
fn d_streams() -> u32 {
    1
}
fn d_width() -> u32 {
    20
}
fn d_gi() -> DurationSpec {
    DurationSpec(SimDuration::from_nanos(800))
}
fn d_ba_window() -> u32 {
    64
}
fn d_max_bytes() -> SizeSpec {
    SizeSpec(65535)
}
fn d_slot() -> DurationSpec {
    DurationSpec(SimDuration::from_micros(9))
}
fn d_sifs() -> DurationSpec {
    DurationSpec(SimDuration::from_micros(16))
}
fn d_control_rate() -> RateSpec {
    RateSpec(24_000_000)
}
fn d_wifi_overhead() -> u32 {
    14
}

/// `[[wifi]]` / `[dumbbell.wifi]`: one 802.11n BSS (see `link::wifi` for the model).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WifiConfig {
    /// BSS name; interface links are named `NAME_NODE`. Default `wifi{k}` (`wifi` in a dumbbell).
    pub name: Option<String>,
    /// The access point node (`[[wifi]]` only; a dumbbell uses `router_a`).
    pub ap: Option<String>,
    /// Station nodes (`[[wifi]]` only; a dumbbell uses its clients).
    pub stations: Option<Vec<String>>,
    /// How the MCS of a direction without an `mcs` / `ap_mcs` key is chosen. Default
    /// `link_budget`.
    #[serde(default)]
    pub rate: RateControl,
    /// The AP's transmit MCS (downlink), 0 to 8 × ap_streams − 1. Default: from `rate`
    /// (15 with `rate = "fixed"`).
    pub ap_mcs: Option<u32>,
    /// The AP's transmit spatial streams (1 to 4). Default 2 (a 2×2 AP).
    #[serde(default = "d_ap_streams")]
    pub ap_streams: u32,
    /// Every station's transmit MCS (uplink), 0 to 8 × streams − 1. Default: from
    /// `rate` (7 with `rate = "fixed"`).
    pub mcs: Option<u32>,
    /// Every station's transmit spatial streams (1 to 4). Default 1 (Intel 5100: one
    /// transmit chain).
    #[serde(default = "d_streams")]
    pub streams: u32,
    /// Channel width in MHz: 20 or 40. Default 20.
    #[serde(default = "d_width")]
    pub width: u32,
    /// Guard interval: 800ns or 400ns. Default 800ns.
    #[serde(default = "d_gi")]
    pub guard_interval: DurationSpec,
    /// A fixed PHY rate in both directions instead of the MCS keys (4-µs symbols).
    pub phy_rate: Option<RateSpec>,
    /// Subframe error rate, 0 ≤ fer < 1. Default 0.
    #[serde(default)]
    pub fer: f64,
    /// Path loss between the AP and each station in dB, 0 to 200 (instead of the
    /// geometry's).
    pub path_loss: Option<f64>,
    /// Distance between the AP and each station in metres, 1 to 10000. Default 5.
    #[serde(default = "d_distance")]
    pub distance: f64,
    /// Walls between the AP and each station (0 to 20). Default 1.
    #[serde(default = "d_walls")]
    pub walls: u32,
    /// Floors between the AP and each station (0 to 10). Default 0.
    #[serde(default)]
    pub floors: u32,
    /// Centre frequency in MHz, 5150 to 5925. Default 5180 (channel 36).
    #[serde(default = "d_frequency")]
    pub frequency: u32,
    /// The AP's conducted transmit power in dBm at every MCS (-10 to 40). Default: the
    /// Nanostation M5's per MCS.
    pub ap_tx_power: Option<f64>,
    /// The AP's antenna gain in dBi (-20 to 40). Default: the Nanostation M5's 14.6.
    pub ap_antenna_gain: Option<f64>,
    /// Every station's conducted transmit power in dBm (-10 to 40). Default: the Intel
    /// 5100's 16.
    pub tx_power: Option<f64>,
    /// Every station's antenna gain in dBi (-20 to 40). Default 0.
    pub antenna_gain: Option<f64>,
    /// One-way propagation delay. Default 0.
    #[serde(default = "d_zero")]
    pub delay: DurationSpec,
    /// Qdisc on every WiFi interface. Default: fifo 1000 (in a dumbbell: `access_qdisc`).
    pub qdisc: Option<QdiscConfig>,
    /// Qdisc on the AP's interface (over `qdisc`).
    pub ap_qdisc: Option<QdiscConfig>,
    /// WMM (802.11e QoS): packets go to the access category of their DSCP, each with
    /// its own queues and EDCA parameters. Default true (as the testbed's hardware).
    #[serde(default = "d_true")]
    pub wmm: bool,
    /// Best-effort access parameters of every node (with `wmm = false`: of all traffic).
    /// Default AIFSN 3, CWmin 15, CWmax 1023 (the AP with WMM: CWmax 63).
    #[serde(default)]
    pub access: AccessConfig,
    /// The AP's best-effort access parameters (over `access`).
    #[serde(default)]
    pub ap_access: AccessConfig,
    /// The stations' access parameters per access category (`vo`, `vi`, `be`, `bk`;
    /// over the 802.11 defaults and, for `be`, `access`). Needs `wmm`.
    #[serde(default)]
    pub ac: BTreeMap<String, AccessConfig>,
    /// The AP's access parameters per access category (over the AP defaults).
    #[serde(default)]
    pub ap_ac: BTreeMap<String, AccessConfig>,
    /// The AP's driver. Default ath9k.
    #[serde(default = "d_ap_driver")]
    pub ap_driver: WifiDriver,
    /// Every station's driver. Default iwlwifi.
    #[serde(default = "d_station_driver")]
    pub station_driver: WifiDriver,
    /// Frames below the qdisc at which every driver stops the qdisc (over the drivers').
    pub driver_queue: Option<u32>,
    /// Frames at or below which a stopped driver wakes the qdisc (over the drivers').
    pub driver_wake: Option<u32>,
    /// Aggregates prepared ahead of the medium (over the drivers').
    pub hw_aggregates: Option<u32>,
    /// Subframes per A-MPDU, 1 to ba_window (over the drivers').
    pub max_frames: Option<u32>,
    /// Block-ack window (1 to 64). Default 64 (the 802.11n maximum).
    #[serde(default = "d_ba_window")]
    pub ba_window: u32,
    /// A-MPDU length limit. Default 65535 bytes (802.11n maximum).
    #[serde(default = "d_max_bytes")]
    pub max_bytes: SizeSpec,
    /// PPDU duration limit (over the drivers').
    pub max_airtime: Option<DurationSpec>,
    /// Retransmissions of a subframe before it is dropped (over the drivers').
    pub retry_limit: Option<u32>,
    /// Slot time. Default 9 µs (OFDM).
    #[serde(default = "d_slot")]
    pub slot: DurationSpec,
    /// SIFS. Default 16 µs (5 GHz OFDM).
    #[serde(default = "d_sifs")]
    pub sifs: DurationSpec,
    /// Preamble and headers before the data symbols. Default: HT-mixed, 36 µs with one
    /// spatial stream, 40 µs with two, 48 µs with three or four (40 µs with `phy_rate`).
    pub preamble: Option<DurationSpec>,
    /// Legacy rate of block acks. Default 24 Mbit/s.
    #[serde(default = "d_control_rate")]
    pub control_rate: RateSpec,
    /// Framing bytes the qdisc sees per packet (a Linux WiFi qdisc sees Ethernet
    /// frames). Default 14. Airtime uses the 802.11 framing of the model instead.
    #[serde(default = "d_wifi_overhead")]
    pub overhead: u32,
    /// Largest IP packet. Default 1500.
    #[serde(default = "d_mtu")]
    pub mtu: u32,
    /// Per-station overrides, by station node name.
    #[serde(default)]
    pub station: BTreeMap<String, StationConfig>,
}

impl StationConfig {
    /// Parameter documentation for `aqmlab describe wifi.station`.
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc::new(
            "mcs",
            "the BSS's mcs",
            "this station's transmit MCS (uplink), 0 to 8 x streams - 1",
        ),
        ParamDoc::new(
            "streams",
            "the BSS's streams",
            "this station's transmit spatial streams (1 to 4)",
        ),
        ParamDoc::new(
            "ap_mcs",
            "the BSS's ap_mcs",
            "the AP's MCS towards this station (downlink)",
        ),
        ParamDoc::new(
            "phy_rate",
            "none",
            "a fixed PHY rate between this station and the AP, both directions, instead of MCS",
        ),
        ParamDoc::new(
            "driver",
            "the BSS's station_driver",
            "this station's driver: ath9k or iwlwifi",
        ),
        ParamDoc::new(
            "fer",
            "the BSS's fer",
            "subframe error rate between this station and the AP (both directions)",
        ),
        ParamDoc::new(
            "path_loss",
            "the BSS's",
            "path loss between this station and the AP in dB (0 to 200), instead of its geometry's",
        ),
        ParamDoc::new("distance", "the BSS's", "this station's distance from the AP in metres"),
        ParamDoc::new("walls", "the BSS's", "walls between this station and the AP"),
        ParamDoc::new("floors", "the BSS's", "floors between this station and the AP"),
        ParamDoc::new(
            "access",
            "{}",
            "this station's best-effort EDCA parameters aifsn, cwmin, cwmax, txop (each over the BSS's access)",
        ),
        ParamDoc::new(
            "qdisc",
            "the BSS's qdisc",
            "qdisc on this station's WiFi interface",
        ),
    ];
}

impl WifiConfig {
    /// Parameter documentation for `aqmlab describe wifi`.
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc::new("name", "wifi{k} (dumbbell: wifi)", "BSS name; its interface links are named NAME_NODE"),
        ParamDoc::new("ap", "required in [[wifi]]", "the access point node ([dumbbell.wifi] uses router_a)"),
        ParamDoc::new("stations", "required in [[wifi]]", "station nodes ([dumbbell.wifi] uses the clients)"),
        ParamDoc::new("rate", "link_budget", "how a direction without an mcs / ap_mcs key gets its MCS: link_budget (the fastest MCS whose 802.11-2012 minimum receiver sensitivity the received power meets) or fixed (AP 15, stations 7)"),
        ParamDoc::new("ap_mcs", "from rate (fixed: 15)", "the AP's transmit MCS (downlink), 0 to 8 x ap_streams - 1 (802.11n MCS table; 15 = 64-QAM 5/6 on two streams)"),
        ParamDoc::new("ap_streams", "2", "the AP's transmit spatial streams, 1 to 4 (a 2x2 AP)"),
        ParamDoc::new("mcs", "from rate (fixed: 7)", "every station's transmit MCS (uplink), 0 to 8 x streams - 1 (7 = 64-QAM 5/6 on one stream)"),
        ParamDoc::new("streams", "1", "every station's transmit spatial streams, 1 to 4 (Intel 5100: one transmit chain)"),
        ParamDoc::new("width", "20", "channel width in MHz: 20 or 40"),
        ParamDoc::new("guard_interval", "800ns", "OFDM guard interval: 800ns or 400ns"),
        ParamDoc::new("phy_rate", "none", "a fixed PHY rate in both directions instead of the MCS keys (4-us symbols)"),
        ParamDoc::new("fer", "0.0", "subframe error rate, 0 <= fer < 1"),
        ParamDoc::new("path_loss", "from the geometry", "path loss between the AP and each station in dB, 0 to 200; unset: the TGax residential model from distance, walls, floors and frequency"),
        ParamDoc::new("distance", "5.0", "distance between the AP and each station in metres, 1 to 10000"),
        ParamDoc::new("walls", "1", "walls between the AP and each station, 0 to 20 (5 dB each)"),
        ParamDoc::new("floors", "0", "floors between the AP and each station, 0 to 10"),
        ParamDoc::new("frequency", "5180", "centre frequency in MHz, 5150 to 5925 (5180: channel 36)"),
        ParamDoc::new("ap_tx_power", "the Nanostation M5's", "the AP's conducted transmit power in dBm at every MCS, -10 to 40 (Nanostation M5: 27 dBm at MCS 0-3, 26, 24, 22, 21 at MCS 4-7)"),
        ParamDoc::new("ap_antenna_gain", "14.6 (Nanostation M5)", "the AP's antenna gain in dBi, -20 to 40"),
        ParamDoc::new("tx_power", "16 (Intel 5100)", "every station's conducted transmit power in dBm, -10 to 40"),
        ParamDoc::new("antenna_gain", "0.0", "every station's antenna gain in dBi, -20 to 40"),
        ParamDoc::new("delay", "0ms", "one-way propagation delay"),
        ParamDoc::new("qdisc", "fifo 1000 (dumbbell: access_qdisc)", "qdisc on every WiFi interface"),
        ParamDoc::new("ap_qdisc", "qdisc", "qdisc on the AP's interface"),
        ParamDoc::new("wmm", "true", "WMM QoS: packets go to the access category of their DSCP (CS1 -> bk, CS5/EF -> vi, CS6/CS7 -> vo, others be), each with its own driver queue and EDCA parameters; false: all best effort"),
        ParamDoc::new("access", "{}", "best-effort EDCA parameters of every node: aifsn (1 to 15), cwmin, cwmax (2^k - 1), txop (0 to 2097120us, a multiple of 32us); unset keys are 802.11 best effort: 3, 15, 1023, 0 (the AP with wmm: cwmax 63)"),
        ParamDoc::new("ap_access", "{}", "the AP's best-effort EDCA parameters (over access)"),
        ParamDoc::new("ac", "{}", "the stations' EDCA parameters per access category vo, vi, be, bk (802.11-2012 Table 8-105: vo 2/3/7/1504us, vi 2/7/15/3008us, be 3/15/1023/0, bk 7/15/1023/0); needs wmm"),
        ParamDoc::new("ap_ac", "{}", "the AP's EDCA parameters per access category (hostapd's defaults: vo 1/3/7/1504us, vi 1/7/15/3008us, be 3/15/63/0, bk 7/15/1023/0); needs wmm"),
        ParamDoc::new("ap_driver", "ath9k", "the AP's driver: ath9k (123-frame queue, 32-frame A-MPDUs) or iwlwifi"),
        ParamDoc::new("station_driver", "iwlwifi", "every station's driver: iwlwifi (224-frame ring, woken at 190; 63-frame A-MPDUs) or ath9k"),
        ParamDoc::new("driver_queue", "the driver's", "frames below the qdisc at which every driver stops the qdisc"),
        ParamDoc::new("driver_wake", "the driver's", "frames at or below which a stopped driver wakes the qdisc (below driver_queue)"),
        ParamDoc::new("hw_aggregates", "the driver's", "aggregates prepared ahead of the medium (1 to 64)"),
        ParamDoc::new("max_frames", "the driver's", "subframes per A-MPDU, 1 to ba_window"),
        ParamDoc::new("ba_window", "64", "block-ack window in frames, 1 to 64 (802.11n)"),
        ParamDoc::new("max_bytes", "65535B", "A-MPDU length limit (802.11n maximum)"),
        ParamDoc::new("max_airtime", "the driver's (4ms)", "PPDU duration limit of an A-MPDU"),
        ParamDoc::new("retry_limit", "the driver's", "retransmissions of a subframe before it is dropped"),
        ParamDoc::new("slot", "9us", "slot time (OFDM)"),
        ParamDoc::new("sifs", "16us", "SIFS (5 GHz OFDM)"),
        ParamDoc::new("preamble", "HT-mixed: 36us (1 stream), 40us (2), 48us (3, 4); phy_rate: 40us", "preamble and headers before the data symbols (HT-mixed format)"),
        ParamDoc::new("control_rate", "24Mbit", "legacy rate of block acks"),
        ParamDoc::new("overhead", "14", "framing bytes the qdisc sees per packet (Ethernet); airtime uses the model's 802.11 framing"),
        ParamDoc::new("mtu", "1500", "largest IP packet"),
        ParamDoc::new("station", "{}", "per-station overrides [wifi.station.NAME] (see describe wifi.station)"),
    ];
}

const fn edca(aifsn: u32, cwmin: u32, cwmax: u32, txop_us: u64) -> Access {
    Access {
        aifsn,
        cwmin,
        cwmax,
        txop: SimDuration::from_micros(txop_us),
    }
}

/// 802.11 best-effort EDCA defaults (AIFSN 3, CWmin 15, CWmax 1023).
const BE: Access = edca(3, 15, 1023, 0);

/// A station's EDCA parameters per access category (VO, VI, BE, BK): IEEE 802.11-2012
/// Table 8-105 with aCWmin 15, aCWmax 1023 (OFDM), as an AP advertises them in its
/// EDCA/WMM parameter set (hostapd's `wmm_ac_*` defaults): TXOP limits 47 and 94 × 32 µs.
pub const STA_EDCA: [Access; 4] = [
    edca(2, 3, 7, 1504),
    edca(2, 7, 15, 3008),
    BE,
    edca(7, 15, 1023, 0),
];

/// The AP's own EDCA parameters per access category (VO, VI, BE, BK): hostapd's
/// `tx_queue_data*` defaults (`hostapd_config_defaults`, the dot11QAPEDCATable values
/// of IEEE 802.11-2012 Annex C): AIFSN 1 for VO and VI, BE's CWmax 4 × (15 + 1) − 1 =
/// 63, bursts of 1.5 and 3.0 ms, which the nl80211 driver interface hands to
/// mac80211 in 32-µs units rounded to nearest (`(burst × 100 + 16) / 32`): 47 and 94,
/// the same 1504 and 3008 µs as the stations'.
pub const AP_EDCA: [Access; 4] = [
    edca(1, 3, 7, 1504),
    edca(1, 7, 15, 3008),
    edca(3, 15, 63, 0),
    edca(7, 15, 1023, 0),
];

/// Resolves `ac` / `ap_ac` tables over `base` (index = AC), naming a bad key.
fn ac_table(
    base: [Access; 4],
    t: &BTreeMap<String, AccessConfig>,
    field: &str,
) -> Result<[Access; 4], ScenarioError> {
    let mut out = base;
    for (k, c) in t {
        let Some(a) = AC_NAMES.iter().position(|n| n == k) else {
            return Err(ScenarioError::new(
                format!("{field}.{k}"),
                format!("'{k}' is not an access category (allowed: vo, vi, be, bk)"),
            ));
        };
        out[a] = c.over(out[a]);
    }
    for (a, acc) in out.iter().enumerate() {
        check_access(*acc, &format!("{field}.{}", AC_NAMES[a]))?;
    }
    Ok(out)
}

fn check_access(a: Access, field: &str) -> Result<(), ScenarioError> {
    if !(1..=15).contains(&a.aifsn) {
        return Err(ScenarioError::new(
            format!("{field}.aifsn"),
            format!("{} is not allowed (1 to 15)", a.aifsn),
        ));
    }
    for (k, v) in [("cwmin", a.cwmin), ("cwmax", a.cwmax)] {
        if v > 32767 || !(v + 1).is_power_of_two() {
            return Err(ScenarioError::new(
                format!("{field}.{k}"),
                format!("{v} is not allowed (2^k - 1 up to 32767, e.g. 15, 31, 1023)"),
            ));
        }
    }
    if a.cwmax < a.cwmin {
        return Err(ScenarioError::new(
            format!("{field}.cwmax"),
            format!("{} is below cwmin {}", a.cwmax, a.cwmin),
        ));
    }
    let unit = SimDuration::from_micros(32);
    if a.txop > unit * 65535 || !a.txop.as_nanos().is_multiple_of(unit.as_nanos()) {
        return Err(ScenarioError::new(
            format!("{field}.txop"),
            format!(
                "{} us is not allowed (0 to 2097120us in multiples of 32us)",
                a.txop.as_nanos() as f64 / 1e3
            ),
        ));
    }
    Ok(())
}

impl Builder {
    fn warn(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.warnings.push(ScenarioWarning {
            field: field.into(),
            message: message.into(),
        });
    }

    /// [`Builder::warn`] unless `field` has a warning already (a check that meets the same
    /// key twice, e.g. on both directions of a link, warns once).
    pub(super) fn warn_once(&mut self, field: &str, message: impl Into<String>) {
        if !self.warnings.iter().any(|w| w.field == field) {
            self.warn(field, message);
        }
    }

    /// Warns about a link or shaper rate below 1 kbit/s: legal, but almost always a unit
    /// mistake (`rate = 10` is 10 bit/s; a bare number is bit/s). Once per field.
    pub(super) fn check_rate_magnitude(&mut self, field: &str, rate: Rate) {
        if rate.bps() < 1_000 {
            self.warn_once(field, format!("{rate}/s is below 1 kbit/s — a unit mistake? A bare number is bit/s; write e.g. \"10Mbit\""));
        }
    }

    /// Warns about a one-way delay above 10 s: legal, but almost always a unit mistake
    /// (`delay = 10` is 10 seconds; a bare number is seconds). Once per field.
    pub(super) fn check_delay_magnitude(&mut self, field: &str, delay: SimDuration) {
        if delay > SimDuration::from_secs(10) {
            self.warn_once(field, format!("{} s is above 10 s — a unit mistake? A bare number is seconds; write e.g. \"10ms\"", delay.as_secs_f64()));
        }
    }

    /// Puts a shaper on link `idx` and re-checks its qdisc at the shaped rate.
    pub(super) fn attach_shaper(
        &mut self,
        idx: usize,
        cfg: &ShaperConfig,
        field: &str,
    ) -> Result<(), ScenarioError> {
        let (p, q) = &self.links[idx];
        let frame = (p.mtu + p.overhead) as u64;
        let sp = cfg.resolve(frame);
        if sp.burst < frame {
            return Err(ScenarioError::new(
                format!("{field}.shaper.burst"),
                format!("{} bytes is less than one full-size frame ({frame} bytes = mtu + overhead); such a packet could never pass", sp.burst),
            ));
        }
        check_qdisc(q, sp.rate, p.mtu, p.overhead, field)?;
        if sp.rate > p.rate {
            let msg = format!("shaper rate {} is above the link rate {}: the shaper never holds traffic back and the wire is the bottleneck", sp.rate, p.rate);
            self.warn(format!("{field}.shaper.rate"), msg);
        }
        self.check_rate_magnitude(&format!("{field}.shaper.rate"), sp.rate);
        self.links[idx].0.lower = LowerParams::Shaper(sp);
        Ok(())
    }

    /// Builds an explicit `[[wifi]]` BSS between existing nodes.
    pub(super) fn explicit_wifi(
        &mut self,
        w: &WifiConfig,
        field: &str,
    ) -> Result<(), ScenarioError> {
        let ap_name = w.ap.as_deref().ok_or_else(|| {
            ScenarioError::new(
                format!("{field}.ap"),
                "missing: the access point's node name",
            )
        })?;
        let ap = self.node(ap_name, &format!("{field}.ap"))?;
        let names = w.stations.as_ref().ok_or_else(|| {
            ScenarioError::new(
                format!("{field}.stations"),
                "missing: a list of station node names",
            )
        })?;
        if names.is_empty() {
            return Err(ScenarioError::new(
                format!("{field}.stations"),
                "is empty: a BSS needs at least one station",
            ));
        }
        let mut stations = Vec::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            let id = self.node(n, &format!("{field}.stations[{i}]"))?;
            if id == ap {
                return Err(ScenarioError::new(
                    format!("{field}.stations[{i}]"),
                    format!("'{n}' is the access point"),
                ));
            }
            if stations.contains(&id) {
                return Err(ScenarioError::new(
                    format!("{field}.stations[{i}]"),
                    format!("'{n}' is listed twice"),
                ));
            }
            stations.push(id);
        }
        let name = w
            .name
            .clone()
            .unwrap_or_else(|| format!("wifi{}", self.media.len()));
        self.wifi_bss(w, &name, ap, &stations, &QdiscConfig::default(), field)
    }

    /// Builds one BSS: the AP's multi-peer interface, one interface per station, and the
    /// shared medium ([`Builder::resolve_bss`] checks, [`Builder::build_bss`] builds).
    pub(super) fn wifi_bss(
        &mut self,
        w: &WifiConfig,
        default_name: &str,
        ap: NodeId,
        stations: &[NodeId],
        default_qdisc: &QdiscConfig,
        field: &str,
    ) -> Result<(), ScenarioError> {
        let bss = self.resolve_bss(w, default_name, ap, stations, default_qdisc, field)?;
        self.build_bss(bss);
        Ok(())
    }

    /// Checks a BSS's keys and resolves every interface's parameters; builds nothing.
    fn resolve_bss(
        &self,
        w: &WifiConfig,
        default_name: &str,
        ap: NodeId,
        stations: &[NodeId],
        default_qdisc: &QdiscConfig,
        field: &str,
    ) -> Result<ResolvedBss, ScenarioError> {
        let err = |key: &str, msg: String| ScenarioError::new(format!("{field}.{key}"), msg);
        let name = w.name.clone().unwrap_or_else(|| default_name.to_string());
        check_bss_keys(w, field)?;
        let short_gi = w.guard_interval.0 == SimDuration::from_nanos(400);
        let st_names: Vec<String> = stations
            .iter()
            .map(|&s| self.nodes[s as usize].name.clone())
            .collect();
        check_station_keys(w, &st_names, field)?;
        let (sta_acs, ap_acs) = bss_access(w, field)?;
        let phy = WifiPhy {
            slot: w.slot.0,
            sifs: w.sifs.0,
            preamble: w.preamble.map_or(SimDuration::from_micros(40), |p| p.0),
            control_rate: w.control_rate.rate(),
        };
        let mode = |rate: Option<RateSpec>, mcs: u32| phy_mode(w, &phy, short_gi, rate, mcs);
        let base_q = w.qdisc.clone().unwrap_or_else(|| default_qdisc.clone());
        let mut down = Vec::with_capacity(stations.len());
        let mut fers = Vec::with_capacity(stations.len());
        let mut members = Vec::with_capacity(stations.len());
        for (i, n) in st_names.iter().enumerate() {
            let sc = w.station.get(n).cloned().unwrap_or_default();
            let sf = format!("{field}.station.{n}");
            let fer = sc.fer.unwrap_or(w.fer);
            if !(0.0..1.0).contains(&fer) {
                return Err(ScenarioError::new(
                    format!("{sf}.fer"),
                    format!("{fer} is not allowed (0 <= fer < 1)"),
                ));
            }
            let mut a = sta_acs;
            a[AC_BE] = sc.access.over(sta_acs[AC_BE]);
            check_access(a[AC_BE], &format!("{sf}.access"))?;
            let streams = sc.streams.unwrap_or(w.streams);
            check_streams(streams, &format!("{sf}.streams"))?;
            check_geometry(&sf, (sc.path_loss, sc.distance, sc.walls, sc.floors))?;
            let rate = sc.phy_rate.or(w.phy_rate);
            if rate.is_some() && (sc.mcs.is_some() || sc.ap_mcs.is_some()) {
                return Err(ScenarioError::new(
                    sf.clone(),
                    "phy_rate and mcs/ap_mcs are alternatives: give one".to_string(),
                ));
            }
            let (mcs, ap_mcs) = if rate.is_some() {
                (0, 0) // unused: phy_rate replaces the MCS
            } else {
                station_mcs(w, &sc, (field, &sf), streams)?
            };
            let up = mode(rate, mcs);
            down.push(mode(rate, ap_mcs));
            fers.push(fer);
            let driver = sc.driver.unwrap_or(w.station_driver);
            let dkey = if sc.driver.is_some() {
                format!("{sf}.driver")
            } else {
                format!("{field}.station_driver")
            };
            let (q, qf) = match &sc.qdisc {
                Some(q) => (q.clone(), sf.clone()),
                None => (base_q.clone(), field.to_string()),
            };
            let rate = up.rate();
            check_qdisc(&q, rate, w.mtu, w.overhead, &qf)?;
            members.push(ResolvedMember {
                node: stations[i],
                name: format!("{name}_{n}"),
                rate,
                access: a,
                qdisc: q,
                port: port_params(w, &phy, field, (driver, &dkey), (vec![up], vec![fer]), &a)?,
            });
        }
        if w.phy_rate.is_some() && (w.ap_mcs.is_some() || w.mcs.is_some()) {
            return Err(err(
                "phy_rate",
                "phy_rate and mcs/ap_mcs are alternatives: give one".to_string(),
            ));
        }
        let ap_q = w.ap_qdisc.clone().unwrap_or_else(|| base_q.clone());
        let ap_qf = if w.ap_qdisc.is_some() {
            format!("{field}.ap")
        } else {
            field.to_string()
        };
        let ap_rate = down
            .iter()
            .map(|m| m.rate())
            .max()
            .expect("at least one station");
        check_qdisc(&ap_q, ap_rate, w.mtu, w.overhead, &ap_qf)?;
        let ap_name = self.nodes[ap as usize].name.clone();
        let ap_member = ResolvedMember {
            node: ap,
            name: format!("{name}_{ap_name}"),
            rate: ap_rate,
            access: ap_acs,
            qdisc: ap_q,
            port: port_params(
                w,
                &phy,
                field,
                (w.ap_driver, &format!("{field}.ap_driver")),
                (down, fers),
                &ap_acs,
            )?,
        };
        Ok(ResolvedBss {
            name,
            ap: ap_member,
            stations: members,
            delay: w.delay.0,
            overhead: w.overhead,
            mtu: w.mtu,
            phy,
        })
    }

    /// Adds a resolved BSS's interfaces and medium to the plan.
    fn build_bss(&mut self, bss: ResolvedBss) {
        let medium = self.media.len() as u32;
        let peers: Vec<NodeId> = bss.stations.iter().map(|s| s.node).collect();
        let mut members = Vec::with_capacity(bss.stations.len() + 1);
        let mut push = |b: &mut Self, m: ResolvedMember, to: NodeId, peers: Vec<NodeId>| {
            members.push((b.links.len() as u32, m.access));
            let mut port = m.port;
            port.medium = medium;
            b.links.push((
                LinkParams {
                    name: m.name,
                    from: m.node,
                    to,
                    peers,
                    rate: m.rate,
                    delay: bss.delay,
                    overhead: bss.overhead,
                    mtu: bss.mtu,
                    device_queue: 1,
                    loss: 0.0,
                    loss_periods: vec![],
                    trace: b.trace,
                    gro: false,
                    lower: LowerParams::Wifi(port),
                },
                m.qdisc,
            ));
        };
        // the AP's interface: one qdisc, one next hop per station
        let ap = bss.ap.node;
        push(self, bss.ap, peers[0], peers.clone());
        for s in bss.stations {
            push(self, s, ap, vec![]);
        }
        self.media.push(MediumParams {
            name: bss.name,
            members,
            phy: bss.phy,
        });
    }
}

/// One resolved WiFi interface.
struct ResolvedMember {
    node: NodeId,
    name: String,
    rate: Rate,
    access: [Access; 4],
    qdisc: QdiscConfig,
    port: WifiPortParams,
}

/// A BSS with every key checked (see [`Builder::resolve_bss`]).
struct ResolvedBss {
    name: String,
    ap: ResolvedMember,
    stations: Vec<ResolvedMember>,
    delay: SimDuration,
    overhead: u32,
    mtu: u32,
    phy: WifiPhy,
}

/// One interface's driver, aggregation and timing parameters: `driver` with the key that
/// chose it (for messages), the peers' PHY modes and frame error rates, its EDCA table.
fn port_params(
    w: &WifiConfig,
    phy: &WifiPhy,
    field: &str,
    (driver, df): (WifiDriver, &str),
    (peer_mode, peer_fer): (Vec<PhyMode>, Vec<f64>),
    acs: &[Access; 4],
) -> Result<WifiPortParams, ScenarioError> {
    let d = driver.defaults();
    let queue = w.driver_queue.unwrap_or(d.queue);
    let wake = w.driver_wake.unwrap_or(if w.driver_queue.is_some() {
        queue - 1
    } else {
        d.wake
    });
    if wake >= queue {
        return Err(ScenarioError::new(
            format!("{field}.driver_wake"),
            format!(
                "{wake} is not allowed (0 to driver_queue - 1 = {}; {df} is {})",
                queue - 1,
                driver.name()
            ),
        ));
    }
    let max_frames = w.max_frames.unwrap_or(d.max_frames).min(w.ba_window);
    Ok(WifiPortParams {
        medium: 0,
        peer_mode,
        peer_fer,
        driver_queue: queue,
        driver_wake: wake,
        ba_window: w.ba_window as u64,
        hw_aggregates: w.hw_aggregates.unwrap_or(d.hw_aggregates),
        max_frames,
        max_bytes: w.max_bytes.0,
        max_airtime: w.max_airtime.map_or(d.max_airtime, |m| m.0),
        retry_limit: w.retry_limit.unwrap_or(d.retry_limit),
        phy: phy.clone(),
        wmm: w.wmm,
        txop: acs.map(|a| a.txop),
        aggregate_vo: d.aggregate_vo,
    })
}

/// The PHY mode of one direction: a fixed rate (`phy_rate`) or an HT MCS; an explicit
/// `preamble` replaces the HT one.
fn phy_mode(
    w: &WifiConfig,
    phy: &WifiPhy,
    short_gi: bool,
    rate: Option<RateSpec>,
    mcs: u32,
) -> PhyMode {
    match rate {
        Some(r) => PhyMode::from_rate(r.rate(), phy.preamble),
        None => {
            let mut m = PhyMode::ht(mcs, w.width, short_gi);
            if let Some(p) = w.preamble {
                m.preamble = p.0;
            }
            m
        }
    }
}

/// Every `station.NAME` table names a station of the BSS.
fn check_station_keys(
    w: &WifiConfig,
    st_names: &[String],
    field: &str,
) -> Result<(), ScenarioError> {
    for k in w.station.keys() {
        if !st_names.contains(k) {
            return Err(ScenarioError::new(
                format!("{field}.station.{k}"),
                format!(
                    "'{k}' is not a station of this BSS (stations: {})",
                    st_names.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Checks a BSS's scalar keys (timing, sizes, limits, streams and MCS) against their
/// allowed ranges.
fn check_bss_keys(w: &WifiConfig, field: &str) -> Result<(), ScenarioError> {
    let err = |key: &str, msg: String| ScenarioError::new(format!("{field}.{key}"), msg);
    if !(0.0..1.0).contains(&w.fer) {
        return Err(err(
            "fer",
            format!("{} is not allowed (0 <= fer < 1)", w.fer),
        ));
    }
    let key = |k: &str| format!("{field}.{k}");
    check_range(key("mtu"), w.mtu, 68, 65535, "68 to 65535")?;
    check_range(key("overhead"), w.overhead, 0, 1000, "0 to 1000 bytes")?;
    if w.width != 20 && w.width != 40 {
        return Err(err(
            "width",
            format!("{} is not allowed (20 or 40 MHz)", w.width),
        ));
    }
    let gi = w.guard_interval.0;
    if gi != SimDuration::from_nanos(800) && gi != SimDuration::from_nanos(400) {
        return Err(err(
            "guard_interval",
            format!("{gi} is not allowed (800ns or 400ns)"),
        ));
    }
    let ba = w.ba_window;
    check_range(
        key("ba_window"),
        ba,
        1,
        64,
        "1 to 64 frames: the 802.11n block-ack window",
    )?;
    if let Some(q) = w.driver_queue {
        check_range(key("driver_queue"), q, 1, 100_000, "1 to 100000 frames")?;
    }
    if let Some(h) = w.hw_aggregates {
        check_range(key("hw_aggregates"), h, 1, 64, "1 to 64 aggregates")?;
    }
    if let Some(m) = w.max_frames {
        let allowed = format!("1 to {ba}: the block-ack window");
        check_range(key("max_frames"), m, 1, ba, &allowed)?;
    }
    let min_bytes = (w.mtu + SUBFRAME_OVERHEAD + 3) as u64 & !3;
    if w.max_bytes.0 < min_bytes || w.max_bytes.0 > 1_048_575 {
        return Err(err(
            "max_bytes",
            format!(
                "{} is not allowed ({min_bytes} = one full-size subframe, to 1048575 bytes)",
                w.max_bytes.0
            ),
        ));
    }
    if let Some(ms) = w.max_airtime {
        if ms.0.is_zero() || ms.0 > SimDuration::from_millis(10) {
            return Err(err(
                "max_airtime",
                format!("{} is not allowed (above 0, at most 10ms)", ms.0),
            ));
        }
    }
    if let Some(r) = w.retry_limit {
        check_range(key("retry_limit"), r, 0, 1000, "0 to 1000")?;
    }
    if w.slot.0.is_zero() || w.slot.0 > SimDuration::from_millis(1) {
        return Err(err(
            "slot",
            format!("{} is not allowed (above 0, at most 1ms)", w.slot.0),
        ));
    }
    if w.sifs.0 > SimDuration::from_millis(1) {
        return Err(err(
            "sifs",
            format!("{} is not allowed (at most 1ms)", w.sifs.0),
        ));
    }
    if let Some(p) = w.preamble {
        if p.0 > SimDuration::from_millis(1) {
            return Err(err(
                "preamble",
                format!("{} is not allowed (at most 1ms)", p.0),
            ));
        }
    }
    check_streams(w.ap_streams, &format!("{field}.ap_streams"))?;
    check_streams(w.streams, &format!("{field}.streams"))?;
    if let Some(m) = w.ap_mcs {
        check_mcs(m, w.ap_streams, &key("ap_mcs"), "ap_streams")?;
    }
    if let Some(m) = w.mcs {
        check_mcs(m, w.streams, &key("mcs"), "streams")?;
    }
    check_geometry(
        field,
        (w.path_loss, Some(w.distance), Some(w.walls), Some(w.floors)),
    )?;
    check_range(
        key("frequency"),
        w.frequency,
        5150,
        5925,
        "5150 to 5925 MHz (5 GHz: the model's OFDM timing)",
    )?;
    for (k, v, lo, hi, unit) in [
        ("ap_tx_power", w.ap_tx_power, -10.0, 40.0, "dBm"),
        ("tx_power", w.tx_power, -10.0, 40.0, "dBm"),
        ("ap_antenna_gain", w.ap_antenna_gain, -20.0, 40.0, "dBi"),
        ("antenna_gain", w.antenna_gain, -20.0, 40.0, "dBi"),
    ] {
        if let Some(v) = v {
            check_f64(&key(k), v, lo, hi, unit)?;
        }
    }
    Ok(())
}

/// A finite `v` within `lo..=hi`, else an error naming `field` and the range.
fn check_f64(field: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), ScenarioError> {
    if !(lo..=hi).contains(&v) {
        return Err(ScenarioError::new(
            field,
            format!("{v} is not allowed ({lo} to {hi} {unit})"),
        ));
    }
    Ok(())
}

/// Checks the link-budget geometry keys of a BSS or a station table (`field`).
fn check_geometry(
    field: &str,
    (path_loss, distance, walls, floors): (Option<f64>, Option<f64>, Option<u32>, Option<u32>),
) -> Result<(), ScenarioError> {
    let key = |k: &str| format!("{field}.{k}");
    if let Some(pl) = path_loss {
        check_f64(&key("path_loss"), pl, 0.0, 200.0, "dB")?;
    }
    if let Some(d) = distance {
        check_f64(&key("distance"), d, 1.0, 10000.0, "m")?;
    }
    if let Some(n) = walls {
        check_range(key("walls"), n, 0, 20, "0 to 20 walls")?;
    }
    if let Some(n) = floors {
        check_range(key("floors"), n, 0, 10, "0 to 10 floors")?;
    }
    Ok(())
}

/// The uplink and downlink MCS between the AP and one station (`sc`, at `sf`): the
/// station's keys, then the BSS's, then [`chosen_mcs`]; each checked against its streams.
fn station_mcs(
    w: &WifiConfig,
    sc: &StationConfig,
    (field, sf): (&str, &str),
    streams: u32,
) -> Result<(u32, u32), ScenarioError> {
    let (mcs, mcs_key) = match (sc.mcs, w.mcs) {
        (Some(m), _) => (m, format!("{sf}.mcs")),
        (None, Some(m)) => (m, format!("{field}.mcs")),
        (None, None) => (
            chosen_mcs(w, sc, (field, sf), streams, false)?,
            format!("{field}.mcs"),
        ),
    };
    check_mcs(mcs, streams, &mcs_key, "streams")?;
    let (ap_mcs, ap_key) = match (sc.ap_mcs, w.ap_mcs) {
        (Some(m), _) => (m, format!("{sf}.ap_mcs")),
        (None, Some(m)) => (m, format!("{field}.ap_mcs")),
        (None, None) => (
            chosen_mcs(w, sc, (field, sf), w.ap_streams, true)?,
            format!("{field}.ap_mcs"),
        ),
    };
    check_mcs(ap_mcs, w.ap_streams, &ap_key, "ap_streams")?;
    Ok((mcs, ap_mcs))
}

/// The MCS of one direction between the AP and a station (`sc`, at `sf`) where no key
/// gives it: `rate = "fixed"`: 15 from the AP, 7 from a station; `rate =
/// "link_budget"`: the fastest the received power supports (`link::wifi_budget`).
fn chosen_mcs(
    w: &WifiConfig,
    sc: &StationConfig,
    (field, sf): (&str, &str),
    streams: u32,
    downlink: bool,
) -> Result<u32, ScenarioError> {
    if w.rate == RateControl::Fixed {
        return Ok(if downlink { d_ap_mcs() } else { d_mcs() });
    }
    let (pl, pl_key) = match (sc.path_loss, w.path_loss) {
        (Some(p), _) => (p, format!("{sf}.path_loss")),
        (None, Some(p)) => (p, format!("{field}.path_loss")),
        (None, None) => {
            let d = sc.distance.unwrap_or(w.distance);
            let k = if sc.distance.is_some() { sf } else { field };
            let pl = residential_path_loss(
                d,
                w.frequency as f64,
                sc.walls.unwrap_or(w.walls),
                sc.floors.unwrap_or(w.floors),
            );
            (pl, format!("{k}.distance"))
        }
    };
    let ap = Radio {
        tx_power_dbm: w
            .ap_tx_power
            .map_or(NANOSTATION_M5.tx_power_dbm, |p| [p; 8]),
        antenna_gain_dbi: w.ap_antenna_gain.unwrap_or(NANOSTATION_M5.antenna_gain_dbi),
    };
    let sta = Radio {
        tx_power_dbm: w.tx_power.map_or(INTEL_5100.tx_power_dbm, |p| [p; 8]),
        antenna_gain_dbi: w.antenna_gain.unwrap_or(INTEL_5100.antenna_gain_dbi),
    };
    let (tx, rx) = if downlink { (ap, sta) } else { (sta, ap) };
    best_mcs(&tx, rx.antenna_gain_dbi, pl, streams, w.width)
        .map(|b| b.mcs)
        .map_err(|rx_dbm| {
            ScenarioError::new(
                pl_key,
                format!(
                    "the link budget reaches no MCS {}: {rx_dbm:.1} dBm received at MCS 0 over a path loss of {pl:.1} dB, below its minimum sensitivity {} dBm (IEEE 802.11-2012 Table 20-22); allowed: a path loss that leaves MCS 0 reachable, or rate = \"fixed\" / mcs and ap_mcs",
                    if downlink { "from the AP" } else { "from the station" },
                    crate::link::wifi_budget::MIN_SENSITIVITY_DBM[usize::from(w.width == 40)][0],
                ),
            )
        })
}

/// The EDCA parameters per access category of the stations and of the AP: the
/// standard's and hostapd's tables under the BSS's overrides with WMM, one best-effort
/// set for every category without.
fn bss_access(w: &WifiConfig, field: &str) -> Result<([Access; 4], [Access; 4]), ScenarioError> {
    let base = w.access.over(BE);
    check_access(base, &format!("{field}.access"))?;
    let ap_access = w.ap_access.over(base);
    check_access(ap_access, &format!("{field}.ap_access"))?;
    // per access category: without WMM everything is best effort (one queue)
    if w.wmm {
        let mut sta = STA_EDCA;
        sta[AC_BE] = base;
        let mut ap = AP_EDCA;
        ap[AC_BE] = w.ap_access.over(w.access.over(AP_EDCA[AC_BE]));
        Ok((
            ac_table(sta, &w.ac, &format!("{field}.ac"))?,
            ac_table(ap, &w.ap_ac, &format!("{field}.ap_ac"))?,
        ))
    } else {
        for (k, t) in [("ac", &w.ac), ("ap_ac", &w.ap_ac)] {
            if !t.is_empty() {
                return Err(ScenarioError::new(
                    format!("{field}.{k}"),
                    "per-access-category parameters need wmm = true".to_string(),
                ));
            }
        }
        Ok(([base; 4], [ap_access; 4]))
    }
}

fn check_streams(n: u32, field: &str) -> Result<(), ScenarioError> {
    if !(1..=4).contains(&n) {
        return Err(ScenarioError::new(
            field,
            format!("{n} is not allowed (1 to 4 spatial streams)"),
        ));
    }
    Ok(())
}

fn check_mcs(mcs: u32, streams: u32, field: &str, streams_key: &str) -> Result<(), ScenarioError> {
    if mcs > max_mcs(streams) {
        return Err(ScenarioError::new(
            field,
            format!(
                "{mcs} is not allowed (0 to {} with {streams_key} = {streams}: MCS 8k to 8k + 7 need k + 1 streams)",
                max_mcs(streams)
            ),
        ));
    }
    Ok(())
}
