//! The resource model: what a validated scenario will cost before it runs.
//!
//! `Scenario::validate` estimates, from the plan alone and in time linear in its size
//! (flows × path length + links + nodes):
//!
//! - **events**: every packet a source sends costs about one event per hop it travels
//!   plus one at the source, but for the hops into a link that takes its packets from the
//!   link before it without an arrival event (`scenario::Plan::find_fold_feeders`; in a
//!   dumbbell, the last hop to each host: the benchmarks in `benchmarks/README.md`
//!   measure 3.1–3.4 events per bottleneck packet with ACKs). A source with its own
//!   clock (CBR, ping, udp_rr, voip) sends `1/interval` packets per second; a TCP-based
//!   workload at most what the narrowest link of its data path carries at full-sized
//!   packets, plus an ACK per second segment on the way back. Downloads (web, web_users,
//!   wrt, has) send their data from `to` to `from`, with their requests, handshakes and
//!   lookups as small packets back; those fetching pages or objects at most a page per
//!   its round trips, transfer and think time ([`Units`]). A TCP flow sends at most its
//!   window (receive window, cwnd cap) per round trip, the round trip including the
//!   standing queue of every full drop-tail FIFO on its path in both directions, and where
//!   its ACKs queue in such a FIFO (a download's ACKs behind uploads on a slow uplink) at
//!   most what its ACK stream's share of that link clocks out ([`ack_clock`]). A link
//!   carries at most its rate: flows that together offer it more bytes get their share of
//!   it; a fixed-rate source's packets beyond it cost an event per link crossed before
//!   they are dropped. A TCP connection adds its handshake.
//! - **memory** (peak of the run plus its results, as the Python layer holds them):
//!   fixed per flow, link and node; per TCP flow its sending end's scoreboard rings,
//!   which grow with its window ([`ring_bytes`] of its peak window: twice its share of
//!   its bottleneck's pipe and queue, at least its initial window, at most its window
//!   limit); the routing tables (per router, one entry per node); the time-series bins
//!   (`ceil(duration / bin)` per flow and 4 series per link); the samples (probe RTTs,
//!   one-way delays, TCP traces, qdisc traces, packet traces); the packets that can wait
//!   in queues (each link's qdisc `limit`, or what arrives, or the windows of the TCP
//!   flows crossing it; a DOCSIS downstream's service-flow regulators besides); and the
//!   packets on the links' wires ([`wire_bytes`]). The per-item costs were measured
//!   through the Python extension (its allocator, `hugealloc`) as the maximum RSS of
//!   `aqmlab.run` while growing one dimension, and rounded up;
//!   `benchmarks/estimate_accuracy.py` compares the whole estimate with the peak RSS and
//!   events of measured runs of many shapes.
//!
//! A scenario whose estimate is over its [`Budget`] is refused with a [`ScenarioError`]
//! naming the field that dominates the estimate (e.g. `run.bin`, `run.duration`,
//! `flow[0].count`) and the estimate itself. The default budget is half of the smallest
//! of physical memory, `RLIMIT_AS` and the cgroup memory limit ([`MemoryLimits`]),
//! divided among a sweep's parallel jobs (`AQMLAB_JOBS`: its local worker processes, or
//! the threads of a Dask worker, whose memory limit `AQMLAB_WORKER_MEMORY` is one more
//! bound), and 10¹¹ events (about 6 hours at the benchmarks' 5 M events/s);
//! `run.max_memory` / `run.max_events` raise it per scenario and `--force` (Python:
//! `force=True`) lifts it.
//!
//! Simulated time must also advance: a CBR packet interval `size·8/rate` under
//! [`MIN_INTERVAL_NS`] would be rounded by the 1 ns clock by more than 1 % (and at
//! "1e30Tbit" every packet would leave at the same nanosecond), so it is refused.

use crate::link::LinkParams;
use crate::params::ScenarioError;
use crate::qdisc::QdiscConfig;
use crate::time::{SimDuration, SimTime};

/// Bytes of one flow instance that runs TCP besides its scoreboard rings ([`ring_bytes`]):
/// the two connection ends (one boxed `TcpConn`), the application, statistics, the
/// results row. Measured through the extension: 8.6 KB per flow with the rings at their
/// smallest (2,000 → 8,000 flows whose window is capped at 2 segments).
pub const TCP_FLOW_BYTES: f64 = 8192.0;
/// Bytes per slot of a sending end's scoreboard rings (a segment and its RACK entry).
pub const RING_SLOT_BYTES: f64 = crate::tcp::scoreboard::RING_SLOT_BYTES as f64;
/// Slots of a ring's first allocation (Rust's `VecDeque` reserves 4 on its first push).
pub const RING_MIN_SLOTS: f64 = 4.0;
/// Bytes per packet travelling a link's wire (its arrival time and the packet).
pub const WIRE_PACKET_BYTES: f64 = std::mem::size_of::<(SimTime, crate::packet::Packet)>() as f64;
/// Bytes of one flow instance without TCP (probes, CBR, VoIP). Measured: 1.7 KB.
pub const UDP_FLOW_BYTES: f64 = 2048.0;
/// Bytes of one link (qdisc state, statistics and histograms, results row). Measured
/// through the extension: 10 KB per link of 1,000 → 4,000 dumbbell pairs with one flow
/// each (50.9 KB per pair of 4 links, 2 nodes and a flow); 7.5 KB per idle link.
pub const LINK_BYTES: f64 = 10240.0;
/// Bytes of one node (name, map entries, results). Measured.
pub const NODE_BYTES: f64 = 1024.0;
/// Bytes per routing-table entry (a `u32` link index per router and destination).
pub const ROUTE_ENTRY_BYTES: f64 = 4.0;
/// Bytes per time-series row: the bin in the simulator, the results' long table and its
/// Python DataFrame. Measured: 69 B (10⁶ bins × 25 series → 1.65 GB).
pub const SERIES_ROW_BYTES: f64 = 72.0;
/// Time series kept per link: tx_bps, drops, backlog_max, sojourn_mean.
pub const LINK_SERIES: f64 = 4.0;
/// Bytes per sample (the simulator's record, the long table and its DataFrame).
/// Measured: 76 B (600,000 ping samples → 43.5 MB).
pub const SAMPLE_BYTES: f64 = 80.0;
/// Bytes per packet waiting in a queue (the `Packet` plus queue overhead).
pub const QUEUED_PACKET_BYTES: f64 = std::mem::size_of::<crate::packet::Packet>() as f64 + 32.0;
/// Packet-trace records per packet arriving at a measured queue inside a
/// `run.packet_trace` window (the queue length it finds; its sojourn or drop).
pub const PACKET_TRACE_RECORDS: f64 = 2.0;
/// Smallest CBR packet interval: the 1 ns clock then changes the rate by at most 1 %.
pub const MIN_INTERVAL_NS: f64 = 100.0;
/// Events the packets do not account for (timers: delayed ACKs, RTOs, pacing, probe
/// clocks), as a factor: the 16-flow TCP dumbbell processes 7 events per bottleneck
/// packet where the packets alone account for 4.8.
pub const EVENT_MARGIN: f64 = 1.5;
/// Default events budget: ~6 h at 5 M events/s (`benchmarks/README.md`).
pub const DEFAULT_MAX_EVENTS: f64 = 1e11;
/// Memory assumed when the machine's physical memory cannot be read (non-Linux).
const FALLBACK_PHYSICAL: f64 = 8.0 * 1024.0 * 1024.0 * 1024.0;

