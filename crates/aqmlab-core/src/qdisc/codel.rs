//! `codel`: a FIFO controlled by CoDel (Linux `sch_codel`), plus the variants the studies
//! use: `variant = "rfc8289" | "draft00" | "act"`, `fixed_count = n` (CoDel-count-n) and
//! `drop_at = "enqueue"` (tail-drop CoDel). `codel_act` is `codel` with `variant = "act"`.
//!
//! Defaults follow Linux `sch_codel`: limit 1000 packets, target 5 ms, interval 100 ms,
//! ECN off (sch_codel leaves it off; fq_codel turns it on), no ce_threshold. The control
//! law and state machine live in [`codel_core`](super::codel_core).
//!
//! ## Tail-drop CoDel (`drop_at = "enqueue"`)
//! The DOCSIS study's CoDel decides when a packet *arrives* and drops the arriving packet.
//! At that moment no packet is leaving, so the sojourn CoDel compares with `target` must
//! be estimated; `sojourn_estimate` chooses how:
//! - `"head"` (default): the sojourn the packet at the head of the queue has accumulated
//!   so far, `now − head.enqueued_at`. It is measured, not predicted (CoDel's principle),
//!   needs no knowledge of the link rate, and is what a dequeue-time CoDel would see a
//!   little later; it lags the arriving packet's own future sojourn by up to that amount.
//! - `"backlog"`: the arriving packet's predicted sojourn, queued frame bytes ÷ the rate
//!   the qdisc was built for (link or shaper rate). Exact for a constant-rate link (minus
//!   the packet on the wire, which the qdisc cannot see); wrong when the service rate
//!   varies (shared media, DOCSIS bonding), where `"head"` stays honest.
//!
//! An empty queue yields no estimate, which (like an empty dequeue) resets the
//! above-target window. The CoDel decision is taken before the limit check, so the state
//! machine sees every arrival; a packet CoDel accepts may still be tail-dropped at the limit.

use super::codel_core::{
    BacklogRule, CodelParams, CodelQueue, CodelStats, CodelVariant, CodelVars, EnqueueDecision,
    CODEL_TRACE_VARS,
};
use super::{
    BuildCtx, DropReason, MarkReason, ParamDoc, ParamError, Qdisc, QdiscOut, QdiscStats, Verdict,
};
use crate::packet::{Ecn, Packet};
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::{DurationSpec, Limit};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Where the CoDel decision is made.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DropAt {
    /// At dequeue, dropping from the head (CoDel as specified; default).
    #[default]
    Dequeue,
    /// At enqueue, dropping the arriving packet (the DOCSIS study's tail-drop CoDel).
    Enqueue,
}

/// How tail-drop CoDel estimates the sojourn time at enqueue. See the module doc.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SojournEstimate {
    /// Time the head packet has waited so far (default).
    #[default]
    Head,
    /// Queued frame bytes divided by the link rate.
    Backlog,
}

fn d_limit() -> Limit {
    Limit::Packets(1000)
}
fn d_target() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(5))
}
fn d_interval() -> DurationSpec {
    DurationSpec(SimDuration::from_millis(100))
}

/// `{ kind = "codel", ... }`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CodelConfig {
    /// Packets (`1000`) or bytes (`"250KB"`). Default 1000 packets (Linux `DEFAULT_CODEL_LIMIT`).
    #[serde(default = "d_limit")]
    pub limit: Limit,
    /// Default 5 ms (Linux `codel_params_init`, RFC 8289).
    #[serde(default = "d_target")]
    pub target: DurationSpec,
    /// Default 100 ms (Linux, RFC 8289).
    #[serde(default = "d_interval")]
    pub interval: DurationSpec,
    /// CE-mark ECN-capable packets instead of dropping. Default false (sch_codel).
    #[serde(default)]
    pub ecn: bool,
    /// CE-mark ECN-capable packets whose sojourn exceeds this. Default off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ce_threshold: Option<DurationSpec>,
    /// `linux` (default for `codel`), `rfc8289`, `draft00`, `act` (default for `codel_act`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<CodelVariant>,
    /// `dequeue` (default) or `enqueue` (tail-drop CoDel).
    #[serde(default)]
    pub drop_at: DropAt,
    /// With `drop_at = "enqueue"`: `head` (default) or `backlog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sojourn_estimate: Option<SojournEstimate>,
    /// Pin CoDel's count at this value (CoDel-count-n diagnostic). Default off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_count: Option<u32>,
    /// What keeps CoDel from dropping: `linux` (default; the queue holds at most one MTU
    /// of frame bytes after the head left, sch_codel) or `ns3` (it holds fewer IP bytes
    /// than one MTU, ns-3 `CoDelQueueDisc`'s `MinBytes`: one full packet left can drop).
    #[serde(default)]
    pub backlog_rule: BacklogRule,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            limit: d_limit(),
            target: d_target(),
            interval: d_interval(),
            ecn: false,
            ce_threshold: None,
            variant: None,
            drop_at: DropAt::Dequeue,
            sojourn_estimate: None,
            fixed_count: None,
            backlog_rule: BacklogRule::Linux,
        }
    }
}

