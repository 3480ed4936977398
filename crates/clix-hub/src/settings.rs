//! The `[hub]` section of clix's config file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clix_common::Secret;
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
