//! The link models under TCP (issue 5's must-show items that need TCP): DOCSIS regulator,
//! tiers and bonding with bulk TCP; TCP over WiFi (latency below fq_codel, contention,
//! efficiency); an asymmetric shaped 10/1 Mbit/s line where upload ACK traffic hurts the
//! download. Every run also checks packet conservation.

mod common;
use common::within;

use aqmlab_core::result::RunResult;
use aqmlab_core::{Scenario, Simulator};

fn run(toml: &str, seed: u64) -> RunResult {
    let sc = Scenario::from_toml_str(toml).unwrap_or_else(|e| panic!("parse: {e}\n{toml}"));
    let mut sim = Simulator::new(&sc, seed).unwrap_or_else(|e| panic!("validate: {e}"));
    sim.run();
    sim.check_conservation()
        .unwrap_or_else(|e| panic!("conservation: {e}"));
    sim.results()
}

/// Ethernet-frame bit/s of a TCP flow's goodput (1448-byte payload per 1518-byte frame).
fn frames(goodput: f64) -> f64 {
    goodput * 1518.0 / 1448.0
}

fn docsis(extra: &str, flows: &str) -> String {
    format!(
        r#"
[run]
duration = "20s"
warmup = "5s"
[docsis]
server_delays = ["20ms", "30ms", "40ms", "50ms", "20ms", "30ms", "40ms", "50ms"]
servers = 8
{extra}
{flows}
"#
    )
}

/// A greedy TCP flow through a 6 Mbit/s service flow on a 38 Mbit/s channel gets
/// 6 Mbit/s of frames ± 1 % (the regulator's holding queue, 64 packets ≈ 130 ms, is more
/// than the 40 ms path's bandwidth-delay product, so it never runs dry).
#[test]
fn tcp_through_a_6mbit_regulator() {
    let r = run(
        &docsis(
            "regulator_limit = 64\n[[docsis.tier]]\nmax_rate = \"6Mbit\"\n",
            "[[flow]]\nname = \"ftp\"\nkind = \"bulk\"\nfrom = \"server0\"\nto = \"cm0\"\n",
        ),
        1,
    );
    let got = frames(r.flow("ftp").unwrap().goodput_bps);
    println!(
        "tcp through 6M regulator: {got:.0} bit/s of frames; queue {:?}",
        r.queue("docsis_down").unwrap().lower_extra
    );
    assert!(within(got, 6e6, 0.01), "{got}");
}

/// Tiers with TCP and no congestion: a 6 and a 12 Mbit/s modem each get their rate.
#[test]
fn tcp_tiers_each_get_their_rate() {
    let r = run(
        &docsis(
            "modems = 2\nregulator_limit = 128\n[[docsis.tier]]\nmax_rate = \"6Mbit\"\n[[docsis.tier]]\nmax_rate = \"12Mbit\"\n",
            "[[flow]]\nkind = \"bulk\"\ncount = 2\nfrom = \"server{i}\"\nto = \"cm{i}\"\n",
        ),
        1,
    );
    for (name, want) in [("bulk0.0", 6e6), ("bulk0.1", 12e6)] {
        let got = frames(r.flow(name).unwrap().goodput_bps);
        println!("tcp tier {name}: {got:.0}");
        assert!(within(got, want, 0.01), "{name}: {got}");
    }
}

/// Bonding with TCP: 8 bulk flows carry 4 × as much through 4 channels as through one
/// (CMTS queue and nothing else scaled, as the study's bonded variant scales the queue).
#[test]
fn tcp_bonding_carries_four_times_one_channel() {
    let flows = "[[flow]]\nkind = \"bulk\"\ncount = 8\nfrom = \"server{i}\"\nto = \"cm{i}\"\n";
    let total = |ch: u32, limit: u32| {
        let r = run(&docsis(&format!("modems = 8\nchannels = {ch}\ndownstream_qdisc = {{ kind = \"fifo\", limit = {limit} }}\n"), flows), 1);
        let t: f64 = (0..8)
            .map(|i| r.flow(&format!("bulk0.{i}")).unwrap().goodput_bps)
            .sum();
        println!(
            "tcp bonding {ch} channel(s): {t:.0} bit/s goodput, utilisation {:.4}",
            r.queue("docsis_down").unwrap().utilization
        );
        t
    };
    let one = total(1, 2048);
    let four = total(4, 8192);
    assert!(within(frames(one), 38e6, 0.02), "{one}");
    assert!(within(four / one, 4.0, 0.02), "ratio {}", four / one);
}

