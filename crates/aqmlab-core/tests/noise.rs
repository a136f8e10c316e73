//! Run-to-run variability (`[run]` noise, start_jitter, host_jitter): the seed changes
//! runs by default, each mechanism stays within its documented bounds, `noise = false`
//! removes it, and the same (scenario, seed) is still bit-identical.

use aqmlab_core::scenario::NoiseConfig;
use aqmlab_core::time::Rate;
use aqmlab_core::{run_scenario, RunResult, Scenario, Simulator};

fn sc(text: &str) -> Scenario {
    Scenario::from_toml_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn run(text: &str, seed: u64) -> RunResult {
    let mut r = run_scenario(&sc(text), seed).unwrap();
    r.wall_seconds = 0.0;
    r
}

/// Four TCP flows and a ping through CoDel: nothing in the model itself is random, so
/// any difference between seeds comes from the noise mechanisms.
const TCP: &str = r#"
[run]
duration = "4s"
warmup = "1s"
[dumbbell]
pairs = 2
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "codel" }
[[flow]]
kind = "bulk"
count = 3
from = "client0"
to = "server0"
[[flow]]
name = "ping"
kind = "ping"
from = "client1"
to = "server1"
interval = "50ms"
"#;

fn goodputs(r: &RunResult) -> Vec<f64> {
    r.flows.iter().map(|f| f.goodput_bps).collect()
}

#[test]
fn same_seed_is_identical_and_different_seeds_differ() {
    let a = run(TCP, 1);
    let b = run(TCP, 1);
    assert_eq!(format!("{a:?}"), format!("{b:?}"), "same (scenario, seed)");
    let gs: Vec<Vec<f64>> = (1..=4).map(|s| goodputs(&run(TCP, s))).collect();
    for i in 0..gs.len() {
        for j in i + 1..gs.len() {
            assert_ne!(
                gs[i],
                gs[j],
                "seeds {} and {} gave the same goodputs",
                i + 1,
                j + 1
            );
        }
    }
    // ... but the spread is that of repeated runs, not of different experiments: the
    // link stays full, the total goodput within a few percent.
    let totals: Vec<f64> = gs.iter().map(|g| g[..3].iter().sum()).collect();
    let lo = totals.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = totals.iter().cloned().fold(0.0, f64::max);
    assert!(hi / lo < 1.05, "totals {totals:?}");
}

#[test]
fn noise_off_makes_the_seed_irrelevant_where_the_model_has_no_randomness() {
    let quiet = TCP.replace("[run]\n", "[run]\nnoise = false\n");
    let a = run(&quiet, 1);
    let b = run(&quiet, 2);
    assert_eq!(goodputs(&a), goodputs(&b));
    assert_eq!(a.packets_created, b.packets_created);
    // every flow starts exactly at 0
    assert!(a.flows.iter().all(|f| f.start == 0.0));
}

#[test]
fn start_jitter_applies_only_to_flows_without_start_or_spread() {
    let text = r#"
[run]
duration = "10s"
[dumbbell]
pairs = 4
rate = "10Mbit"
[[flow]]
name = "free"
kind = "bulk"
count = 20
from = "client0"
to = "server0"
[[flow]]
name = "pinned"
kind = "bulk"
from = "client1"
to = "server1"
start = "0s"
[[flow]]
name = "late"
kind = "bulk"
from = "client2"
to = "server2"
start = "5s"
[[flow]]
name = "spread"
kind = "rrul"
from = "client3"
to = "server3"
start_spread = "1s"
"#;
    let starts = |seed: u64| -> Vec<(String, f64)> {
        let sim = Simulator::new(&sc(text), seed).unwrap();
        sim.flows
            .iter()
            .map(|f| (f.name.clone(), f.start.as_secs_f64()))
            .collect()
    };
    let s1 = starts(1);
    let free: Vec<f64> = s1
        .iter()
        .filter(|(n, _)| n.starts_with("free"))
        .map(|x| x.1)
        .collect();
    assert_eq!(free.len(), 20);
    let window = NoiseConfig::DEFAULT_START_JITTER.as_secs_f64();
    assert!(free.iter().all(|&t| (0.0..window).contains(&t)), "{free:?}");
    let mut distinct = free.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    assert_eq!(distinct.len(), 20, "each instance draws its own start");
    // an explicit start is kept exactly
    let get = |v: &[(String, f64)], n: &str| v.iter().find(|x| x.0 == n).unwrap().1;
    assert_eq!(get(&s1, "pinned"), 0.0);
    assert_eq!(get(&s1, "late"), 5.0);
    // start_spread keeps its meaning: one draw per instance, shared by a composite's flows
    let rrul: Vec<f64> = s1
        .iter()
        .filter(|(n, _)| n.starts_with("spread."))
        .map(|x| x.1)
        .collect();
    assert!(rrul.len() > 8 && rrul.iter().all(|&t| t == rrul[0] && t < 1.0));
    // another seed, other draws
    assert_ne!(s1, starts(2));
    // a custom window, and noise = false
    let custom = text.replace("[run]\n", "[run]\nstart_jitter = \"2s\"\n");
    let sim = Simulator::new(&sc(&custom), 1).unwrap();
    let max = sim
        .flows
        .iter()
        .filter(|f| f.name.starts_with("free"))
        .map(|f| f.start.as_secs_f64())
        .fold(0.0, f64::max);
    assert!(max > 0.1 && max < 2.0, "{max}");
    let off = text.replace("[run]\n", "[run]\nnoise = false\n");
    let sim = Simulator::new(&sc(&off), 1).unwrap();
    assert!(sim
        .flows
        .iter()
        .filter(|f| f.name.starts_with("free"))
        .all(|f| f.start.as_secs_f64() == 0.0));
}

