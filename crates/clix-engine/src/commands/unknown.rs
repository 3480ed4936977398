//! The last stop for a name nothing else runs: a navigating error, exit 127.

use std::sync::Arc;

use bashkit::Builtin;
use clix_shell::{BuiltinContext, CommandResolver, ExecResult, async_trait};

use crate::catalog::{SharedCatalog, catalog_of};

/// Exit code of a command that does not exist, as in bash.
const NOT_FOUND_EXIT: i32 = 127;

/// Resolves every unknown name to [`UnknownCommand`]. The OS tier will sit
/// in front of it and claim names that exist on the host.
pub(crate) struct UnknownCommands {
    pub(crate) catalog: SharedCatalog,
}

impl CommandResolver for UnknownCommands {
    fn resolve(&self, name: &str) -> Option<Arc<dyn Builtin>> {
        Some(Arc::new(UnknownCommand { name: name.to_string(), catalog: Arc::clone(&self.catalog) }))
    }
}

struct UnknownCommand {
    name: String,
    catalog: SharedCatalog,
}

#[async_trait]
impl Builtin for UnknownCommand {
    async fn execute(&self, _ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let catalog = catalog_of(&self.catalog);
        if let Some((_, why)) = catalog.hub_not_ready.iter().find(|(name, _)| *name == self.name) {
            let message = format!("[error] {}: this hub tool is not ready: {why}\nhint: hub check\n", self.name);
            return Ok(ExecResult::err(message, NOT_FOUND_EXIT));
        }
        let mut message = clix_present::unknown_command_message(&self.name, &catalog.all_names());
        if catalog.hub_problems > 0 {
            message.push_str(&format!(
                "hint: {} hub manifest(s) could not be loaded; hub check shows why\n",
                catalog.hub_problems
            ));
        }
        Ok(ExecResult::err(message, NOT_FOUND_EXIT))
    }
}
