//! Property tests every qdisc must pass, driven through `AnyQdisc` built from scenario
//! tables: for random sequences of arrivals (random flows, sizes, ECN capability),
//! dequeue opportunities and clock advances,
//! - the `QdiscStats` identities hold after every call;
//! - the backlog never exceeds the limit (packets and/or bytes);
//! - every packet is accounted for exactly once: offered = dequeued + reported drops +
//!   backlog, a `Dropped` verdict reports the arriving packet itself, a dropped packet
//!   is never dequeued later, no packet is dequeued twice;
//! - a `Marked` verdict leaves the packet CE-marked and only ECN-capable packets are
//!   marked.
//!
//! Adding a qdisc: one line in [`CASES`] with a small limit and aggressive parameters, so
//! that short sequences reach the AQM's drop and mark paths.

use super::*;
use crate::packet::{flow_hash, Ecn};
use crate::rng::Rng;
use crate::time::SimDuration;
use proptest::prelude::{
    any, prop, prop_assert, prop_assert_eq, prop_oneof, proptest, Just, ProptestConfig, Strategy,
    TestCaseError,
};
use std::collections::HashSet;

/// A qdisc table and the bound its backlog must respect.
struct Case {
    name: &'static str,
    toml: &'static str,
    max_pkts: Option<u64>,
    max_bytes: Option<u64>,
}

const fn pkts(name: &'static str, toml: &'static str, n: u64) -> Case {
    Case {
        name,
        toml,
        max_pkts: Some(n),
        max_bytes: None,
    }
}
const fn bytes(name: &'static str, toml: &'static str, b: u64) -> Case {
    Case {
        name,
        toml,
        max_pkts: None,
        max_bytes: Some(b),
    }
}