/// `{ kind = "codel_act", ... }`: the same table as `codel`, default variant `act`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct CodelActConfig(pub CodelConfig);

macro_rules! codel_params_doc {
    ($variant_default:literal) => {
        &[
            ParamDoc { name: "limit", default: "1000", doc: "packets (integer) or bytes (\"250KB\"); 1000 packets = Linux sch_codel default" },
            ParamDoc { name: "target", default: "5ms", doc: "acceptable standing sojourn time (Linux, RFC 8289)" },
            ParamDoc { name: "interval", default: "100ms", doc: "window the sojourn must stay above target; control law interval/sqrt(count) (Linux, RFC 8289)" },
            ParamDoc { name: "ecn", default: "false", doc: "CE-mark ECN-capable packets instead of dropping (off in Linux sch_codel)" },
            ParamDoc { name: "ce_threshold", default: "off", doc: "CE-mark ECN-capable packets whose sojourn exceeds this duration (Linux ce_threshold)" },
            ParamDoc {
                name: "variant",
                default: $variant_default,
                doc: "linux = codel_impl.h (fixed-point 1/sqrt, count reuse delta within 16 intervals); rfc8289 = RFC 8289 pseudocode (exact sqrt); draft00 = draft-ietf-aqm-codel-00 (count-2 within 8 intervals, saturated-TCP study); act = CoDel-ACT (window interval/sqrt(count), count decay 126/128 above 126)",
            },
            ParamDoc { name: "drop_at", default: "dequeue", doc: "dequeue = head drop; enqueue = tail-drop CoDel deciding on arrival (DOCSIS study)" },
            ParamDoc { name: "sojourn_estimate", default: "head", doc: "drop_at = enqueue only: head = time the head packet has waited; backlog = queued frame bytes / link rate" },
            ParamDoc { name: "fixed_count", default: "off", doc: "pin count at n (CoDel-count-n diagnostic, saturated-TCP study): drops interval/sqrt(n) apart" },
            ParamDoc { name: "backlog_rule", default: "linux", doc: "what keeps CoDel from dropping (drop_at = dequeue): linux (at most one MTU of frame bytes left after the head, sch_codel) or ns3 (fewer IP bytes left than one MTU, ns-3 CoDelQueueDisc's MinBytes: one full packet left can drop)" },
        ]
    };
}

/// Resolves a `codel`/`codel_act` table into the qdisc's settings.
pub trait CodelSpec {
    fn config(&self) -> &CodelConfig;
    fn default_variant(&self) -> CodelVariant;
}
impl CodelSpec for CodelConfig {
    fn config(&self) -> &CodelConfig {
        self
    }
    fn default_variant(&self) -> CodelVariant {
        CodelVariant::Linux
    }
}
impl CodelSpec for CodelActConfig {
    fn config(&self) -> &CodelConfig {
        &self.0
    }
    fn default_variant(&self) -> CodelVariant {
        CodelVariant::Act
    }
}

fn validate_codel(c: &CodelConfig, ctx: &BuildCtx) -> Result<(), ParamError> {
    if let Limit::Bytes(b) = c.limit {
        if b < ctx.mtu as u64 {
            return Err(ParamError::new(
                "limit",
                format!("{b}B"),
                format!("at least one MTU ({} bytes) or a packet count", ctx.mtu),
            ));
        }
    }
    validate_codel_times(c.target, c.interval, c.ce_threshold)?;
    if c.fixed_count == Some(0) {
        return Err(ParamError::new("fixed_count", 0, "a count of at least 1"));
    }
    if c.backlog_rule == BacklogRule::Ns3 && c.drop_at != DropAt::Dequeue {
        return Err(ParamError::new(
            "backlog_rule",
            "ns3",
            "only with drop_at = \"dequeue\" (ns-3's CoDelQueueDisc drops at dequeue)",
        ));
    }
    if c.sojourn_estimate.is_some() && c.drop_at != DropAt::Enqueue {
        return Err(ParamError::new(
            "sojourn_estimate",
            format!("{:?}", c.sojourn_estimate.unwrap_or_default()).to_lowercase(),
            "only with drop_at = \"enqueue\"",
        ));
    }
    Ok(())
}

