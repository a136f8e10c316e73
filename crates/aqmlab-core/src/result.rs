//! Run results as plain columnar data: per-flow and per-queue summary rows, and two long
//! tables (time-series bins and time-stamped samples). The Python binding turns these
//! into pandas DataFrames without building per-row objects.

use crate::metrics::{LongTable, KIND_FLOW};

/// One flow's summary.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowRow {
    pub id: u32,
    pub name: String,
    pub kind: &'static str,
    pub group: u32,
    pub src: String,
    pub dst: String,
    pub start: f64,
    pub stop: f64,
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
    pub lost_pkts: u64,
    pub ce_pkts: u64,
    /// Delivered payload bits per second over [max(warmup, start), min(end, stop)].
    pub goodput_bps: f64,
    /// Round-trip propagation delay of the flow's path (seconds), without queueing or
    /// serialisation: the base the studies subtract to get induced latency.
    pub base_rtt: f64,
    /// Kind-specific summary metrics.
    pub extra: Vec<(&'static str, f64)>,
}

/// One link's (qdisc's) summary. Times in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueRow {
    pub id: u32,
    pub name: String,
    pub from: String,
    pub to: String,
    pub qdisc: &'static str,
    pub rate_bps: u64,
    pub delay: f64,
    pub arrivals: u64,
    pub enqueued: u64,
    pub dequeued: u64,
    pub dropped: u64,
    pub marked: u64,
    pub drops_by_reason: Vec<(&'static str, u64)>,
    pub marks_by_reason: Vec<(&'static str, u64)>,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub utilization: f64,
    pub sojourn_n: u64,
    pub sojourn_mean: f64,
    pub sojourn_p50: f64,
    pub sojourn_p90: f64,
    pub sojourn_p99: f64,
    pub sojourn_max: f64,
    /// Histogram of sojourn (seconds): bucket low edges, high edges, counts.
    pub hist_low: Vec<f64>,
    pub hist_high: Vec<f64>,
    pub hist_count: Vec<u64>,
    pub trace_vars: &'static [&'static str],
    /// The link's lower layer: `wire`, `htb`, `tbf`, `docsis` or `wifi`.
    pub lower: &'static str,
    /// Lower-layer summary metrics (shaper, regulators, WiFi TXOPs/retries ...).
    pub lower_extra: Vec<(&'static str, f64)>,
}

/// Everything a run produced.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    pub seed: u64,
    pub duration: f64,
    pub warmup: f64,
    pub bin: f64,
    pub flows: Vec<FlowRow>,
    pub queues: Vec<QueueRow>,
    /// Per-bin series: flow `goodput_bps`; queue `tx_bps`, `sojourn_mean`, `drops`, `backlog_max`.
    pub series: LongTable,
    /// Time-stamped samples: flow probe `rtt`/`owd_*` etc.; queue state traces.
    pub samples: LongTable,
    pub metric_names: Vec<String>,
    pub events: u64,
    pub packets_created: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    pub wall_seconds: f64,
    /// Validation warnings of the scenario (`field: message`).
    pub warnings: Vec<String>,
}

impl QueueRow {
    /// A lower-layer summary metric by name.
    pub fn lower_metric(&self, key: &str) -> Option<f64> {
        self.lower_extra
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }
}

impl RunResult {
    pub fn flow(&self, name: &str) -> Option<&FlowRow> {
        self.flows.iter().find(|f| f.name == name)
    }
    pub fn queue(&self, name: &str) -> Option<&QueueRow> {
        self.queues.iter().find(|q| q.name == name)
    }
    /// Samples of one flow's metric as `(t, value)`.
    pub fn flow_samples(&self, flow: u32, metric: &str) -> Vec<(f64, f64)> {
        let Some(m) = self.metric_names.iter().position(|n| n == metric) else {
            return vec![];
        };
        (0..self.samples.len())
            .filter(|&i| {
                self.samples.kind[i] == KIND_FLOW
                    && self.samples.entity[i] == flow
                    && self.samples.metric[i] as usize == m
            })
            .map(|i| (self.samples.t[i], self.samples.value[i]))
            .collect()
    }
    /// Per-bin series of one entity as `(t, value)`.
    pub fn series_of(&self, kind: u8, entity: u32, metric: &str) -> Vec<(f64, f64)> {
        let Some(m) = self.metric_names.iter().position(|n| n == metric) else {
            return vec![];
        };
        (0..self.series.len())
            .filter(|&i| {
                self.series.kind[i] == kind
                    && self.series.entity[i] == entity
                    && self.series.metric[i] as usize == m
            })
            .map(|i| (self.series.t[i], self.series.value[i]))
            .collect()
    }
    pub fn extra(&self, flow: &str, key: &str) -> Option<f64> {
        self.flow(flow)?
            .extra
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }
}