const CASES: &[Case] = &[
    pkts("fifo", "kind = 'fifo'\nlimit = 20", 20),
    bytes("bfifo", "kind = 'fifo'\nlimit = '9000B'", 9000),
    bytes("red", "kind = 'red'\nmin = '3KB'\nmax = '9KB'\nlimit = '15KB'\nburst = 4", 15_000),
    pkts("red-pkts-gentle-ecn", "kind = 'red'\nmin = 2\nmax = 6\nlimit = 12\newma_log = 1\ngentle = true\necn = true\nprobability = 0.5", 12),
    pkts("red-ecn-harddrop", "kind = 'red'\nmin = 2\nmax = 5\nlimit = 8\newma_log = 1\necn = true\nharddrop = true", 8),
    bytes("ared", "kind = 'ared'\nmin = '2KB'\nmax = '8KB'\nlimit = '12KB'\newma_log = 2\nbandwidth = '1Mbit'", 12_000),
    pkts("pie", "kind = 'pie'\nlimit = 15\ntarget = '1ms'\ntupdate = '1ms'\nmax_burst = '0ms'", 15),
    pkts("pie-ecn-bytemode", "kind = 'pie'\nlimit = 15\ntarget = '1ms'\ntupdate = '1ms'\nmax_burst = '0ms'\necn = true\necn_prob = 0.5\nbytemode = true", 15),
    pkts("pie-dq-rate", "kind = 'pie'\nlimit = 30\ntarget = '1ms'\ntupdate = '2ms'\nestimator = 'dq_rate'\ndq_threshold = 3000", 30),
    pkts("pie-linux-3.14", "kind = 'pie'\nvariant = 'linux-3.14'\nlimit = 25\ntarget = '1ms'\ntupdate = '1ms'\nmax_burst = '0ms'\ndq_threshold = 3000", 25),
    pkts("pie-rfc8033", "kind = 'pie'\nvariant = 'rfc8033'\nlimit = 15\ntarget = '1ms'\ntupdate = '1ms'\nmax_burst = '1ms'\necn = true", 15),
    bytes("pie-draft00", "kind = 'pie'\nvariant = 'draft00'\nlimit = '20KB'\ntarget = '1ms'\ntupdate = '1ms'\nmax_burst = '0ms'\ndq_threshold = 3000", 20_000),
    pkts("pie-ns2", "kind = 'pie'\nvariant = 'ns2'\nlimit = 20\ntarget = '1ms'\ntupdate = '1ms'\nmax_burst = '1ms'\ndq_threshold = 3000\necn = true", 20),
    pkts("pie-docsis", "kind = 'pie'\nvariant = 'docsis'\nlimit = 12\ntarget = '1ms'\ntupdate = '1ms'\nmax_burst = '2ms'", 12),
    pkts("codel", "kind = 'codel'\nlimit = 20\ntarget = '1ms'\ninterval = '5ms'", 20),
    pkts("codel-ecn-draft00", "kind = 'codel'\nvariant = 'draft00'\nlimit = 20\ntarget = '1ms'\ninterval = '5ms'\necn = true", 20),
    pkts("codel_act", "kind = 'codel_act'\nlimit = 20\ntarget = '1ms'\ninterval = '5ms'", 20),
    pkts("codel-taildrop", "kind = 'codel'\ndrop_at = 'enqueue'\nlimit = 20\ntarget = '1ms'\ninterval = '5ms'", 20),
    pkts("fq_codel", "kind = 'fq_codel'\nlimit = 25\ntarget = '1ms'\ninterval = '5ms'\nflows = 16", 25),
    pkts("fq_nocodel", "kind = 'fq_nocodel'\nlimit = 25\nflows = 16", 25),
    pkts("fq_pie", "kind = 'fq_pie'\nlimit = 25\nflows = 16\ntarget = '1ms'\ntupdate = '1ms'", 25),
    pkts("dualpi2", "kind = 'dualpi2'\nlimit = 20\ntarget = '1ms'\ntupdate = '1ms'\nalpha = 20.0\nbeta = 50.0", 20),
    pkts("dualpi2-l4s-enqueue", "kind = 'dualpi2'\nlimit = 25\ntarget = '1ms'\ntupdate = '1ms'\nalpha = 20.0\nbeta = 50.0\necn_mask = 'any_ect'\nstep_thresh = 2\ndrop_at = 'enqueue'\noverload = 'overflow'", 25),
    pkts("fq_pie-ecn-dq-rate", "kind = 'fq_pie'\nlimit = 30\nflows = 4\ntarget = '1ms'\ntupdate = '2ms'\necn = true\necn_prob = 0.5\nbytemode = true\ndq_rate_estimator = true\nquantum = 600", 30),
    pkts("sfq", "kind = 'sfq'\nlimit = 20\ndivisor = 16", 20),
    pkts("drr", "kind = 'drr'\nlimit = 30\nflow_limit = 12", 30),
    // strict-priority bands: per-band limits, so the bound is bands x limit
    pkts("pfifo_fast", "kind = 'pfifo_fast'\nlimit = 6", 18),
    pkts("prio-4-bands", "kind = 'prio'\nbands = 4\nlimit = 4\npriomap = [3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0]", 16),
    bytes("cake", "kind = 'cake'\nmemlimit = '20KB'\nrtt = '5ms'", 20_000),
    bytes("cake-shaped-ds4-ingress", "kind = 'cake'\nbandwidth = '2Mbit'\ndiffserv = 'diffserv4'\ningress = true\nack_filter = 'aggressive'\nmemlimit = '15KB'\nrtt = '5ms'\nisolation = 'dual-dsthost'", 15_000),
    bytes("cake-flows-besteffort-atm", "kind = 'cake'\nisolation = 'flows'\ndiffserv = 'besteffort'\nmemlimit = '10KB'\npreset = 'conservative'\nwash = true\nbandwidth = '5Mbit'\nrtt = 'lan'", 10_000),
];

/// The DSCP of the harness's flows: BE, AF11 (pfifo_fast band 2), AF12 (band 0), EF, so
/// band qdiscs see every band (ECT(0) moves a packet to band 2 too).
const FLOW_DSCP: [u8; 4] = [0, 10, 12, 46];

