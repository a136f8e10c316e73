//! PIE: a FIFO whose arrivals meet the PIE control law of [`super::pie_core`].
//!
//! Linux `sch_pie` by default (`variant = "linux"`); `"linux-3.14"`, `"rfc8033"`,
//! `"draft00"`, `"docsis"` and `"ns2"` select the other specifications (see `pie_core`).
//! Every parameter left out takes the chosen variant's default.
//!
//! Enqueue order, as in `pie_qdisc_enqueue`: tail drop at the limit (overlimit), then the
//! early-drop test; an early "drop" of an ECN-capable packet becomes a CE mark while
//! p ≤ `ecn_prob`. Dequeue is plain FIFO and feeds the delay estimator. The `tupdate`
//! timer runs lazily before each call (see [`UpdateTimer`]).
//!
//! Trace variables (`run.trace = true`): `p`, `qdelay` (s), `burst_allowance` (s), each
//! recorded when it changes.

use super::pie_core::{EarlyVerdict, Estimator, PieParams, PieVariant, PieVars, UpdateTimer};
use super::{
    BuildCtx, DropReason, MarkReason, ParamDoc, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict,
};
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::{SimDuration, SimTime};
use crate::units::{DurationSpec, Limit, SizeSpec};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `{ kind = "pie", ... }`. `None` fields take the variant's default.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PieConfig {
    /// Which PIE: "linux" (default), "linux-3.14", "rfc8033", "draft00", "docsis", "ns2".
    #[serde(default)]
    pub variant: PieVariant,
    /// Target queueing delay (alias `qdelay_ref`). Default by variant: 15 ms (linux,
    /// rfc8033), 20 ms (linux-3.14, ns2), 16 ms (draft00), 10 ms (docsis).
    #[serde(alias = "qdelay_ref")]
    pub target: Option<DurationSpec>,
    /// Probability update period (alias `t_update`). Default 15 ms (linux, rfc8033), 30 ms
    /// (linux-3.14, ns2), 16 ms (draft00, docsis).
    #[serde(alias = "t_update")]
    pub tupdate: Option<DurationSpec>,
    /// Queue limit, packets or bytes. Default 1000 packets (Linux `limit`).
    pub limit: Option<Limit>,
    /// Weight of (qdelay − target), 1/s. Default 0.125 (docsis 0.25). Linux variants take
    /// multiples of 1/16 from 0 to 2 (tc `alpha 2` = 0.125). Every PIE text pairs the
    /// small weight with the target error: the DOCSIS study's "1.25 and 0.125" are
    /// beta = 1.25 and alpha = 0.125.
    pub alpha: Option<f64>,
    /// Weight of (qdelay − qdelay_old), 1/s. Default 1.25 (docsis 2.5); tc `beta 20`.
    pub beta: Option<f64>,
    /// Burst allowance. Default 150 ms (linux, rfc8033, draft00), 100 ms (linux-3.14, ns2),
    /// 142 ms (docsis). Not a tc parameter in Linux (fixed there).
    pub max_burst: Option<DurationSpec>,
    /// Mark ECN-capable packets instead of dropping them while p ≤ `ecn_prob`. Default false.
    #[serde(default)]
    pub ecn: bool,
    /// Highest p at which packets are marked rather than dropped. Default 0.1 (Linux, RFC 8033 §5.1).
    pub ecn_prob: Option<f64>,
    /// Scale p by packet size. Default false (docsis true, with mean packet size 1024).
    pub bytemode: Option<bool>,
    /// "timestamp", "dq_rate" or "link_rate". Default timestamp (linux, rfc8033), dq_rate
    /// (linux-3.14, draft00, ns2), link_rate (docsis). Linux's `dq_rate_estimator` = "dq_rate".
    pub estimator: Option<Estimator>,
    /// Bytes per departure-rate measurement. Default 16384 (linux-3.14, ns2: 10000).
    pub dq_threshold: Option<SizeSpec>,
    /// RFC MEAN_PKTSIZE (two-packet safeguard, byte mode). Default the link MTU (docsis
    /// 1024, ns2 1000).
    pub mean_pktsize: Option<u32>,
    /// `rfc8033` only: de-randomise the early drops (RFC 8033 §5.4: accumulate p, never
    /// drop below 0.85, always from 8.5). Default true (Appendix B). `false` is the basic
    /// scheme's plain `random() < p` (§4.1, Appendix A `drop_early`), ns-3 `PieQueueDisc`'s
    /// default (`UseDerandomization = false`). The other variants follow their
    /// specification (Linux, draft00 and DOCSIS-PIE de-randomise; linux-3.14 and ns2 do
    /// not) and reject the field.
    pub derandomize: Option<bool>,
}

