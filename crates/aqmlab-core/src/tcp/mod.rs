//! TCP: connections, loss recovery and congestion control, as Linux behaves.
//!
//! Layers, bottom up:
//! - [`config`]: the `[tcp]` / `tcp = { ... }` scenario tables and the resolved
//!   [`TcpConfig`] (Linux defaults).
//! - [`rtt`]: RTT estimation and the retransmission timeout (RFC 6298, Linux floor).
//! - [`cc`]: the congestion-control contract; [`newreno`] and [`cubic`] implement it.
//! - [`scoreboard`]: outstanding segments, SACK tagging, RFC 6675 loss marking.
//! - [`sender`] / [`receiver`]: the two halves of an endpoint; algorithm cores that take
//!   `now` and never touch the event queue.
//! - [`conn`]: [`TcpConn`], a full-duplex connection between the two endpoints of a
//!   flow: handshake, packets on the wire, timers, events for the application.
//!
//! Applications (`app/bulk.rs`, later web and video workloads) embed connections.

pub mod cc;
pub mod config;
pub mod conn;
pub mod cubic;
pub mod newreno;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;

pub use cc::{CcKind, CongestionControl, Window, CC_KINDS};
pub use config::{
    CaGrowth, DelayedAck, Recovery, RtoFloor, SsGrowth, Stack, TcpConfig, TcpOptions, STACKS,
    TCP_PARAMS,
};
pub use conn::{
    decode_timer, timer_kind, Side, TcpConn, TcpEvents, TcpHost, TimerType, APP_TIMER_BIT,
};
pub use sender::{SenderStats, UNLIMITED};
