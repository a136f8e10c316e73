//! TCP settings: the scenario-file table ([`TcpOptions`], every field optional so that a
//! flow's `tcp = { ... }` can override single fields of the scenario-wide `[tcp]` table)
//! and the resolved, validated [`TcpConfig`] a connection runs with.
//!
//! Resolution order for each field: flow table > scenario `[tcp]` table > built-in
//! default. The built-in defaults are Linux's (the studies ran Linux hosts) unless the
//! doc comment says otherwise.
//!
//! Layout: `options` (the table, its value kinds and parameter docs), `profiles` (the
//! stack profiles), `resolve` (defaults, checks, [`TcpConfig`]).

mod options;
mod profiles;
mod resolve;
#[cfg(test)]
mod tests;

pub use super::CcKind;
pub use options::{
    BbrVersion, CaGrowth, DelayedAck, LossDetection, RcvTune, Recovery, RenoHalves, RtoFloor,
    RttScaling, RttTiming, SsGrowth, TcpOptions, Tlp, Undo, TCP_PARAMS,
};
pub use profiles::{Stack, STACKS};
pub use resolve::{TcpConfig, NO_CWND_CAP};

/// IPv4 (20) + TCP (20) + timestamp option (12) bytes: a segment's IP size is
/// payload + `HEADER_BYTES` (+ SACK option bytes).
pub const HEADER_BYTES: u32 = 52;
/// The same without the timestamp option (`timestamps = false`): 40 bytes.
pub const HEADER_BYTES_NO_TS: u32 = 40;

/// A segment's header bytes without SACK blocks: [`HEADER_BYTES`] with the timestamp
/// option, [`HEADER_BYTES_NO_TS`] without.
#[inline]
pub fn header_bytes(timestamps: bool) -> u32 {
    if timestamps {
        HEADER_BYTES
    } else {
        HEADER_BYTES_NO_TS
    }
}

/// The receive window when no profile or key sets one: 3 MiB (Linux `tcp_rmem[2]` 6 MiB with
/// `tcp_adv_win_scale` 1).
const DEFAULT_RCV_WINDOW: u32 = 3 * 1024 * 1024;
