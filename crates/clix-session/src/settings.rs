//! The configuration file's sections, one per crate that has settings.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::{Arc, Mutex};

use clix_agent::AgentSettings;
use clix_config::{ConfigError, Loaded, Paths};
use clix_engine::{MemoryConfig, PresentOptions, SandboxSettings, ShellLimits};
use clix_memory::{MemorySettings, Progress};
use serde::{Deserialize, Serialize};

/// Everything `config.toml` may contain.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Settings {
    /// Layer 2: overflow thresholds and preview sizes.
    pub present: PresentOptions,
    /// Layer 1: time, command, loop and output limits.
    pub limits: ShellLimits,
    /// The OS tier: isolation mode, network, mounts and resource limits.
    pub sandbox: SandboxSettings,
    /// The agent loop: provider, model, budgets, context.
    pub agent: AgentSettings,
    /// Memory: the embedder (none, openai, model2vec), the topic, recall and summaries.
    pub memory: MemorySettings,
    /// Hub tools: extra folders, domains, self-test cache.
    pub hub: clix_hub::HubSettings,
    /// Which commands may run: the built-in rules, rules of your own, `allow` prefixes.
    pub policy: clix_policy::PolicySettings,
    /// The `browser` command: which Chromium, idle time, hosts pages may reach, `eval`.
    pub browser: clix_browser::BrowserSettings,
    /// Other machines as commands: `[[clip]]` entries (name, description,
    /// kind = ssh | container | kubernetes | local, and the kind's fields).
    /// Only this file declares them; a workspace never can.
    pub clip: Vec<clix_clip::ClipEntry>,
    /// A person at this terminal answers the policy's `ask` (run, ask and
    /// chat on a terminal; never MCP or `--jsonl`). Not a config key.
    #[serde(skip)]
    pub person_answers: bool,
}

/// Settings with flags applied; `flags` are `(dotted key, flag, value)`.
pub(crate) fn load(paths: &Paths, flags: &[(&str, &str, toml::Value)]) -> Result<Loaded<Settings>, ConfigError> {
    clix_config::load(&paths.config_file, flags)
}

/// A commented config file holding every default, for `clix config init`.
pub(crate) fn default_file() -> String {
    let body = toml::to_string_pretty(&Settings::default()).unwrap_or_default();
    format!(
        "# clix configuration. Every value below is the built-in default.\n\
         # Precedence: flags > CLIX_* environment variables > this file > defaults.\n\
         # The variable for a key is CLIX_<SECTION>_<KEY>, e.g. CLIX_LIMITS_TIMEOUT_SECS.\n\n{body}"
    )
}

/// The memory of a session on `workspace`: the store under the data dir,
/// the topic (`memory.topic` / `--topic`, else the workspace's path), the
/// embedder settings, and a progress bar on a terminal while re-embedding.
pub(crate) fn memory_config(paths: &Paths, workspace: &Path, settings: &Settings, session: String) -> MemoryConfig {
    let topic =
        if settings.memory.topic.is_empty() { workspace_topic(workspace) } else { settings.memory.topic.clone() };
    // The embedder's key falls back to OPENAI_API_KEY, which left the
    // environment at start: put it in the settings, where the engine's
    // `memory` command looks first (CLIX_MEMORY_API_KEY is already there, as
    // the `memory.api_key` setting's variable).
    let mut memory = settings.memory.clone();
    if memory.api_key.is_empty()
        && let Some(key) = clix_config::secrets::var("CLIX_MEMORY_API_KEY")
            .filter(|k| !k.is_empty())
            .or_else(|| clix_config::secrets::var("OPENAI_API_KEY"))
    {
        memory.api_key = clix_config::Secret::new(key);
    }
    MemoryConfig {
        path: paths.data_dir.join("memory.sqlite"),
        topic,
        session,
        settings: memory,
        progress: std::io::stderr().is_terminal().then(progress_bar),
        // Inside run: the session's topic and the global one; `clix memory` asks for more.
        access: clix_engine::MemoryAccess::Session,
    }
}

/// A workspace's own memory topic: its canonical path. Its name alone was
/// shared by every folder of that name, so a cloned `backend` read (and
/// planted facts in) another project's memories.
pub(crate) fn workspace_topic(workspace: &Path) -> String {
    let canonical = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    canonical.to_string_lossy().into_owned()
}

/// An indicatif bar on stderr, shown from the first report, gone at the last.
fn progress_bar() -> Progress {
    let bar: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);
    Arc::new(move |done, total| {
        let mut bar = bar.lock().unwrap_or_else(|p| p.into_inner());
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template("embedding memories {bar:30} {pos}/{len} {eta}")
            {
                b.set_style(style);
            }
            b
        });
        b.set_length(total as u64);
        b.set_position(done as u64);
        if done >= total {
            b.finish_and_clear();
            *bar = None;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config file knows its keys from the defaults (`clix_config`), and
    /// TOML has no null: a setting whose default is `None` could never be set
    /// from the file (`[browser] executable` once could not).
    #[test]
    fn every_setting_has_a_key_in_the_defaults() {
        fn nulls(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Null => out.push(prefix.to_string()),
                serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| nulls(&format!("{prefix}.{k}"), v, out)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        nulls("", &serde_json::to_value(Settings::default()).unwrap(), &mut found);
        assert!(found.is_empty(), "settings without a default value: {found:?}");
    }
}