/// How much a run may use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Bytes (peak of the run and its results).
    pub max_memory: f64,
    pub max_events: f64,
}

impl Budget {
    /// No limit (`--force`).
    pub const UNLIMITED: Budget = Budget {
        max_memory: f64::INFINITY,
        max_events: f64::INFINITY,
    };
    /// Half the memory this process may use ([`MemoryLimits::read`]: the smallest of
    /// physical memory, `RLIMIT_AS` and the cgroup memory limit), divided among the
    /// parallel jobs of a sweep (the environment variable `AQMLAB_JOBS`, set by the
    /// sweep runner); or the environment variable `AQMLAB_MAX_MEMORY` (a size such as
    /// "4GB", per run); and [`DEFAULT_MAX_EVENTS`].
    pub fn machine_default() -> Budget {
        Budget {
            max_memory: machine_memory().0,
            max_events: DEFAULT_MAX_EVENTS,
        }
    }
}

fn env_memory() -> Option<f64> {
    let v = std::env::var("AQMLAB_MAX_MEMORY").ok()?;
    crate::units::parse_size(v.trim())
        .ok()
        .filter(|&b| b > 0)
        .map(|b| b as f64)
}

/// Parallel jobs sharing the machine (`AQMLAB_JOBS`, a positive integer), else 1.
fn env_jobs() -> u32 {
    std::env::var("AQMLAB_JOBS")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|&j| j >= 1)
        .unwrap_or(1)
}

/// The cgroup v2 and v1 memory limit files, in the order they are read.
pub const CGROUP_MEMORY_FILES: [&str; 2] = [
    "/sys/fs/cgroup/memory.max",
    "/sys/fs/cgroup/memory/memory.limit_in_bytes",
];

/// The bounds on the memory this process can use.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryLimits {
    /// Physical memory (`MemTotal`), bytes.
    pub physical: f64,
    /// The soft `RLIMIT_AS` (address space), bytes, if limited.
    pub rlimit_as: Option<f64>,
    /// The cgroup memory limit, bytes, and the file it was read from, if limited.
    pub cgroup: Option<(f64, String)>,
    /// The memory limit of the Dask worker this process is, bytes (the environment
    /// variable `AQMLAB_WORKER_MEMORY`, set by the sweep runner on its workers).
    pub worker: Option<f64>,
}

impl MemoryLimits {
    /// The limits of this process: `/proc/meminfo`, `/proc/self/limits`, the first
    /// readable file of [`CGROUP_MEMORY_FILES`] and `AQMLAB_WORKER_MEMORY`.
    pub fn read() -> MemoryLimits {
        MemoryLimits {
            worker: std::env::var("AQMLAB_WORKER_MEMORY")
                .ok()
                .and_then(|v| crate::units::parse_size(v.trim()).ok())
                .filter(|&b| b > 0)
                .map(|b| b as f64),
            ..MemoryLimits::read_from(
                std::path::Path::new("/proc/meminfo"),
                std::path::Path::new("/proc/self/limits"),
                &CGROUP_MEMORY_FILES.map(std::path::Path::new),
            )
        }
    }

    /// [`MemoryLimits::read`] from the given files (a missing or unreadable file, "max"
    /// or "unlimited" means no limit from it; physical memory falls back to 8 GiB).
    pub fn read_from(
        meminfo: &std::path::Path,
        limits: &std::path::Path,
        cgroup_files: &[&std::path::Path],
    ) -> MemoryLimits {
        let physical = std::fs::read_to_string(meminfo)
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse::<f64>().ok())
            })
            .map(|kb| kb * 1024.0)
            .unwrap_or(FALLBACK_PHYSICAL);
        // "Max address space         unlimited            unlimited            bytes"
        let rlimit_as = std::fs::read_to_string(limits).ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Max address space"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|&b| b > 0.0)
        });
        let cgroup = cgroup_files.iter().find_map(|p| {
            let s = std::fs::read_to_string(p).ok()?;
            let b = s.trim().parse::<f64>().ok().filter(|&b| b > 0.0)?;
            Some((b, p.display().to_string()))
        });
        MemoryLimits {
            physical,
            rlimit_as,
            cgroup,
            worker: None,
        }
    }

    /// The smallest bound and what it is ("this machine's 8 GB of physical memory").
    pub fn smallest(&self) -> (f64, String) {
        let mut best = (
            self.physical,
            format!(
                "this machine's {} of physical memory",
                fmt_bytes(self.physical)
            ),
        );
        if let Some(r) = self.rlimit_as {
            if r < best.0 {
                best = (
                    r,
                    format!("the address-space limit RLIMIT_AS of {}", fmt_bytes(r)),
                );
            }
        }
        if let Some((c, path)) = &self.cgroup {
            if *c < best.0 {
                best = (
                    *c,
                    format!("the cgroup memory limit of {} ({path})", fmt_bytes(*c)),
                );
            }
        }
        if let Some(w) = self.worker {
            if w < best.0 {
                best = (
                    w,
                    format!("the Dask worker's memory limit of {}", fmt_bytes(w)),
                );
            }
        }
        best
    }
}

/// The default memory budget of one run and where it comes from: `env_max` (the
/// `AQMLAB_MAX_MEMORY` setting) if given, else half of the smallest of `limits`
/// divided among `jobs` parallel jobs.
pub fn default_memory_budget(
    limits: &MemoryLimits,
    jobs: u32,
    env_max: Option<f64>,
) -> (f64, String) {
    if let Some(m) = env_max {
        return (m, "AQMLAB_MAX_MEMORY".to_string());
    }
    let (bound, what) = limits.smallest();
    let jobs = jobs.max(1);
    let share = if jobs > 1 {
        format!(", shared by {jobs} parallel jobs")
    } else {
        String::new()
    };
    (bound / 2.0 / jobs as f64, format!("half of {what}{share}"))
}

/// [`default_memory_budget`] of this process.
fn machine_memory() -> (f64, String) {
    default_memory_budget(&MemoryLimits::read(), env_jobs(), env_memory())
}

/// Physical memory in bytes (`MemTotal` of `/proc/meminfo`), or 8 GiB if unknown.
pub fn physical_memory() -> f64 {
    MemoryLimits::read().physical
}

