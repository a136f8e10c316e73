//! `[tcp] gso = "on"` through whole scenarios: GSO skbs leave the sender's qdisc as
//! super-packets and cross its link as segments; a bulk flow fills the bottleneck as it
//! does with GSO off; the run is deterministic.

use aqmlab_core::{run_scenario, RunResult, Scenario};

fn run(toml: &str, seed: u64) -> RunResult {
    let sc = Scenario::from_toml_str(toml).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    run_scenario(&sc, seed).unwrap_or_else(|e| panic!("{e}"))
}

fn bulk(cc: &str, gso: &str, qdisc: &str) -> String {
    format!(
        r#"
        [run]
        duration = "12s"
        warmup = "2s"
        noise = false
        [dumbbell]
        rate = "20Mbit"
        delay = "10ms"
        qdisc = {qdisc}
        [tcp]
        cc = "{cc}"
        gso = "{gso}"
        [[flow]]
        kind = "bulk"
        from = "client0"
        to = "server0"
        name = "f"
        "#
    )
}

#[test]
fn gso_bulk_flow_fills_the_bottleneck_like_gso_off() {
    for (cc, qdisc) in [
        ("cubic", r#"{ kind = "fifo", limit = 100 }"#),
        ("bbr", r#"{ kind = "codel" }"#),
    ] {
        let on = run(&bulk(cc, "on", qdisc), 1);
        let off = run(&bulk(cc, "off", qdisc), 1);
        let (g_on, g_off) = (
            on.flow("f").unwrap().goodput_bps,
            off.flow("f").unwrap().goodput_bps,
        );
        let cap = 20e6 * 1448.0 / 1514.0;
        assert!(g_on > 0.9 * cap, "{cc}: gso on goodput {g_on}");
        assert!(
            (g_on / g_off - 1.0).abs() < 0.05,
            "{cc}: on {g_on} off {g_off}"
        );
        // the bottleneck carries segments only: its packets are at most one MTU
        let q = on.queue("bottleneck_up").unwrap();
        assert!(q.tx_pkts > 0);
        assert!(q.tx_bytes as f64 / q.tx_pkts as f64 <= 1500.0, "{cc}");
        // deterministic
        let again = run(&bulk(cc, "on", qdisc), 1);
        assert_eq!(on.digest(), again.digest(), "{cc}");
    }
}

#[test]
fn gso_needs_a_linux_stack() {
    let text =
        bulk("newreno", "on", r#"{ kind = "fifo" }"#).replace("[tcp]", "[tcp]\nstack = \"ns3\"");
    let err = Scenario::from_toml_str(&text)
        .and_then(|sc| run_scenario(&sc, 1).map(|_| ()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("tcp.gso") && err.contains("linux-3.14"),
        "{err}"
    );
    let text = bulk("cubic", "maybe", r#"{ kind = "fifo" }"#);
    let err = Scenario::from_toml_str(&text).unwrap_err().to_string();
    assert!(err.contains("gso"), "{err}");
}

/// GRO at every dumbbell ingress with GSO senders: the run is deterministic, the flow
/// still fills the bottleneck, and the bottleneck still carries segments (its wire
/// segments what GRO merged).
#[test]
fn gro_at_the_routers_keeps_the_bulk_flow_whole() {
    let text = bulk("cubic", "on", r#"{ kind = "codel" }"#)
        .replace("[dumbbell]", "[dumbbell]\ngro = true");
    let r = run(&text, 2);
    let g = r.flow("f").unwrap().goodput_bps;
    assert!(g > 0.9 * 20e6 * 1448.0 / 1514.0, "goodput {g}");
    let q = r.queue("bottleneck_up").unwrap();
    assert!(q.tx_bytes as f64 / q.tx_pkts as f64 <= 1500.0);
    assert_eq!(r.digest(), run(&text, 2).digest());
}

/// A host whose own link is the bottleneck (10 Mbit/s, a 1000-packet FIFO), one CUBIC
/// flow with GSO. TCP Small Queues keep the socket's bytes in that FIFO near the limit:
/// Linux 6.1 at 10 Mbit/s: max(2 × truesize, rate >> 10 ≈ 1.5–2.5 KB) = two skbs of 2
/// segments = 6,000 B; an skb goes while at most that much is below the socket, so
/// each finds about 6,000 B ahead of it: 6,000 × 8 / 10 Mbit/s = 4.8 ms. 3.14: 131,072 B,
/// 105 ms. Without TSQ the FIFO holds the window (a 3 MiB receive window: hundreds of
/// milliseconds). Goodput is the link's either way.
#[test]
fn tsq_bounds_the_senders_own_queue() {
    let text = |stack: &str, tsq: bool| {
        format!(
            r#"
            [run]
            duration = "10s"
            warmup = "3s"
            noise = false
            [tcp]
            stack = "{stack}"
            gso = "on"
            tsq = {tsq}
            [[node]]
            name = "a"
            kind = "host"
            [[node]]
            name = "r"
            kind = "router"
            [[node]]
            name = "b"
            kind = "host"
            [[link]]
            from = "a"
            to = "r"
            rate = "10Mbit"
            delay = "1ms"
            trace = true
            [[link]]
            from = "r"
            to = "b"
            rate = "1Gbit"
            delay = "10ms"
            [[flow]]
            kind = "bulk"
            from = "a"
            to = "b"
            name = "f"
            "#
        )
    };
    let cap = 10e6 * 1448.0 / 1514.0;
    let mut sojourn = Vec::new();
    for (stack, tsq) in [("linux", true), ("linux-3.14", true), ("linux", false)] {
        let r = run(&text(stack, tsq), 1);
        let g = r.flow("f").unwrap().goodput_bps;
        assert!(g > 0.95 * cap, "{stack} tsq {tsq}: goodput {g}");
        let q = r.queue("a->r").unwrap();
        sojourn.push(q.sojourn_mean);
        assert_eq!(r.digest(), run(&text(stack, tsq), 1).digest());
    }
    assert!(
        sojourn[0] > 0.004 && sojourn[0] < 0.006,
        "6.1 with TSQ: {sojourn:?}"
    );
    assert!(
        sojourn[1] > 0.095 && sojourn[1] < 0.115,
        "3.14 with TSQ: {sojourn:?}"
    );
    assert!(sojourn[2] > 0.3, "without TSQ: {sojourn:?}");
}

#[test]
fn tsq_needs_gso() {
    let text = bulk("cubic", "off", r#"{ kind = "fifo" }"#).replace("[tcp]", "[tcp]\ntsq = true");
    let err = Scenario::from_toml_str(&text)
        .and_then(|sc| run_scenario(&sc, 1).map(|_| ()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("tcp.tsq") && err.contains("gso"), "{err}");
}
