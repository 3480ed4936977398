//! Settings merged from defaults, file, environment and flags, with provenance.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use clix_common::names::UnknownField;
use clix_common::settings::{Validate, key_part, key_parts};
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
    /// The config file is unreadable, not TOML, names an unknown setting, or
    /// holds a value its setting does not allow.
    #[error("config file {path}: {message}")]
    File {
        /// The config file.
        path: PathBuf,
        /// What is wrong, with the near name or the known fields when a key
        /// is unknown, and what is allowed when a value is not.
        message: String,
    },
    /// A `CLIX_*` variable's value does not fit its setting's type or rule.
    #[error("environment variable {var}: {message}")]
    Env {
        /// The variable's name.
        var: String,
        /// What was expected.
        message: String,
    },
    /// A flag names no setting or has a value its setting does not allow.
    #[error("{flag}: {message}")]
    Flag {
        /// The flag as typed.
        flag: String,
        /// What is wrong.
        message: String,
    },
    /// The settings type itself does not serialize to a table, or a value
    /// clix gave does not fit it: a bug in clix, reported instead of
    /// panicking.
    #[error("clix's own settings do not fit their type ({0}); please report this")]
    Defaults(String),
    /// Every problem of the layers, when there is more than one: each line
    /// one of the above, so a person fixes them all in one go.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Several(Vec<ConfigError>),
}

impl ConfigError {
    /// One problem as itself, several as [`ConfigError::Several`].
    fn of(mut problems: Vec<ConfigError>) -> Option<ConfigError> {
        match problems.len() {
            0 => None,
            1 => problems.pop(),
            _ => Some(ConfigError::Several(problems)),
        }
    }

    /// The problem `message` about a value that came from `source`.
    fn at(source: &Source, message: String) -> ConfigError {
        match source {
            Source::File(path) => ConfigError::File { path: path.clone(), message },
            Source::Env(var) => ConfigError::Env { var: var.clone(), message },
            Source::Flag(flag) => ConfigError::Flag { flag: flag.clone(), message },
            // Only a layer's own values are checked: a default is held to
            // its rules by its settings type's tests.
            Source::Default => ConfigError::Defaults(message),
        }
    }
}

/// The `CLIX_*` variables clix reads that are not settings, each with what
/// it does; every other `CLIX_*` name must be a setting's ([`env_var_name`]).
pub(crate) const OTHER_VARS: &[(&str, &str)] = &[
    ("CLIX_HOME", "one folder for all of clix's config, data, state and cache"),
    ("CLIX_LOG", "log filter (env-filter syntax), when --log-level is not given"),
    ("CLIX_BWRAP", "the bubblewrap program to use, instead of `bwrap` on PATH"),
    ("CLIX_HUB_PATH", "more hub folders, `:`-separated, before the configured ones"),
    ("CLIX_MCP_TOKEN", "the bearer token `clix mcp --http` requires"),
    ("CLIX_SKILL_DIR", "set by clix for a skill's scripts: the skill's folder"),
    ("CLIX_PLAN_AGENT", "set by `clix plan` in its agents' environment"),
    ("CLIX_SKIP_LOG", "clix's test suite: the file that lists skipped tests"),
    ("CLIX_BLESS", "clix's test suite: rewrite the expected outputs"),
    ("CLIX_FUZZ_TARGET_DIR", "scripts/fuzz.sh: the fuzzers' build folder"),
];

/// Names that start with this belong to clix's own tests (their fixtures'
/// variables), never to a setting.
pub(crate) const TEST_VAR_PREFIX: &str = "CLIX_TEST_";

/// `limits.timeout_secs` → `CLIX_LIMITS_TIMEOUT_SECS`.
pub fn env_var_name(key: &str) -> String {
    format!("CLIX_{}", key.replace(['.', '-'], "_").to_ascii_uppercase())
}

