//! Run results as plain columnar data: per-flow and per-queue summary rows, and two long
//! tables (time-series bins and time-stamped samples). The Python binding turns these
//! into pandas DataFrames without building per-row objects.

use crate::metrics::{LongTable, KIND_FLOW};
use std::fmt;

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
    /// Lower-layer summary metrics (shaper, regulators, WiFi TXOPs/retries ...) and the
    /// qdisc's own (DualPI2: `l_sojourn_p99`, `c_sojourn_mean`, ...).
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

/// How a result column reaches Python: a list of `int`, `float` or `str`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ColType {
    Int,
    Float,
    Str,
}

impl ColType {
    /// The Python type of one value.
    pub fn python(self) -> &'static str {
        match self {
            ColType::Int => "int",
            ColType::Float => "float",
            ColType::Str => "str",
        }
    }
}

/// One value of a result column.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell<'a> {
    Int(u64),
    Float(f64),
    Str(&'a str),
    Text(String),
}

/// One column of the `flows` or `queues` table: its name, type and meaning, and how to
/// read it from a row. The tables below are the single declaration of the result schema:
/// the Python binding builds its columns from them, and `aqmlab._core.result_schema()`
/// hands them to Python, whose stub (`_core.pyi`) is checked against them in the tests.
pub struct Column<R: 'static> {
    pub name: &'static str,
    pub ty: ColType,
    pub doc: &'static str,
    pub get: fn(&R) -> Cell<'_>,
}

impl<R> fmt::Debug for Column<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.ty.python())
    }
}

macro_rules! cell {
    (Int, $e:expr) => {
        Cell::Int($e as u64)
    };
    (Float, $e:expr) => {
        Cell::Float($e)
    };
    (Str, $e:expr) => {
        Cell::Str(&*$e)
    };
}

macro_rules! columns {
    ($row:ty; $( $name:ident : $ty:ident => $doc:literal ),* $(,)?) => {
        &[ $( Column {
            name: stringify!($name),
            ty: ColType::$ty,
            doc: $doc,
            get: {
                fn get(r: &$row) -> Cell<'_> {
                    cell!($ty, r.$name)
                }
                get
            },
        }, )* ]
    };
}

/// The fixed columns of the `flows` table, in order. Each flow kind's own summary
/// metrics (`FlowRow::extra`, e.g. `rtt_mean`, `stalls`) follow as float columns, NaN
/// where a row lacks one.
pub const FLOW_COLUMNS: &[Column<FlowRow>] = columns![FlowRow;
    id: Int => "flow index (entity of the long tables)",
    name: Str => "flow instance name",
    kind: Str => "workload kind",
    group: Int => "index of the [[flow]] table",
    src: Str => "source host",
    dst: Str => "destination host",
    start: Float => "start time (s)",
    stop: Float => "stop time (s)",
    sent_pkts: Int => "packets sent",
    sent_bytes: Int => "bytes sent",
    delivered_pkts: Int => "packets delivered to the application",
    delivered_bytes: Int => "payload bytes delivered",
    lost_pkts: Int => "packets lost",
    ce_pkts: Int => "packets that arrived CE-marked",
    goodput_bps: Float => "delivered payload bit/s after warm-up",
    base_rtt: Float => "round-trip propagation delay of the path (s)",
];

/// The fixed columns of the `queues` table, in order; then one int column per drop
/// reason (`drops_REASON`, [`crate::qdisc::DropReason::ALL`]) and per mark reason
/// (`marks_REASON`), then [`QUEUE_TAIL_COLUMNS`], then the lower layer's summary metrics
/// (float columns, NaN where a queue's lower layer has no such metric).
pub const QUEUE_COLUMNS: &[Column<QueueRow>] = columns![QueueRow;
    id: Int => "link index (entity of the long tables)",
    name: Str => "link name",
    from: Str => "node the link leaves",
    to: Str => "node the link reaches",
    qdisc: Str => "qdisc kind",
    rate_bps: Int => "link rate (bit/s)",
    delay: Float => "propagation delay (s)",
    arrivals: Int => "packets offered to the qdisc (whole run, warm-up included, like the other qdisc counters)",
    enqueued: Int => "packets accepted (whole run)",
    dequeued: Int => "packets dequeued (whole run)",
    dropped: Int => "packets dropped by the qdisc, the wire and the lower layer (whole run, warm-up included: divide by arrivals for a rate)",
    marked: Int => "packets ECN-marked (whole run)",
    tx_pkts: Int => "packets transmitted after warm-up",
    tx_bytes: Int => "IP bytes transmitted after warm-up",
    utilization: Float => "busy fraction after warm-up (at most 1)",
    sojourn_n: Int => "sojourn samples (packets dequeued after warm-up)",
    sojourn_mean: Float => "mean sojourn after warm-up (s)",
    sojourn_p50: Float => "median sojourn (s)",
    sojourn_p90: Float => "90th percentile sojourn (s)",
    sojourn_p99: Float => "99th percentile sojourn (s)",
    sojourn_max: Float => "largest sojourn (s; NaN without samples)",
];

