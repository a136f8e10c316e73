//! The network state shared by all flows: clock, event queue, links, WiFi media, routes
//! and packet counters. Applications reach it through `app::FlowCtx`; the simulator
//! (`sim`) owns it and runs the event loop around it.

use crate::event::EventQueue;
use crate::link::{timer, Link, WifiMedium};
use crate::packet::{NodeId, Packet};
use crate::qdisc::DropReason;
use crate::scenario::routes::Routes;
use crate::time::SimTime;

/// Network state shared by all flows.
pub struct Net {
    pub now: SimTime,
    pub events: EventQueue,
    pub links: Vec<Link>,
    /// Shared WiFi media (one per BSS), which arbitrate airtime among their member links.
    pub media: Vec<WifiMedium>,
    pub routes: Routes,
    /// Drops drained from links, waiting to be attributed to their flows.
    pub pending_drops: Vec<(Packet, DropReason)>,
    pub(crate) next_uid: u64,
    /// Packets handed to their destination host.
    pub delivered_pkts: u64,
    /// Packets dropped anywhere.
    pub dropped_pkts: u64,
    /// Packets that found no route at some node (counted as dropped; impossible in a
    /// validated scenario, kept as a safety net).
    pub unroutable_pkts: u64,
    /// The end of the run (or of the current `Simulator::run_until`, if later): packets
    /// due at a router after it are not folded into the next link (`link::fold_arrivals`).
    pub horizon: SimTime,
}

impl Net {
    #[inline]
    pub fn next_uid(&mut self) -> u64 {
        self.next_uid += 1;
        self.next_uid
    }
    /// Packets created so far.
    pub fn created_pkts(&self) -> u64 {
        self.next_uid
    }

    /// Forwards `pkt` from node `at` towards `pkt.dst` on the routed egress link.
    #[inline]
    pub fn send(&mut self, at: NodeId, pkt: Packet) {
        let Some(l) = self.routes.next(at, pkt.dst) else {
            self.unroutable_pkts += 1;
            self.dropped_pkts += 1;
            return;
        };
        let now = self.now;
        let link = &mut self.links[l as usize];
        if link.enqueue(pkt, now, &mut self.events) && !link.out.drops.is_empty() {
            self.drain_link_drops(l as usize);
        }
        self.fold_if_owed(l as usize);
    }

    /// Runs `link::fold_arrivals` if link `l` just put a packet on its empty wire and
    /// folds into the next link.
    #[inline(always)]
    pub(crate) fn fold_if_owed(&mut self, l: usize) {
        if self.links[l].fold_owed() {
            let routes = &self.routes;
            crate::link::fold_arrivals(
                &mut self.links,
                l,
                &|at, dst| routes.next(at, dst),
                self.horizon,
                &mut self.events,
            );
        }
    }

    /// A lower-layer timer of link `l` fired. (Kept out of line: plain wired links
    /// never get here, and inlining it into the event loop slows the wire path.)
    #[inline(never)]
    pub fn link_timer(&mut self, l: u32, kind: u32) {
        let now = self.now;
        let tag = kind & timer::TAG;
        if tag == timer::MEDIUM_ACCESS || tag == timer::MEDIUM_END || tag == timer::MEDIUM_POKE {
            let m = self.links[l as usize]
                .medium()
                .expect("medium timer on a link that is not a WiFi interface");
            let medium = &mut self.media[m];
            if tag == timer::MEDIUM_POKE {
                medium.poke(&mut self.links, now, &mut self.events);
            } else if tag == timer::MEDIUM_ACCESS {
                medium.on_access(&mut self.links, now, &mut self.events);
            } else {
                medium.on_end(&mut self.links, now, &mut self.events);
                for i in 0..self.media[m].p.members.len() {
                    let ml = self.media[m].p.members[i].0 as usize;
                    if !self.links[ml].out.drops.is_empty() {
                        self.drain_link_drops(ml);
                    }
                }
            }
        } else {
            let link = &mut self.links[l as usize];
            link.on_timer(kind, now, &mut self.events);
            if !link.out.drops.is_empty() {
                self.drain_link_drops(l as usize);
            }
        }
    }

    pub(crate) fn drain_link_drops(&mut self, l: usize) {
        let now = self.now;
        let link = &mut self.links[l];
        for d in link.out.drops.drain(..) {
            if d.1 != crate::qdisc::DropReason::Wire {
                // (a wire loss happens after the transmission completed)
                crate::link::tx_complete(link.p.from, &d.0, now, &mut self.events);
            }
            link.stats.series.drop(now);
            if !link.stats.packet_windows.is_empty() {
                // the time the packet spent in the qdisc (0 for one refused on arrival):
                // Little's law over all packets leaving a queue counts head drops too
                let waited = now.saturating_since(d.0.enqueued_at).as_nanos() as f64 * 1e-9;
                link.stats.log_packet(now, crate::link::PKT_DROP, waited);
            }
            self.pending_drops.push(d);
        }
    }
}
