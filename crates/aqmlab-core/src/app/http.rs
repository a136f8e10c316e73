//! HTTP-like request/response exchanges over TCP: the engine under `web`, `wrt`,
//! `web_users` and `has`. Not a workload itself.
//!
//! [`HttpConns`] holds the live TCP connections of one flow. The client is always the
//! flow's `src` (connection side A), the server its `dst` (side B). Each connection has
//! a number, unique over the flow's life (never reused, so a late packet or timer of a
//! closed connection cannot reach a new one); it travels in the packets' `seq` field
//! (`FlowCtx::packet_conn`) and in the TCP timer kinds. Number 0 is never a TCP
//! connection: applications use it for their UDP exchanges (name lookups).
//!
//! One request is outstanding per connection at a time (HTTP/1.1 without pipelining,
//! as browsers do). A request is `request` bytes from client to server; the server
//! answers as soon as the whole request has arrived with the response size the client
//! asked for; the response is complete when that many more bytes have arrived in order
//! at the client. Sizes are bytes of TCP payload (HTTP headers included). The server
//! either keeps the connection open (persistent) or closes it after the response
//! (`Connection: close`, one object per connection); when the server closes, the
//! client closes too. A connection is forgotten once both FINs are acknowledged, or
//! when its handshake fails (after Linux's 6 SYN retries, ~127 s).
//!
//! A request written before the handshake completes waits in the send buffer and
//! leaves right after the ACK of the SYN-ACK, as with a blocking `connect` + `send`.

use super::FlowCtx;
use crate::packet::{Packet, PacketKind};
use crate::tcp::{decode_timer, Side, TcpConfig, TcpConn};
use crate::time::SimTime;

/// HTTP GET request size in bytes of TCP payload: request line + typical browser headers
/// (Host, User-Agent, Accept*, Connection, a short cookie) are 300–500 bytes; 400 is
/// the middle (the residential study's point is that these requests compete with
/// upstream bulk TCP).
pub const DEFAULT_REQUEST_BYTES: u32 = 400;

/// One live connection.
#[derive(Debug)]
struct Conn {
    id: u32,
    tag: u32,
    tcp: Box<TcpConn>,
    /// Client: a request is outstanding.
    busy: bool,
    /// Client: the outstanding request's object number and issue time.
    obj: u32,
    issued: SimTime,
    /// Client: response bytes (cumulative on this connection) that complete it.
    resp_end: u64,
    /// Client: size of the outstanding response.
    resp_size: u64,
    /// Client: request bytes written so far (cumulative).
    req_written: u64,
    /// Server: the pending request is complete when this many request bytes arrived.
    req_end: u64,
    /// Server: response size to write when the pending request is complete (0 = none).
    pending_resp: u64,
    /// Server: close after the pending response.
    close_after: bool,
    client_closed: bool,
    server_closed: bool,
}

/// A request and its response.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Exchange {
    pub obj: u32,
    pub issued: SimTime,
    /// Response bytes.
    pub bytes: u64,
}

/// What one packet or timer did to a connection.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The connection's number and tag.
    pub id: u32,
    pub tag: u32,
    /// The handshake completed at the client.
    pub connected: bool,
    /// Response payload newly delivered in order to the client.
    pub delivered: u64,
    /// The outstanding response is complete.
    pub done: Option<Exchange>,
    /// The handshake failed; the connection is gone.
    pub failed: bool,
    /// With `failed`: the request the connection carried, to be sent again
    /// ([`HttpConns::reissue`]).
    pub unanswered: Option<Exchange>,
}

/// The live connections of one flow (see the module doc).
#[derive(Debug)]
pub struct HttpConns {
    cfg: TcpConfig,
    next_id: u32,
    live: Vec<Conn>,
    /// Connections opened so far.
    pub opened: u64,
    /// Handshakes that failed.
    pub failures: u64,
}

/// Connection numbers wrap below the 28 bits a TCP timer kind has for them.
const ID_SPACE: u32 = 1 << 28;

