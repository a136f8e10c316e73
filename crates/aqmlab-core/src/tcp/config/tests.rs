use super::*;
use crate::time::SimDuration;
use crate::units::Limit;

#[test]
fn defaults_merge_and_errors() {
    let d = TcpConfig::default();
    assert_eq!(
        (d.cc, d.mss, d.init_cwnd, d.sack, d.ecn),
        (CcKind::Cubic, 1448, 10, true, false)
    );
    assert_eq!(d.min_rto, SimDuration::from_millis(200));
    assert_eq!(d.initial_rto, SimDuration::from_secs(1));
    assert_eq!(d.rcv_window, 3 * 1024 * 1024);
    let scen: TcpOptions =
        toml::from_str("cc = \"reno\"\nmss = 1000\nmax_window = \"10KB\"").unwrap();
    let flow: TcpOptions = toml::from_str("ecn = true\ndelayed_ack = \"ns2\"").unwrap();
    let c = scen.merged(&flow).resolve("flow[0].tcp").unwrap();
    assert_eq!(
        (c.cc, c.mss, c.ecn, c.delayed_ack, c.max_cwnd),
        (CcKind::NewReno, 1000, true, DelayedAck::Ns2, 10)
    );
    let over: TcpOptions = toml::from_str("cc = \"cubic\"").unwrap();
    assert_eq!(scen.merged(&over).resolve("x").unwrap().cc, CcKind::Cubic);
    let e = TcpOptions {
        mss: Some(10),
        ..Default::default()
    }
    .resolve("flow[1].tcp")
    .unwrap_err();
    assert_eq!(e.field, "flow[1].tcp.mss");
    assert!(
        e.message.contains("10") && e.message.contains("64 to 65000"),
        "{}",
        e.message
    );
    assert!(toml::from_str::<TcpOptions>("cc = \"vegas\"").is_err());
    assert!(toml::from_str::<TcpOptions>("sacks = true").is_err());
    let e = TcpOptions {
        rcv_window: Some(Limit::Bytes(100)),
        ..Default::default()
    }
    .resolve("tcp")
    .unwrap_err();
    assert_eq!(e.field, "tcp.rcv_window");
}

