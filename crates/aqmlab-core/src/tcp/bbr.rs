//! BBR version 1, as Linux implements it in `net/ipv4/tcp_bbr.c` (followed here: the
//! 4.20 file, with the 1 % pacing margin, plus the two changes of Linux 5.1 that move
//! results, selected by `[tcp] bbr_version`: the ACK-aggregation allowance
//! `extra_acked` in the cwnd target and the "+2 segments" of the quantisation budget in
//! the probing phase only) and as draft-cardwell-iccrg-bbr-congestion-control-00
//! describes it.
//!
//! **ACK aggregation (5.1+).** An ACK epoch starts whenever the segments ACKed since the
//! last one fall to or below what BtlBw would have delivered in it (or after an idle
//! restart); the excess ACKed in an epoch, at most cwnd, is kept as a windowed maximum
//! over two alternating 5-round windows, and once the pipe was filled (`full_bw_reached`)
//! the cwnd target is gain × BDP + that maximum (at most 100 ms of BtlBw) + the send
//! quanta. Delayed ACKs and flows sharing a bottleneck make ACKs arrive in clumps, so
//! cwnd-limited flows (several BBR flows in a deep buffer) keep more in flight than 4.20
//! did; a lone pacing-limited flow does not change.
//!
//! BBR does not react to individual losses. It builds a model of the path from the
//! delivery-rate samples the sender takes on every ACK ([`RateSample`], Linux
//! `tcp_rate.c`) and RTT samples:
//! - **BtlBw**: a windowed maximum of the delivery rate over the last 10 packet-timed
//!   round trips (`bbr_bw_rtts` = cycle length + 2), with Kathleen Nichols' three-sample
//!   running-max filter (Linux `lib/win_minmax.c`); application-limited samples enter
//!   only when they raise it.
//! - **RTprop**: the minimum RTT over 10 s (`bbr_min_rtt_win_sec`).
//!
//! It paces at `pacing_gain × BtlBw × (1 − 1 %)` and caps the flight at
//! `cwnd_gain × BtlBw × RTprop` plus 3 send quanta (Linux's TSO budget:
//! `bbr_tso_segs_goal`, 2 segments at these rates, 1 below 1.2 Mbit/s), rounded up to an
//! even number, + 2 segments while probing. Its modes:
//! - **STARTUP**: pacing and cwnd gain 2/ln 2 ≈ 2.885 (`bbr_high_gain` = 739/256), until
//!   three rounds in a row raised BtlBw by less than 25 % (`bbr_full_bw_thresh`,
//!   `bbr_full_bw_cnt`).
//! - **DRAIN**: pacing gain 1/2.885 (88/256) until the flight is down to one BDP.
//! - **PROBE_BW**: pacing gain cycles 1.25, 0.75, 1, 1, 1, 1, 1, 1, a phase per RTprop
//!   (the 1.25 phase lasts until the flight reached 1.25 BDP or a loss, the 0.75 phase
//!   ends early once the flight is down to one BDP); cwnd gain 2. The cycle starts at a
//!   random phase other than 0.75 (`bbr_cycle_rand` = 7), drawn from the flow's seeded
//!   random stream.
//! - **PROBE_RTT**: when RTprop was not refreshed for 10 s, cwnd is capped at 4 segments
//!   (`bbr_cwnd_min_target`) for max(200 ms, one round) once the flight is that low
//!   (`bbr_probe_rtt_mode_ms`); then back to PROBE_BW (or STARTUP).
//!
//! Losses: on entering fast recovery cwnd = in flight + newly delivered and packet
//! conservation holds for one round; newly lost segments are subtracted from cwnd; the
//! window before recovery (or an RTO) is restored when it ends. The **long-term
//! (policer) mode** is modelled: when two consecutive sampling intervals of 4–16 rounds
//! each saw ≥ 20 % loss (`bbr_lt_loss_thresh` = 50/256) at delivery rates within 12.5 %
//! or 4 kbit/s of each other, BBR uses their mean as BtlBw with pacing gain 1 for 48
//! rounds (`bbr_lt_bw_max_rtts`).
//!
//! Units: rates are kept in segments per second as `f64` (Linux: segments per µs in
//! 2^24 fixed point), gains in Linux's 8-bit fixed point values. The pacing rate is in
//! wire bytes per second (segments × MTU): Linux paces the segment payload at
//! `bw × MSS`, the same segment spacing.
//!
//! The phase and DRAIN exits look at the flight expected when the next segment leaves
//! by the pacing clock (`bbr_packets_in_net_at_edt`, 4.20+): the flight less what
//! BtlBw delivers until the pacing stamp, plus one send quantum while the gain is above
//! 1 — so a probing phase ends a quantum early and a draining one when the queue will
//! have drained by the next departure.
//!
//! Not modelled: GSO-sized departures (Linux sends `tcp_tso_segs` segments per pacing
//! step, 2 at these rates; the simulator paces segment by segment, see
//! docs/validation.md "BBR and CAKE on the kernel"), `is_ack_delayed` (every RTT sample
//! may refresh an expired RTprop), undo of
//! spurious recoveries (the sender has none). On an RTO the long-term sampler sees the
//! delivery and loss counters of the last ACK.

use super::cc::CaState;
use super::cc::{AckSample, CcBuild, CcParams, CongestionControl, RateSample, Window};
use super::config::BbrVersion;
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};

