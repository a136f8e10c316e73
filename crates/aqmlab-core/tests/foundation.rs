//! Foundation behaviour: analytical queueing results, exact idle-path RTTs, packet
//! conservation, determinism and bad-input errors.

use aqmlab_core::qdisc::Qdisc;
use aqmlab_core::time::Rate;
use aqmlab_core::{run_scenario, Scenario, SimTime, Simulator};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text).unwrap_or_else(|e| panic!("{e}"))
}

fn example(name: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    Scenario::from_file(&path).unwrap()
}

#[test]
fn overloaded_fifo_standing_delay_is_buffer_over_rate() {
    let sc = example("fifo_overload.toml");
    let r = run_scenario(&sc, 1).unwrap();
    let q = r.queue("bottleneck_up").unwrap();
    // 100 packets of 1500 + 14 bytes at 10 Mbit/s.
    let expected = 100.0 * 1514.0 * 8.0 / 10e6;
    assert!(
        (q.sojourn_mean - expected).abs() / expected < 0.01,
        "mean sojourn {} vs {}",
        q.sojourn_mean,
        expected
    );
    assert!(q.utilization >= 0.999, "utilisation {}", q.utilization);
    let loss = r.extra("cbr0", "loss_rate").unwrap();
    // Offered 20 Mbit/s of 1500-byte packets, served 10 Mbit/s of 1514-byte frames.
    let expected_loss = 1.0 - (10e6 / (1514.0 * 8.0)) / (20e6 / (1500.0 * 8.0));
    assert!(
        (loss - expected_loss).abs() < 0.01,
        "loss {loss} vs {expected_loss}"
    );
    assert_eq!(q.drops_by_reason, vec![("overlimit", q.dropped)]);
    // The goodput is the bottleneck rate less framing and UDP/IP headers.
    let f = r.flow("cbr0").unwrap();
    let expected_goodput = 10e6 * 1472.0 / 1514.0;
    assert!(
        (f.goodput_bps - expected_goodput).abs() / expected_goodput < 0.005,
        "goodput {}",
        f.goodput_bps
    );
}

#[test]
fn idle_path_ping_rtt_is_exact() {
    let mut sc = example("ping_rtts.toml");
    sc.run.noise = false; // exact: no start or host jitter
    let r = run_scenario(&sc, 1).unwrap();
    let access = Rate::from_bps(1_000_000_000);
    let bottleneck = Rate::from_bps(10_000_000);
    let frame = 84 + 14;
    let ser = 2 * (2 * access.tx_time(frame).as_nanos() + bottleneck.tx_time(frame).as_nanos());
    for (i, d_ms) in [5u64, 15, 50].iter().enumerate() {
        let prop = 2 * (2 * d_ms + 5) * 1_000_000;
        let expected = prop + ser;
        let samples = r.flow_samples(i as u32, "rtt");
        // One probe every 200 ms; replies arriving after the 10 s end are not counted.
        let answered = (0..50u64)
            .filter(|k| k * 200_000_000 + expected <= 10_000_000_000)
            .count();
        assert_eq!(samples.len(), answered);
        for (_, rtt) in samples {
            assert_eq!((rtt * 1e9).round() as u64, expected, "flow {i}");
        }
        // Nothing is dropped on an idle path: replies still on their way when the run
        // ends are not losses (they once showed as 2 % loss with 0 packets lost).
        let f = &r.flows[i];
        assert_eq!(f.lost_pkts, 0);
        assert_eq!(r.extra(&f.name, "loss_rate"), Some(0.0), "flow {}", f.name);
    }
}

