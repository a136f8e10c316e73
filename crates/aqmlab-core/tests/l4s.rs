//! L4S end to end: ECN codepoints through the network, DCTCP against a step marker,
//! Prague and CUBIC sharing DualPI2 (issue 16's behavioural checks).

mod common;
use common::run;

use aqmlab_core::RunResult;

fn metric(r: &RunResult, queue: &str, key: &str) -> f64 {
    r.queue(queue)
        .unwrap()
        .lower_metric(key)
        .unwrap_or_else(|| panic!("{queue} has no {key}"))
}

/// DCTCP against a step marker of K packets (DualPI2's L queue with a packet step,
/// every ECT packet classified L): the DCTCP paper (Alizadeh et al. 2010, §3.3) gives
/// a sawtooth between K + N − A and K + N with amplitude A ≈ ½·√(2N(C·RTT + K)), and
/// full throughput for K > C·RTT / 7.
#[test]
fn dctcp_holds_the_queue_near_the_step_threshold() {
    let k = 20.0;
    let r = run(
        r#"
[run]
duration = "8s"
warmup = "3s"
[dumbbell]
pairs = 1
rate = "100Mbit"
delay = "0.5ms"
qdisc = { kind = "dualpi2", ecn_mask = "any_ect", step_thresh = 20 }
[[flow]]
kind = "bulk"
from = "client0"
to = "server0"
tcp = { cc = "dctcp" }
"#,
        1,
    );
    let pkt_time = (1500.0 + 14.0) * 8.0 / 100e6;
    let q_mean = metric(&r, "bottleneck_up", "l_sojourn_mean") / pkt_time;
    let q_p99 = metric(&r, "bottleneck_up", "l_sojourn_p99") / pkt_time;
    let bdp = 100e6 * 0.001 / ((1500.0 + 14.0) * 8.0); // C·RTT ≈ 8.3 packets
    let n: f64 = 1.0;
    let amp = 0.5 * (2.0 * n * (bdp + k)).sqrt();
    assert!(
        q_mean > k + n - amp - 1.0 && q_mean < k + n + 1.0,
        "mean queue {q_mean:.1} packets, K = {k}, A = {amp:.1}"
    );
    assert!(q_p99 < k + n + amp, "p99 {q_p99:.1}");
    let f = r.flow("bulk0").unwrap();
    assert!(
        f.goodput_bps > 0.93 * 100e6,
        "K > C·RTT/7: full throughput, got {}",
        f.goodput_bps
    );
    assert_eq!(f.lost_pkts, 0, "no loss: every signal is a mark");
    assert!(f.ce_pkts > 0);
    let up = r.queue("bottleneck_up").unwrap();
    assert!(up
        .marks_by_reason
        .iter()
        .any(|(k, n)| *k == "step" && *n > 0));
}

/// The issue's headline: 1 Prague + 1 CUBIC through DualPI2 at 40 Mbit/s, 20 ms base
/// RTT. The L queue stays under a millisecond or two, the C queue sits at the PI2
/// target, and the coupling k = 2 equalises *windows*: the rate ratio is the RTT
/// ratio, because CUBIC's RTT includes the 15 ms classic queue.
#[test]
fn prague_and_cubic_share_dualpi2() {
    let r = run(
        r#"
[run]
duration = "30s"
warmup = "10s"
[dumbbell]
pairs = 2
rate = "40Mbit"
delay = "10ms"
qdisc = { kind = "dualpi2" }
[[flow]]
kind = "bulk"
name = "prague"
from = "client0"
to = "server0"
tcp = { cc = "prague" }
[[flow]]
kind = "bulk"
name = "cubic"
from = "client1"
to = "server1"
tcp = { cc = "cubic", ecn = true }
"#,
        1,
    );
    let l_p99 = metric(&r, "bottleneck_up", "l_sojourn_p99");
    let c_mean = metric(&r, "bottleneck_up", "c_sojourn_mean");
    assert!(l_p99 < 0.002, "L-queue sojourn p99 {l_p99}");
    assert!((c_mean - 0.015).abs() < 0.003, "C-queue mean {c_mean}");
    let (p, c) = (r.flow("prague").unwrap(), r.flow("cubic").unwrap());
    assert_eq!(p.lost_pkts + c.lost_pkts, 0);
    let ratio = p.goodput_bps / c.goodput_bps;
    let srtt = |n: &str| r.extra(n, "srtt_mean").unwrap();
    let rtt_ratio = srtt("cubic") / srtt("prague");
    let cwnd = |n: &str| r.extra(n, "cwnd_mean").unwrap();
    let wnd_ratio = cwnd("prague") / cwnd("cubic");
    println!(
        "prague/cubic rate ratio {ratio:.2}, RTT ratio {rtt_ratio:.2}, window ratio {wnd_ratio:.2}"
    );
    assert!(
        (0.7..1.4).contains(&wnd_ratio),
        "windows roughly equal: {wnd_ratio}"
    );
    assert!(
        (ratio / rtt_ratio - 1.0).abs() < 0.35,
        "rate ratio {ratio} follows the RTT ratio {rtt_ratio}"
    );
    assert!(p.goodput_bps + c.goodput_bps > 0.9 * 40e6);
    // Prague's packets were ECT(1) (classified L, coupled marks), CUBIC's ECT(0).
    let up = r.queue("bottleneck_up").unwrap();
    let marks = |k: &str| {
        up.marks_by_reason
            .iter()
            .find(|(n, _)| *n == k)
            .map_or(0, |x| x.1)
    };
    assert!(marks("coupled") > 100 * marks("early").max(1) / 10);
    assert!(metric(&r, "bottleneck_up", "l_pkts") > 0.0);
    assert!(metric(&r, "bottleneck_up", "c_pkts") > 0.0);
    let pm = metric(&r, "bottleneck_up", "p_prime_mean");
    assert!(pm > 0.0 && pm < 0.5, "p' mean {pm}");
}
