//! Queue disciplines under real TCP load (issue 4's behavioural checks).

mod common;
use common::run;

use aqmlab_core::metrics::KIND_QUEUE;

/// The saturated-TCP study's setting: 10 Mbit/s, ~10 ms RTT, 250 KB buffer, NewReno
/// flows starting within the first second.
fn saturated(qdisc: &str, flows: u32, duration: &str, trace: bool) -> String {
    format!(
        r#"
[run]
duration = "{duration}"
warmup = "10s"
trace = {trace}
[tcp]
cc = "newreno"
[dumbbell]
pairs = {flows}
rate = "10Mbit"
delay = "4.8ms"
access_delay = "0.1ms"
overhead = 7
qdisc = {qdisc}
[[flow]]
kind = "bulk"
count = {flows}
from = "client{{i}}"
to = "server{{i}}"
start_spread = "1s"
"#
    )
}

#[test]
fn pie_draft00_holds_mean_sojourn_near_qdelay_ref() {
    let r = run(
        &saturated(
            r#"{ kind = "pie", variant = "draft00", limit = "250KB" }"#,
            16,
            "60s",
            false,
        ),
        1,
    );
    let q = r.queue("bottleneck_up").unwrap();
    assert!(
        (q.sojourn_mean - 0.016).abs() <= 0.25 * 0.016,
        "mean sojourn {} s",
        q.sojourn_mean
    );
    assert!(q.utilization > 0.9, "utilisation {}", q.utilization);
}

#[test]
fn codel_count_keeps_growing_under_saturation() {
    let r = run(
        &saturated(
            r#"{ kind = "codel", variant = "draft00", limit = "250KB" }"#,
            16,
            "60s",
            true,
        ),
        1,
    );
    let q = r.queue("bottleneck_up").unwrap();
    let id = q.id;
    let m = r
        .metric_names
        .iter()
        .position(|n| n == "count")
        .expect("count is traced") as u16;
    let counts: Vec<(f64, f64)> = (0..r.samples.len())
        .filter(|&i| {
            r.samples.kind[i] == KIND_QUEUE && r.samples.entity[i] == id && r.samples.metric[i] == m
        })
        .map(|i| (r.samples.t[i], r.samples.value[i]))
        .collect();
    let max_in = |a: f64, b: f64| {
        counts
            .iter()
            .filter(|(t, _)| *t >= a && *t < b)
            .map(|(_, v)| *v)
            .fold(0.0, f64::max)
    };
    let (c1, c2, c3) = (max_in(10.0, 20.0), max_in(30.0, 40.0), max_in(50.0, 60.0));
    assert!(
        c1 > 10.0 && c2 > c1 && c3 > c2,
        "count maxima per 10 s window: {c1} {c2} {c3}"
    );
}

#[test]
fn fq_codel_keeps_a_sparse_probe_within_two_packet_times() {
    let text = saturated(r#"{ kind = "fq_codel" }"#, 16, "30s", false)
        + r#"
[[flow]]
kind = "ping"
name = "probe"
from = "client0"
to = "server0"
"#;
    let r = run(&text, 1);
    let q = r.queue("bottleneck_up").unwrap();
    assert!(
        q.utilization > 0.95,
        "the bulk flows saturate the link: {}",
        q.utilization
    );
    let probe = r.flow("probe").unwrap();
    let base = probe.base_rtt;
    let mean = r.extra("probe", "rtt_mean").unwrap();
    let packet_time = 1507.0 * 8.0 / 10e6;
    // serialisation of the 84-byte probe on the path is tiny; the added latency is queueing
    assert!(
        mean - base < 2.0 * packet_time,
        "added latency {} s vs 2 packet times {}",
        mean - base,
        2.0 * packet_time
    );
}

/// The DOCSIS study's UDP experiment, shortened: 9 TCP flows and a 12 Mbit/s
/// unresponsive CBR flow on a 38 Mbit/s bottleneck.
fn udp_share(qdisc: &str) -> f64 {
    let text = format!(
        r#"
[run]
duration = "40s"
warmup = "15s"
[tcp]
cc = "newreno"
[dumbbell]
pairs = 10
rate = "38Mbit"
delay = "10ms"
client_delays = ["5ms", "10ms", "15ms", "20ms", "5ms", "10ms", "15ms", "20ms", "5ms", "10ms"]
qdisc = {qdisc}
[[flow]]
kind = "bulk"
count = 9
from = "server{{i}}"
to = "client{{i}}"
start_spread = "2s"
[[flow]]
kind = "cbr"
name = "udp"
from = "server9"
to = "client9"
rate = "12Mbit"
start = "5s"
"#
    );
    let r = run(&text, 3);
    r.flow("udp").unwrap().goodput_bps / 1e6
}

#[test]
fn flow_schedulers_contain_an_unresponsive_flow_single_queues_do_not() {
    let fair = 38.0 / 10.0 * 1472.0 / 1514.0; // max-min share at the UDP payload level
    for q in [r#"{ kind = "drr" }"#, r#"{ kind = "sfq" }"#] {
        let got = udp_share(q);
        assert!(
            got < 1.3 * fair && got > 0.6 * fair,
            "{q}: UDP got {got} Mbit/s, fair share {fair}"
        );
    }
    for q in [
        r#"{ kind = "fifo", limit = 2048 }"#,
        r#"{ kind = "codel", drop_at = "enqueue", target = "20ms" }"#,
        r#"{ kind = "pie", target = "20ms" }"#,
    ] {
        let got = udp_share(q);
        assert!(got > 10.0, "{q}: UDP got only {got} Mbit/s");
    }
}
