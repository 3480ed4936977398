//! The `[hub]` section of clix's config file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HubSettings {
    /// More hub folders, searched after `<workspace>/.clix/hub` and the
    /// config folder's `hub/` (`--hub DIR` adds to them; `CLIX_HUB_PATH` comes last).
    pub dirs: Vec<PathBuf>,
    /// Only tools of these domains exist for a session (`--domain`); empty means all.
    pub domains: Vec<String>,
    /// How long a tool's self-test result is trusted while its manifest and
    /// program are unchanged.
    pub self_test_ttl_secs: u64,
    /// Values for `${NAME}` in manifests' `env`, looked up before clix's own
    /// environment: the only way a secret reaches a tool is a manifest
    /// naming it. `clix config show` prints them as `***`.
    pub env: BTreeMap<String, String>,
}

/// `[hub.env]` values are secrets: Debug shows only their names.
impl std::fmt::Debug for HubSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubSettings")
            .field("dirs", &self.dirs)
            .field("domains", &self.domains)
            .field("self_test_ttl_secs", &self.self_test_ttl_secs)
            .field("env", &self.env.keys().map(|k| format!("{k}=***")).collect::<Vec<_>>())
            .finish()
    }
}

impl Default for HubSettings {
    fn default() -> Self {
        HubSettings { dirs: Vec::new(), domains: Vec::new(), self_test_ttl_secs: 600, env: BTreeMap::new() }
    }
}
