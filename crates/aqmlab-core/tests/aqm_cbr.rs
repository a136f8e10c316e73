//! Behavioural smoke tests of the AQMs on the full simulator with unresponsive CBR
//! traffic (no TCP needed): a 10 Mbit/s bottleneck, 1500-byte packets (1514 on the wire).
//!
//! - Overload (20 Mbit/s offered): a 1000-packet FIFO sits full, so every packet waits
//!   1000 · 1514 · 8 / 10^7 = 1.211 s. PIE must hold the mean sojourn near its target
//!   (linux: the 2x overload drives p past 1, so the queue is held at the two-MTU floor),
//!   ARED near its max threshold, both at full utilisation.
//! - Underload (9 Mbit/s): no AQM drops anything.

use aqmlab_core::{run_scenario, RunResult, Scenario};

fn run(qdisc: &str, cbr_rate: &str) -> RunResult {
    let text = format!(
        r#"
[run]
duration = "12s"
warmup = "4s"
[dumbbell]
rate = "10Mbit"
delay = "10ms"
qdisc = {qdisc}
[[flow]]
kind = "cbr"
from = "client0"
to = "server0"
rate = "{cbr_rate}"
size = 1500
"#
    );
    let sc = Scenario::from_toml_str(&text).unwrap();
    run_scenario(&sc, 1).unwrap()
}

fn drops(r: &RunResult, reason: &str) -> u64 {
    let q = r.queue("bottleneck_up").unwrap();
    q.drops_by_reason
        .iter()
        .find(|(n, _)| *n == reason)
        .map(|(_, c)| *c)
        .unwrap_or(0)
}