const MIXED: &str = r#"
[run]
duration = "5s"
[dumbbell]
pairs = 3
rate = "5Mbit"
delay = "10ms"
client_delays = ["1ms", "20ms", "40ms"]
qdisc = { kind = "fifo", limit = "30KB" }
[dumbbell.down]
loss = 0.01
[[flow]]
kind = "cbr"
count = 3
from = "client{i}"
to = "server{i}"
rate = "3Mbit"
size = 1000
start_spread = "1s"
[[flow]]
kind = "cbr"
count = 3
from = "server{i}"
to = "client{i}"
rate = "2Mbit"
size = 700
start_spread = "1s"
[[flow]]
kind = "udp_rr"
from = "client1"
to = "server2"
interval = "50ms"
"#;

#[test]
fn packets_are_conserved_at_every_step() {
    let sc = scenario(MIXED);
    let mut sim = Simulator::new(&sc, 7).unwrap();
    let mut t = SimTime::ZERO;
    while t < sim.end {
        t += aqmlab_core::SimDuration::from_millis(137);
        sim.run_until(t.min(sim.end));
        sim.check_conservation().unwrap();
    }
    assert!(sim.net.dropped_pkts > 0, "the scenario must exercise drops");
    assert!(
        sim.net.links.iter().any(|l| l.stats.wire_drops > 0),
        "and wire losses"
    );
    assert!(
        sim.packets_in_network() > 0,
        "and end with packets in flight"
    );
    let r = sim.results();
    // Drops attributed to flows add up to all drops.
    let lost: u64 = r.flows.iter().map(|f| f.lost_pkts).sum();
    assert_eq!(lost, r.packets_dropped);
    for q in &r.queues {
        let link = &sim.net.links[q.id as usize];
        link.qdisc
            .stats()
            .check(link.qdisc.len() as u64, link.qdisc.backlog_bytes())
            .unwrap();
    }
}

fn fingerprint(r: &aqmlab_core::RunResult) -> String {
    format!(
        "{:?}{:?}{:?}{:?}{}",
        r.flows, r.queues, r.series.value, r.samples.value, r.events
    )
}

#[test]
fn same_seed_same_result_different_seed_differs() {
    let sc = scenario(MIXED);
    let a = run_scenario(&sc, 11).unwrap();
    let b = run_scenario(&sc, 11).unwrap();
    let c = run_scenario(&sc, 12).unwrap();
    assert_eq!(fingerprint(&a), fingerprint(&b));
    assert_ne!(fingerprint(&a), fingerprint(&c));
    assert_ne!(
        a.flows[0].start, c.flows[0].start,
        "start_spread draws from the seed"
    );
}

fn err(text: &str) -> aqmlab_core::ScenarioError {
    match Scenario::from_toml_str(text) {
        Err(e) => e,
        Ok(sc) => match Simulator::new(&sc, 1) {
            Err(e) => e,
            Ok(_) => panic!("accepted bad scenario:\n{text}"),
        },
    }
}

const BASE: &str = "[dumbbell]\nrate = \"10Mbit\"\n";