impl PieConfig {
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc { name: "variant", default: "linux", doc: "linux (today's Linux sch_pie), linux-3.14 (original sch_pie, residential study), rfc8033, draft00 (saturated-TCP study), docsis (RFC 8034), ns2 (ns-2.36 Queue/PIE, DOCSIS-downstream study)" },
        ParamDoc { name: "target", default: "15ms", doc: "target queueing delay (alias qdelay_ref); by variant 15ms linux/rfc8033 (include/net/pie.h, RFC 8033), 20ms linux-3.14/ns2, 16ms draft00, 10ms docsis (RFC 8034)" },
        ParamDoc { name: "tupdate", default: "15ms", doc: "probability update period (alias t_update); 15ms linux/rfc8033, 30ms linux-3.14/ns2, 16ms draft00/docsis. Linux runs the first update 500 ms after creation, ns2 at 0" },
        ParamDoc { name: "limit", default: "1000", doc: "queue limit: packets (integer) or bytes (\"250KB\"); 1000 packets = Linux sch_pie default" },
        ParamDoc { name: "alpha", default: "0.125", doc: "weight of (qdelay - target) in 1/s; 0.25 for docsis (RFC 8034). Linux: multiples of 1/16 in [0, 2] (tc alpha 2). The DOCSIS study's 0.125 is alpha" },
        ParamDoc { name: "beta", default: "1.25", doc: "weight of (qdelay - qdelay_old) in 1/s; 2.5 for docsis. Linux: multiples of 1/16 in [0, 2] (tc beta 20). The DOCSIS study's 1.25 is beta" },
        ParamDoc { name: "max_burst", default: "150ms", doc: "burst allowance before early drops start; 150ms linux/rfc8033/draft00, 100ms linux-3.14/ns2, 142ms docsis" },
        ParamDoc { name: "ecn", default: "false", doc: "mark ECN-capable packets instead of dropping while p <= ecn_prob (not in docsis)" },
        ParamDoc { name: "ecn_prob", default: "0.1", doc: "highest drop probability at which packets are marked (Linux 10 %, RFC 8033 §5.1)" },
        ParamDoc { name: "bytemode", default: "false", doc: "scale the drop probability by packet size; docsis default true (mean packet size 1024)" },
        ParamDoc { name: "estimator", default: "timestamp", doc: "queue delay estimate: timestamp (linux, rfc8033), dq_rate (linux-3.14, draft00, ns2; Little's law on a measured departure rate), link_rate (docsis)" },
        ParamDoc { name: "dq_threshold", default: "16384", doc: "bytes per departure-rate measurement (Linux QUEUE_THRESHOLD, RFC DQ_THRESHOLD); 10000 for linux-3.14 and ns2" },
        ParamDoc { name: "mean_pktsize", default: "MTU", doc: "RFC MEAN_PKTSIZE in bytes, for the two-packet safeguard and byte mode; docsis 1024, ns2 1000" },
        ParamDoc { name: "derandomize", default: "true", doc: "rfc8033 only: de-randomise early drops (RFC 8033 §5.4, Appendix B); false = Appendix A's plain random drop, ns-3 PieQueueDisc's default UseDerandomization=false" },
    ];

    /// Resolves defaults and checks ranges.
    pub fn resolve(&self, ctx: &BuildCtx) -> Result<PieParams, ParamError> {
        let v = self.variant;
        let is_linux = matches!(v, PieVariant::Linux | PieVariant::Linux314);
        let target = self.target.map(|d| d.0).unwrap_or(v.default_target());
        if target.is_zero() || target > SimDuration::from_secs(10) {
            return Err(ParamError::new(
                "target",
                target,
                "more than 0 and at most 10s",
            ));
        }
        let tupdate = self.tupdate.map(|d| d.0).unwrap_or(v.default_tupdate());
        if tupdate < SimDuration::from_micros(100) || tupdate > SimDuration::from_secs(10) {
            return Err(ParamError::new("tupdate", tupdate, "100us to 10s"));
        }
        let max_burst = self.max_burst.map(|d| d.0).unwrap_or(v.default_max_burst());
        if max_burst > SimDuration::from_secs(10) {
            return Err(ParamError::new("max_burst", max_burst, "0 to 10s"));
        }
        let limit = self.limit.unwrap_or(Limit::Packets(1000));
        if let Limit::Bytes(b) = limit {
            if b < ctx.mtu as u64 {
                return Err(ParamError::new(
                    "limit",
                    format!("{b}B"),
                    format!("at least one MTU ({} bytes) or a packet count", ctx.mtu),
                ));
            }
        }
        let mut weights = [
            ("alpha", self.alpha, v.default_alpha()),
            ("beta", self.beta, v.default_beta()),
        ]
        .map(|(n, x, d)| (n, x.unwrap_or(d)));
        for (name, x) in weights.iter_mut() {
            if is_linux {
                let a16 = *x * 16.0;
                if !(0.0..=32.0).contains(&a16) || (a16 - a16.round()).abs() > 1e-9 {
                    return Err(ParamError::new(name, *x, "a multiple of 1/16 from 0 to 2 for the Linux variants (tc takes 0..32 sixteenths)"));
                }
            } else if !(x.is_finite() && (0.0..=100.0).contains(x)) {
                return Err(ParamError::new(name, *x, "0 to 100 (1/s)"));
            }
        }
        let ecn_prob = self.ecn_prob.unwrap_or(0.1);
        if !(ecn_prob > 0.0 && ecn_prob <= 1.0) {
            return Err(ParamError::new(
                "ecn_prob",
                ecn_prob,
                "more than 0 and at most 1",
            ));
        }
        if self.ecn && v == PieVariant::Docsis {
            return Err(ParamError::new(
                "ecn",
                true,
                "false for variant docsis (DOCSIS-PIE does not mark)",
            ));
        }
        let dq_threshold = self
            .dq_threshold
            .map(|s| s.0)
            .unwrap_or(v.default_dq_threshold());
        if !(64..=1 << 30).contains(&dq_threshold) {
            return Err(ParamError::new(
                "dq_threshold",
                format!("{dq_threshold}B"),
                "64 B to 1 GiB",
            ));
        }
        let mean_pktsize = self
            .mean_pktsize
            .unwrap_or(v.default_mean_pktsize().unwrap_or(ctx.mtu));
        if !(20..=65535).contains(&mean_pktsize) {
            return Err(ParamError::new(
                "mean_pktsize",
                mean_pktsize,
                "20 to 65535 bytes",
            ));
        }
        if let (Some(d), false) = (self.derandomize, v == PieVariant::Rfc8033) {
            return Err(ParamError::new(
                "derandomize",
                d,
                format!(
                    "left out for variant {}: only rfc8033 makes de-randomisation optional (RFC 8033 §5.4); the others follow their specification",
                    v.name()
                ),
            ));
        }
        let derandomize = self.derandomize.unwrap_or(true);
        Ok(PieParams {
            variant: v,
            target,
            tupdate,
            max_burst,
            alpha: weights[0].1,
            beta: weights[1].1,
            ecn: self.ecn,
            ecn_prob,
            bytemode: self.bytemode.unwrap_or(v.default_bytemode()),
            estimator: self.estimator.unwrap_or(v.default_estimator()),
            dq_threshold,
            mean_pktsize,
            derandomize,
            mtu: ctx.mtu,
            spare_pkts: None,
            rate: ctx.rate,
            limit,
        })
    }

    pub fn validate(&self, ctx: &BuildCtx) -> Result<(), ParamError> {
        self.resolve(ctx).map(|_| ())
    }
}

