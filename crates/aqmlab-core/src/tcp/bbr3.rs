//! BBR version 3, as draft-ietf-ccwg-bbr (BBRv3, -01/-02) specifies it and Google's v3
//! tree (`github.com/google/bbr`, branch `v3`, `net/ipv4/tcp_bbr.c`) implements it.
//!
//! What v3 adds to [BBRv1](super::bbr) is a response to loss (and, on L4S paths, ECN):
//! - **Upper bound `inflight_hi`** (the "long-term" model): when a probe for bandwidth
//!   sees the loss rate of the flight in which a segment was sent exceed 2 %
//!   (`bbr_loss_thresh`, `IsInflightTooHigh`: `rs.lost > 2 % × rs.tx_in_flight`), the
//!   flight is bounded at max(that flight, 0.7 × target inflight) (`beta` = 0.7), and
//!   PROBE_BW cruises at 85 % of it (`headroom` = 0.15).
//! - **Lower bounds `bw_lo` / `inflight_lo`** (the "short-term" model): once per round
//!   trip with losses outside bandwidth probing, both shrink to max(latest sample,
//!   0.7 × bound); they are lifted when probing starts again.
//! - **PROBE_BW as four sub-states**: DOWN (pacing gain 0.9 until the flight is at the
//!   BDP and below the headroom), CRUISE (gain 1), REFILL (one round at gain 1 with the
//!   lower bounds reset) and UP (gain 1.25, the flight bound `inflight_hi` raised by
//!   1, 2, 4, … segments per round while cwnd-limited, until three rounds without 25 %
//!   growth or too much loss). A new probe comes after 2–3 s (random) or after as many
//!   rounds as a Reno flow would need to grow by one BDP (≤ 63), whichever is first.
//! - **STARTUP** paces at 2.77 (`bbr_startup_pacing_gain`) with cwnd gain 2 and also
//!   ends on loss: in fast recovery, after ≥ 6 loss events in a round
//!   (`bbr_full_loss_cnt`) with the loss rate over 2 %, `inflight_hi` = max(BDP,
//!   latest flight).
//! - **PROBE_RTT** every 5 s (`bbr_probe_rtt_win_ms`) at half the BDP
//!   (`bbr_probe_rtt_cwnd_gain` = 0.5) rather than 4 segments, for 200 ms and a round.
//! - The max-bw filter keeps the best rate of the current and the previous PROBE_BW
//!   cycle (`bw_hi[2]`).
//!
//! Not modelled (documented deviations): ECN. v3 reacts to CE marks only when ECN is
//! negotiated on a path with min RTT ≤ 5 ms (`bbr_ecn_max_rtt`) and Google runs it with
//! ECN off for non-L4S paths; here CE marks are ignored (set `ecn = true` and they still
//! reach the receiver and the counters, but BBRv3 does not change its bounds). The
//! ACK-aggregation allowance (`extra_acked`), the fast path of `bbr_main`, TSO
//! auto-sizing beyond the 3-quanta budget, and undo. Rates and bounds use `f64`
//! segments (the kernel: fixed point).

use super::bbr::{bw_plateaued, initial_pacing_rate, rate_bytes, tso_segs_goal};
use super::cc::CaState;
use super::cc::{AckSample, CcBuild, CcParams, CongestionControl, RateSample, Window};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};