#[test]
fn bad_input_names_the_field() {
    let cases: &[(&str, &str, &str)] = &[
        ("[dumbbell\nrate = 1", "", "line"),
        (
            "[dumbbell]\nrate = \"10Mbit\"\nqdisc = { kind = \"fop\" }\n",
            "dumbbell.qdisc",
            "fifo",
        ),
        (
            "[dumbbell]\nrate = \"-10Mbit\"\n",
            "dumbbell.rate",
            "positive",
        ),
        (
            "[dumbbell]\nrate = \"0Mbit\"\n",
            "dumbbell.rate",
            "positive",
        ),
        (
            "[dumbbell]\nrate = \"10Mbyte\"\n",
            "dumbbell.rate",
            "allowed",
        ),
        (
            "[dumbbell]\nrate = \"10Mbit\"\ndelay = \"5 fortnights\"\n",
            "dumbbell.delay",
            "allowed",
        ),
        (
            "[dumbbell]\nrate = \"10Mbit\"\nrat = 3\n",
            "dumbbell",
            "rat",
        ),
        (
            "[dumbbell]\nrate = \"10Mbit\"\nqdisc = { kind = \"fifo\", limit = -1 }\n",
            "dumbbell.qdisc",
            "limit",
        ),
        (
            "[run]\nduration = \"0s\"\n[dumbbell]\nrate = \"1Mbit\"\n",
            "run.duration",
            "positive",
        ),
        (
            "[dumbbell]\nrate = \"10Mbit\"\n[dumbbell.down]\nloss = 1.5\n",
            "dumbbell.down.loss",
            "probability",
        ),
        (
            "[dumbbell]\nrate = \"10Mbit\"\npairs = 2\nclient_delays = [\"1ms\"]\n",
            "dumbbell.client_delays",
            "per pair",
        ),
    ];
    for (text, field, needle) in cases {
        let e = err(text);
        assert!(
            e.field.starts_with(field),
            "{text:?}: field {:?} (message {})",
            e.field,
            e.message
        );
        assert!(e.to_string().contains(needle), "{text:?}: {e}");
        assert!(!e.to_string().contains('\n'), "one line: {e}");
    }
    // Flow errors.
    let flow_cases: &[(&str, &str, &str)] = &[
        ("[[flow]]\nkind = \"cbr\"\nfrom = \"client0\"\nto = \"server9\"\nrate = \"1Mbit\"\n", "flow[0].to", "unknown node"),
        ("[[flow]]\nkind = \"cbr\"\nfrom = \"client0\"\nto = \"router_b\"\nrate = \"1Mbit\"\n", "flow[0].to", "router"),
        ("[[flow]]\nkind = \"warp\"\nfrom = \"client0\"\nto = \"server0\"\n", "flow", "cbr"),
        ("[[flow]]\nkind = \"cbr\"\nfrom = \"client0\"\nto = \"server0\"\nrate = \"1Mbit\"\nsize = 9\n", "flow[0].size", "29"),
        ("[[flow]]\nkind = \"cbr\"\nfrom = \"client0\"\nto = \"server0\"\nrate = \"1Mbit\"\nsiz = 9\n", "flow", "siz"),
        ("[[flow]]\nkind = \"ping\"\nfrom = \"client0\"\nto = \"server0\"\nstart = \"20s\"\n", "flow[0].start", "end of the run"),
    ];
    for (text, field, needle) in flow_cases {
        let e = err(&format!("{BASE}{text}"));
        assert!(
            e.field.starts_with(field),
            "{text:?}: field {:?} ({})",
            e.field,
            e.message
        );
        assert!(e.to_string().contains(needle), "{text:?}: {e}");
    }
}

#[test]
fn probe_with_no_route_is_rejected() {
    let text = r#"
[[node]]
name = "a"
kind = "host"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "island"
kind = "host"
[[link]]
from = "a"
to = "r"
rate = "10Mbit"
[[flow]]
kind = "ping"
from = "a"
to = "island"
"#;
    let e = err(text);
    assert_eq!(e.field, "flow[0].to");
    assert!(e.message.contains("no route"), "{e}");
    // A one-way link is enough for CBR but not for a probe that needs replies.
    let oneway = r#"
[[node]]
name = "a"
kind = "host"
[[node]]
name = "b"
kind = "host"
[[link]]
from = "a"
to = "b"
rate = "10Mbit"
duplex = false
[[flow]]
from = "a"
to = "b"
kind = KIND
"#;
    assert!(Simulator::new(
        &scenario(&oneway.replace("KIND", "\"cbr\"\nrate = \"1Mbit\"")),
        1
    )
    .is_ok());
    let e = err(&oneway.replace("KIND", "\"ping\""));
    assert!(e.message.contains("no route back"), "{e}");
}

