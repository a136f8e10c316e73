//! Static routing: shortest-hop routes over the planned links.

use crate::link::LinkParams;
use crate::packet::NodeId;
use crate::qdisc::QdiscConfig;
use crate::time::SimDuration;
use std::collections::VecDeque;

/// Shortest-hop static routes: for each node, the outgoing link towards each destination.
/// Hosts with a single outgoing link use it for everything (no table). A multi-peer link
/// (DOCSIS downstream, WiFi access point) is one outgoing link with several far ends;
/// for each such link the routes also give the destination → peer table.
///
/// Only nodes with several outgoing links (routers) and origins of multi-peer links keep
/// a table, filled by one breadth-first search from that node: time and memory are
/// O(routers × (nodes + links)), not O(nodes²) (a 100,000-pair dumbbell has 2 routers).
/// Among equally short routes a router takes the one whose first link was listed
/// first (the breadth-first search visits links in index order).
#[derive(Clone, Debug)]
pub struct Routes {
    n: usize,
    /// Per node: `Some(link)` if the node has exactly one outgoing link.
    default: Vec<Option<u32>>,
    /// Per node with several outgoing links: `n` entries, `u32::MAX` = unreachable.
    table: Vec<Option<Vec<u32>>>,
    /// `(link, table)` for every multi-peer link: destination → index into its `peers`.
    peer_tables: Vec<(u32, Vec<u32>)>,
    routers: usize,
}

