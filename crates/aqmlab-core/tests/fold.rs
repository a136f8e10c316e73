//! Folded arrivals (`link::fold_arrivals`): a packet crossing a router onto a link that
//! only its incoming link feeds, and that is idle with an empty FIFO when it gets there,
//! takes no arrival event at the router. The results must be those of the ordinary path
//! (an `Arrive` at every hop): the same packets at the same instants, the same statistics.
//! Folding only moves the far arrival's insertion number earlier, so a run whose events
//! never share a nanosecond in a way that matters is bit-identical; these cases are.

use aqmlab_core::{Scenario, Simulator};

/// (results as text without the wall clock and the event count, events processed)
fn run(text: &str, seed: u64, fold: bool) -> (String, u64) {
    let sc = Scenario::from_toml_str(text).unwrap();
    let mut sim = Simulator::new(&sc, seed).unwrap();
    if !fold {
        sim = sim.without_folding();
    }
    sim.run();
    let r = sim.results();
    (format!("{:#?}", r.without_timing()), r.events)
}

/// Runs `text` both ways: returns the events with and without folding after checking
/// that the results are identical (the first differing lines are printed otherwise).
fn same_both_ways(name: &str, text: &str, seed: u64) -> (u64, u64) {
    let (folded, ev_fold) = run(text, seed, true);
    let (plain, ev_plain) = run(text, seed, false);
    if folded != plain {
        let diff: Vec<String> = folded
            .lines()
            .zip(plain.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(8)
            .map(|(i, (a, b))| format!("line {i}: folded {a:?} / ordinary {b:?}"))
            .collect();
        panic!("{name}: folding changed the results:\n{}", diff.join("\n"));
    }
    (ev_fold, ev_plain)
}

/// Runs `text` sliced as the Python binding runs it (100 `run_until` slices): the same
/// results, event count included, as one `run()` — folding looks ahead to the run's end
/// whatever the slice. Packet conservation is checked too where segmentation does not
/// make packets (`gso` off).
fn sliced_equals_whole(text: &str, seed: u64, conserve: bool) {
    let sc = Scenario::from_toml_str(text).unwrap();
    let mut whole = Simulator::new(&sc, seed).unwrap();
    whole.run();
    let mut sliced = Simulator::new(&sc, seed).unwrap();
    let end = sliced.end.as_nanos();
    for k in 1..=100u64 {
        sliced.run_until(aqmlab_core::SimTime::from_nanos(
            end / 100 * k + if k == 100 { end % 100 } else { 0 },
        ));
    }
    let (a, b) = (whole.results(), sliced.results());
    assert_eq!(a.events, b.events);
    assert_eq!(
        format!("{:?}", a.without_timing()),
        format!("{:?}", b.without_timing())
    );
    if conserve {
        sliced.check_conservation().unwrap();
    }
}

/// The ns-2 comparison's shape: NewReno/Sack flows over RED on a 10 Mbit/s dumbbell
/// with 1 Gbit/s access links — data and ACKs fold into the hosts' access links.
const RED_DUMBBELL: &str = r#"
[run]
duration = "6s"
warmup = "1s"
noise = false
[dumbbell]
pairs = 4
rate = "10Mbit"
delay = "5ms"
access_rate = "1Gbit"
client_delays = ["1ms", "2ms", "3ms", "4ms"]
qdisc = { kind = "red", variant = "ns2", min = 5, max = 15, limit = 100 }
[tcp]
stack = "ns2-sack1"
[[flow]]
kind = "bulk"
from = "client{i}"
to = "server{i}"
count = 4
"#;

/// The residential study's shape: a 1 Gbit/s wire per direction shaped by tbf (lazy
/// wake-up), PIE, CUBIC RRUL with UDP probes, host jitter on (the default noise).
const TBF_RRUL: &str = r#"
[run]
duration = "4s"
[tcp]
stack = "linux-3.14"
cc = "cubic"
[dumbbell]
pairs = 1
rate = "1Gbit"
delay = "10ms"
overhead = 14
[dumbbell.up.shaper]
kind = "tbf"
rate = "20Mbit"
[dumbbell.down.shaper]
kind = "tbf"
rate = "20Mbit"
[dumbbell.qdisc]
kind = "pie"
[[flow]]
kind = "rrul_be"
from = "client0"
to = "server0"
udp_probes = 1
"#;

/// A chain: each router's link onward is fed by the link before it alone, so a packet
/// folds across two routers (r1 and r2) in one go, with GSO skbs segmented on the
/// sender's link.
const CHAIN_GSO: &str = r#"
[run]
duration = "4s"
noise = false
[tcp]
stack = "linux"
gso = "on"
[[node]]
name = "h0"
kind = "host"
[[node]]
name = "r0"
kind = "router"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "r2"
kind = "router"
[[node]]
name = "h1"
kind = "host"
[[link]]
from = "h0"
to = "r0"
rate = "1Gbit"
delay = "1ms"
[[link]]
from = "r0"
to = "r1"
rate = "20Mbit"
delay = "5ms"
qdisc = { kind = "codel" }
[[link]]
from = "r1"
to = "r2"
rate = "100Mbit"
delay = "2ms"
[[link]]
from = "r2"
to = "h1"
rate = "1Gbit"
delay = "1ms"
[[flow]]
kind = "bulk"
from = "h0"
to = "h1"
count = 2
[[flow]]
kind = "ping"
from = "h1"
to = "h0"
interval = "20ms"
"#;

#[test]
fn red_dumbbell_folds_with_identical_results() {
    let (fold, plain) = same_both_ways("red", RED_DUMBBELL, 3);
    // one arrival event fewer for nearly every packet: each crosses three hops and
    // folds into the last
    assert!(
        (fold as f64) < 0.8 * plain as f64,
        "events {fold} folded vs {plain} ordinary"
    );
    sliced_equals_whole(RED_DUMBBELL, 3, true);
}

#[test]
fn tbf_shaped_rrul_folds_with_identical_results() {
    let (fold, plain) = same_both_ways("tbf rrul", TBF_RRUL, 1);
    assert!(
        (fold as f64) < 0.85 * plain as f64,
        "events {fold} folded vs {plain} ordinary"
    );
}

#[test]
fn a_chain_of_routers_folds_across_several_hops() {
    let (fold, plain) = same_both_ways("chain", CHAIN_GSO, 2);
    // five hops each way; r0->r1 feeds r1->r2 feeds r2->h1 (and back: r2->r1 feeds
    // r1->r0 feeds r0->h0): two of the five arrivals fold
    assert!(
        (fold as f64) < 0.75 * plain as f64,
        "events {fold} folded vs {plain} ordinary"
    );
    sliced_equals_whole(CHAIN_GSO, 2, false);
}

#[test]
fn a_link_fed_by_two_links_does_not_fold() {
    // server0 -> server1 traffic enters router_b -> server1 from server0's access link
    // as well as from the bottleneck: no link folds into it, and only client1's link
    // (fed by the bottleneck alone) and the other side's take folded packets
    let text = r#"
[run]
duration = "3s"
noise = false
[dumbbell]
pairs = 2
rate = "10Mbit"
delay = "5ms"
[[flow]]
kind = "bulk"
from = "client0"
to = "server1"
[[flow]]
kind = "bulk"
from = "server0"
to = "server1"
"#;
    let (fold, plain) = same_both_ways("two feeders", text, 1);
    // client0's ACKs still fold into router_a -> client0 (fed by bottleneck_down alone),
    // but the data into server1 does not
    assert!(fold < plain, "events {fold} folded vs {plain} ordinary");
    assert!(
        (fold as f64) > 0.8 * plain as f64,
        "too many folds for a link with two feeders: {fold} vs {plain}"
    );
}
