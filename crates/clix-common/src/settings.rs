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

/// One part of a dotted settings key as TOML writes it: bare when it can be
/// (`timeout_secs`, `claude-sonnet-4-5`), quoted otherwise (`"gpt-4.1"`), so
/// a map's key that holds a dot (a model's name) stays one part. The config
/// loader's keys, `clix config show` and a [`BadValue`]'s key all write it so.
pub fn key_part(name: &str) -> std::borrow::Cow<'_, str> {
    let bare = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare { name.into() } else { format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\"")).into() }
}

/// The parts of a dotted key whose parts [`key_part`] wrote, unquoted.
pub fn key_parts(key: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let (mut quoted, mut escaped) = (false, false);
    for c in key.chars() {
        let Some(part) = parts.last_mut() else { break };
        match c {
            _ if escaped => {
                part.push(c);
                escaped = false;
            }
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(String::new()),
            _ => part.push(c),
        }
    }
    parts
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

    /// A part that is not a bare TOML key is quoted, and splitting gives it back whole.
    #[test]
    fn a_key_part_with_a_dot_stays_one_part() {
        let rows = [
            ("timeout_secs", "timeout_secs"),
            ("claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("gpt-4.1", "\"gpt-4.1\""),
            ("a \"b\"\\c", "\"a \\\"b\\\"\\\\c\""),
            ("", "\"\""),
        ];
        for (name, written) in rows {
            assert_eq!(key_part(name), written);
            let key = format!("agent.prices.{}.input", key_part(name));
            assert_eq!(key_parts(&key), ["agent", "prices", name, "input"], "{key}");
        }
    }

    #[test]
    fn a_time_limit_is_from_a_second_to_a_year() {
        let shown = |v| seconds("t", v, "of a line").map(|b| b.to_string());
        assert_eq!(shown(0).as_deref(), Some("t = 0: from 1 to 31536000 (seconds of a line; 31536000 is a year)"));
        assert!(shown(MAX_SECS + 1).is_some_and(|s| s.starts_with("t = 31536001: from 1 to")));
        assert_eq!((shown(1), shown(MAX_SECS)), (None, None));
    }
}
