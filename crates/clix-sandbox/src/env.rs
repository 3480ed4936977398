//! The environment a sandboxed program gets: an allowlist, never a secret.

use std::collections::BTreeMap;

use clix_common::is_secret_name;

/// Variables passed from the host when set.
const PASSED: &[&str] = &["LANG", "LC_ALL", "LC_CTYPE", "TZ"];

/// The sandbox environment: fixed non-interactive settings, PATH and HOME,
/// a few host values and the configured extras, minus anything secret.
pub fn sandbox_env(
    host: impl Fn(&str) -> Option<String>,
    path: &str,
    home: &str,
    extras: &[String],
    toolchain_vars: &[(String, String)],
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let fixed = [
        ("PATH", path),
        ("HOME", home),
        ("TERM", "dumb"),
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_EDITOR", "true"),
        ("EDITOR", "true"),
        ("DEBIAN_FRONTEND", "noninteractive"),
        ("PYTHONUNBUFFERED", "1"),
        ("NO_COLOR", "1"),
    ];
    for (k, v) in fixed {
        env.insert(k.to_string(), v.to_string());
    }
    for (k, v) in toolchain_vars {
        env.insert(k.clone(), v.clone());
    }
    for name in PASSED.iter().map(|s| s.to_string()).chain(extras.iter().cloned()) {
        if let Some(value) = host(&name) {
            env.insert(name, value);
        }
    }
    env.retain(|k, _| !is_secret_name(k));
    env.entry("LANG".into()).or_insert_with(|| "C.UTF-8".into());
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_allowlist_passes_and_secrets_never_do() {
        let host = |k: &str| match k {
            "LANG" => Some("en_US.UTF-8".to_string()),
            "MY_SECRET_TOKEN" => Some("hunter2".to_string()),
            "PROJECT_MODE" => Some("dev".to_string()),
            "RANDOM_HOST_VAR" => Some("x".to_string()),
            _ => None,
        };
        let extras = vec!["PROJECT_MODE".to_string(), "MY_SECRET_TOKEN".to_string()];
        let env = sandbox_env(host, "/usr/bin", "/home/agent", &extras, &[]);
        assert_eq!(env["LANG"], "en_US.UTF-8");
        assert_eq!(env["PROJECT_MODE"], "dev");
        assert_eq!(env["PAGER"], "cat");
        assert_eq!(env["GIT_TERMINAL_PROMPT"], "0");
        assert!(!env.contains_key("MY_SECRET_TOKEN"), "even when configured");
        assert!(!env.contains_key("RANDOM_HOST_VAR"));
    }
}
