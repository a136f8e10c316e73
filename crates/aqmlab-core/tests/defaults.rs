//! Every documented default (`PARAMS`, `TCP_PARAMS`: what `aqmlab describe` prints) agrees
//! with the default the code actually uses, for every registered qdisc, workload and the
//! `[tcp]` table. New kinds are covered automatically through the registries.
//!
//! The rule a component follows (see docs/architecture.md, "Defaults"):
//! - the code's default is the serde default of the config struct (one `d_*` function or
//!   `#[serde(default)]`), and `impl Default` (if any) uses the same functions;
//! - the `ParamDoc` of a key the default config *serializes* spells that default as it is
//!   written in a scenario file (`1000`, `"5ms"` as `5ms`, `true`, `linux`); the test
//!   writes the documented value into the table, reads and serializes it again and
//!   requires the same result as the untouched default — so `5ms` and `5000us` agree;
//! - a key the default config leaves out (an `Option` that is `None`: off, or derived at
//!   build time such as "MTU + overhead") documents in words what happens; the test only
//!   checks that the key exists;
//! - every key the default config serializes is documented, and no documented key is
//!   unknown to the config.

use aqmlab_core::app::{workload_params, AppConfig, WORKLOAD_KINDS};
use aqmlab_core::params::ParamDoc;
use aqmlab_core::qdisc::{qdisc_params, QdiscConfig, QDISC_KINDS};
use aqmlab_core::tcp::{Stack, TcpOptions, CC_KINDS, TCP_PARAMS};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A documented default as a TOML value: a number, boolean, array or table if it parses
/// as one, else the string itself (`5ms`, `linux`).
fn doc_value(default: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {default}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(default.to_string()))
}

/// Reads `t` as `C` and serializes it back (the canonical spelling of its values).
fn roundtrip<C: DeserializeOwned + Serialize>(t: &toml::Table) -> Result<toml::Table, String> {
    let c: C = toml::Value::Table(t.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.message().trim().to_string())?;
    match toml::Value::try_from(&c).map_err(|e| e.to_string())? {
        toml::Value::Table(t) => Ok(t),
        v => Err(format!("serialized to a non-table {v}")),
    }
}

/// Checks `docs` against the config read from `base` (a table holding only what the
/// kind requires). Returns one line per disagreement.
fn check<C: DeserializeOwned + Serialize>(
    what: &str,
    base: &toml::Table,
    docs: &[ParamDoc],
) -> Vec<String> {
    let mut bad = Vec::new();
    let default = match roundtrip::<C>(base) {
        Ok(t) => t,
        Err(e) => return vec![format!("{what}: the default config does not read: {e}")],
    };
    for d in docs {
        if d.default.trim().is_empty() {
            bad.push(format!("{what}.{}: empty default in the doc", d.name));
            continue;
        }
        let mut t = base.clone();
        t.insert(d.name.to_string(), doc_value(d.default));
        let read = roundtrip::<C>(&t);
        if let Err(e) = &read {
            if e.contains("unknown field") {
                bad.push(format!("{what}.{}: documented but not a key ({e})", d.name));
                continue;
            }
        }
        let Some(actual) = default.get(d.name) else {
            // Off or derived at build time: described in words, nothing to compare.
            continue;
        };
        if d.default == "required" {
            // no default; `base` holds an example value
            continue;
        }
        match read {
            Ok(t) if t == default => {}
            Ok(t) => bad.push(format!(
                "{what}.{}: describe says {:?} but the default is {} (as documented it reads as {})",
                d.name,
                d.default,
                actual,
                t.get(d.name).map(|v| v.to_string()).unwrap_or_else(|| "absent".into())
            )),
            Err(e) => bad.push(format!(
                "{what}.{}: describe says {:?}, which does not read ({e}); the default is {actual}",
                d.name, d.default
            )),
        }
    }
    for key in default.keys() {
        if key != "kind" && !docs.iter().any(|d| d.name == key) {
            bad.push(format!(
                "{what}.{key}: has a default ({}) but no ParamDoc",
                default[key]
            ));
        }
    }
    bad
}

fn kind_table(kind: &str) -> toml::Table {
    let mut t = toml::Table::new();
    t.insert("kind".into(), toml::Value::String(kind.into()));
    t
}

/// A value for a key a workload kind requires (documented as `required`), so that the
/// rest of its defaults can be read.
fn required_example(kind: &str, key: &str) -> toml::Value {
    match (kind, key) {
        (_, "rate") => toml::Value::String("1Mbit".into()),
        _ => panic!("workload {kind}: no example value for required key {key}; add one to tests/defaults.rs"),
    }
}