#[derive(Copy, Clone, Debug)]
enum Op {
    Enqueue {
        flow: u8,
        size: u16,
        ect: bool,
    },
    Dequeue,
    /// Advance the clock by this many microseconds.
    Advance(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..4, prop_oneof![Just(1500u16), Just(64u16), 40u16..1500], any::<bool>()).prop_map(|(flow, size, ect)| Op::Enqueue { flow, size, ect }),
        3 => Just(Op::Dequeue),
        2 => prop_oneof![0u32..2000, 2000u32..200_000, Just(1_000_000u32)].prop_map(Op::Advance),
    ]
}

fn run(case: &Case, ops: &[Op]) -> Result<(), TestCaseError> {
    let cfg: QdiscConfig = toml::from_str(case.toml)
        .map_err(|e| TestCaseError::fail(format!("{}: {e}", case.name)))?;
    let ctx = BuildCtx {
        rate: Rate::from_bps(10_000_000),
        mtu: 1500,
        overhead: 14,
        rng: Rng::stream(7, "qdisc", 0),
    };
    cfg.validate(&ctx)
        .map_err(|e| TestCaseError::fail(format!("{}: {e:?}", case.name)))?;
    let mut q = cfg.build(ctx);
    let mut out = QdiscOut::new(true);
    let mut now = SimTime::ZERO;
    let (mut offered, mut dequeued, mut dropped) = (0u64, 0u64, 0u64);
    let mut gone: HashSet<u64> = HashSet::new();
    let mut ect_of: Vec<bool> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let ctx = || format!("{} op {i} {op:?}", case.name);
        match *op {
            Op::Enqueue { flow, size, ect } => {
                let uid = offered;
                offered += 1;
                ect_of.push(ect);
                let mut p = Packet {
                    uid,
                    flow: flow as u32,
                    src: 0,
                    dst: 1,
                    size: size as u32,
                    hash: flow_hash(flow as u32, 0, 1),
                    enqueued_at: now,
                    dscp: FLOW_DSCP[flow as usize % 4],
                    ..Default::default()
                };
                p.ecn = if ect { Ecn::Ect0 } else { Ecn::NotEct };
                let before = out.drops.len();
                let v = q.enqueue(p, now, &mut out);
                match v {
                    Verdict::Dropped(why) => {
                        let last = out.drops.last().ok_or_else(|| {
                            TestCaseError::fail(format!(
                                "{}: Dropped verdict without a reported drop",
                                ctx()
                            ))
                        })?;
                        prop_assert_eq!(last.0.uid, uid, "{}", ctx());
                        prop_assert_eq!(last.1, why, "{}", ctx());
                    }
                    Verdict::Marked(_) => prop_assert!(ect, "{}: marked a not-ECT packet", ctx()),
                    Verdict::Enqueued => {}
                }
                prop_assert!(
                    out.drops.len() > before || !matches!(v, Verdict::Dropped(_)),
                    "{}",
                    ctx()
                );
            }
            Op::Dequeue => {
                if let Some(p) = q.dequeue(now, &mut out) {
                    dequeued += 1;
                    prop_assert!(gone.insert(p.uid), "{}: packet {} left twice", ctx(), p.uid);
                    prop_assert!(p.uid < offered, "{}", ctx());
                    if p.ecn == Ecn::Ce {
                        prop_assert!(
                            ect_of[p.uid as usize],
                            "{}: a not-ECT packet left CE-marked",
                            ctx()
                        );
                    }
                }
            }
            Op::Advance(us) => now += SimDuration::from_micros(us as u64),
        }
        for (p, why) in out.drops.drain(..) {
            dropped += 1;
            prop_assert!(
                gone.insert(p.uid),
                "{}: packet {} dropped after leaving ({why:?})",
                ctx(),
                p.uid
            );
        }
        let st = q.stats();
        st.check(q.len() as u64, q.backlog_bytes())
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", ctx())))?;
        prop_assert_eq!(st.arrivals, offered, "{}", ctx());
        prop_assert_eq!(st.dequeued, dequeued, "{}", ctx());
        prop_assert_eq!(st.total_drops(), dropped, "{}", ctx());
        prop_assert_eq!(offered, dequeued + dropped + q.len() as u64, "{}", ctx());
        if let Some(n) = case.max_pkts {
            prop_assert!(
                q.len() as u64 <= n,
                "{}: {} packets over the limit {n}",
                ctx(),
                q.len()
            );
        }
        if let Some(b) = case.max_bytes {
            prop_assert!(
                q.backlog_bytes() <= b,
                "{}: {} bytes over the limit {b}",
                ctx(),
                q.backlog_bytes()
            );
        }
        for tp in &out.trace {
            prop_assert!(
                (tp.var as usize) < q.trace_vars().len(),
                "{}: trace var {} out of range",
                ctx(),
                tp.var
            );
        }
    }
    // Trace points come in time order.
    prop_assert!(
        out.trace.windows(2).all(|w| w[0].t <= w[1].t),
        "{}: trace out of order",
        case.name
    );
    Ok(())
}