/// What a scenario is estimated to cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Estimate {
    pub events: f64,
    /// Peak bytes, the sum of `parts`.
    pub memory: f64,
    /// Memory by part: flows, links, nodes, routes, series, samples, queues, wires.
    pub parts: Vec<(&'static str, f64)>,
    /// Time-series bins per series.
    pub bins: f64,
    /// The `[[flow]]` table with the most events and its share, for error messages.
    pub(crate) top_flow_events: Option<(u32, f64)>,
    pub(crate) top_flow_memory: Option<(u32, f64)>,
    /// The link whose queues hold the most packets, those packets, and whether its
    /// qdisc's limit (rather than what arrives) bounds them.
    pub(crate) top_queue: Option<(u32, f64, bool)>,
    /// Samples by source: the flows' own, packet traces (`run.packet_trace`), qdisc
    /// traces (`run.trace`, a link's `trace`), for error messages.
    pub(crate) sample_sources: (f64, f64, f64),
}

impl Estimate {
    /// The link whose queues can hold the most packets: its index, those packets, and
    /// whether its qdisc's bound (not what arrives) limits them.
    pub fn largest_queue(&self) -> Option<(u32, f64, bool)> {
        self.top_queue
    }

    pub fn part(&self, name: &str) -> f64 {
        self.parts
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .unwrap_or(0.0)
    }
}

/// Human-readable bytes: "1.5 GB".
pub fn fmt_bytes(b: f64) -> String {
    let units = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)];
    for (u, s) in units {
        if b >= s {
            return format!("{:.3} {u}", b / s).replace(".000 ", " ");
        }
    }
    format!("{b:.0} B")
}

/// Human-readable count: "1.2e10".
pub fn fmt_count(n: f64) -> String {
    if n < 1e6 {
        format!("{n:.0}")
    } else {
        format!("{n:.2e}")
    }
}

/// Flow instances a scenario would create before it expands them: checked first, so that
/// `validate` never allocates millions of flows only to refuse them afterwards.
/// `groups` gives, per `[[flow]]` table, `(count, flows per instance, bytes per flow)`.
pub fn check_flow_counts(groups: &[(u64, u64, f64)], budget: &Budget) -> Result<(), ScenarioError> {
    let total: f64 = groups
        .iter()
        .map(|&(c, k, b)| c as f64 * k as f64 * b)
        .sum();
    if total > budget.max_memory {
        let (gi, &(c, k, b)) = groups
            .iter()
            .enumerate()
            .max_by(|a, b| {
                (a.1 .0 as f64 * a.1 .1 as f64 * a.1 .2)
                    .total_cmp(&(b.1 .0 as f64 * b.1 .1 as f64 * b.1 .2))
            })
            .expect("total > 0 means a group");
        return Err(ScenarioError::new(
            format!("flow[{gi}].count"),
            format!(
                "{c} instances × {k} flow(s) each need an estimated {} for the flows alone, over the memory budget of {} ({}); lower count, or raise run.max_memory (or --force)",
                fmt_bytes(c as f64 * k as f64 * b),
                fmt_bytes(budget.max_memory),
                budget_source(budget)
            ),
        ));
    }
    Ok(())
}

/// The memory of a topology of `nodes` nodes and `links` links with its time series
/// (4 per link, `duration / bin` bins), before it is built. `field` names the setting
/// that sizes it (`dumbbell.pairs`).
pub fn check_topology(
    field: &str,
    nodes: u64,
    links: u64,
    duration: crate::time::SimDuration,
    bin: crate::time::SimDuration,
    budget: &Budget,
) -> Result<(), ScenarioError> {
    let bins = (duration.as_nanos() as f64 / bin.as_nanos().max(1) as f64).ceil();
    let bytes = nodes as f64 * NODE_BYTES
        + links as f64 * (LINK_BYTES + LINK_SERIES * bins * SERIES_ROW_BYTES);
    if bytes > budget.max_memory {
        // the series dominate: the run's length or bins are the problem, not the size
        let field = if LINK_SERIES * bins * SERIES_ROW_BYTES > LINK_BYTES + NODE_BYTES {
            if bin < crate::time::SimDuration::from_millis(200) {
                "run.bin"
            } else {
                "run.duration"
            }
        } else {
            field
        };
        return Err(ScenarioError::new(
            field,
            format!(
                "{nodes} nodes and {links} links with {} time-series bins each need an estimated {}, over the memory budget of {} ({}); use fewer, a shorter run or a wider run.bin, or raise run.max_memory (or --force)",
                fmt_count(bins),
                fmt_bytes(bytes),
                fmt_bytes(budget.max_memory),
                budget_source(budget)
            ),
        ));
    }
    Ok(())
}

fn budget_source(b: &Budget) -> String {
    let (m, what) = machine_memory();
    if b.max_memory != m {
        "run.max_memory".to_string()
    } else {
        what
    }
}

/// What a workload offers the network, for the resource model (each workload's
/// `load_profile`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadProfile {
    /// Packets per second the source sends on its own clock (CBR, probes, VoIP), or None
    /// for TCP-based kinds, which send at most what their path carries.
    pub fixed_pps: Option<f64>,
    /// Packets back per data packet: probe replies 1, TCP ACKs 1/2 (Linux acknowledges
    /// every second full-sized segment, `tcp_input.c: __tcp_ack_snd_check`), plus the
    /// small packets a workload sends per object or connection (requests, handshakes,
    /// FINs, name lookups) spread over its data packets.
    pub reverse_per_pkt: f64,
    /// Samples recorded per forward packet (probe RTT/OWDs, CBR/VoIP OWD, TCP traces).
    pub samples_per_pkt: f64,
    /// IP bytes of a data packet (None: TCP, full-sized segments of the path's MTU)
    /// and of a reverse one.
    pub fwd_bytes: Option<f64>,
    pub rev_bytes: f64,
    /// The data flows from `to` back to `from` (downloads: web pages, video segments,
    /// responses): the data travels the `to → from` path, requests and ACKs the other.
    pub download: bool,
    /// A TCP-based workload that fetches in units (pages, objects) with pauses or round
    /// trips between them; None: it sends as much as its path carries.
    pub units: Option<Units>,
    /// The most full-sized segments a TCP flow has in flight: the smaller of its receive
    /// window and its cwnd cap (`rcv_window`, `max_window`); infinite without TCP.
    pub window_pkts: f64,
    /// A TCP flow's initial window (`init_cwnd`, at most `window_pkts`), segments; 0
    /// without TCP.
    pub init_window_pkts: f64,
}

/// The units a request-response workload fetches: each of `bytes` (mean) takes at least
/// `rounds` round trips (lookups, handshakes, one request per object and connection:
/// HTTP/1.1 without pipelining) besides its transfer at the path's rate, and is followed
/// by `think` seconds of pause. Its data rate is at most
/// `bytes / (think + rounds × RTT + bytes / rate)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Units {
    pub bytes: f64,
    pub rounds: f64,
    pub think: f64,
}

/// Payload bytes of a full-sized TCP segment on a 1500-byte path (with timestamps), to
/// turn a workload's objects into data packets.
pub const TCP_SEGMENT_PAYLOAD: f64 = 1448.0;
/// Small packets of one short TCP connection besides its data and ACKs: SYN, SYN-ACK,
/// the handshake's ACK, a FIN each way and their ACKs.
pub const CONNECTION_PACKETS: f64 = 7.0;

