//! Settings merged from defaults, file, environment and flags, with provenance.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use toml::{Table, Value};

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// clix's built-in default.
    Default,
    /// The config file at this path.
    File(PathBuf),
    /// This `CLIX_*` environment variable.
    Env(String),
    /// This command-line flag.
    Flag(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => write!(f, "default"),
            Source::File(path) => write!(f, "file {}", path.display()),
            Source::Env(var) => write!(f, "env {var}"),
            Source::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// One setting in force.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The value in force, as TOML.
    pub value: Value,
    /// The layer it came from, for `clix config show`.
    pub source: Source,
}

/// The merged settings and, per dotted key (`limits.timeout_secs`), their origin.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    /// The merged settings, typed.
    pub value: T,
    /// Every dotted key with its value and origin.
    pub settings: BTreeMap<String, Setting>,
}

/// A layer that could not be read; the message names the place to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file is unreadable, not TOML, or names an unknown setting.
    #[error("config file {path}: {message}")]
    File {
        /// The config file.
        path: PathBuf,
        /// What is wrong, with the known settings when a key is unknown.
        message: String,
    },
    /// A `CLIX_*` variable's value does not fit its setting's type.
    #[error("environment variable {var}: {message}")]
    Env {
        /// The variable's name.
        var: String,
        /// What type was expected.
        message: String,
    },
    /// A flag names no setting or has a value of the wrong type.
    #[error("{flag}: {message}")]
    Flag {
        /// The flag as typed.
        flag: String,
        /// What is wrong.
        message: String,
    },
    /// The settings type itself does not serialize to a table: a bug in
    /// clix, reported instead of panicking.
    #[error("clix's default settings do not form a TOML table ({0}); please report this")]
    Defaults(String),
}

/// `limits.timeout_secs` → `CLIX_LIMITS_TIMEOUT_SECS`.
pub fn env_var_name(key: &str) -> String {
    format!("CLIX_{}", key.replace(['.', '-'], "_").to_ascii_uppercase())
}

/// Merges the layers into `T`. `flags` are `(dotted key, flag name, value)`.
pub fn load<T>(config_file: &Path, flags: &[(&str, &str, Value)]) -> Result<Loaded<T>, ConfigError>
where
    T: Serialize + DeserializeOwned + Default,
{
    // A `CLIX_*` variable with a secret name (CLIX_AGENT_API_KEY) was moved
    // out of the environment at start: read it from the store.
    load_with(config_file, crate::secrets::var, flags)
}

