//! Differentiated services end to end: the `dscp` key of workloads, Flent's real RRUL
//! marks, and the strict-priority band qdiscs (`pfifo_fast`, `prio`) reading them.

mod common;
use common::run;

use aqmlab_core::{RunResult, Scenario};

fn queue_extra(r: &RunResult, q: &str, key: &str) -> f64 {
    let row = r.queue(q).unwrap_or_else(|| panic!("no queue {q}"));
    row.lower_extra
        .iter()
        .find(|(k, _)| *k == key)
        .unwrap_or_else(|| panic!("no {key} in {q}: {:?}", row.lower_extra))
        .1
}

fn err(toml: &str) -> (String, String) {
    let e = Scenario::from_toml_str(toml)
        .and_then(|s| s.validate().map(|_| ()))
        .expect_err("should be refused");
    (e.field.clone(), e.message.clone())
}

const TWO_WAY: &str = r#"
[run]
noise = false
duration = "4s"
[dumbbell]
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "pfifo_fast" }
"#;

#[test]
fn a_flow_marks_its_packets_both_ways() {
    // AF12 (TOS 0x30: low-delay bit) → TC_PRIO_INTERACTIVE → pfifo_fast band 0. Every
    // data segment (up) and every ACK (down) must be in band 0, and so must a ping's
    // requests and replies; an unmarked flow stays in band 1.
    let r = run(
        &format!(
            "{TWO_WAY}
[[flow]]
kind = \"bulk\"
from = \"client0\"
to = \"server0\"
dscp = \"AF12\"
[[flow]]
kind = \"ping\"
from = \"client0\"
to = \"server0\"
dscp = 12
"
        ),
        1,
    );
    for q in ["bottleneck_up", "bottleneck_down"] {
        let row = r.queue(q).unwrap();
        assert!(row.dequeued > 100, "{q}: {}", row.dequeued);
        assert_eq!(queue_extra(&r, q, "band0_pkts"), row.dequeued as f64, "{q}");
        assert_eq!(queue_extra(&r, q, "band1_pkts"), 0.0, "{q}");
    }
    let r = run(
        &format!("{TWO_WAY}\n[[flow]]\nkind = \"bulk\"\nfrom = \"client0\"\nto = \"server0\"\n"),
        1,
    );
    for q in ["bottleneck_up", "bottleneck_down"] {
        let row = r.queue(q).unwrap();
        assert_eq!(queue_extra(&r, q, "band1_pkts"), row.dequeued as f64, "{q}");
    }
}

#[test]
fn dscp_values_are_checked() {
    let flow = |v: &str| {
        format!("{TWO_WAY}\n[[flow]]\nkind = \"bulk\"\nfrom = \"client0\"\nto = \"server0\"\ndscp = {v}\n")
    };
    for bad in ["\"XY\"", "64", "-1", "1.5"] {
        let e = Scenario::from_toml_str(&flow(bad)).expect_err(bad);
        assert!(e.field.contains("dscp"), "{bad}: {} {}", e.field, e.message);
        assert!(
            e.message.contains("CS0") && e.message.contains("0 to 63"),
            "{}",
            e.message
        );
    }
    for (ok, want) in [
        ("\"ef\"", 46),
        ("\"CS5\"", 40),
        ("\"BK\"", 8),
        ("\"LE\"", 1),
        ("63", 63),
    ] {
        let plan = Scenario::from_toml_str(&flow(ok))
            .unwrap()
            .validate()
            .unwrap();
        assert_eq!(plan.flows[0].dscp, want, "{ok}");
    }
    // rrul carries Flent's own marks: a flow-level dscp is refused, rrul_be takes it
    let (field, msg) = err(&format!(
        "{TWO_WAY}\n[[flow]]\nkind = \"rrul\"\nfrom = \"client0\"\nto = \"server0\"\ndscp = \"EF\"\n"
    ));
    assert_eq!(field, "flow[0].dscp");
    assert!(msg.contains("rrul_be"), "{msg}");
    let (field, _) = err(&format!(
        "{TWO_WAY}\n[[flow]]\nkind = \"rrul\"\nfrom = \"client0\"\nto = \"server0\"\nudp_probes = 1\n"
    ));
    assert_eq!(field, "flow[0].udp_probes");
    let plan = Scenario::from_toml_str(&format!(
        "{TWO_WAY}\n[[flow]]\nkind = \"rrul_be\"\nfrom = \"client0\"\nto = \"server0\"\ndscp = \"CS1\"\n"
    ))
    .unwrap()
    .validate()
    .unwrap();
    assert!(plan.flows.iter().all(|f| f.dscp == 8));
}

#[test]
fn rrul_has_flents_names_and_marks() {
    let plan = Scenario::from_toml_str(&format!(
        "{TWO_WAY}\n[[flow]]\nkind = \"rrul\"\nfrom = \"client0\"\nto = \"server0\"\n"
    ))
    .unwrap()
    .validate()
    .unwrap();
    let got: Vec<(&str, u8)> = plan
        .flows
        .iter()
        .map(|f| (f.name.as_str(), f.dscp))
        .collect();
    assert_eq!(
        got,
        [
            ("rrul0.tcp_up0", 0),
            ("rrul0.tcp_up1", 8),
            ("rrul0.tcp_up2", 40),
            ("rrul0.tcp_up3", 46),
            ("rrul0.tcp_down0", 0),
            ("rrul0.tcp_down1", 8),
            ("rrul0.tcp_down2", 40),
            ("rrul0.tcp_down3", 46),
            ("rrul0.udp_ef", 46),
            ("rrul0.udp_bk", 8),
            ("rrul0.udp_be", 0),
            ("rrul0.icmp", 0),
        ]
    );
}

