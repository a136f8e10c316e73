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
#[derive(Clone, Debug)]
pub struct Routes {
    n: usize,
    /// Per node: `Some(link)` if the node has exactly one outgoing link.
    default: Vec<Option<u32>>,
    /// Per node with several outgoing links: `n` entries, `u32::MAX` = unreachable.
    table: Vec<Option<Vec<u32>>>,
    reach: Vec<Vec<bool>>,
    /// `(link, table)` for every multi-peer link: destination → index into its `peers`.
    peer_tables: Vec<(u32, Vec<u32>)>,
}

impl Routes {
    pub fn compute(n: usize, links: &[(LinkParams, QdiscConfig)]) -> Routes {
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut inc: Vec<Vec<(u32, NodeId)>> = vec![Vec::new(); n];
        // nodes that originate a multi-peer link need the next *node* as well
        let mut hop: Vec<Option<Vec<NodeId>>> = vec![None; n];
        for (i, (p, _)) in links.iter().enumerate() {
            out[p.from as usize].push(i as u32);
            let ends: &[NodeId] = if p.peers.is_empty() {
                std::slice::from_ref(&p.to)
            } else {
                &p.peers
            };
            for &e in ends {
                inc[e as usize].push((i as u32, p.from));
            }
            if !p.peers.is_empty() && hop[p.from as usize].is_none() {
                hop[p.from as usize] = Some(vec![NodeId::MAX; n]);
            }
        }
        // next[src][dst] via reverse BFS from each destination.
        let mut next = vec![vec![u32::MAX; n]; n];
        let mut reach = vec![vec![false; n]; n];
        for dst in 0..n {
            let mut seen = vec![false; n];
            seen[dst] = true;
            reach[dst][dst] = true;
            let mut q = VecDeque::from([dst]);
            while let Some(v) = q.pop_front() {
                for &(li, u) in &inc[v] {
                    let u = u as usize;
                    if !seen[u] {
                        seen[u] = true;
                        reach[u][dst] = true;
                        next[u][dst] = li;
                        if let Some(h) = hop[u].as_mut() {
                            h[dst] = v as NodeId;
                        }
                        q.push_back(u);
                    }
                }
            }
        }
        let mut peer_tables = Vec::new();
        for (i, (p, _)) in links.iter().enumerate() {
            if p.peers.is_empty() {
                continue;
            }
            let u = p.from as usize;
            let h = hop[u].as_ref().expect("hop table of a multi-peer origin");
            let t: Vec<u32> = (0..n)
                .map(|dst| {
                    if next[u][dst] == i as u32 {
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
        let mut default = vec![None; n];
        let mut table = vec![None; n];
        for v in 0..n {
            if out[v].len() == 1 {
                default[v] = Some(out[v][0]);
            } else {
                table[v] = Some(std::mem::take(&mut next[v]));
            }
        }
        Routes {
            n,
            default,
            table,
            reach,
            peer_tables,
        }
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
    pub fn reachable(&self, a: NodeId, b: NodeId) -> bool {
        self.reach[a as usize][b as usize]
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
    /// Drops the reachability matrix (only needed for validation) to save memory.
    pub fn shrink(&mut self) {
        self.reach = Vec::new();
    }
}