fn wifi_dumbbell(wifi: &str, flows: &str) -> String {
    format!(
        r#"
[run]
duration = "12s"
warmup = "4s"
[dumbbell]
rate = "1Gbit"
delay = "5ms"
[dumbbell.wifi]
{wifi}
{flows}
"#
    )
}

const PING: &str = "[[flow]]\nname = \"ping\"\nkind = \"ping\"\nfrom = \"client0\"\nto = \"server0\"\ninterval = \"50ms\"\nstart = \"1s\"\n";

fn induced(r: &RunResult, base: f64) -> f64 {
    let v: Vec<f64> = r
        .flow_samples(r.flow("ping").unwrap().id, "rtt")
        .iter()
        .filter(|s| s.0 > 4.0)
        .map(|s| s.1)
        .collect();
    v.iter().sum::<f64>() / v.len() as f64 - base
}

/// One station, saturating downlink TCP, fq_codel at every qdisc: the ping's latency is
/// dominated by the WiFi driver/hardware queue below fq_codel — at least 5 × what the
/// same scenario shows over a wired link of the same effective rate. Also: TCP's
/// goodput stays below the documented single-sender efficiency (the station's ACKs take
/// airtime too) but not far below it.
#[test]
fn tcp_over_wifi_latency_is_in_the_lower_layer() {
    let bulk = "[[flow]]\nname = \"down\"\nkind = \"bulk\"\nfrom = \"server0\"\nto = \"client0\"\n";
    let flows = format!("{bulk}{PING}");
    let r = run(&wifi_dumbbell("qdisc = { kind = \"fq_codel\" }", &flows), 1);
    let good = r.flow("down").unwrap().goodput_bps;
    let base = 2.0 * 0.005; // the bottleneck's 5 ms, both ways
    let w = induced(&r, base);
    let ap = r.queue("wifi_router_a").unwrap();
    // the same effective rate on a wire: the WiFi goodput as IP + Ethernet framing
    let rate = good * 1514.0 / 1448.0;
    let wired = format!(
        r#"
[run]
duration = "12s"
warmup = "4s"
[dumbbell]
rate = "1Gbit"
delay = "5ms"
access_rate = "{rate:.0}"
access_qdisc = {{ kind = "fq_codel" }}
{flows}
"#
    );
    let rw = run(&wired, 1);
    let d = induced(&rw, base);
    let formula = 32.0 * 1500.0 * 8.0 / 3242.5e-6 * 1448.0 / 1500.0;
    println!(
        "tcp over wifi: goodput {good:.0} (single-sender formula {formula:.0}, wired same rate {:.0}); ping induced wifi {:.2} ms vs wired {:.2} ms; AP qdisc sojourn mean {:.2} ms, A-MPDU {:?} frames",
        rw.flow("down").unwrap().goodput_bps,
        w * 1e3,
        d * 1e3,
        ap.sojourn_mean * 1e3,
        ap.lower_metric("frames_per_ampdu")
    );
    assert!(w >= 5.0 * d, "wifi {w} vs wired {d}");
    assert!(
        good < formula && good > 0.8 * formula,
        "{good} vs {formula}"
    );
    // the AQM keeps its own queue short; the latency is below it
    assert!(ap.sojourn_mean < w / 2.0, "{} vs {w}", ap.sojourn_mean);
}