/// Under a DSCP-blind qdisc (CoDel) real RRUL and `rrul_be` with three UDP probes are the
/// same run: every number equal, only the probe names differ.
#[test]
fn rrul_marks_are_invisible_to_dscp_blind_qdiscs() {
    let text = |kind: &str| {
        format!(
            "[run]\nduration = \"3s\"\nwarmup = \"0.5s\"\n[dumbbell]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n\
             qdisc = {{ kind = \"codel\" }}\n[[flow]]\nkind = \"{kind}\"\nname = \"load\"\nfrom = \"client0\"\nto = \"server0\"\n"
        )
    };
    let dump = |kind: &str| {
        let mut r = run(&text(kind), 4);
        r.wall_seconds = 0.0;
        let s = format!("{r:?}");
        s.replace("udp_be1", "U1")
            .replace("udp_be2", "U2")
            .replace("udp_be3", "U3")
            .replace("udp_ef", "U1")
            .replace("udp_bk", "U2")
            .replace("udp_be", "U3")
    };
    let (marked, be) = (dump("rrul"), dump("rrul_be"));
    assert!(marked.contains("load.U1") && marked.len() > 10_000);
    assert!(marked == be, "rrul and rrul_be differ under codel");
}

/// pfifo_fast with all traffic best effort is one tail-drop FIFO of `limit` packets:
/// flow results equal those of `fifo` with the same limit.
#[test]
fn pfifo_fast_with_best_effort_traffic_is_a_fifo() {
    let text = |q: &str| {
        format!(
            "[run]\nduration = \"3s\"\n[dumbbell]\nrate = \"10Mbit\"\ndelay = \"10ms\"\nqdisc = {q}\n\
             [[flow]]\nkind = \"rrul_be\"\nfrom = \"client0\"\nto = \"server0\"\n"
        )
    };
    let a = run(&text("{ kind = \"pfifo_fast\", limit = 50 }"), 2);
    let b = run(&text("{ kind = \"fifo\", limit = 50 }"), 2);
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    let (qa, qb) = (
        a.queue("bottleneck_up").unwrap(),
        b.queue("bottleneck_up").unwrap(),
    );
    assert!(
        qa.dropped > 0,
        "the FIFO must overflow for this to mean something"
    );
    assert_eq!((qa.dropped, qa.dequeued), (qb.dropped, qb.dequeued));
}

/// Strict priority: band 0 (AF12) offered 12 Mbit/s on a 10 Mbit/s link takes it all and
/// band 2 (AF11) starves; band 0 alone gets the link's rate.
#[test]
fn band_zero_starves_band_two_under_overload() {
    let r = run(
        r#"
[run]
noise = false
duration = "5s"
warmup = "1s"
[dumbbell]
rate = "10Mbit"
delay = "5ms"
qdisc = { kind = "pfifo_fast", limit = 100 }
[[flow]]
kind = "cbr"
name = "low"
from = "client0"
to = "server0"
rate = "4Mbit"
dscp = "AF11"
[[flow]]
kind = "cbr"
name = "high"
from = "client0"
to = "server0"
rate = "12Mbit"
dscp = "AF12"
"#,
        1,
    );
    let g = |n: &str| r.flows.iter().find(|f| f.name == n).unwrap().goodput_bps;
    eprintln!(
        "high {:.2} Mbit/s, low {:.3} Mbit/s",
        g("high") / 1e6,
        g("low") / 1e6
    );
    // the link carries 10 Mbit/s of frames: 1500-byte IP packets + 14 bytes framing
    assert!(
        g("high") > 0.95 * 10e6 * 1500.0 / 1514.0 * 0.99,
        "{}",
        g("high")
    );
    assert!(g("low") < 0.01 * 4e6, "{}", g("low"));
    // prio with a priomap that swaps the two classes' bands reverses the outcome
    let text = r#"
[run]
noise = false
duration = "5s"
warmup = "1s"
[dumbbell]
rate = "10Mbit"
delay = "5ms"
qdisc = { kind = "prio", limit = 100, priomap = [1, 2, 0, 2, 1, 2, 2, 0, 1, 1, 1, 1, 1, 1, 1, 1] }
[[flow]]
kind = "cbr"
name = "low"
from = "client0"
to = "server0"
rate = "4Mbit"
dscp = "AF11"
[[flow]]
kind = "cbr"
name = "high"
from = "client0"
to = "server0"
rate = "12Mbit"
dscp = "AF12"
"#;
    let r = run(text, 1);
    let g = |n: &str| r.flows.iter().find(|f| f.name == n).unwrap().goodput_bps;
    assert!(g("low") > 0.95 * 4e6 * 0.99, "{}", g("low"));
}
