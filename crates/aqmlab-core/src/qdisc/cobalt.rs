//! COBALT ("CoDel + BLUE Alternate"), the per-flow AQM of CAKE (Linux `sch_cake.c`:
//! `cobalt_should_drop`, `cobalt_queue_full`, `cobalt_queue_empty`).
//!
//! Two controllers run side by side on each flow queue:
//! - **CoDel part.** The head packet's sojourn is compared with `target`; above it (and
//!   above `mtu_time` × max(4, 2·bulk_flows) so a slow link's serialisation delay does
//!   not count), the queue enters the dropping state. The signalling schedule is CoDel's
//!   control law `drop_next += interval/√count`, computed with the same fixed-point
//!   Newton step and `reciprocal_scale` as Linux CoDel ([`newton_step_q32`],
//!   [`reciprocal_scale`] from `codel_core`), except that COBALT keeps 1/√count in Q0.32
//!   and takes counts below 16 from an exact table (`inv_sqrt_cache` in the kernel). Unlike
//!   reference CoDel there is no separate "above target for one interval" timer: entering
//!   the dropping state schedules the first signal one `interval/√count` later, and when
//!   the sojourn falls below target the count *decays* (one step per elapsed
//!   `interval/√count`) instead of being remembered for a re-entry rule. ECN-capable
//!   packets are always CE-marked instead of dropped (CAKE has no `noecn`).
//! - **BLUE part.** A drop probability `p_drop` (Q0.32) rises by `p_inc` = 1/256 each time
//!   the queue overflows (`cobalt_queue_full`) and falls by `p_dec` = 1/4096 each time the
//!   flow is found empty (`cobalt_queue_empty`), at most once per `target` for each
//!   (the kernel's `blue_timer` hysteresis is the `target`, 5 ms by default — not a
//!   separate timer). Each dequeued packet not already dropped by the CoDel part is dropped
//!   with probability `p_drop`, never marked ("lack of ECN is deliberate").
//!
//! Kernel behaviour kept: with count 0, `drop_next` doubles as an activity timeout
//! (`now + interval` after each packet). A flow entering the dropping state after more
//! than one interval without packets (or a fresh flow: the kernel zeroes the vars,
//! `rec_inv_sqrt` included) has `drop_next` reset to *now*, so its next over-target
//! packet is signalled at once; a flow that has been busy waits one `interval`.
//!
//! Times are signed nanoseconds (the kernel's `ktime_t`), so `now − drop_next` keeps its
//! sign.

use super::codel_core::{newton_step_q32, reciprocal_scale};
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;

/// Linux `inv_sqrt_cache`: 1/√count in Q0.32 for count 0..15 (counts 0 and 1 both
/// ≈ 1.0), computed in the kernel with eight Newton steps. Above 15 a single Newton
/// step per count change is accurate enough.
pub const INV_SQRT_CACHE: [u32; 16] = [
    u32::MAX,
    u32::MAX,
    3037000500,
    2479700525,
    2147483647,
    1920767767,
    1753413056,
    1623345051,
    1518500250,
    1431655765,
    1358187914,
    1294981364,
    1239850263,
    1191209601,
    1147878294,
    1108955788,
];

/// BLUE increment per overflow: 1/256 in Q0.32 (`cake_set_rate`: `1 << 24`).
pub const P_INC: u32 = 1 << 24;
/// BLUE decrement per empty dequeue: 1/4096 in Q0.32 (`1 << 20`).
pub const P_DEC: u32 = 1 << 20;

/// Parameters of one tin's COBALT instances (Linux `struct cobalt_params`), in ns.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CobaltParams {
    pub interval: u64,
    /// Acceptable standing sojourn; also BLUE's update hysteresis.
    pub target: u64,
    /// Serialisation time of one MTU at the tin's rate (0 when unlimited).
    pub mtu_time: u64,
    pub p_inc: u32,
    pub p_dec: u32,
}

/// Per-flow COBALT state (Linux `struct cobalt_vars`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CobaltVars {
    pub count: u32,
    /// 1/√count in Q0.32.
    pub rec_inv_sqrt: u32,
    /// Next signal instant in the dropping state; otherwise an activity timeout.
    pub drop_next: i64,
    /// Last BLUE update.
    pub blue_timer: i64,
    /// BLUE drop probability in Q0.32.
    pub p_drop: u32,
    pub dropping: bool,
    /// The last packet examined was CE-marked.
    pub ecn_marked: bool,
}

/// What COBALT decided for a dequeued packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CobaltVerdict {
    /// Send it (possibly CE-marked: see `CobaltVars::ecn_marked`).
    Pass,
    /// CoDel part: drop (the packet was not ECN-capable). Kernel `QDISC_CONGESTED`.
    Drop,
    /// BLUE part: drop. Kernel `CAKE_FLOOD`.
    Flood,
}

