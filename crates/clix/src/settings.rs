//! The configuration file's sections, one per crate that has settings.

use clix_agent::AgentSettings;
use clix_config::{ConfigError, Loaded, Paths};
use clix_engine::{PresentOptions, SandboxSettings, ShellLimits};
use serde::{Deserialize, Serialize};

/// Everything `config.toml` may contain.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Layer 2: overflow thresholds and preview sizes.
    pub present: PresentOptions,
    /// Layer 1: time, command, loop and output limits.
    pub limits: ShellLimits,
    /// The OS tier: isolation mode, network, mounts and resource limits.
    pub sandbox: SandboxSettings,
    /// The agent loop: provider, model, budgets, context.
    pub agent: AgentSettings,
}

/// Settings with flags applied; `flags` are `(dotted key, flag, value)`.
pub fn load(paths: &Paths, flags: &[(&str, &str, toml::Value)]) -> Result<Loaded<Settings>, ConfigError> {
    clix_config::load(&paths.config_file, flags)
}

/// A commented config file holding every default, for `clix config init`.
pub fn default_file() -> String {
    let body = toml::to_string_pretty(&Settings::default()).unwrap_or_default();
    format!(
        "# clix configuration. Every value below is the built-in default.\n\
         # Precedence: flags > CLIX_* environment variables > this file > defaults.\n\
         # The variable for a key is CLIX_<SECTION>_<KEY>, e.g. CLIX_LIMITS_TIMEOUT_SECS.\n\n{body}"
    )
}
