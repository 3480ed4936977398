//! One command line in, Layer 1 then Layer 2, the model's text out.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clix_hub::{HubConfig, HubRuntime};
use clix_present::{Capture, CommandOutput, Origin, PresentOptions, SpillSink, present};
use clix_sandbox::{AuditLog, Sandbox, SandboxSettings};
use clix_shell::{
    CancelHandle, CommandRegistry, CommandResolver, CommandSpec, Kind, RawResult, Session, SessionConfig, SessionError,
    ShellLimits, Workspace,
};

use crate::catalog::{Catalog, HUB_SHOWN, SharedCatalog};
use crate::commands::{
    CallTime, Cat, Deadline, Help, HubCommand, HubTool, MemoryCommand, MemoryConfig, OsResolver, SandboxCommand, See,
    SeenImage, SeenImages, UnknownCommands, Write, run_program,
};
use crate::spill::SpillDir;

/// Everything an [`Engine`] needs to start.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub workspace: PathBuf,
    pub limits: ShellLimits,
    pub present: PresentOptions,
    /// The OS tier; `None` means only in-process commands exist.
    pub os: Option<OsTier>,
    /// The `memory` command's store; `None` leaves the command out.
    pub memory: Option<MemoryConfig>,
    /// Hub folders and governance; `None` leaves the hub out.
    pub hub: Option<HubConfig>,
}

/// How the OS tier of an engine is set up.
#[derive(Debug, Clone)]
pub struct OsTier {
    pub settings: SandboxSettings,
    /// clix's own config folder (it may hold API keys): never mounted.
    pub clix_config_dir: Option<PathBuf>,
    /// Where every OS execution is logged, outside the workspace.
    pub audit_log: Option<PathBuf>,
    /// Identifies this engine's calls in the audit log.
    pub session_id: String,
}

/// The result of [`Engine::run`]: the presentation and the raw facts behind it.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Exactly what the model reads, footer included.
    pub text: String,
    /// Images `see` accepted during the line, for the model's next turn.
    pub images: Vec<SeenImage>,
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
    sandbox: Option<Arc<Sandbox>>,
    deadline: Deadline,
    seen: SeenImages,
    /// Our commands and the hub's tools, to explain where a stage runs.
    commands: CommandRegistry,
    hub_tools: Vec<String>,
}

