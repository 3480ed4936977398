//! What the engine can run, as models and `help` see it.

use std::sync::{Arc, OnceLock};

use clix_shell::CommandSpec;

/// The names and summaries of every command a session can run.
///
/// Built once the session exists (bashkit's builtin list is only known then)
/// and shared with the commands that print it (`help`, unknown-command errors).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Our commands, sorted by name.
    pub agent: Vec<CommandSpec>,
    /// The standard Unix commands and shell builtins, sorted.
    pub standard: Vec<String>,
}

impl Catalog {
    /// Every runnable name, sorted.
    pub fn all_names(&self) -> Vec<String> {
        let mut names: Vec<String> =
            self.agent.iter().map(|s| s.name.clone()).chain(self.standard.iter().cloned()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    pub fn agent_command(&self, name: &str) -> Option<&CommandSpec> {
        self.agent.iter().find(|s| s.name == name)
    }
}

/// A catalog that is filled after the commands that read it were built.
pub(crate) type SharedCatalog = Arc<OnceLock<Catalog>>;

pub(crate) fn catalog_of(shared: &SharedCatalog) -> Catalog {
    shared.get().cloned().unwrap_or_default()
}