#[test]
fn qdisc_docs_match_code_defaults() {
    let mut bad = Vec::new();
    for (kind, _) in QDISC_KINDS {
        let docs = qdisc_params(kind).expect("registered kind has PARAMS");
        bad.extend(check::<QdiscConfig>(
            &format!("qdisc {kind}"),
            &kind_table(kind),
            docs,
        ));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn workload_docs_match_code_defaults() {
    let mut bad = Vec::new();
    for (kind, _) in WORKLOAD_KINDS {
        let docs = workload_params(kind).expect("registered kind has PARAMS");
        let mut base = kind_table(kind);
        for d in docs.iter().filter(|d| d.default == "required") {
            base.insert(d.name.into(), required_example(kind, d.name));
        }
        bad.extend(check::<AppConfig>(&format!("workload {kind}"), &base, docs));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

fn table(s: &str) -> toml::Table {
    toml::from_str(s).unwrap()
}

/// The topology and link-model tables (`aqmlab list links`).
#[test]
fn link_docs_match_code_defaults() {
    use aqmlab_core::describe::{link_params, LINK_KINDS};
    use aqmlab_core::link::ShaperConfig;
    use aqmlab_core::scenario::access::{StationConfig, WifiConfig};
    use aqmlab_core::scenario::docsis::{DocsisConfig, TierConfig};
    use aqmlab_core::scenario::{DumbbellConfig, LinkConfig};
    let mut bad = Vec::new();
    for (kind, _) in LINK_KINDS {
        let docs = link_params(kind).unwrap();
        let what = format!("link {kind}");
        bad.extend(match *kind {
            "link" => {
                check::<LinkConfig>(&what, &table("from = 'a'\nto = 'b'\nrate = '10Mbit'"), docs)
            }
            "dumbbell" => check::<DumbbellConfig>(&what, &table(""), docs),
            "shaper" | "htb" | "tbf" => {
                check::<ShaperConfig>(&what, &table("rate = '10Mbit'"), docs)
            }
            "wifi" => check::<WifiConfig>(&what, &table(""), docs),
            "wifi.station" => check::<StationConfig>(&what, &table(""), docs),
            "docsis" => check::<DocsisConfig>(&what, &table(""), docs),
            "docsis.tier" => check::<TierConfig>(&what, &table("max_rate = '10Mbit'"), docs),
            k => vec![format!(
                "link kind {k}: not covered by tests/defaults.rs; add its config type here"
            )],
        });
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `describe tcp` shows the `linux` profile's values: the `[tcp]` table resolved by that
/// profile.
#[test]
fn tcp_docs_match_linux_profile() {
    let linux = match toml::Value::try_from(Stack::Linux.options()).unwrap() {
        toml::Value::Table(t) => t,
        v => panic!("{v}"),
    };
    let bad = check::<TcpOptions>("tcp", &linux, TCP_PARAMS);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // Every registered congestion control is accepted as `cc`, and the doc names it.
    let cc = TCP_PARAMS.iter().find(|d| d.name == "cc").unwrap();
    for (name, _) in CC_KINDS {
        let mut t = linux.clone();
        t.insert("cc".into(), toml::Value::String((*name).into()));
        roundtrip::<TcpOptions>(&t).unwrap_or_else(|e| panic!("cc = {name}: {e}"));
        assert!(
            cc.doc.contains(name),
            "describe tcp: the cc doc does not name {name}: {}",
            cc.doc
        );
    }
}

/// The check itself catches a wrong default, a missing doc and an unknown key.
#[test]
fn check_catches_disagreements() {
    let docs = [
        ParamDoc {
            name: "limit",
            default: "999",
            doc: "",
        },
        ParamDoc {
            name: "no_such_key",
            default: "1",
            doc: "",
        },
    ];
    let bad = check::<QdiscConfig>("qdisc fifo", &kind_table("fifo"), &docs);
    assert!(
        bad.iter()
            .any(|l| l.starts_with("qdisc fifo.limit: describe says \"999\"")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|l| l.starts_with("qdisc fifo.no_such_key: documented but not a key")),
        "{bad:?}"
    );
    // equal values in another spelling agree
    let docs = [ParamDoc {
        name: "target",
        default: "5000us",
        doc: "",
    }];
    let bad = check::<QdiscConfig>("qdisc codel", &kind_table("codel"), &docs);
    assert!(
        !bad.iter().any(|l| l.starts_with("qdisc codel.target")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|l| l.starts_with("qdisc codel.limit: has a default")),
        "{bad:?}"
    );
}