impl Engine {
    pub async fn new(config: EngineConfig) -> Result<Self, SessionError> {
        let shared: SharedCatalog = Arc::default();
        let mut registry = CommandRegistry::new();
        registry.register(Arc::new(Help::new(Arc::clone(&shared))));
        registry.register(Arc::new(Write::new()));
        registry.register(Arc::new(Cat::new()));
        let seen = SeenImages::default();
        registry.register(Arc::new(See::new(Arc::clone(&seen))));
        if let Some(memory) = config.memory {
            registry.register(Arc::new(MemoryCommand::new(memory)));
        }
        let unknown = UnknownCommands { catalog: Arc::clone(&shared) };
        let timeout = config.limits.timeout();
        // Opened once, checked once: every later access goes through this handle.
        let workspace = Workspace::open(&config.workspace)?;
        let sandbox = config.os.map(|os| {
            let audit = os.audit_log.map(|path| AuditLog { path });
            Arc::new(Sandbox::new(os.settings, workspace.root(), os.clix_config_dir.as_deref(), audit, os.session_id))
        });
        let deadline = Deadline::default();
        let resolver: Arc<dyn CommandResolver> = match &sandbox {
            Some(sandbox) => {
                registry.register(Arc::new(SandboxCommand::new(Arc::clone(sandbox), timeout, deadline.clone())));
                Arc::new(OsResolver::new(Arc::clone(sandbox), timeout, deadline.clone(), unknown))
            }
            None => Arc::new(unknown),
        };
        let mut hub_names = Vec::new();
        let (mut hub_not_ready, mut hub_problems) = (Vec::new(), 0);
        if let Some(hub_config) = config.hub {
            let mut hub = HubRuntime::load(hub_config, sandbox.clone(), Some(&workspace)).await;
            let taken =
                |name: &str| registry.get(name).is_some() || clix_shell::builtin_names().iter().any(|b| b == name);
            let clashes: Vec<String> =
                hub.ready().map(|t| t.manifest.name.clone()).filter(|name| taken(name) || name == "hub").collect();
            for name in clashes {
                hub.set_not_ready(
                    &name,
                    format!("its name is taken by the built-in command `{name}`; rename the tool"),
                );
            }
            hub_not_ready = hub
                .entries()
                .iter()
                .filter_map(|e| Some((e.tool.manifest.name.clone(), e.readiness.reason.clone()?)))
                .collect();
            hub_problems = hub.problems().len();
            let hub = Arc::new(hub);
            let time = CallTime { deadline: deadline.clone(), limit: timeout };
            registry.register(Arc::new(HubCommand::new(Arc::clone(&hub), time.clone())));
            // Usage counts come from reading the audit log: only paid for
            // when the hub is too large to list whole.
            let tools = if hub.ready().count() > HUB_SHOWN { hub.most_used(usize::MAX) } else { hub.ready().collect() };
            for tool in tools {
                hub_names.push(tool.manifest.name.clone());
                registry.register(Arc::new(HubTool::new(tool, Arc::clone(&hub), time.clone())));
            }
        }
        let session = Session::new(SessionConfig {
            workspace,
            limits: config.limits,
            commands: registry.clone(),
            resolver: Some(resolver),
        })
        .await?;

        // `hub` stays callable without ready tools (people run `clix hub check`),
        // but is not advertised to the model then: there is nothing to find.
        let advertised = |s: &&CommandSpec| !hub_names.contains(&s.name) && (s.name != "hub" || !hub_names.is_empty());
        let agent: Vec<CommandSpec> = registry.specs().filter(advertised).cloned().collect();
        let hub = hub_names.iter().filter_map(|name| registry.get(name)).map(|c| c.spec().clone()).collect();
        let standard = session.command_names().into_iter().filter(|name| registry.get(name).is_none()).collect();
        let catalog = Catalog { agent, standard, hub, hub_not_ready, hub_problems };
        // Set exactly once, here, before any command can read it.
        let _ = shared.set(catalog.clone());
        let spill = SpillDir::new(session.folder());
        Ok(Engine {
            session,
            catalog,
            present: config.present,
            spill,
            sandbox,
            deadline,
            seen,
            commands: registry,
            hub_tools: hub_names,
        })
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Cancels the line this engine is running, from another task (MCP
    /// `notifications/cancelled`, Ctrl-C). Sandboxed programs are killed.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.session.cancel_handle()
    }

    /// Layer 1 only: the lossless result, for `--raw` and differential tests.
    pub async fn run_raw(&mut self, line: &str, stdin: Option<&[u8]>) -> RawResult {
        self.execute(line, stdin, None).await.0
    }

    /// Layer 1: in-process, or whole in the sandbox's GNU bash when the line
    /// streams a file too big for the in-process engine (see [`big_file_line`]).
    async fn execute(&mut self, line: &str, stdin: Option<&[u8]>, limit: Option<Duration>) -> (RawResult, Capture) {
        let configured = self.session.limits().timeout();
        let limit = limit.map_or(configured, |l| l.min(configured));
        self.deadline.start(limit);
        if let Some(sandbox) = &self.sandbox
            && let Some(argv) = big_file_line(&self.session, sandbox, line)
        {
            let cwd = self.session.cwd();
            let started = std::time::Instant::now();
            let run = run_program(sandbox, &argv, &cwd, stdin, &self.deadline, limit);
            let result = self
                .session
                .cancel_handle()
                .guard(run)
                .await
                .unwrap_or_else(|| clix_shell::ExecResult::err("clix: cancelled\n", clix_shell::CANCELLED_EXIT));
            let raw = RawResult {
                stdout: result.stdout.into_bytes(),
                stderr: result.stderr.into_bytes(),
                exit_code: result.exit_code,
                duration: started.elapsed(),
                timed_out: None,
                capped: false,
            };
            return (raw, Capture::Complete);
        }
        if tracing::enabled!(tracing::Level::DEBUG) {
            self.explain_stages(line);
        }
        let raw = self.session.exec_within(line, stdin, Some(limit)).await;
        let capture = if raw.capped {
            Capture::Capped { limit: self.session.limits().max_output_bytes as u64, dropped: None }
        } else {
            Capture::Complete
        };
        (raw, capture)
    }

    /// Where each command of `line` runs, and why (debug events), in the
    /// order bashkit dispatches a name: a function of the line, one of our
    /// commands (a hub tool among them), one of its builtins, then the OS
    /// resolver: a program on the sandbox's PATH, else the unknown-command error.
    fn explain_stages(&self, line: &str) {
        let Some(analysis) = self.session.analyze(line) else { return };
        for (index, command) in analysis.commands.iter().enumerate() {
            let Some(name) = command.name.as_deref() else {
                if !command.is_assignment_only() {
                    tracing::debug!(
                        index,
                        runs = "decided at run time",
                        reason = "the command name is computed",
                        "stage: where it runs"
                    );
                }
                continue;
            };
            let (runs, reason, program) = self.where_runs(name, &analysis.functions);
            let program = program.map(|p| p.display().to_string());
            tracing::debug!(index, command = name, runs, reason, program, "stage: where it runs");
        }
    }

    /// (where, why, the program that runs) for the command `name`.
    fn where_runs(&self, name: &str, functions: &[String]) -> (&'static str, &'static str, Option<PathBuf>) {
        if functions.iter().any(|f| f == name) {
            return ("shell", "a function defined in this line, run by the in-process shell", None);
        }
        if self.commands.get(name).is_some() {
            return if self.hub_tools.iter().any(|t| t == name) {
                (
                    "sandbox",
                    "a hub tool: its words are checked against its manifest, its program runs in the sandbox",
                    None,
                )
            } else {
                ("clix", "one of clix's own commands, in process", None)
            };
        }
        if clix_shell::builtin_names().iter().any(|b| b == name) {
            return ("shell", "a builtin of the in-process shell (bashkit), never a host program", None);
        }
        if name.contains('/') {
            return ("shell", "a path: the in-process shell handles it; host programs run only by name", None);
        }
        match &self.sandbox {
            None => ("unknown", "not a builtin, and the OS tier is off (sandbox.mode = \"off\")", None),
            // The OS resolver's own rule: no network, no HTTP client.
            Some(sandbox) if !sandbox.settings().network && clix_shell::NETWORK_BUILTINS.contains(&name) => {
                ("unknown", "an HTTP client, and the session has no network (a person turns it on: --network)", None)
            }
            Some(sandbox) => match sandbox.program_path(name) {
                Some(path) => {
                    ("sandbox", "not a shell builtin or clix command; found on the sandbox's PATH", Some(path))
                }
                None => ("unknown", "not a builtin, not a clix command, not on the sandbox's PATH: exit 127", None),
            },
        }
    }

    /// Layer 1, then Layer 2 on the final result.
    pub async fn run(&mut self, line: &str, stdin: Option<&[u8]>) -> RunOutput {
        self.run_within(line, stdin, None).await
    }

    /// [`run`](Self::run) with a time limit for this call, capped by the configured one.
    pub async fn run_within(&mut self, line: &str, stdin: Option<&[u8]>, limit: Option<Duration>) -> RunOutput {
        let (raw, capture) = self.execute(line, stdin, limit).await;
        let output = CommandOutput {
            stdout: &raw.stdout,
            stderr: &raw.stderr,
            exit_code: raw.exit_code,
            duration: raw.duration,
            timed_out: raw.timed_out,
            capture,
        };
        let session = &self.session;
        let mut spill = SessionSpill { dir: &mut self.spill, session };
        let shown = present(&output, || origin(session, line), &self.present, &mut spill);
        let truncated = shown.truncated || raw.capped;
        let images = std::mem::take(&mut *self.seen.lock().unwrap_or_else(|p| p.into_inner()));
        RunOutput { text: shown.text, images, raw, truncated, spill_path: shown.spill_path }
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

/// Standard tools whose GNU versions stream, so a line made only of them can
/// run whole in the sandbox's bash over files of any size.
const STREAMING_TOOLS: &[&str] = &[
    "grep",
    "egrep",
    "fgrep",
    "wc",
    "sort",
    "uniq",
    "head",
    "tail",
    "cut",
    "tr",
    "sed",
    "awk",
    "cat",
    "tac",
    "nl",
    "rev",
    "md5sum",
    "sha256sum",
    "zcat",
    "gzip",
    "gunzip",
    "tee",
    "comm",
    "join",
    "paste",
    "fold",
    "expand",
];

/// Characters that make a line more than one plain command.
const SHELL_SYNTAX: &[char] = &['|', '&', ';', '<', '>', '(', ')', '$', '`', '!', '{', '}', '*', '?', '[', '\n', '#'];

/// The argv to run in the sandbox when `line` should bypass the in-process
/// engine: every command is a streaming standard tool the sandbox has, every
/// word is literal (so no session variable is needed), and some file it
/// names is at least `big_file_mb`. bashkit buffers whole files and refuses
/// inputs over its input cap; GNU tools stream them in constant memory.
/// A single plain command runs directly; anything else runs in GNU bash.
///
/// Routed lines and big files left in the shell are debug events, with why;
/// sizes are looked up for a line that could not be routed only when those
/// events are on.
fn big_file_line(session: &Session, sandbox: &Sandbox, line: &str) -> Option<Vec<String>> {
    let analysis = session.analyze(line)?;
    let dynamic = analysis.truncated
        || analysis.has_dynamic_commands
        || analysis.has_command_substitution
        || analysis.has_interpreter_reentry
        || !analysis.functions.is_empty()
        || analysis.commands.is_empty();
    let standard = !dynamic
        && analysis.commands.iter().all(|c| {
            c.name.as_deref().is_some_and(|n| STREAMING_TOOLS.contains(&n) && sandbox.has_program(n))
            && c.assignments.is_empty()
            && c.args.iter().all(Option::is_some)
            // `cat -b` is our base64, not GNU's numbering.
            && !(c.name.as_deref() == Some("cat") && c.args.iter().flatten().any(|a| a.starts_with('-')))
        });
    if !standard && !tracing::enabled!(tracing::Level::DEBUG) {
        return None;
    }
    let threshold = sandbox.settings().big_file_mb << 20;
    let cwd = session.cwd();
    let big = analysis
        .commands
        .iter()
        .flat_map(|c| c.args.iter().flatten())
        .chain(analysis.redirects.iter().filter_map(|r| r.path.as_ref()))
        // Through the handle: a word naming a place outside the workspace
        // (`../x`, a symlink out) tells nothing about it.
        .find_map(|word| {
            let meta = session.folder().metadata(&cwd.join(word)).ok()?;
            (meta.kind == Kind::File && meta.len >= threshold).then(|| (word.clone(), meta.len))
        });
    let (file, bytes) = big?;
    if !standard {
        let reason = if dynamic {
            "the line computes commands or words at run time, or defines functions"
        } else {
            "not every command is a streaming standard tool the sandbox has (grep, wc, sort, awk, …)"
        };
        tracing::debug!(
            file,
            bytes,
            threshold_bytes = threshold,
            reason,
            "big file, but the line stays in the in-process shell, which reads whole files (up to limits.max_input_bytes)"
        );
        return None;
    }
    let argv = match analysis.commands.as_slice() {
        [only] if analysis.redirects.is_empty() && !line.contains(SHELL_SYNTAX) => {
            only.name.iter().chain(only.args.iter().flatten()).cloned().collect::<Vec<_>>()
        }
        _ => ["bash", "-c", line].map(String::from).to_vec(),
    };
    tracing::debug!(
        file,
        bytes,
        threshold_bytes = threshold,
        runner = if argv[0] == "bash" { "GNU bash -c, the whole line" } else { argv[0].as_str() },
        "big-file routing: the line runs whole in the sandbox's GNU tools, which stream (sandbox.big_file_mb)"
    );
    Some(argv)
}

/// The last command of `line` and the file it names, if that file exists.
fn origin(session: &Session, line: &str) -> Origin {
    let cwd = session.cwd();
    let Some(last) = session.analyze(line).and_then(|a| a.commands.into_iter().last()) else {
        return Origin::default();
    };
    let is_file = |a: &String| session.folder().metadata(&cwd.join(a)).is_ok_and(|m| m.kind == Kind::File);
    let path = last.args.iter().rev().flatten().find(|a| !a.starts_with('-')).filter(|a| is_file(a)).cloned();
    Origin { command: last.name, path }
}
