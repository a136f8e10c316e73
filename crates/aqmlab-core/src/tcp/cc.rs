//! The congestion-control contract.
//!
//! Windows are counted in segments, as Linux counts `snd_cwnd` in packets; for
//! full-sized segments this is the byte counting of RFC 3465 (cwnd grows by one segment
//! per cwnd segments *acknowledged*, not per ACK received, so delayed ACKs do not slow
//! growth). Loss recovery, PRR and the RTO live in the sender; a congestion control only
//! decides how the window grows and what the slow-start threshold becomes after a
//! congestion signal, through the hooks of [`CongestionControl`]:
//!
//! | hook | Linux `tcp_congestion_ops` | called |
//! |---|---|---|
//! | `init` | `init` | connection established |
//! | `on_delivery` | `pkts_acked` | every ACK that delivers data (delay samples) |
//! | `on_ack` | `cong_avoid` | ACKs of new data in a state that allows growth |
//! | `on_dup_ack` | — | duplicate ACKs in the open state |
//! | `on_loss` | `ssthresh` | fast retransmit (entering recovery) |
//! | `on_ecn` | `ssthresh` | ECN-Echo (entering CWR) |
//! | `on_rto` | `ssthresh` + `set_state(Loss)` | retransmission timeout |
//! | `on_tx_start` | `cwnd_event(TX_START)` | sending resumes from idle |
//! | `on_ack_event` | `in_ack_event` | every acceptable ACK (DCTCP's alpha) |
//! | `cong_control` | `cong_control` | every ACK; a control that owns cwnd (Prague) |
//! | `on_open` | `set_state(Open)` | a reduction or loss episode ended |
//! | `pacing_rate` | sets `sk_pacing_rate` | a control with its own pacing rate |
//! | `set_seed` | — | once, before `init`, for controls that randomise |
//! | `marks_app_limited` | sets `tp->app_limited` | after `cong_control` (BBR's PROBE_RTT) |
//!
//! `AckSample::ce` carries the Accurate ECN feedback (RFC 9331 §4.2 requires a
//! scalable control to see every mark): the number of newly delivered segments that
//! were CE-marked on their way to the receiver.
//!
//! Controls are statically dispatched through [`AnyCc`](super::AnyCc).
//!
//! ## Adding a congestion control
//! Write `tcp/NAME.rs` with the control's state implementing [`CongestionControl`] and
//! [`CcBuild`] (its constructor from [`CcParams`]), with tests against hand-worked traces;
//! add `pub mod NAME;` and one line to `cc_registry!` in `tcp/mod.rs`. The registry generates the scenario-file name (`cc = "NAME"`), the
//! statically dispatched `AnyCc` and the list for `aqmlab list cc`.

use super::config::{CaGrowth, RttScaling, SsGrowth, TcpConfig};
use super::CcKind;
use crate::time::{SimDuration, SimTime};

/// Congestion state (Linux `TCP_CA_*`; `Disorder` is folded into `Open`), in Linux's
/// order (`Open < Cwr < Recovery < Loss`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    #[default]
    Open,
    Cwr,
    Recovery,
    Loss,
}

/// "No threshold yet" (Linux TCP_INFINITE_SSTHRESH).
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// The window variables a control reads and changes (Linux `snd_cwnd`,
/// `snd_ssthresh`, `snd_cwnd_cnt`, `snd_cwnd_clamp`), in segments.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u32,
    pub ssthresh: u32,
    /// Segments (or ACKs) counted towards the next additive increase; with `ca_growth =
    /// "acks"` the fraction of a segment the window holds, in 1/65536 of a segment.
    pub cnt: u32,
    /// Upper bound of `cwnd` (`max_window`).
    pub clamp: u32,
    /// Slow-start counting (`ss_growth`).
    pub ss: SsGrowth,
    /// Congestion-avoidance counting (`ca_growth`).
    pub ca: CaGrowth,
    /// Segments in flight (RFC 6675 pipe) when the sender asks for a new ssthresh.
    pub flight: u32,
    /// Reno halves FlightSize (RFC 5681 eq. 4, ns-3 `TcpNewReno::GetSsThresh`) instead
    /// of cwnd (Linux `tcp_reno_ssthresh`, ns-2 `window()`): `reno_halves = "flight"`.
    pub halve_flight: bool,
}

