//! End-to-end behaviour of `fq_pie` (Linux sch_fq_pie) with unresponsive traffic: a
//! 10 Mbit/s bottleneck (10 ms one way), two CBR flows of 8 and 20 Mbit/s (1500-byte
//! packets, 1514 on the wire) and a 50 ms ping probe, each on its own host pair.
//!
//! - The DRR scheduler splits the link evenly (≈ 4.95 Mbit/s of IP packets each) and
//!   the ping, a sparse flow, goes out ahead of both backlogs.
//! - Each flow's own PIE drops its excess at enqueue (all drops `early`): the slow flow
//!   loses 1 − 4.95/8 ≈ 38 %, the fast one 1 − 4.95/20 ≈ 75 %.
//! - Linux start-up transient: nothing is updated for 500 ms and the burst allowance runs
//!   150 ms, so both flows' queues grow to hundreds of packets (queue delay ≫ 250 ms);
//!   p then winds up past 1 (the kernel's 56-bit p has no clamp at 1). While p > 1 every
//!   arrival meeting two queued MTUs is dropped, so each flow sits at the two-MTU floor
//!   (a few ms of delay, well below target), and p unwinds only by alpha·(qdelay −
//!   target) ≈ −0.1 per second. Once it has (≈ 30 s here), each flow's queueing delay
//!   settles on the 15 ms target — instead of the buffer's drain time (10240 packets ≈
//!   12 s at 10 Mbit/s) that a scheduler without AQM would reach.

use aqmlab_core::{run_scenario, RunResult, Scenario};

/// 1514 frame bytes at 10 Mbit/s.
const PKT_TIME: f64 = 1514.0 * 8.0 / 10e6;
/// fq_pie's default target.
const TARGET: f64 = 0.015;

fn run(qdisc: &str, window: (u32, u32), trace: bool, flows: &str) -> RunResult {
    let text = format!(
        r#"
[run]
noise = false
warmup = "{}s"
duration = "{}s"
trace = {trace}

[dumbbell]
pairs = 3
rate = "10Mbit"
delay = "10ms"
qdisc = {qdisc}

{flows}
"#,
        window.0, window.1
    );
    let sc = Scenario::from_toml_str(&text).unwrap_or_else(|e| panic!("{qdisc}: {e:?}"));
    run_scenario(&sc, 7).unwrap()
}

const PING: &str = r#"
[[flow]]
name = "ping"
kind = "ping"
from = "client2"
to = "server2"
interval = "50ms"
"#;

fn cbr(name: &str, host: u32, rate: &str) -> String {
    format!(
        "[[flow]]\nname = \"{name}\"\nkind = \"cbr\"\nfrom = \"client{host}\"\nto = \"server{host}\"\nrate = \"{rate}\"\n"
    )
}

fn overload() -> String {
    format!(
        "{}{}{PING}",
        cbr("slow", 0, "8Mbit"),
        cbr("fast", 1, "20Mbit")
    )
}