/// Linux `BBR_UNIT` fixed point of gains (2^8).
const UNIT: f64 = 256.0;
/// STARTUP gain 2/ln2 (`bbr_high_gain` = 2885/1000 × 256 + 1 = 739 / 256).
pub const HIGH_GAIN: f64 = 739.0 / UNIT;
/// DRAIN pacing gain (`bbr_drain_gain` = 1000/2885 × 256 = 88 / 256).
pub const DRAIN_GAIN: f64 = 88.0 / UNIT;
/// PROBE_BW cwnd gain (`bbr_cwnd_gain`).
pub const CWND_GAIN: f64 = 2.0;
/// PROBE_BW pacing gain cycle (`bbr_pacing_gain`).
pub const PACING_GAIN: [f64; CYCLE_LEN] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
pub const CYCLE_LEN: usize = 8;
/// The random start phase is drawn from this many phases (`bbr_cycle_rand`).
const CYCLE_RAND: u64 = 7;
/// Max-bw filter window in rounds (`bbr_bw_rtts` = CYCLE_LEN + 2).
pub const BW_RTTS: u32 = CYCLE_LEN as u32 + 2;
/// RTprop filter window (`bbr_min_rtt_win_sec`).
pub const MIN_RTT_WIN: SimDuration = SimDuration::from_secs(10);
/// Time spent at the minimal window in PROBE_RTT (`bbr_probe_rtt_mode_ms`).
pub const PROBE_RTT_TIME: SimDuration = SimDuration::from_millis(200);
/// Minimal cwnd, and the PROBE_RTT window (`bbr_cwnd_min_target`).
pub const CWND_MIN_TARGET: u32 = 4;
/// Pacing margin (`bbr_pacing_margin_percent`).
pub const PACING_MARGIN: f64 = 0.01;
/// STARTUP ends after this many rounds with < 25 % growth (`bbr_full_bw_cnt`,
/// `bbr_full_bw_thresh` = 5/4).
pub const FULL_BW_CNT: u32 = 3;
pub const FULL_BW_THRESH: f64 = 1.25;
/// Linux's initial window, the target before any RTT is known (`TCP_INIT_CWND`).
const INIT_CWND: u32 = 10;
/// Below this pacing rate one segment per quantum, else two (`bbr_min_tso_rate`,
/// 1.2 Mbit/s).
const MIN_TSO_RATE: f64 = 1_200_000.0 / 8.0;
/// Long-term sampling (`bbr_lt_intvl_min_rtts`, `bbr_lt_loss_thresh` = 50/256,
/// `bbr_lt_bw_ratio` = 1/8, `bbr_lt_bw_diff` = 4 kbit/s, `bbr_lt_bw_max_rtts`).
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: f64 = 50.0 / UNIT;
const LT_BW_RATIO: f64 = 1.0 / 8.0;
const LT_BW_DIFF: f64 = 4000.0 / 8.0;
const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation (Linux 5.1+): the max-filter window of the excess-ACKed estimate in
/// rounds (`bbr_extra_acked_win_rtts`, two windows alternating), the epoch's reset
/// threshold (`bbr_ack_epoch_acked_reset_thresh` = 2^20 segments) and the cap of the
/// allowance (`bbr_extra_acked_max_us` = 100 ms of BtlBw); its gain
/// (`bbr_extra_acked_gain`) is 1.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET: u32 = 1 << 20;
const EXTRA_ACKED_MAX: f64 = 0.1;

/// Kathleen Nichols' windowed running maximum (Linux `lib/win_minmax.c`): the best, 2nd
/// best and 3rd best samples of the window, so the maximum expires in steps.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct MaxFilter {
    s: [(u32, f64); 3],
}

impl MaxFilter {
    pub fn get(&self) -> f64 {
        self.s[0].1
    }
    pub fn reset(&mut self, t: u32, v: f64) {
        self.s = [(t, v); 3];
    }
    /// `minmax_running_max`: a sample `v` at time `t` (here: a round count), window `win`.
    pub fn update(&mut self, win: u32, t: u32, v: f64) -> f64 {
        let val = (t, v);
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            self.reset(t, v);
            return v;
        }
        if v >= self.s[1].1 {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        // minmax_subwin_update: age the best samples out in quarters of the window.
        let dt = t.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if t.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].1
    }
}

/// BBR's modes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Pacing rate (bytes/s) for `bw` segments/s at `gain`: Linux `bbr_rate_bytes_per_sec`.
pub fn rate_bytes(bw: f64, gain: f64, mtu: u32) -> f64 {
    bw * mtu as f64 * gain * (1.0 - PACING_MARGIN)
}

/// The pacing rate before the first bandwidth sample (`bbr_init_pacing_rate_from_rtt`):
/// the window `cwnd` over the handshake RTT `srtt` (1 ms without one) at `gain`.
pub fn initial_pacing_rate(cwnd: u32, srtt: SimDuration, gain: f64, mtu: u32) -> f64 {
    let rtt = if srtt.is_zero() {
        1e-3
    } else {
        srtt.as_secs_f64()
    };
    rate_bytes(cwnd as f64 / rtt, gain, mtu)
}