#[test]
fn stack_profiles_and_single_key_overrides() {
    let r = |t: &str| toml::from_str::<TcpOptions>(t).unwrap().resolve("tcp");
    // The default profile is today's behaviour.
    let d = r("").unwrap();
    assert_eq!(d, r("stack = \"linux\"").unwrap());
    assert_eq!(
        (d.ss_growth, d.ca_growth, d.recovery, d.rto_floor, d.prr),
        (
            SsGrowth::Segments,
            CaGrowth::Segments,
            Recovery::Prr,
            RtoFloor::Variance,
            true
        )
    );
    let o = r("stack = \"linux-2.6.29\"").unwrap();
    assert_eq!(
        (o.cc, o.init_cwnd, o.initial_rto),
        (CcKind::Cubic, 3, SimDuration::from_secs(3))
    );
    assert_eq!(
        (o.ss_growth, o.ca_growth, o.recovery),
        (SsGrowth::Acks, CaGrowth::AcksLinux, Recovery::RateHalving)
    );
    assert!(!o.prr);
    let n = r("stack = \"ns2-sack1\"\nmss = 1460").unwrap();
    assert_eq!(
        (n.cc, n.init_cwnd, n.delayed_ack, n.rcv_window),
        (CcKind::NewReno, 2, DelayedAck::Ns2, 10_000 * 1460)
    );
    assert_eq!(
        (n.min_rto, n.rto_floor, n.hystart),
        (SimDuration::from_millis(200), RtoFloor::Sum, false)
    );
    // ns-2 agents carry no timestamp option and time one segment per flight.
    assert_eq!(
        (n.timestamps, n.header_bytes(), n.rtt_timing),
        (false, 40, RttTiming::Ns2)
    );
    assert_eq!(
        (d.timestamps, d.header_bytes(), d.rtt_timing),
        (true, 52, RttTiming::Ack)
    );
    let t = r("stack = \"ns3\"").unwrap();
    assert_eq!(
        (t.reno_halves, d.reno_halves),
        (RenoHalves::Flight, RenoHalves::Cwnd)
    );
    assert_eq!(
        (t.delayed_ack, t.min_rto, t.rcv_window, t.recovery),
        (
            DelayedAck::Ns3,
            SimDuration::from_secs(1),
            131_072,
            Recovery::Rfc6675
        )
    );
    let l = r("stack = \"linux-3.14\"").unwrap();
    assert_eq!(
        (l.ss_growth, l.ca_growth, l.recovery, l.init_cwnd),
        (SsGrowth::Segments, CaGrowth::AcksLinux, Recovery::Prr, 10)
    );
    // A single key overrides its profile setting and nothing else.
    let o2 = r("stack = \"linux-2.6.29\"\ninit_cwnd = 4").unwrap();
    assert_eq!(o2, TcpConfig { init_cwnd: 4, ..o });
    // `prr = true` is the older spelling of recovery = "prr" and beats the profile.
    let p = r("stack = \"linux-2.6.29\"\nprr = true").unwrap();
    assert_eq!((p.recovery, p.prr), (Recovery::Prr, true));
    // A flow table's profile applies under the scenario's single keys.
    let scen: TcpOptions = toml::from_str("init_cwnd = 5").unwrap();
    let flow: TcpOptions = toml::from_str("stack = \"ns3\"").unwrap();
    let c = scen.merged(&flow).resolve("flow[0].tcp").unwrap();
    assert_eq!(
        (c.stack, c.init_cwnd, c.delayed_ack),
        (Stack::Ns3, 5, DelayedAck::Ns3)
    );
    // Contradictions and unknown profiles are errors naming the key.
    let e = r("recovery = \"rfc6675\"\nprr = true").unwrap_err();
    assert_eq!(e.field, "tcp.prr");
    assert!(e.message.contains("rfc6675"), "{}", e.message);
    let e = toml::from_str::<TcpOptions>("stack = \"linux-4.19\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("linux-2.6.29") && e.contains("ns2-sack1"), "{e}");
    // Loss detection and tail loss probes per profile (RACK-TLP in 6.1, TLP since
    // 3.10, neither in 2.6.29, ns-2 or ns-3), and single-key overrides.
    for (name, ld, tlp) in [
        ("linux", LossDetection::Rack, Tlp::Linux),
        ("linux-3.14", LossDetection::Fack, Tlp::Linux3_14),
        ("linux-2.6.29", LossDetection::Fack, Tlp::Off),
        ("ns2-sack1", LossDetection::Dupthresh, Tlp::Off),
        ("ns3", LossDetection::Dupthresh, Tlp::Off),
    ] {
        let c = r(&format!("stack = \"{name}\"")).unwrap();
        assert_eq!((c.loss_detection, c.tlp), (ld, tlp), "{name}");
    }
    for (name, d) in [
        ("linux", true),
        ("linux-2.6.29", true),
        ("ns2-sack1", false),
        ("ns3", false),
    ] {
        assert_eq!(
            r(&format!("stack = \"{name}\"")).unwrap().dsack,
            d,
            "{name}"
        );
    }
    // Undo flavour per profile; `rto_undo` is its older boolean form.
    for (name, u) in [
        ("linux", Undo::Linux),
        ("linux-3.14", Undo::Linux3_14),
        ("linux-2.6.29", Undo::Linux2_6),
        ("ns2-sack1", Undo::Off),
        ("ns3", Undo::Off),
    ] {
        assert_eq!(r(&format!("stack = \"{name}\"")).unwrap().undo, u, "{name}");
    }
    let u = |t: &str| r(t).map(|c| c.undo);
    assert_eq!(u("stack = \"linux-3.14\"\nrto_undo = false"), Ok(Undo::Off));
    assert_eq!(
        u("stack = \"linux-3.14\"\nrto_undo = true"),
        Ok(Undo::Linux3_14)
    );
    assert_eq!(u("stack = \"ns3\"\nundo = \"linux\""), Ok(Undo::Linux));
    let e = r("stack = \"ns3\"\nrto_undo = true").unwrap_err();
    assert!(
        e.field == "tcp.rto_undo" && e.message.contains("undo ="),
        "{e:?}"
    );
    let e = r("undo = \"linux\"\nrto_undo = false").unwrap_err();
    assert!(
        e.field == "tcp.rto_undo" && e.message.contains("linux-2.6"),
        "{e:?}"
    );
    let e = toml::from_str::<TcpOptions>("undo = \"on\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("linux-2.6") && e.contains("off"), "{e}");
    let c = r("stack = \"ns3\"\nloss_detection = \"rack\"\ntlp = \"linux-3.14\"").unwrap();
    assert_eq!(
        (c.loss_detection, c.tlp),
        (LossDetection::Rack, Tlp::Linux3_14)
    );
    let e = toml::from_str::<TcpOptions>("tlp = true")
        .unwrap_err()
        .to_string();
    assert!(e.contains("tlp"), "{e}");
    let e = toml::from_str::<TcpOptions>("tlp = \"on\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("off") && e.contains("linux-3.14"), "{e}");
    let e = toml::from_str::<TcpOptions>("loss_detection = \"sack\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rack") && e.contains("dupthresh") && e.contains("fack"),
        "{e}"
    );
    // Every profile is listed for `aqmlab describe tcp` and resolves.
    for (name, _) in STACKS {
        let c = r(&format!("stack = \"{name}\"")).unwrap();
        assert_eq!(c.stack.name(), *name);
    }
}