#[test]
fn explicit_topology_routes_over_several_hops() {
    // a - r1 - r2 - b with a shortcut-free chain: RTT = 2 * (1+2+3) ms + serialisation.
    let text = r#"
[run]
noise = false
duration = "2s"
[[node]]
name = "a"
kind = "host"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "r2"
kind = "router"
[[node]]
name = "b"
kind = "host"
[[link]]
from = "a"
to = "r1"
rate = "100Mbit"
delay = "1ms"
[[link]]
from = "r1"
to = "r2"
rate = "100Mbit"
delay = "2ms"
[[link]]
from = "r2"
to = "b"
rate = "100Mbit"
delay = "3ms"
[[flow]]
kind = "ping"
from = "a"
to = "b"
"#;
    let r = run_scenario(&scenario(text), 1).unwrap();
    let ser = 6 * Rate::from_bps(100_000_000).tx_time(98).as_nanos();
    for (_, rtt) in r.flow_samples(0, "rtt") {
        assert_eq!((rtt * 1e9).round() as u64, 12_000_000 + ser);
    }
}

#[test]
fn voip_quality_drops_behind_a_bloated_fifo() {
    let base = r#"
[run]
noise = false
duration = "20s"
warmup = "2s"
[dumbbell]
rate = "10Mbit"
delay = "20ms"
qdisc = { kind = "fifo", limit = 500 }
[[flow]]
kind = "voip"
from = "client0"
to = "server0"
"#;
    let idle = run_scenario(&scenario(base), 1).unwrap();
    let loaded = run_scenario(&scenario(&format!("{base}[[flow]]\nkind = \"cbr\"\nfrom = \"client0\"\nto = \"server0\"\nrate = \"11Mbit\"\n")), 1).unwrap();
    let r_idle = idle.extra("voip0", "r_value").unwrap();
    let r_loaded = loaded.extra("voip0", "r_value").unwrap();
    // Idle: one-way delay = 20 ms + serialisation; mouth-to-ear adds 20 ms packetisation.
    let owd = idle.extra("voip0", "owd_mean").unwrap();
    assert!((owd - 0.0202).abs() < 0.0005, "idle owd {owd}");
    assert!(
        (r_idle - (94.2 - 0.024 * (owd * 1e3 + 20.0))).abs() < 0.01,
        "{r_idle}"
    );
    assert_eq!(idle.extra("voip0", "loss_rate").unwrap(), 0.0);
    // Loaded: ~500 x 1.21 ms of standing queue and loss: well below toll quality.
    let owd_l = loaded.extra("voip0", "owd_mean").unwrap();
    assert!(owd_l > 0.5, "loaded owd {owd_l}");
    assert!(
        r_loaded < 70.0 && r_loaded < r_idle - 20.0,
        "{r_loaded} vs {r_idle}"
    );
    assert!(loaded.extra("voip0", "loss_rate").unwrap() > 0.0);
    // One sample per packet; the last one (sent at 19.98 s) is still in flight at 20 s.
    assert_eq!(idle.flow_samples(0, "owd").len(), 999);
}

#[test]
fn base_rtt_is_the_round_trip_propagation_delay() {
    let r = run_scenario(&example("ping_rtts.toml"), 1).unwrap();
    for (i, d) in [5.0, 15.0, 50.0].iter().enumerate() {
        let expected = 2.0 * (2.0 * d + 5.0) * 1e-3;
        assert!(
            (r.flows[i].base_rtt - expected).abs() < 1e-12,
            "{} vs {}",
            r.flows[i].base_rtt,
            expected
        );
    }
}