/// The plateau test of `bbr_check_full_bw_reached` (v1 and v3): a max bandwidth at least
/// [`FULL_BW_THRESH`] × `full_bw` records itself and restarts the count (false);
/// otherwise one more round without growth, true once there have been [`FULL_BW_CNT`].
pub fn bw_plateaued(max_bw: f64, full_bw: &mut f64, cnt: &mut u32) -> bool {
    if max_bw >= *full_bw * FULL_BW_THRESH {
        *full_bw = max_bw;
        *cnt = 0;
        return false;
    }
    *cnt += 1;
    *cnt >= FULL_BW_CNT
}

/// Linux `bbr_tso_segs_goal`: segments per send quantum at this pacing rate (one
/// millisecond of data, `sk_pacing_shift` = 10, at least 2 — 1 below 1.2 Mbit/s — at
/// most 127).
pub fn tso_segs_goal(pacing_rate: f64, mss: u32) -> u32 {
    let bytes = (pacing_rate / 1024.0).min(65_536.0 - 1.0 - 320.0);
    let min = if pacing_rate < MIN_TSO_RATE { 1 } else { 2 };
    ((bytes / mss as f64) as u32).max(min).min(0x7f)
}

#[derive(Clone, Debug)]
pub struct Bbr {
    mss: u32,
    /// IP + TCP header bytes of a full segment.
    hdr: u32,
    rng: Rng,
    pub mode: Mode,
    /// Max-bw filter over rounds (segments/s).
    bw: MaxFilter,
    /// Packet-timed rounds (`rtt_cnt`) and the delivery count that ends this one.
    pub rtt_cnt: u32,
    next_rtt_delivered: u64,
    pub round_start: bool,
    /// RTprop and when it was last refreshed.
    pub min_rtt: Option<SimDuration>,
    min_rtt_stamp: SimTime,
    probe_rtt_done: Option<SimTime>,
    probe_rtt_round_done: bool,
    /// Last PROBE_RTT entry (for traces and tests).
    pub probe_rtt_entries: u32,
    prev_ca_state: CaState,
    packet_conservation: bool,
    prior_cwnd: u32,
    idle_restart: bool,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
    pub full_bw_reached: bool,
    full_bw: f64,
    full_bw_cnt: u32,
    pub cycle_idx: usize,
    cycle_stamp: SimTime,
    /// The current pacing rate in bytes/s (`sk_pacing_rate`), 0 until set.
    pacing: f64,
    has_seen_rtt: bool,
    // Long-term (policer) estimation.
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    pub lt_use_bw: bool,
    pub lt_bw: f64,
    lt_last_delivered: u64,
    lt_last_stamp: SimTime,
    lt_last_lost: u64,
    /// Counters of the last rate sample (for the RTO's long-term sample).
    last_delivered: u64,
    last_delivered_time: SimTime,
    last_lost: u64,
    last_app_limited: bool,
    /// Linux 5.1+ (`bbr_version = "linux"`): the ACK-aggregation allowance and the
    /// "+2 segments" of the probing phase by cycle index; false = 4.20.
    linux51: bool,
    /// Excess ACKed segments, max per window of 5 rounds, two windows (`extra_acked`).
    extra_acked: [u32; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// Start of the current ACK epoch (`ack_epoch_mstamp`) and segments ACKed in it.
    ack_epoch_start: SimTime,
    ack_epoch_acked: u32,
}

impl CcBuild for Bbr {
    fn build(p: &CcParams) -> Self {
        Bbr {
            mss: p.mss,
            hdr: p.header,
            rng: Rng::default(),
            mode: Mode::Startup,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: SimTime::ZERO,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            probe_rtt_entries: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            prior_cwnd: 0,
            idle_restart: false,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            cycle_idx: 0,
            cycle_stamp: SimTime::ZERO,
            pacing: 0.0,
            has_seen_rtt: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0.0,
            lt_last_delivered: 0,
            lt_last_stamp: SimTime::ZERO,
            lt_last_lost: 0,
            last_delivered: 0,
            last_delivered_time: SimTime::ZERO,
            last_lost: 0,
            last_app_limited: false,
            linux51: p.bbr_version == BbrVersion::Linux,
            extra_acked: [0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            ack_epoch_start: SimTime::ZERO,
            ack_epoch_acked: 0,
        }
    }
}

impl Bbr {
    fn mtu(&self) -> u32 {
        self.mss + self.hdr
    }
    /// The windowed max bandwidth (segments/s).
    pub fn max_bw(&self) -> f64 {
        self.bw.get()
    }
    /// BtlBw: the long-term estimate while policed, else the max filter.
    pub fn btl_bw(&self) -> f64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }
    /// The pacing rate in bytes/s.
    pub fn pacing_rate_bytes(&self) -> f64 {
        self.pacing
    }

    /// Linux `bbr_inflight` (5.1+; `bbr_target_cwnd` in 4.20): the flight for `gain` ×
    /// BDP plus the send-quantum budget.
    pub fn target_cwnd(&self, bw: f64, gain: f64) -> u32 {
        self.target_with(bw, gain, 0)
    }

    /// The flight for `gain` × BDP plus `extra` segments (the ACK-aggregation allowance
    /// in `bbr_set_cwnd`, 0 elsewhere), then the send-quantum budget.
    fn target_with(&self, bw: f64, gain: f64, extra: u32) -> u32 {
        match self.bdp(bw, gain) {
            Some(bdp) => self.quantization_budget(bdp + extra, gain),
            // 4.20 returns the initial window before any RTT sample as it is; 5.1+
            // (`bbr_bdp`) passes it through the budget
            None if self.linux51 => self.quantization_budget(INIT_CWND + extra, gain),
            None => INIT_CWND,
        }
    }

