//! Collects a finished run into the plain-data [`RunResult`] (flows, queues, series,
//! samples).

use super::{FlowSlot, Simulator};
use crate::app::Application;
use crate::link::Link;
use crate::metrics::{LinkField, LongTable, MetricNames, KIND_FLOW, KIND_QUEUE};
use crate::qdisc::{DropReason, MarkReason, Qdisc};
use crate::result::{FlowRow, QueueRow, RunResult};
use crate::time::SimTime;

pub(crate) fn collect(sim: &Simulator) -> RunResult {
    let mut t = Tables {
        names: MetricNames::default(),
        series: LongTable::default(),
        samples: LongTable::default(),
        end: sim.end,
        bin: sim.plan.bin.as_secs_f64(),
    };
    let mut flows = Vec::with_capacity(sim.flows.len());
    for (i, f) in sim.flows.iter().enumerate() {
        flows.push(flow_row(sim, i, f));
        t.flow_series(i as u32, f);
    }
    let span = sim.measured_span().as_secs_f64();
    let mut queues = Vec::with_capacity(sim.net.links.len());
    for l in &sim.net.links {
        queues.push(queue_row(sim, l, span));
        t.queue_series(l);
        t.queue_samples(l);
    }
    RunResult {
        seed: sim.seed,
        duration: sim.plan.duration.as_secs_f64(),
        warmup: sim.plan.warmup.as_secs_f64(),
        bin: t.bin,
        flows,
        queues,
        series: t.series,
        samples: t.samples,
        metric_names: t.names.0,
        events: sim.events_processed,
        packets_created: sim.net.created_pkts(),
        packets_delivered: sim.net.delivered_pkts,
        packets_dropped: sim.net.dropped_pkts,
        wall_seconds: sim.wall_time().as_secs_f64(),
        warnings: sim
            .plan
            .warnings
            .iter()
            .map(|w| format!("{}: {}", w.field, w.message))
            .collect(),
    }
}

/// The long tables being filled, with the metric names in order of first use (flows
/// first, then queues; a metric's id is its position, so the order is part of the
/// result).
struct Tables {
    names: MetricNames,
    series: LongTable,
    samples: LongTable,
    end: SimTime,
    /// Bin width of the series, in seconds.
    bin: f64,
}

impl Tables {
    /// Flow `i`'s goodput series and its own samples.
    fn flow_series(&mut self, i: u32, f: &FlowSlot) {
        let bin = self.bin;
        let mut bins = f.stats.goodput_bins.clone();
        bins.pad_to(self.end);
        let m = self.names.id("goodput_bps");
        for (b, v) in bins.values.iter().enumerate() {
            self.series
                .push(KIND_FLOW, i, m, b as f64 * bin, v * 8.0 / bin);
        }
        for s in &f.stats.samples {
            let m = self.names.id(s.metric);
            self.samples
                .push(KIND_FLOW, i, m, s.t.as_secs_f64(), s.value);
        }
    }

    /// A link's four per-bin series (rate, drops, largest backlog, mean sojourn).
    fn queue_series(&mut self, l: &Link) {
        let (bin, end, q) = (self.bin, self.end, l.id);
        let mut push = |name: &str, values: Vec<f64>| {
            let m = self.names.id(name);
            for (i, v) in values.into_iter().enumerate() {
                self.series.push(KIND_QUEUE, q, m, i as f64 * bin, v);
            }
        };
        let ls = &l.stats.series;
        push(
            "tx_bps",
            ls.dense(LinkField::TxBytes, end, 0.0, |b| {
                b.tx_bytes as f64 * (8.0 / bin)
            }),
        );
        push(
            "drops",
            ls.dense(LinkField::Drops, end, 0.0, |b| b.drops as f64),
        );
        push(
            "backlog_max",
            ls.dense(LinkField::BacklogMax, end, 0.0, |b| b.backlog_max as f64),
        );
        // mean sojourn per bin (NaN where nothing left the queue)
        push(
            "sojourn_mean",
            ls.dense(LinkField::Sojourn, end, f64::NAN, |b| {
                if b.sojourn_n > 0 {
                    b.sojourn_sum / b.sojourn_n as f64 * 1e-9
                } else {
                    f64::NAN
                }
            }),
        );
    }

    /// A link's packet log (sojourn, drop, qlen) and its qdisc's state trace.
    fn queue_samples(&mut self, l: &Link) {
        let q = l.id;
        let st = &l.stats;
        if !st.packet_log.is_empty() {
            let ms = self.names.id("sojourn");
            let md = self.names.id("drop");
            let mq = self.names.id("qlen");
            for &(t, what, v) in &st.packet_log {
                let m = match what {
                    crate::link::PKT_DROP => md,
                    crate::link::PKT_QLEN => mq,
                    _ => ms,
                };
                self.samples.push(KIND_QUEUE, q, m, t.as_secs_f64(), v);
            }
        }
        let vars = l.qdisc.trace_vars();
        for tp in &l.out.trace {
            let name = vars.get(tp.var as usize).copied().unwrap_or("state");
            let m = self.names.id(name);
            self.samples
                .push(KIND_QUEUE, q, m, tp.t.as_secs_f64(), tp.value);
        }
    }
}