impl Window {
    pub fn new(cwnd: u32, clamp: u32) -> Self {
        Window {
            cwnd: cwnd.min(clamp),
            ssthresh: INFINITE_SSTHRESH,
            cnt: 0,
            clamp,
            ss: SsGrowth::Segments,
            ca: CaGrowth::Segments,
            flight: 0,
            halve_flight: false,
        }
    }
    /// A window with the given growth rules (stack profiles).
    pub fn with_growth(cwnd: u32, clamp: u32, ss: SsGrowth, ca: CaGrowth) -> Self {
        Window {
            ss,
            ca,
            ..Window::new(cwnd, clamp)
        }
    }
    /// Linux before 4.3 (and with it every kernel of the per-ACK era) tests
    /// `snd_cwnd <= snd_ssthresh`; Linux since (`tcp_in_slow_start`), RFC 5681, ns-2 and
    /// ns-3 test `cwnd < ssthresh`.
    pub fn in_slow_start(&self) -> bool {
        if self.ca == CaGrowth::AcksLinux {
            self.cwnd <= self.ssthresh
        } else {
            self.cwnd < self.ssthresh
        }
    }
    /// Slow start (RFC 5681 3.1). Returns the acknowledged segments left over for
    /// congestion avoidance.
    /// - `segments` (RFC 3465 counting, Linux `tcp_slow_start`): one segment per segment
    ///   acknowledged, up to ssthresh; Linux 3.13–3.19 (`acks-linux` era) stops at
    ///   ssthresh + 1 and drops the rest. Deviation: RFC 3465's per-ACK limit L = 2 is not
    ///   applied, as Linux does not apply it.
    /// - `acks`: one segment per ACK (Linux ≤ 3.12 with `tcp_abc = 0`, ns-2 `opencwnd`,
    ///   ns-3 `TcpNewReno::SlowStart`); nothing is left over.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        match (self.ss, self.ca) {
            (SsGrowth::Acks, _) => {
                if acked > 0 {
                    self.cwnd = self.cwnd.saturating_add(1).min(self.clamp);
                }
                0
            }
            (SsGrowth::Segments, CaGrowth::AcksLinux) => {
                let cap = self.ssthresh.saturating_add(1);
                self.cwnd = self.cwnd.saturating_add(acked).min(cap).min(self.clamp);
                0
            }
            (SsGrowth::Segments, _) => {
                let target = self.cwnd.saturating_add(acked).min(self.ssthresh);
                let used = target.saturating_sub(self.cwnd);
                self.cwnd = target.min(self.clamp);
                acked - used.min(acked)
            }
        }
    }
    /// The common head of Linux's `cong_avoid` hooks (`tcp_reno_cong_avoid`,
    /// `bictcp_cong_avoid`): nothing unless the sender is cwnd-limited
    /// (`tcp_is_cwnd_limited`), slow start below ssthresh. Returns the acknowledged
    /// segments left for congestion avoidance, `None` when none are.
    #[inline]
    pub fn limited_slow_start(&mut self, a: &AckSample) -> Option<u32> {
        if !a.cwnd_limited {
            return None;
        }
        let mut acked = a.acked;
        if self.in_slow_start() {
            acked = self.slow_start(acked);
            if acked == 0 {
                return None;
            }
        }
        Some(acked)
    }
    /// Linux `tcp_reno_cong_avoid` on an ACK: [`Window::limited_slow_start`], then
    /// [`Window::reno_cong_avoid`] with what is left (NewReno, DCTCP).
    #[inline]
    pub fn reno_on_ack(&mut self, a: &AckSample) {
        if let Some(acked) = self.limited_slow_start(a) {
            self.reno_cong_avoid(acked);
        }
    }
    /// Additive increase (RFC 5681 3.1): one segment per `w` units, where a unit is
    /// - `segments`: a segment acknowledged (RFC 3465; Linux ≥ 4.0 `tcp_cong_avoid_ai`);
    /// - `acks`: 1/c of a segment per ACK on a fractional window c (ns-2
    ///   `cwnd_ += 1/cwnd_`, ns-3 NewReno MSS²/cWnd bytes per ACK), the fraction in `cnt`;
    /// - `acks-linux`: an ACK, Linux < 4.0 style: the ACK that finds the counter at `w`
    ///   only raises cwnd and zeroes the counter, so w + 1 ACKs per segment.
    ///
    /// A control with its own counter (CUBIC's `cnt`) passes it as `w`; in `acks` mode
    /// that is 1/w of a segment per ACK on an integer w (ns-3 `TcpCubic` counts ACKs).
    /// NewReno and DCTCP use [`Window::reno_cong_avoid`], whose w is the window itself.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        self.additive_increase(w, acked, false);
    }

    /// Reno's increase on its own window (`tcp_reno_cong_avoid`: w = cwnd). In `acks`
    /// mode the window's fraction counts too: 1/c per ACK with c = cwnd + fraction, the
    /// continuous law of ns-2 (`cwnd_ += 1/cwnd_`) and ns-3 NewReno.
    pub fn reno_cong_avoid(&mut self, acked: u32) {
        let w = self.cwnd;
        self.additive_increase(w, acked, true);
    }

    fn additive_increase(&mut self, w: u32, acked: u32, fractional: bool) {
        let w = w.max(1);
        match self.ca {
            CaGrowth::Segments => {}
            CaGrowth::Acks => {
                // A fractional window, as ns-2 (`cwnd_ += 1/cwnd_` on a double) and ns-3
                // (MSS²/cwnd bytes per ACK on a byte cwnd) keep it: `cnt` holds the fraction
                // in 1/65536 of a segment, and each ACK adds 1/c of a segment, c = cwnd plus
                // that fraction for Reno's own window (`fractional`). Counting ACKs up to w
                // instead grows half an ACK per step faster (benchmarks/ns3).
                if acked > 0 && fractional {
                    let c = (u64::from(w) << 16) + u64::from(self.cnt);
                    self.cnt += ((1u64 << 32) / c) as u32;
                    if self.cnt >= 1 << 16 {
                        self.cnt -= 1 << 16;
                        self.cwnd = self.cwnd.saturating_add(1).min(self.clamp);
                    }
                } else if acked > 0 {
                    // a control's own counter: w ACKs per segment, the remainder kept
                    // when w shrinks under the count (ns-3 `TcpCubic::IncreaseWindow`:
                    // `m_cWndCnt -= cnt`)
                    self.cnt += 1;
                    if self.cnt >= w {
                        self.cnt -= w;
                        self.cwnd = self.cwnd.saturating_add(1).min(self.clamp);
                    }
                }
                return;
            }
            CaGrowth::AcksLinux => {
                if acked > 0 {
                    if self.cnt >= w {
                        self.cwnd = self.cwnd.saturating_add(1).min(self.clamp);
                        self.cnt = 0;
                    } else {
                        self.cnt += 1;
                    }
                }
                return;
            }
        }
        if self.cnt >= w {
            self.cnt = 0;
            self.cwnd = self.cwnd.saturating_add(1);
        }
        self.cnt += acked;
        if self.cnt >= w {
            let delta = self.cnt / w;
            self.cnt -= delta * w;
            self.cwnd = self.cwnd.saturating_add(delta);
        }
        self.cwnd = self.cwnd.min(self.clamp);
    }
}