    /// Segments BtlBw delivers in `d`, counted in whole microseconds as Linux does
    /// (`bw × interval_us >> BW_SCALE`).
    fn delivered_in(&self, d: SimDuration) -> u32 {
        (self.btl_bw() * (d.as_nanos() / 1000) as f64 * 1e-6) as u32
    }

    /// `bbr_bdp`: `gain` × BtlBw × RTprop in segments, rounded up; None before any RTT.
    fn bdp(&self, bw: f64, gain: f64) -> Option<u32> {
        let rtt = self.min_rtt?;
        let bdp = bw * rtt.as_secs_f64();
        // Linux rounds up in fixed point; 1e-9 absorbs f64 error at exact products.
        Some((bdp * gain - 1e-9).ceil().max(0.0) as u32)
    }

    /// `bbr_quantization_budget`: 3 send quanta, rounded up to an even number, + 2
    /// segments in PROBE_BW's probing phase (5.1+: cycle index 0; 4.20: a gain above 1,
    /// which the cwnd's gain of 2 always is).
    fn quantization_budget(&self, cwnd: u32, gain: f64) -> u32 {
        let mut cwnd = cwnd + 3 * tso_segs_goal(self.pacing, self.mss);
        cwnd = (cwnd + 1) & !1;
        let probing = if self.linux51 {
            self.cycle_idx == 0
        } else {
            gain > 1.0
        };
        if self.mode == Mode::ProbeBw && probing {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_update_ack_aggregation` (5.1+): the segments ACKed in the current epoch
    /// beyond what BtlBw would have delivered in it, windowed max over 5–10 rounds.
    fn update_ack_aggregation(&mut self, rs: &RateSample, acked: u32, cwnd: u32) {
        if !self.linux51 || acked == 0 || !rs.valid {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let mut expected =
            self.delivered_in(rs.delivered_time.saturating_since(self.ack_epoch_start));
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + acked >= ACK_EPOCH_ACKED_RESET
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_start = rs.delivered_time;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + acked).min(0xFFFFF);
        let extra = (self.ack_epoch_acked - expected).min(cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// `bbr_ack_aggregation_cwnd` (5.1+): the allowance added to the cwnd target once
    /// the pipe was filled, at most 100 ms of BtlBw.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if !self.linux51 || !self.full_bw_reached {
            return 0;
        }
        let max = (self.btl_bw() * EXTRA_ACKED_MAX) as u32;
        self.extra_acked[0].max(self.extra_acked[1]).min(max)
    }

    fn set_pacing_rate(&mut self, bw: f64, gain: f64) {
        let rate = rate_bytes(bw, gain, self.mtu());
        if self.full_bw_reached || rate > self.pacing {
            self.pacing = rate;
        }
    }

    /// `bbr_init_pacing_rate_from_rtt`: cwnd / srtt × high gain.
    fn init_pacing_rate(&mut self, cwnd: u32, srtt: Option<SimDuration>) {
        let rtt = match srtt {
            Some(s) if !s.is_zero() => {
                self.has_seen_rtt = true;
                s.as_secs_f64()
            }
            _ => 1e-3,
        };
        self.pacing = rate_bytes(cwnd as f64 / rtt, HIGH_GAIN, self.mtu());
    }

    fn save_cwnd(&mut self, cwnd: u32) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    fn reset_startup_mode(&mut self) {
        self.mode = Mode::Startup;
        self.pacing_gain = HIGH_GAIN;
        self.cwnd_gain = HIGH_GAIN;
    }

    fn reset_probe_bw_mode(&mut self, now: SimTime) {
        self.mode = Mode::ProbeBw;
        self.pacing_gain = 1.0;
        self.cwnd_gain = CWND_GAIN;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(CYCLE_RAND) as usize;
        self.advance_cycle_phase(now);
    }

    fn reset_mode(&mut self, now: SimTime) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(now);
        } else {
            self.reset_startup_mode();
        }
    }

    fn advance_cycle_phase(&mut self, now: SimTime) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = now;
        self.pacing_gain = if self.lt_use_bw {
            1.0
        } else {
            PACING_GAIN[self.cycle_idx]
        };
    }

    /// `bbr_packets_in_net_at_edt` (4.20+): the flight expected when the next segment
    /// leaves by the pacing clock — less what BtlBw delivers until then, plus the next
    /// send quantum while the gain is above 1.
    fn packets_in_net_at_edt(&self, inflight: u32, rs: &RateSample, now: SimTime) -> u32 {
        let delivered = self.delivered_in(rs.next_departure.saturating_since(now));
        let mut at_edt = inflight;
        if self.pacing_gain > 1.0 {
            at_edt += tso_segs_goal(self.pacing, self.mss);
        }
        at_edt.saturating_sub(delivered)
    }

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, rs: &RateSample, now: SimTime) -> bool {
        let full_length = self
            .min_rtt
            .is_some_and(|m| rs.delivered_time.saturating_since(self.cycle_stamp) > m);
        if self.pacing_gain == 1.0 {
            return full_length;
        }
        let inflight = self.packets_in_net_at_edt(rs.prior_in_flight, rs, now);
        let bw = self.max_bw();
        if self.pacing_gain > 1.0 {
            return full_length
                && (rs.losses > 0 || inflight >= self.target_cwnd(bw, self.pacing_gain));
        }
        full_length || inflight <= self.target_cwnd(bw, 1.0)
    }

    fn reset_lt_interval(&mut self, rs: &RateSample) {
        self.lt_last_stamp = rs.delivered_time;
        self.lt_last_delivered = rs.delivered_total;
        self.lt_last_lost = rs.lost_total;
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt(&mut self, rs: &RateSample) {
        self.lt_bw = 0.0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_interval(rs);
    }

    fn lt_interval_done(&mut self, bw: f64, rs: &RateSample) {
        if self.lt_bw > 0.0 {
            let diff = (bw - self.lt_bw).abs();
            if diff <= LT_BW_RATIO * self.lt_bw
                || rate_bytes(diff, 1.0, self.mss) / (1.0 - PACING_MARGIN) <= LT_BW_DIFF
            {
                self.lt_bw = (bw + self.lt_bw) / 2.0;
                self.lt_use_bw = true;
                self.pacing_gain = 1.0;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_interval(rs);
    }

    /// `bbr_lt_bw_sampling`: detect a token-bucket policer from sustained loss at a
    /// steady delivery rate.
    fn lt_sampling(&mut self, rs: &RateSample, now: SimTime) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt(rs);
                    self.reset_probe_bw_mode(now);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_interval(rs);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt(rs);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt(rs);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost = rs.lost_total.saturating_sub(self.lt_last_lost);
        let delivered = rs.delivered_total.saturating_sub(self.lt_last_delivered);
        if delivered == 0 || (lost as f64) < LT_LOSS_THRESH * delivered as f64 {
            return;
        }
        // Linux measures the interval in whole milliseconds.
        let t_ms = (rs.delivered_time.as_nanos() / 1_000_000) as i64
            - (self.lt_last_stamp.as_nanos() / 1_000_000) as i64;
        if t_ms < 1 {
            return;
        }
        let bw = delivered as f64 / (t_ms as f64 * 1e-3);
        self.lt_interval_done(bw, rs);
    }

    /// `bbr_update_bw`: rounds and the max-bw filter.
    fn update_bw(&mut self, rs: &RateSample, now: SimTime) {
        self.round_start = false;
        if !rs.valid {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = rs.delivered_total;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_sampling(rs, now);
        let bw = rs.delivered as f64 / rs.interval.as_secs_f64();
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let max_bw = self.max_bw();
        self.full_bw_reached = bw_plateaued(max_bw, &mut self.full_bw, &mut self.full_bw_cnt);
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, w: &mut Window, rs: &RateSample, now: SimTime) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.pacing_gain = DRAIN_GAIN;
            self.cwnd_gain = HIGH_GAIN;
            w.ssthresh = self.target_cwnd(self.max_bw(), 1.0);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(rs.in_flight, rs, now)
                <= self.target_cwnd(self.max_bw(), 1.0)
        {
            self.reset_probe_bw_mode(now);
        }
    }

    fn check_probe_rtt_done(&mut self, w: &mut Window, now: SimTime) {
        if self.probe_rtt_done.is_none_or(|d| now <= d) {
            return;
        }
        self.min_rtt_stamp = now;
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        self.reset_mode(now);
    }

    /// `bbr_update_min_rtt`: the RTprop filter and PROBE_RTT.
    fn update_min_rtt(&mut self, w: &mut Window, a: &AckSample) {
        let now = a.now;
        let rs = &a.rs;
        let expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(r) = a.rtt {
            if self.min_rtt.is_none_or(|m| r <= m) || expired {
                self.min_rtt = Some(r);
                self.min_rtt_stamp = now;
            }
        }
        if expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.save_cwnd(w.cwnd);
            self.probe_rtt_done = None;
            self.probe_rtt_entries += 1;
        }
        if self.mode == Mode::ProbeRtt {
            if self.probe_rtt_done.is_none() && rs.in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done = Some(now + PROBE_RTT_TIME);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = rs.delivered_total;
            } else if self.probe_rtt_done.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(w, now);
                }
            }
        }
        if rs.valid && rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: the window while losses are repaired.
    /// Returns the new cwnd and whether packet conservation decides it.
    fn recover_or_restore(&mut self, w: &Window, rs: &RateSample, acked: u32) -> (u32, bool) {
        let state = rs.ca_state;
        let mut cwnd = w.cwnd;
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = rs.delivered_total;
            cwnd = rs.in_flight + acked;
        } else if self.prev_ca_state >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(rs.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, w: &mut Window, rs: &RateSample, acked: u32) {
        let mut cwnd = w.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(w, rs, acked);
            cwnd = c;
            if !conserving {
                // 5.1+: the ACK-aggregation allowance joins the BDP before the budget
                let extra = self.ack_aggregation_cwnd();
                let target = self.target_with(self.btl_bw(), self.cwnd_gain, extra);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || rs.delivered_total < INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        w.cwnd = cwnd.min(w.clamp).max(1);
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(CWND_MIN_TARGET);
        }
    }
}

impl CongestionControl for Bbr {
    fn init(&mut self, w: &mut Window, now: SimTime, _snd_nxt: u64) {
        // bbr_init; the pacing rate follows from the first srtt seen.
        self.ack_epoch_start = now;
        self.init_pacing_rate(w.cwnd, None);
        self.has_seen_rtt = false;
        self.pacing = 0.0;
    }

    fn set_seed(&mut self, seed: u64) {
        self.rng = Rng::stream(seed, "bbr", 0);
    }

    fn on_ack(&mut self, _w: &mut Window, _a: &AckSample) {}

    /// `bbr_ssthresh`: remember the window; ssthresh is not reduced.
    fn on_loss(&mut self, w: &Window, _now: SimTime) -> u32 {
        self.save_cwnd(w.cwnd);
        w.ssthresh
    }

    fn on_ecn(&mut self, w: &Window, now: SimTime) -> u32 {
        self.on_loss(w, now)
    }

    /// `bbr_ssthresh` (first RTO of an episode) and `bbr_set_state(TCP_CA_Loss)`.
    fn on_rto(&mut self, w: &Window, now: SimTime, _snd_nxt: u64, reduce: bool) -> Option<u32> {
        if reduce {
            self.save_cwnd(w.cwnd);
        }
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        self.round_start = true;
        let rs = RateSample {
            losses: 1,
            delivered_total: self.last_delivered,
            delivered_time: self.last_delivered_time,
            lost_total: self.last_lost,
            ..RateSample::default()
        };
        self.lt_sampling(&rs, now);
        reduce.then_some(w.ssthresh)
    }

    /// `bbr_cwnd_event(CA_EVENT_TX_START)` after an application-limited pause.
    fn on_tx_start(&mut self, now: SimTime, _idle: SimDuration) {
        if self.last_app_limited {
            self.idle_restart = true;
            if self.linux51 {
                // 5.1+: a new ACK epoch after the idle period
                self.ack_epoch_start = now;
                self.ack_epoch_acked = 0;
            }
            if self.mode == Mode::ProbeBw {
                self.set_pacing_rate(self.btl_bw(), 1.0);
            }
        }
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    fn marks_app_limited(&self) -> bool {
        self.mode == Mode::ProbeRtt
    }

    /// `bbr_main`.
    fn cong_control(&mut self, w: &mut Window, a: &AckSample) -> bool {
        let rs = &a.rs;
        let now = a.now;
        if !self.has_seen_rtt && a.srtt.is_some() {
            self.init_pacing_rate(w.cwnd, a.srtt);
        }
        // bbr_update_model
        self.update_bw(rs, now);
        self.update_ack_aggregation(rs, a.acked, w.cwnd);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs, now) {
            self.advance_cycle_phase(now);
        }
        self.check_full_bw_reached(rs);
        self.check_drain(w, rs, now);
        self.update_min_rtt(w, a);
        let bw = self.btl_bw();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(w, rs, a.acked);
        self.last_delivered = rs.delivered_total;
        self.last_delivered_time = rs.delivered_time;
        self.last_lost = rs.lost_total;
        self.last_app_limited = rs.app_limited_now;
        true
    }

    fn pacing_rate(&self, w: &Window, srtt: SimDuration, mtu: u32) -> Option<f64> {
        if self.pacing > 0.0 {
            return Some(self.pacing);
        }
        // Before the first ACK: the initial window over the handshake RTT at high gain.
        Some(initial_pacing_rate(w.cwnd, srtt, HIGH_GAIN, mtu))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::TcpConfig;

    fn ms(x: u64) -> SimTime {
        SimTime::from_nanos(x * 1_000_000)
    }

    #[test]
    fn max_filter_keeps_the_best_of_the_window_and_ages_out() {
        // Window 10 rounds: samples 10 at t=0, 8 at t=3, 6 at t=7.
        let mut f = MaxFilter::default();
        f.reset(0, 10.0);
        assert_eq!(f.update(10, 3, 8.0), 10.0);
        assert_eq!(f.update(10, 7, 6.0), 10.0);
        // t = 11: the best (t=0) is older than the window; the 2nd best (8 at t=3) rules.
        assert_eq!(f.update(10, 11, 5.0), 8.0);
        // A new maximum resets everything.
        assert_eq!(f.update(10, 12, 9.0), 9.0);
        // Nothing left in the window at all: the sample alone.
        assert_eq!(f.update(10, 40, 1.0), 1.0);
    }

    fn bbr_of(version: BbrVersion) -> Bbr {
        let c = TcpConfig {
            mss: 1448,
            bbr_version: version,
            ..Default::default()
        };
        Bbr::build(&CcParams::from_config(&c))
    }

    fn bbr() -> Bbr {
        bbr_of(BbrVersion::Linux)
    }

    #[test]
    fn target_cwnd_is_gain_times_bdp_plus_send_quanta() {
        for version in [BbrVersion::Linux, BbrVersion::Linux4_20] {
            let mut b = bbr_of(version);
            // No RTprop yet: the initial window; 5.1+ (`bbr_bdp`) adds the budget to it
            // (pacing 0: one segment per quantum, 10 + 3 = 13, rounded up to even).
            let init = if version == BbrVersion::Linux {
                14
            } else {
                INIT_CWND
            };
            assert_eq!(
                b.target_cwnd(1000.0, 2.0),
                init,
                "no RTprop yet ({version:?})"
            );
            b.min_rtt = Some(SimDuration::from_millis(40));
            // 1000 segments/s at 1500 B paced: 1.485 MB/s → 1450 B per ms = 1 segment,
            // so the quantum is the minimum of 2 segments; 3 quanta = 6.
            b.pacing = rate_bytes(1000.0, 1.0, 1500);
            assert_eq!(tso_segs_goal(b.pacing, 1448), 2);
            // BDP = 40 segments: 2 × 40 + 6 = 86 (even).
            assert_eq!(b.target_cwnd(1000.0, 2.0), 86);
            // 1 × BDP + 6 = 46; 1.25 × 40 = 50 + 6 = 56, and + 2 while probing in PROBE_BW.
            assert_eq!(b.target_cwnd(1000.0, 1.0), 46);
            b.mode = Mode::ProbeBw;
            b.cycle_idx = 0;
            assert_eq!(b.target_cwnd(1000.0, 1.25), 58);
            // The cwnd's gain of 2 in a cruising phase: 4.20 adds the 2 segments for any
            // gain above 1, 5.1+ only in the probing phase (cycle index 0).
            b.cycle_idx = 3;
            let cruise = if version == BbrVersion::Linux { 86 } else { 88 };
            assert_eq!(b.target_cwnd(1000.0, 2.0), cruise, "{version:?}");
        }
        // Below 1.2 Mbit/s one segment per quantum.
        assert_eq!(tso_segs_goal(100_000.0, 1448), 1);
        assert!((rate_bytes(1000.0, 1.25, 1500) - 1000.0 * 1500.0 * 1.25 * 0.99).abs() < 1e-6);
    }

    /// `bbr_packets_in_net_at_edt` by hand: BtlBw 1000 segments/s, 40 in flight. The
    /// next departure 5 ms ahead: 5 segments will have been delivered by then → 35; while
    /// probing (gain 1.25) the next send quantum (2 segments at this rate) counts → 37; a
    /// pacing stamp already passed subtracts nothing.
    #[test]
    fn inflight_at_the_next_departure_follows_a_hand_worked_example() {
        let mut b = bbr();
        b.bw.reset(0, 1000.0);
        b.pacing = rate_bytes(1000.0, 1.0, 1500);
        b.pacing_gain = 1.0;
        let now = ms(100);
        let rs = RateSample {
            next_departure: ms(105),
            ..RateSample::default()
        };
        assert_eq!(b.packets_in_net_at_edt(40, &rs, now), 35);
        b.pacing_gain = 1.25;
        assert_eq!(b.packets_in_net_at_edt(40, &rs, now), 37);
        let past = RateSample {
            next_departure: ms(90),
            ..RateSample::default()
        };
        assert_eq!(b.packets_in_net_at_edt(40, &past, now), 42);
        b.pacing_gain = 0.75;
        assert_eq!(b.packets_in_net_at_edt(3, &rs, now), 0, "never below zero");
    }

    fn acked_at(t_ms: u64) -> RateSample {
        RateSample {
            valid: true,
            delivered: 1,
            interval: SimDuration::from_millis(10),
            delivered_time: ms(t_ms),
            ..RateSample::default()
        }
    }

    /// Linux 5.1+ `bbr_update_ack_aggregation`, worked by hand: BtlBw 1000 segments/s
    /// (one per ms). The first ACK (10 segments at 2 ms) finds an empty epoch, which is
    /// never ahead of BtlBw, so the epoch restarts there and all 10 are extra; 4 more at
    /// 6 ms make 14 against 4 expected (extra 10, the max stays 10); at 20 ms 14 ≤ 18
    /// expected, so a new epoch starts there with the ACK's own 2 segments (extra 2).
    /// The allowance is the max of both windows, capped at 100 ms of BtlBw, and only
    /// once the pipe was filled.
    #[test]
    fn ack_aggregation_estimate_follows_a_hand_worked_trace() {
        let mut b = bbr();
        b.min_rtt = Some(SimDuration::from_millis(40));
        b.bw.reset(0, 1000.0);
        b.update_ack_aggregation(&acked_at(2), 10, 100);
        assert_eq!(
            (b.ack_epoch_acked, b.ack_epoch_start, b.extra_acked),
            (10, ms(2), [10, 0])
        );
        b.update_ack_aggregation(&acked_at(6), 4, 100);
        assert_eq!((b.ack_epoch_acked, b.extra_acked), (14, [10, 0]));
        b.update_ack_aggregation(&acked_at(20), 2, 100);
        assert_eq!((b.ack_epoch_acked, b.ack_epoch_start), (2, ms(20)));
        assert_eq!(b.extra_acked, [10, 0]);
        // the estimate is capped at cwnd (52 ACKed in a zero-length epoch, cwnd 30)
        b.update_ack_aggregation(&acked_at(20), 50, 30);
        assert_eq!(b.extra_acked, [30, 0]);
        // no allowance before the pipe was filled, then the windowed max
        assert_eq!(b.ack_aggregation_cwnd(), 0);
        b.full_bw_reached = true;
        assert_eq!(b.ack_aggregation_cwnd(), 30);
        // five round starts move to the other window, which starts empty; the max of
        // both windows still counts
        for _ in 0..EXTRA_ACKED_WIN_RTTS {
            b.round_start = true;
            b.update_ack_aggregation(&acked_at(100), 1, 30);
        }
        assert_eq!((b.extra_acked_win_idx, b.ack_aggregation_cwnd()), (1, 30));
        // capped at 100 ms of BtlBw: 1000 segments/s → 100
        b.extra_acked = [500, 0];
        assert_eq!(b.ack_aggregation_cwnd(), 100);
        // 4.20 has none of it
        let mut old = bbr_of(BbrVersion::Linux4_20);
        old.bw.reset(0, 1000.0);
        old.full_bw_reached = true;
        old.update_ack_aggregation(&acked_at(2), 10, 100);
        assert_eq!((old.extra_acked, old.ack_aggregation_cwnd()), ([0, 0], 0));
    }

    /// One ACK per round of `delivered` segments at `bw` segments/s over `rtt`.
    fn round(b: &mut Bbr, w: &mut Window, k: u64, bw: f64, rtt: u64) {
        let per_round = (bw * rtt as f64 / 1000.0) as u64;
        let a = AckSample {
            now: ms(k * rtt),
            acked: per_round as u32,
            rtt: Some(SimDuration::from_millis(rtt)),
            snd_una: 0,
            snd_nxt: 0,
            cwnd_limited: true,
            ce: 0,
            srtt: Some(SimDuration::from_millis(rtt)),
            rs: RateSample {
                valid: true,
                delivered: per_round,
                interval: SimDuration::from_millis(rtt),
                prior_delivered: (k - 1) * per_round,
                prior_in_flight: w.cwnd,
                in_flight: w.cwnd,
                delivered_total: k * per_round,
                delivered_time: ms(k * rtt),
                ..RateSample::default()
            },
        };
        b.cong_control(w, &a);
    }

    #[test]
    fn startup_ends_after_three_rounds_without_25_percent_growth() {
        let mut b = bbr();
        b.set_seed(7);
        let mut w = Window::new(10, 100_000);
        b.init(&mut w, SimTime::ZERO, 0);
        // Rounds 1..=4 double the rate (startup growth), then the pipe is full at 1000/s.
        let rates = [125.0, 250.0, 500.0, 1000.0, 1000.0, 1000.0];
        for (i, &r) in rates.iter().enumerate() {
            round(&mut b, &mut w, i as u64 + 1, r, 40);
            assert_eq!(b.mode, Mode::Startup, "round {}", i + 1);
            assert!(!b.full_bw_reached);
        }
        // Third round without growth: full bandwidth reached; the flight (cwnd, here
        // larger than 1 BDP) is not drained yet.
        round(&mut b, &mut w, 7, 1000.0, 40);
        assert!(b.full_bw_reached);
        assert_eq!(b.mode, Mode::Drain);
        assert_eq!(b.pacing_gain, DRAIN_GAIN);
        assert!((b.pacing_rate_bytes() - rate_bytes(1000.0, DRAIN_GAIN, 1500)).abs() < 1e-6);
        assert_eq!(
            w.ssthresh,
            b.target_cwnd(1000.0, 1.0),
            "ssthresh = 1 BDP target"
        );
    }

    #[test]
    fn probe_bw_starts_at_a_random_phase_but_never_the_draining_one() {
        let mut seen = [0u32; CYCLE_LEN];
        for seed in 0..200 {
            let mut b = bbr();
            b.set_seed(seed);
            b.min_rtt = Some(SimDuration::from_millis(40));
            b.full_bw_reached = true;
            b.reset_probe_bw_mode(ms(0));
            seen[b.cycle_idx] += 1;
            assert_eq!(b.pacing_gain, PACING_GAIN[b.cycle_idx]);
        }
        assert_eq!(seen[1], 0, "never starts in the 0.75 phase");
        assert!(
            seen.iter().enumerate().all(|(i, &n)| i == 1 || n > 0),
            "{seen:?}"
        );
    }

    #[test]
    fn recovery_conserves_packets_then_restores_the_window() {
        let mut b = bbr();
        let mut w = Window::new(50, 100_000);
        b.min_rtt = Some(SimDuration::from_millis(40));
        b.full_bw_reached = true;
        b.mode = Mode::ProbeBw;
        b.cycle_idx = 2;
        b.pacing_gain = 1.0;
        b.cwnd_gain = CWND_GAIN;
        b.bw.reset(1, 1000.0);
        // Fast retransmit: bbr_ssthresh saves cwnd 50.
        assert_eq!(b.on_loss(&w, ms(0)), w.ssthresh);
        let mut a = AckSample {
            now: ms(1),
            acked: 1,
            rtt: None,
            snd_una: 0,
            snd_nxt: 0,
            cwnd_limited: true,
            ce: 0,
            srtt: None,
            rs: RateSample {
                losses: 1,
                in_flight: 45,
                delivered_total: 100,
                ca_state: CaState::Recovery,
                ..RateSample::default()
            },
        };
        // Entering recovery: cwnd = in flight + delivered = 46.
        b.cong_control(&mut w, &a);
        assert_eq!(w.cwnd, 46);
        // Packet conservation: cwnd never below in flight + delivered, even if the
        // flight is lower.
        a.rs.losses = 0;
        a.rs.in_flight = 40;
        a.acked = 2;
        b.cong_control(&mut w, &a);
        assert_eq!(w.cwnd, 46);
        // Recovery ends: the window before it (50) comes back.
        a.rs.ca_state = CaState::Open;
        b.cong_control(&mut w, &a);
        assert!(w.cwnd >= 50, "{}", w.cwnd);
    }
}