/// Shared checks of CoDel's durations (also used by fq_codel).
pub(crate) fn validate_codel_times(
    target: DurationSpec,
    interval: DurationSpec,
    ce: Option<DurationSpec>,
) -> Result<(), ParamError> {
    if target.0.is_zero() {
        return Err(ParamError::new(
            "target",
            "0",
            "a positive duration such as \"5ms\"",
        ));
    }
    if interval.0.is_zero() {
        return Err(ParamError::new(
            "interval",
            "0",
            "a positive duration such as \"100ms\"",
        ));
    }
    if let Some(t) = ce {
        if t.0.is_zero() {
            return Err(ParamError::new(
                "ce_threshold",
                "0",
                "a positive duration (omit the key to disable)",
            ));
        }
    }
    Ok(())
}

impl CodelConfig {
    pub const PARAMS: &'static [ParamDoc] = codel_params_doc!("linux");
    pub fn validate(&self, ctx: &BuildCtx) -> Result<(), ParamError> {
        validate_codel(self, ctx)
    }
}

impl CodelActConfig {
    pub const PARAMS: &'static [ParamDoc] = codel_params_doc!("act");
    pub fn validate(&self, ctx: &BuildCtx) -> Result<(), ParamError> {
        if let Some(v) = self.0.variant {
            if v != CodelVariant::Act {
                return Err(ParamError::new("variant", v.name(), "act (codel_act is codel with variant = \"act\"; use kind = \"codel\" for other variants)"));
            }
        }
        validate_codel(&self.0, ctx)
    }
}

/// The CoDel qdisc.
#[derive(Debug)]
pub struct Codel {
    params: CodelParams,
    vars: CodelVars,
    cstats: CodelStats,
    limit: Limit,
    q: VecDeque<Packet>,
    bytes: u64,
    overhead: u32,
    drop_at: DropAt,
    estimate: SojournEstimate,
    rate: Rate,
    stats: QdiscStats,
    traced: [f64; 4],
    /// `backlog_rule = "ns3"`: ns-3's `MinBytes` (the MTU in IP bytes); `None`: Linux's rule.
    ns3_min_bytes: Option<u64>,
}

/// The FIFO as CoDel sees it.
struct Fifo<'a> {
    q: &'a mut VecDeque<Packet>,
    bytes: &'a mut u64,
    overhead: u32,
    ns3_min_bytes: Option<u64>,
}

impl CodelQueue for Fifo<'_> {
    #[inline]
    fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        *self.bytes -= p.size as u64;
        Some(p)
    }
    #[inline]
    fn backlog(&self) -> u64 {
        *self.bytes + self.q.len() as u64 * self.overhead as u64
    }
    #[inline]
    fn spared(&self, mtu: u64) -> bool {
        match self.ns3_min_bytes {
            None => self.backlog() <= mtu,
            // ns-3 `CoDelQueueDisc::OkToDrop`: the IP bytes left below `MinBytes`
            Some(min) => *self.bytes < min,
        }
    }
}

impl Codel {
    pub fn new<C: CodelSpec>(spec: &C, ctx: BuildCtx) -> Self {
        let c = spec.config();
        let params = CodelParams {
            target: c.target.0,
            interval: c.interval.0,
            mtu: ctx.mtu as u64 + ctx.overhead as u64,
            ecn: c.ecn,
            ce_threshold: c.ce_threshold.map(|d| d.0),
            variant: c.variant.unwrap_or(spec.default_variant()),
            fixed_count: c.fixed_count,
        };
        Codel {
            vars: CodelVars::new(&params),
            params,
            cstats: CodelStats::default(),
            limit: c.limit,
            // empty, grows on demand (a ring buffer touches every slot it has as it
            // cycles: reserving the limit made 10,000 links reserve ~7 GB, and even 64
            // slots per link are most of a many-flow run's memory)
            q: VecDeque::new(),
            bytes: 0,
            overhead: ctx.overhead,
            drop_at: c.drop_at,
            estimate: c.sojourn_estimate.unwrap_or_default(),
            rate: ctx.rate,
            stats: QdiscStats::default(),
            traced: [f64::NAN; 4],
            ns3_min_bytes: (c.backlog_rule == BacklogRule::Ns3).then_some(ctx.mtu as u64),
        }
    }