/// Merges the layers into `T`. `flags` are `(dotted key, flag name, value)`.
///
/// `T` and each of its sections must be `#[serde(default)]` (the file gives
/// only what it changes) and `deny_unknown_fields` (serde then says which
/// fields a section has, for the unknown-field messages). Every layer's
/// values are held to `T`'s [`Validate`] rules, so a value refused from a
/// flag is refused from the file too; every problem of every layer is
/// reported at once.
pub fn load<T>(config_file: &Path, flags: &[(&str, &str, Value)]) -> Result<Loaded<T>, ConfigError>
where
    T: Serialize + DeserializeOwned + Default + Validate,
{
    // A `CLIX_*` variable with a secret name (CLIX_AGENT_API_KEY) was moved
    // out of the environment at start: read it from the store.
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .chain(crate::secrets::names().map(String::from))
        .collect();
    load_with(config_file, crate::secrets::var, &names, flags)
}

fn load_with<T>(
    config_file: &Path,
    env: impl Fn(&str) -> Option<String>,
    env_names: &[String],
    flags: &[(&str, &str, Value)],
) -> Result<Loaded<T>, ConfigError>
where
    T: Serialize + DeserializeOwned + Default + Validate,
{
    let defaults = Table::try_from(T::default()).map_err(|e| ConfigError::Defaults(e.to_string()))?;
    let mut settings = BTreeMap::new();
    flatten("", &defaults, &mut |key, value| {
        settings.insert(key, Setting { value: value.clone(), source: Source::Default });
    });
    let mut problems = Vec::new();

    let file = Source::File(config_file.to_path_buf());
    match std::fs::read_to_string(config_file) {
        Ok(text) => {
            let table: Table = text.parse().map_err(|e: toml::de::Error| ConfigError::at(&file, e.to_string()))?;
            let (table, typed) = read_file::<T>(table, &file, &mut problems);
            if let Some(typed) = typed {
                from_file(&mut settings, &table, &typed, &defaults, &file)?;
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(ConfigError::at(&file, e.to_string())),
    }
    check::<T>(&settings, |s| matches!(s, Source::File(_)), &mut problems);

    for (key, slot) in settings.iter_mut() {
        let var = env_var_name(key);
        if let Some(raw) = env(&var) {
            match parse_like(&slot.value, &raw) {
                Ok(value) => *slot = Setting { value, source: Source::Env(var) },
                Err(message) => problems.push(ConfigError::Env { var, message }),
            }
        }
    }
    check::<T>(&settings, |s| matches!(s, Source::Env(_)), &mut problems);
    problems.extend(unknown_vars(&settings, env_names));

    for (key, flag, value) in flags {
        match settings.get_mut(*key) {
            Some(slot) => *slot = Setting { value: value.clone(), source: Source::Flag(flag.to_string()) },
            None => problems.push(ConfigError::Flag { flag: flag.to_string(), message: format!("no setting `{key}`") }),
        }
    }
    check::<T>(&settings, |s| matches!(s, Source::Flag(_)), &mut problems);

    if let Some(error) = ConfigError::of(problems) {
        return Err(error);
    }
    // The file was read by type, env and flags parsed by type: only a flag
    // given a value of the wrong type (a bug in clix) fails here.
    let value = merge(&settings).try_into().map_err(|e: toml::de::Error| ConfigError::Defaults(e.to_string()))?;
    Ok(Loaded { value, settings })
}

/// A problem for each `CLIX_*` variable in `names` that is neither a
/// setting's nor one of [`OTHER_VARS`]: a mistyped name would otherwise be
/// ignored in silence, as a mistyped key in the file is not.
fn unknown_vars(settings: &BTreeMap<String, Setting>, names: &[String]) -> Vec<ConfigError> {
    let known: Vec<String> = settings
        .keys()
        .map(|key| env_var_name(key))
        .chain(OTHER_VARS.iter().map(|(name, _)| name.to_string()))
        .collect();
    let mut unknown: Vec<&String> = names
        .iter()
        .filter(|name| name.starts_with("CLIX_") && !name.starts_with(TEST_VAR_PREFIX))
        .filter(|name| !known.contains(name))
        .collect();
    unknown.sort();
    unknown.dedup();
    unknown
        .into_iter()
        .map(|name| {
            let message = match clix_common::names::did_you_mean(name, known.iter().map(String::as_str)) {
                Some(near) => format!("not a clix setting; did you mean {near}?"),
                None => "not a clix setting; `clix config show` lists the settings (CLIX_ and the key, \
                         upper-cased, `.` as `_`), or unset it"
                    .to_string(),
            };
            ConfigError::Env { var: name.clone(), message }
        })
        .collect()
}

/// The file's table read as `T` by serde, which knows every section's
/// fields and types: each unknown field (with its near name, else its
/// section's fields) and each value of the wrong type is reported and left
/// out, and the rest read again, so one run names them all (and the rules
/// of the values left are checked too). `None` when a problem names no key
/// to leave out.
fn read_file<T: DeserializeOwned>(
    mut table: Table,
    file: &Source,
    problems: &mut Vec<ConfigError>,
) -> (Table, Option<T>) {
    // Each turn removes a key: at most as many turns as the file has keys.
    loop {
        let error = match table.clone().try_into::<T>() {
            Ok(typed) => return (table, Some(typed)),
            Err(error) => error,
        };
        let (path, message) = match UnknownField::from_serde(error.message()) {
            Some(unknown) => match locate(&table, &unknown) {
                Some(path) => {
                    let message = match path.rsplit_once('.') {
                        Some((section, _)) => format!("{section}: {unknown}"),
                        None => unknown.to_string(),
                    };
                    (Some(path), message)
                }
                None => (None, unknown.to_string()),
            },
            None => {
                let key = error_key(&error);
                let message = match &key {
                    Some(key) => format!("{key}: {}", error.message()),
                    None => error.message().to_string(),
                };
                (key, message)
            }
        };
        problems.push(ConfigError::at(file, message));
        if !path.is_some_and(|path| remove(&mut table, &path)) {
            return (table, None);
        }
    }
}

/// The dotted key a toml type error is about, from its "in `key`" line.
fn error_key(error: &toml::de::Error) -> Option<String> {
    let shown = error.to_string();
    shown.lines().find_map(|l| l.strip_prefix("in `").and_then(|k| k.strip_suffix('`'))).map(String::from)
}

/// The dotted path (`limits.timout_secs`, `clip[1].hots`) of the key serde
/// called unknown: of the tables holding a key of that name, the one whose
/// other keys are most of the fields serde expected there.
fn locate(table: &Table, unknown: &UnknownField) -> Option<String> {
    fn walk<'t>(prefix: &str, table: &'t Table, key: &str, found: &mut Vec<(String, &'t Table)>) {
        if table.contains_key(key) {
            found.push((prefix.to_string(), table));
        }
        for (name, value) in table {
            let name = key_part(name);
            let at = if prefix.is_empty() { name.into_owned() } else { format!("{prefix}.{name}") };
            match value {
                Value::Table(inner) => walk(&at, inner, key, found),
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Value::Table(inner) = item {
                            walk(&format!("{at}[{i}]"), inner, key, found);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut found = Vec::new();
    walk("", table, &unknown.field, &mut found);
    let fits = |t: &Table| t.keys().filter(|k| unknown.known.contains(k)).count();
    // max_by_key keeps the last of equals: looking from the end keeps the first.
    let (prefix, _) = found.into_iter().rev().max_by_key(|(_, t)| fits(t))?;
    Some(if prefix.is_empty() { unknown.field.clone() } else { format!("{prefix}.{}", unknown.field) })
}

/// Removes the key at a path [`locate`] or [`error_key`] gave; false when
/// there is none.
fn remove(table: &mut Table, path: &str) -> bool {
    remove_parts(table, &key_parts(path))
}

fn remove_parts(table: &mut Table, parts: &[String]) -> bool {
    let Some((head, rest)) = parts.split_first() else { return false };
    let (name, index) = match head.split_once('[') {
        Some((name, i)) => (name, i.trim_end_matches(']').parse::<usize>().ok()),
        None => (head.as_str(), None),
    };
    if rest.is_empty() {
        return table.remove(name).is_some();
    }
    let inner = match (table.get_mut(name), index) {
        (Some(Value::Table(inner)), None) => inner,
        (Some(Value::Array(items)), Some(i)) => match items.get_mut(i) {
            Some(Value::Table(inner)) => inner,
            _ => return false,
        },
        // toml's path of a type error does not say which entry: the array goes.
        (Some(Value::Array(_)), None) => return table.remove(name).is_some(),
        _ => return false,
    };
    remove_parts(inner, rest)
}

/// The file's values as settings. A key the file names keeps its value as
/// written (typed and written back, a secret would read `***`); a field the
/// defaults leave out (`limits.max_commands`) or that the file set under
/// another name (an alias) comes from the typed value where it differs
/// from the default.
fn from_file<T: Serialize>(
    settings: &mut BTreeMap<String, Setting>,
    table: &Table,
    typed: &T,
    defaults: &Table,
    file: &Source,
) -> Result<(), ConfigError> {
    let mut written = BTreeMap::new();
    flatten("", table, &mut |key, value| {
        written.insert(key, value.clone());
    });
    let mut default_of = BTreeMap::new();
    flatten("", defaults, &mut |key, value| {
        default_of.insert(key, value.clone());
    });
    let typed = Table::try_from(typed).map_err(|e| ConfigError::Defaults(e.to_string()))?;
    flatten("", &typed, &mut |key, value| {
        let value = match written.remove(&key) {
            Some(written) => written,
            None if default_of.get(&key) != Some(value) => value.clone(),
            None => return,
        };
        settings.insert(key, Setting { value, source: file.clone() });
    });
    Ok(())
}

/// The settings as one table.
fn merge(settings: &BTreeMap<String, Setting>) -> Table {
    let mut merged = Table::new();
    for (key, setting) in settings {
        insert_dotted(&mut merged, key, setting.value.clone());
    }
    merged
}

/// `T`'s rules over the settings so far, reporting each value not allowed
/// whose source passes `layer` (the layer just applied: an earlier layer's
/// values were checked when it was).
fn check<T: DeserializeOwned + Validate>(
    settings: &BTreeMap<String, Setting>,
    layer: impl Fn(&Source) -> bool,
    problems: &mut Vec<ConfigError>,
) {
    // A value of the wrong type was reported where it was read.
    let Ok(typed) = merge(settings).try_into::<T>() else { return };
    for bad in typed.validate() {
        let source = source_of(settings, &bad.key);
        if layer(source) {
            problems.push(ConfigError::at(source, bad.to_string()));
        }
    }
}

/// Where the value at `key` came from: its setting's, or for a key inside
/// one (`clip[0].port`), the setting holding it.
fn source_of<'s>(settings: &'s BTreeMap<String, Setting>, key: &str) -> &'s Source {
    let mut key = key;
    loop {
        if let Some(setting) = settings.get(key) {
            return &setting.source;
        }
        match key.rfind(['.', '[']) {
            Some(at) => key = &key[..at],
            None => return &Source::Default,
        }
    }
}

/// Calls `leaf` for every non-table value, with its dotted key.
fn flatten(prefix: &str, table: &Table, leaf: &mut dyn FnMut(String, &Value)) {
    for (key, value) in table {
        let key = key_part(key);
        let dotted = if prefix.is_empty() { key.into_owned() } else { format!("{prefix}.{key}") };
        match value {
            Value::Table(inner) => flatten(&dotted, inner, leaf),
            other => leaf(dotted, other),
        }
    }
}

fn insert_dotted(table: &mut Table, key: &str, value: Value) {
    let parts = key_parts(key);
    let Some((last, path)) = parts.split_last() else { return };
    let mut table = table;
    for head in path {
        let inner = table.entry(head.clone()).or_insert_with(|| Value::Table(Table::new()));
        let Value::Table(inner) = inner else { return };
        table = inner;
    }
    table.insert(last.clone(), value);
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
    use clix_common::settings::{BadValue, at_least_one};
    use serde::Deserialize;
    use std::collections::HashMap;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Settings {
        limits: Limits,
        name: String,
        entry: Vec<Entry>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Limits {
        #[serde(alias = "seconds")]
        timeout_secs: u64,
        strict: bool,
        paths: Vec<String>,
        labels: BTreeMap<String, String>,
        /// Left out of the defaults when unset, as the shell's count limits.
        #[serde(skip_serializing_if = "Option::is_none")]
        max_count: Option<u64>,
    }

    impl Default for Limits {
        fn default() -> Self {
            Limits { timeout_secs: 30, strict: false, paths: vec![], labels: BTreeMap::new(), max_count: None }
        }
    }

    /// An array-of-tables entry, as `[[clip]]`.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Entry {
        name: String,
        #[serde(default)]
        port: u16,
    }

    impl Validate for Settings {
        fn validate(&self) -> Vec<BadValue> {
            let l = &self.limits;
            let mut bad: Vec<BadValue> = [
                at_least_one("timeout_secs", l.timeout_secs, "seconds"),
                l.max_count.and_then(|n| at_least_one("max_count", n, "leave it out for no count")),
            ]
            .into_iter()
            .flatten()
            .map(|b| b.in_section("limits"))
            .collect();
            for (i, e) in self.entry.iter().enumerate() {
                bad.extend(at_least_one(&format!("entry[{i}].port"), u64::from(e.port), "a port"));
            }
            bad
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
        let names: Vec<String> = env.keys().cloned().collect();
        load_with(&path, |k| env.get(k).cloned(), &names, flags).map_err(|e| {
            // The same error with the file's place as `/cfg/config.toml`, for the tables below.
            let shown = e.to_string().replace(&dir.path().display().to_string(), "/cfg");
            ConfigError::Defaults(shown)
        })
    }

    /// The error text of a run, as a person reads it.
    fn error_of(file: Option<&str>, env: &[(&str, &str)], flags: &[(&str, &str, Value)]) -> String {
        match run(file, env, flags) {
            Err(ConfigError::Defaults(shown)) => shown,
            other => panic!("{file:?} {env:?}: expected an error, got {other:?}"),
        }
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
        let file = "[limits.labels]\nteam = \"ops\"\nGH_TOKEN = \"t\"\n\"gpt-4.1\" = \"a model\"\n";
        let l = run(Some(file), &[], &[]).unwrap();
        assert_eq!(l.value.limits.labels.get("team").map(String::as_str), Some("ops"));
        // A key with a dot (a model's name) is one key, shown quoted.
        assert_eq!(l.value.limits.labels.get("gpt-4.1").map(String::as_str), Some("a model"));
        assert_eq!(l.value.limits.labels.len(), 3);
        assert!(matches!(l.settings["limits.labels.team"].source, Source::File(_)));
        assert!(matches!(l.settings["limits.labels.\"gpt-4.1\""].source, Source::File(_)));
    }

    /// Fields the defaults cannot show (unset options, another name for a
    /// field) are still fields: serde, not the defaults, knows the fields.
    #[test]
    fn every_field_of_the_type_reads_from_the_file() {
        let l = run(Some("[limits]\nmax_count = 4\nseconds = 12\n"), &[], &[]).unwrap();
        assert_eq!((l.value.limits.max_count, l.value.limits.timeout_secs), (Some(4), 12));
        assert!(matches!(l.settings["limits.max_count"].source, Source::File(_)));
        assert!(matches!(l.settings["limits.timeout_secs"].source, Source::File(_)));
        let l = run(Some("[[entry]]\nname = \"a\"\nport = 22\n"), &[], &[]).unwrap();
        assert_eq!(l.value.entry, vec![Entry { name: "a".into(), port: 22 }]);
    }

    /// (file, the error): a slip gets its near name, another word the
    /// section's fields, and the message names the file and the section.
    #[test]
    fn unknown_fields_name_the_near_one_or_the_section_s() {
        let cases = [
            (
                "[limits]\ntimout_secs = 5\n",
                "config file /cfg/config.toml: limits: unknown field `timout_secs`; did you mean `timeout_secs`?",
            ),
            (
                "[limits]\ncolour = 5\n",
                "config file /cfg/config.toml: limits: unknown field `colour`; \
                 known fields: seconds, timeout_secs, strict, paths, labels, max_count",
            ),
            ("[limts]\nstrict = true\n", "config file /cfg/config.toml: unknown field `limts`; did you mean `limits`?"),
            ("nmae = \"x\"\n", "config file /cfg/config.toml: unknown field `nmae`; did you mean `name`?"),
            (
                "[[entry]]\nname = \"a\"\n[[entry]]\nname = \"b\"\nprot = 22\n",
                "config file /cfg/config.toml: entry[1]: unknown field `prot`; did you mean `port`?",
            ),
            (
                "[limits.other]\nx = 1\n",
                "config file /cfg/config.toml: limits: unknown field `other`; known fields: seconds, timeout_secs,",
            ),
        ];
        for (file, want) in cases {
            let got = error_of(Some(file), &[], &[]);
            assert!(got.starts_with(want), "{file}\n  got:  {got}\n  want: {want}");
        }
    }

    #[test]
    fn an_unknown_clix_variable_is_refused_with_the_near_name() {
        let rows: &[(&str, Option<&str>)] = &[
            (
                "CLIX_LIMITS_TIMOUT_SECS",
                Some("CLIX_LIMITS_TIMOUT_SECS: not a clix setting; did you mean CLIX_LIMITS_TIMEOUT_SECS?"),
            ),
            ("CLIX_LIMIT_STRICT", Some("CLIX_LIMIT_STRICT: not a clix setting; did you mean CLIX_LIMITS_STRICT?")),
            ("CLIX_WHATEVER", Some("CLIX_WHATEVER: not a clix setting; `clix config show` lists the settings")),
            ("CLIX_LIMITS_TIMEOUT_SECS", None),
            ("CLIX_HOME", None),
            ("CLIX_LOG", None),
            ("CLIX_HUB_PATH", None),
            ("CLIX_MCP_TOKEN", None),
            ("CLIX_TEST_FIXTURE_PORT", None),
            ("NOT_CLIX_AT_ALL", None),
        ];
        for (var, want) in rows {
            match (run(None, &[(var, "5")], &[]), want) {
                (Ok(_), None) => {}
                (Err(e), Some(want)) => {
                    let got = e.to_string();
                    assert!(got.contains(&format!("environment variable {want}")), "{var}: {got}");
                }
                (got, want) => panic!("{var}: expected {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn every_problem_of_every_layer_is_reported_at_once() {
        let file = "nmae = \"x\"\n[limits]\ntimout_secs = 5\nstrict = \"yes\"\nmax_count = 0\n\
                    [[entry]]\nname = \"a\"\nport = \"ssh\"\n";
        let got = error_of(
            Some(file),
            &[("CLIX_NAME", "n"), ("CLIX_LIMITS_TIMEOUT_SECS", "0")],
            &[("limits.nothing", "--nothing", Value::Integer(1))],
        );
        let want = [
            "config file /cfg/config.toml: unknown field `nmae`; did you mean `name`?",
            "config file /cfg/config.toml: limits: unknown field `timout_secs`; did you mean `timeout_secs`?",
            "config file /cfg/config.toml: entry.port: invalid type: string \"ssh\", expected u16",
            "config file /cfg/config.toml: limits.strict: invalid type: string \"yes\", expected a boolean",
            "config file /cfg/config.toml: limits.max_count = 0: at least 1 (leave it out for no count)",
            "environment variable CLIX_LIMITS_TIMEOUT_SECS: limits.timeout_secs = 0: at least 1 (seconds)",
            "--nothing: no setting `limits.nothing`",
        ];
        let lines: Vec<&str> = got.lines().collect();
        for line in want {
            assert!(lines.contains(&line), "missing {line:?} in\n{got}");
        }
        assert_eq!(lines.len(), want.len(), "{got}");
    }

    /// (file, env, flags, the error): a value its setting does not allow is
    /// refused from every layer, naming the place, the key, the value and
    /// what is allowed.
    #[test]
    fn values_not_allowed_are_refused_from_every_layer() {
        type Case<'a> = (Option<&'a str>, &'a [(&'a str, &'a str)], &'a [(&'a str, &'a str, Value)], &'a str);
        let flag = [("limits.timeout_secs", "--timeout", Value::Integer(0))];
        let cases: [Case; 6] = [
            (
                Some("[limits]\ntimeout_secs = 0\n"),
                &[],
                &[],
                "config file /cfg/config.toml: limits.timeout_secs = 0: at least 1 (seconds)",
            ),
            (
                None,
                &[("CLIX_LIMITS_TIMEOUT_SECS", "0")],
                &[],
                "environment variable CLIX_LIMITS_TIMEOUT_SECS: limits.timeout_secs = 0: at least 1 (seconds)",
            ),
            (None, &[], &flag, "--timeout: limits.timeout_secs = 0: at least 1 (seconds)"),
            // The file's value is refused though a flag replaces it this time.
            (
                Some("[limits]\ntimeout_secs = 0\n"),
                &[],
                &[("limits.timeout_secs", "--timeout", Value::Integer(5))],
                "config file /cfg/config.toml: limits.timeout_secs = 0: at least 1 (seconds)",
            ),
            (
                Some("[limits]\nmax_count = 0\n"),
                &[],
                &[],
                "config file /cfg/config.toml: limits.max_count = 0: at least 1 (leave it out for no count)",
            ),
            (
                Some("[[entry]]\nname = \"a\"\nport = 0\n"),
                &[],
                &[],
                "config file /cfg/config.toml: entry[0].port = 0: at least 1 (a port)",
            ),
        ];
        for (file, env, flags, want) in cases {
            assert_eq!(error_of(file, env, flags), want, "{file:?} {env:?}");
        }
        // Allowed values load.
        let l = run(Some("[limits]\ntimeout_secs = 1\nmax_count = 3\n"), &[("CLIX_LIMITS_TIMEOUT_SECS", "2")], &[]);
        assert_eq!(l.unwrap().value.limits.timeout_secs, 2);
    }

    #[test]
    fn bad_input_names_the_place_and_the_fix() {
        type Case<'a> = (Option<&'a str>, &'a [(&'a str, &'a str)], &'a str);
        let cases: [Case; 4] = [
            (Some("[limits]\ntimeout = 5\n"), &[], "limits: unknown field `timeout`; did you mean `timeout_secs`?"),
            (Some("[limits]\ntimeout_secs = \"soon\"\n"), &[], "config file /cfg/config.toml: limits.timeout_secs:"),
            (Some("not toml ["), &[], "config file"),
            (None, &[("CLIX_LIMITS_STRICT", "maybe")], "CLIX_LIMITS_STRICT: expected true or false"),
        ];
        for (file, env, needle) in cases {
            let err = error_of(file, env, &[]);
            assert!(err.contains(needle), "{err}");
        }
    }
}