fn build(case: &Case) -> AnyQdisc {
    let cfg: QdiscConfig = toml::from_str(case.toml).unwrap();
    cfg.build(BuildCtx {
        rate: Rate::from_bps(10_000_000),
        mtu: 1500,
        overhead: 14,
        rng: Rng::stream(7, "qdisc", 0),
    })
}

/// The packet of operation `i` for the two-copy comparisons below (the same for both).
fn twin_packet(i: usize, flow: u8, size: u16, ect: bool, now: SimTime) -> Packet {
    Packet {
        uid: i as u64,
        flow: flow as u32,
        size: size as u32,
        hash: flow_hash(flow as u32, 0, 1),
        enqueued_at: now,
        dscp: FLOW_DSCP[flow as usize % 4],
        ecn: if ect { Ecn::Ect0 } else { Ecn::NotEct },
        ..Default::default()
    }
}

/// The `Qdisc::pass_through` contract: two copies of a case see the same operations; at
/// every arrival copy `a` offers the fast path, and where it is taken copy `b` enqueues
/// and dequeues at once and must get the same packet back, unchanged; elsewhere both
/// enqueue. Stats, drops and every later dequeue must agree. Returns how often the fast
/// path was taken.
fn run_pass_through(case: &Case, ops: &[Op]) -> Result<u64, TestCaseError> {
    let mut taken = 0;
    drive_twins(
        case,
        ops,
        |a, b, oa, ob, p, now, ctx| {
            if a.pass_through(p.size, now) {
                taken += 1;
                prop_assert_eq!(b.enqueue(p, now, ob), Verdict::Enqueued, "{}", ctx);
                prop_assert_eq!(b.dequeue(now, ob), Some(p), "{}", ctx);
            } else {
                let (va, vb) = (a.enqueue(p, now, oa), b.enqueue(p, now, ob));
                prop_assert_eq!(va, vb, "{}", ctx);
            }
            Ok(())
        },
        |_, _, _, _| Ok(()),
    )?;
    Ok(taken)
}

