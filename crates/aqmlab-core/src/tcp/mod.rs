//! TCP: connection state machines and congestion controls (see the TCP issue).

/// `(name, one-line description)` of every congestion control, for `aqmlab list cc`.
pub const CC_KINDS: &[(&str, &str)] = &[];