    pub fn params(&self) -> &CodelParams {
        &self.params
    }
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
    pub fn codel_stats(&self) -> &CodelStats {
        &self.cstats
    }

    fn frame_backlog(&self) -> u64 {
        self.bytes + self.q.len() as u64 * self.overhead as u64
    }

    /// Tail-drop CoDel's sojourn estimate at `now` (None: queue empty).
    fn estimate_sojourn(&self, now: SimTime) -> Option<SimDuration> {
        let head = self.q.front()?;
        Some(match self.estimate {
            SojournEstimate::Head => now.saturating_since(head.enqueued_at),
            SojournEstimate::Backlog => self.rate.bytes_time(self.frame_backlog()),
        })
    }

    /// Emits trace samples for the variables that changed since the last sample.
    fn trace(&mut self, now: SimTime, out: &mut QdiscOut) {
        let v = self.vars.trace_values();
        for (i, (&new, old)) in v.iter().zip(self.traced.iter_mut()).enumerate() {
            if new != *old {
                *old = new;
                out.trace(now, i as u8, new);
            }
        }
    }
}

impl Qdisc for Codel {
    fn enqueue(&mut self, mut pkt: Packet, now: SimTime, out: &mut QdiscOut) -> Verdict {
        let mut verdict = Verdict::Enqueued;
        if self.drop_at == DropAt::Enqueue {
            let est = self.estimate_sojourn(now);
            let backlog = self.frame_backlog();
            let d = self.vars.enqueue_decision(
                &self.params,
                &mut self.cstats,
                est,
                pkt.size,
                backlog,
                pkt.ecn.is_capable(),
                now,
            );
            if out.tracing {
                self.trace(now, out);
            }
            match d {
                EnqueueDecision::Accept => {}
                EnqueueDecision::Drop => {
                    return out.drop_arrival(&mut self.stats, pkt, DropReason::Codel)
                }
                EnqueueDecision::Mark => {
                    pkt.ecn = Ecn::Ce;
                    verdict = Verdict::Marked(MarkReason::Codel);
                }
                EnqueueDecision::CeMark => {
                    pkt.ecn = Ecn::Ce;
                    verdict = Verdict::Marked(MarkReason::CeThreshold);
                }
            }
        }
        let full = match self.limit {
            // Linux sch_codel: enqueue if qlen < limit.
            Limit::Packets(n) => self.q.len() >= n as usize,
            Limit::Bytes(b) => self.bytes + pkt.size as u64 > b,
        };
        if full {
            return out.drop_arrival(&mut self.stats, pkt, DropReason::Overlimit);
        }
        self.stats.on_enqueue(&pkt);
        if let Verdict::Marked(r) = verdict {
            self.stats.on_mark(r);
        }
        self.bytes += pkt.size as u64;
        self.q.push_back(pkt);
        verdict
    }

