//! What a settings type says of a value it does not allow, so every crate's
//! section is checked the same way and the config loader can name the place
//! each value came from (the file, a `CLIX_*` variable, a flag).
//!
//! Each crate that owns a section checks its own values (`validate`, beside
//! the type and its defaults); the loader runs the whole settings' check
//! after each layer, so a flag is held to the rule the file is.

use std::fmt;

/// A value a setting does not allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue {
    /// The dotted key (`timeout_secs` in its section, `limits.timeout_secs`
    /// once [`BadValue::in_section`] has named the section).
    pub key: String,
    /// The value as written (`0`, `"fast"`).
    pub value: String,
    /// What the setting allows (`at least 1 (seconds)`).
    pub allowed: String,
}

impl BadValue {
    /// `key = value` is not allowed; it takes `allowed`.
    pub fn new(key: impl Into<String>, value: impl fmt::Display, allowed: impl Into<String>) -> Self {
        BadValue { key: key.into(), value: value.to_string(), allowed: allowed.into() }
    }

    /// The same, its key inside `section` (`limits` + `timeout_secs`).
    pub fn in_section(self, section: &str) -> Self {
        BadValue { key: format!("{section}.{}", self.key), ..self }
    }
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: {}", self.key, self.value, self.allowed)
    }
}

/// Settings that can check their own values: every value that is not
/// allowed, all at once (empty when all are).
pub trait Validate {
    /// Every value that is not allowed.
    fn validate(&self) -> Vec<BadValue>;
}

/// The rule for a count or size where 0 means nothing can happen (every
/// line times out, no model call is made): `None` when `value` is at least
/// 1, else the problem, `what` saying what the number counts.
pub fn at_least_one(key: &str, value: u64, what: &str) -> Option<BadValue> {
    (value == 0).then(|| BadValue::new(key, value, format!("at least 1 ({what})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_value_names_its_key_value_and_what_is_allowed() {
        let bad = at_least_one("timeout_secs", 0, "seconds").map(|b| b.in_section("limits"));
        assert_eq!(bad.map(|b| b.to_string()).as_deref(), Some("limits.timeout_secs = 0: at least 1 (seconds)"));
        assert_eq!(at_least_one("timeout_secs", 1, "seconds"), None);
    }
}
