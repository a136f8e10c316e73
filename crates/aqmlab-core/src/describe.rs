//! What `aqmlab list` and `aqmlab describe` show: every configurable kind with its
//! category, one line about it and its documented parameters. Qdiscs, workloads and
//! congestion controls come from their registries; the topology and link-model tables
//! (`[[link]]`, `[dumbbell]`, shapers, WiFi, DOCSIS) are listed in [`LINK_KINDS`].
//! `tests/defaults.rs` checks every documented default against the code.

use crate::params::{ParamDoc, ScenarioError};
use crate::scenario::access::{StationConfig, WifiConfig};
use crate::scenario::docsis::{DocsisConfig, TierConfig};
use crate::scenario::{DumbbellConfig, LinkConfig};

/// `(name, what it is and where it goes in a scenario file)` of the topology and
/// link-model tables. `htb` and `tbf` are the two kinds of `shaper`.
pub const LINK_KINDS: &[(&str, &str)] = &[
    ("link", "[[link]]: a link between two nodes (duplex by default): qdisc -> device queue -> wire"),
    ("dumbbell", "[dumbbell]: N clients - router_a = bottleneck = router_b - N servers"),
    ("shaper", "shaper = { rate = ... } on a [[link]] or [dumbbell.up]/[dumbbell.down]: token bucket between the qdisc and the wire (htb or tbf)"),
    ("htb", "shaper = { kind = \"htb\", rate = ... }: Linux htb as root with the qdisc as its child (sqm-scripts); the default shaper kind"),
    ("tbf", "shaper = { kind = \"tbf\", rate = ... }: Linux tbf (strict token bucket, peeks the child's head)"),
    ("wifi", "[[wifi]] or [dumbbell.wifi]: an 802.11n BSS (EDCA contention, A-MPDU aggregation, ath9k-like driver queue)"),
    ("wifi.station", "[wifi.station.NAME]: per-station overrides within a [[wifi]] BSS"),
    ("docsis", "[docsis]: a DOCSIS 3.0 cable network (CMTS downstream with bonded channels, modem upstreams, service-flow regulators)"),
    ("docsis.tier", "[[docsis.tier]]: a service tier (token-bucket regulated service flow) for consecutive modems"),
];

/// Parameter documentation of a [`LINK_KINDS`] entry (None if unknown).
pub fn link_params(kind: &str) -> Option<&'static [ParamDoc]> {
    Some(match kind {
        "link" => LinkConfig::PARAMS,
        "dumbbell" => DumbbellConfig::PARAMS,
        "shaper" | "htb" | "tbf" => crate::link::ShaperConfig::PARAMS,
        "wifi" => WifiConfig::PARAMS,
        "wifi.station" => StationConfig::PARAMS,
        "docsis" => DocsisConfig::PARAMS,
        "docsis.tier" => TierConfig::PARAMS,
        _ => return None,
    })
}

/// The categories of `aqmlab list`, each with its kinds.
pub fn kinds(category: &str) -> Option<&'static [(&'static str, &'static str)]> {
    Some(match category {
        "qdiscs" => crate::qdisc::QDISC_KINDS,
        "workloads" => crate::app::WORKLOAD_KINDS,
        "cc" => crate::tcp::CC_KINDS,
        "links" => LINK_KINDS,
        _ => return None,
    })
}

/// The categories [`kinds`] accepts.
pub const CATEGORIES: &[&str] = &["qdiscs", "workloads", "cc", "links"];

/// One describable kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    pub kind: &'static str,
    /// `qdisc`, `workload`, `cc`, `link` or `tcp`.
    pub category: &'static str,
    pub about: &'static str,
    pub params: &'static [ParamDoc],
    /// TCP stack profiles `(name, about)` (only for `tcp`).
    pub profiles: &'static [(&'static str, &'static str)],
}

const TCP_ABOUT: &str =
    "the [tcp] table and a flow's tcp = { ... }: TCP stack profile and settings";

/// Documentation of `kind`, or an error listing every describable kind.
pub fn describe(kind: &str) -> Result<Description, ScenarioError> {
    let find = |list: &'static [(&'static str, &'static str)]| {
        list.iter().find(|(n, _)| *n == kind).copied()
    };
    let d = |kind, category, about, params| Description {
        kind,
        category,
        about,
        params,
        profiles: &[],
    };
    if let Some((k, a)) = find(crate::qdisc::QDISC_KINDS) {
        return Ok(d(
            k,
            "qdisc",
            a,
            crate::qdisc::qdisc_params(k).unwrap_or(&[]),
        ));
    }
    if let Some((k, a)) = find(crate::app::WORKLOAD_KINDS) {
        return Ok(d(
            k,
            "workload",
            a,
            crate::app::workload_params(k).unwrap_or(&[]),
        ));
    }
    if let Some((k, a)) = find(crate::tcp::CC_KINDS) {
        // A control's settings are keys of the [tcp] table.
        return Ok(d(k, "cc", a, &[]));
    }
    if let Some((k, a)) = find(LINK_KINDS) {
        return Ok(d(k, "link", a, link_params(k).unwrap_or(&[])));
    }
    if kind == "tcp" {
        return Ok(Description {
            profiles: crate::tcp::STACKS,
            ..d("tcp", "tcp", TCP_ABOUT, crate::tcp::TCP_PARAMS)
        });
    }
    let names = |c: &str| {
        kinds(c)
            .unwrap_or(&[])
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(ScenarioError::new(
        "kind",
        format!(
            "unknown kind '{kind}' (qdiscs: {}; workloads: {}; congestion controls: {}; links: {}; or tcp)",
            names("qdiscs"),
            names("workloads"),
            names("cc"),
            names("links")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_kind_is_describable_with_readable_defaults() {
        let mut all: Vec<&str> = CATEGORIES
            .iter()
            .flat_map(|c| kinds(c).unwrap().iter().map(|(n, _)| *n))
            .collect();
        all.push("tcp");
        for k in all {
            let d = describe(k).unwrap_or_else(|e| panic!("{k}: {e}"));
            assert_eq!(d.kind, k);
            assert!(!d.about.is_empty(), "{k}");
            for p in d.params {
                // `aqmlab describe` prints "name = default": a default that starts with
                // '=' printed "codec_delay = = interval"
                assert!(
                    !p.default.trim().is_empty() && !p.default.starts_with('='),
                    "{k}.{}: default {:?}",
                    p.name,
                    p.default
                );
                assert!(!p.doc.is_empty(), "{k}.{}: no doc", p.name);
            }
            let mut names: Vec<_> = d.params.iter().map(|p| p.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), d.params.len(), "{k}: a key documented twice");
        }
        assert_eq!(
            describe("htb").unwrap().params,
            describe("tbf").unwrap().params
        );
        assert!(!describe("wifi").unwrap().params.is_empty());
    }

    #[test]
    fn unknown_kind_lists_every_category() {
        let e = describe("wfi").unwrap_err();
        assert_eq!(e.field, "kind");
        for k in ["fifo", "bulk", "cubic", "wifi", "htb", "tcp"] {
            assert!(e.message.contains(k), "{k}: {}", e.message);
        }
        assert!(kinds("colours").is_none());
    }
}