/// Flow `i`'s row: counters, goodput over its measured time, the workload's columns.
fn flow_row(sim: &Simulator, i: usize, f: &FlowSlot) -> FlowRow {
    let node = |n: u32| sim.node_names[n as usize].clone();
    let from = f.start.max(SimTime::ZERO + sim.plan.warmup);
    let to = f.stop.min(sim.end);
    let span = if to > from {
        (to - from).as_secs_f64()
    } else {
        0.0
    };
    let goodput = if span > 0.0 {
        f.stats.delivered_bytes_warm as f64 * 8.0 / span
    } else {
        0.0
    };
    let mut extra = Vec::new();
    f.app.summary(&f.stats, &mut extra);
    FlowRow {
        id: i as u32,
        name: f.name.clone(),
        kind: f.kind,
        group: f.group,
        src: node(f.src),
        dst: node(f.dst),
        start: f.start.as_secs_f64(),
        stop: f.stop.as_secs_f64(),
        sent_pkts: f.stats.sent_pkts,
        sent_bytes: f.stats.sent_bytes,
        delivered_pkts: f.stats.delivered_pkts,
        delivered_bytes: f.stats.delivered_bytes,
        lost_pkts: f.stats.lost_pkts,
        ce_pkts: f.stats.ce_pkts,
        goodput_bps: goodput,
        base_rtt: sim.plan.flows[i].base_rtt.as_secs_f64(),
        extra,
    }
}

/// A link's row: qdisc counters and reasons, transmissions, utilisation over the
/// measured `span` (seconds), the sojourn statistics and histogram.
fn queue_row(sim: &Simulator, l: &Link, span: f64) -> QueueRow {
    let node = |n: u32| sim.node_names[n as usize].clone();
    let st = l.qdisc.stats();
    let h = &l.stats.sojourn;
    let s = |v: f64| v * 1e-9;
    QueueRow {
        id: l.id,
        name: l.p.name.clone(),
        from: node(l.p.from),
        to: node(l.p.to),
        qdisc: qdisc_kind(sim, l.id as usize),
        rate_bps: l.p.rate.bps(),
        delay: l.p.delay.as_secs_f64(),
        arrivals: st.arrivals,
        enqueued: st.enqueued,
        dequeued: st.dequeued,
        dropped: st.total_drops() + l.stats.wire_drops + l.stats.lower_drops,
        marked: st.total_marks(),
        drops_by_reason: DropReason::ALL
            .iter()
            .map(|r| {
                let n = match r {
                    DropReason::Wire => l.stats.wire_drops,
                    DropReason::LowerLayer => l.stats.lower_drops,
                    _ => st.drops[r.index()],
                };
                (r.name(), n)
            })
            .filter(|(_, n)| *n > 0)
            .collect(),
        marks_by_reason: MarkReason::ALL
            .iter()
            .map(|r| (r.name(), st.marks[r.index()]))
            .filter(|(_, n)| *n > 0)
            .collect(),
        tx_pkts: l.stats.tx_pkts,
        tx_bytes: l.stats.tx_bytes,
        // A transmission is credited in full when it starts, so one still on the wire at
        // the end of the run can push a saturated link a few ppm above 1: cap it.
        utilization: if span > 0.0 {
            (l.stats.busy.as_secs_f64() / span).min(1.0)
        } else {
            0.0
        },
        sojourn_n: h.count,
        sojourn_mean: s(h.mean()),
        sojourn_p50: s(h.quantile(0.5)),
        sojourn_p90: s(h.quantile(0.9)),
        sojourn_p99: s(h.quantile(0.99)),
        sojourn_max: if h.count > 0 {
            s(h.max as f64)
        } else {
            f64::NAN
        },
        hist_low: h.buckets().map(|(lo, _, _)| s(lo as f64)).collect(),
        hist_high: h.buckets().map(|(_, hi, _)| s(hi as f64)).collect(),
        hist_count: h.buckets().map(|(_, _, c)| c).collect(),
        trace_vars: l.qdisc.trace_vars(),
        lower: l.p.lower.kind_name(),
        lower_extra: {
            let mut v = Vec::new();
            l.lower_summary(&mut v);
            v
        },
    }
}

fn qdisc_kind(sim: &Simulator, link: usize) -> &'static str {
    sim.plan.links[link].1.kind_name()
}