/// What an acknowledgement tells the control.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AckSample {
    pub now: SimTime,
    /// Segments newly delivered (cumulatively acknowledged or SACKed) by this ACK.
    pub acked: u32,
    /// RTT of the most recently sent never-retransmitted segment this ACK delivered.
    pub rtt: Option<SimDuration>,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// The sender has been limited by cwnd recently (Linux `tcp_is_cwnd_limited`); a
    /// window that is not used must not grow (RFC 7661 spirit, Linux behaviour).
    pub cwnd_limited: bool,
    /// Of the `acked` segments, how many arrived CE-marked at the receiver: the
    /// increase of the Accurate ECN counter (Linux `delivered_ce` delta). 0 without
    /// AccECN.
    pub ce: u32,
    /// The smoothed RTT after this ACK's sample (RFC 6298 SRTT), if any.
    pub srtt: Option<SimDuration>,
    /// The delivery-rate sample and the sender state rate-based controls (BBR) read.
    pub rs: RateSample,
}

/// A delivery-rate sample (Linux `struct rate_sample`, `tcp_rate.c` `tcp_rate_gen`) and
/// the sender counters a model-based control reads on every ACK. Counts are segments.
///
/// The rate is `delivered / interval` where `delivered` is the number of segments
/// delivered between the transmission of the segment this ACK newly delivered (the
/// most recently sent one) and now, and `interval` the longer of its send phase
/// (`first_tx` to its transmission) and its ACK phase (the delivery count's time stamp
/// when it was sent, to now); an interval shorter than the path's minimum RTT is
/// unreliable (ACK compression) and makes the sample invalid, as in Linux.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    /// The sample is valid (Linux `rs->delivered >= 0 && rs->interval_us > 0`).
    pub valid: bool,
    /// Segments delivered over `interval`.
    pub delivered: u64,
    pub interval: SimDuration,
    /// `tx.delivered` of the sampled segment (Linux `rs->prior_delivered`); 0 without a
    /// sample.
    pub prior_delivered: u64,
    /// The sampled segment was sent while application-limited.
    pub is_app_limited: bool,
    /// Segments newly marked lost while this ACK was processed (`rs->losses`).
    pub losses: u32,
    /// Segments in flight before this ACK (`rs->prior_in_flight`) and after it
    /// (`tcp_packets_in_flight` when `cong_control` runs).
    pub prior_in_flight: u32,
    pub in_flight: u32,
    /// Total segments delivered (`tp->delivered`), and when it last grew
    /// (`tp->delivered_mstamp`).
    pub delivered_total: u64,
    pub delivered_time: SimTime,
    /// Total segments ever marked lost (`tp->lost`) and delivered CE-marked
    /// (`tp->delivered_ce`, Accurate ECN only).
    pub lost_total: u64,
    pub delivered_ce_total: u64,
    /// Losses / CE marks since the sampled segment was sent (BBRv3 `rs->lost`,
    /// `rs->ece_delivered` uses the ACK's counters) and the flight when it was sent
    /// (`rs->tx_in_flight`).
    pub lost: u64,
    pub tx_in_flight: u32,
    /// The sender's congestion state after this ACK's loss detection (`icsk_ca_state`).
    pub ca_state: CaState,
    /// The sender has no data left to send right now (its writes are exhausted).
    pub app_limited_now: bool,
    /// When the next segment may leave by the pacing clock (`tp->tcp_wstamp_ns`; zero
    /// when not paced).
    pub next_departure: SimTime,
}

