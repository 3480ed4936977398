//! The last stop for a name nothing else runs: a navigating error, exit 127.
//!
//! The message is Layer-2 wording (`clix_present::unknown_command_message`)
//! written while Layer 1 runs, on purpose: it is this stage's own stderr, as
//! bash's "command not found" is, so it follows the line's redirections
//! (`2>/dev/null`, `2>&1 | grep`, `|| fallback`), which only the shell
//! applies, and it belongs to one stage, which Layer 2 (one result for the
//! whole line) cannot tell apart. `--raw` shows it as bash would show its own.

use std::sync::Arc;

use bashkit::Builtin;
use clix_shell::{BuiltinContext, CommandResolver, ExecResult, async_trait};

use clix_present::Known;

use clix_command::LISTED_AT_MOST;

use crate::catalog::{SharedCatalog, catalog_of};

/// Exit code of a command that does not exist, as in bash.
const NOT_FOUND_EXIT: i32 = clix_common::exit::NOT_FOUND;

/// Resolves every unknown name to [`UnknownCommand`]. The OS tier sits in
/// front of it and claims names that exist on the sandbox's PATH.
pub(crate) struct UnknownCommands {
    pub(crate) catalog: SharedCatalog,
}

impl UnknownCommands {
    /// The error for `name`; `network` says whether sandboxed programs have
    /// the network (what to do instead of `curl` or `pip` depends on it).
    pub(crate) fn command(&self, name: &str, network: bool) -> Arc<dyn Builtin> {
        Arc::new(UnknownCommand { name: name.to_string(), catalog: Arc::clone(&self.catalog), network })
    }
}

impl CommandResolver for UnknownCommands {
    /// Without the OS tier nothing has the network.
    fn resolve(&self, name: &str) -> Option<Arc<dyn Builtin>> {
        Some(self.command(name, false))
    }
}

struct UnknownCommand {
    name: String,
    catalog: SharedCatalog,
    network: bool,
}

#[async_trait]
impl Builtin for UnknownCommand {
    async fn execute(&self, _ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let catalog = catalog_of(&self.catalog);
        if let Some((_, message)) = catalog.unavailable.iter().find(|(name, _)| *name == self.name) {
            return Ok(ExecResult::err(message.clone(), NOT_FOUND_EXIT));
        }
        let names = |specs: &[clix_command::CommandSpec]| specs.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        let tools = names(&catalog.tools[..catalog.tools.len().min(LISTED_AT_MOST)]);
        let known =
            Known { agent: &names(&catalog.agent), hub: &tools, all: &catalog.all_names(), network: self.network };
        let mut message = clix_present::unknown_command_message(&self.name, &known);
        for hint in &catalog.unknown_hints {
            message.push_str(hint);
        }
        Ok(ExecResult::err(message, NOT_FOUND_EXIT))
    }
}
