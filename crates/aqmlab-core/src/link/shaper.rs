//! A token-bucket shaper between the qdisc under test and the device queue, like a Linux
//! `tbf` or `htb` root with the qdisc under test as its child (`tc qdisc add dev eth0 root
//! handle 1: htb ...; tc qdisc add dev eth0 parent 1:1 fq_codel`).
//!
//! ```text
//!   enqueue ─► [ qdisc under test ] ─(pulled only when tokens allow)─► [ device queue ] ─► wire at the physical rate
//! ```
//! The queue builds in the qdisc, so sojourn times and AQM decisions are those of the
//! qdisc; the shaper wakes itself with a `LinkTimer` when its bucket will allow the next
//! packet. Tokens count `size + overhead` bytes, the frame length Linux charges
//! (`qdisc_pkt_len`: the IP packet plus the 14-byte Ethernet header).
//!
//! Two kinds, as in Linux:
//! - **htb** (default; what sqm-scripts and CeroWrt's SQM use): the child is dequeued
//!   whenever the bucket is not negative, and the packet is charged afterwards, so the
//!   bucket may go into debt by up to one packet (`htb_class_mode`: `tokens >= 0`).
//! - **tbf**: strict; a packet leaves only when the bucket holds its whole length. Linux
//!   learns that length by *peeking*, which for an AQM child means dequeuing the head
//!   early and stashing it (`qdisc_peek_dequeued`); this model does the same, so the AQM
//!   decides on the head when the shaper first looks at it and the stashed packet waits
//!   for tokens outside the child.
//!
//! **Lazy wake-up** (tbf over a one-packet device queue, the residential study's shaper,
//! when the child does not throttle by itself): a stashed packet that waits for tokens
//! leaves for the device at an instant known when it starts to wait (`ready_at`), and
//! nothing that happens meanwhile can change what the wake-up then does — the stash is
//! fixed, the device queue stays empty, and a packet reaching the qdisc only finds the
//! bucket short again (counted as throttled, as the wake-up timer would have been
//! re-armed for the same instant). So no wake-up event is scheduled: its place in the
//! event order is reserved and, when the queue reaches it, the `TxDone` ending the
//! packet's transmission is pushed exactly as the wake-up would have pushed it
//! ([`EventQueue::defer`]); the packet itself is charged and handed to the device when
//! that `TxDone` comes (or the run stops), at the wake-up's instant. One event fewer per
//! shaped packet, same results.

use super::token_bucket::TokenBucket;
use super::{note_dequeue, timer, LinkStats, WireHot};
use crate::event::{Event, EventQueue};
use crate::packet::{LinkId, Packet};
use crate::params::ParamDoc;
use crate::qdisc::{AnyQdisc, Qdisc, QdiscOut};
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::{RateSpec, SizeSpec};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Which Linux shaper to imitate.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ShaperKind {
    /// Dequeue while tokens ≥ 0, charge afterwards (may owe one packet). Default.
    #[default]
    Htb,
    /// Dequeue only when the bucket holds the head packet (peek = dequeue + stash).
    Tbf,
}

/// `shaper = { rate = "14Mbit", burst = "3KB", kind = "htb" }` on a link or dumbbell direction.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ShaperConfig {
    /// Shaped rate (bits per second of `size + overhead` bytes). Required.
    pub rate: RateSpec,
    /// Bucket depth. Default: the larger of one full-size frame (`mtu + overhead`) and
    /// 1 ms worth of bytes at `rate` (sqm-scripts' default burst duration of 1000 µs).
    pub burst: Option<SizeSpec>,
    /// `"htb"` (default) or `"tbf"`; see the module doc.
    #[serde(default)]
    pub kind: ShaperKind,
}

/// A resolved shaper.
#[derive(Clone, Debug, PartialEq)]
pub struct ShaperParams {
    pub rate: Rate,
    pub burst: u64,
    pub kind: ShaperKind,
}

impl ShaperConfig {
    /// Parameter documentation for `aqmlab describe shaper` (also `htb`, `tbf`).
    pub const PARAMS: &'static [ParamDoc] = &[
        ParamDoc::new("rate", "required", "shaped rate, counting each packet's IP bytes plus the link's overhead (the frame Linux charges)"),
        ParamDoc::new("burst", "max(mtu + overhead, 1 ms at rate)", "bucket depth (sqm-scripts' default burst duration of 1000 us, at least one full frame)"),
        ParamDoc::new("kind", "htb", "htb = dequeue while tokens >= 0 and charge afterwards, may owe one packet (sqm-scripts, CeroWrt SQM); tbf = strict, the head packet is taken from the qdisc early (peek) and waits until the bucket holds it"),
    ];

    /// Resolves the default burst; `frame` is `mtu + overhead`.
    pub fn resolve(&self, frame: u64) -> ShaperParams {
        let rate = self.rate.rate();
        let burst = match self.burst {
            Some(b) => b.0,
            None => frame.max(rate.bytes_in(crate::time::SimDuration::from_millis(1))),
        };
        ShaperParams {
            rate,
            burst,
            kind: self.kind,
        }
    }
}