/// A congestion control algorithm. See the module doc for when each hook runs.
pub trait CongestionControl {
    fn init(&mut self, w: &mut Window, now: SimTime, snd_nxt: u64);
    fn on_delivery(&mut self, _w: &mut Window, _a: &AckSample) {}
    fn on_ack(&mut self, w: &mut Window, a: &AckSample);
    fn on_dup_ack(&mut self, _w: &mut Window, _now: SimTime) {}
    /// Returns the new ssthresh.
    fn on_loss(&mut self, w: &Window, now: SimTime) -> u32;
    /// Returns the new ssthresh. RFC 3168 6.1.2: react as to a loss.
    fn on_ecn(&mut self, w: &Window, now: SimTime) -> u32 {
        self.on_loss(w, now)
    }
    /// `reduce` is true for the first timeout of a loss episode (Linux `tcp_enter_loss`
    /// recomputes ssthresh only then); returns the new ssthresh when reducing.
    fn on_rto(&mut self, w: &Window, now: SimTime, snd_nxt: u64, reduce: bool) -> Option<u32>;
    fn on_tx_start(&mut self, _now: SimTime, _idle: SimDuration) {}
    /// Every acceptable ACK, after delivery accounting and before the state machine
    /// (Linux `in_ack_event`, which runs after `tcp_clean_rtx_queue` since 6.x).
    fn on_ack_event(&mut self, _w: &mut Window, _a: &AckSample) {}
    /// A control that owns the window on every ACK (Linux `cong_control`) does its
    /// work here and returns true; the sender then neither runs PRR nor `on_ack`.
    fn cong_control(&mut self, _w: &mut Window, _a: &AckSample) -> bool {
        false
    }
    /// The congestion state returned to Open (Linux `set_state(TCP_CA_Open)`).
    fn on_open(&mut self) {}
    /// The control sets cwnd itself on every ACK (see `cong_control`).
    fn owns_cwnd(&self) -> bool {
        false
    }
    /// A seed from the flow's random stream, given once before `init` to controls that
    /// randomise (BBR's PROBE_BW start phase); `CcKind::uses_rng` says which.
    fn set_seed(&mut self, _seed: u64) {}
    /// After `cong_control`: the control wants the current flight's rate samples marked
    /// application-limited (BBR in PROBE_RTT sets `tp->app_limited`).
    fn marks_app_limited(&self) -> bool {
        false
    }
    /// Whether ECN was negotiated; called once, before `init`.
    fn set_ecn_ok(&mut self, _ok: bool) {}
    /// A pacing rate of the control's own in bytes per second (Prague), or `None` for
    /// the sender's generic cwnd/srtt × ratio rate.
    fn pacing_rate(&self, _w: &Window, _srtt: SimDuration, _mtu: u32) -> Option<f64> {
        None
    }
}

