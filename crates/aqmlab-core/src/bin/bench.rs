//! `aqmlab-bench SCENARIO.toml [SEED] [--links NAME,...]`: runs a scenario in release mode
//! and prints one JSON line with simulated seconds, events, bottleneck packets, wall seconds
//! and rates. The benchmark suite in `benchmarks/` drives it.
//!
//! `--digest` prints instead `RunResult::digest`, a hash of the whole result (as the golden
//! tests compute it):
//! two builds that print the same digest for a scenario computed the same results, so an
//! optimisation can be checked for bit-identity on any scenario, not just the goldens'.
//!
//! "Bottleneck packets" are the packets dequeued by the counted links' qdiscs. By default
//! those are the links named `bottleneck*` (dumbbell) and `docsis_down` (the CMTS
//! downstream); `--links` replaces that set by a comma-separated list of name prefixes
//! (e.g. `--links bottleneck,wifi` to also count WiFi interfaces).

#![warn(clippy::too_many_lines)]

use aqmlab_core::qdisc::Qdisc;
use aqmlab_core::{Scenario, Simulator};

/// The simulator's heap on transparent huge pages (`aqmlab_core::hugealloc`).
#[global_allocator]
static ALLOC: aqmlab_core::hugealloc::HugePageAlloc = aqmlab_core::hugealloc::HugePageAlloc;

/// `println!` that ends the program quietly when stdout is closed (`| head -1`) instead
/// of panicking on the broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    }};
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let mut prefixes: Vec<String> = vec!["bottleneck".into(), "docsis_down".into()];
    if let Some(i) = args.iter().position(|a| a == "--links") {
        let Some(list) = args.get(i + 1).cloned() else {
            eprintln!("error: --links needs a comma-separated list of link name prefixes");
            std::process::exit(2);
        };
        prefixes = list.split(',').map(|s| s.trim().to_string()).collect();
        args.drain(i..i + 2);
    }
    // --summary: also print the first counted link's utilisation and sojourn (collected
    // after the timed run), for the ns-3 cross-check
    let summary = args.iter().any(|a| a == "--summary");
    let digest = args.iter().any(|a| a == "--digest");
    args.retain(|a| a != "--summary" && a != "--digest");
    if args.len() < 2 || args[1] == "--help" || args[1] == "-h" {
        eprintln!("usage: aqmlab-bench SCENARIO.toml [SEED] [--links PREFIX,...] [--summary | --digest]\n  runs the scenario and prints a JSON line of speed figures (--digest: a hash of the whole result instead)");
        std::process::exit(if args.len() < 2 { 2 } else { 0 });
    }
    let sc = match Scenario::from_file(std::path::Path::new(&args[1])) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let seed = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(sc.run.seed);
    let t0 = std::time::Instant::now();
    let mut sim = match Simulator::new(&sc, seed) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let build = t0.elapsed().as_secs_f64();
    let cpu0 = thread_cpu_seconds();
    sim.run();
    let wall = sim.wall_time().as_secs_f64();
    // CPU time of the event loop: unlike wall time it does not grow when other processes
    // share the cores (NaN where /proc/thread-self/schedstat is missing)
    let loop_cpu = thread_cpu_seconds() - cpu0;
    print_event_stats();
    let bottleneck: u64 = sim
        .net
        .links
        .iter()
        .filter(|l| prefixes.iter().any(|p| l.p.name.starts_with(p.as_str())))
        .map(|l| l.qdisc.stats().dequeued)
        .sum();
    let sim_s = sim.end.as_secs_f64();
    if digest {
        let r = sim.results();
        out!(
            "{{\"scenario\":\"{}\",\"seed\":{},\"digest\":\"{:016x}\",\"packets_created\":{}}}",
            args[1],
            seed,
            r.digest(),
            r.packets_created
        );
        return;
    }
    if summary {
        let r = sim.results();
        if let Some(q) = r
            .queues
            .iter()
            .find(|q| prefixes.iter().any(|p| q.name.starts_with(p.as_str())))
        {
            // the queue's drops per second after the warm-up, from its per-bin `drops`
            // series (bins start at multiples of the bin width, the warm-up on a boundary
            // in the benchmark scenarios)
            let dm = r.metric_names.iter().position(|m| m == "drops");
            let s = &r.series;
            let drops: f64 = (0..s.len())
                .filter(|&i| {
                    s.kind[i] == aqmlab_core::metrics::KIND_QUEUE
                        && s.entity[i] == q.id
                        && Some(s.metric[i] as usize) == dm
                        && s.t[i] >= r.warmup - 1e-9
                })
                .map(|i| s.value[i])
                .sum();
            let span = (r.duration - r.warmup).max(1e-9);
            // the TCP senders' congestion events over the whole run (their counters do
            // not restart at the warm-up)
            let total = |key: &str| -> f64 {
                r.flows
                    .iter()
                    .flat_map(|f| f.extra.iter())
                    .filter(|(k, _)| *k == key)
                    .map(|(_, v)| v)
                    .sum()
            };
            out!(
                "{{\"link\":\"{}\",\"utilization\":{:.4},\"sojourn_mean\":{:.6},\"sojourn_p99\":{:.6},\"drops_per_second\":{:.3},\"fast_recoveries\":{},\"rtos\":{}}}",
                q.name,
                q.utilization,
                q.sojourn_mean,
                q.sojourn_p99,
                drops / span,
                total("fast_recoveries"),
                total("rtos")
            );
        }
    }
    out!(
        "{{\"scenario\":\"{}\",\"sim_seconds\":{},\"events\":{},\"bottleneck_packets\":{},\"packets_created\":{},\"build_seconds\":{:.4},\"wall_seconds\":{:.4},\"packets_per_second\":{:.0},\"events_per_second\":{:.0},\"loop_cpu_seconds\":{:.4},\"packets_per_cpu_second\":{:.0}}}",
        args[1],
        sim_s,
        sim.events_processed,
        bottleneck,
        sim.net.created_pkts(),
        build,
        wall,
        bottleneck as f64 / wall.max(1e-9),
        sim.events_processed as f64 / wall.max(1e-9),
        loop_cpu,
        bottleneck as f64 / loop_cpu.max(1e-9)
    );
}

/// With `--features event-stats`: the events by kind and the TCP timers' outcomes, one
/// JSON line on stderr.
fn print_event_stats() {
    #[cfg(feature = "event-stats")]
    {
        let parts: Vec<String> = aqmlab_core::event::stats::snapshot()
            .iter()
            .map(|(n, c)| format!("\"{n}\":{c}"))
            .collect();
        eprintln!("{{\"event_stats\":{{{}}}}}", parts.join(","));
    }
}

/// CPU time this thread has run, from the scheduler's nanosecond account (Linux
/// `/proc/thread-self/schedstat`, first field); NaN elsewhere.
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(f64::NAN, |ns| ns as f64 * 1e-9)
}