impl HttpConns {
    pub fn new(cfg: TcpConfig) -> Self {
        HttpConns {
            cfg,
            next_id: 1,
            live: Vec::new(),
            opened: 0,
            failures: 0,
        }
    }

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    /// Opens a connection from the client to the server; returns its number.
    pub fn open(&mut self, cx: &mut FlowCtx, tag: u32) -> u32 {
        let id = self.next_id;
        self.next_id = if self.next_id + 1 >= ID_SPACE {
            1
        } else {
            self.next_id + 1
        };
        let mut tcp = Box::new(TcpConn::new(&self.cfg, id));
        let (a, b) = (cx.src, cx.dst);
        tcp.connect(cx, a, b);
        self.live.push(Conn {
            id,
            tag,
            tcp,
            busy: false,
            obj: 0,
            issued: cx.now,
            resp_end: 0,
            resp_size: 0,
            req_written: 0,
            req_end: 0,
            pending_resp: 0,
            close_after: false,
            client_closed: false,
            server_closed: false,
        });
        self.opened += 1;
        id
    }

    fn find(&self, id: u32) -> Option<usize> {
        self.live.iter().position(|c| c.id == id)
    }

    /// Live connections.
    pub fn len(&self) -> usize {
        self.live.len()
    }
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }
    /// The connection exists, is open at the client and has no outstanding request.
    pub fn is_idle(&self, id: u32) -> bool {
        self.find(id)
            .is_some_and(|i| !self.live[i].busy && !self.live[i].client_closed)
    }
    /// The connection's TCP state (tests, summaries).
    pub fn tcp(&self, id: u32) -> Option<&TcpConn> {
        self.find(id).map(|i| &*self.live[i].tcp)
    }

    /// Sends a request of `req` bytes for a `resp`-byte response on connection `id`;
    /// `close_after` makes the server close the connection after the response.
    /// Panics if the connection is busy or closed (a bug in the application).
    pub fn request(
        &mut self,
        cx: &mut FlowCtx,
        id: u32,
        req: u32,
        resp: u64,
        obj: u32,
        close_after: bool,
    ) {
        let ex = Exchange {
            obj,
            issued: cx.now,
            bytes: resp,
        };
        self.reissue(cx, id, req, ex, close_after);
    }

    /// Like [`request`](Self::request) for an exchange issued earlier (its `issued` time
    /// is kept, so its response time counts from the first attempt).
    pub fn reissue(
        &mut self,
        cx: &mut FlowCtx,
        id: u32,
        req: u32,
        ex: Exchange,
        close_after: bool,
    ) {
        let (obj, resp) = (ex.obj, ex.bytes);
        let i = self.find(id).expect("request on a live connection");
        let c = &mut self.live[i];
        assert!(!c.busy && !c.client_closed, "one request at a time");
        debug_assert!(req > 0 && resp > 0);
        c.busy = true;
        c.obj = obj;
        c.issued = ex.issued;
        c.resp_end += resp;
        c.resp_size = resp;
        c.req_written += req as u64;
        c.req_end = c.req_written;
        c.pending_resp = resp;
        c.close_after = close_after;
        c.tcp.write(cx, Side::A, req as u64);
    }

    /// The client closes connection `id` (its FIN follows any queued data).
    pub fn close(&mut self, cx: &mut FlowCtx, id: u32) {
        if let Some(i) = self.find(id) {
            let c = &mut self.live[i];
            if !c.client_closed {
                c.client_closed = true;
                c.tcp.close(cx, Side::A);
            }
        }
    }

    /// Closes every idle connection with `tag` (or every idle one, for `None`).
    pub fn close_idle(&mut self, cx: &mut FlowCtx, tag: Option<u32>) {
        for c in self.live.iter_mut() {
            if !c.busy && !c.client_closed && tag.is_none_or(|t| t == c.tag) {
                c.client_closed = true;
                c.tcp.close(cx, Side::A);
            }
        }
    }

    /// A TCP packet of this flow arrived; None if it belongs to no live connection.
    pub fn on_packet(&mut self, cx: &mut FlowCtx, pkt: &Packet) -> Option<Outcome> {
        debug_assert_eq!(pkt.kind, PacketKind::Tcp);
        let i = self.find(pkt.seq as u32)?;
        let c = &mut self.live[i];
        let ev = c.tcp.on_packet(cx, pkt);
        let mut out = Outcome {
            id: c.id,
            tag: c.tag,
            connected: false,
            delivered: 0,
            done: None,
            failed: false,
            unanswered: None,
        };
        match ev.side {
            Side::B => {
                if c.pending_resp > 0 && c.tcp.bytes_received(Side::B) >= c.req_end {
                    let r = std::mem::take(&mut c.pending_resp);
                    c.tcp.write(cx, Side::B, r);
                    if c.close_after {
                        c.server_closed = true;
                        c.tcp.close(cx, Side::B);
                    }
                }
                if ev.peer_closed && !c.server_closed {
                    c.server_closed = true;
                    c.tcp.close(cx, Side::B);
                }
            }
            Side::A => {
                out.connected = ev.connected;
                out.delivered = ev.delivered;
                if c.busy && c.tcp.bytes_received(Side::A) >= c.resp_end {
                    c.busy = false;
                    out.done = Some(Exchange {
                        obj: c.obj,
                        issued: c.issued,
                        bytes: c.resp_size,
                    });
                }
                if ev.peer_closed && !c.client_closed {
                    c.client_closed = true;
                    c.tcp.close(cx, Side::A);
                }
            }
        }
        self.reap(i);
        Some(out)
    }

    /// A timer fired; None if it is not a TCP timer of a live connection.
    pub fn on_timer(&mut self, cx: &mut FlowCtx, kind: u32) -> Option<Outcome> {
        let (id, _, _) = decode_timer(kind)?;
        let i = self.find(id)?;
        let c = &mut self.live[i];
        let ev = c.tcp.on_timer(cx, kind);
        let out = Outcome {
            id: c.id,
            tag: c.tag,
            connected: false,
            delivered: 0,
            done: None,
            failed: ev.failed,
            unanswered: (ev.failed && c.busy).then_some(Exchange {
                obj: c.obj,
                issued: c.issued,
                bytes: c.resp_size,
            }),
        };
        if ev.failed {
            self.failures += 1;
        }
        self.reap(i);
        Some(out)
    }

    /// Forgets connection `i` if it is fully closed or failed.
    fn reap(&mut self, i: usize) {
        let t = &self.live[i].tcp;
        if t.has_failed() || t.is_closed() {
            self.live.swap_remove(i);
        }
    }
}