/// The per-connection settings a control is built from: the fields of the resolved
/// [`TcpConfig`](super::TcpConfig) that some control reads (add one here when a new
/// control needs a knob; the `[tcp]` table documents it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CcParams {
    /// CUBIC's HyStart (Linux `hystart = 1`).
    pub hystart: bool,
    /// Segment payload size (Prague's per-MTU increase and pacing).
    pub mss: u32,
    /// Initial window in segments.
    pub init_cwnd: u32,
    /// Prague's RTT independence, its target and transition rounds.
    pub rtt_scaling: RttScaling,
    pub rtt_target: SimDuration,
    pub rtt_transition: u32,
    /// Prague's classic-ECN AQM detection and fallback.
    pub ecn_fallback: bool,
    /// IP + TCP header bytes of a full segment (52, or 40 without timestamps).
    pub header: u32,
    /// BBRv1's Linux version.
    pub bbr_version: super::config::BbrVersion,
}

impl CcParams {
    pub fn from_config(c: &TcpConfig) -> Self {
        CcParams {
            hystart: c.hystart,
            mss: c.mss,
            init_cwnd: c.init_cwnd,
            rtt_scaling: c.rtt_scaling,
            rtt_target: c.rtt_target,
            rtt_transition: c.rtt_transition,
            ecn_fallback: c.ecn_fallback,
            header: c.header_bytes(),
            bbr_version: c.bbr_version,
        }
    }
}

impl CcKind {
    /// The control negotiates ECN whatever the `ecn` setting (Linux
    /// `TCP_CONG_NEEDS_ECN`) and asks for Accurate ECN feedback, which both Linux
    /// `tcp_dctcp` (since AccECN, 6.18) and `tcp_prague` (`TCP_CONG_NEEDS_ACCECN`) use.
    pub fn needs_accecn(self) -> bool {
        matches!(self, CcKind::Dctcp | CcKind::Prague)
    }
    /// Data is sent as ECT(1), the L4S identifier (RFC 9331 §4.1); others send ECT(0).
    pub fn sends_ect1(self) -> bool {
        matches!(self, CcKind::Prague)
    }
    /// Paced by default: Prague and BBR ask for pacing in their `init`
    /// (`SK_PACING_NEEDED`).
    pub fn paced_by_default(self) -> bool {
        matches!(self, CcKind::Prague | CcKind::Bbr | CcKind::Bbr3)
    }
    /// The control draws random numbers (BBR's PROBE_BW phase), from a seed of the
    /// flow's stream; only such controls draw, so other flows' streams are untouched.
    pub fn uses_rng(self) -> bool {
        matches!(self, CcKind::Bbr | CcKind::Bbr3)
    }
}