#[test]
fn start_jitter_leaves_a_short_flow_half_its_span() {
    let text = r#"
[run]
duration = "10s"
[dumbbell]
rate = "10Mbit"
[[flow]]
kind = "cbr"
count = 50
from = "client0"
to = "server0"
rate = "1Mbit"
stop = "20ms"
"#;
    let sim = Simulator::new(&sc(text), 3).unwrap();
    for f in &sim.flows {
        assert!(f.start.as_secs_f64() < 0.010, "{}", f.start.as_secs_f64());
    }
}

/// A run shorter than the default start jitter (100 ms) is valid: the default is capped
/// at half of each flow's span, so its flows start in the first half of the run; only a
/// jitter the user wrote must be shorter than the run.
#[test]
fn a_run_shorter_than_the_default_start_jitter_is_valid() {
    let text = r#"
[run]
duration = "50ms"
[dumbbell]
rate = "10Mbit"
[[flow]]
kind = "ping"
count = 20
from = "client0"
to = "server0"
interval = "5ms"
"#;
    let sim = Simulator::new(&sc(text), 1).unwrap();
    assert!(sim.flows.iter().all(|f| f.start.as_secs_f64() < 0.025));
    assert!(sim.flows.iter().any(|f| f.start.as_secs_f64() > 0.0));
    let r = run(text, 1);
    assert!(r.flows.iter().all(|f| f.delivered_pkts > 0));
    let e = Scenario::from_toml_str(&text.replace(
        "[run]
",
        "[run]
start_jitter = \"100ms\"
",
    ))
    .unwrap()
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "run.start_jitter");
}

/// An idle path: a ping's RTT is exact without noise; with host jitter every sample
/// lies in [exact, exact + 2 × host_jitter] (one draw at each end host) and the mean
/// is exact + host_jitter (two uniform draws of mean host_jitter / 2).
#[test]
fn host_jitter_is_bounded_and_adds_its_mean_to_an_idle_rtt() {
    let text = |run: &str| {
        format!(
            r#"
[run]
duration = "60s"
{run}
[dumbbell]
rate = "10Mbit"
delay = "5ms"
access_delay = "1ms"
[[flow]]
kind = "ping"
from = "client0"
to = "server0"
interval = "10ms"
start = "0s"
"#
        )
    };
    let access = Rate::from_bps(1_000_000_000);
    let bottleneck = Rate::from_bps(10_000_000);
    let frame = 84 + 14;
    let exact = (2 * (2 * access.tx_time(frame).as_nanos() + bottleneck.tx_time(frame).as_nanos())
        + 2 * 7_000_000) as f64
        * 1e-9;
    let quiet = run(&text("noise = false"), 1);
    for (_, rtt) in quiet.flow_samples(0, "rtt") {
        assert!((rtt - exact).abs() < 1e-12);
    }
    let j = 1e-3;
    let r = run(&text("host_jitter = \"1ms\""), 1);
    let s: Vec<f64> = r.flow_samples(0, "rtt").iter().map(|x| x.1).collect();
    assert!(s.len() > 5000);
    for &rtt in &s {
        assert!(
            rtt >= exact - 1e-12 && rtt <= exact + 2.0 * j + 1e-12,
            "{rtt} vs {exact}"
        );
    }
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    // sd of the mean: sqrt(2 / 12) ms / sqrt(n) ≈ 0.005 ms
    assert!(
        (mean - exact - j).abs() < 0.03e-3,
        "mean {mean}, exact {exact}"
    );
    // the default (50 µs) costs an idle round trip 50 µs on average
    let d = run(&text(""), 1);
    let s: Vec<f64> = d.flow_samples(0, "rtt").iter().map(|x| x.1).collect();
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    let dj = NoiseConfig::DEFAULT_HOST_JITTER.as_secs_f64();
    assert!(
        (mean - exact - dj).abs() < 3e-6,
        "mean {mean}, exact {exact}"
    );
}