impl LoadProfile {
    /// A TCP-based workload: full-sized segments, an ACK (with timestamps) per two
    /// segments, and with `trace` on cwnd, ssthresh, srtt samples (rto only on
    /// timeouts): at most 3 per ACK.
    pub fn tcp(trace: bool) -> LoadProfile {
        LoadProfile {
            fixed_pps: None,
            reverse_per_pkt: 0.5,
            samples_per_pkt: if trace { 1.5 } else { 0.0 },
            fwd_bytes: None,
            rev_bytes: 52.0, // an ACK with the timestamp option
            download: false,
            units: None,
            window_pkts: f64::INFINITY,
            init_window_pkts: 10.0,
        }
    }

    /// This TCP workload as a download of objects of `object_bytes` (mean) each, with
    /// `small_per_object` small packets (request, handshake, lookups...) per object,
    /// fetched in `units` (None: back to back at the path's rate).
    pub fn download(
        self,
        object_bytes: f64,
        small_per_object: f64,
        units: Option<Units>,
    ) -> LoadProfile {
        let data_pkts = (object_bytes / TCP_SEGMENT_PAYLOAD).ceil().max(1.0);
        LoadProfile {
            reverse_per_pkt: self.reverse_per_pkt + small_per_object / data_pkts,
            download: true,
            units: units.filter(|u| u.bytes > 0.0 && u.bytes.is_finite()),
            ..self
        }
    }

    /// Packets per second of a source sending every `interval`.
    pub fn per_interval(interval: crate::units::DurationSpec) -> f64 {
        1e9 / interval.0.as_nanos().max(1) as f64
    }
}

/// The per-flow inputs of the model.
pub struct FlowLoad {
    pub group: u32,
    pub active_secs: f64,
    /// The flow's base round-trip time, seconds.
    pub rtt_secs: f64,
    pub tcp: bool,
    pub profile: LoadProfile,
    /// Links the data crosses (from `src` to `dst`, or back for a download) and the
    /// links of the way back.
    pub fwd: Vec<u32>,
    pub rev: Vec<u32>,
    /// Links of `fwd` and of `rev` that take their packets from the link before them
    /// without an arrival event at the router between (`link::fold_arrivals`): one
    /// event fewer per packet each.
    pub fwd_folds: usize,
    pub rev_folds: usize,
}

/// What a validated scenario looks like to the resource model (`scenario::Plan::shape`),
/// so that this module does not depend on the scenario module that calls it.
#[derive(Clone, Copy, Debug)]
pub struct Shape<'a> {
    pub duration: SimDuration,
    pub bin: SimDuration,
    /// `run.packet_trace` windows.
    pub packet_trace: &'a [(SimTime, SimTime)],
    pub links: &'a [(LinkParams, QdiscConfig)],
    /// Number of nodes and of flows.
    pub nodes: usize,
    pub flows: usize,
}

/// Packets per second each flow offers, and the bytes and packets it offers each link.
struct Offered {
    /// Per flow: its packets per second, and what the narrowest link of its path carries.
    pps: Vec<f64>,
    narrowest: Vec<f64>,
    /// Per flow: the IP bytes of its data packets.
    size: Vec<f64>,
    /// Per link: bytes and packets offered over the run, the smallest packet (IP bytes).
    bytes: Vec<f64>,
    pkts: Vec<f64>,
    min_pkt: Vec<f64>,
}

/// Step 1: what each flow offers. A fixed-rate source its own rate; a TCP-based one
/// what the narrowest link of its data path carries in full-sized packets, or what its
/// units' round trips and pauses let through if less ([`Units`]), and at most its window
/// per round trip (its base RTT plus the `standing` queue delay of every link of its
/// path in both directions) and its ACK clock's `cap` ([`ack_clock`]).
fn offer(plan: &Shape<'_>, flows: &[FlowLoad], cap: &[f64], standing: &[f64]) -> Offered {
    let nl = plan.links.len();
    let mut o = Offered {
        pps: Vec::with_capacity(flows.len()),
        narrowest: Vec::with_capacity(flows.len()),
        size: Vec::with_capacity(flows.len()),
        bytes: vec![0.0; nl],
        pkts: vec![0.0; nl],
        min_pkt: vec![f64::INFINITY; nl],
    };
    for f in flows {
        let mtu = f
            .fwd
            .iter()
            .map(|&l| plan.links[l as usize].0.mtu.max(1) as f64)
            .fold(f64::INFINITY, f64::min);
        let fwd_b = f
            .profile
            .fwd_bytes
            .unwrap_or(if mtu.is_finite() { mtu } else { 1500.0 })
            .max(1.0);
        let narrowest = f
            .fwd
            .iter()
            .map(|&l| {
                let (p, q) = &plan.links[l as usize];
                drain_bps(p, q) / (8.0 * fwd_b)
            })
            .fold(f64::INFINITY, f64::min);
        let narrowest = if narrowest.is_finite() {
            narrowest
        } else {
            0.0
        };
        let pps = match (f.profile.fixed_pps, f.profile.units) {
            (Some(p), _) => p,
            (None, Some(u)) if narrowest > 0.0 => {
                let secs = u.think + u.rounds * f.rtt_secs + u.bytes / (narrowest * fwd_b);
                narrowest.min(u.bytes / secs / fwd_b)
            }
            (None, _) => narrowest,
        };
        let pps = if f.profile.fixed_pps.is_none() {
            let rtt = f.rtt_secs
                + f.fwd
                    .iter()
                    .chain(&f.rev)
                    .map(|&l| standing[l as usize])
                    .sum::<f64>();
            let by_window = if rtt > 0.0 {
                f.profile.window_pkts / rtt
            } else {
                f64::INFINITY
            };
            pps.min(by_window).min(cap[o.pps.len()])
        } else {
            pps
        };
        for &l in &f.fwd {
            o.bytes[l as usize] += pps * f.active_secs * fwd_b;
            o.pkts[l as usize] += pps * f.active_secs;
            o.min_pkt[l as usize] = o.min_pkt[l as usize].min(fwd_b);
        }
        let back = pps * f.active_secs * f.profile.reverse_per_pkt;
        for &l in &f.rev {
            o.bytes[l as usize] += back * f.profile.rev_bytes;
            o.pkts[l as usize] += back;
            if f.profile.reverse_per_pkt > 0.0 {
                o.min_pkt[l as usize] = o.min_pkt[l as usize].min(f.profile.rev_bytes.max(1.0));
            }
        }
        o.pps.push(pps);
        o.narrowest.push(narrowest);
        o.size.push(fwd_b);
    }
    o
}

/// A qdisc that is one drop-tail FIFO per band (`fifo`, `pfifo_fast`, `prio`): no AQM
/// keeps its queue short and no flow queueing separates the flows in it.
fn drop_tail_fifo(q: &QdiscConfig) -> bool {
    matches!(
        q,
        QdiscConfig::Fifo(_) | QdiscConfig::PfifoFast(_) | QdiscConfig::Prio(_)
    )
}

