//! Behavioural smoke tests of the flow-queueing qdiscs with unresponsive traffic (CBR),
//! end to end through scenario parsing, the simulator and the results:
//! - a sparse ping next to an overloading CBR flow sees its base RTT plus at most about
//!   one packet time under fq_codel/fq_nocodel/sfq/drr, but the full buffer drain time
//!   under a FIFO;
//! - two overloading CBR flows of different rates split the link evenly under drr, sfq
//!   and fq_codel, but in proportion to their rates under a FIFO.

use aqmlab_core::{run_scenario, RunResult, Scenario};

/// 1514 frame bytes at 10 Mbit/s.
const PKT_TIME: f64 = 1514.0 * 8.0 / 10e6;

fn run(qdisc: &str, flows: &str) -> RunResult {
    let text = format!(
        r#"
[run]
noise = false
duration = "6s"
warmup = "2s"

[dumbbell]
pairs = 2
rate = "10Mbit"
delay = "10ms"
qdisc = {qdisc}

{flows}
"#
    );
    let sc = Scenario::from_toml_str(&text).unwrap_or_else(|e| panic!("{qdisc}: {e:?}"));
    run_scenario(&sc, 7).unwrap()
}

const PING: &str = r#"
[[flow]]
name = "ping"
kind = "ping"
from = "client1"
to = "server1"
interval = "50ms"
"#;

const CBR_OVERLOAD: &str = r#"
[[flow]]
name = "bulk"
kind = "cbr"
from = "client0"
to = "server0"
rate = "20Mbit"
"#;

fn rtt(r: &RunResult, key: &str) -> f64 {
    r.extra("ping", key).expect("ping summary")
}

#[test]
fn flow_queueing_isolates_a_sparse_ping_from_an_overload() {
    // Base RTT: the same path without the overload.
    let idle = run("{ kind = \"fifo\", limit = 100 }", PING);
    let base = rtt(&idle, "rtt_max");
    assert!(
        (rtt(&idle, "rtt_min") - base).abs() < 1e-6,
        "an idle path has a constant RTT"
    );

    let fifo = run(
        "{ kind = \"fifo\", limit = 100 }",
        &format!("{CBR_OVERLOAD}{PING}"),
    );
    // A full 100-packet FIFO adds its drain time: 100 × 1.2112 ms ≈ 121 ms.
    let added = rtt(&fifo, "rtt_mean") - base;
    assert!(
        added > 0.95 * 100.0 * PKT_TIME && added < 1.05 * 101.0 * PKT_TIME,
        "fifo added {added}"
    );

    for q in [
        "{ kind = \"fq_codel\" }",
        "{ kind = \"fq_nocodel\", limit = 127 }",
        "{ kind = \"sfq\" }",
        "{ kind = \"drr\" }",
    ] {
        let r = run(q, &format!("{CBR_OVERLOAD}{PING}"));
        // The ping waits at most for the CBR packet being serialised (new-flow priority
        // or the next round-robin turn): never more than two packet times.
        let worst = rtt(&r, "rtt_max") - base;
        assert!(
            (0.0..2.0 * PKT_TIME).contains(&worst),
            "{q}: ping added up to {worst}"
        );
        assert_eq!(r.extra("ping", "loss_rate"), Some(0.0), "{q}");
        // The link stays saturated by the overload.
        let util = r
            .queue("bottleneck_up")
            .expect("bottleneck queue")
            .utilization;
        assert!(util > 0.99, "{q}: utilisation {util}");
    }
}

#[test]
fn schedulers_split_the_link_evenly_between_unequal_overloads() {
    let flows = r#"
[[flow]]
name = "slow"
kind = "cbr"
from = "client0"
to = "server0"
rate = "8Mbit"

[[flow]]
name = "fast"
kind = "cbr"
from = "client1"
to = "server1"
rate = "20Mbit"
"#;
    // Payload capacity: 10 Mbit/s × 1472/1514 (UDP payload per frame).
    let capacity = 10e6 * 1472.0 / 1514.0;
    let goodputs = |r: &RunResult| {
        (
            r.flow("slow").unwrap().goodput_bps,
            r.flow("fast").unwrap().goodput_bps,
        )
    };

    let (s, f) = goodputs(&run("{ kind = \"fifo\", limit = 100 }", flows));
    // A FIFO shares in proportion to the offered load, 8 : 20.
    assert!((f / s - 20.0 / 8.0).abs() < 0.25, "fifo split {s} / {f}");

    for q in [
        "{ kind = \"drr\" }",
        "{ kind = \"sfq\" }",
        "{ kind = \"fq_codel\" }",
        "{ kind = \"fq_nocodel\", limit = 127 }",
    ] {
        let (s, f) = goodputs(&run(q, flows));
        assert!((s - f).abs() / (s + f) < 0.02, "{q}: split {s} / {f}");
        assert!(
            (s + f) / capacity > 0.99,
            "{q}: total {} of {capacity}",
            s + f
        );
    }
}

#[test]
fn shipped_fq_codel_example_runs_as_described() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/fq_codel_isolation.toml");
    let sc = Scenario::from_file(&path).unwrap();
    let r = run_scenario(&sc, 1).unwrap();
    // Idle-path RTT: 2 × 10 ms plus serialisation of the 84-byte ping on each link,
    // plus up to one host jitter at each end host (the example runs with noise on).
    let added = rtt(&r, "rtt_max") - 0.020;
    let host = 2.0 * aqmlab_core::scenario::NoiseConfig::DEFAULT_HOST_JITTER.as_secs_f64();
    assert!(
        added > 0.0 && added < 0.0002 + PKT_TIME + host,
        "ping added up to {added}"
    );
    let stats = r.queue("bottleneck_up").unwrap();
    assert!(stats.dropped > 0 && stats.utilization > 0.99);
}