/// Runtime state of a shaper.
#[derive(Debug)]
pub struct Shaper {
    pub p: ShaperParams,
    tb: TokenBucket,
    /// tbf only: the head packet taken from the qdisc, waiting for tokens.
    stash: Option<Packet>,
    /// Instant of the pending wake-up timer (`NEVER` if none).
    armed: SimTime,
    /// Times the shaper held back a waiting packet (Linux `overlimits`).
    pub throttled: u64,
    /// Lazy wake-up (module doc; set by the link: tbf, one-packet device queue, a child
    /// that does not throttle).
    lazy_wake: bool,
    /// Lazy wake-up: the stash waits for the instant `armed`, where it leaves for the
    /// device; the `TxDone` of its transmission is deferred to the wake-up's place.
    waiting: bool,
    /// Lazy wake-up: the waiting stash's transmission time at the line rate (computed
    /// when it starts to wait, for the deferred `TxDone`; its end is `armed` + this).
    wait_tx: SimDuration,
    /// Lazy wake-up: the frame length whose line-rate transmission time `line_tx` holds
    /// (0: none yet; a one-entry cache, most frames are full-size).
    line_bytes: u32,
    line_tx: SimDuration,
    /// Tests: the link records its statistics straight into `LinkStats`, not through
    /// its cached bin (the slow path the cache is compared with).
    #[cfg(test)]
    pub(crate) direct_records: bool,
}

impl Shaper {
    pub fn new(p: ShaperParams) -> Self {
        Shaper {
            tb: TokenBucket::new(p.rate, p.burst),
            p,
            stash: None,
            armed: SimTime::NEVER,
            throttled: 0,
            lazy_wake: false,
            waiting: false,
            wait_tx: SimDuration::ZERO,
            line_bytes: 0,
            line_tx: SimDuration::ZERO,
            #[cfg(test)]
            direct_records: false,
        }
    }

    /// Whether the link records this shaper's packets straight into `LinkStats` (only
    /// tests ask for it) instead of through its cached bin (`WireHot`).
    #[inline(always)]
    pub(crate) fn records_direct(&self) -> bool {
        #[cfg(test)]
        return self.direct_records;
        #[cfg(not(test))]
        false
    }

    /// Uses the lazy wake-up (module doc). Only valid for tbf over a one-packet device
    /// queue whose child does not throttle (the link checks).
    pub(crate) fn set_lazy_wake(&mut self) {
        debug_assert_eq!(self.p.kind, ShaperKind::Tbf);
        self.lazy_wake = true;
    }

    /// Back to the wake-up timer (the tests compare the two).
    #[cfg(test)]
    pub(crate) fn clear_lazy_wake(&mut self) {
        assert!(!self.waiting);
        self.lazy_wake = false;
    }

    /// The instant a lazy wake-up waits for, if one does (tests).
    #[cfg(test)]
    pub(crate) fn lazy_wake_at(&self) -> Option<SimTime> {
        self.waiting.then_some(self.armed)
    }

    /// Lazy wake-up: if the stash is waiting for an instant at or before `t`, it left
    /// for the device then: charge it at that instant and return the instant and its
    /// transmission time at the line rate; the packet is left for [`take_stash`]
    /// (taken where it goes: moving it through the return value costs copies of it).
    /// (Called when the `TxDone` of its transmission comes, and when a run stops.)
    ///
    /// [`take_stash`]: Self::take_stash
    #[inline(always)]
    pub(crate) fn release(&mut self, t: SimTime, overhead: u32) -> Option<(SimTime, SimDuration)> {
        if !self.waiting || self.armed > t {
            return None;
        }
        let at = self.armed;
        self.waiting = false;
        self.armed = SimTime::NEVER;
        let size = self
            .stash
            .as_ref()
            .expect("a waiting shaper holds its stash")
            .size;
        let bytes = (size + overhead) as u64;
        let fits = self.tb.conforms(at, bytes);
        debug_assert!(fits, "the stash does not fit the bucket at its wake-up");
        self.tb.charge(bytes);
        Some((at, self.wait_tx))
    }

    /// The stash [`release`](Self::release) let go.
    #[inline(always)]
    pub(crate) fn take_stash(&mut self) -> Packet {
        self.stash
            .take()
            .expect("a released shaper holds its stash")
    }

    /// A packet reached the qdisc while a lazy wake-up waits for a later instant: what
    /// [`pull`](Self::pull) would do then (count the stash as held back, nothing else:
    /// the device queue is empty and the bucket short until `armed`). False if no lazy
    /// wake-up is pending or its instant has come (then `pull` has work to do).
    #[inline(always)]
    pub(crate) fn throttle_waiting(&mut self, now: SimTime) -> bool {
        if self.waiting && now < self.armed {
            self.throttled += 1;
            true
        } else {
            false
        }
    }

    /// `line.tx_time(bytes)`, from the one-entry cache when `bytes` is the last frame
    /// length asked for (the line rate of a link does not change).
    #[inline(always)]
    fn line_tx_time(&mut self, line: Rate, bytes: u32) -> SimDuration {
        if bytes != self.line_bytes {
            self.line_bytes = bytes;
            self.line_tx = line.tx_time(bytes);
        }
        debug_assert_eq!(self.line_tx, line.tx_time(bytes));
        self.line_tx
    }