/// A link the flows overload (`frac` < 1) whose qdisc is a drop-tail FIFO: its queue
/// stands full.
fn stands_full(q: &QdiscConfig, frac: f64) -> bool {
    frac < 1.0 && drop_tail_fifo(q)
}

/// Links whose queue stands full ([`stands_full`]). Per link: those flows' queueing delay, seconds (its packet bound times
/// the mean frame that arrives, at its drain rate), else 0.
fn standing_delays(plan: &Shape<'_>, offered: &Offered, frac: &[f64]) -> Vec<f64> {
    plan.links
        .iter()
        .enumerate()
        .map(|(l, (p, q))| {
            if !stands_full(q, frac[l]) || offered.pkts[l] <= 0.0 {
                return 0.0;
            }
            let limit = link_limit(offered, l, p, q);
            let frame = offered.bytes[l] / offered.pkts[l] + p.overhead as f64;
            let d = limit * frame * 8.0 / drain_bps(p, q);
            if d.is_finite() {
                d
            } else {
                0.0
            }
        })
        .collect()
}

/// Step 2b, the ACK clock through a full drop-tail FIFO: a TCP flow sends data only as
/// its ACKs come back. Where its ACKs cross a link the flows overload whose qdisc is a
/// drop-tail FIFO (a slow uplink carrying uploads and the downloads' ACKs), the queue
/// stands full and is served in arrival order, so each stream in it gets the share of
/// the link its packets hold in the queue; TCP streams sharing the queue see the same
/// round trip and grow their windows alike, so each TCP data flow crossing the link and
/// each TCP flow's ACK stream holds an equal number of packets: the link's rate, less
/// what the fixed-rate sources send through it, over the sum of one frame of each such
/// stream (weighted by the part of the run it is active) is the packets per second of
/// each stream. A flow whose ACKs get `r` per second there sends at most
/// `r / reverse_per_pkt` data packets per second (a download behind a bloated uplink
/// carries a fraction of its own link). Per flow: that cap, infinite where none applies.
fn ack_clock(
    plan: &Shape<'_>,
    flows: &[FlowLoad],
    offered: &Offered,
    frac: &[f64],
    dur: f64,
) -> Vec<f64> {
    let nl = plan.links.len();
    let full: Vec<bool> = plan
        .links
        .iter()
        .zip(frac)
        .map(|((_, q), &fr)| stands_full(q, fr))
        .collect();
    let mut cap = vec![f64::INFINITY; flows.len()];
    if dur <= 0.0 || !full.iter().any(|&b| b) {
        return cap;
    }
    // per link: bytes per second of the fixed-rate sources, frames of one packet per stream
    let mut fixed = vec![0.0f64; nl];
    let mut frames = vec![0.0f64; nl];
    for (i, f) in flows.iter().enumerate() {
        let share = (f.active_secs / dur).min(1.0);
        let pps = offered.pps[i];
        for (links, size, per) in [
            (&f.fwd, offered.size[i], 1.0),
            (&f.rev, f.profile.rev_bytes, f.profile.reverse_per_pkt),
        ] {
            for &l in links {
                let l = l as usize;
                if !full[l] {
                    continue;
                }
                let frame = size + plan.links[l].0.overhead as f64;
                if f.tcp {
                    frames[l] += share * frame;
                } else {
                    fixed[l] += share * pps * per * frame;
                }
            }
        }
    }
    for (i, f) in flows.iter().enumerate() {
        if !f.tcp || f.profile.reverse_per_pkt <= 0.0 {
            continue;
        }
        for &l in &f.rev {
            let l = l as usize;
            if !full[l] || frames[l] <= 0.0 {
                continue;
            }
            let (p, q) = &plan.links[l];
            let per_stream = (drain_bps(p, q) / 8.0 - fixed[l]).max(0.0) / frames[l];
            cap[i] = cap[i].min(per_stream / f.profile.reverse_per_pkt);
        }
    }
    cap
}

/// Step 2: the fraction of what is offered each link carries: a link carries at most
/// `rate × duration` bytes (its drain rate, [`drain_bps`]).
fn carried_fractions(plan: &Shape<'_>, offered: &Offered, dur: f64) -> Vec<f64> {
    plan.links
        .iter()
        .zip(&offered.bytes)
        .map(|((p, q), &b)| {
            let cap = drain_bps(p, q) / 8.0 * dur;
            if b > cap {
                cap / b
            } else {
                1.0
            }
        })
        .collect()
}

/// What the flows do with their share: events, samples, their memory, packets per link.
#[derive(Default)]
struct Traffic {
    events: f64,
    samples: f64,
    flow_mem: f64,
    per_group_events: Vec<f64>,
    per_group_mem: Vec<f64>,
    /// Packets each link carries over the run.
    carried: Vec<f64>,
    /// Packets arriving at each link over the run: what a TCP flow gets through (it
    /// sends its share of its bottleneck, not what it would offer without one), and a
    /// fixed-rate source's every packet up to the first link that cannot carry them.
    arriving: Vec<f64>,
    /// Packets per second of each flow that get through.
    eff: Vec<f64>,
}

/// Step 3: each flow gets the smallest fraction on its data path (flows sharing a
/// bottleneck share it); one event per packet per link crossed, plus the source's own
/// send (a fixed-rate source: every packet it sends, those that do not get through with
/// an event per link crossed before the first overloaded one, where they are dropped),
/// plus a TCP connection's handshake.
fn traffic(flows: &[FlowLoad], offered: &Offered, frac: &[f64], dur: f64, bins: f64) -> Traffic {
    let mut t = Traffic {
        carried: vec![0.0; frac.len()],
        arriving: vec![0.0; frac.len()],
        ..Traffic::default()
    };
    for (i, f) in flows.iter().enumerate() {
        let share = f
            .fwd
            .iter()
            .map(|&l| frac[l as usize])
            .fold(1.0f64, f64::min);
        let eff = offered.pps[i] * share; // packets per second that get through
        t.eff.push(eff);
        let sent = if f.profile.fixed_pps.is_some() {
            offered.pps[i]
        } else {
            eff
        } * f.active_secs;
        let through = eff * f.active_secs;
        let back = through * f.profile.reverse_per_pkt;
        for &l in &f.fwd {
            t.carried[l as usize] += through;
        }
        for &l in &f.rev {
            t.carried[l as usize] += back;
        }
        // a fixed-rate source's packets that do not get through are dropped at the first
        // overloaded link of their path, having crossed the links before it
        let lost = (sent - through).max(0.0);
        let first_over = f.fwd.iter().position(|&l| frac[l as usize] < 1.0);
        let before = first_over.unwrap_or(0) as f64;
        for (k, &l) in f.fwd.iter().enumerate() {
            let fixed_rate = f.profile.fixed_pps.is_some();
            t.arriving[l as usize] += if fixed_rate && first_over.is_some_and(|o| k <= o) {
                sent
            } else {
                through
            };
        }
        for &l in &f.rev {
            t.arriving[l as usize] += back;
        }
        // an arrival event per link crossed, but for those the link before hands its
        // packets to without one
        let fwd_hops = (f.fwd.len() - f.fwd_folds) as f64;
        let rev_hops = (f.rev.len() - f.rev_folds) as f64;
        // a TCP connection's handshake: SYN and its ACK along the data path, the SYN-ACK
        // back (downloads count theirs per object in `reverse_per_pkt`)
        let handshake = if f.tcp && !f.profile.download && f.active_secs > 0.0 {
            2.0 * (1.0 + fwd_hops) + (1.0 + rev_hops)
        } else {
            0.0
        };
        let ev = sent + through * fwd_hops + back * (1.0 + rev_hops) + lost * before + handshake;
        t.events += ev;
        t.samples += eff.min(offered.narrowest[i].max(1.0 / dur))
            * f.active_secs
            * f.profile.samples_per_pkt;
        let g = f.group as usize;
        if t.per_group_events.len() <= g {
            t.per_group_events.resize(g + 1, 0.0);
            t.per_group_mem.resize(g + 1, 0.0);
        }
        t.per_group_events[g] += ev;
        let fixed = if f.tcp {
            TCP_FLOW_BYTES
        } else {
            UDP_FLOW_BYTES
        };
        t.per_group_mem[g] += fixed + bins * SERIES_ROW_BYTES;
        t.flow_mem += fixed;
    }
    t
}