/// The `queues` columns after the drop and mark reasons.
pub const QUEUE_TAIL_COLUMNS: &[Column<QueueRow>] = &[
    Column {
        name: "trace_vars",
        ty: ColType::Str,
        doc: "traced qdisc state variables, comma-separated",
        get: |r| Cell::Text(r.trace_vars.join(",")),
    },
    Column {
        name: "lower",
        ty: ColType::Str,
        doc: "lower layer: wire, htb, tbf, docsis or wifi",
        get: |r| Cell::Str(r.lower),
    },
];

/// The top-level keys of a run's result as the binding returns it, with their Python
/// types (`_core.pyi` `RawResult` must declare exactly these).
pub const RESULT_KEYS: &[(&str, &str)] = &[
    ("version", "str"),
    ("seed", "int"),
    ("duration", "float"),
    ("warmup", "float"),
    ("bin", "float"),
    ("flows", "dict[str, list[Any]]"),
    ("queues", "dict[str, list[Any]]"),
    ("sojourn_hist", "SojournHist"),
    ("series", "LongTable"),
    ("samples", "LongTable"),
    ("metric_names", "list[str]"),
    ("events", "int"),
    ("packets_created", "int"),
    ("packets_delivered", "int"),
    ("packets_dropped", "int"),
    ("wall_seconds", "float"),
    ("warnings", "list[str]"),
];

impl QueueRow {
    /// A lower-layer summary metric by name.
    pub fn lower_metric(&self, key: &str) -> Option<f64> {
        self.lower_extra
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }
}

/// FNV-1a 64: a hash that is stable across Rust versions and platforms (unlike
/// `DefaultHasher`), for result fingerprints.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

impl RunResult {
    /// A copy with the two figures that are not results zeroed: the wall-clock time, and
    /// the event count (an implementation figure that event-saving optimisations change
    /// on purpose). Two builds that computed the same results give equal copies.
    pub fn without_timing(&self) -> RunResult {
        RunResult {
            wall_seconds: 0.0,
            events: 0,
            ..self.clone()
        }
    }

    /// A fingerprint of everything the run computed: the FNV-1a hash of the `Debug` text
    /// (which prints every `f64` exactly) of [`RunResult::without_timing`]. Equal digests
    /// mean bit-identical results (the golden tests, `aqmlab-bench --digest`).
    pub fn digest(&self) -> u64 {
        fnv1a(format!("{:?}", self.without_timing()).as_bytes())
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every declared column reads a value of its declared type.
    #[test]
    fn columns_read_their_declared_type() {
        let f = FlowRow {
            id: 3,
            name: "bulk0".into(),
            kind: "bulk",
            group: 0,
            src: "a".into(),
            dst: "b".into(),
            start: 0.5,
            stop: 2.0,
            sent_pkts: 1,
            sent_bytes: 2,
            delivered_pkts: 3,
            delivered_bytes: 4,
            lost_pkts: 5,
            ce_pkts: 6,
            goodput_bps: 7.0,
            base_rtt: 0.01,
            extra: vec![],
        };
        fn same(ty: ColType, c: &Cell) -> bool {
            matches!(
                (ty, c),
                (ColType::Int, Cell::Int(_))
                    | (ColType::Float, Cell::Float(_))
                    | (ColType::Str, Cell::Str(_) | Cell::Text(_))
            )
        }
        for c in FLOW_COLUMNS {
            assert!(same(c.ty, &(c.get)(&f)), "{}", c.name);
        }
        assert_eq!((FLOW_COLUMNS[1].get)(&f), Cell::Str("bulk0"));
        assert_eq!((FLOW_COLUMNS[15].get)(&f), Cell::Float(0.01));
        let q = QueueRow {
            id: 1,
            name: "l".into(),
            from: "a".into(),
            to: "b".into(),
            qdisc: "fifo",
            rate_bps: 10,
            delay: 0.1,
            arrivals: 0,
            enqueued: 0,
            dequeued: 0,
            dropped: 0,
            marked: 0,
            drops_by_reason: vec![],
            marks_by_reason: vec![],
            tx_pkts: 0,
            tx_bytes: 0,
            utilization: 0.5,
            sojourn_n: 0,
            sojourn_mean: 0.0,
            sojourn_p50: 0.0,
            sojourn_p90: 0.0,
            sojourn_p99: 0.0,
            sojourn_max: f64::NAN,
            hist_low: vec![],
            hist_high: vec![],
            hist_count: vec![],
            trace_vars: &["p", "qdelay"],
            lower: "wire",
            lower_extra: vec![],
        };
        for c in QUEUE_COLUMNS.iter().chain(QUEUE_TAIL_COLUMNS) {
            assert!(same(c.ty, &(c.get)(&q)), "{}", c.name);
        }
        assert_eq!(
            (QUEUE_TAIL_COLUMNS[0].get)(&q),
            Cell::Text("p,qdelay".into())
        );
        let mut names: Vec<&str> = FLOW_COLUMNS.iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(
            names.len(),
            FLOW_COLUMNS.len(),
            "flow column names are unique"
        );
    }
}