    fn dequeue(&mut self, now: SimTime, out: &mut QdiscOut) -> Option<Packet> {
        let p = match self.drop_at {
            DropAt::Dequeue => {
                let mut fifo = Fifo {
                    q: &mut self.q,
                    bytes: &mut self.bytes,
                    overhead: self.overhead,
                    ns3_min_bytes: self.ns3_min_bytes,
                };
                let p = self.vars.dequeue(
                    &self.params,
                    &mut self.cstats,
                    &mut fifo,
                    now,
                    &mut self.stats,
                    out,
                );
                if out.tracing {
                    self.trace(now, out);
                }
                p
            }
            DropAt::Enqueue => {
                let p = self.q.pop_front();
                if let Some(p) = &p {
                    self.bytes -= p.size as u64;
                }
                p
            }
        };
        if let Some(p) = &p {
            self.stats.on_dequeue(p);
        }
        p
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
        CODEL_TRACE_VARS
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{ctx, pkt};
    use super::super::QdiscConfig;
    use super::*;

    const MS: u64 = 1_000_000;

    fn parse(toml_text: &str) -> QdiscConfig {
        #[derive(Deserialize)]
        struct T {
            q: QdiscConfig,
        }
        toml::from_str::<T>(toml_text).unwrap().q
    }

    /// The "one MTU left" rule with one full packet standing behind the head: two 1500-byte
    /// packets queued at 0; every 10 ms the head leaves and a new packet arrives, so each
    /// dequeued packet waited 10–20 ms and exactly one packet stays queued. Linux (frame
    /// bytes left ≤ MTU + overhead) never drops; ns-3 (IP bytes left < MinBytes = MTU)
    /// opens the window at 10 ms and drops at the first dequeue after 110 ms (120 ms, uid
    /// 11); the packet behind it then leaves the queue empty, which ends the episode.
    #[test]
    fn backlog_rule_one_full_packet_left() {
        let run = |rule: BacklogRule| {
            let c = CodelConfig {
                backlog_rule: rule,
                ..Default::default()
            };
            let mut q = Codel::new(&c, ctx(1_000_000));
            let mut out = QdiscOut::new(false);
            q.enqueue(pkt(1, 1500, 0, SimTime::ZERO), SimTime::ZERO, &mut out);
            q.enqueue(pkt(1, 1500, 1, SimTime::ZERO), SimTime::ZERO, &mut out);
            let mut sent = vec![];
            for k in 1..=40u64 {
                let now = SimTime::from_nanos(k * 10 * MS);
                if let Some(p) = q.dequeue(now, &mut out) {
                    sent.push(p.uid);
                }
                q.enqueue(pkt(1, 1500, k + 1, now), now, &mut out);
            }
            let dropped: Vec<u64> = out.drops.iter().map(|d| d.0.uid).collect();
            q.stats().check(q.q.len() as u64, q.bytes).unwrap();
            (sent, dropped)
        };
        let (ls, ld) = run(BacklogRule::Linux);
        let (ns, nd) = run(BacklogRule::Ns3);
        assert!(ld.is_empty(), "{ld:?}");
        assert_eq!(ls, (0..40).collect::<Vec<u64>>());
        assert_eq!(nd, vec![11]);
        // at 120 ms uid 11 is dropped and uid 12 sent in its place; then one per step
        assert_eq!(ns[..12], (0..11).chain([12]).collect::<Vec<u64>>()[..]);
        assert_eq!(ns.len(), 40);
        // with drop_at = "enqueue" the rule is refused
        let e = parse("q = { kind = \"codel\", backlog_rule = \"ns3\", drop_at = \"enqueue\" }")
            .validate(&ctx(1_000_000))
            .unwrap_err();
        assert_eq!(e.field, "backlog_rule");
    }

    #[test]
    fn config_defaults_aliases_and_errors() {
        let c = ctx(10_000_000);
        let QdiscConfig::Codel(cfg) = parse("q = { kind = \"codel\" }") else {
            panic!()
        };
        let q = Codel::new(&cfg, c.clone());
        assert_eq!(q.params().target, SimDuration::from_millis(5));
        assert_eq!(q.params().interval, SimDuration::from_millis(100));
        assert_eq!(q.params().variant, CodelVariant::Linux);
        assert_eq!(q.params().mtu, 1514);
        assert!(!q.params().ecn);
        let qc = parse("q = { kind = \"codel_act\", target = \"20ms\" }");
        let QdiscConfig::CodelAct(act) = &qc else {
            panic!()
        };
        let q = Codel::new(act, c.clone());
        assert_eq!(q.params().variant, CodelVariant::Act);
        assert_eq!(q.params().target, SimDuration::from_millis(20));
        assert!(qc.validate(&c).is_ok());
        let e = parse("q = { kind = \"codel_act\", variant = \"linux\" }")
            .validate(&c)
            .unwrap_err();
        assert_eq!(e.field, "variant");
        let e = parse("q = { kind = \"codel\", fixed_count = 0 }")
            .validate(&c)
            .unwrap_err();
        assert_eq!(e.field, "fixed_count");
        let e = parse("q = { kind = \"codel\", sojourn_estimate = \"backlog\" }")
            .validate(&c)
            .unwrap_err();
        assert_eq!(e.field, "sojourn_estimate");
        let e = parse("q = { kind = \"codel\", target = \"0ms\" }")
            .validate(&c)
            .unwrap_err();
        assert_eq!(e.field, "target");
        let e = parse("q = { kind = \"codel\", limit = \"1KB\" }")
            .validate(&c)
            .unwrap_err();
        assert_eq!(e.field, "limit");
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            q: QdiscConfig,
        }
        let err = toml::from_str::<T>("q = { kind = \"codel\", variant = \"cake\" }")
            .unwrap_err()
            .to_string();
        assert!(err.contains("draft00"), "{err}");
        assert!(toml::from_str::<T>("q = { kind = \"codel_act\", tagret = \"5ms\" }").is_err());
        for p in CodelConfig::PARAMS {
            assert!(!p.doc.is_empty());
        }
    }