/// The packets that can wait in the queues and the packet-trace records.
struct Queues {
    packets: f64,
    /// The link holding the most, those packets, and whether its qdisc's limit bounds them.
    top: Option<(u32, f64, bool)>,
    traced: f64,
    /// Of `traced`: the records of `run.packet_trace` windows.
    packet_traced: f64,
    /// Bytes of the packets travelling the links' wires ([`wire_bytes`]).
    wire_bytes: f64,
    /// Per flow: its window in a round trip ([`window_bound`]).
    windows: Vec<f64>,
}

/// The memory of a link's wire, the packets it has sent that have not yet arrived: the
/// packets it carries per second (`pps`) times its delay, or, if more, the peak windows
/// of the TCP flows whose data crosses it (`bursts`: slow start sends a window at the
/// line rate), at most its drain rate times its delay in packets of the mean size
/// `mean`; kept in a ring that grows by doubling to the next power of two at or above
/// them.
pub fn wire_bytes(p: &LinkParams, q: &QdiscConfig, mean: f64, pps: f64, bursts: f64) -> f64 {
    let delay = p.delay.as_secs_f64();
    let on_wire = (pps * delay)
        .max(bursts)
        .min(drain_bps(p, q) / 8.0 * delay / mean.max(1.0));
    if on_wire.is_nan() || on_wire < 1.0 {
        return 0.0;
    }
    on_wire
        .clamp(RING_MIN_SLOTS, 2f64.powi(40))
        .log2()
        .ceil()
        .exp2()
        * WIRE_PACKET_BYTES
}

/// The memory of a TCP flow's scoreboard rings when at most `peak` segments are in
/// flight: its sending end's segment ring and RACK time list grow by doubling from
/// [`RING_MIN_SLOTS`] to the next power of two at or above the segments in flight; the
/// receiving end of a one-way transfer never sends a segment and allocates none. The
/// smaller rings a ring grew through go back to the allocator, where other flows growing
/// through the same sizes take them (a flow's rings are not all grown at once), so they
/// are not counted.
pub fn ring_bytes(peak: f64) -> f64 {
    if peak.is_nan() || peak <= 0.0 {
        return 0.0;
    }
    // at most 2^40 slots: a window beyond any receive window (and infinity) stays finite
    let slots = peak
        .clamp(RING_MIN_SLOTS, 2f64.powi(40))
        .log2()
        .ceil()
        .exp2();
    slots * RING_SLOT_BYTES
}

/// The most segments a TCP flow has in flight at its peak, given its `window` in a
/// round trip ([`window_bound`]): slow start doubles the window every round trip, so it
/// leaves slow start with up to twice what the path holds; at least the initial window,
/// at most the window limit of its profile.
fn peak_window(p: &LoadProfile, window: f64) -> f64 {
    (2.0 * window).max(p.init_window_pkts).min(p.window_pkts)
}

/// The packets a TCP flow can have in the network at once: what its bottleneck (the
/// link of its data path with the smallest carried fraction, else its slowest) carries
/// of it in a base round trip, plus its share of that link's queue bound. Summed per link
/// over the flows crossing it (their ACKs: that times ACKs per packet), this bounds the
/// queue of a link no flow overloads (a host's access link holds at most the windows
/// its flows send in a burst, not every packet of the run). A flow without TCP does not
/// bound it (infinite). Also per link, the sum of the peak windows ([`peak_window`]) of
/// the TCP flows whose data crosses it, and per flow its window (0 without TCP).
fn window_bound(
    plan: &Shape<'_>,
    flows: &[FlowLoad],
    frac: &[f64],
    t: &Traffic,
    bound: &[f64],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut w = vec![0.0f64; plan.links.len()];
    let mut peak = vec![0.0f64; plan.links.len()];
    let mut per_flow = vec![0.0f64; flows.len()];
    for (i, (f, &eff)) in flows.iter().zip(&t.eff).enumerate() {
        if !f.tcp {
            for &l in f.fwd.iter().chain(&f.rev) {
                w[l as usize] = f64::INFINITY;
            }
            continue;
        }
        let key = |l: u32| {
            let (p, q) = &plan.links[l as usize];
            (frac[l as usize], drain_bps(p, q))
        };
        let Some(b) = f.fwd.iter().copied().min_by(|&x, &y| {
            key(x)
                .partial_cmp(&key(y))
                .unwrap_or(std::cmp::Ordering::Equal)
        }) else {
            continue;
        };
        let through = eff * f.active_secs;
        let share = if t.carried[b as usize] > 0.0 {
            (through / t.carried[b as usize]).min(1.0)
        } else {
            0.0
        };
        let window = eff * f.rtt_secs + share * bound[b as usize];
        per_flow[i] = window;
        let at_peak = peak_window(&f.profile, window);
        for &l in &f.fwd {
            w[l as usize] += window;
            peak[l as usize] += at_peak;
        }
        for &l in &f.rev {
            w[l as usize] += window * f.profile.reverse_per_pkt;
        }
    }
    (w, peak, per_flow)
}

