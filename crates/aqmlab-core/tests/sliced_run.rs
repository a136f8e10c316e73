//! The Python binding runs a simulation in slices (`run_until` at 1 %, 2 %, … of the
//! duration) so it can check for Ctrl-C and report progress between them. That must not
//! change anything: the results equal those of one `run()`.

use aqmlab_core::{Scenario, SimTime, Simulator};

const SCENARIO: &str = r#"
[run]
duration = "3s"
warmup = "0.5s"
bin = "100ms"

[dumbbell]
pairs = 3
rate = "10Mbit"
delay = "7ms"
client_delays = ["1ms", "3ms", "11ms"]
qdisc = { kind = "fifo", limit = 30 }

[[flow]]
kind = "cbr"
from = "client0"
to = "server0"
rate = "15Mbit"
size = 1000
record_delay = true

[[flow]]
kind = "ping"
count = 3
from = "client{i}"
to = "server{i}"
interval = "50ms"
start_spread = "1s"
"#;

fn fingerprint(sim: &Simulator) -> String {
    let r = sim.results();
    format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{}|{}",
        r.flows, r.queues, r.series, r.samples, r.metric_names, r.events, r.packets_delivered
    )
}

#[test]
fn sliced_run_equals_single_run() {
    let sc = Scenario::from_toml_str(SCENARIO).unwrap();
    let mut whole = Simulator::new(&sc, 42).unwrap();
    whole.run();
    let mut sliced = Simulator::new(&sc, 42).unwrap();
    let end = sliced.end.as_nanos();
    for k in 1..=100u64 {
        sliced.run_until(SimTime::from_nanos(
            end / 100 * k + if k == 100 { end % 100 } else { 0 },
        ));
    }
    assert_eq!(sliced.now(), whole.now());
    assert!(whole.events_processed > 1000);
    assert_eq!(fingerprint(&sliced), fingerprint(&whole));
    sliced.check_conservation().unwrap();
}