#[test]
fn packet_trace_logs_every_packet_and_drop_inside_the_windows() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fifo_overload.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let sc = scenario(&text.replace(
        "[run]",
        "[run]\npacket_trace = [[\"5s\", \"6s\"], [\"10s\", \"10.5s\"]]",
    ));
    let r = run_scenario(&sc, 1).unwrap();
    let q = r.queue("bottleneck_up").unwrap().id;
    let pick = |metric: &str| -> Vec<(f64, f64)> {
        let m = r.metric_names.iter().position(|n| n == metric).unwrap() as u16;
        (0..r.samples.len())
            .filter(|&i| {
                r.samples.kind[i] == aqmlab_core::metrics::KIND_QUEUE
                    && r.samples.entity[i] == q
                    && r.samples.metric[i] == m
            })
            .map(|i| (r.samples.t[i], r.samples.value[i]))
            .collect()
    };
    let soj = pick("sojourn");
    let drops = pick("drop");
    // 10 Mbit/s of 1514-byte frames = 825.6 packets/s over 1.5 s of windows
    assert!(
        (soj.len() as f64 - 1.5 * 825.6).abs() <= 2.0,
        "{} sojourn samples",
        soj.len()
    );
    assert!(soj.iter().all(
        |&(t, v)| ((5.0..6.0).contains(&t) || (10.0..10.5).contains(&t))
            && (v - 0.121).abs() < 0.002
    ));
    // half of the 1666.7 arrivals/s are dropped, all refused on arrival: a drop's value is
    // the time the packet spent in the qdisc
    assert!(
        (drops.len() as f64 - 1.5 * (1666.7 - 825.6)).abs() <= 3.0,
        "{} drops",
        drops.len()
    );
    assert!(drops.iter().all(|&(_, v)| v == 0.0));
    // every arrival logs the queue length it finds: the 100-packet FIFO is full or one
    // short (a departure just made room) at every arrival after the first second
    let qlen = pick("qlen");
    assert!(
        (qlen.len() as f64 - 1.5 * 1666.7).abs() <= 3.0,
        "{} qlen samples",
        qlen.len()
    );
    assert!(
        qlen.iter().all(|&(_, v)| v == 99.0 || v == 100.0),
        "{:?}",
        qlen.iter().find(|&&(_, v)| v != 99.0 && v != 100.0)
    );
    // no other link logs anything
    assert!(!r
        .samples
        .kind
        .iter()
        .zip(&r.samples.entity)
        .any(|(&k, &e)| k == aqmlab_core::metrics::KIND_QUEUE && e != q));
}

#[test]
fn packet_trace_drop_values_are_the_time_a_head_dropped_packet_waited() {
    // The same overload into CoDel: its drops take the head of a FIFO after it waited at
    // least `target` (CoDel drops nothing younger) and about as long as the packet sent
    // next (which arrived 0.6 ms later and leaves within a frame time, 1.2 ms); arrivals
    // refused at the 100-packet limit waited 0.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fifo_overload.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let sc = scenario(
        &text
            .replace("[run]", "[run]\npacket_trace = [[\"5s\", \"20s\"]]")
            .replace(
                "qdisc = { kind = \"fifo\", limit = 100 }",
                "qdisc = { kind = \"codel\", limit = 100 }",
            ),
    );
    let r = run_scenario(&sc, 1).unwrap();
    let q = r.queue("bottleneck_up").unwrap().id;
    let pick = |metric: &str| -> Vec<(f64, f64)> {
        let m = r.metric_names.iter().position(|n| n == metric).unwrap() as u16;
        (0..r.samples.len())
            .filter(|&i| {
                r.samples.kind[i] == aqmlab_core::metrics::KIND_QUEUE
                    && r.samples.entity[i] == q
                    && r.samples.metric[i] == m
            })
            .map(|i| (r.samples.t[i], r.samples.value[i]))
            .collect()
    };
    let soj = pick("sojourn");
    let drops = pick("drop");
    assert!(drops.iter().all(|&(_, v)| v == 0.0 || v >= 0.005));
    let head: Vec<(f64, f64)> = drops.iter().copied().filter(|&(_, v)| v > 0.0).collect();
    assert!(head.len() > 100, "{} head drops", head.len());
    for &(t, w) in &head {
        let next = soj.iter().find(|&&(ts, _)| ts >= t);
        if let Some(&(_, w2)) = next {
            assert!(
                (w - w2).abs() < 0.002,
                "dropped at {t} after {w} s, next sent after {w2} s"
            );
        }
    }
}