/// Step 4: each link's queue holds at most its qdisc's bound ([`qdisc_limit`]), what
/// arrives, and the windows of the flows crossing it ([`window_bound`]), plus its device
/// queue; a measured queue inside a `run.packet_trace` window records two entries per
/// arrival, a traced qdisc (`trace = true`) two per arrival.
fn queues(
    plan: &Shape<'_>,
    flows: &[FlowLoad],
    offered: &Offered,
    frac: &[f64],
    t: &Traffic,
    qdisc_trace: bool,
) -> Queues {
    let dur = plan.duration.as_secs_f64();
    let windows: f64 = plan
        .packet_trace
        .iter()
        .map(|(a, b)| (b.as_nanos().saturating_sub(a.as_nanos())) as f64 * 1e-9)
        .sum();
    let mut q = Queues {
        packets: 0.0,
        top: None,
        traced: 0.0,
        packet_traced: 0.0,
        wire_bytes: 0.0,
        windows: Vec::new(),
    };
    let arrivals = t.arriving.clone();
    let limits: Vec<f64> = plan
        .links
        .iter()
        .enumerate()
        .map(|(l, (p, qd))| link_limit(offered, l, p, qd))
        .collect();
    let bound: Vec<f64> = limits
        .iter()
        .zip(&arrivals)
        .map(|(a, b)| a.min(*b))
        .collect();
    let (inflight, peak, per_flow) = window_bound(plan, flows, frac, t, &bound);
    q.windows = per_flow;
    for (l, (p, qd)) in plan.links.iter().enumerate() {
        let arrivals = arrivals[l];
        let mean = if offered.pkts[l] > 0.0 {
            offered.bytes[l] / offered.pkts[l]
        } else {
            1500.0
        };
        let pps = if dur > 0.0 { t.carried[l] / dur } else { 0.0 };
        q.wire_bytes += wire_bytes(p, qd, mean, pps, peak[l]);
        let limit = limits[l].min(inflight[l]);
        // a DOCSIS downstream's service-flow regulators hold what the servers send them
        // faster than the regulated rate, up to their limit: the TCP flows' windows at
        // their peak (initial windows and slow start arrive as bursts at the servers'
        // rate), and all that arrives where other sources cross it
        let regulated = match &p.lower {
            crate::link::LowerParams::Docsis(d) => {
                let n = d.flows.iter().flatten().count() as f64;
                let bursts = if inflight[l].is_finite() {
                    peak[l]
                } else {
                    f64::INFINITY
                };
                (n * d.regulator_limit as f64).min(bursts).min(arrivals)
            }
            _ => 0.0,
        };
        let here = limit.min(arrivals) + regulated + p.device_queue as f64;
        q.packets += here;
        if q.top.is_none_or(|(_, b, _)| here > b) {
            q.top = Some((l as u32, here, limit < arrivals));
        }
        if p.packet_traced() {
            // per arrival inside a window: the queue length it finds, then its sojourn
            // or its drop
            let rate = if dur > 0.0 { arrivals / dur } else { 0.0 };
            let records = PACKET_TRACE_RECORDS * rate * windows.min(dur);
            q.traced += records;
            q.packet_traced += records;
        }
        if p.trace && qdisc_trace {
            q.traced += 2.0 * arrivals;
        }
    }
    q
}

/// A link's qdisc bound in packets ([`qdisc_limit`]; infinite without one), given the
/// smallest and the mean packet offered to it.
fn link_limit(offered: &Offered, l: usize, p: &LinkParams, qd: &QdiscConfig) -> f64 {
    {
        let smallest = if offered.min_pkt[l].is_finite() {
            offered.min_pkt[l].max(MIN_IP_PACKET_BYTES)
        } else {
            MIN_IP_PACKET_BYTES
        };
        // the mean packet of the mix that arrives (a memory limit fills with that mix)
        let mean = if offered.pkts[l] > 0.0 {
            (offered.bytes[l] / offered.pkts[l]).max(smallest)
        } else {
            1500.0
        };
        qdisc_limit(qd, p, smallest, mean).unwrap_or(f64::INFINITY)
    }
}

/// Estimates events and memory. `routers` is the number of nodes with a routing table.
///
/// In steps: what every flow offers each link of its path at its nominal rate
/// ([`offer`]: a TCP flow the narrowest link of its data path in MTU-sized packets, or
/// less if its round trips and pauses limit it); the fraction of that each link carries ([`carried_fractions`]); the
/// events, samples and flow memory of each flow scaled by the smallest fraction on its
/// path ([`traffic`]); the packets the queues can hold ([`queues`]). The events are
/// multiplied by [`EVENT_MARGIN`] for timers (delayed ACKs, RTOs, pacing) the packets do
/// not count.
pub fn estimate(
    plan: &Shape<'_>,
    flows: &[FlowLoad],
    routers: usize,
    qdisc_trace: bool,
) -> Estimate {
    let dur = plan.duration.as_secs_f64();
    let bins = (plan.duration.as_nanos() as f64 / plan.bin.as_nanos().max(1) as f64).ceil();
    let nl = plan.links.len();
    let mut offered = offer(
        plan,
        flows,
        &vec![f64::INFINITY; flows.len()],
        &vec![0.0; nl],
    );
    let mut frac = carried_fractions(plan, &offered, dur);
    // full drop-tail FIFOs: the windows' longer round trips and the ACK clock, then what
    // the flows offer and the links carry again
    let standing = standing_delays(plan, &offered, &frac);
    if standing.iter().any(|&d| d > 0.0) {
        let cap = ack_clock(plan, flows, &offered, &frac, dur);
        offered = offer(plan, flows, &cap, &standing);
        frac = carried_fractions(plan, &offered, dur);
    }
    let mut t = traffic(flows, &offered, &frac, dur, bins);
    let q = queues(plan, flows, &offered, &frac, &t, qdisc_trace);
    // each TCP flow's scoreboard rings, sized by its peak window
    for (f, &w) in flows.iter().zip(&q.windows) {
        if f.tcp && f.active_secs > 0.0 {
            let rings = ring_bytes(peak_window(&f.profile, w));
            t.flow_mem += rings;
            t.per_group_mem[f.group as usize] += rings;
        }
    }
    let route_entries = routers as f64 * plan.nodes as f64;
    let parts = vec![
        ("flows", t.flow_mem),
        ("links", nl as f64 * LINK_BYTES),
        ("nodes", plan.nodes as f64 * NODE_BYTES),
        ("routes", route_entries * ROUTE_ENTRY_BYTES),
        (
            "series",
            bins * (flows.len() as f64 + LINK_SERIES * nl as f64) * SERIES_ROW_BYTES,
        ),
        ("samples", (t.samples + q.traced) * SAMPLE_BYTES),
        ("queues", q.packets * QUEUED_PACKET_BYTES),
        ("wires", q.wire_bytes),
    ];
    let memory = parts.iter().map(|(_, v)| v).sum();
    let top = |v: &[f64]| {
        v.iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(g, &e)| (g as u32, e * EVENT_MARGIN))
    };
    Estimate {
        events: t.events * EVENT_MARGIN,
        memory,
        parts,
        bins,
        top_flow_events: top(&t.per_group_events),
        top_flow_memory: top(&t.per_group_mem),
        top_queue: q.top,
        sample_sources: (t.samples, q.packet_traced, q.traced - q.packet_traced),
    }
}

/// The smallest IP packet a byte limit is divided by to bound its packets: an IPv4
/// header alone (20 bytes); every packet the simulator sends is at least that large.
const MIN_IP_PACKET_BYTES: f64 = 20.0;

