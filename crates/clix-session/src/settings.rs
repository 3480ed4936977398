//! The configuration file's sections, one per crate that has settings.

use std::path::Path;

use clix_agent::{AgentSettings, ResolvedProvider, resolve_provider};
use clix_common::settings::{BadValue, Validate};
use clix_config::{ConfigError, Loaded, Paths};
use clix_engine::{PresentOptions, SandboxSettings, ShellLimits};
use clix_memory::MemorySettings;
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
    /// Where shared state lives: unset, the embedded SQLite files in the
    /// data folder; a `postgres://` URL, a PostgreSQL database that many
    /// machines share.
    pub storage: StorageSettings,
    /// Agent Skills: whether the `skill` command and its level-0 list exist,
    /// and how many bytes of the `run` tool's description the list may take.
    pub skills: clix_skills::SkillsSettings,
    /// MCP servers as commands: `[[mcp.server]]` entries (name, description,
    /// `command` + `args` or `url` + `headers`, env, network, domain,
    /// enabled). Only this file (and its `CLIX_*` / flag layers) declares
    /// them; a workspace never can.
    pub mcp: clix_mcp_client::McpSettings,
    /// Each `run` call's changes kept for `clix diff` and `clix undo`:
    /// whether, the biggest file kept, the store's size.
    pub checkpoints: clix_engine::CheckpointSettings,
}

/// `[storage]`: the one place a session's shared state is, for every part
/// that keeps some (the memory today).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSettings {
    /// `postgres://user:password@host:port/database` (`CLIX_STORAGE_URL`);
    /// a secret: shown as `***`, kept out of every log and sandbox. Empty:
    /// the SQLite files in the data folder.
    pub url: clix_common::Secret,
}

impl Validate for StorageSettings {
    fn validate(&self) -> Vec<BadValue> {
        let url = self.url.expose();
        if url.is_empty() || matches!(clix_memory::Location::parse(url), Ok(clix_memory::Location::Postgres(_))) {
            return Vec::new();
        }
        // Never the value itself: it may hold a password.
        vec![BadValue::new(
            "url",
            "***",
            "a postgres:// or postgresql:// URL (postgres://user:password@host:5432/database), or unset for the \
                 SQLite files in the data folder",
        )]
    }
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

/// Each section checks its own values; the loader runs this after every
/// layer, so a value from the file, a `CLIX_*` variable or a flag is held
/// to one rule.
impl Validate for Settings {
    fn validate(&self) -> Vec<BadValue> {
        let sections: [(&str, Vec<BadValue>); 11] = [
            ("present", self.present.validate()),
            ("limits", self.limits.validate()),
            ("sandbox", self.sandbox.validate()),
            ("agent", self.agent.validate()),
            ("memory", self.memory.validate()),
            ("browser", self.browser.validate()),
            ("storage", self.storage.validate()),
            ("skills", self.skills.validate()),
            ("checkpoints", self.checkpoints.validate()),
            ("hub", self.hub.validate()),
            ("policy", policy_problems(&self.policy)),
        ];
        let bad = sections.into_iter().flat_map(|(name, bad)| bad.into_iter().map(move |b| b.in_section(name)));
        // `[mcp]` and `[[clip]]` name their own keys (`mcp.server[N].…`, `clip[N]`).
        bad.chain(self.mcp.validate()).chain(clip_problems(&self.clip)).collect()
    }
}

/// The person's own `[[policy.rule]]`s, compiled as the gate will (the
/// built-in ones are clix's and known good, so they are not compiled twice
/// at every start): each problem with the rule it is in.
fn policy_problems(policy: &clix_policy::PolicySettings) -> Vec<BadValue> {
    if policy.rule.is_empty() {
        return Vec::new();
    }
    let own = clix_policy::PolicySettings { defaults: false, ..policy.clone() };
    match clix_policy::Policy::load(&own, "config.toml", &[]) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .problems
            .iter()
            .map(|problem| BadValue::new("rule", "…", problem.strip_prefix("config.toml: ").unwrap_or(problem)))
            .collect(),
    }
}

/// Each `[[clip]]` entry checked as an engine will check it, by its index
/// (`clip[0]`, as the file's own errors name it), then names used twice.
fn clip_problems(entries: &[clix_clip::ClipEntry]) -> Vec<BadValue> {
    let mut bad: Vec<BadValue> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, entry)| {
            let problem = clix_clip::Environment::from_entry(entry).err()?;
            Some(BadValue::new(format!("clip[{i}]"), format!("{:?}", entry.name), problem.what))
        })
        .collect();
    if bad.is_empty()
        && let Err(problems) = clix_clip::check(entries)
    {
        bad.extend(problems.0.iter().map(|problem| BadValue::new("clip", "…", problem.to_string())));
    }
    bad
}

impl Settings {
    /// The provider `[agent]` names, with a model or API kind of the
    /// caller's, its key from the person's secrets (AGENT_API_KEY,
    /// OPENAI_API_KEY, …, which left the environment at start).
    pub fn person_provider(&self, model: Option<&str>, kind: Option<&str>) -> anyhow::Result<ResolvedProvider> {
        Ok(resolve_provider(&self.agent, clix_config::secrets::var, model, kind)?)
    }
}

/// Where the shared state of `settings` lives: the PostgreSQL database of
/// `[storage] url` when it is set, else the SQLite file in the data folder.
/// (`clix storage migrate` and every session's memory ask here.)
pub fn storage_location(paths: &Paths, settings: &Settings) -> clix_memory::Location {
    match settings.storage.url.expose() {
        "" => clix_memory::Location::File(paths.data_dir.join("memory.sqlite")),
        url => clix_memory::Location::Postgres(url.to_string()),
    }
}