/// Host jitter must not reorder a flow: a TCP sender's back-to-back 1 Gbit/s segments
/// (12 µs apart) with 1 ms of jitter still arrive in sequence — a reordered segment
/// would raise duplicate ACKs and a spurious fast retransmit on a loss-free path.
#[test]
fn host_jitter_never_reorders() {
    let text = r#"
[run]
duration = "2s"
host_jitter = "1ms"
[dumbbell]
rate = "10Gbit"
access_rate = "1Gbit"
access_qdisc = { kind = "fifo", limit = 100000 }
delay = "1ms"
[[flow]]
kind = "bulk"
from = "client0"
to = "server0"
"#;
    let r = run(text, 7);
    let f = r.flow("bulk0").unwrap();
    assert_eq!(f.lost_pkts, 0);
    // no dupacks without losses: a reordered segment would trigger them
    let retrans = r.extra("bulk0", "retransmits").unwrap_or(0.0);
    assert_eq!(retrans, 0.0, "{:?}", f.extra);
    assert!(
        f.goodput_bps > 0.9e9 * 1448.0 / 1514.0 * 0.9,
        "{}",
        f.goodput_bps
    );
}

#[test]
fn noise_keys_are_checked() {
    let base = "[dumbbell]\nrate = \"1Mbit\"\n";
    let err = |run: &str| {
        Scenario::from_toml_str(&format!("[run]\n{run}\n{base}"))
            .unwrap()
            .validate()
            .unwrap_err()
    };
    let e = err("noise = false\nhost_jitter = \"10us\"");
    assert_eq!(e.field, "run.host_jitter");
    assert!(e.message.contains("noise = false"), "{e}");
    let e = err("host_jitter = \"2s\"");
    assert_eq!(e.field, "run.host_jitter");
    assert!(e.message.contains("0 to 1s"), "{e}");
    let e = err("start_jitter = \"20s\"");
    assert_eq!(e.field, "run.start_jitter");
    // zero jitter with noise off is allowed (it says the same thing)
    Scenario::from_toml_str(&format!(
        "[run]\nnoise = false\nstart_jitter = \"0s\"\n{base}"
    ))
    .unwrap()
    .validate()
    .unwrap();
    let e = Scenario::from_toml_str(&format!("[run]\nnoise = \"off\"\n{base}")).unwrap_err();
    assert_eq!(e.field, "run.noise");
}

/// fq_codel's hash salt comes from the seed (Linux draws a random perturbation when the
/// qdisc is created): with 8 buckets and 6 flows, which flows collide — and so the
/// per-flow split — changes with the seed even with noise off.
#[test]
fn the_seed_drives_the_flow_hash_salt() {
    let text = r#"
[run]
duration = "3s"
warmup = "1s"
noise = false
[dumbbell]
pairs = 6
rate = "10Mbit"
qdisc = { kind = "fq_codel", flows = 8 }
[[flow]]
kind = "cbr"
count = 6
from = "client{i}"
to = "server{i}"
rate = "5Mbit"
"#;
    let splits: Vec<Vec<u64>> = (1..=6)
        .map(|s| {
            run(text, s)
                .flows
                .iter()
                .map(|f| (f.goodput_bps / 1e5).round() as u64)
                .collect()
        })
        .collect();
    let mut distinct = splits.clone();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() >= 3, "{splits:?}");
}
