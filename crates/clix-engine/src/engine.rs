//! One command line in, Layer 1 then Layer 2, the model's text out.

use std::path::PathBuf;
use std::sync::Arc;

use clix_present::{Capture, CommandOutput, Origin, PresentOptions, SpillSink, present};
use clix_shell::{CommandRegistry, CommandSpec, RawResult, Session, SessionConfig, SessionError, ShellLimits};

use crate::catalog::{Catalog, SharedCatalog};
use crate::commands::{Cat, Help, UnknownCommands, Write};
use crate::spill::SpillDir;

/// Everything an [`Engine`] needs to start.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub workspace: PathBuf,
    pub limits: ShellLimits,
    pub present: PresentOptions,
}

/// The result of [`Engine::run`]: the presentation and the raw facts behind it.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Exactly what the model reads, footer included.
    pub text: String,
    pub raw: RawResult,
    pub truncated: bool,
    pub spill_path: Option<String>,
}

/// A shell session with our commands, plus the presentation settings.
pub struct Engine {
    session: Session,
    catalog: Catalog,
    present: PresentOptions,
    spill: SpillDir,
}

impl Engine {
    pub async fn new(config: EngineConfig) -> Result<Self, SessionError> {
        let shared: SharedCatalog = Arc::default();
        let mut registry = CommandRegistry::new();
        registry.register(Arc::new(Help::new(Arc::clone(&shared))));
        registry.register(Arc::new(Write::new()));
        registry.register(Arc::new(Cat::new()));
        let resolver = Arc::new(UnknownCommands { catalog: Arc::clone(&shared) });
        let session = Session::new(SessionConfig {
            workspace: config.workspace,
            limits: config.limits,
            commands: registry.clone(),
            resolver: Some(resolver),
        })
        .await?;

        let agent: Vec<CommandSpec> = registry.specs().cloned().collect();
        let standard = session.command_names().into_iter().filter(|name| registry.get(name).is_none()).collect();
        let catalog = Catalog { agent, standard };
        // Set exactly once, here, before any command can read it.
        let _ = shared.set(catalog.clone());
        let spill = SpillDir::new(session.workspace());
        Ok(Engine { session, catalog, present: config.present, spill })
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Layer 1 only: the lossless result, for `--raw` and differential tests.
    pub async fn run_raw(&mut self, line: &str, stdin: Option<&[u8]>) -> RawResult {
        self.session.exec(line, stdin).await
    }

    /// Layer 1, then Layer 2 on the final result.
    pub async fn run(&mut self, line: &str, stdin: Option<&[u8]>) -> RunOutput {
        let raw = self.session.exec(line, stdin).await;
        let output = CommandOutput {
            stdout: &raw.stdout,
            stderr: &raw.stderr,
            exit_code: raw.exit_code,
            duration: raw.duration,
            timed_out: raw.timed_out,
            capture: if raw.capped {
                let limit = self.session.limits().max_output_bytes as u64;
                Capture::Capped { limit, dropped: None }
            } else {
                Capture::Complete
            },
        };
        let session = &self.session;
        let mut spill = SessionSpill { dir: &mut self.spill, session };
        let shown = present(&output, || origin(session, line), &self.present, &mut spill);
        let truncated = shown.truncated || raw.capped;
        RunOutput { text: shown.text, raw, truncated, spill_path: shown.spill_path }
    }
}

/// The spill folder, told the shell's cwd only when it is needed: reading
/// the cwd copies the shell's state, too costly for every call.
struct SessionSpill<'a> {
    dir: &'a mut SpillDir,
    session: &'a Session,
}

impl SpillSink for SessionSpill<'_> {
    fn spill(&mut self, bytes: &[u8]) -> std::io::Result<String> {
        self.dir.set_cwd(self.session.cwd());
        self.dir.spill(bytes)
    }
}

/// The last command of `line` and the file it names, if that file exists.
fn origin(session: &Session, line: &str) -> Origin {
    let cwd = session.cwd();
    let Some(last) = session.analyze(line).and_then(|a| a.commands.into_iter().last()) else {
        return Origin::default();
    };
    let path =
        last.args.iter().rev().flatten().find(|a| !a.starts_with('-')).filter(|a| cwd.join(a).is_file()).cloned();
    Origin { command: last.name, path }
}
