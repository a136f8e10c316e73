//! CAKE end to end (scenario file → simulator → results):
//! - host fairness: host A with 1 TCP flow and host B with 8 share the bottleneck equally
//!   under `triple-isolate`, `dual-srchost` and `dual-dsthost`, but 1:8 under `flows`;
//! - the built-in shaper with overhead compensation holds the configured rate on the wire
//!   (frame bytes as the shaper counts them) within 1 % on a 10× faster link;
//! - with `bandwidth` on a 100 Mbit/s link, CAKE (not the link) is the bottleneck: the
//!   queue and its AQM stay in CAKE.

use aqmlab_core::{run_scenario, RunResult, Scenario};

fn run(text: &str) -> RunResult {
    let sc = Scenario::from_toml_str(text).unwrap_or_else(|e| panic!("{e:?}"));
    run_scenario(&sc, 3).unwrap()
}

fn goodput(r: &RunResult, prefix: &str) -> f64 {
    r.flows
        .iter()
        .filter(|f| f.name.starts_with(prefix))
        .map(|f| f.goodput_bps)
        .sum()
}

/// Host A (client0 → server0) sends one unresponsive flow, host B (client1 → server1)
/// eight, each at the link rate, so every queue stays backlogged and the shares are the
/// scheduler's alone (TCP's own dynamics cannot blur them).
fn hosts_run(isolation: &str) -> (f64, f64) {
    let text = format!(
        r#"
[run]
noise = false
duration = "10s"
warmup = "4s"

[dumbbell]
pairs = 2
rate = "10Mbit"
delay = "10ms"
qdisc = {{ kind = "cake", isolation = "{isolation}" }}

[[flow]]
name = "a"
kind = "cbr"
rate = "10Mbit"
from = "client0"
to = "server0"

[[flow]]
name = "b"
kind = "cbr"
rate = "10Mbit"
count = 8
from = "client1"
to = "server1"
"#
    );
    let r = run(&text);
    (goodput(&r, "a"), goodput(&r, "b"))
}

#[test]
fn host_isolation_gives_hosts_equal_shares_and_flows_mode_does_not() {
    for iso in ["triple-isolate", "dual-srchost", "dual-dsthost"] {
        let (a, b) = hosts_run(iso);
        let share = a / (a + b);
        assert!(
            (0.48..0.52).contains(&share),
            "{iso}: host A {a:.0} bit/s vs host B {b:.0} bit/s (share {share:.3})"
        );
        assert!(a + b > 9.0e6, "{iso}: link not used ({a} + {b})");
    }
    let (a, b) = hosts_run("flows");
    let share = a / (a + b);
    // Nine flows, one of them A's: 1/9 = 0.111.
    assert!(
        (0.10..0.125).contains(&share),
        "flows: host A {a:.0} vs host B {b:.0} (share {share:.3})"
    );
}

#[test]
fn shaper_holds_the_configured_rate_with_overhead_on_the_wire() {
    let r = run(r#"
[run]
noise = false
duration = "12s"
warmup = "2s"

[dumbbell]
pairs = 1
rate = "100Mbit"
delay = "5ms"
qdisc = { kind = "cake", bandwidth = "10Mbit", overhead = 18 }

[[flow]]
name = "flood"
kind = "cbr"
from = "client0"
to = "server0"
rate = "30Mbit"
size = 1000
"#);
    let q = r.queue("bottleneck_up").expect("bottleneck queue");
    let secs = r.duration - r.warmup;
    // The shaper charges each packet size + 18 bytes (the overhead replaces the link
    // header Linux would see).
    let wire = (q.tx_bytes + 18 * q.tx_pkts) as f64 * 8.0 / secs;
    assert!(
        (wire / 10e6 - 1.0).abs() < 0.01,
        "shaped wire rate {wire:.0} bit/s"
    );
    // The 100 Mbit/s link is mostly idle: CAKE, not the link, is the bottleneck.
    assert!(q.utilization < 0.12, "utilisation {}", q.utilization);
    assert!(q.dropped > 0);
    // The same run with `raw` (default) charges the link's 14-byte header instead.
    let r = run(r#"
[run]
noise = false
duration = "12s"
warmup = "2s"

[dumbbell]
pairs = 1
rate = "100Mbit"
delay = "5ms"
qdisc = { kind = "cake", bandwidth = "10Mbit" }

[[flow]]
name = "flood"
kind = "cbr"
from = "client0"
to = "server0"
rate = "30Mbit"
size = 1000
"#);
    let q = r.queue("bottleneck_up").unwrap();
    let wire = (q.tx_bytes + 14 * q.tx_pkts) as f64 * 8.0 / (r.duration - r.warmup);
    assert!((wire / 10e6 - 1.0).abs() < 0.01, "raw: {wire:.0} bit/s");
}

/// The example scenario: CAKE shaping a 100 Mbit/s link to a 20 Mbit/s VDSL2 line with
/// TCP: the queue (and its latency) stays in CAKE and the hosts share the line.
#[test]
fn example_cake_sqm_shares_the_line_between_hosts() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cake_sqm.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let r = run(&text);
    let (one, four) = (goodput(&r, "one"), goodput(&r, "four"));
    let share = one / (one + four);
    eprintln!("one {one:.0} four {four:.0} share {share:.3}");
    assert!((0.4..0.6).contains(&share), "share {share}");
    // PTM 64/65 and 30 bytes per ~1500-byte packet: payload ≈ 20 × 64/65 × 1448/1530.
    assert!(one + four > 17.0e6, "{}", one + four);
    let q = r.queue("bottleneck_up").unwrap();
    eprintln!("sojourn p50 {} p99 {}", q.sojourn_p50, q.sojourn_p99);
    assert!(q.sojourn_p99 < 0.03, "p99 sojourn {}", q.sojourn_p99);
}

#[test]
fn bad_cake_keys_are_errors_naming_the_field() {
    for (bad, field) in [
        ("bandwidth = \"fast\"", "dumbbell.qdisc.bandwidth"),
        ("rtt = \"moon\"", "dumbbell.qdisc.rtt"),
        ("isolation = \"nat\"", "dumbbell.qdisc.isolation"),
        ("preset = \"adsl\"", "dumbbell.qdisc.preset"),
        ("overhead = 999", "dumbbell.qdisc.overhead"),
    ] {
        let text = format!(
            "[dumbbell]\npairs = 1\nrate = \"10Mbit\"\ndelay = \"5ms\"\nqdisc = {{ kind = \"cake\", {bad} }}\n[[flow]]\nkind = \"cbr\"\nfrom = \"client0\"\nto = \"server0\"\nrate = \"1Mbit\"\n"
        );
        let e = Scenario::from_toml_str(&text)
            .and_then(|s| s.validate().map(|_| s))
            .err()
            .unwrap_or_else(|| panic!("{bad} accepted"));
        assert_eq!(e.field, field, "{bad}: {e}");
    }
}