impl CobaltVars {
    /// Linux `cobalt_invsqrt`: table below 16, one Newton step above.
    fn invsqrt(&mut self) {
        self.rec_inv_sqrt = if (self.count as usize) < INV_SQRT_CACHE.len() {
            INV_SQRT_CACHE[self.count as usize]
        } else {
            newton_step_q32(self.rec_inv_sqrt, self.count)
        };
    }

    /// Control law `t + interval · rec_inv_sqrt` (Linux `cobalt_control`).
    #[inline]
    fn control(&self, t: i64, interval: u64) -> i64 {
        t + reciprocal_scale(interval, self.rec_inv_sqrt) as i64
    }

    /// The queue overflowed and this flow lost a packet (`cobalt_queue_full`). Returns
    /// true if BLUE went from quiescent to active.
    pub fn queue_full(&mut self, p: &CobaltParams, now: i64) -> bool {
        let mut up = false;
        if now - self.blue_timer > p.target as i64 {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.wrapping_add(p.p_inc);
            if self.p_drop < p.p_inc {
                self.p_drop = u32::MAX; // saturate
            }
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
        up
    }

    /// The flow was serviced and found empty (`cobalt_queue_empty`). Returns true if BLUE
    /// went from active to quiescent.
    pub fn queue_empty(&mut self, p: &CobaltParams, now: i64) -> bool {
        let mut down = false;
        if self.p_drop != 0 && now - self.blue_timer > p.target as i64 {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        self.dropping = false;
        if self.count != 0 && now - self.drop_next >= 0 {
            self.count -= 1;
            self.invsqrt();
            self.drop_next = self.control(self.drop_next, p.interval);
        }
        down
    }

    /// Judges a freshly dequeued packet (`cobalt_should_drop`); CE-marks it when the
    /// CoDel part signals and it is ECN-capable. `bulk_flows` is the tin's bulk flow count
    /// in ingress mode, else 0.
    pub fn should_drop(
        &mut self,
        p: &CobaltParams,
        now: i64,
        pkt: &mut Packet,
        bulk_flows: u32,
        rng: &mut Rng,
    ) -> CobaltVerdict {
        let mut verdict = CobaltVerdict::Pass;
        let sojourn = (now - pkt.enqueued_at.as_nanos() as i64).max(0) as u64;
        let mut schedule = now - self.drop_next;
        let over_target = sojourn > p.target
            && sojourn > p.mtu_time * bulk_flows as u64 * 2
            && sojourn > p.mtu_time * 4;
        let mut next_due = self.count != 0 && schedule >= 0;
        self.ecn_marked = false;

        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = self.control(now, p.interval);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }

        if next_due && self.dropping {
            // Signal: mark if possible, otherwise drop (Linux INET_ECN_set_ce).
            if pkt.ecn.is_capable() {
                pkt.ecn = Ecn::Ce;
                self.ecn_marked = true;
            } else {
                verdict = CobaltVerdict::Drop;
            }
            self.count = self.count.saturating_add(1);
            self.invsqrt();
            self.drop_next = self.control(self.drop_next, p.interval);
            schedule = now - self.drop_next;
        } else {
            // Below target (or not yet due): let the count decay on schedule.
            while next_due {
                self.count -= 1;
                self.invsqrt();
                self.drop_next = self.control(self.drop_next, p.interval);
                schedule = now - self.drop_next;
                next_due = self.count != 0 && schedule >= 0;
            }
        }

        if self.p_drop != 0 && verdict == CobaltVerdict::Pass && rng.next_u32() < self.p_drop {
            verdict = CobaltVerdict::Flood;
        }

        // drop_next doubles as an activity timeout.
        if self.count == 0 {
            self.drop_next = now + p.interval as i64;
        } else if schedule > 0 && verdict == CobaltVerdict::Pass {
            self.drop_next = now;
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::super::codel_core::interval_over_sqrt;
    use super::*;
    use crate::time::{SimDuration, SimTime};

    const MS: i64 = 1_000_000;

    fn params() -> CobaltParams {
        CobaltParams {
            interval: 100 * MS as u64,
            target: 5 * MS as u64,
            mtu_time: 0,
            p_inc: P_INC,
            p_dec: P_DEC,
        }
    }

    fn pkt_at(t: i64, ecn: Ecn) -> Packet {
        Packet {
            size: 1500,
            ecn,
            enqueued_at: SimTime::from_nanos(t as u64),
            ..Default::default()
        }
    }

    #[test]
    fn cache_is_one_over_sqrt_and_agrees_with_the_newton_step() {
        for (n, &v) in INV_SQRT_CACHE.iter().enumerate().skip(1) {
            let exact = 2f64.powi(32) / (n as f64).sqrt();
            assert!((v as f64 - exact).abs() <= 1.0 + exact * 1e-9, "{n}: {v}");
        }
        // From 16 on, one Newton step (the code CoDel uses) from the previous estimate
        // stays within 0.2 % of 1/√count (0.16 % at the 15 → 16 hand-over, shrinking).
        let mut v = CobaltVars {
            count: 15,
            rec_inv_sqrt: INV_SQRT_CACHE[15],
            ..Default::default()
        };
        for c in 16..2000u32 {
            v.count = c;
            v.invsqrt();
            let exact = 2f64.powi(32) / (c as f64).sqrt();
            assert!(((v.rec_inv_sqrt as f64) / exact - 1.0).abs() < 2e-3, "{c}");
        }
    }

    /// The same trajectory through `codel_core` (RFC 8289 variant: exact 1/√count, as
    /// COBALT's table is for counts below 16) and through COBALT: a standing queue whose
    /// head is always 20 ms old, dequeued every 1 ms. Both signal first one interval
    /// after the sojourn went above target; after that CoDel's signals are spaced
    /// 100/√1, 100/√2, 100/√3 … ms and COBALT's 100/√2, 100/√3 … ms: the same control law,
    /// COBALT one step ahead because it counts the entry itself (CoDel drops on entry
    /// with count 1 and schedules the next at interval/√1).
    #[test]
    fn codel_part_equals_codel_core_on_the_same_trajectory() {
        use super::super::codel_core::{
            CodelParams, CodelQueue, CodelStats, CodelVariant, CodelVars,
        };
        use super::super::{QdiscOut, QdiscStats};
        use std::collections::VecDeque;
        struct Q(VecDeque<Packet>);
        impl CodelQueue for Q {
            fn pop(&mut self) -> Option<Packet> {
                self.0.pop_front()
            }
            fn backlog(&self) -> u64 {
                100_000
            }
        }
        let cp = CodelParams {
            variant: CodelVariant::Rfc8289,
            ..CodelParams::linux_defaults(1514)
        };
        let mut cv = CodelVars::new(&cp);
        let (mut cst, mut qs, mut out) = (
            CodelStats::default(),
            QdiscStats::default(),
            QdiscOut::new(false),
        );
        let mut q = Q(VecDeque::new());
        let p = params();
        let mut v = CobaltVars {
            rec_inv_sqrt: INV_SQRT_CACHE[0],
            ..Default::default()
        };
        let mut rng = Rng::stream(1, "t", 0);
        let (mut c, mut s) = (vec![], vec![]);
        let start = 1000 * MS;
        let mut warm = pkt_at(start - MS, Ecn::NotEct);
        v.should_drop(&p, start - MS, &mut warm, 0, &mut rng);
        for i in 0..2500 {
            let now = start + i * MS;
            while q.0.len() < 3 {
                q.0.push_back(pkt_at(now - 20 * MS, Ecn::NotEct));
            }
            for p in q.0.iter_mut() {
                p.enqueued_at = SimTime::from_nanos((now - 20 * MS) as u64);
            }
            cv.dequeue(
                &cp,
                &mut cst,
                &mut q,
                SimTime::from_nanos(now as u64),
                &mut qs,
                &mut out,
            );
            if !out.drops.is_empty() {
                assert_eq!(out.drops.len(), 1);
                c.push(now);
                out.drops.clear();
            }
            let mut pk = pkt_at(now - 20 * MS, Ecn::NotEct);
            if v.should_drop(&p, now, &mut pk, 0, &mut rng) == CobaltVerdict::Drop {
                s.push(now);
            }
        }
        // CoDel's first_above_time is set by the first (start) sample; RFC 8289 drops at
        // now >= start + interval. COBALT entered dropping at start: first signal at
        // start + interval too.
        assert_eq!(c[0], start + 100 * MS);
        assert_eq!(s[0], start + 100 * MS);
        assert!(s.len() >= 16 && c.len() >= 17, "{} {}", s.len(), c.len());
        // Counts 2..=15 come from the exact table in COBALT and from the exact square root
        // in codel_core: the scheduled instants agree to the nanosecond rounding, so the
        // 1 ms-grid signal instants are identical.
        for j in 1..15 {
            assert_eq!(s[j] - s[0], c[j + 1] - c[1], "signal {j}: {s:?} vs {c:?}");
        }
        // Beyond the table COBALT uses CoDel's Newton step: within one dequeue period.
        for j in 15..s.len().min(c.len() - 1) {
            assert!(
                ((s[j] - s[0]) - (c[j + 1] - c[1])).abs() <= MS,
                "signal {j}"
            );
        }
    }

    #[test]
    fn ect_packets_are_marked_not_dropped_and_fresh_flows_signal_at_once() {
        let p = params();
        let mut v = CobaltVars::default(); // fresh: rec_inv_sqrt = 0 (kernel quirk)
        let mut rng = Rng::stream(1, "t", 0);
        let mut pk = pkt_at(0, Ecn::Ect0);
        // 10 ms sojourn: over target, enters dropping with drop_next = now (rec 0).
        assert_eq!(
            v.should_drop(&p, 10 * MS, &mut pk, 0, &mut rng),
            CobaltVerdict::Pass
        );
        assert!(v.dropping && v.count == 1 && v.drop_next == 10 * MS);
        assert_eq!(pk.ecn, Ecn::Ect0);
        let mut pk = pkt_at(0, Ecn::Ect0);
        assert_eq!(
            v.should_drop(&p, 11 * MS, &mut pk, 0, &mut rng),
            CobaltVerdict::Pass
        );
        assert!(v.ecn_marked);
        assert_eq!(pk.ecn, Ecn::Ce);
        assert_eq!(v.count, 2);
        // Next signal: drop_next (10 ms) + 100 ms/√2.
        assert_eq!(v.drop_next, 10 * MS + 70_710_678);
    }

    #[test]
    fn below_target_the_count_decays_on_schedule() {
        let p = params();
        let mut v = CobaltVars {
            count: 4,
            rec_inv_sqrt: INV_SQRT_CACHE[4],
            drop_next: 0,
            dropping: true,
            ..Default::default()
        };
        let mut rng = Rng::stream(1, "t", 0);
        // A short-sojourn packet at 200 ms: due since 0, so the count steps down while
        // drop_next stays behind now: 0 → +100/√3 → +100/√2 → +100 (= 207.7 ms > 200).
        let mut pk = pkt_at(200 * MS - MS, Ecn::NotEct);
        assert_eq!(
            v.should_drop(&p, 200 * MS, &mut pk, 0, &mut rng),
            CobaltVerdict::Pass
        );
        assert!(!v.dropping);
        assert_eq!(v.count, 1);
        let law = |k| interval_over_sqrt(SimDuration::from_millis(100), k).as_nanos() as i64;
        // The last decay step left drop_next in the future; with count > 0 and schedule
        // < 0 it stays (not reset to now).
        let expect = law(3) + law(2) + law(1);
        assert!(
            (v.drop_next - expect).abs() <= 2,
            "{} {expect}",
            v.drop_next
        );
    }

    #[test]
    fn blue_rises_on_overflow_and_decays_on_empty_once_per_target() {
        let p = params();
        let mut v = CobaltVars::default();
        // First overflow at 10 ms (> target since blue_timer 0): p = 1/256, BLUE turns on.
        assert!(v.queue_full(&p, 10 * MS));
        assert_eq!(v.p_drop, P_INC);
        assert!(v.dropping && v.count == 1 && v.drop_next == 10 * MS);
        // Within target of the last update: no change.
        assert!(!v.queue_full(&p, 14 * MS));
        assert_eq!(v.p_drop, P_INC);
        // 16 ms: 6 ms later, > target: another 1/256.
        assert!(!v.queue_full(&p, 16 * MS));
        assert_eq!(v.p_drop, 2 * P_INC);
        // Empty within target: no decay; later: decays by 1/4096 per target.
        v.queue_empty(&p, 20 * MS);
        assert_eq!(v.p_drop, 2 * P_INC);
        assert!(!v.dropping);
        v.queue_empty(&p, 22 * MS);
        assert_eq!(v.p_drop, 2 * P_INC - P_DEC);
        // 2/256 = 32/4096: 31 more decays reach zero, and the last one reports "down".
        let mut t = 22 * MS;
        let mut downs = 0;
        for _ in 0..31 {
            t += 6 * MS;
            downs += v.queue_empty(&p, t) as u32;
        }
        assert_eq!(v.p_drop, 0);
        assert_eq!(downs, 1);
        // Saturation: many increments never wrap.
        let mut v = CobaltVars::default();
        for i in 1..300 {
            v.queue_full(&p, i * 10 * MS);
        }
        assert_eq!(v.p_drop, u32::MAX);
    }

    #[test]
    fn blue_drops_a_fraction_p_of_passing_packets() {
        let p = params();
        let mut v = CobaltVars {
            p_drop: u32::MAX / 4,
            ..Default::default()
        };
        let mut rng = Rng::stream(3, "t", 0);
        let mut floods = 0;
        for i in 0..40_000 {
            let now = i * MS;
            let mut pk = pkt_at(now, Ecn::Ect0);
            if v.should_drop(&p, now, &mut pk, 0, &mut rng) == CobaltVerdict::Flood {
                floods += 1;
            }
        }
        let frac = floods as f64 / 40_000.0;
        assert!((frac - 0.25).abs() < 0.01, "{frac}");
    }
}