    /// Packets held by the shaper itself (the tbf stash).
    pub fn held(&self) -> usize {
        self.stash.is_some() as usize
    }

    /// The wake-up timer fired; true if it is the current one (else it is stale).
    pub fn on_timer(&mut self, now: SimTime) -> bool {
        if now == self.armed {
            self.armed = SimTime::NEVER;
            true
        } else {
            false
        }
    }

    fn arm(&mut self, at: SimTime, link: LinkId, ev: &mut EventQueue) {
        self.throttled += 1;
        if at < self.armed {
            self.armed = at;
            ev.push(
                at,
                Event::LinkTimer {
                    link,
                    kind: timer::SHAPER,
                },
            );
        }
    }

    /// Moves packets from the qdisc to the device queue while the device has room and
    /// the bucket allows; arms the wake-up timer when the bucket is what stops it.
    /// `line` is the physical rate (the lazy wake-up schedules the transmission's end).
    /// Sojourns are recorded through `hot` (the link's cached series bin).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn pull(
        &mut self,
        qdisc: &mut AnyQdisc,
        out: &mut QdiscOut,
        stats: &mut LinkStats,
        hot: &mut WireHot,
        device: &mut VecDeque<Packet>,
        device_limit: usize,
        overhead: u32,
        line: Rate,
        link: LinkId,
        now: SimTime,
        ev: &mut EventQueue,
    ) {
        if self.waiting && now >= self.armed {
            // lazy wake-up, its instant has come: the stash is (as far as the model is
            // concerned) in the device queue, which is full. At that very instant, a
            // caller ordered before the wake-up's place is the one that finds the
            // bucket full enough and starts the transmission: its `TxDone` is pushed now.
            if now == self.armed && ev.is_deferred(Event::TxDone(link)) {
                ev.push_deferred_now(Event::TxDone(link));
            }
            return;
        }
        while device.len() < device_limit {
            match self.p.kind {
                ShaperKind::Htb => {
                    if !self.tb.may_send(now) {
                        if !qdisc.is_empty() {
                            let at = self.tb.ready_at(now, 0);
                            self.arm(at, link, ev);
                        }
                        break;
                    }
                    let Some(p) = super::dequeue_cold(qdisc, now, out) else {
                        break;
                    };
                    if self.records_direct() {
                        note_dequeue(stats, p.enqueued_at, p.ecn, now);
                    } else {
                        hot.note_dequeue(stats, p.enqueued_at, p.ecn, now);
                    }
                    self.tb.charge((p.size + overhead) as u64);
                    device.push_back(p);
                }
                ShaperKind::Tbf => {
                    if self.waiting {
                        // a lazy wake-up is pending (its instant not yet come): the
                        // stash is still short of tokens until then — what the test
                        // below would find, computing the same `ready_at` (refills are
                        // exact and path-independent, so skipping one changes nothing)
                        debug_assert!(now < self.armed && self.stash.is_some());
                        debug_assert!({
                            let bytes =
                                (self.stash.as_ref().map_or(0, |p| p.size) + overhead) as u64;
                            let mut tb = self.tb.clone();
                            !tb.conforms(now, bytes) && tb.ready_at(now, bytes) == self.armed
                        });
                        self.throttled += 1;
                        break;
                    }
                    // the head waits in the stash in place: dequeued straight into it,
                    // moved once, into the device queue (not out and back in each time
                    // the bucket is short: a packet is 128 bytes)
                    if self.stash.is_none() {
                        self.stash = super::dequeue_cold(qdisc, now, out);
                        match &self.stash {
                            Some(p) if self.records_direct() => {
                                note_dequeue(stats, p.enqueued_at, p.ecn, now)
                            }
                            Some(p) => hot.note_dequeue(stats, p.enqueued_at, p.ecn, now),
                            None => break,
                        }
                    }
                    let Some(head) = &self.stash else { break };
                    // a GSO skb (kept whole below the burst, `Link::tbf_takes_whole`)
                    // is charged its segments' frames and reaches the device as them
                    let gso = head.gso_segs > 1;
                    let bytes = (head.size + head.segs() * overhead) as u64;
                    if self.tb.conforms(now, bytes) {
                        self.tb.charge(bytes);
                        if let Some(p) = self.stash.take() {
                            if gso {
                                device.extend((0..p.segs()).map(|i| p.segment(i)));
                            } else {
                                device.push_back(p);
                            }
                        }
                    } else {
                        let at = self.tb.ready_at(now, bytes);
                        if self.lazy_wake && !gso {
                            // the wake-up would be (re-)armed for `at` (module doc)
                            self.throttled += 1;
                            if !self.waiting {
                                self.waiting = true;
                                self.armed = at;
                                self.wait_tx = self.line_tx_time(line, bytes as u32);
                                ev.defer(at, at + self.wait_tx, Event::TxDone(link));
                            }
                            debug_assert_eq!(at, self.armed);
                        } else {
                            self.arm(at, link, ev);
                        }
                        break;
                    }
                }
            }
        }
    }
}