/// How a registered control is constructed for a new connection.
pub trait CcBuild {
    fn build(p: &CcParams) -> Self;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_stops_at_ssthresh_and_hands_over() {
        let mut w = Window::new(10, 1000);
        w.ssthresh = 14;
        assert_eq!(w.slow_start(3), 0);
        assert_eq!(w.cwnd, 13);
        assert_eq!(
            w.slow_start(3),
            2,
            "one segment used to reach ssthresh, two left over"
        );
        assert_eq!(w.cwnd, 14);
    }

    #[test]
    fn additive_increase_counts_segments_not_acks() {
        let mut w = Window::new(10, 1000);
        w.ssthresh = 5;
        // 10 segments acknowledged by 5 stretch ACKs of 2: exactly one increase.
        for _ in 0..5 {
            w.cong_avoid_ai(10, 2);
        }
        assert_eq!((w.cwnd, w.cnt), (11, 0));
        // A single ACK of 23 segments at w = 11: +2, remainder 1.
        w.cong_avoid_ai(11, 23);
        assert_eq!((w.cwnd, w.cnt), (13, 1));
        let mut c = Window::new(10, 11);
        c.ssthresh = 1;
        c.cong_avoid_ai(1, 5);
        assert_eq!(c.cwnd, 11, "clamped");
    }

    /// Window of a resolved stack profile.
    fn profile(stack: &str, cwnd: u32, ssthresh: u32) -> Window {
        let o: crate::tcp::TcpOptions = toml::from_str(&format!("stack = \"{stack}\"")).unwrap();
        let c = o.resolve("tcp").unwrap();
        let mut w = Window::with_growth(cwnd, 100_000, c.ss_growth, c.ca_growth);
        w.ssthresh = ssthresh;
        w
    }
    /// `rounds` round trips of delayed ACKs (one ACK per 2 segments, cwnd/2 ACKs per
    /// round) through Reno's window rules.
    fn reno_rounds(w: &mut Window, rounds: u32) -> Vec<u32> {
        let mut out = vec![];
        for _ in 0..rounds {
            for _ in 0..w.cwnd / 2 {
                let mut acked = 2;
                if w.in_slow_start() {
                    acked = w.slow_start(acked);
                }
                if acked > 0 {
                    w.reno_cong_avoid(acked);
                }
            }
            out.push(w.cwnd);
        }
        out
    }

    #[test]
    fn slow_start_per_profile_with_delayed_acks() {
        // From 16 segments, 8 / 12 / 18 delayed ACKs per round. Per segment acknowledged
        // (Linux >= 3.13) the window doubles per round; per ACK (Linux 2.6.29 with
        // tcp_abc = 0, ns-2 opencwnd, ns-3 TcpNewReno) it grows by half: +8, +12, +18.
        for stack in ["linux", "linux-3.14"] {
            let mut w = profile(stack, 16, INFINITE_SSTHRESH);
            assert_eq!(reno_rounds(&mut w, 3), vec![32, 64, 128], "{stack}");
        }
        for stack in ["linux-2.6.29", "ns2-sack1", "ns3"] {
            let mut w = profile(stack, 16, INFINITE_SSTHRESH);
            assert_eq!(reno_rounds(&mut w, 3), vec![24, 36, 54], "{stack}");
        }
    }