/// Two copies of `case` see the operations `ops`: each arrival goes to `arrive` (which
/// enqueues into both, its own way), each `Dequeue` to both (same packet expected), and
/// after every operation `after` may act on copy `b`; then both copies' drops (this
/// operation's), stats and lengths must agree. Returns the two copies and their outputs
/// (traces kept).
#[allow(clippy::type_complexity)]
fn drive_twins(
    case: &Case,
    ops: &[Op],
    mut arrive: impl FnMut(
        &mut AnyQdisc,
        &mut AnyQdisc,
        &mut QdiscOut,
        &mut QdiscOut,
        Packet,
        SimTime,
        &str,
    ) -> Result<(), TestCaseError>,
    mut after: impl FnMut(&mut AnyQdisc, &mut QdiscOut, SimTime, &str) -> Result<(), TestCaseError>,
) -> Result<(AnyQdisc, AnyQdisc, QdiscOut, QdiscOut), TestCaseError> {
    let (mut a, mut b) = (build(case), build(case));
    let (mut oa, mut ob) = (QdiscOut::new(true), QdiscOut::new(true));
    let mut now = SimTime::ZERO;
    for (i, op) in ops.iter().enumerate() {
        let ctx = format!("{} op {i} {op:?}", case.name);
        match *op {
            Op::Enqueue { flow, size, ect } => {
                let p = twin_packet(i, flow, size, ect, now);
                arrive(&mut a, &mut b, &mut oa, &mut ob, p, now, &ctx)?;
            }
            Op::Dequeue => {
                let (pa, pb) = (a.dequeue(now, &mut oa), b.dequeue(now, &mut ob));
                prop_assert_eq!(pa, pb, "{}", ctx);
            }
            Op::Advance(us) => now += SimDuration::from_micros(us as u64),
        }
        after(&mut b, &mut ob, now, &ctx)?;
        prop_assert_eq!(&oa.drops, &ob.drops, "{}", ctx);
        oa.drops.clear();
        ob.drops.clear();
        prop_assert_eq!(a.stats(), b.stats(), "{}", ctx);
        prop_assert_eq!(a.len(), b.len(), "{}", ctx);
    }
    Ok((a, b, oa, ob))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn every_qdisc_keeps_its_identities_and_limits(ops in prop::collection::vec(op(), 1..400)) {
        for case in CASES {
            run(case, &ops)?;
        }
    }

    #[test]
    fn pass_through_equals_enqueue_then_dequeue(ops in prop::collection::vec(op(), 1..200)) {
        for case in CASES {
            run_pass_through(case, &ops)?;
        }
    }

    #[test]
    fn empty_dequeue_changes_nothing_where_claimed(ops in prop::collection::vec(op(), 1..200)) {
        for case in CASES {
            run_empty_dequeue(case, &ops)?;
        }
    }
}

/// The `Qdisc::empty_dequeue_is_noop` contract: two copies see the same operations, and
/// copy `b` also dequeues (and must get nothing) after every operation that leaves it
/// empty, with the clock then advanced a little, at the same or a later instant. Every
/// dequeue, drop and statistic must agree, and so must the whole state (`Debug`) at the
/// end. Only cases that claim the property are run. Returns how many extra empty dequeues
/// were made.
fn run_empty_dequeue(case: &Case, ops: &[Op]) -> Result<u64, TestCaseError> {
    if !build(case).empty_dequeue_is_noop() {
        return Ok(0);
    }
    compare_empty_dequeue(case, ops)
}

/// `run_empty_dequeue`'s comparison, whatever the case claims.
fn compare_empty_dequeue(case: &Case, ops: &[Op]) -> Result<u64, TestCaseError> {
    let mut extra = 0;
    let (a, b, oa, ob) = drive_twins(
        case,
        ops,
        |a, b, oa, ob, p, now, ctx| {
            let (va, vb) = (a.enqueue(p, now, oa), b.enqueue(p, now, ob));
            prop_assert_eq!(va, vb, "{}", ctx);
            Ok(())
        },
        |b, ob, now, ctx| {
            if b.is_empty() {
                extra += 1;
                let got = b.dequeue(now + SimDuration::from_micros(7), ob);
                prop_assert_eq!(got, None, "{}", ctx);
            }
            Ok(())
        },
    )?;
    prop_assert_eq!(&oa.trace, &ob.trace, "{}", case.name);
    prop_assert_eq!(format!("{a:?}"), format!("{b:?}"), "{}", case.name);
    Ok(extra)
}

