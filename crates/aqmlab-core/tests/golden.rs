//! Golden fingerprints: hot-path optimisations must keep results bit-identical.
//!
//! Each case runs a small scenario and hashes the whole `RunResult` (flows, queues with
//! their histograms, the series and samples tables, event and packet counters) through
//! its `Debug` text, which prints every `f64` exactly (shortest round-trip form). The
//! wall-clock time and the event count are zeroed first. The constants were recorded before the optimisations
//! of the `perf` branch; a change that legitimately alters event order must explain why
//! in its commit and re-record them (`GOLDEN_PRINT=1 cargo test --test golden -- --nocapture`).
//!
//! The cases guarding the model set `noise = false` (no start or host jitter): with it
//! a run is bit-identical to what aqmlab computed before the noise mechanisms existed
//! (their fingerprints were not re-recorded when noise arrived). `rrul_codel_noise`
//! runs with the default noise on, so the seeded jitter streams are guarded too.

use aqmlab_core::result::fnv1a;
use aqmlab_core::{run_scenario, Scenario};

fn fingerprint(text: &str, seed: u64) -> (u64, u64, u64) {
    let sc = Scenario::from_toml_str(text).unwrap();
    let r = run_scenario(&sc, seed).unwrap();
    // GOLDEN_DUMP=DIR writes the pretty-printed results, to diff a failing case
    if let Some(dir) = std::env::var_os("GOLDEN_DUMP") {
        let path = std::path::Path::new(&dir).join(format!("{:016x}.txt", fnv1a(text.as_bytes())));
        std::fs::write(path, format!("{:#?}", r.without_timing())).unwrap();
    }
    (r.digest(), r.packets_created, r.packets_delivered)
}

fn check(name: &str, text: &str, seed: u64, want: (u64, u64, u64)) {
    let got = fingerprint(text, seed);
    if std::env::var_os("GOLDEN_PRINT").is_some() {
        println!("{name}: ({:#018x}, {}, {})", got.0, got.1, got.2);
    }
    assert_eq!(
        got, want,
        "{name}: results changed (fingerprint, packets created, packets delivered)"
    );
}

#[test]
fn fifo_cbr_overload() {
    check(
        "fifo_cbr",
        r#"
[run]
noise = false
duration = "3s"
warmup = "0.5s"
[dumbbell]
pairs = 2
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "fifo", limit = 100 }
[[flow]]
kind = "cbr"
from = "client0"
to = "server0"
rate = "8Mbit"
size = 1500
[[flow]]
kind = "cbr"
from = "client1"
to = "server1"
rate = "5Mbit"
size = 700
"#,
        3,
        // re-recorded when utilisation was capped at 1 (this saturated link read 1.000006)
        (0xb884ed317d73f633, 4679, 3549),
    );
}

#[test]
fn codel_tcp16() {
    check(
        "codel_tcp16",
        r#"
[run]
noise = false
duration = "4s"
warmup = "1s"
[dumbbell]
pairs = 16
rate = "10Mbit"
delay = "5ms"
access_delay = "0.1ms"
access_rate = "1Gbit"
qdisc = { kind = "codel" }
[tcp]
cc = "newreno"
[[flow]]
kind = "bulk"
count = 16
from = "client{i}"
to = "server{i}"
start_spread = "1s"
"#,
        11,
        (0xde6a00810328ea2a, 6439, 6017),
    );
}

#[test]
fn fq_codel_tcp_ping() {
    check(
        "fq_codel_tcp_ping",
        r#"
[run]
noise = false
duration = "4s"
warmup = "1s"
bin = "0.1s"
[dumbbell]
pairs = 5
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "fq_codel" }
[tcp]
cc = "cubic"
[[flow]]
kind = "bulk"
count = 4
from = "client{i}"
to = "server{i}"
start_spread = "0.5s"
[[flow]]
name = "ping"
kind = "ping"
from = "client4"
to = "server4"
interval = "20ms"
"#,
        5,
        (0xb8837335b7837be4, 5932, 5796),
    );
}

