//! Collects a finished run into the plain-data [`RunResult`] (flows, queues, series,
//! samples).

use super::Simulator;
use crate::app::Application;
use crate::metrics::{LinkField, LongTable, MetricNames, KIND_FLOW, KIND_QUEUE};
use crate::qdisc::{DropReason, MarkReason, Qdisc};
use crate::result::{FlowRow, QueueRow, RunResult};

#[allow(clippy::too_many_lines)] // split in a later step
pub(crate) fn collect(sim: &Simulator) -> RunResult {
    let mut names = MetricNames::default();
    let mut series = LongTable::default();
    let mut samples = LongTable::default();
    let end = sim.end;
    let warm = sim.plan.warmup;
    let bin = sim.plan.bin.as_secs_f64();
    let node = |n: u32| sim.node_names[n as usize].clone();

    let mut flows = Vec::with_capacity(sim.flows.len());
    for (i, f) in sim.flows.iter().enumerate() {
        let from = f.start.max(crate::time::SimTime::ZERO + warm);
        let to = f.stop.min(end);
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
        flows.push(FlowRow {
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
        });
        let mut bins = f.stats.goodput_bins.clone();
        bins.pad_to(end);
        let m = names.id("goodput_bps");
        for (b, v) in bins.values.iter().enumerate() {
            series.push(KIND_FLOW, i as u32, m, b as f64 * bin, v * 8.0 / bin);
        }
        for s in &f.stats.samples {
            let m = names.id(s.metric);
            samples.push(KIND_FLOW, i as u32, m, s.t.as_secs_f64(), s.value);
        }
    }

    let span = sim.measured_span().as_secs_f64();
    let mut queues = Vec::with_capacity(sim.net.links.len());
    for l in &sim.net.links {
        let st = l.qdisc.stats();
        let h = &l.stats.sojourn;
        let s = |v: f64| v * 1e-9;
        queues.push(QueueRow {
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
        });
        let q = l.id;
        let st = &l.stats;
        let mut push = |name: &str, values: Vec<f64>| {
            let m = names.id(name);
            for (i, v) in values.into_iter().enumerate() {
                series.push(KIND_QUEUE, q, m, i as f64 * bin, v);
            }
        };
        let ls = &st.series;
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
        let vars = l.qdisc.trace_vars();
        if !st.packet_log.is_empty() {
            let ms = names.id("sojourn");
            let md = names.id("drop");
            let mq = names.id("qlen");
            for &(t, what, v) in &st.packet_log {
                let m = match what {
                    crate::link::PKT_DROP => md,
                    crate::link::PKT_QLEN => mq,
                    _ => ms,
                };
                samples.push(KIND_QUEUE, q, m, t.as_secs_f64(), v);
            }
        }
        for tp in &l.out.trace {
            let name = vars.get(tp.var as usize).copied().unwrap_or("state");
            let m = names.id(name);
            samples.push(KIND_QUEUE, q, m, tp.t.as_secs_f64(), tp.value);
        }
    }

    RunResult {
        seed: sim.seed,
        duration: sim.plan.duration.as_secs_f64(),
        warmup: warm.as_secs_f64(),
        bin,
        flows,
        queues,
        series,
        samples,
        metric_names: names.0,
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

fn qdisc_kind(sim: &Simulator, link: usize) -> &'static str {
    sim.plan.links[link].1.kind_name()
}
