//! TCP Small Queues (Linux `tcp_small_queue_check`, `tcp_wfree`, `tcp_tsq_handler`; the
//! limit and its sources in [`crate::tcp::gso`]). Modelled for GSO senders whose
//! application delivers TX completions (`TcpConn::enable_tx_completions`).

use super::*;

impl Sender {
    /// Turns TSQ on (`[tcp] tsq` with GSO): the application reports when this sender's
    /// skbs leave its host's first link ([`tx_complete`](Self::tx_complete)).
    pub fn enable_tsq(&mut self) {
        self.tsq = self.gso;
    }

    /// Before the next skb: true if TSQ holds it back (`tcp_small_queue_check` returns
    /// true; the socket is then throttled until a TX completion). The skb's `truesize`
    /// is taken as its IP bytes at the current `tcp_tso_segs`; a lost segment due for
    /// retransmission is checked with the retransmission's limit.
    pub(super) fn tsq_blocks(&mut self) -> bool {
        let Some(k) = self.tsq else {
            return false;
        };
        if self.skb_open {
            return false; // a later segment of the skb being built
        }
        if self.wmem == 0 {
            return false;
        }
        // 6.1: "Always send skb if rtx queue is empty"
        if k == crate::tcp::gso::GsoKernel::Linux6_1 && self.sb.packets_out == 0 {
            return false;
        }
        let retrans = self.probe.is_none()
            && (self.in_flight() < self.w.cwnd || self.force_rtx)
            && self.sb.next_lost().is_some();
        let truesize = self.tso_segs() * (self.mss + self.hdr);
        let paced = self.pacing;
        let Some(limit) =
            crate::tcp::gso::tsq_limit(k, self.sk_pacing_rate(), truesize, paced, retrans)
        else {
            return false;
        };
        if self.wmem > limit {
            self.tsq_throttled = true;
            true
        } else {
            false
        }
    }

    /// An skb of `bytes` went below the socket (`skb_set_owner_w` in `tcp_transmit_skb`).
    pub fn tsq_sent(&mut self, bytes: u32) {
        if self.tsq.is_some() {
            self.wmem += bytes as u64;
        }
    }

    /// `bytes` of this socket's skbs left its host's first link or were dropped there
    /// (`tcp_wfree`). True if the socket was throttled: it tries to send now
    /// (`tcp_tsq_handler` → `tcp_write_xmit`).
    pub fn tx_complete(&mut self, bytes: u32) -> bool {
        if self.tsq.is_none() {
            return false;
        }
        self.wmem = self.wmem.saturating_sub(bytes as u64);
        std::mem::take(&mut self.tsq_throttled)
    }
}