#[test]
fn aqms_bound_the_sojourn_of_an_overload() {
    let fifo = run(r#"{ kind = "fifo", limit = 1000 }"#, "20Mbit");
    let q = fifo.queue("bottleneck_up").unwrap();
    assert!(
        (q.sojourn_mean - 1.2112).abs() < 0.01,
        "fifo sojourn {}",
        q.sojourn_mean
    );

    for (qdisc, lo, hi) in [
        // Linux PIE: p winds up past 1 during the start-up transient (no clamp in the
        // kernel's 56-bit form), so after warm-up only the two-MTU safeguard lets packets in.
        (r#"{ kind = "pie" }"#, 0.0005, 0.006),
        // The RFC and study variants settle on their targets (15 ms, 16 ms, 10 ms, 20 ms).
        (r#"{ kind = "pie", variant = "rfc8033" }"#, 0.010, 0.022),
        (
            r#"{ kind = "pie", variant = "draft00", limit = "250KB" }"#,
            0.011,
            0.024,
        ),
        (r#"{ kind = "pie", variant = "docsis" }"#, 0.006, 0.016),
        (r#"{ kind = "pie", variant = "ns2" }"#, 0.014, 0.028),
        // ARED: min 15 KB → max 45 KB, limit 180 KB. An unresponsive 2× load holds the
        // average near max (45 KB = 36 ms); the FIFO alone would reach 180 KB = 144 ms.
        (r#"{ kind = "ared", min = "15KB" }"#, 0.020, 0.040),
    ] {
        let r = run(qdisc, "20Mbit");
        let q = r.queue("bottleneck_up").unwrap();
        assert!(
            q.sojourn_mean > lo && q.sojourn_mean < hi,
            "{qdisc}: mean sojourn {} not in ({lo}, {hi})",
            q.sojourn_mean
        );
        assert!(
            q.utilization > 0.99,
            "{qdisc}: utilisation {}",
            q.utilization
        );
        // Half of the offered packets are dropped, nearly all by the AQM, not the limit.
        let aqm = drops(&r, "early") + drops(&r, "forced");
        assert!(
            aqm as f64 > 0.95 * q.dropped as f64,
            "{qdisc}: {:?}",
            q.drops_by_reason
        );
        assert!(
            (q.dropped as f64 / q.arrivals as f64 - 0.5).abs() < 0.02,
            "{qdisc}: drop share {}",
            q.dropped as f64 / q.arrivals as f64
        );
    }
}

#[test]
fn aqms_leave_an_underload_alone() {
    for qdisc in [
        r#"{ kind = "pie" }"#,
        r#"{ kind = "pie", variant = "draft00" }"#,
        r#"{ kind = "red", min = "15KB" }"#,
        r#"{ kind = "ared", min = "15KB" }"#,
    ] {
        let r = run(qdisc, "9Mbit");
        let q = r.queue("bottleneck_up").unwrap();
        assert_eq!(q.dropped, 0, "{qdisc}");
        assert!(q.sojourn_mean < 0.0015, "{qdisc}: {}", q.sojourn_mean);
    }
}

#[test]
fn bad_parameters_name_the_field_and_traces_are_recorded() {
    let bad = Scenario::from_toml_str(
        r#"
[dumbbell]
rate = "10Mbit"
qdisc = { kind = "pie", alpha = 0.1 }
"#,
    )
    .unwrap();
    let e = bad.validate().unwrap_err();
    assert_eq!(e.field, "dumbbell.qdisc.alpha");
    assert!(
        e.message.contains("0.1") && e.message.contains("1/16"),
        "{e}"
    );
    let e = Scenario::from_toml_str(
        "[dumbbell]\nrate = \"10Mbit\"\nqdisc = { kind = \"red\", min = 10, max = \"30KB\" }\n",
    )
    .unwrap()
    .validate()
    .unwrap_err();
    assert_eq!(e.field, "dumbbell.qdisc.max");
    assert!(Scenario::from_toml_str(
        "[dumbbell]\nrate = \"10Mbit\"\nqdisc = { kind = \"pie\", tagret = \"5ms\" }\n"
    )
    .is_err());

    // With run.trace the PIE state appears as samples: p becomes positive after the first
    // update (500 ms), and the burst allowance reaches 0.
    let sc = Scenario::from_toml_str(
        r#"
[run]
duration = "2s"
trace = true
[dumbbell]
rate = "10Mbit"
qdisc = { kind = "pie" }
[[flow]]
kind = "cbr"
from = "client0"
to = "server0"
rate = "20Mbit"
"#,
    )
    .unwrap();
    let r = run_scenario(&sc, 1).unwrap();
    let id = |name: &str| r.metric_names.iter().position(|n| n == name).unwrap() as u16;
    let (p, burst) = (id("p"), id("burst_allowance"));
    let ps: Vec<(f64, f64)> = (0..r.samples.len())
        .filter(|&i| r.samples.metric[i] == p)
        .map(|i| (r.samples.t[i], r.samples.value[i]))
        .collect();
    let first_positive = ps.iter().find(|(_, v)| *v > 0.0).unwrap();
    assert!((first_positive.0 - 0.5).abs() < 1e-9, "{first_positive:?}");
    assert!((0..r.samples.len()).any(|i| r.samples.metric[i] == burst && r.samples.value[i] == 0.0));
}

/// Scenario files round-trip: a parsed RED/ARED/PIE table written back and parsed again
/// gives the same configuration.
#[test]
fn qdisc_tables_round_trip() {
    for qdisc in [
        r#"{ kind = "red", min = "12500B", bandwidth = "10Mbit", ecn = true }"#,
        r#"{ kind = "ared", min = 102, max = 1024, limit = 2048, probability = 0.1 }"#,
        r#"{ kind = "pie", variant = "draft00", qdelay_ref = "16ms", limit = "250KB", estimator = "dq_rate", dq_threshold = "16KiB" }"#,
        r#"{ kind = "pie", variant = "ns2", target = "20ms", tupdate = "30ms", max_burst = "100ms", alpha = 0.125, beta = 1.25 }"#,
    ] {
        let text = format!("[dumbbell]\nrate = \"10Mbit\"\nqdisc = {qdisc}\n");
        let a = Scenario::from_toml_str(&text).unwrap();
        a.validate().unwrap();
        let b = Scenario::from_toml_str(&a.to_toml_string()).unwrap();
        let (qa, qb) = (
            &a.dumbbell.as_ref().unwrap().qdisc,
            &b.dumbbell.as_ref().unwrap().qdisc,
        );
        assert_eq!(format!("{qa:?}"), format!("{qb:?}"), "{qdisc}");
    }
}