/// PIE in each specification (and fq_pie, ARED), recorded before the PIE core was split
/// into one file per specification (the split must not change a bit).
#[test]
fn pie_variants_tcp() {
    let cases: &[(&str, &str, (u64, u64, u64))] = &[
        (
            "linux",
            r#"{ kind = "pie", ecn = true }"#,
            (0x9c7dc444f11d3f8f, 8141, 7620),
        ),
        (
            "linux_dq",
            r#"{ kind = "pie", estimator = "dq_rate", bytemode = true }"#,
            (0x56a8837f2725f095, 8014, 7603),
        ),
        (
            "linux-3.14",
            r#"{ kind = "pie", variant = "linux-3.14" }"#,
            (0xabed6fbe024a4d2b, 8101, 7753),
        ),
        (
            "rfc8033",
            r#"{ kind = "pie", variant = "rfc8033", ecn = true }"#,
            (0xd7ca8e8e917afab4, 8112, 7649),
        ),
        (
            "rfc8033_dq",
            r#"{ kind = "pie", variant = "rfc8033", estimator = "dq_rate" }"#,
            (0x74bf7782fd48d6d5, 8194, 7708),
        ),
        (
            "draft00",
            r#"{ kind = "pie", variant = "draft00", limit = 200 }"#,
            // re-recorded when draft00 gained the draft's case analysis of p
            (0x304e906ef26e9a2b, 8218, 7736),
        ),
        (
            "docsis",
            r#"{ kind = "pie", variant = "docsis", limit = 150 }"#,
            (0x7a56e57826943548, 8057, 7677),
        ),
        (
            "docsis_dq",
            r#"{ kind = "pie", variant = "docsis", limit = 150, estimator = "dq_rate" }"#,
            (0x390dea15b5daf087, 8042, 7687),
        ),
        (
            "ns2",
            r#"{ kind = "pie", variant = "ns2", bytemode = true }"#,
            (0x04bf81b2fcf3cc0c, 8089, 7765),
        ),
        (
            "fq_pie",
            r#"{ kind = "fq_pie", ecn = true }"#,
            (0x5779ec2faaccc768, 8380, 7599),
        ),
        (
            "ared",
            r#"{ kind = "ared" }"#,
            (0xeae64c8165b952fa, 7717, 7557),
        ),
    ];
    for (name, qdisc, want) in cases {
        let text = format!(
            r#"
[run]
noise = false
duration = "6s"
warmup = "1s"
[dumbbell]
pairs = 5
rate = "10Mbit"
delay = "10ms"
qdisc = {qdisc}
[tcp]
ecn = true
[[flow]]
kind = "bulk"
count = 4
from = "client{{i}}"
to = "server{{i}}"
start_spread = "0.5s"
[[flow]]
kind = "cbr"
from = "client4"
to = "server4"
rate = "3Mbit"
size = 1000
start = "2s"
"#
        );
        if std::env::var_os("GOLDEN_PRINT").is_some() {
            let g = fingerprint(&text, 7);
            println!("pie_{name}: ({:#018x}, {}, {})", g.0, g.1, g.2);
            continue;
        }
        check(&format!("pie_{name}"), &text, 7, *want);
    }
}

/// The default noise on (start jitter and host jitter, seeded streams): RRUL through
/// CoDel with flows that take the start jitter. Guards the noise mechanisms' draws.
#[test]
fn rrul_codel_noise() {
    check(
        "rrul_codel_noise",
        r#"
[run]
duration = "3s"
warmup = "0.5s"
[dumbbell]
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "codel" }
[tcp]
cc = "cubic"
# rrul_be: the all-best-effort RRUL this case was recorded with (named as the
# instance was then, so the fingerprint still applies)
[[flow]]
kind = "rrul_be"
name = "rrul0"
from = "client0"
to = "server0"
"#,
        4,
        (0xc5a8d4356a9f58b2, 7368, 7217),
    );
}

/// The residential study's setup: tbf shapers (lazy wake-up) over a one-packet device
/// queue at 100 Mbit/s both ways, PIE (kernel 3.14) under them, the Linux 3.14 TCP
/// profile, RRUL plus a VoIP stream: covers the shaper's deferred `TxDone` and the
/// links' event queue with many same-instant ties.
#[test]
fn residential_tbf_pie_rrul() {
    check(
        "residential_tbf_pie_rrul",
        r#"
[run]
duration = "3s"
warmup = "0s"
[tcp]
stack = "linux-3.14"
cc = "cubic"
[dumbbell]
pairs = 1
rate = "1Gbit"
delay = "25ms"
overhead = 14
device_queue = 1
qdisc = { kind = "pie", variant = "linux-3.14", target = "20ms", tupdate = "30ms", limit = 1000 }
up = { shaper = { kind = "tbf", rate = "100Mbit" } }
down = { shaper = { kind = "tbf", rate = "100Mbit" } }
[[flow]]
kind = "rrul_be"
from = "client0"
to = "server0"
udp_probes = 1
[[flow]]
kind = "voip"
name = "voip"
from = "client0"
to = "server0"
"#,
        3,
        (0xbce6da3085c72932, 68490, 66031),
    );
}