/// Bidirectional TCP saturation: with the default access parameters neither direction
/// starves (the ratio is not 1: the AP's 32-frame A-MPDUs carry the upload's ACKs next
/// to the download's data, the station's are up to 63 frames; over seeds 3–8 the
/// download/upload ratio is 0.64–0.76 without WMM, 0.51–0.71 with it); when the
/// station's CWmin is 63 instead of 15 the AP wins most contentions and the ratio moves
/// several-fold towards the download.
#[test]
fn tcp_bidirectional_wifi_contention() {
    let flows = "[[flow]]\nname = \"down\"\nkind = \"bulk\"\nfrom = \"server0\"\nto = \"client0\"\n[[flow]]\nname = \"up\"\nkind = \"bulk\"\nfrom = \"client0\"\nto = \"server0\"\n";
    let pair = |wifi: &str| {
        let r = run(&wifi_dumbbell(wifi, flows), 2);
        let (d, u) = (
            r.flow("down").unwrap().goodput_bps,
            r.flow("up").unwrap().goodput_bps,
        );
        println!(
            "tcp bidirectional [{}]: down {d:.0} up {u:.0}",
            wifi.replace('\n', " ")
        );
        (d, u)
    };
    let (d1, u1) = pair("qdisc = { kind = \"fq_codel\" }");
    assert!(
        d1 / u1 > 0.4 && d1 / u1 < 2.5,
        "default parameters: {d1} vs {u1}"
    );
    let (d2, u2) = pair(
        "qdisc = { kind = \"fq_codel\" }\n[dumbbell.wifi.station.client0]\naccess = { cwmin = 63 }",
    );
    assert!(d2 / u2 > 1.5, "AP favoured: {d2} vs {u2}");
    assert!((d2 / u2) / (d1 / u1) > 3.0, "{d1}/{u1} -> {d2}/{u2}");
}

/// The residential study's asymmetric 10/1 Mbit/s line (here a 100 Mbit/s line shaped by
/// htb in each direction) with FIFOs of 127 packets: 4 uploads next to 4 downloads fill
/// the 1 Mbit/s upstream, whose queue delays and drops the downloads' ACKs, so the
/// downloads get much less than they do alone.
#[test]
fn asymmetric_shaped_line_upload_acks_hurt_the_download() {
    let base = r#"
[run]
duration = "30s"
warmup = "10s"
[dumbbell]
pairs = 4
rate = "100Mbit"
delay = "25ms"
qdisc = { kind = "fifo", limit = 127 }
[dumbbell.down]
shaper = { rate = "10Mbit" }
[dumbbell.up]
shaper = { rate = "1Mbit" }
[[flow]]
kind = "bulk"
count = 4
from = "server{i}"
to = "client{i}"
"#;
    let down = |r: &RunResult| {
        (0..4)
            .map(|i| r.flow(&format!("bulk0.{i}")).unwrap().goodput_bps)
            .sum::<f64>()
    };
    let srtt = |r: &RunResult| {
        (0..4)
            .map(|i| r.extra(&format!("bulk0.{i}"), "srtt_mean").unwrap())
            .sum::<f64>()
            / 4.0
    };
    // Means over seeds 1-3: the start jitter and host timing noise move one 30 s run's
    // download share by several percent (seed 1 alone is 0.87-0.91 of the download alone
    // depending on the loss-recovery details), the effect is the mean.
    let seeds = [1u64, 2, 3];
    let n = seeds.len() as f64;
    let with_up = format!("{base}[[flow]]\nkind = \"bulk\"\ncount = 4\nfrom = \"client{{i}}\"\nto = \"server{{i}}\"\n");
    let (mut alone, mut srtt_alone, mut both, mut srtt_both) = (0.0, 0.0, 0.0, 0.0);
    for &seed in &seeds {
        let ra = run(base, seed);
        alone += down(&ra) / n;
        srtt_alone += srtt(&ra) / n;
        let rb = run(&with_up, seed);
        both += down(&rb) / n;
        srtt_both += srtt(&rb) / n;
    }
    let r = run(&with_up, 1);
    let up: f64 = (0..4)
        .map(|i| r.flow(&format!("bulk1.{i}")).unwrap().goodput_bps)
        .sum();
    let upq = r.queue("bottleneck_up").unwrap();
    println!(
        "asymmetric 10/1: download alone {alone:.0} (srtt {srtt_alone:.3} s), with 4 uploads {both:.0} (srtt {srtt_both:.3} s; uploads {up:.0}); upstream FIFO drops {}, sojourn mean {:.3} s",
        upq.dropped, upq.sojourn_mean
    );
    assert!(alone > 0.9 * 10e6 * 1448.0 / 1514.0, "{alone}");
    assert!(both < 0.9 * alone, "{both} vs {alone}");
    // the mechanism: the downloads' ACKs wait behind upload data in the 1 Mbit/s FIFO
    // (their RTT grows) and are dropped with it
    assert!(srtt_both > 1.5 * srtt_alone, "{srtt_both} vs {srtt_alone}");
    assert!(
        upq.dropped > 100 && upq.sojourn_mean > 0.1,
        "{} {}",
        upq.dropped,
        upq.sojourn_mean
    );
}
