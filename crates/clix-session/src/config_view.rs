//! What `clix config show` and `clix config init` report: every setting in
//! force with where its value came from (a provider's own variable beats
//! the file, and says so), where each prompt comes from, and the variables
//! the provider reads outside the `CLIX_*` layer. A secret's value is
//! never in it.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clix_config::Paths;

use crate::prompts::{EnvSource, Prompt, prompt_source, provider_env};

/// `clix config show`'s content.
#[derive(Debug)]
pub struct ConfigReport {
    /// The config file read (it may not exist).
    pub file: PathBuf,
    /// Each key, its value in force (`***` for a secret's) and its source.
    pub settings: Vec<(String, toml::Value, String)>,
    /// Each prompt file's name and where it comes from.
    pub prompts: Vec<(String, String)>,
    /// The provider's own variables set in this process.
    pub env: Vec<EnvSource>,
}

/// The settings in force, as `clix config show` reports them.
pub fn config_report(paths: &Paths) -> Result<ConfigReport> {
    let mut loaded = crate::load(paths, &[])?;
    // The provider's own variables (AGENT_MODEL, OPENAI_BASE_URL, …) beat
    // the file: shown in force, with the variable as the source.
    if let Ok(provider) = clix_agent::resolve_provider(&loaded.value.agent, clix_config::secrets::var, None, None) {
        for (key, var) in &provider.from_env {
            let value = match *key {
                "agent.model" => provider.model.clone(),
                "agent.base_url" => provider.base_url.clone(),
                _ => "***".to_string(),
            };
            let setting = clix_config::Setting {
                value: toml::Value::String(value),
                source: clix_config::Source::Env(var.to_string()),
            };
            loaded.settings.insert(key.to_string(), setting);
        }
    }
    let settings = loaded.settings.iter().map(|(k, s)| (k.clone(), shown(k, &s.value), s.source.to_string())).collect();
    let prompts = Prompt::ALL
        .into_iter()
        .map(|p| Ok((format!("prompts/{}", p.file_name()), prompt_source(paths, p)?.to_string())))
        .collect::<Result<_>>()?;
    Ok(ConfigReport { file: paths.config_file.clone(), settings, prompts, env: provider_env() })
}

/// A value as it may be shown: a secret-named key's is never printed.
fn shown(key: &str, value: &toml::Value) -> toml::Value {
    let secret = clix_common::is_secret_name(key) || key.starts_with("hub.env.");
    match value {
        toml::Value::String(v) if secret && !v.is_empty() => toml::Value::String("***".into()),
        other => other.clone(),
    }
}

/// `clix config init`: the config file with every default, written where
/// clix reads it; an error when one is there already.
pub fn init_config(paths: &Paths) -> Result<PathBuf> {
    let file = &paths.config_file;
    if file.exists() {
        bail!("{} already exists; edit it, or remove it first", file.display());
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(file, crate::default_file()).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(file.clone())
}
