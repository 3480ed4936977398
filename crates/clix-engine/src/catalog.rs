//! What the engine can run, as models and `help` see it.

use std::sync::{Arc, OnceLock};

use clix_command::CommandSpec;

/// The names and summaries of every command a session can run.
///
/// Built once the session exists (bashkit's builtin list is only known then)
/// and shared with the commands that print it (`help`, unknown-command errors).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Our commands, sorted by name.
    pub agent: Vec<CommandSpec>,
    /// Our commands that run but are not offered to the model (`hub`
    /// without ready tools, a capability's command it does not offer):
    /// `help` still answers for them, since a person's docs name them.
    pub unlisted: Vec<CommandSpec>,
    /// The standard Unix commands and shell builtins, sorted.
    pub standard: Vec<String>,
    /// The tools the capabilities' sections list (each ready hub tool,
    /// most used first), in order: the unknown-command error names the
    /// first [`clix_command::LISTED_AT_MOST`].
    pub tools: Vec<CommandSpec>,
    /// The capabilities' names that are not commands here (a hub tool that
    /// is not ready), each with the error a call of it gets instead of
    /// "unknown command".
    pub unavailable: Vec<(String, String)>,
    /// Lines every unknown-command error ends with (manifests that did not
    /// load, and where to see why).
    pub unknown_hints: Vec<String>,
    /// The capabilities' sections, shown after the commands in the `run`
    /// description and in `help` (clip's environments), in their order.
    pub sections: Vec<String>,
    /// The capabilities' texts for placeholders of the `run` description
    /// (`skills`: the level-0 list within the `[skills]` budget).
    pub placeholders: Vec<(&'static str, String)>,
    /// The `run` tool's description template (a person's
    /// `prompts/run-tool.md`); `None`: the built-in one.
    pub run_tool_prompt: Option<clix_common::template::Template>,
}

impl Catalog {
    /// The text a capability gave for `placeholder`, empty when none did.
    pub fn placeholder(&self, placeholder: &str) -> &str {
        self.placeholders.iter().find(|(name, _)| *name == placeholder).map_or("", |(_, text)| text.as_str())
    }

    /// Every runnable name, sorted.
    pub fn all_names(&self) -> Vec<String> {
        let mut names: Vec<String> =
            self.agent.iter().chain(&self.tools).map(|s| s.name.clone()).chain(self.standard.iter().cloned()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// One of our commands (listed or not) or a capability's tool (an MCP server among them).
    pub fn agent_command(&self, name: &str) -> Option<&CommandSpec> {
        self.agent.iter().chain(&self.unlisted).chain(&self.tools).find(|s| s.name == name)
    }
}

/// A catalog that is filled after the commands that read it were built.
pub(crate) type SharedCatalog = Arc<OnceLock<Catalog>>;

pub(crate) fn catalog_of(shared: &SharedCatalog) -> Catalog {
    shared.get().cloned().unwrap_or_default()
}