    /// Drives a codel qdisc (limit raised to 10000 packets so only CoDel drops) with one
    /// 1000-byte packet per ms and one dequeue every 2 ms (a 2:1 unresponsive overload)
    /// for `ms` milliseconds; returns the qdisc and the drops as (ms, reason).
    fn overload(cfg: CodelConfig, ms: u64) -> (Codel, Vec<(u64, DropReason)>) {
        let mut c = ctx(4_000_000); // 1000 B in 2 ms
        c.overhead = 0;
        let cfg = CodelConfig {
            limit: Limit::Packets(10_000),
            ..cfg
        };
        let mut q = Codel::new(&cfg, c);
        let mut out = QdiscOut::new(true);
        let mut drops = vec![];
        let mut uid = 0;
        for t in 0..ms {
            let now = SimTime::from_nanos(t * MS);
            q.enqueue(pkt(1, 1000, uid, now), now, &mut out);
            uid += 1;
            if t % 2 == 0 {
                q.dequeue(now, &mut out);
            }
            for (p, r) in out.drops.drain(..) {
                assert!(p.uid < uid);
                drops.push((t, r));
            }
            q.stats().check(q.len() as u64, q.backlog_bytes()).unwrap();
        }
        (q, drops)
    }

    /// Drop instants (ms) of an exact-sqrt CoDel that enters drop state at `first` ms and
    /// can only act at multiples of `grid` ms, up to `end` ms.
    fn exact_schedule(first: u64, grid: u64, end: u64) -> Vec<u64> {
        let mut v = vec![first];
        let mut next = first * MS;
        for c in 1u64.. {
            next += super::super::codel_core::interval_over_sqrt(
                SimDuration::from_millis(100),
                c as u32,
            )
            .as_nanos();
            let at = next.div_ceil(grid * MS) * grid;
            if at >= end {
                return v;
            }
            v.push(at);
        }
        unreachable!()
    }

    #[test]
    fn head_drop_codel_follows_the_control_law_in_an_overload() {
        // The k-th dequeue (at 2k ms) sends packet k, sojourn k ms: above the 5 ms target
        // from t = 10 ms, so RFC 8289 CoDel may drop from t = 110 ms on, then every
        // 100 ms/sqrt(count) (rounded up to the 2 ms dequeue grid). An unresponsive 2:1
        // overload thus sees only about (t / 200 ms)² drops t after entry, far fewer than
        // its excess of one packet per 2 ms.
        let cfg = CodelConfig {
            variant: Some(CodelVariant::Rfc8289),
            ..Default::default()
        };
        let (q, drops) = overload(cfg, 3000);
        assert!(drops.iter().all(|d| d.1 == DropReason::Codel));
        let at: Vec<u64> = drops.iter().map(|d| d.0).collect();
        assert_eq!(at, exact_schedule(110, 2, 3000));
        assert!(q.vars().dropping);
        assert_eq!(q.vars().count as usize, drops.len());
        assert_eq!(q.codel_stats().drops, q.stats().total_drops());
        // Linux (default) enters strictly after 110 ms, at the 112 ms dequeue.
        let (_, drops) = overload(CodelConfig::default(), 500);
        assert_eq!(drops[0].0, 112);
    }