/// A workspace's own memory topic: its canonical path. Its name alone was
/// shared by every folder of that name, so a cloned `backend` read (and
/// planted facts in) another project's memories.
pub fn workspace_topic(workspace: &Path) -> String {
    let canonical = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    canonical.to_string_lossy().into_owned()
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

    /// `[agent.prices."<model>"]` from the file: read per model, a mistyped
    /// field named with the near one, a price that is not one refused.
    #[test]
    fn prices_are_read_per_model_and_checked() {
        let home = tempfile::tempdir().unwrap();
        let paths = Paths::at_home(home.path());
        std::fs::create_dir_all(paths.config_file.parent().unwrap()).unwrap();
        let read = |text: &str| {
            std::fs::write(&paths.config_file, text).unwrap();
            load(&paths, &[]).map(|l| l.value.agent.prices).map_err(|e| e.to_string())
        };
        let prices =
            read("[agent.prices.\"claude-sonnet-4-5\"]\ninput = 3.0\ncached_input = 0.3\noutput = 15\n").unwrap();
        let price = prices["claude-sonnet-4-5"];
        assert_eq!((price.input, price.cached_input, price.cache_write, price.output), (3.0, Some(0.3), None, 15.0));
        let rows = [
            (
                "[agent.prices.m]\ninput = 1\noutput = 1\ncahced_input = 0.1\n",
                "unknown field `cahced_input`; did you mean `cached_input`?",
            ),
            (
                "[agent.prices.\"gpt-4.1\"]\ninput = -1\noutput = 1\n",
                "agent.prices.\"gpt-4.1\".input = -1: a price per million tokens, 0 or more",
            ),
            ("[agent.prices.m]\ninput = 1\n", "missing field `output`"),
            ("[agent.price.m]\ninput = 1\n", "unknown field `price`; did you mean `prices`?"),
        ];
        for (file, want) in rows {
            let err = read(file).unwrap_err();
            assert!(err.contains(want), "{file:?}: {err}");
        }
    }

    /// Issue 53: every section of the file fails at load with a broken
    /// value, under its own name, and the table has a row for every section
    /// `Settings` has (a new section without a check fails here).
    #[test]
    fn every_section_fails_with_a_broken_value() {
        let rows: &[(&str, &str)] = &[
            ("present", "[present]\nmax_lines = 0\n"),
            ("limits", "[limits]\ntimeout_secs = 0\n"),
            ("sandbox", "[sandbox]\nmemory_mb = 0\n"),
            ("agent", "[agent]\nmax_steps = 0\n"),
            ("memory", "[memory]\nembedder = \"openia\"\n"),
            ("hub", "[hub]\ndomains = [\"two words\"]\n"),
            ("policy", "[[policy.rule]]\nid = \"x\"\ndecision = \"deny\"\nwhy = \"w\"\n"),
            ("browser", "[browser]\nwindow = \"big\"\n"),
            ("clip", "[[clip]]\nname = \"box\"\nkind = \"teleport\"\n"),
            ("storage", "[storage]\nurl = \"mysql://db\"\n"),
            ("skills", "[skills]\nlevel0_bytes = 999999999\n"),
            ("mcp", "[[mcp.server]]\nname = \"-bad\"\ncommand = \"x\"\n"),
            ("checkpoints", "[checkpoints]\nmax_file_bytes = 0\n"),
        ];
        let sections: Vec<String> = match serde_json::to_value(Settings::default()) {
            Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
            other => panic!("Settings serializes as a table: {other:?}"),
        };
        let missing: Vec<&String> = sections.iter().filter(|s| !rows.iter().any(|(r, _)| r == s)).collect();
        assert!(missing.is_empty(), "sections with no row here (and maybe no check): {missing:?}");
        for (section, text) in rows {
            let settings: Settings = toml::from_str(text).unwrap_or_else(|e| panic!("{section}: {e}"));
            let found: Vec<String> = settings.validate().iter().map(ToString::to_string).collect();
            assert!(
                !found.is_empty()
                    && found
                        .iter()
                        .all(|f| f.starts_with(&format!("{section}.")) || f.starts_with(&format!("{section}["))),
                "{section}: {found:?}"
            );
        }
    }

    /// Each section's rule reaches the whole settings' check, under its section's name.
    #[test]
    fn every_section_s_values_are_checked() {
        type Spoil = fn(&mut Settings);
        let rows: [(Spoil, &str); 8] = [
            (|s| s.present.max_lines = 0, "present.max_lines = 0: at least 1"),
            (
                |s| (s.present.head_lines, s.present.tail_lines) = (0, 0),
                "present.head_lines = 0: head_lines + tail_lines",
            ),
            (|s| s.limits.timeout_secs = 0, "limits.timeout_secs = 0: from 1 to"),
            (|s| s.sandbox.memory_mb = 0, "sandbox.memory_mb = 0: from 1 to"),
            (|s| s.agent.max_steps = 0, "agent.max_steps = 0: at least 1"),
            (
                |s| s.memory.embedder = "openia".into(),
                "memory.embedder = \"openia\": one of none, openai, model2vec; did you mean \"openai\"?",
            ),
            (|s| s.memory.recall_min_similarity = 2.0, "memory.recall_min_similarity = 2: from -1 to 1"),
            (|s| s.browser.window = "big".into(), "browser.window = \"big\": WIDTHxHEIGHT"),
        ];
        assert!(Settings::default().validate().is_empty(), "the defaults are allowed");
        for (spoil, want) in rows {
            let mut settings = Settings::default();
            spoil(&mut settings);
            let found: Vec<String> = settings.validate().iter().map(ToString::to_string).collect();
            assert!(found.len() == 1 && found[0].starts_with(want), "{want}: {found:?}");
        }
    }
}
