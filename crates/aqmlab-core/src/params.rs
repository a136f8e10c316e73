//! Parameters: the error and documentation types every configurable component uses, the
//! serde helpers that locate a bad key, and one declarative range check.
//!
//! This is a leaf module (it depends on no other module of the crate), so that qdiscs,
//! workloads, TCP settings and the scenario schema can all use it without importing each
//! other.
//!
//! - [`ScenarioError`]: a bad scenario, with the dotted path of the offending field and a
//!   message naming the value and what is allowed. Component-level checks return
//!   [`ParamError`] (field relative to the component's table), which the scenario turns
//!   into a `ScenarioError` under the component's path ([`ParamError::at`]).
//! - [`ScenarioWarning`]: legal but suspicious settings.
//! - [`ParamDoc`]: one documented parameter, for `aqmlab describe`.
//! - [`check_range`]: `lo ≤ value ≤ hi`, or an error naming the field and the range.

use std::fmt;

/// A bad scenario: which field, and what is wrong with it (one line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// Dotted path of the offending field, e.g. `flow[0].rate`; empty for whole-file errors.
    pub field: String,
    /// What is wrong, including the bad value and the allowed values.
    pub message: String,
}

impl ScenarioError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

/// A legal but suspicious scenario setting: which field, and why it is probably not what
/// was meant. Runs go ahead; warnings are kept in the `Plan` and the results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioWarning {
    /// Dotted path of the field, as in [`ScenarioError`].
    pub field: String,
    pub message: String,
}

impl fmt::Display for ScenarioWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "warning: {}: {}", self.field, self.message)
    }
}

/// Documentation of one configuration parameter, for `aqmlab describe KIND`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ParamDoc {
    pub name: &'static str,
    /// The default as written in a scenario file ("1000", "5ms", "required").
    pub default: &'static str,
    /// Meaning, unit and where the default comes from (e.g. "Linux sch_codel").
    pub doc: &'static str,
}

impl ParamDoc {
    /// `ParamDoc::new("limit", "1000", "packets ...")`, for compact `PARAMS` tables.
    pub const fn new(name: &'static str, default: &'static str, doc: &'static str) -> Self {
        ParamDoc { name, default, doc }
    }
}

/// A bad parameter of one component (field relative to the component's table, e.g. a
/// qdisc's `target`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub field: &'static str,
    pub value: String,
    pub allowed: String,
}

impl ParamError {
    pub fn new(field: &'static str, value: impl ToString, allowed: impl ToString) -> Self {
        ParamError {
            field,
            value: value.to_string(),
            allowed: allowed.to_string(),
        }
    }
    /// The scenario error for this parameter of the component at `prefix` (e.g.
    /// `dumbbell.qdisc`).
    pub fn at(&self, prefix: &str) -> ScenarioError {
        ScenarioError::new(
            format!("{prefix}.{}", self.field),
            format!("{} is not allowed ({})", self.value, self.allowed),
        )
    }
}

/// The one range check: `value` within `lo..=hi`, else an error on `field` saying
/// "VALUE is not allowed (ALLOWED)". `allowed` states the range in the user's units
/// ("68 to 65535", "1 to 100000 packets").
pub fn check_range<T: PartialOrd + fmt::Display>(
    field: impl Into<String>,
    value: T,
    lo: T,
    hi: T,
    allowed: &str,
) -> Result<T, ScenarioError> {
    if value < lo || value > hi {
        return Err(ScenarioError::new(
            field,
            format!("{value} is not allowed ({allowed})"),
        ));
    }
    Ok(value)
}

/// A probability in [0, 1] (NaN is not one).
pub fn check_prob(p: f64, field: &str) -> Result<(), ScenarioError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(ScenarioError::new(
            field,
            format!("{p} is not a probability (allowed: 0 to 1)"),
        ));
    }
    Ok(())
}

/// Deserializes an internally tagged table (`kind = "..."` plus the kind's fields).
///
/// serde buffers a tagged table before it picks the variant, so an error inside the
/// variant's fields loses its key. On failure this re-reads the kind's own config
/// struct with path tracking (`locate`) and reports the key as a message prefix
/// "field `KEY`: ...", which `Scenario::from_toml_str` moves into `ScenarioError::field`
/// ([`split_field_prefixes`]).
pub fn from_tagged_table<T: serde::de::DeserializeOwned>(
    t: toml::Table,
    locate: fn(&str, toml::Value) -> Option<(String, String)>,
) -> Result<T, String> {
    let err = match toml::Value::Table(t.clone()).try_into::<T>() {
        Ok(v) => return Ok(v),
        Err(e) => e.message().trim().to_string(),
    };
    let Some(kind) = t.get("kind").and_then(|k| k.as_str()).map(str::to_string) else {
        return Err(format!("field `kind`: {err}"));
    };
    let mut rest = t;
    rest.remove("kind");
    // A known kind re-reads its own fields, so an unknown variant *inside* them (e.g.
    // `tcp = { cc = "bbr" }`) is located there; only an unknown kind is the kind's fault.
    match locate(&kind, toml::Value::Table(rest)) {
        Some((path, msg)) if !path.is_empty() && path != "." => {
            Err(format!("field `{path}`: {msg}"))
        }
        Some((_, msg)) => Err(msg),
        None if err.starts_with("unknown variant") => Err(format!("field `kind`: {err}")),
        None => Err(err),
    }
}

/// The path and message of the error deserializing `v` as `C`, if any.
pub fn locate_error<C: serde::de::DeserializeOwned>(v: toml::Value) -> Option<(String, String)> {
    serde_path_to_error::deserialize::<_, C>(v)
        .err()
        .map(|e| (e.path().to_string(), e.inner().message().trim().to_string()))
}

/// Moves leading "field `KEY`: " prefixes of a message into the dotted path.
pub fn split_field_prefixes(mut path: String, mut msg: &str) -> (String, String) {
    while let Some(rest) = msg.strip_prefix("field `") {
        let Some(end) = rest.find("`: ") else { break };
        let key = &rest[..end];
        if !path.is_empty() && !key.starts_with('[') {
            path.push('.');
        }
        path.push_str(key);
        msg = &rest[end + 3..];
    }
    (path, msg.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_check_names_field_value_and_range() {
        assert_eq!(
            check_range("link[0].mtu", 1500u32, 68, 65535, "68 to 65535"),
            Ok(1500)
        );
        let e = check_range("link[0].mtu", 40u32, 68, 65535, "68 to 65535").unwrap_err();
        assert_eq!(
            e.to_string(),
            "link[0].mtu: 40 is not allowed (68 to 65535)"
        );
        assert!(check_range("x", 65536u32, 68, 65535, "").is_err());
        assert!(check_prob(f64::NAN, "p").is_err());
        assert!(check_prob(1.0, "p").is_ok());
    }

    #[test]
    fn field_prefixes_move_into_the_path() {
        assert_eq!(
            split_field_prefixes("flow".into(), "field `[2]`: field `rate`: bad"),
            ("flow[2].rate".to_string(), "bad".to_string())
        );
        assert_eq!(
            ParamError::new("target", "0ms", "more than 0").at("dumbbell.qdisc"),
            ScenarioError::new("dumbbell.qdisc.target", "0ms is not allowed (more than 0)")
        );
    }
}