/// Trace variable indices (`TracePoint::var`) of `p`, `qdelay` and `burst_allowance`.
pub const TR_P: u8 = 0;
pub const TR_QDELAY: u8 = 1;
pub const TR_BURST: u8 = 2;

#[derive(Debug)]
pub struct Pie {
    params: PieParams,
    vars: PieVars,
    timer: UpdateTimer,
    q: VecDeque<Packet>,
    bytes: u64,
    stats: QdiscStats,
    rng: Rng,
    /// Last traced values of (p, qdelay, burst allowance).
    traced: [f64; 3],
}

impl Pie {
    /// Panics on parameters that `PieConfig::validate` rejects.
    pub fn new(cfg: &PieConfig, ctx: BuildCtx) -> Self {
        let params = cfg
            .resolve(&ctx)
            .unwrap_or_else(|e| panic!("invalid pie parameters (validate first): {e:?}"));
        Pie {
            vars: params.new_vars(),
            timer: UpdateTimer::new(SimTime::ZERO + params.first_update(), params.tupdate),
            params,
            q: VecDeque::new(),
            bytes: 0,
            stats: QdiscStats::default(),
            rng: ctx.rng,
            traced: [f64::NAN; 3],
        }
    }

    pub fn params(&self) -> &PieParams {
        &self.params
    }
    pub fn vars(&self) -> &PieVars {
        &self.vars
    }

