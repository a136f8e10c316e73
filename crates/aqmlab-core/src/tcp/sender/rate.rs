//! Delivery-rate estimation (Linux `tcp_rate.c`): the state each transmission carries
//! and the rate sample of an ACK.

use super::*;

impl Sender {
    /// Linux `tcp_rate_skb_sent`: the rate-estimation state a (re)transmission carries.
    /// `in_flight` is the flight including this segment.
    pub(super) fn tx_stamp(&mut self, now: SimTime, in_flight: u32) -> TxStamp {
        if self.sb.packets_out == 0 {
            // A new send phase starts with nothing in flight.
            self.first_tx = now;
            self.delivered_time = now;
        }
        TxStamp {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_tx: self.first_tx,
            app_limited: self.app_limited != 0,
            lost: self.sb.lost_total,
            in_flight,
        }
    }

    /// Linux `tcp_rate_gen`: the rate sample of an ACK that delivered `d`, after loss
    /// detection (`lost_before`: `tp->lost` when the ACK arrived).
    pub(super) fn rate_sample(
        &mut self,
        now: SimTime,
        d: &Delivered,
        prior_in_flight: u32,
        lost_before: u64,
    ) -> RateSample {
        let mut rs = RateSample {
            losses: (self.sb.lost_total - lost_before) as u32,
            prior_in_flight,
            in_flight: self.in_flight(),
            delivered_total: self.delivered,
            delivered_time: self.delivered_time,
            lost_total: self.sb.lost_total,
            delivered_ce_total: self.delivered_ce,
            ca_state: self.state,
            app_limited_now: self.unsent() == 0 && !self.fin_requested,
            next_departure: if self.pacing {
                self.wstamp
            } else {
                SimTime::ZERO
            },
            ..RateSample::default()
        };
        let Some(r) = d.rate else {
            return rs;
        };
        rs.prior_delivered = r.tx.delivered;
        rs.is_app_limited = r.tx.app_limited;
        rs.delivered = self.delivered - r.tx.delivered;
        rs.lost = self.sb.lost_total - r.tx.lost;
        rs.tx_in_flight = r.tx.in_flight;
        // The longer of the send and the ACK phase: the rate cannot exceed either.
        let snd = r.sent.saturating_since(r.tx.first_tx);
        let ack = now.saturating_since(r.tx.delivered_time);
        rs.interval = snd.max(ack);
        rs.valid = !rs.interval.is_zero() && self.min_rtt.is_none_or(|m| rs.interval >= m);
        rs
    }

    /// Linux `tcp_rate_skb_delivered` and the delivery count of `tcp_clean_rtx_queue` /
    /// `tcp_sacktag_write_queue`: segments newly delivered by this ACK (cumulatively,
    /// SACKed, or counted duplicate ACKs); the next send phase is measured from the
    /// sampled segment's transmission; an application-limited phase ends once its
    /// flight is delivered.
    #[inline]
    pub(super) fn count_delivered(&mut self, c: &mut AckCtx) {
        let delivered = (c.prior_packets - self.sb.packets_out) as i64
            + (self.sb.sacked_out + self.reno_sacked) as i64
            - c.prior_sacked as i64;
        c.delivered = delivered.max(0) as u32;
        self.delivered += c.delivered as u64;
        if c.delivered > 0 {
            self.delivered_time = c.now;
        }
        if let Some(r) = c.d.rate {
            self.first_tx = r.sent;
        }
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
    }
}