/// The qdiscs that skip their empty dequeues are the ones expected to (so the property
/// above is not vacuous, and an AQM does not claim it by mistake).
#[test]
fn empty_dequeue_is_noop_for_the_fifos_only() {
    let claim: Vec<&str> = CASES
        .iter()
        .filter(|c| build(c).empty_dequeue_is_noop())
        .map(|c| c.name)
        .collect();
    assert_eq!(claim, ["fifo", "bfifo", "pfifo_fast", "prio-4-bands"]);
    // and the comparison does tell a qdisc whose empty dequeue matters: a standing queue,
    // drained, then one empty dequeue more
    let mut ops = vec![
        Op::Enqueue {
            flow: 0,
            size: 1500,
            ect: false,
        };
        10
    ];
    for _ in 0..10 {
        ops.extend([Op::Advance(3000), Op::Dequeue]);
    }
    let case = |n| CASES.iter().find(|c| c.name == n).unwrap();
    assert_eq!(compare_empty_dequeue(case("fifo"), &ops).unwrap(), 1);
    // (RED starts its idle period, fq_codel retires the emptied flow from its lists)
    for aqm in ["red", "ared", "fq_codel", "fq_pie"] {
        assert!(compare_empty_dequeue(case(aqm), &ops).is_err(), "{aqm}");
    }
}

/// The fast path is taken where it should be (an empty FIFO), so the equivalence
/// property above is not vacuous.
#[test]
fn pass_through_is_taken_by_fifo() {
    let ops: Vec<Op> = (0..10)
        .flat_map(|_| {
            [
                Op::Enqueue {
                    flow: 1,
                    size: 1500,
                    ect: false,
                },
                Op::Advance(2000),
                Op::Dequeue,
            ]
        })
        .collect();
    let case = |n| CASES.iter().find(|c| c.name == n).unwrap();
    assert_eq!(run_pass_through(case("fifo"), &ops).unwrap(), 10);
    assert_eq!(run_pass_through(case("bfifo"), &ops).unwrap(), 10);
}

/// The property harness is only useful if the sequences reach the AQMs' drop and mark
/// paths: check that a fixed overload sequence makes every AQM case drop early or mark.
#[test]
fn cases_reach_the_aqm_paths() {
    let mut ops = Vec::new();
    for _ in 0..3000 {
        ops.push(Op::Enqueue {
            flow: 1,
            size: 1500,
            ect: true,
        });
        ops.push(Op::Enqueue {
            flow: 2,
            size: 1500,
            ect: false,
        });
        ops.push(Op::Advance(1200));
        ops.push(Op::Dequeue);
    }
    for case in CASES.iter().filter(|c| {
        ![
            "fifo",
            "bfifo",
            "fq_nocodel",
            "sfq",
            "drr",
            "pfifo_fast",
            "prio-4-bands",
        ]
        .contains(&c.name)
    }) {
        let cfg: QdiscConfig = toml::from_str(case.toml).unwrap();
        let mut q = cfg.build(BuildCtx {
            rate: Rate::from_bps(10_000_000),
            mtu: 1500,
            overhead: 14,
            rng: Rng::stream(7, "qdisc", 0),
        });
        run(case, &ops).unwrap();
        let mut out = QdiscOut::new(false);
        let mut now = SimTime::ZERO;
        for (uid, op) in ops.iter().enumerate() {
            match *op {
                Op::Enqueue { flow, size, ect } => {
                    let mut p = Packet {
                        uid: uid as u64,
                        flow: flow as u32,
                        size: size as u32,
                        enqueued_at: now,
                        ..Default::default()
                    };
                    p.ecn = if ect { Ecn::Ect0 } else { Ecn::NotEct };
                    q.enqueue(p, now, &mut out);
                }
                Op::Dequeue => {
                    q.dequeue(now, &mut out);
                }
                Op::Advance(us) => now += SimDuration::from_micros(us as u64),
            }
            out.drops.clear();
        }
        let st = q.stats();
        let aqm = st.drops[DropReason::Early.index()]
            + st.drops[DropReason::Forced.index()]
            + st.drops[DropReason::Codel.index()]
            + st.drops[DropReason::Blue.index()]
            + st.total_marks();
        assert!(
            aqm > 0,
            "{}: no AQM action in an overload ({st:?})",
            case.name
        );
    }
}