    fn trace(&mut self, t: SimTime, out: &mut QdiscOut) {
        if !out.tracing {
            return;
        }
        let now = [
            self.vars.prob,
            self.vars.qdelay.as_secs_f64(),
            self.vars.burst_allowance.as_secs_f64(),
        ];
        for (i, (&x, last)) in now.iter().zip(self.traced.iter_mut()).enumerate() {
            if x != *last {
                *last = x;
                out.trace(t, i as u8, x);
            }
        }
    }

    /// Runs the `tupdate` ticks due by `now`: an inline test, as most packets find none
    /// due (a call with the loop's frame cost more than the test).
    #[inline(always)]
    fn run_updates(&mut self, now: SimTime, out: &mut QdiscOut) {
        if self.timer.is_due(now) {
            self.run_due_updates(now, out);
        }
    }

    /// Runs every `tupdate` tick due by `now`.
    #[inline(never)]
    fn run_due_updates(&mut self, now: SimTime, out: &mut QdiscOut) {
        while let Some(t) = self.timer.due(now) {
            let before = self.vars;
            self.params.update(&mut self.vars, self.bytes);
            self.trace(t, out);
            if self.vars == before {
                // The update is a pure function of (state, backlog), and neither changes
                // until the next packet: every remaining due tick would change nothing.
                self.timer.skip_through(now);
                break;
            }
        }
    }

    fn full(&self, pkt: &Packet) -> bool {
        match self.params.limit {
            Limit::Packets(n) => self.q.len() >= n as usize,
            Limit::Bytes(b) => self.bytes + pkt.size as u64 > b,
        }
    }

    fn accept(&mut self, pkt: Packet) {
        self.stats.on_enqueue(&pkt);
        self.bytes += pkt.size as u64;
        self.q.push_back(pkt);
    }
}

impl Qdisc for Pie {
    fn enqueue(&mut self, mut pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
        self.run_updates(now, out);
        let verdict = if self.full(&pkt) {
            self.params.on_drop(&mut self.vars);
            out.drop_arrival(&mut self.stats, pkt, DropReason::Overlimit)
        } else {
            self.params.before_enqueue(&mut self.vars);
            match self.params.drop_early(
                &mut self.vars,
                self.bytes,
                self.q.len() as u32,
                pkt.size,
                &mut self.rng,
            ) {
                EarlyVerdict::Enqueue => {
                    self.accept(pkt);
                    Verdict::Enqueued
                }
                EarlyVerdict::MarkOrDrop
                    if self.params.may_mark(&self.vars) && pkt.ecn.is_capable() =>
                {
                    pkt.ecn = Ecn::Ce;
                    self.stats.on_mark(MarkReason::Early);
                    self.accept(pkt);
                    Verdict::Marked(MarkReason::Early)
                }
                EarlyVerdict::MarkOrDrop => {
                    self.params.on_drop(&mut self.vars);
                    out.drop_arrival(&mut self.stats, pkt, DropReason::Early)
                }
            }
        };
        self.params
            .after_enqueue(&mut self.vars, self.bytes, self.q.len() as u32, now);
        self.trace(now, out);
        verdict
    }

    fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
        self.run_updates(now, out);
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        self.stats.on_dequeue(&p);
        self.params.on_dequeue(
            &mut self.vars,
            p.size,
            now.saturating_since(p.enqueued_at),
            self.bytes,
            now,
        );
        self.trace(now, out);
        Some(p)
    }

    fn len(&self) -> usize {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }
    fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    fn trace_vars(&self) -> &'static [&'static str] {
        &["p", "qdelay", "burst_allowance"]
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, pkt};
    use super::*;

    fn ms(x: u64) -> SimDuration {
        SimDuration::from_millis(x)
    }

    fn build(toml_body: &str) -> Pie {
        let cfg: PieConfig = toml::from_str(toml_body).unwrap();
        cfg.validate(&ctx(10_000_000)).unwrap();
        Pie::new(&cfg, ctx(10_000_000))
    }

    /// Drives the qdisc like a 10 Mbit/s link (one dequeue opportunity per 1.2 ms) fed at
    /// `in_bps` with 1500-byte packets for `secs`, checking the stats identities after
    /// every call. Returns (time of the first drop, packets offered).
    fn drive(q: &mut Pie, in_bps: u64, secs: f64, out: &mut QdiscOut) -> (SimTime, u64) {
        let gap_in = 1500 * 8 * 1_000_000_000 / in_bps;
        let gap_out = 1500 * 8 * 1_000_000_000 / 10_000_000;
        let (mut t_in, mut t_out) = (0u64, gap_out);
        let end = (secs * 1e9) as u64;
        let mut uid = 0;
        let mut first_drop = None;
        while t_in < end || t_out < end {
            if t_in <= t_out {
                let now = SimTime::from_nanos(t_in);
                if let Verdict::Dropped(_) = q.enqueue(pkt(1, 1500, uid, now), now, out) {
                    first_drop.get_or_insert(now);
                }
                uid += 1;
                t_in += gap_in;
            } else {
                let now = SimTime::from_nanos(t_out);
                q.dequeue(now, out);
                t_out += gap_out;
            }
            q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
        }
        (first_drop.unwrap_or(SimTime::NEVER), uid)
    }

    #[test]
    fn defaults_by_variant() {
        let c = ctx(10_000_000);
        let p = PieConfig::default().resolve(&c).unwrap();
        assert_eq!(
            (p.target, p.tupdate, p.max_burst, p.limit),
            (ms(15), ms(15), ms(150), Limit::Packets(1000))
        );
        assert_eq!(
            (p.alpha, p.beta, p.estimator),
            (0.125, 1.25, Estimator::Timestamp)
        );
        assert_eq!(p.first_update(), ms(500));
        let d: PieConfig = toml::from_str("variant = \"draft00\"\nlimit = \"250KB\"").unwrap();
        let p = d.resolve(&c).unwrap();
        assert_eq!(
            (p.target, p.tupdate, p.estimator, p.dq_threshold),
            (ms(16), ms(16), Estimator::DqRate, 16384)
        );
        assert_eq!(p.first_update(), ms(16));
        let d: PieConfig = toml::from_str("variant = \"docsis\"").unwrap();
        let p = d.resolve(&c).unwrap();
        assert_eq!(
            (p.target, p.tupdate, p.max_burst, p.alpha, p.beta),
            (ms(10), ms(16), ms(142), 0.25, 2.5)
        );
        assert!(p.bytemode);
        assert_eq!(p.mean_pktsize, 1024);
        let p = toml::from_str::<PieConfig>("variant = \"ns2\"")
            .unwrap()
            .resolve(&c)
            .unwrap();
        assert_eq!(
            (p.target, p.tupdate, p.max_burst, p.alpha, p.beta),
            (ms(20), ms(30), ms(100), 0.125, 1.25)
        );
        assert_eq!(
            (p.estimator, p.dq_threshold, p.mean_pktsize, p.bytemode),
            (Estimator::DqRate, 10_000, 1000, false)
        );
        assert_eq!(p.first_update(), SimDuration::ZERO);
        let d: PieConfig =
            toml::from_str("variant = \"linux-3.14\"\nqdelay_ref = \"20ms\"\nt_update = \"30ms\"")
                .unwrap();
        let p = d.resolve(&c).unwrap();
        assert_eq!(
            (p.target, p.tupdate, p.max_burst, p.dq_threshold),
            (ms(20), ms(30), ms(100), 10_000)
        );
    }

    #[test]
    fn validation_names_field_and_range() {
        let c = ctx(10_000_000);
        let bad = |s: &str| {
            toml::from_str::<PieConfig>(s)
                .unwrap()
                .validate(&c)
                .unwrap_err()
        };
        assert_eq!(bad("alpha = 0.1").field, "alpha");
        assert!(bad("alpha = 0.1").allowed.contains("1/16"));
        assert!(
            toml::from_str::<PieConfig>("variant = \"rfc8033\"\nalpha = 0.1")
                .unwrap()
                .validate(&c)
                .is_ok()
        );
        assert_eq!(bad("beta = 3.0").field, "beta");
        assert_eq!(bad("target = \"0ms\"").field, "target");
        assert_eq!(bad("tupdate = \"10us\"").field, "tupdate");
        assert_eq!(bad("ecn_prob = 0.0").field, "ecn_prob");
        assert_eq!(bad("limit = \"100B\"").field, "limit");
        assert_eq!(bad("variant = \"docsis\"\necn = true").field, "ecn");
        // De-randomisation is optional only in RFC 8033 (§5.4).
        assert_eq!(bad("derandomize = false").field, "derandomize");
        assert_eq!(
            bad("variant = \"ns2\"\nderandomize = true").field,
            "derandomize"
        );
        assert!(
            toml::from_str::<PieConfig>("variant = \"rfc8033\"\nderandomize = false")
                .unwrap()
                .validate(&c)
                .is_ok()
        );
        assert!(toml::from_str::<PieConfig>("variant = \"pie2\"").is_err());
        assert!(toml::from_str::<PieConfig>("targte = \"5ms\"").is_err());
    }

    /// Linux PIE, 20 Mbit/s into 10 Mbit/s: no early drop before the first update
    /// (500 ms) and the 150 ms burst allowance; then p rises and early drops start.
    #[test]
    fn burst_allowance_then_drops() {
        let mut q = build("");
        let mut out = QdiscOut::new(true);
        let (first_drop, _) = drive(&mut q, 20_000_000, 3.0, &mut out);
        // The burst allowance (150 ms of dequeues) is spent by 150 ms, but p stays 0 until
        // the first update at 500 ms. The sojourn is then t/2 ≈ 250 ms, so the first
        // update gives only p ≈ (0.125·0.235 + 1.25·0.25)/2048 ≈ 1.7e-4; the next ones
        // climb the auto-tuning bands (and add 2 % each above 250 ms) within ~100 ms, and
        // the accumulator then needs ≥ 0.85 before the first drop.
        assert!(
            first_drop >= SimTime::from_nanos(500_000_000),
            "first drop at {first_drop}"
        );
        assert!(
            first_drop < SimTime::from_nanos(700_000_000),
            "first drop at {first_drop}"
        );
        assert!(q.stats().drops[DropReason::Early.index()] > 100);
        assert_eq!(
            q.stats().drops[DropReason::Overlimit.index()],
            0,
            "limit 1000 never reached"
        );
        // Traces: p starts at 0.5 s, burst allowance reaches 0.
        let first_p = out
            .trace
            .iter()
            .find(|t| t.var == TR_P && t.value > 0.0)
            .unwrap();
        assert_eq!(first_p.t, SimTime::from_nanos(500_000_000));
        assert!(out
            .trace
            .iter()
            .any(|t| t.var == TR_BURST && t.value == 0.0));
        assert!(out.trace.iter().any(|t| t.var == TR_QDELAY));
    }

    /// RFC 8033 under a 2× overload: the allowance is re-armed at each arrival while p = 0
    /// and both delays are below target/2 (until ~15 ms, when the sojourn t/2 passes
    /// 7.5 ms), then runs down by 15 ms per update: 150 ms later it is 0. No early drop
    /// happens before, and drops start soon after.
    #[test]
    fn rfc8033_no_drops_during_burst_allowance() {
        let mut q = build("variant = \"rfc8033\"");
        let mut out = QdiscOut::new(true);
        let (first_drop, _) = drive(&mut q, 20_000_000, 1.0, &mut out);
        let exhausted = out
            .trace
            .iter()
            .find(|t| t.var == TR_BURST && t.value == 0.0)
            .unwrap()
            .t;
        assert!(
            exhausted >= SimTime::from_nanos(150_000_000)
                && exhausted <= SimTime::from_nanos(180_000_000),
            "allowance exhausted at {exhausted}"
        );
        assert!(
            first_drop >= exhausted,
            "drop at {first_drop} before {exhausted}"
        );
        assert!(first_drop < exhausted + ms(100), "first drop {first_drop}");
    }

    /// Offered load below capacity: the queue never builds, p stays 0, nothing dropped.
    #[test]
    fn no_drops_when_uncongested() {
        for v in ["linux", "linux-3.14", "rfc8033", "draft00", "docsis", "ns2"] {
            let mut q = build(&format!("variant = \"{v}\""));
            let mut out = QdiscOut::new(false);
            drive(&mut q, 9_000_000, 3.0, &mut out);
            assert_eq!(q.stats().total_drops(), 0, "{v}");
            assert_eq!(q.vars().prob, 0.0, "{v}");
        }
    }

    /// Under a 2× unresponsive overload every variant controls the queue far below the
    /// 1000-packet limit (FIFO would hold 1.2 s) after its transient.
    #[test]
    fn controls_overload_in_every_variant() {
        for v in ["linux", "linux-3.14", "rfc8033", "draft00", "docsis", "ns2"] {
            let mut q = build(&format!("variant = \"{v}\""));
            let mut out = QdiscOut::new(false);
            drive(&mut q, 20_000_000, 6.0, &mut out);
            let st = q.stats();
            assert!(st.drops[DropReason::Early.index()] > 1000, "{v}: {st:?}");
            // After 6 s the standing queue is below 300 packets (0.36 s).
            assert!(q.len() < 300, "{v}: backlog {}", q.len());
        }
    }

    /// RFC 8033 §5.4 de-randomisation is optional: `derandomize = false` is the basic
    /// scheme's `drop_early` (§4.1, Appendix A), a coin with probability p at every arrival
    /// past the safeguards, as ns-3's `PieQueueDisc` runs by default (`UseDerandomization
    /// = false`). Hand-worked at p = 0.6, 1000 arrivals on a standing queue: de-randomised,
    /// the accumulator is 0.6 < 0.85 after the first arrival and again after every drop (a
    /// drop resets it to 0), so neither the first arrival nor one right after a drop can
    /// be dropped; the plain coin drops 60 % of the arrivals (σ ≈ 15), back-to-back drops
    /// included (a pair has probability 0.36).
    #[test]
    fn rfc8033_derandomize_false_is_a_plain_coin() {
        let run = |body: &str| -> Vec<bool> {
            let mut q = build(body);
            let mut out = QdiscOut::new(false);
            let t = SimTime::from_nanos(1_000_000); // before the first update at 15 ms
            for i in 0..10 {
                assert_eq!(
                    q.enqueue(pkt(1, 1500, i, t), t, &mut out),
                    Verdict::Enqueued
                );
            }
            // Past every safeguard: no burst allowance, qdelay_old ≥ target/2 (and p ≥ 0.2),
            // 10 packets queued.
            q.vars.burst_allowance = SimDuration::ZERO;
            q.vars.qdelay_old = ms(40);
            q.vars.prob = 0.6;
            (0..1000u64)
                .map(|i| {
                    matches!(
                        q.enqueue(pkt(1, 1500, 100 + i, t), t, &mut out),
                        Verdict::Dropped(DropReason::Early)
                    )
                })
                .collect()
        };
        let back_to_back = |d: &[bool]| d.windows(2).filter(|w| w[0] && w[1]).count();
        let derand = run("variant = \"rfc8033\"");
        assert!(!derand[0]);
        assert_eq!(back_to_back(&derand), 0);
        let plain = run("variant = \"rfc8033\"\nderandomize = false");
        let drops = plain.iter().filter(|&&d| d).count();
        assert!(
            (540..=660).contains(&drops),
            "{drops} drops of 1000 at p = 0.6"
        );
        assert!(back_to_back(&plain) > 250, "{}", back_to_back(&plain));
    }

    #[test]
    fn ecn_marks_below_ecn_prob_and_drops_above() {
        let mut q = build("ecn = true");
        q.vars.burst_allowance = SimDuration::ZERO;
        q.vars.qdelay = ms(40);
        q.vars.accu_prob = 100.0;
        let mut out = QdiscOut::new(false);
        let t = SimTime::from_nanos(1_000_000); // before the first update at 500 ms
        for i in 0..10 {
            q.enqueue(pkt(1, 1500, i, t), t, &mut out);
        }
        q.vars.accu_prob = 100.0;
        // p = 0.05 ≤ 0.1: an ECT packet is marked, a not-ECT one dropped.
        q.vars.prob = 0.05;
        let mut p = pkt(1, 1500, 100, t);
        p.ecn = Ecn::Ect0;
        assert_eq!(
            q.enqueue(p, t, &mut out),
            Verdict::Marked(MarkReason::Early)
        );
        assert_eq!(q.q.back().unwrap().ecn, Ecn::Ce);
        // Linux does not reset the accumulator on a mark.
        assert!(q.vars.accu_prob > 8.5);
        assert_eq!(
            q.enqueue(pkt(1, 1500, 101, t), t, &mut out),
            Verdict::Dropped(DropReason::Early)
        );
        assert_eq!(q.vars.accu_prob, 0.0, "reset on drop");
        // p = 0.2 > 0.1: ECT packets are dropped too.
        q.vars.prob = 0.2;
        q.vars.accu_prob = 100.0;
        let mut p = pkt(1, 1500, 102, t);
        p.ecn = Ecn::Ect0;
        assert_eq!(
            q.enqueue(p, t, &mut out),
            Verdict::Dropped(DropReason::Early)
        );
        assert_eq!(q.stats().marks[MarkReason::Early.index()], 1);
        q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
    }

    #[test]
    fn byte_limit_and_overlimit_resets_accumulator() {
        let mut q = build("variant = \"draft00\"\nlimit = \"4500B\"");
        let mut out = QdiscOut::new(false);
        let t = SimTime::ZERO;
        for i in 0..3 {
            assert_eq!(
                q.enqueue(pkt(1, 1500, i, t), t, &mut out),
                Verdict::Enqueued
            );
        }
        q.vars.accu_prob = 0.5;
        assert_eq!(
            q.enqueue(pkt(1, 1500, 3, t), t, &mut out),
            Verdict::Dropped(DropReason::Overlimit)
        );
        assert_eq!(q.vars.accu_prob, 0.0);
        assert_eq!(q.backlog_bytes(), 4500);
        // draft00 activated once a third of the buffer (1500 B) was queued.
        assert!(q.vars.active);
    }

    #[test]
    fn lazy_timer_matches_per_tick_updates() {
        // Two identical queues; one is poked at every tick, the other only at packets.
        let mut a = build("variant = \"rfc8033\"");
        let mut b = build("variant = \"rfc8033\"");
        let mut out = QdiscOut::new(false);
        let t0 = SimTime::ZERO;
        for i in 0..40 {
            a.enqueue(pkt(1, 1500, i, t0), t0, &mut out);
            b.enqueue(pkt(1, 1500, i, t0), t0, &mut out);
        }
        let t1 = SimTime::from_nanos(40_000_000);
        a.dequeue(t1, &mut out);
        b.dequeue(t1, &mut out);
        for k in 1..=200u64 {
            let t = t1 + ms(15) * k;
            a.run_updates(t, &mut out);
        }
        let t2 = t1 + ms(15) * 200;
        b.run_updates(t2, &mut out);
        assert_eq!(a.vars, b.vars);
        assert!(a.vars.prob > 0.0);
    }
}
