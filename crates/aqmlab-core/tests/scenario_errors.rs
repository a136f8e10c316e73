//! Scenario errors name the offending key, also inside tagged tables (`qdisc = { kind = ... }`,
//! `[[flow]]` kinds), where serde alone would lose the path.

use aqmlab_core::Scenario;

const BASE: &str = r#"
[run]
duration = "2s"

[dumbbell]
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "fifo", limit = 100 }

[[flow]]
kind = "cbr"
from = "client0"
to = "server0"
rate = "20Mbit"
"#;

fn err(old: &str, new: &str) -> (String, String) {
    assert!(BASE.contains(old), "{old}");
    let text = BASE.replacen(old, new, 1);
    let e = Scenario::from_toml_str(&text)
        .and_then(|s| s.validate().map(|_| s))
        .expect_err("must fail");
    (e.field, e.message)
}

#[test]
fn base_is_valid() {
    Scenario::from_toml_str(BASE).unwrap().validate().unwrap();
}

#[test]
fn qdisc_fields_are_named() {
    let (f, m) = err("limit = 100", "limit = -3");
    assert_eq!(f, "dumbbell.qdisc.limit");
    assert!(m.contains("-3") && m.contains("line 8"), "{m}");
    let (f, m) = err("limit = 100", "limit = 100, colour = 1");
    assert_eq!(f, "dumbbell.qdisc.colour");
    assert!(m.contains("`limit`"), "{m}");
    let (f, m) = err(r#"kind = "fifo""#, r#"kind = "fiffo""#);
    assert_eq!(f, "dumbbell.qdisc.kind");
    assert!(m.contains("fiffo") && m.contains("`fifo`"), "{m}");
    let (f, m) = err(r#"kind = "fifo", "#, "");
    assert_eq!(f, "dumbbell.qdisc.kind");
    assert!(m.contains("missing field `kind`"), "{m}");
    // aliases still parse
    let text = BASE.replacen(r#"kind = "fifo""#, r#"kind = "pfifo""#, 1);
    Scenario::from_toml_str(&text).unwrap().validate().unwrap();
}

#[test]
fn flow_fields_are_named() {
    let (f, m) = err(r#"rate = "20Mbit""#, r#"rate = "20Mbyte""#);
    assert_eq!(f, "flow[0].rate");
    assert!(m.contains("Mbyte") && m.contains("allowed"), "{m}");
    let (f, m) = err(r#"rate = "20Mbit""#, "rate = \"20Mbit\"\nsize = \"big\"");
    assert_eq!(f, "flow[0].size");
    assert!(m.contains("big"), "{m}");
    let (f, m) = err(r#"rate = "20Mbit""#, "rate = \"20Mbit\"\nburst = 3");
    assert_eq!(f, "flow[0].burst");
    assert!(
        m.contains("`rate`") && m.contains("common keys") && m.contains("start_spread"),
        "{m}"
    );
    let (f, _) = err(r#"rate = "20Mbit""#, "rate = \"20Mbit\"\ncount = 0");
    assert_eq!(f, "flow[0].count");
    let (f, _) = err(
        r#"rate = "20Mbit""#,
        "rate = \"20Mbit\"\nstart = \"1 fortnight\"",
    );
    assert_eq!(f, "flow[0].start");
    let (f, m) = err(r#"kind = "cbr""#, r#"kind = "cbrr""#);
    assert_eq!(f, "flow[0].kind");
    assert!(m.contains("cbrr"), "{m}");
}

#[test]
fn plain_fields_keep_their_paths() {
    assert_eq!(
        err(r#"rate = "10Mbit""#, r#"rate = "-10Mbit""#).0,
        "dumbbell.rate"
    );
    assert_eq!(err(r#"rate = "10Mbit""#, "rate = 0").0, "dumbbell.rate");
    assert_eq!(
        err(r#"delay = "10ms""#, r#"delay = "10 fortnights""#).0,
        "dumbbell.delay"
    );
    assert_eq!(
        err(r#"delay = "10ms""#, "delay = \"10ms\"\ncolour = 1").0,
        "dumbbell.colour"
    );
    let (f, m) = err("[run]", "[run");
    assert_eq!(f, "");
    assert!(m.contains("line 2"), "{m}");
}