/// Exact values of a per-event metric (page or response times), for summaries.
#[derive(Clone, Debug, Default)]
pub struct Values(Vec<f64>);

impl Values {
    pub fn push(&mut self, v: f64) {
        self.0.push(v);
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn as_slice(&self) -> &[f64] {
        &self.0
    }
    /// Mean; NaN when empty.
    pub fn mean(&self) -> f64 {
        if self.0.is_empty() {
            f64::NAN
        } else {
            self.0.iter().sum::<f64>() / self.0.len() as f64
        }
    }
    /// Sample standard deviation (n − 1); NaN below two values.
    pub fn sd(&self) -> f64 {
        let n = self.0.len();
        if n < 2 {
            return f64::NAN;
        }
        let m = self.mean();
        (self.0.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64).sqrt()
    }
    /// Quantile `q` with linear interpolation between order statistics (numpy's
    /// default); NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
        let lo = pos.floor() as usize;
        let hi = pos.ceil() as usize;
        v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_summaries() {
        let mut v = Values::default();
        assert!(v.mean().is_nan() && v.quantile(0.5).is_nan() && v.sd().is_nan());
        for x in [4.0, 1.0, 3.0, 2.0] {
            v.push(x);
        }
        assert_eq!(v.mean(), 2.5);
        assert_eq!(v.quantile(0.5), 2.5);
        assert_eq!(v.quantile(0.0), 1.0);
        assert_eq!(v.quantile(1.0), 4.0);
        assert!((v.quantile(0.9) - 3.7).abs() < 1e-12);
        assert!((v.sd() - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
    }
}