    /// CoDel on GSO super-packets, as Linux (`codel_dequeue` in
    /// `include/net/codel_impl.h` times, counts and drops whole skbs: `vars->count++`
    /// per dropped skb, the sojourn is the skb's). The overload of
    /// `head_drop_codel_follows_the_control_law_in_an_overload`, with every arrival a
    /// 2-segment skb (2 × 1500 bytes, served in 2 ms): the first drop comes at the same
    /// 112 ms dequeue and removes one skb, i.e. both its segments at once (3000 bytes);
    /// `count` is then 1, not 2, and the later drops keep the one-skb schedule.
    #[test]
    fn codel_drops_a_two_segment_skb_whole_and_counts_it_once() {
        let mut c = ctx(12_000_000); // 3000 B in 2 ms
        c.overhead = 0;
        let cfg = CodelConfig {
            limit: Limit::Packets(10_000),
            ..Default::default()
        };
        let mut q = Codel::new(&cfg, c);
        let mut out = QdiscOut::new(true);
        let mut drops = vec![];
        for t in 0..3000u64 {
            let now = SimTime::from_nanos(t * MS);
            let mut p = pkt(1, 3000, t, now);
            p.gso_segs = 2;
            p.tcp.len = 2 * 1448;
            q.enqueue(p, now, &mut out);
            if t % 2 == 0 {
                q.dequeue(now, &mut out);
            }
            for (p, r) in out.drops.drain(..) {
                assert_eq!(r, DropReason::Codel);
                drops.push((t, p));
            }
            if drops.len() == 1 && t == drops[0].0 {
                assert_eq!(q.vars().count, 1, "one skb dropped: count 1");
            }
        }
        assert_eq!(drops[0].0, 112);
        assert_eq!((drops[0].1.segs(), drops[0].1.size), (2, 3000));
        // the same schedule as for single-segment packets, drop for drop
        let (_, one) = overload(CodelConfig::default(), 3000);
        let at: Vec<u64> = drops.iter().map(|d| d.0).collect();
        assert_eq!(at, one.iter().map(|d| d.0).collect::<Vec<_>>());
        assert_eq!(q.codel_stats().drops as usize, drops.len());
        assert_eq!(q.stats().total_drops() as usize, drops.len());
    }

    #[test]
    fn tail_drop_codel_drops_arrivals() {
        // Head estimate: before the arrival at t ms the head is packet t/2, which has
        // waited t/2 ms: ≥ 20 ms from t = 40, so the first (RFC 8289, ≥) drop is at 140 ms.
        let cfg = CodelConfig {
            drop_at: DropAt::Enqueue,
            variant: Some(CodelVariant::Rfc8289),
            target: DurationSpec(SimDuration::from_millis(20)),
            ..Default::default()
        };
        let (q, drops) = overload(cfg.clone(), 3000);
        // All drops are arrivals: nothing was dropped after being queued.
        assert_eq!(q.stats().dropped_after_enqueue, 0);
        assert_eq!(q.stats().dropped_on_arrival as usize, drops.len());
        assert!(drops.iter().all(|d| d.1 == DropReason::Codel));
        // Arrivals come every ms, so drops land on the 1 ms grid.
        let at: Vec<u64> = drops.iter().map(|d| d.0).collect();
        assert_eq!(at, exact_schedule(140, 1, 3000));
        // Backlog estimate: t/2 queued packets × 2 ms = t ms, the arriving packet's own
        // future sojourn: ≥ 20 ms from t = 20, first drop at 120 ms.
        let cfg = CodelConfig {
            sojourn_estimate: Some(SojournEstimate::Backlog),
            ..cfg
        };
        let (_, drops) = overload(cfg, 3000);
        let at: Vec<u64> = drops.iter().map(|d| d.0).collect();
        assert_eq!(at, exact_schedule(120, 1, 3000));
    }

    #[test]
    fn limit_still_applies_and_traces_change_only() {
        let cfg = CodelConfig {
            limit: Limit::Packets(20),
            ..Default::default()
        };
        let mut c = ctx(4_000_000);
        c.overhead = 0;
        let mut q = Codel::new(&cfg, c);
        let mut out = QdiscOut::new(true);
        let t = SimTime::ZERO;
        for i in 0..25 {
            q.enqueue(pkt(1, 1000, i, t), t, &mut out);
        }
        assert_eq!(q.len(), 20);
        assert_eq!(q.stats().drops[DropReason::Overlimit.index()], 5);
        let now = SimTime::from_nanos(MS);
        q.dequeue(now, &mut out);
        q.dequeue(now, &mut out);
        // First dequeue traces all four variables, the second only what changed (nothing:
        // same sojourn, count, state).
        assert_eq!(out.trace.len(), 4);
        assert_eq!(q.trace_vars()[out.trace[3].var as usize], "sojourn");
        assert!((out.trace[3].value - 0.001).abs() < 1e-12);
    }
}
