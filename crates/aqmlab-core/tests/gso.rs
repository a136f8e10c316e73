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