/// STARTUP pacing and cwnd gains (`bbr_startup_pacing_gain` = 2.77,
/// `bbr_startup_cwnd_gain` = 2).
pub const STARTUP_PACING_GAIN: f64 = 2.77;
pub const STARTUP_CWND_GAIN: f64 = 2.0;
/// DRAIN pacing gain (`bbr_drain_gain` = 1000/2885 ≈ 0.35).
pub const DRAIN_GAIN: f64 = 1000.0 / 2885.0;
/// PROBE_BW cwnd gain.
pub const CWND_GAIN: f64 = 2.0;
/// PROBE_BW pacing gains of UP, DOWN, CRUISE, REFILL (`bbr_pacing_gain`).
pub const UP_GAIN: f64 = 1.25;
pub const DOWN_GAIN: f64 = 0.9;
/// Loss rate of a flight above which it was too high (`bbr_loss_thresh` = 2 %).
pub const LOSS_THRESH: f64 = 0.02;
/// Multiplicative decrease of the bounds (`bbr_beta` = 0.3: keep 0.7).
pub const BETA: f64 = 0.7;
/// Cruise below `inflight_hi` by this fraction (`bbr_inflight_headroom`).
pub const HEADROOM: f64 = 0.15;
/// STARTUP ends after this many loss events in a round (`bbr_full_loss_cnt`).
pub const FULL_LOSS_CNT: u32 = 6;
/// RTprop window and PROBE_RTT interval (`bbr_min_rtt_win_sec`, `bbr_probe_rtt_win_ms`).
pub const MIN_RTT_WIN: SimDuration = SimDuration::from_secs(10);
pub const PROBE_RTT_WIN: SimDuration = SimDuration::from_secs(5);
pub const PROBE_RTT_TIME: SimDuration = SimDuration::from_millis(200);
/// PROBE_RTT flight: half a BDP (`bbr_probe_rtt_cwnd_gain`).
pub const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// Minimal window (`bbr_cwnd_min_target`).
pub const MIN_CWND: u32 = 4;
/// Bandwidth probes: at most 63 rounds apart (`bbr_bw_probe_max_rounds`), and after
/// 2 s + up to 1 s (`bbr_bw_probe_base_us`, `bbr_bw_probe_rand_us`).
const BW_PROBE_MAX_ROUNDS: u32 = 63;
const BW_PROBE_BASE: SimDuration = SimDuration::from_secs(2);
const BW_PROBE_RAND_NS: u64 = 1_000_000_000;
const INIT_CWND: u32 = 10;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw(Phase),
    ProbeRtt,
}

/// PROBE_BW sub-states.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    Down,
    Cruise,
    Refill,
    Up,
}

/// Which ACKs reflect the current probe (`bbr_ack_phase`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
    Refilling,
}

#[derive(Clone, Debug)]
pub struct Bbr3 {
    mss: u32,
    /// IP + TCP header bytes of a full segment.
    hdr: u32,
    rng: Rng,
    pub mode: Mode,
    // Rounds.
    pub round_count: u64,
    next_round_delivered: u64,
    pub round_start: bool,
    // Bandwidth: the current and the previous cycle's maximum (`bw_hi[2]`).
    bw_hi: [f64; 2],
    pub bw_lo: f64,
    pub inflight_hi: f64,
    pub inflight_lo: f64,
    bw_latest: f64,
    inflight_latest: f64,
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    loss_events_in_round: u32,
    // Full bandwidth.
    pub full_bw_reached: bool,
    full_bw_now: bool,
    full_bw: f64,
    full_bw_cnt: u32,
    // PROBE_BW.
    cycle_stamp: SimTime,
    ack_phase: AckPhase,
    rounds_since_probe: u32,
    probe_wait: SimDuration,
    probe_up_cnt: u32,
    probe_up_acks: u32,
    probe_up_rounds: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    /// Times the flight was found too high (loss rate over 2 %), for tests.
    pub inflight_too_high: u32,
    // RTT.
    pub min_rtt: Option<SimDuration>,
    min_rtt_stamp: SimTime,
    probe_rtt_min: Option<SimDuration>,
    probe_rtt_min_stamp: SimTime,
    probe_rtt_done: Option<SimTime>,
    probe_rtt_round_done: bool,
    pub probe_rtt_entries: u32,
    idle_restart: bool,
    // Window and pacing.
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
    pacing: f64,
    has_seen_rtt: bool,
    prev_ca_state: CaState,
    packet_conservation: bool,
    prior_cwnd: u32,
    last_app_limited: bool,
}

impl CcBuild for Bbr3 {
    fn build(p: &CcParams) -> Self {
        Bbr3 {
            mss: p.mss,
            hdr: p.header,
            rng: Rng::default(),
            mode: Mode::Startup,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            bw_hi: [0.0; 2],
            bw_lo: f64::INFINITY,
            inflight_hi: f64::INFINITY,
            inflight_lo: f64::INFINITY,
            bw_latest: 0.0,
            inflight_latest: 0.0,
            loss_round_delivered: 0,
            loss_round_start: false,
            loss_in_round: false,
            loss_events_in_round: 0,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            cycle_stamp: SimTime::ZERO,
            ack_phase: AckPhase::Init,
            rounds_since_probe: 0,
            probe_wait: BW_PROBE_BASE,
            probe_up_cnt: u32::MAX,
            probe_up_acks: 0,
            probe_up_rounds: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            inflight_too_high: 0,
            min_rtt: None,
            min_rtt_stamp: SimTime::ZERO,
            probe_rtt_min: None,
            probe_rtt_min_stamp: SimTime::ZERO,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            probe_rtt_entries: 0,
            idle_restart: false,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: STARTUP_CWND_GAIN,
            pacing: 0.0,
            has_seen_rtt: false,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            prior_cwnd: 0,
            last_app_limited: false,
        }
    }
}

