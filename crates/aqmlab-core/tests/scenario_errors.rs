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
    // a missing key of a [[node]] is named in the path, with the allowed kinds
    let text = "[[node]]\nname = \"a\"\n";
    let e = Scenario::from_toml_str(text).unwrap_err();
    assert_eq!(e.field, "node[0].kind", "{e}");
    assert!(
        e.message.contains("required") && e.message.contains("host, router"),
        "{e}"
    );
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

/// tc's `mbps` is megabytes per second, ns-3's `Mbps` megabits: such a rate is refused with
/// both readings, naming the key.
#[test]
fn ambiguous_bps_rates_are_refused_with_a_hint() {
    let (f, m) = err("rate = \"10Mbit\"", "rate = \"10MBps\"");
    assert_eq!(f, "dumbbell.rate");
    assert!(
        m.contains("ambiguous") && m.contains("80Mbit") && m.contains("'10Mbit'"),
        "{m}"
    );
    // tc's bit spellings keep tc's meaning
    let text = BASE.replacen("rate = \"10Mbit\"", "rate = \"10mbit\"", 1);
    let plan = Scenario::from_toml_str(&text).unwrap().validate().unwrap();
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}

/// `rate = 10` (10 bit/s) and `delay = 10` (10 s) are legal but almost certainly unit
/// mistakes: the run goes ahead with a warning naming the key.
#[test]
fn likely_unit_mistakes_warn() {
    let warns = |old: &str, new: &str| {
        let text = BASE.replacen(old, new, 1);
        let plan = Scenario::from_toml_str(&text).unwrap().validate().unwrap();
        plan.warnings
            .iter()
            .map(|w| (w.field.clone(), w.message.clone()))
            .collect::<Vec<_>>()
    };
    let w = warns("rate = \"10Mbit\"\ndelay", "rate = 10\ndelay");
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].0, "dumbbell.rate");
    assert!(w[0].1.contains("below 1 kbit/s"), "{w:?}");
    let w = warns("delay = \"10ms\"", "delay = 10.5");
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].0, "dumbbell.delay");
    assert!(w[0].1.contains("above 10 s"), "{w:?}");
    // the boundaries themselves are fine
    assert!(warns("rate = \"10Mbit\"\ndelay", "rate = \"1kbit\"\ndelay").is_empty());
    assert!(warns("delay = \"10ms\"", "delay = \"10s\"").is_empty());
    // explicit links too
    let text = "[[node]]\nname = \"a\"\nkind = \"host\"\n[[node]]\nname = \"b\"\nkind = \"host\"\n[[link]]\nfrom = \"a\"\nto = \"b\"\nrate = 100\ndelay = \"20s\"\n";
    let plan = Scenario::from_toml_str(text).unwrap().validate().unwrap();
    let fields: Vec<_> = plan.warnings.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(fields, ["link[0].rate", "link[0].delay"]);
}

const TWO_LINKS: &str = r#"
[run]
duration = "1s"

[[node]]
name = "a"
kind = "host"

[[node]]
name = "r"
kind = "router"

[[node]]
name = "b"
kind = "host"

[[link]]
name = "hop"
from = "a"
to = "r"
rate = "10Mbit"

[[link]]
name = "NAME2"
from = "r"
to = "b"
rate = "10Mbit"

[[flow]]
kind = "cbr"
from = "a"
to = "b"
rate = "1Mbit"
"#;

fn links_err(name2: &str) -> Result<(), (String, String)> {
    let text = TWO_LINKS.replace("NAME2", name2);
    Scenario::from_toml_str(&text)
        .and_then(|s| s.validate().map(|_| ()))
        .map_err(|e| (e.field, e.message))
}

#[test]
fn duplicate_link_names_are_refused_naming_the_duplicate() {
    assert!(links_err("hop2").is_ok());
    let (f, m) = links_err("hop").expect_err("a second link named 'hop'");
    assert_eq!(f, "link[1].name");
    assert!(m.contains("'hop' is used twice"), "{m}");
    // the reverse direction of the named duplex link 'hop' is 'hop_rev'
    let (f, m) = links_err("hop_rev").expect_err("clashes with hop's reverse direction");
    assert_eq!(f, "link[1].name");
    assert!(m.contains("'hop_rev'"), "{m}");
}

#[test]
fn a_syntax_error_without_parser_text_still_says_what_is_wrong() {
    let e = Scenario::from_toml_str("[run]\nname =").expect_err("no value at the end of the text");
    assert!(
        e.message.contains("TOML syntax error in 'name ='"),
        "{}",
        e.message
    );
    assert!(e.message.ends_with("(line 2)"), "{}", e.message);
}