fn load_with<T>(
    config_file: &Path,
    env: impl Fn(&str) -> Option<String>,
    flags: &[(&str, &str, Value)],
) -> Result<Loaded<T>, ConfigError>
where
    T: Serialize + DeserializeOwned + Default,
{
    let defaults = Table::try_from(T::default()).map_err(|e| ConfigError::Defaults(e.to_string()))?;
    // Tables empty by default are maps the user fills (`[hub.env]`): any key
    // inside one is known.
    let mut maps = Vec::new();
    empty_tables("", &defaults, &mut maps);
    let in_a_map = |key: &str| maps.iter().any(|m| key.strip_prefix(m.as_str()).is_some_and(|r| r.starts_with('.')));
    let mut settings = BTreeMap::new();
    flatten("", &defaults, &mut |key, value| {
        settings.insert(key, Setting { value: value.clone(), source: Source::Default });
    });

    let file_error = |message: String| ConfigError::File { path: config_file.to_path_buf(), message };
    match std::fs::read_to_string(config_file) {
        Ok(text) => {
            let table: Table = text.parse().map_err(|e: toml::de::Error| file_error(e.to_string()))?;
            let mut unknown = Vec::new();
            flatten("", &table, &mut |key, value| {
                let setting = Setting { value: value.clone(), source: Source::File(config_file.to_path_buf()) };
                match settings.get_mut(&key) {
                    Some(slot) => *slot = setting,
                    None if in_a_map(&key) => {
                        settings.insert(key, setting);
                    }
                    None => unknown.push(key),
                }
            });
            if let Some(key) = unknown.first() {
                let known: Vec<&str> = settings.keys().map(String::as_str).collect();
                return Err(file_error(format!("unknown setting `{key}`; known settings: {}", known.join(", "))));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(file_error(e.to_string())),
    }

    for (key, slot) in settings.iter_mut() {
        let var = env_var_name(key);
        if let Some(raw) = env(&var) {
            let value =
                parse_like(&slot.value, &raw).map_err(|message| ConfigError::Env { var: var.clone(), message })?;
            *slot = Setting { value, source: Source::Env(var) };
        }
    }

    for (key, flag, value) in flags {
        let Some(slot) = settings.get_mut(*key) else {
            return Err(ConfigError::Flag { flag: flag.to_string(), message: format!("no setting `{key}`") });
        };
        *slot = Setting { value: value.clone(), source: Source::Flag(flag.to_string()) };
    }

    let mut merged = Table::new();
    for (key, setting) in &settings {
        insert_dotted(&mut merged, key, setting.value.clone());
    }
    let value = merged.try_into().map_err(|e: toml::de::Error| {
        // Only file values can have a wrong type here: env and flags were parsed by type.
        file_error(e.to_string())
    })?;
    Ok(Loaded { value, settings })
}

/// Calls `leaf` for every non-table value, with its dotted key.
fn flatten(prefix: &str, table: &Table, leaf: &mut dyn FnMut(String, &Value)) {
    for (key, value) in table {
        let dotted = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            Value::Table(inner) => flatten(&dotted, inner, leaf),
            other => leaf(dotted, other),
        }
    }
}

/// The dotted keys of the empty tables in `table`.
fn empty_tables(prefix: &str, table: &Table, out: &mut Vec<String>) {
    for (key, value) in table {
        if let Value::Table(inner) = value {
            let dotted = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            if inner.is_empty() {
                out.push(dotted);
            } else {
                empty_tables(&dotted, inner, out);
            }
        }
    }
}

fn insert_dotted(table: &mut Table, key: &str, value: Value) {
    match key.split_once('.') {
        None => {
            table.insert(key.to_string(), value);
        }
        Some((head, rest)) => {
            let inner = table.entry(head.to_string()).or_insert_with(|| Value::Table(Table::new()));
            if let Value::Table(inner) = inner {
                insert_dotted(inner, rest, value);
            }
        }
    }
}

/// Parses an environment string as the same TOML type as the default.
fn parse_like(default: &Value, raw: &str) -> Result<Value, String> {
    match default {
        Value::String(_) => Ok(Value::String(raw.to_string())),
        Value::Integer(_) => {
            raw.trim().parse::<i64>().map(Value::Integer).map_err(|_| format!("expected a whole number, got {raw:?}"))
        }
        Value::Float(_) => {
            raw.trim().parse::<f64>().map(Value::Float).map_err(|_| format!("expected a number, got {raw:?}"))
        }
        Value::Boolean(_) => match raw.trim() {
            "1" | "true" | "yes" | "on" => Ok(Value::Boolean(true)),
            "0" | "false" | "no" | "off" => Ok(Value::Boolean(false)),
            _ => Err(format!("expected true or false, got {raw:?}")),
        },
        _ => {
            let doc: Table =
                format!("v = {raw}").parse().map_err(|e: toml::de::Error| format!("expected a TOML value: {e}"))?;
            Ok(doc["v"].clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::HashMap;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Settings {
        limits: Limits,
        name: String,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Limits {
        timeout_secs: u64,
        strict: bool,
        paths: Vec<String>,
        labels: BTreeMap<String, String>,
    }

    impl Default for Limits {
        fn default() -> Self {
            Limits { timeout_secs: 30, strict: false, paths: vec![], labels: BTreeMap::new() }
        }
    }

    fn run(
        file: Option<&str>,
        env: &[(&str, &str)],
        flags: &[(&str, &str, Value)],
    ) -> Result<Loaded<Settings>, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        if let Some(text) = file {
            std::fs::write(&path, text).unwrap();
        }
        let env: HashMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        load_with(&path, |k| env.get(k).cloned(), flags)
    }

    #[test]
    fn each_layer_beats_the_one_before() {
        let l = run(None, &[], &[]).unwrap();
        assert_eq!(l.value.limits.timeout_secs, 30);
        assert_eq!(l.settings["limits.timeout_secs"].source, Source::Default);

        let file = "name = \"f\"\n[limits]\ntimeout_secs = 5\nstrict = true\n";
        let l = run(Some(file), &[], &[]).unwrap();
        assert_eq!((l.value.limits.timeout_secs, l.value.limits.strict), (5, true));
        assert!(matches!(l.settings["limits.timeout_secs"].source, Source::File(_)));

        let env = [("CLIX_LIMITS_TIMEOUT_SECS", "7"), ("CLIX_LIMITS_PATHS", "[\"/a\", \"/b\"]")];
        let l = run(Some(file), &env, &[]).unwrap();
        assert_eq!(l.value.limits.timeout_secs, 7);
        assert_eq!(l.value.limits.paths, vec!["/a", "/b"]);
        assert_eq!(l.settings["limits.timeout_secs"].source, Source::Env("CLIX_LIMITS_TIMEOUT_SECS".into()));

        let flags = [("limits.timeout_secs", "--timeout", Value::Integer(9))];
        let l = run(Some(file), &env, &flags).unwrap();
        assert_eq!(l.value.limits.timeout_secs, 9);
        assert_eq!(l.settings["limits.timeout_secs"].source, Source::Flag("--timeout".into()));
        assert_eq!(l.value.name, "f");
    }

    #[test]
    fn maps_take_any_key_from_the_file() {
        let file = "[limits.labels]\nteam = \"ops\"\nGH_TOKEN = \"t\"\n";
        let l = run(Some(file), &[], &[]).unwrap();
        assert_eq!(l.value.limits.labels.get("team").map(String::as_str), Some("ops"));
        assert_eq!(l.value.limits.labels.len(), 2);
        assert!(matches!(l.settings["limits.labels.team"].source, Source::File(_)));
        let err = run(Some("[limits.other]\nx = 1\n"), &[], &[]).unwrap_err().to_string();
        assert!(err.contains("unknown setting `limits.other.x`"), "{err}");
    }

    #[test]
    fn bad_input_names_the_place_and_the_fix() {
        type Case<'a> = (Option<&'a str>, &'a [(&'a str, &'a str)], &'a str);
        let cases: [Case; 4] = [
            (Some("[limits]\ntimeout = 5\n"), &[], "unknown setting `limits.timeout`; known settings: limits.paths"),
            (Some("[limits]\ntimeout_secs = \"soon\"\n"), &[], "config file"),
            (Some("not toml ["), &[], "config file"),
            (None, &[("CLIX_LIMITS_STRICT", "maybe")], "CLIX_LIMITS_STRICT: expected true or false"),
        ];
        for (file, env, needle) in cases {
            let err = run(file, env, &[]).unwrap_err().to_string();
            assert!(err.contains(needle), "{err}");
        }
    }
}
