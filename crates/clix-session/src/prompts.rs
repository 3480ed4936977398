//! The prompts a person may override, and the environment the provider
//! reads: what a session's agent is told and where each part comes from.
//!
//! Each prompt is a text file built into the crate that owns it (the system
//! prompt in clix-agent, the `run` tool's description in clix-engine); a
//! file of the same name in the config folder's `prompts/` replaces it,
//! checked against that prompt's placeholders when it is loaded. Only a
//! person's session reads them: an isolated one (eval attempts, benchmarks)
//! keeps the built-in text.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clix_common::template::{Template, unknown_placeholder_message};
use clix_config::Paths;

/// A prompt a person may override.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    /// The system prompt (`prompts/system.md`).
    System,
    /// The `run` tool's description (`prompts/run-tool.md`).
    RunTool,
}

impl Prompt {
    /// Every prompt, in the order `clix config show` lists them.
    pub const ALL: [Prompt; 2] = [Prompt::System, Prompt::RunTool];

    /// Its file's name under the config folder's `prompts/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Prompt::System => "system.md",
            Prompt::RunTool => "run-tool.md",
        }
    }

    /// The placeholders its text may use.
    pub fn placeholders(self) -> &'static [&'static str] {
        match self {
            Prompt::System => clix_agent::SYSTEM_PLACEHOLDERS,
            Prompt::RunTool => clix_engine::RUN_TOOL_PLACEHOLDERS,
        }
    }

    /// The person's file for it, whether or not there is one.
    pub fn override_path(self, paths: &Paths) -> PathBuf {
        paths.config_dir.join("prompts").join(self.file_name())
    }
}

/// Where a prompt in force comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSource {
    /// The text built into clix.
    BuiltIn,
    /// The person's file at this path.
    File(PathBuf),
}

impl std::fmt::Display for PromptSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PromptSource::BuiltIn => write!(f, "built-in"),
            PromptSource::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

/// The person's template for `prompt` (`None`: there is no file, the
/// built-in text holds), or an error naming the file and each unknown
/// placeholder with the known ones.
pub fn load_prompt(paths: &Paths, prompt: Prompt) -> Result<Option<Template>> {
    let path = prompt.override_path(paths);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("cannot read the prompt file {}: {e}", path.display()),
    };
    Template::checked(&text, prompt.placeholders()).map(Some).map_err(|unknown| {
        let lines: Vec<String> = unknown
            .iter()
            .map(|u| format!("prompt file {}: {}", path.display(), unknown_placeholder_message(u)))
            .collect();
        anyhow::anyhow!(lines.join("\n"))
    })
}

/// Where `prompt` comes from for a person: their file when it loads, else
/// the built-in text; a file that does not load is the error.
pub fn prompt_source(paths: &Paths, prompt: Prompt) -> Result<PromptSource> {
    Ok(match load_prompt(paths, prompt)? {
        Some(_) => PromptSource::File(prompt.override_path(paths)),
        None => PromptSource::BuiltIn,
    })
}

/// A variable of the environment the agent's provider reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSource {
    /// Its name.
    pub name: String,
    /// Its value, `***` for a secret's.
    pub shown: String,
    /// The setting it fills, or why it fills none.
    pub fills: String,
}

/// The variables set in this process whose names clix's provider settings
/// come from (`AGENT_*`, `CLIX_AGENT_*`, `OPENAI_*`, `ANTHROPIC_*`), sorted,
/// each with the setting it fills; secrets (which left the environment at
/// start) are shown as `***`.
pub fn provider_env() -> Vec<EnvSource> {
    const PREFIXES: [&str; 4] = ["AGENT_", "CLIX_AGENT_", "OPENAI_", "ANTHROPIC_"];
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .chain(clix_config::secrets::names().map(String::from))
        .filter(|name| PREFIXES.iter().any(|p| name.starts_with(p)))
        .collect();
    names.sort();
    names.dedup();
    let agent_keys: Vec<String> = serde_json::to_value(clix_agent::AgentSettings::default())
        .ok()
        .and_then(|v| v.as_object().map(|o| o.keys().map(|k| format!("agent.{k}")).collect()))
        .unwrap_or_default();
    names
        .into_iter()
        .filter_map(|name| {
            let value = clix_config::secrets::var(&name)?;
            let shown = if clix_common::is_secret_name(&name) && !value.is_empty() { "***".into() } else { value };
            let fills = clix_agent::PROVIDER_VARS
                .iter()
                .find(|(var, _)| *var == name)
                .map(|(_, setting)| setting.to_string())
                .or_else(|| {
                    agent_keys
                        .iter()
                        .find(|k| clix_config::env_var_name(k) == name)
                        .map(|k| format!("{k} (config layer)"))
                })
                .unwrap_or_else(|| "nothing: clix does not read it".into());
            Some(EnvSource { name, shown, fills })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(home: &std::path::Path) -> Paths {
        Paths::at_home(home)
    }

    #[test]
    fn an_override_replaces_the_built_in_and_a_bad_placeholder_names_the_file() {
        let home = tempfile::tempdir().unwrap();
        let paths = paths(home.path());
        for prompt in Prompt::ALL {
            assert_eq!(load_prompt(&paths, prompt).unwrap(), None);
            assert_eq!(prompt_source(&paths, prompt).unwrap(), PromptSource::BuiltIn);
        }
        let dir = home.path().join("prompts");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("system.md"), "Work in {workspace}. {tool_guidance}\n").unwrap();
        let template = load_prompt(&paths, Prompt::System).unwrap().unwrap();
        assert_eq!(template.render(&[("workspace", "/w"), ("tool_guidance", "Use run.")]), "Work in /w. Use run.");
        assert_eq!(prompt_source(&paths, Prompt::System).unwrap(), PromptSource::File(dir.join("system.md")));

        std::fs::write(dir.join("run-tool.md"), "Run. {comands} {workspace}").unwrap();
        let err = load_prompt(&paths, Prompt::RunTool).unwrap_err().to_string();
        let file = dir.join("run-tool.md").display().to_string();
        assert_eq!(
            err,
            format!(
                "prompt file {file}: unknown placeholder {{comands}}; did you mean {{commands}}? known placeholders: \
                 {{commands}}, {{skills}}, {{mcp}} (write {{{{ for a literal {{)\n\
                 prompt file {file}: unknown placeholder {{workspace}}; known placeholders: {{commands}}, {{skills}}, \
                 {{mcp}} (write {{{{ for a literal {{)"
            )
        );
        assert!(prompt_source(&paths, Prompt::RunTool).is_err());
    }
}