/// The rate a link's queue drains at, bit/s: the line, its shaper's rate, or CAKE's own
/// shaper (`bandwidth`), whichever is slowest.
fn drain_bps(p: &LinkParams, q: &QdiscConfig) -> f64 {
    let r = (p.rate.bps() as f64).min(p.qdisc_rate().bps() as f64);
    match q {
        QdiscConfig::Cake(c) => match c.bandwidth {
            Some(b) if b.0 > 0 => r.min(b.0 as f64),
            _ => r,
        },
        _ => r,
    }
}

/// A qdisc's packet bound, if it has one: its `limit` key (packets, or bytes divided by
/// the smallest packet), else the limit its kind takes by default (the `limit` entry of
/// its parameter documentation; RED's tc default is 4 × max, with max = 3 × min, or
/// 1000 MTU-sized packets' worth of bytes when neither is given); a memory limit bounds
/// it too: DualPI2's `memlimit` divided by `smallest`, the smallest packet that crosses
/// the link, and CAKE's ([`crate::qdisc::cake::CakeConfig::buffer_limit`]: its `memlimit`, or
/// shaped max(4 MiB, 4 × bandwidth × interval), unshaped 10240 frames of MTU + header)
/// divided by the frame of `mean`, the mean packet of what arrives (CAKE charges frames:
/// size + link overhead; over its limit it drops from its longest queue, so it fills
/// with the mix that arrives).
fn qdisc_limit(q: &QdiscConfig, link: &LinkParams, smallest: f64, mean: f64) -> Option<f64> {
    use serde::Deserialize;
    let toml::Value::Table(t) = toml::Value::try_from(q).ok()? else {
        return None;
    };
    let packets = |v: &toml::Value| -> Option<f64> {
        match crate::units::Limit::deserialize(v.clone()).ok()? {
            crate::units::Limit::Packets(n) => Some(n as f64),
            crate::units::Limit::Bytes(b) => Some(b as f64 / MIN_IP_PACKET_BYTES),
        }
    };
    let docs = crate::qdisc::qdisc_params(q.kind_name()).unwrap_or(&[]);
    let memlimit = if let QdiscConfig::Cake(c) = q {
        let frame = (link.mtu + link.overhead) as u64; // as the qdisc is built
        Some(c.buffer_limit(frame) as f64 / (mean + link.overhead as f64).max(1.0))
    } else if let Some(v) = t.get("memlimit") {
        crate::units::SizeSpec::deserialize(v.clone())
            .ok()
            .map(|m| m.0 as f64 / smallest)
    } else {
        None
    };
    let limit = if let Some(v) = t.get("limit") {
        packets(v)
    } else {
        match docs.iter().find(|p| p.name == "limit") {
            None => None,
            Some(doc) => {
                if let Ok(n) = doc.default.parse::<u32>() {
                    Some(n as f64)
                } else if doc.default == "4*max" {
                    match (t.get("max"), t.get("min")) {
                        (Some(max), _) => packets(max).map(|p| 4.0 * p),
                        (None, Some(min)) => packets(min).map(|p| 12.0 * p),
                        (None, None) => Some(1000.0 * 1500.0 / MIN_IP_PACKET_BYTES),
                    }
                } else {
                    None
                }
            }
        }
    };
    match (limit, memlimit) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Checks an estimate against a budget; the error names the field that dominates.
pub fn check(plan: &Shape<'_>, est: &Estimate, budget: &Budget) -> Result<(), ScenarioError> {
    if est.memory > budget.max_memory {
        let (part, bytes) = est
            .parts
            .iter()
            .copied()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or(("flows", 0.0));
        let field = match part {
            "series" => {
                if plan.bin < SimDuration::from_millis(200) {
                    "run.bin".to_string()
                } else {
                    "run.duration".to_string()
                }
            }
            // the traces' windows or switches when they hold most of the samples
            "samples" if est.sample_sources.1 > est.sample_sources.0.max(est.sample_sources.2) => {
                "run.packet_trace".to_string()
            }
            "samples" if est.sample_sources.2 > est.sample_sources.0 => "run.trace".to_string(),
            "flows" | "samples" => match est.top_flow_memory {
                Some((g, _)) if part == "flows" => format!("flow[{g}].count"),
                Some((g, _)) => format!("flow[{g}]"),
                None => "run.duration".to_string(),
            },
            // the run's length when a queue can hold everything that arrives, else
            // the budget: never a key the scenario may not have (`qdisc.limit`)
            "queues" => match est.top_queue {
                Some((_, _, false)) => "run.duration".to_string(),
                _ => "run.max_memory".to_string(),
            },
            "links" | "nodes" | "routes" => "dumbbell.pairs".to_string(),
            // the packets a link's rate and delay keep on its wire
            "wires" => "run.max_memory".to_string(),
            _ => String::new(),
        };
        let why = match part {
            "series" => format!(
                "{} time-series bins (run.duration / run.bin) × {} series",
                fmt_count(est.bins),
                plan.flows + 4 * plan.links.len()
            ),
            "queues" => match est.top_queue {
                Some((l, n, bounded)) => format!(
                    "packets that can wait in the queues, most of them ({}) at link {} ({} qdisc{})",
                    fmt_count(n),
                    plan.links[l as usize].0.name,
                    plan.links[l as usize].1.kind_name(),
                    if bounded {
                        ", its limit"
                    } else {
                        ", which can hold every packet that arrives"
                    }
                ),
                None => "packets that can wait in the queues".to_string(),
            },
            "samples" => {
                let (own, packets, qdiscs) = est.sample_sources;
                format!(
                    "samples: {} of the flows, {} packet-trace records (run.packet_trace), {} qdisc-trace records",
                    fmt_count(own),
                    fmt_count(packets),
                    fmt_count(qdiscs)
                )
            }
            "wires" => "the packets travelling the links (their rate times their delay)".to_string(),
            p => p.to_string(),
        };
        return Err(ScenarioError::new(
            field,
            format!(
                "the run needs an estimated {} of memory ({} of it for {why}), over the budget of {} ({}); shorten the run, widen run.bin, use fewer flows, or raise run.max_memory (or --force)",
                fmt_bytes(est.memory),
                fmt_bytes(bytes),
                fmt_bytes(budget.max_memory),
                budget_source(budget),
            ),
        ));
    }
    if est.events > budget.max_events {
        let field = match est.top_flow_events {
            Some((g, e)) if e >= 0.5 * est.events => format!("flow[{g}]"),
            _ => "run.duration".to_string(),
        };
        return Err(ScenarioError::new(
            field,
            format!(
                "the run needs an estimated {} events (about {:.0} hours at 5 M events/s), over the budget of {} events; shorten the run, lower the rates, or raise run.max_events (or --force)",
                fmt_count(est.events),
                est.events / 5e6 / 3600.0,
                fmt_count(budget.max_events)
            ),
        ));
    }
    Ok(())
}