#[test]
fn fq_pie_splits_evenly_isolates_a_ping_and_holds_each_flow_at_target() {
    // Base delays: the same paths without overload.
    let idle = run(
        "{ kind = \"fq_pie\" }",
        (1, 3),
        false,
        &format!("{}{PING}", cbr("slow", 0, "1Mbit")),
    );
    let base_owd = idle.extra("slow", "owd_mean").unwrap();
    let base_rtt = idle.extra("ping", "rtt_max").unwrap();
    assert_eq!(idle.queue("bottleneck_up").unwrap().dropped, 0);

    // Steady state, after p has unwound from the start-up transient.
    let r = run("{ kind = \"fq_pie\" }", (45, 60), false, &overload());
    let (s, f) = (
        r.flow("slow").unwrap().goodput_bps,
        r.flow("fast").unwrap().goodput_bps,
    );
    let capacity = 10e6 * 1472.0 / 1514.0; // UDP payload per frame
    assert!((s - f).abs() / (s + f) < 0.02, "split {s} / {f}");
    assert!((s + f) / capacity > 0.99, "total {}", s + f);
    // The ping (new-flow priority) waits at most for the frame being serialised
    // (measured: 1.20 ms); bound as in fq_smoke.
    let worst = r.extra("ping", "rtt_max").unwrap() - base_rtt;
    assert!(
        (0.0..2.0 * PKT_TIME).contains(&worst),
        "ping added up to {worst}"
    );
    assert_eq!(r.extra("ping", "loss_rate"), Some(0.0));
    // Each overloaded flow's own queueing delay is held at the target.
    for flow in ["slow", "fast"] {
        let qdelay = r.extra(flow, "owd_mean").unwrap() - base_owd;
        assert!(
            (qdelay - TARGET).abs() < 0.2 * TARGET,
            "{flow}: queueing delay {qdelay}"
        );
    }
    // All losses are PIE's, none at the 10240-packet limit; each flow loses its excess.
    let q = r.queue("bottleneck_up").unwrap();
    assert_eq!(q.drops_by_reason, vec![("early", q.dropped)]);
    assert!(
        (q.sojourn_mean - TARGET).abs() < 0.2 * TARGET,
        "{}",
        q.sojourn_mean
    );
    let share = 5e6 * 1500.0 / 1514.0;
    for (flow, rate) in [("slow", 8e6), ("fast", 20e6)] {
        let loss = r.extra(flow, "loss_rate").unwrap();
        assert!(
            (loss - (1.0 - share / rate)).abs() < 0.02,
            "{flow}: loss {loss}"
        );
    }
    assert!(q.utilization > 0.99);

    // Right after the transient (4–8 s) p is still above 1: both flows are held at the
    // two-MTU floor, far below the target, and the link stays full.
    let early = run("{ kind = \"fq_pie\" }", (4, 8), false, &overload());
    let q = early.queue("bottleneck_up").unwrap();
    assert!(
        q.sojourn_mean > PKT_TIME && q.sojourn_mean < 5.0 * PKT_TIME,
        "sojourn {}",
        q.sojourn_mean
    );
    assert!(q.utilization > 0.99);
}

#[test]
fn fq_pie_traces_show_the_linux_wind_up() {
    let r = run("{ kind = \"fq_pie\" }", (0, 2), true, &overload());
    let id = |name: &str| r.metric_names.iter().position(|n| n == name).unwrap() as u16;
    let series = |m: u16| -> Vec<(f64, f64)> {
        (0..r.samples.len())
            .filter(|&i| r.samples.metric[i] == m)
            .map(|i| (r.samples.t[i], r.samples.value[i]))
            .collect()
    };
    let max_p = series(id("max_p"));
    // No update before 500 ms; p passes 1 within the first two seconds.
    assert!(max_p.iter().all(|&(t, p)| t >= 0.5 || p == 0.0));
    assert!(max_p.iter().any(|&(_, p)| p > 1.0), "{max_p:?}");
    // Three flows at most are ever active (slow, fast, ping; hash collisions aside).
    let active = series(id("active_flows"));
    assert!(!active.is_empty());
    assert!(active.iter().all(|&(_, n)| n <= 3.0));
    assert!(series(id("mean_p")).iter().all(|&(_, p)| p >= 0.0));
}

#[test]
fn bad_fq_pie_parameters_name_the_field() {
    for (bad, field) in [
        ("ecn_prob = 10", "dumbbell.qdisc.ecn_prob"),
        ("alpha = 0.1", "dumbbell.qdisc.alpha"),
        ("flows = 0", "dumbbell.qdisc.flows"),
    ] {
        let e = Scenario::from_toml_str(&format!(
            "[dumbbell]\nrate = \"10Mbit\"\nqdisc = {{ kind = \"fq_pie\", {bad} }}\n"
        ))
        .unwrap()
        .validate()
        .unwrap_err();
        assert_eq!(e.field, field, "{bad}");
    }
    assert!(Scenario::from_toml_str(
        "[dumbbell]\nrate = \"10Mbit\"\nqdisc = { kind = \"fq_pie\", max_burst = \"5ms\" }\n"
    )
    .is_err());
}
