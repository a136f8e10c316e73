//! A DOCSIS downstream's packets reach their cable modems without an arrival event of
//! their own when they are due at the instant their channel finishes them and nothing
//! else is due by then (`DocsisDown::owe_arrival`): the simulator makes the arrival right
//! after the channel's event instead. The results must be those of one arrival event
//! per packet (`DocsisDown::set_inline_arrivals(false)`): the same packets at the same instants
//! (every CBR packet's one-way delay, every TCP sender's state change, every packet's
//! sojourn in the CMTS queue inside a packet-trace window), the same statistics.

use aqmlab_core::link::Lower;
use aqmlab_core::{Scenario, Simulator};

/// (results as text without the wall clock and the event count, events processed)
fn run(text: &str, seed: u64, inline: bool) -> (String, u64) {
    let sc = Scenario::from_toml_str(text).unwrap();
    let mut sim = Simulator::new(&sc, seed).unwrap();
    if !inline {
        for l in &mut sim.net.links {
            if let Lower::Docsis(d) = &mut l.lower {
                d.set_inline_arrivals(false);
            }
        }
    }
    sim.run();
    sim.check_conservation().unwrap();
    let r = sim.results();
    (format!("{:#?}", r.without_timing()), r.events)
}

/// Runs `text` both ways, requires identical results and returns the events saved.
fn saved_events(name: &str, text: &str, seed: u64) -> u64 {
    let (inline, ev_inline) = run(text, seed, true);
    let (plain, ev_plain) = run(text, seed, false);
    if inline != plain {
        let diff: Vec<String> = inline
            .lines()
            .zip(plain.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(8)
            .map(|(i, (a, b))| format!("line {i}: inline {a:?} / one event each {b:?}"))
            .collect();
        panic!(
            "{name}: inline arrivals changed the results:\n{}",
            diff.join("\n")
        );
    }
    assert!(ev_inline <= ev_plain);
    ev_plain - ev_inline
}

/// Four bonded channels under CoDel; regulated tiers (one with a peak rate) and an
/// unregulated modem; TCP flows with traces, VoIP and two CBR flows of other sizes
/// started at the same instant (channels finishing at the same nanosecond, packets of
/// one modem resequenced behind a longer one), every packet's delay recorded.
fn cable(delay: &str) -> String {
    format!(
        r#"
[run]
duration = "4s"
warmup = "0s"
noise = false
packet_trace = [["1s", "2.5s"]]
[docsis]
modems = 6
channels = 4
delay = "{delay}"
servers = 4
server_delays = ["5ms", "12ms", "20ms", "8ms"]
downstream_qdisc = {{ kind = "codel" }}
[[docsis.tier]]
count = 3
max_rate = "40Mbit"
[[docsis.tier]]
count = 2
max_rate = "12Mbit"
peak_rate = "30Mbit"
[tcp]
trace = true
[[flow]]
kind = "bulk"
count = 4
from = "server{{i}}"
to = "cm{{i}}"
start_spread = "0.5s"
[[flow]]
kind = "bulk"
from = "server1"
to = "cm5"
[[flow]]
kind = "voip"
from = "server2"
to = "cm4"
[[flow]]
kind = "cbr"
count = 2
from = "server0"
to = "cm5"
rate = "9Mbit"
size = 700
record_delay = true
[[flow]]
kind = "cbr"
from = "server0"
to = "cm3"
rate = "7Mbit"
size = 1500
record_delay = true
"#
    )
}

#[test]
fn docsis_arrivals_without_events_give_identical_results() {
    let text = cable("0ms");
    let (r, _) = {
        let sc = Scenario::from_toml_str(&text).unwrap();
        let mut sim = Simulator::new(&sc, 1).unwrap();
        sim.run();
        let r = sim.results();
        (r, ())
    };
    let q = r.queue("docsis_down").unwrap();
    let carried = q.tx_pkts;
    for seed in [1, 2] {
        let saved = saved_events("cable", &text, seed);
        println!("seed {seed}: {saved} arrival events saved of {carried} packets carried (seed 1)");
        if seed == 1 {
            // most packets arrive with their channel's event (a few find another event
            // due at the same nanosecond and keep their own)
            assert!(
                saved * 10 > carried * 9 && saved <= carried,
                "{saved} saved, {carried} carried"
            );
        }
    }
}

/// With a propagation delay a packet keeps its arrival event, unless it was resequenced
/// behind the one ahead of it and arrives at the same instant: few events saved, and
/// the same results.
#[test]
fn docsis_arrivals_with_a_delay_keep_their_events() {
    let saved = saved_events("cable 2 ms", &cable("2ms"), 1);
    println!("2 ms: {saved} arrival events saved");
    assert!(saved > 0 && saved < 5_000, "{saved} of ~55,000 packets");
}

/// Run in slices (as the Python binding runs it), inline arrivals give the results and
/// the events of one `run()`.
#[test]
fn docsis_inline_arrivals_sliced_equal_whole() {
    let sc = Scenario::from_toml_str(&cable("0ms")).unwrap();
    let mut whole = Simulator::new(&sc, 3).unwrap();
    whole.run();
    let mut sliced = Simulator::new(&sc, 3).unwrap();
    let end = sliced.end.as_nanos();
    for k in 1..=50u64 {
        sliced.run_until(aqmlab_core::SimTime::from_nanos(
            end / 50 * k + if k == 50 { end % 50 } else { 0 },
        ));
    }
    let (a, b) = (whole.results(), sliced.results());
    assert_eq!(a.events, b.events);
    assert_eq!(
        format!("{:?}", a.without_timing()),
        format!("{:?}", b.without_timing())
    );
    sliced.check_conservation().unwrap();
}

/// `EventQueue::nothing_due_by`: pending events and the places of deferred pushes count,
/// up to and including the instant asked about.
#[test]
fn nothing_due_by_sees_events_and_deferred_places() {
    use aqmlab_core::event::{Event, EventQueue};
    let t = |ns| aqmlab_core::SimTime::from_nanos(ns);
    let mut q = EventQueue::new();
    assert!(q.nothing_due_by(t(0)));
    q.push(t(100), Event::TxDone(0));
    q.push(t(50), Event::FlowTimer { flow: 0, kind: 0 });
    assert!(q.nothing_due_by(t(49)));
    assert!(!q.nothing_due_by(t(50)));
    assert_eq!(
        q.pop(),
        Some((t(50), Event::FlowTimer { flow: 0, kind: 0 }))
    );
    assert!(q.nothing_due_by(t(99)));
    assert!(!q.nothing_due_by(t(100)));
    // a deferred push placed at 80 whose follow-up is due at 200
    q.defer(t(80), t(200), Event::TxDone(1));
    assert!(q.nothing_due_by(t(79)));
    assert!(!q.nothing_due_by(t(80)));
    assert_eq!(q.pop(), Some((t(100), Event::TxDone(0))));
    assert!(q.nothing_due_by(t(199)));
    assert!(!q.nothing_due_by(t(200)));
}
