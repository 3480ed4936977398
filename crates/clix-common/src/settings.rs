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

/// The longest time a setting in seconds may give: a year. Every time
/// limit becomes a deadline (`Instant::now() + limit`), which panics past
/// the clock's range; a year is past any line, call or task.
pub const MAX_SECS: u64 = 365 * 24 * 60 * 60;

/// The rule for a time limit in seconds: 0 ends everything at once, and
/// past [`MAX_SECS`] a deadline no longer fits the clock. `None` when
/// `value` is allowed, else the problem, `what` saying what it limits.
pub fn seconds(key: &str, value: u64, what: &str) -> Option<BadValue> {
    (value == 0 || value > MAX_SECS)
        .then(|| BadValue::new(key, value, format!("from 1 to {MAX_SECS} (seconds {what}; {MAX_SECS} is a year)")))
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

    #[test]
    fn a_time_limit_is_from_a_second_to_a_year() {
        let shown = |v| seconds("t", v, "of a line").map(|b| b.to_string());
        assert_eq!(shown(0).as_deref(), Some("t = 0: from 1 to 31536000 (seconds of a line; 31536000 is a year)"));
        assert!(shown(MAX_SECS + 1).is_some_and(|s| s.starts_with("t = 31536001: from 1 to")));
        assert_eq!((shown(1), shown(MAX_SECS)), (None, None));
    }
}