impl Bbr3 {
    fn mtu(&self) -> u32 {
        self.mss + self.hdr
    }
    /// The max-bw estimate: the best of this and the previous cycle.
    pub fn max_bw(&self) -> f64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }
    /// The bandwidth the model uses (`BBRBoundBWForModel`): max_bw capped by bw_lo.
    pub fn bw(&self) -> f64 {
        self.max_bw().min(self.bw_lo)
    }
    fn is_probing_bw(&self) -> bool {
        matches!(
            self.mode,
            Mode::Startup | Mode::ProbeBw(Phase::Refill) | Mode::ProbeBw(Phase::Up)
        )
    }

    /// `bbr_bdp` × gain, then `bbr_quantization_budget`.
    pub fn inflight(&self, bw: f64, gain: f64) -> u32 {
        let Some(rtt) = self.min_rtt else {
            return INIT_CWND;
        };
        let bdp = ((bw * rtt.as_secs_f64() * gain) - 1e-9).ceil().max(0.0) as u32;
        self.quantization_budget(bdp)
    }
    fn quantization_budget(&self, cwnd: u32) -> u32 {
        let mut c = cwnd
            .max(3 * tso_segs_goal(self.pacing, self.mss))
            .max(MIN_CWND);
        if self.mode == Mode::ProbeBw(Phase::Up) {
            c += 2;
        }
        c
    }
    /// `bbr_inflight_with_headroom`: 85 % of inflight_hi (at least 1 segment below it).
    pub fn inflight_with_headroom(&self) -> f64 {
        if self.inflight_hi.is_infinite() {
            return f64::INFINITY;
        }
        let headroom = (HEADROOM * self.inflight_hi).max(1.0);
        (self.inflight_hi - headroom).max(MIN_CWND as f64)
    }
    /// `bbr_target_inflight`: min(BDP, cwnd).
    fn target_inflight(&self, cwnd: u32) -> u32 {
        self.inflight(self.bw(), 1.0).min(cwnd)
    }

    fn set_pacing_rate(&mut self, gain: f64) {
        let rate = rate_bytes(self.bw(), gain, self.mtu());
        if self.full_bw_reached || rate > self.pacing {
            self.pacing = rate;
        }
    }

    fn save_cwnd(&mut self, cwnd: u32) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = f64::INFINITY;
    }

    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0.0;
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    fn start_round(&mut self, delivered_total: u64) {
        self.next_round_delivered = delivered_total;
    }

    fn set_mode(&mut self, m: Mode) {
        self.mode = m;
        let (p, c) = match m {
            Mode::Startup => (STARTUP_PACING_GAIN, STARTUP_CWND_GAIN),
            Mode::Drain => (DRAIN_GAIN, CWND_GAIN),
            Mode::ProbeBw(Phase::Up) => (UP_GAIN, CWND_GAIN),
            Mode::ProbeBw(Phase::Down) => (DOWN_GAIN, CWND_GAIN),
            Mode::ProbeBw(_) => (1.0, CWND_GAIN),
            Mode::ProbeRtt => (1.0, PROBE_RTT_CWND_GAIN),
        };
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    /// `bbr_pick_probe_wait`: 0 or 1 rounds already counted, 2–3 s of wall time.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.below(2) as u32;
        self.probe_wait = BW_PROBE_BASE + SimDuration::from_nanos(self.rng.below(BW_PROBE_RAND_NS));
    }

    fn start_probe_down(&mut self, now: SimTime, rs: &RateSample) {
        self.reset_congestion_signals();
        self.probe_up_cnt = u32::MAX;
        self.pick_probe_wait();
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round(rs.delivered_total);
        self.set_mode(Mode::ProbeBw(Phase::Down));
    }
    fn start_probe_cruise(&mut self) {
        self.set_mode(Mode::ProbeBw(Phase::Cruise));
    }
    fn start_probe_refill(&mut self, rs: &RateSample) {
        self.reset_lower_bounds();
        self.probe_up_rounds = 0;
        self.probe_up_acks = 0;
        self.ack_phase = AckPhase::Refilling;
        self.start_round(rs.delivered_total);
        self.set_mode(Mode::ProbeBw(Phase::Refill));
    }
    fn start_probe_up(&mut self, now: SimTime, rs: &RateSample, cwnd: u32) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round(rs.delivered_total);
        self.reset_full_bw();
        self.full_bw = sample_bw(rs);
        self.cycle_stamp = now;
        self.set_mode(Mode::ProbeBw(Phase::Up));
        self.raise_inflight_hi_slope(cwnd);
    }

    /// `bbr_raise_inflight_hi_slope`: 1, 2, 4, … segments more per round.
    fn raise_inflight_hi_slope(&mut self, cwnd: u32) {
        let growth = 1u32 << self.probe_up_rounds;
        self.probe_up_rounds = (self.probe_up_rounds + 1).min(30);
        self.probe_up_cnt = (cwnd / growth).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`.
    fn probe_inflight_hi_upward(&mut self, a: &AckSample, cwnd: u32) {
        if !a.cwnd_limited || (cwnd as f64) < self.inflight_hi {
            return;
        }
        self.probe_up_acks += a.acked;
        if self.probe_up_acks >= self.probe_up_cnt {
            let delta = self.probe_up_acks / self.probe_up_cnt;
            self.probe_up_acks -= delta * self.probe_up_cnt;
            self.inflight_hi += delta as f64;
        }
        if self.round_start {
            self.raise_inflight_hi_slope(cwnd);
        }
    }

    /// `bbr_is_inflight_too_high`: the loss rate of the sampled segment's flight.
    fn is_inflight_too_high(rs: &RateSample) -> bool {
        rs.tx_in_flight > 0 && rs.lost as f64 > rs.tx_in_flight as f64 * LOSS_THRESH
    }

    /// `bbr_handle_inflight_too_high`.
    fn handle_inflight_too_high(&mut self, now: SimTime, rs: &RateSample, cwnd: u32) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        self.inflight_too_high += 1;
        if !rs.is_app_limited {
            self.inflight_hi =
                (rs.tx_in_flight as f64).max(self.target_inflight(cwnd) as f64 * BETA);
        }
        if self.mode == Mode::ProbeBw(Phase::Up) {
            self.start_probe_down(now, rs);
        }
    }

    /// `bbr_adapt_upper_bounds`. Returns true when the flight was too high.
    fn adapt_upper_bounds(&mut self, a: &AckSample, cwnd: u32) -> bool {
        let rs = &a.rs;
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            // The ACKs of the probe's own flight start to arrive.
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // The probe's flight is acknowledged: a new cycle of the bw filter.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if matches!(self.mode, Mode::ProbeBw(_)) && !rs.is_app_limited {
                self.bw_hi[0] = self.bw_hi[1];
                self.bw_hi[1] = 0.0;
            }
        }
        if Self::is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(a.now, rs, cwnd);
            }
            return true;
        }
        if self.inflight_hi.is_infinite() {
            return false;
        }
        if rs.tx_in_flight as f64 > self.inflight_hi {
            self.inflight_hi = rs.tx_in_flight as f64;
        }
        if self.mode == Mode::ProbeBw(Phase::Up) {
            self.probe_inflight_hi_upward(a, cwnd);
        }
        false
    }

    /// `bbr_is_time_to_probe_bw`: after the random wait, or as late as Reno would.
    fn is_time_to_probe_bw(&mut self, now: SimTime, rs: &RateSample, cwnd: u32) -> bool {
        let reno_rounds = self.target_inflight(cwnd).min(BW_PROBE_MAX_ROUNDS);
        if now > self.cycle_stamp + self.probe_wait || self.rounds_since_probe >= reno_rounds {
            self.start_probe_refill(rs);
            return true;
        }
        false
    }

    /// `bbr_update_cycle_phase`: the PROBE_BW state machine.
    fn update_cycle_phase(&mut self, a: &AckSample, cwnd: u32) {
        if !self.full_bw_reached {
            return;
        }
        let rs = &a.rs;
        let now = a.now;
        if self.adapt_upper_bounds(a, cwnd) {
            // The flight was too high: the state transition is already decided.
            return;
        }
        let Mode::ProbeBw(phase) = self.mode else {
            return;
        };
        match phase {
            Phase::Down => {
                if self.is_time_to_probe_bw(now, rs, cwnd) {
                    return;
                }
                let inflight = rs.in_flight as f64;
                if inflight <= self.inflight_with_headroom()
                    && rs.in_flight <= self.inflight(self.max_bw(), 1.0)
                {
                    self.start_probe_cruise();
                }
            }
            Phase::Cruise => {
                self.is_time_to_probe_bw(now, rs, cwnd);
            }
            Phase::Refill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_probe_up(now, rs, cwnd);
                }
            }
            Phase::Up => {
                let mut done = false;
                if self.prev_probe_too_high && rs.in_flight as f64 >= self.inflight_hi {
                    done = true;
                } else if a.cwnd_limited && cwnd as f64 >= self.inflight_hi {
                    // Bounded by inflight_hi, not by the path: keep probing.
                    self.reset_full_bw();
                    self.full_bw = sample_bw(rs);
                } else if self.full_bw_now {
                    done = true;
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_probe_down(now, rs);
                }
            }
        }
    }

    /// `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || !self.round_start || rs.is_app_limited {
            return;
        }
        let max_bw = self.max_bw();
        self.full_bw_now = bw_plateaued(max_bw, &mut self.full_bw, &mut self.full_bw_cnt);
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// `bbr_check_loss_too_high_in_startup`.
    fn check_startup_loss(&mut self, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if self.loss_round_start
            && rs.ca_state == CaState::Recovery
            && self.loss_events_in_round >= FULL_LOSS_CNT
            && Self::is_inflight_too_high(rs)
        {
            self.full_bw_reached = true;
            let bdp = self.inflight(self.max_bw(), 1.0) as f64;
            self.inflight_hi = bdp.max(self.inflight_latest);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    fn update_min_rtt(&mut self, w: &mut Window, a: &AckSample) {
        let now = a.now;
        let rs = &a.rs;
        let probe_expired = now > self.probe_rtt_min_stamp + PROBE_RTT_WIN;
        if let Some(r) = a.rtt {
            if self.probe_rtt_min.is_none_or(|m| r < m) || probe_expired {
                self.probe_rtt_min = Some(r);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(p) = self.probe_rtt_min {
            if self.min_rtt.is_none_or(|m| p < m) || min_expired {
                self.min_rtt = Some(p);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
        if probe_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.save_cwnd(w.cwnd);
            self.set_mode(Mode::ProbeRtt);
            self.probe_rtt_done = None;
            self.probe_rtt_entries += 1;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round(rs.delivered_total);
        }
        if self.mode == Mode::ProbeRtt {
            if self.probe_rtt_done.is_none() && rs.in_flight <= self.probe_rtt_cwnd() {
                self.probe_rtt_done = Some(now + PROBE_RTT_TIME);
                self.probe_rtt_round_done = false;
                self.start_round(rs.delivered_total);
            } else if let Some(done) = self.probe_rtt_done {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now > done {
                    self.probe_rtt_min_stamp = now;
                    w.cwnd = w.cwnd.max(self.prior_cwnd);
                    self.reset_lower_bounds();
                    if self.full_bw_reached {
                        self.start_probe_down(now, rs);
                        self.start_probe_cruise();
                    } else {
                        self.set_mode(Mode::Startup);
                    }
                }
            }
        }
        if rs.valid && rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    fn probe_rtt_cwnd(&self) -> u32 {
        let bdp = self
            .min_rtt
            .map_or(0.0, |m| self.bw() * m.as_secs_f64() * PROBE_RTT_CWND_GAIN);
        (bdp.ceil() as u32).max(MIN_CWND)
    }

    /// `bbr_set_cwnd` with the model's bounds (`bbr_bound_cwnd_for_inflight_model`).
    fn set_cwnd(&mut self, w: &mut Window, rs: &RateSample, acked: u32) {
        let mut cwnd = w.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(w, rs, acked);
            cwnd = c;
            if !conserving {
                let target = self.inflight(self.bw(), self.cwnd_gain);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || rs.delivered_total < INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(MIN_CWND);
            }
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(self.probe_rtt_cwnd());
        }
        // The bounds of the model.
        let mut cap = f64::INFINITY;
        match self.mode {
            Mode::ProbeBw(Phase::Cruise) | Mode::ProbeRtt => cap = self.inflight_with_headroom(),
            Mode::ProbeBw(_) => cap = self.inflight_hi,
            _ => {}
        }
        cap = cap.min(self.inflight_lo).max(MIN_CWND as f64);
        if (cwnd as f64) > cap {
            cwnd = cap as u32;
        }
        w.cwnd = cwnd.min(w.clamp).max(1);
    }

    fn recover_or_restore(&mut self, w: &Window, rs: &RateSample, acked: u32) -> (u32, bool) {
        let state = rs.ca_state;
        let mut cwnd = w.cwnd;
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
            self.packet_conservation = true;
            self.start_round(rs.delivered_total);
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
}

/// The sample's delivery rate in segments/s (0 when invalid).
fn sample_bw(rs: &RateSample) -> f64 {
    if rs.valid {
        rs.delivered as f64 / rs.interval.as_secs_f64()
    } else {
        0.0
    }
}

impl CongestionControl for Bbr3 {
    fn init(&mut self, _w: &mut Window, _now: SimTime, _snd_nxt: u64) {
        self.pacing = 0.0;
        self.has_seen_rtt = false;
    }

    fn set_seed(&mut self, seed: u64) {
        self.rng = Rng::stream(seed, "bbr3", 0);
    }

    fn on_ack(&mut self, _w: &mut Window, _a: &AckSample) {}

    fn on_loss(&mut self, w: &Window, _now: SimTime) -> u32 {
        self.save_cwnd(w.cwnd);
        w.ssthresh
    }

    fn on_ecn(&mut self, w: &Window, now: SimTime) -> u32 {
        self.on_loss(w, now)
    }

    /// `bbr_set_state(TCP_CA_Loss)`: restart bandwidth growth checks; outside probing
    /// the window before the timeout becomes the short-term bound.
    fn on_rto(&mut self, w: &Window, _now: SimTime, _snd_nxt: u64, reduce: bool) -> Option<u32> {
        if reduce {
            self.save_cwnd(w.cwnd);
        }
        self.prev_ca_state = CaState::Loss;
        self.reset_full_bw();
        self.round_start = true;
        if !self.is_probing_bw() && self.inflight_lo.is_infinite() {
            self.inflight_lo = self.prior_cwnd as f64;
        }
        reduce.then_some(w.ssthresh)
    }

    fn on_tx_start(&mut self, _now: SimTime, _idle: SimDuration) {
        if self.last_app_limited {
            self.idle_restart = true;
            if matches!(self.mode, Mode::ProbeBw(_)) {
                self.set_pacing_rate(1.0);
            }
        }
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    fn marks_app_limited(&self) -> bool {
        self.mode == Mode::ProbeRtt
    }

    /// `bbr_main` (v3).
    fn cong_control(&mut self, w: &mut Window, a: &AckSample) -> bool {
        let rs = &a.rs;
        let now = a.now;
        if !self.has_seen_rtt {
            if let Some(s) = a.srtt.filter(|s| !s.is_zero()) {
                self.has_seen_rtt = true;
                self.pacing = rate_bytes(
                    w.cwnd as f64 / s.as_secs_f64(),
                    STARTUP_PACING_GAIN,
                    self.mtu(),
                );
            }
        }
        // Rounds (`bbr_update_round_start`).
        self.round_start = false;
        if rs.valid && rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = rs.delivered_total;
            self.round_count += 1;
            self.rounds_since_probe = self.rounds_since_probe.saturating_add(1);
            self.round_start = true;
            self.packet_conservation = false;
        }
        // Latest delivery signals and the loss round.
        let bw = sample_bw(rs);
        self.loss_round_start = false;
        if rs.valid {
            self.bw_latest = self.bw_latest.max(bw);
            self.inflight_latest = self.inflight_latest.max(rs.delivered as f64);
            if rs.prior_delivered >= self.loss_round_delivered {
                self.loss_round_delivered = rs.delivered_total;
                self.loss_round_start = true;
            }
            // Max-bw filter (`bw_hi[1]` is the current cycle).
            if !rs.is_app_limited || bw >= self.max_bw() {
                self.bw_hi[1] = self.bw_hi[1].max(bw);
            }
        }
        // Congestion signals: lower bounds once per loss round.
        if rs.losses > 0 {
            self.loss_in_round = true;
        }
        if self.loss_round_start {
            if !self.is_probing_bw() && self.loss_in_round {
                if self.bw_lo.is_infinite() {
                    self.bw_lo = self.max_bw();
                }
                if self.inflight_lo.is_infinite() {
                    self.inflight_lo = w.cwnd as f64;
                }
                self.bw_lo = self.bw_latest.max(BETA * self.bw_lo);
                self.inflight_lo = self.inflight_latest.max(BETA * self.inflight_lo);
            }
            self.loss_in_round = false;
        }
        self.check_startup_loss(rs);
        self.check_full_bw_reached(rs);
        // DRAIN.
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.set_mode(Mode::Drain);
            w.ssthresh = self.inflight(self.max_bw(), 1.0);
        }
        if self.mode == Mode::Drain && rs.in_flight <= self.inflight(self.max_bw(), 1.0) {
            self.start_probe_down(now, rs);
        }
        self.update_cycle_phase(a, w.cwnd);
        self.update_min_rtt(w, a);
        if self.loss_round_start {
            self.bw_latest = bw;
            self.inflight_latest = rs.delivered as f64;
        }
        self.set_pacing_rate(self.pacing_gain);
        self.set_cwnd(w, rs, a.acked);
        self.last_app_limited = rs.app_limited_now;
        true
    }

    fn pacing_rate(&self, w: &Window, srtt: SimDuration, mtu: u32) -> Option<f64> {
        if self.pacing > 0.0 {
            return Some(self.pacing);
        }
        Some(initial_pacing_rate(w.cwnd, srtt, STARTUP_PACING_GAIN, mtu))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::TcpConfig;

    fn ms(x: u64) -> SimTime {
        SimTime::from_nanos(x * 1_000_000)
    }
    fn bbr3() -> Bbr3 {
        let c = TcpConfig {
            mss: 1448,
            ..Default::default()
        };
        let mut b = Bbr3::build(&CcParams::from_config(&c));
        b.set_seed(3);
        b
    }
    fn ack(now: SimTime, acked: u32, rs: RateSample) -> AckSample {
        AckSample {
            now,
            acked,
            rtt: Some(SimDuration::from_millis(40)),
            snd_una: 0,
            snd_nxt: 0,
            cwnd_limited: true,
            ce: 0,
            srtt: Some(SimDuration::from_millis(40)),
            rs,
        }
    }
    /// A PROBE_BW flow at 1000 segments/s, 40 ms RTprop (BDP 40 segments).
    fn cruising() -> (Bbr3, Window) {
        let mut b = bbr3();
        b.min_rtt = Some(SimDuration::from_millis(40));
        b.probe_rtt_min = b.min_rtt;
        b.full_bw_reached = true;
        b.full_bw_now = true;
        b.bw_hi = [1000.0, 1000.0];
        b.pacing = rate_bytes(1000.0, 1.0, 1500);
        b.set_mode(Mode::ProbeBw(Phase::Cruise));
        (b, Window::new(80, 100_000))
    }

    #[test]
    fn inflight_hi_headroom_and_quantization() {
        let (mut b, _) = cruising();
        // BDP 40 segments; the 3-quanta budget (6) is below it; +2 only in UP.
        assert_eq!(b.inflight(1000.0, 1.0), 40);
        assert_eq!(b.inflight(1000.0, 2.0), 80);
        b.set_mode(Mode::ProbeBw(Phase::Up));
        assert_eq!(b.inflight(1000.0, 1.0), 42);
        assert_eq!(b.inflight_with_headroom(), f64::INFINITY);
        b.inflight_hi = 100.0;
        assert_eq!(b.inflight_with_headroom(), 85.0);
        b.inflight_hi = 5.0;
        assert_eq!(
            b.inflight_with_headroom(),
            4.0,
            "at least one segment, floor 4"
        );
    }

    #[test]
    fn loss_over_two_percent_of_the_flight_bounds_inflight_hi_and_ends_the_probe() {
        let (mut b, mut w) = cruising();
        b.set_mode(Mode::ProbeBw(Phase::Up));
        b.reset_full_bw();
        b.bw_probe_samples = true;
        // A segment sent with 100 in flight; 2 losses since: 2 % is not above 2 %.
        let mut rs = RateSample {
            valid: true,
            delivered: 40,
            interval: SimDuration::from_millis(40),
            tx_in_flight: 100,
            lost: 2,
            in_flight: 90,
            prior_in_flight: 92,
            delivered_total: 1000,
            prior_delivered: 960,
            delivered_time: ms(1000),
            ..RateSample::default()
        };
        b.cong_control(&mut w, &ack(ms(1000), 2, rs));
        assert_eq!(b.inflight_too_high, 0);
        assert_eq!(b.mode, Mode::ProbeBw(Phase::Up));
        // 3 losses of 100: too high. inflight_hi = max(100, 0.7 × min(BDP 40, cwnd)).
        rs.lost = 3;
        b.cong_control(&mut w, &ack(ms(1001), 2, rs));
        assert_eq!(b.inflight_too_high, 1);
        assert_eq!(b.inflight_hi, 100.0);
        assert_eq!(b.mode, Mode::ProbeBw(Phase::Down), "the probe ends");
        assert_eq!(b.pacing_gain, DOWN_GAIN);
    }

    #[test]
    fn losses_outside_probing_cut_the_lower_bounds_by_beta_once_per_round() {
        let (mut b, mut w) = cruising();
        // A round with losses: at the next loss-round start bw_lo = max(latest, 0.7 ×
        // max_bw), inflight_lo = max(latest delivered, 0.7 × cwnd).
        let rs = |delivered_total: u64, prior: u64, losses: u32, bw: f64| RateSample {
            valid: true,
            delivered: (bw * 0.04) as u64,
            interval: SimDuration::from_millis(40),
            prior_delivered: prior,
            delivered_total,
            delivered_time: ms(delivered_total),
            losses,
            in_flight: 60,
            tx_in_flight: 60,
            ..RateSample::default()
        };
        b.cong_control(&mut w, &ack(ms(1), 1, rs(10, 0, 0, 500.0)));
        b.cong_control(&mut w, &ack(ms(2), 1, rs(11, 1, 1, 500.0)));
        assert!(b.bw_lo.is_infinite(), "not before the loss round ends");
        let cwnd = w.cwnd as f64;
        b.cong_control(&mut w, &ack(ms(3), 1, rs(12, 10, 0, 500.0)));
        assert_eq!(b.bw_lo, 700.0, "0.7 × 1000 > latest 500");
        assert_eq!(b.inflight_lo, (0.7 * cwnd).max(20.0));
        assert!(w.cwnd as f64 <= b.inflight_lo.max(4.0));
    }

    #[test]
    fn probe_bw_cycles_down_cruise_refill_up() {
        let (mut b, mut w) = cruising();
        let rs = |t: u64, d: u64, inflight: u32| RateSample {
            valid: true,
            delivered: 40,
            interval: SimDuration::from_millis(40),
            prior_delivered: d.saturating_sub(40),
            delivered_total: d,
            delivered_time: ms(t),
            in_flight: inflight,
            prior_in_flight: inflight,
            tx_in_flight: inflight,
            ..RateSample::default()
        };
        b.start_probe_down(ms(0), &rs(0, 0, 80));
        assert_eq!(b.mode, Mode::ProbeBw(Phase::Down));
        // Flight above the BDP: stays down; at the BDP: cruise.
        b.cong_control(&mut w, &ack(ms(40), 1, rs(40, 40, 60)));
        assert_eq!(b.mode, Mode::ProbeBw(Phase::Down));
        b.cong_control(&mut w, &ack(ms(80), 1, rs(80, 80, 40)));
        assert_eq!(b.mode, Mode::ProbeBw(Phase::Cruise));
        // After the probe wait (2–3 s): REFILL, then UP at the next round.
        let wait = b.probe_wait;
        assert!(wait >= SimDuration::from_secs(2) && wait < SimDuration::from_secs(3));
        let mut t = 80;
        let mut d = 80;
        while b.mode == Mode::ProbeBw(Phase::Cruise) {
            t += 40;
            d += 40;
            b.cong_control(&mut w, &ack(ms(t), 1, rs(t, d, 40)));
        }
        assert_eq!(b.mode, Mode::ProbeBw(Phase::Refill));
        // Reno coexistence bounds the wait: min(BDP = 40, 63) rounds ≥ the 2 s = 50 rounds?
        // No: 40 rounds of 40 ms = 1.6 s come first.
        assert!(
            ms(t) <= ms(0) + wait,
            "Reno-rounds bound came first at {t} ms"
        );
        t += 40;
        d += 40;
        b.cong_control(&mut w, &ack(ms(t), 1, rs(t, d, 40)));
        assert_eq!(b.mode, Mode::ProbeBw(Phase::Up));
        assert_eq!(b.pacing_gain, UP_GAIN);
    }
}
