//! The steps of [`Engine::new`](super::Engine::new): our commands, the OS
//! tier, the capabilities' commands, then the catalog models and `help`
//! read.

use std::sync::Arc;

use clix_command::{Capability, CommandSpec, Parts, SeenImages};
use clix_sandbox::Sandbox;
use clix_shell::{CommandRegistry, CommandResolver, Shell, Workspace};

use super::OsTier;
use crate::catalog::{Catalog, SharedCatalog};
use crate::commands::{Cat, Help, OsResolver, SandboxCommand, See, StageRun, UnknownCommands, Write};

/// The commands every engine has: `help`, `write`, `cat` and `see`.
pub(super) fn own_commands(catalog: &SharedCatalog, seen: &SeenImages) -> CommandRegistry {
    let mut registry = CommandRegistry::new();
    registry.register(Arc::new(Help::new(Arc::clone(catalog))));
    registry.register(Arc::new(Write::new()));
    registry.register(Arc::new(Cat::new()));
    registry.register(Arc::new(See::new(Arc::clone(seen))));
    registry
}

/// The sandbox of the OS tier, over the workspace the session opened;
/// with a policy, every program that starts inside it is held against the
/// gate when it starts, however it was reached.
pub(super) fn open_sandbox(
    os: OsTier,
    workspace: &Workspace,
    writable: Option<&[std::path::PathBuf]>,
    gate: Option<&Arc<clix_policy::Gate>>,
) -> Result<Arc<Sandbox>, String> {
    let mut sandbox =
        Sandbox::new(os.settings, workspace.root(), os.clix_config_dir.as_deref(), os.audit_log, os.session_id)
            .with_env(&os.env);
    if let Some(gate) = gate {
        sandbox = sandbox.with_exec_judge(Arc::new(crate::policy::ExecGate(Arc::clone(gate))));
    }
    match writable {
        Some(places) => Ok(Arc::new(sandbox.confined(places).map_err(|e| e.to_string())?)),
        None => Ok(Arc::new(sandbox)),
    }
}

/// What answers a name the shell does not know: with a sandbox, the OS
/// resolver (which also brings the `sandbox` command); without one, the
/// unknown-command error alone.
pub(super) fn resolver(
    registry: &mut CommandRegistry,
    stage: Option<StageRun>,
    catalog: &SharedCatalog,
) -> Arc<dyn CommandResolver> {
    let unknown = UnknownCommands { catalog: Arc::clone(catalog) };
    let Some(stage) = stage else { return Arc::new(unknown) };
    registry.register(Arc::new(SandboxCommand::new(stage.clone())));
    Arc::new(OsResolver::new(stage, unknown))
}

/// Whether `name` already means something in the session: a command
/// registered before, or a builtin of the shell. A later command of that
/// name is left out, so the first keeps its meaning.
fn is_taken(registry: &CommandRegistry, name: &str) -> bool {
    registry.get(name).is_some() || clix_shell::builtin_names().iter().any(|b| b == name)
}

/// What the capabilities added, for the catalog, the stage explanations
/// and the notices.
#[derive(Default)]
pub(super) struct CapabilityPart {
    /// Commands that run but are not offered to the model.
    unoffered: Vec<String>,
    /// Their sections of the `run` description and `help`, in order.
    sections: Vec<String>,
    /// Their texts for placeholders of the `run` description.
    placeholders: Vec<(&'static str, String)>,
    /// The tools their sections list, in order.
    tools: Vec<String>,
    /// Where each tool runs and why, for the stage explanations.
    pub(super) tools_run: Vec<(String, (&'static str, &'static str))>,
    /// Their names that are not commands here, with each one's error.
    unavailable: Vec<(String, String)>,
    /// Lines every unknown-command error ends with.
    unknown_hints: Vec<String>,
    /// What a person should know, one line each.
    pub(super) notices: Vec<String>,
}

/// Asks each capability for its commands, in order, and registers them; a
/// name already taken keeps its meaning, and the capability's command is
/// left out with a notice.
pub(super) async fn add_capabilities(
    registry: &mut CommandRegistry,
    capabilities: &[Arc<dyn Capability>],
    parts: &Parts<'_>,
) -> Result<CapabilityPart, super::EngineError> {
    let mut part = CapabilityPart::default();
    for capability in capabilities {
        let before: &CommandRegistry = registry;
        let taken = |name: &str| is_taken(before, name);
        let added = capability.add(&Parts { taken: &taken, ..parts.clone() }).await?;
        let offered = added.offered;
        let tools_run = added.tools_run;
        let commands = added.commands.into_iter().map(|c| (c, false));
        for (command, is_tool) in commands.chain(added.tools.into_iter().map(|c| (c, true))) {
            let name = command.spec().name.clone();
            if is_taken(registry, &name) {
                part.notices.push(format!("a capability's command {name} is not added: the name is taken"));
                continue;
            }
            if is_tool {
                part.tools.push(name.clone());
                if let Some(runs) = tools_run {
                    part.tools_run.push((name.clone(), runs));
                }
            } else if !offered {
                part.unoffered.push(name.clone());
            }
            registry.register(command);
        }
        if !added.section.is_empty() {
            part.sections.push(added.section);
        }
        part.placeholders.extend(added.placeholder);
        part.unavailable.extend(added.unavailable);
        part.unknown_hints.extend(added.unknown_hint);
        part.notices.extend(added.notices);
    }
    Ok(part)
}

/// What models and `help` are told the session can run, and the `run`
/// tool's description template when the session has its own.
pub(super) fn catalog(
    registry: &CommandRegistry,
    shell: &Shell,
    added: CapabilityPart,
    run_tool_prompt: Option<clix_common::template::Template>,
) -> Catalog {
    // A capability's command it does not offer (`clip` without
    // environments, `hub` without ready tools) runs, but is not advertised.
    let advertised = |s: &CommandSpec| !added.unoffered.contains(&s.name);
    let (agent, unlisted) =
        registry.specs().filter(|s| !added.tools.contains(&s.name)).cloned().partition(|s| advertised(s));
    Catalog {
        agent,
        unlisted,
        standard: shell.command_names().into_iter().filter(|name| registry.get(name).is_none()).collect(),
        tools: added.tools.iter().filter_map(|name| registry.get(name)).map(|c| c.spec().clone()).collect(),
        unavailable: added.unavailable,
        unknown_hints: added.unknown_hints,
        sections: added.sections,
        placeholders: added.placeholders,
        run_tool_prompt,
    }
}