impl Routes {
    pub fn compute(n: usize, links: &[(LinkParams, QdiscConfig)]) -> Routes {
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut multi_origin = vec![false; n];
        for (i, (p, _)) in links.iter().enumerate() {
            out[p.from as usize].push(i as u32);
            if !p.peers.is_empty() {
                multi_origin[p.from as usize] = true;
            }
        }
        let ends = |l: u32| -> &[NodeId] {
            let p = &links[l as usize].0;
            if p.peers.is_empty() {
                std::slice::from_ref(&p.to)
            } else {
                &p.peers
            }
        };
        let mut default = vec![None; n];
        let mut table = vec![None; n];
        let mut hops: Vec<Option<Vec<NodeId>>> = vec![None; n];
        let mut routers = 0;
        let mut seen = vec![false; n];
        let mut q = VecDeque::new();
        for u in 0..n {
            if out[u].len() == 1 {
                default[u] = Some(out[u][0]);
            }
            if !(out[u].len() > 1 || multi_origin[u]) {
                continue;
            }
            routers += 1;
            // next[dst]: first link from u; hop[dst]: the node it leads to
            let mut next = vec![u32::MAX; n];
            let mut hop = vec![NodeId::MAX; n];
            seen.iter_mut().for_each(|x| *x = false);
            seen[u] = true;
            for &l in &out[u] {
                for &e in ends(l) {
                    if !seen[e as usize] {
                        seen[e as usize] = true;
                        next[e as usize] = l;
                        hop[e as usize] = e;
                        q.push_back(e as usize);
                    }
                }
            }
            while let Some(v) = q.pop_front() {
                for &l in &out[v] {
                    for &e in ends(l) {
                        let e = e as usize;
                        if !seen[e] {
                            seen[e] = true;
                            next[e] = next[v];
                            hop[e] = hop[v];
                            q.push_back(e);
                        }
                    }
                }
            }
            if multi_origin[u] {
                hops[u] = Some(hop);
            }
            if out[u].len() > 1 {
                table[u] = Some(next);
            }
        }
        let mut peer_tables = Vec::new();
        for (i, (p, _)) in links.iter().enumerate() {
            if p.peers.is_empty() {
                continue;
            }
            let u = p.from as usize;
            let h = hops[u].as_ref().expect("hop table of a multi-peer origin");
            let via_i = |dst: usize| match &table[u] {
                Some(t) => t[dst] == i as u32,
                None => h[dst] != NodeId::MAX,
            };
            let t: Vec<u32> = (0..n)
                .map(|dst| {
                    if via_i(dst) {
                        p.peers
                            .iter()
                            .position(|&x| x == h[dst])
                            .map(|k| k as u32)
                            .unwrap_or(u32::MAX)
                    } else {
                        u32::MAX
                    }
                })
                .collect();
            peer_tables.push((i as u32, t));
        }
        Routes {
            n,
            default,
            table,
            peer_tables,
            routers,
        }
    }
    /// Nodes with a routing table (for the resource model).
    pub fn routers(&self) -> usize {
        self.routers
    }
    /// Entries held in all routing and peer tables (what the routes cost in memory, in
    /// `u32`s besides the per-node default link).
    pub fn table_entries(&self) -> usize {
        self.table.iter().flatten().map(Vec::len).sum::<usize>()
            + self.peer_tables.iter().map(|(_, t)| t.len()).sum::<usize>()
    }
    /// The links from `a` to `b` (empty if unreachable or `a == b`).
    pub fn path(&self, a: NodeId, b: NodeId, links: &[(LinkParams, QdiscConfig)]) -> Vec<u32> {
        walk(
            a,
            b,
            self.n,
            |at, dst| self.next(at, dst),
            |l, dst| self.far_end(l, dst, links),
        )
    }
    /// The destination → peer tables of the multi-peer links.
    pub fn peer_tables(&self) -> &[(u32, Vec<u32>)] {
        &self.peer_tables
    }
    /// The node after link `l` on the way to `dst` (its far end, or for a multi-peer
    /// link the peer that leads to `dst`).
    fn far_end(&self, l: u32, dst: NodeId, links: &[(LinkParams, QdiscConfig)]) -> NodeId {
        let p = &links[l as usize].0;
        if p.peers.is_empty() {
            return p.to;
        }
        self.peer_tables
            .iter()
            .find(|(li, _)| *li == l)
            .and_then(|(_, t)| p.peers.get(t[dst as usize] as usize).copied())
            .unwrap_or(p.to)
    }
    /// Sum of link propagation delays along the route from `a` to `b` (zero if unreachable).
    pub fn path_delay(
        &self,
        a: NodeId,
        b: NodeId,
        links: &[(LinkParams, QdiscConfig)],
    ) -> SimDuration {
        let mut at = a;
        let mut d = SimDuration::ZERO;
        let mut hops = 0;
        while at != b && hops <= self.n {
            let Some(l) = self.next(at, b) else {
                return SimDuration::ZERO;
            };
            d += links[l as usize].0.delay;
            at = self.far_end(l, b, links);
            hops += 1;
        }
        d
    }
    /// Whether packets from `a` reach `b` (following the routes, at most `nodes` hops).
    pub fn reachable(&self, a: NodeId, b: NodeId, links: &[(LinkParams, QdiscConfig)]) -> bool {
        let mut at = a;
        for _ in 0..=self.n {
            if at == b {
                return true;
            }
            match self.next(at, b) {
                Some(l) => at = self.far_end(l, b, links),
                None => return false,
            }
        }
        false
    }
    /// The outgoing link at `at` towards `dst`.
    #[inline]
    pub fn next(&self, at: NodeId, dst: NodeId) -> Option<u32> {
        if let Some(l) = self.default[at as usize] {
            return Some(l);
        }
        match &self.table[at as usize] {
            Some(t) => {
                let l = t[dst as usize];
                (l != u32::MAX).then_some(l)
            }
            None => None,
        }
    }
    pub fn nodes(&self) -> usize {
        self.n
    }
    /// Kept for callers: the routes hold no validation-only data any more.
    pub fn shrink(&mut self) {}
}

/// The path of links from `a` to `b` given a next-hop function (`None` = unreachable)
/// and the far end of a link towards `b`; at most `max_hops` links.
pub fn walk(
    a: NodeId,
    b: NodeId,
    max_hops: usize,
    mut next: impl FnMut(NodeId, NodeId) -> Option<u32>,
    mut far: impl FnMut(u32, NodeId) -> NodeId,
) -> Vec<u32> {
    let mut at = a;
    let mut out = Vec::new();
    while at != b && out.len() <= max_hops {
        let Some(l) = next(at, b) else {
            return Vec::new();
        };
        out.push(l);
        at = far(l, b);
    }
    out
}
