//! Setup shared by the integration tests (each test file is its own crate and uses what
//! it needs, hence the `dead_code` allowance).
#![allow(dead_code)]

use aqmlab_core::{run_scenario, RunResult, Scenario};

/// Parses and runs a scenario; a parse or validation error fails the test with the
/// message and the scenario text.
pub fn run(toml: &str, seed: u64) -> RunResult {
    let sc = Scenario::from_toml_str(toml).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    run_scenario(&sc, seed).unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

/// A workload's extra column of a flow; a missing one fails the test.
pub fn extra(r: &RunResult, flow: &str, key: &str) -> f64 {
    r.extra(flow, key)
        .unwrap_or_else(|| panic!("no {key} for {flow}"))
}

/// `x` is within the relative tolerance `rel` of `want`.
pub fn within(x: f64, want: f64, rel: f64) -> bool {
    (x / want - 1.0).abs() <= rel
}