    #[test]
    fn congestion_avoidance_per_profile_with_delayed_acks() {
        // cwnd 10 above ssthresh 5, 30 ACKs of 2 segments each.
        let run = |stack: &str| {
            let mut w = profile(stack, 10, 5);
            for _ in 0..30 {
                w.reno_cong_avoid(2);
            }
            (w.cwnd, w.cnt)
        };
        // Per segment (Linux >= 4.0): 10 segments at cwnd 10 (ACK 5), 11 more (ACK 11,
        // remainder 1), 12 (ACK 17, remainder 1), 13 (ACK 23, remainder 0), 14 (ACK 30).
        assert_eq!(run("linux"), (15, 0));
        // ns-2 / ns-3 NewReno, 1/c of a segment per ACK on a fractional window c (here in
        // 1/65536 of a segment): from 10.0 the tenth ACK leaves c at 10.955, the eleventh
        // crosses 11 (fraction 3,265); the 22nd crosses 12 (491); the last 8 ACKs bring
        // the fraction to 43,140 (0.658). An integer counter (+1 after w ACKs) would have
        // raised cwnd at ACKs 10 and 21: half an ACK per step sooner.
        assert_eq!(run("ns2-sack1"), (12, 43_140));
        assert_eq!(run("ns3"), (12, 43_140));
        // Linux < 4.0 tcp_cong_avoid_ai(tp, w): ACKs 1–10 count to 10, ACK 11 raises cwnd
        // and zeroes the counter; ACKs 12–22 count to 11, ACK 23 raises; ACKs 24–30 count 7.
        assert_eq!(run("linux-3.14"), (12, 7));
        assert_eq!(run("linux-2.6.29"), (12, 7));
    }

    #[test]
    fn fractional_avoidance_takes_the_integral_of_the_window() {
        // Raising the window from 3 to 9 segments one ACK at a time: ns-2's and ns-3's
        // continuous law dc = 1/c takes about (9² − 3²)/2 = 36 ACKs; counting ACKs up to
        // an integer w takes 3 + 4 + … + 8 = 33.
        let acks = |stack: &str| {
            let mut w = profile(stack, 3, 2);
            let mut n = 0;
            while w.cwnd < 9 {
                w.reno_cong_avoid(1);
                n += 1;
            }
            n
        };
        assert_eq!(acks("ns3"), 36);
        assert_eq!(acks("ns2-sack1"), 36);
        // A control's own counter (CUBIC's cnt as w) counts whole ACKs even where it
        // equals cwnd: w ACKs per segment, 3 + 4 + … + 8 = 33.
        let own = |stack: &str| {
            let mut w = profile(stack, 3, 2);
            let mut n = 0;
            while w.cwnd < 9 {
                let cw = w.cwnd;
                w.cong_avoid_ai(cw, 1);
                n += 1;
            }
            n
        };
        assert_eq!((own("ns3"), own("ns2-sack1")), (33, 33));
        // The count carries its remainder when the control's w drops below it (ns-3
        // `TcpCubic`: `m_cWndCnt -= cnt`): 7 ACKs counted towards w = 10, then w = 4 —
        // the next ACK (count 8 ≥ 4) raises cwnd and keeps 4, so the ACK after it
        // (count 5 ≥ 4) raises it again and keeps 1.
        let mut w = profile("ns3", 10, 2);
        for _ in 0..7 {
            w.cong_avoid_ai(10, 1);
        }
        assert_eq!((w.cwnd, w.cnt), (10, 7));
        w.cong_avoid_ai(4, 1);
        assert_eq!((w.cwnd, w.cnt), (11, 4));
        w.cong_avoid_ai(4, 1);
        assert_eq!((w.cwnd, w.cnt), (12, 1));
        // Linux's counters are unchanged (4.0+: per segment, one per ACK here: 33).
        assert_eq!(acks("linux"), 33);
    }

    #[test]
    fn slow_start_boundary_of_each_era() {
        // Linux < 4.3 tests cwnd <= ssthresh: at cwnd = ssthresh = 10 one more slow-start
        // step (2.6.29: +1 per ACK); today's Linux, ns-2 and ns-3 are in avoidance there.
        let w = profile("linux-2.6.29", 10, 10);
        assert!(w.in_slow_start());
        assert!(!profile("linux", 10, 10).in_slow_start());
        assert!(!profile("ns2-sack1", 10, 10).in_slow_start());
        // Linux 3.13–3.19: one stretch ACK of 4 segments from 10 with ssthresh 11 stops at
        // ssthresh + 1 = 12 and drops the rest; today's Linux stops at 11 and hands the 3
        // remaining segments to congestion avoidance.
        let mut w = profile("linux-3.14", 10, 11);
        assert_eq!((w.slow_start(4), w.cwnd), (0, 12));
        let mut w = profile("linux", 10, 11);
        assert_eq!((w.slow_start(4), w.cwnd), (3, 11));
    }
}
