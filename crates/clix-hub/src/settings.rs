//! The `[hub]` section of clix's config file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clix_common::Secret;
use clix_common::settings::{BadValue, Validate};
use serde::{Deserialize, Serialize};

/// The `[hub]` section: which hub folders and domains a session has, how
/// long a self-test result lasts, and the values manifests may ask for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HubSettings {
    /// More hub folders of the user's, searched after the config folder's
    /// `hub/` and before `CLIX_HUB_PATH` and the workspace's `.clix/hub`
    /// (`--hub DIR` adds to them).
    pub dirs: Vec<PathBuf>,
    /// Only tools of these domains exist for a session (`--domain`); empty means all.
    pub domains: Vec<String>,
    /// How long a tool's self-test result is trusted while its manifest and
    /// program are unchanged.
    pub self_test_ttl_secs: u64,
    /// Values for `${NAME}` in manifests' `env`: the only way a secret
    /// reaches a tool is a manifest naming it. Secrets, so Debug, logs and
    /// `clix config show` print `***`.
    pub env: BTreeMap<String, Secret>,
}

/// `dirs` are folders, `domains` plain words, `env` keys variable names.
impl Validate for HubSettings {
    fn validate(&self) -> Vec<BadValue> {
        let mut bad = Vec::new();
        for (i, dir) in self.dirs.iter().enumerate().filter(|(_, d)| d.as_os_str().is_empty()) {
            bad.push(BadValue::new(
                format!("dirs[{i}]"),
                format!("{:?}", dir.display().to_string()),
                "a folder's path",
            ));
        }
        for (i, domain) in self.domains.iter().enumerate() {
            if domain.is_empty() || domain.chars().any(|c| c.is_whitespace() || c.is_control()) {
                bad.push(BadValue::new(format!("domains[{i}]"), format!("{domain:?}"), "a domain's name (one word)"));
            }
        }
        for name in self.env.keys() {
            let variable = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !variable {
                bad.push(BadValue::new(
                    format!("env.{}", clix_common::settings::key_part(name)),
                    "***",
                    "a variable name (letters, digits and `_`, not starting with a digit)",
                ));
            }
        }
        bad
    }
}

impl Default for HubSettings {
    fn default() -> Self {
        HubSettings { dirs: Vec::new(), domains: Vec::new(), self_test_ttl_secs: 600, env: BTreeMap::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_are_read_but_never_shown() {
        let settings: HubSettings = toml::from_str("[env]\nGH_TOKEN = \"ghp-secretvalue\"\n").unwrap();
        assert_eq!(settings.env["GH_TOKEN"].expose(), "ghp-secretvalue");
        let shown = [format!("{settings:?}"), toml::to_string(&settings).unwrap()];
        for text in shown {
            assert!(!text.contains("secretvalue") && text.contains("GH_TOKEN") && text.contains("***"), "{text}");
        }
    }
}
