//! One command line in, Layer 1 then Layer 2, the model's text out.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clix_present::{Capture, CommandOutput, Origin, PresentOptions, SpillSink, StageExit, present};
use clix_sandbox::{Sandbox, SandboxSettings};
use clix_shell::{
    CancelHandle, CommandRegistry, Kind, RawResult, Shell, ShellConfig, ShellError, ShellLimits, Workspace,
};

use crate::catalog::{Catalog, SharedCatalog};
use crate::commands::StageRun;
use crate::policy::{ElsewhereGate, PolicyConfig, ShellGate};
use crate::spill::SpillDir;
use clix_command::{CallTime, Deadline};
use clix_command::{SeenImage, SeenImages};

pub use control::{CallChanges, ModeError, WorkspaceControl};

mod control;
mod disk;
mod route;
mod setup;
mod stages;

/// Everything an [`Engine`] needs to start.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The folder the shell is jailed to and starts in; checked when opened
    /// (not the home folder, no clix data or secret store inside).
    pub workspace: PathBuf,
    /// Time, output and input limits of each command line (`[limits]`).
    pub limits: ShellLimits,
    /// How Layer 2 shows results: preview size, spill threshold (`[present]`).
    pub present: PresentOptions,
    /// The OS tier; `None` means only in-process commands exist.
    pub os: Option<OsTier>,
    /// The capabilities whose commands join the engine's own, in order:
    /// each capability crate's configuration (`clix_memory::MemoryConfig`,
    /// `clix_skills::SkillsConfig`, `clix_clip::ClipConfig`, …). A name
    /// taken by an earlier command keeps its meaning.
    pub capabilities: Vec<Arc<dyn clix_command::Capability>>,
    /// Rules on which commands may run (`[policy]`, policy files); `None`
    /// runs every command (the built-in rules are in `PolicyConfig::default()`).
    pub policy: Option<PolicyConfig>,
    /// The `run` tool's description template, a person's
    /// `prompts/run-tool.md` checked against [`crate::RUN_TOOL_PLACEHOLDERS`];
    /// `None`: the built-in one.
    pub run_tool_prompt: Option<clix_common::template::Template>,
    /// Checkpoints of each call and the mode (`[checkpoints]`, `--mode`);
    /// `None`: nothing kept, changes stay (eval attempts, benchmarks).
    pub control: Option<WorkspaceControl>,
}

impl EngineConfig {
    /// The shell alone on `workspace`, with the default limits and
    /// presentation; a caller adds the parts it wants
    /// (`EngineConfig { os: Some(…), ..EngineConfig::new(ws) }`). A whole
    /// session is assembled by `clix-session`, the one place that knows
    /// where each part's files live.
    pub fn new(workspace: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            workspace: workspace.into(),
            limits: ShellLimits::default(),
            present: PresentOptions::default(),
            os: None,
            capabilities: Vec::new(),
            policy: None,
            run_tool_prompt: None,
            control: None,
        }
    }
}

/// Why an engine could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The workspace cannot be used, or the shell could not start.
    #[error(transparent)]
    Shell(#[from] ShellError),
    /// A policy file is wrong: every problem, with its file and rule.
    #[error(transparent)]
    Policy(#[from] clix_policy::LoadError),
    /// A capability's configuration cannot work (a `[[clip]]` entry):
    /// every problem, with what to fix.
    #[error("{0}")]
    Capability(#[from] clix_command::CapabilityError),
    /// A plan agent's namespace cannot be set up.
    #[error("the agent's namespace: {0}")]
    Namespace(String),
    /// The mode or the checkpoints cannot be set up (review without a person, a store that cannot be written).
    #[error(transparent)]
    Control(#[from] control::ModeError),
}

/// Where a plan agent may write: its own folder and the plan's `writes`
/// for it, relative to the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    /// Its own folder (`agents/<id>`): where the shell starts and spills go.
    pub home: PathBuf,
    /// Every place it may write, `home` included.
    pub writable: Vec<PathBuf>,
}

/// How the OS tier of an engine is set up.
#[derive(Debug, Clone)]
pub struct OsTier {
    /// The sandbox: mode, network, limits, big-file threshold (`[sandbox]`).
    pub settings: SandboxSettings,
    /// clix's own config folder (it may hold API keys): never mounted.
    pub clix_config_dir: Option<PathBuf>,
    /// Where every OS execution is logged, outside the workspace.
    pub audit_log: Option<clix_audit::AuditLog>,
    /// Identifies this engine's calls in the audit log.
    pub session_id: String,
    /// Variables set for every program the sandbox runs, over the ones it
    /// passes on: what the engine's caller tells its programs.
    pub env: Vec<(String, String)>,
}

/// The result of [`Engine::run`]: the presentation and the raw facts behind it.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Exactly what the model reads, footer included.
    pub text: String,
    /// What the call changed in the workspace, and what the person said of it.
    pub changes: CallChanges,
    /// Images `see` accepted during the line, for the model's next turn.
    pub images: Vec<SeenImage>,
    /// Layer 1's lossless result: both streams, exit code, duration.
    pub raw: RawResult,
    /// The text shows only part of the output (a preview, or past the capture cap).
    pub truncated: bool,
    /// Where the full output was saved when it was too long to show, as the
    /// next command line can open it.
    pub spill_path: Option<String>,
    /// The exit code the model is told (the footer's): `raw.exit_code`,
    /// except 1 when a 0-exit line's stdout was withheld as binary.
    pub exit_code: i32,
    /// The pipeline stages the footer names as failed (`[exit:0 | jq exit 5
    /// | 4ms]`): a stage other than a pipeline's last whose failure the
    /// line's code does not show. Empty when none failed.
    pub failed_stages: Vec<StageExit>,
}

/// A shell session with our commands, plus the presentation settings.
pub struct Engine {
    shell: Shell,
    catalog: Catalog,
    present: PresentOptions,
    spill: SpillDir,
    sandbox: Option<Arc<Sandbox>>,
    deadline: Deadline,
    seen: SeenImages,
    /// Our commands and the capabilities', to explain where a stage runs.
    commands: CommandRegistry,
    /// Where each capability's tool runs, and why.
    tools_run: Vec<(String, (&'static str, &'static str))>,
    gate: Option<Arc<clix_policy::Gate>>,
    control: control::Control,
    /// See [`Engine::notices`].
    notices: Vec<String>,
}

impl Engine {
    /// Opens the workspace, sets up our commands, the OS tier and the capabilities
    /// as `config` asks, and starts the shell session.
    pub async fn new(config: EngineConfig) -> Result<Self, EngineError> {
        Self::start(config, None).await
    }

    /// [`Engine::new`] for an agent of a plan: the workspace is readable
    /// everywhere and writable only in `namespace`'s places, for the shell,
    /// our commands and the sandbox's programs alike; the shell starts in
    /// the agent's own folder, where its spilled outputs go too.
    pub async fn confined(config: EngineConfig, namespace: Namespace) -> Result<Self, EngineError> {
        Self::start(config, Some(namespace)).await
    }

    async fn start(config: EngineConfig, namespace: Option<Namespace>) -> Result<Self, EngineError> {
        let shared: SharedCatalog = Arc::default();
        let seen = SeenImages::default();
        let mut registry = setup::own_commands(&shared, &seen);
        // Opened once, checked once: every later access goes through this handle.
        let mut workspace = Workspace::open(&config.workspace).map_err(ShellError::from)?;
        let mut notices = Vec::new();
        let hidden = workspace.hidden_at_top();
        if !hidden.is_empty() {
            notices.push(format!(
                "hidden from the agent and its programs: {} (secret stores; nested ones too)",
                hidden.join(", ")
            ));
        }
        if let Some(ns) = &namespace {
            workspace = workspace.confined(&ns.writable).map_err(|e| EngineError::Namespace(e.to_string()))?;
        }
        let (control, workspace) = control::Control::open(config.control, workspace)?;
        let gate = match &config.policy {
            Some(policy) => Some(crate::policy::gate(crate::policy::load(policy, &workspace)?, policy, &workspace)),
            None => None,
        };
        // A read-only session's programs may write only clix's spills, as its shell.
        let writable = match (&namespace, control.mode) {
            (Some(ns), _) => Some(ns.writable.clone()),
            (None, clix_checkpoint::WorkMode::ReadOnly) => Some(vec![PathBuf::from(control::SPILLS)]),
            (None, _) => None,
        };
        let sandbox = match config.os {
            Some(os) => Some(
                setup::open_sandbox(os, &workspace, writable.as_deref(), gate.as_ref())
                    .map_err(EngineError::Namespace)?,
            ),
            None => None,
        };
        let deadline = Deadline::default();
        let time = CallTime { deadline: deadline.clone(), limit: config.limits.timeout() };
        // How a program runs as a stage of a line: one rule for the OS
        // resolver, `sandbox` and the capabilities' scripts.
        let stage = sandbox.as_ref().map(|sandbox| StageRun {
            sandbox: Arc::clone(sandbox),
            timeout: time.limit,
            deadline: time.deadline.clone(),
            output_cap: config.limits.max_memory_bytes,
        });
        let resolver = setup::resolver(&mut registry, stage.clone(), &shared);
        let parts = clix_command::Parts {
            workspace: &workspace,
            time: &time,
            output_cap: config.limits.max_memory_bytes,
            stages: stage.map(|stage| Arc::new(stage) as Arc<dyn clix_command::StageRunner>),
            sandbox: sandbox.clone(),
            seen: &seen,
            judge: gate.clone().map(|g| Arc::new(ElsewhereGate(g)) as Arc<dyn clix_command::LineJudge>),
            // Each capability is told the names taken before it.
            taken: &|_| false,
        };
        let mut added = setup::add_capabilities(&mut registry, &config.capabilities, &parts).await?;
        notices.extend(added.notices.iter().cloned());
        let tools_run = std::mem::take(&mut added.tools_run);
        let shell = Shell::new(ShellConfig {
            workspace,
            limits: config.limits,
            commands: registry.clone(),
            resolver: Some(resolver),
            gate: gate.clone().map(|g| Arc::new(ShellGate(g)) as Arc<dyn clix_shell::CommandGate>),
            start_in: namespace.as_ref().map(|ns| ns.home.clone()),
        })
        .await?;
        let catalog = setup::catalog(&registry, &shell, added, config.run_tool_prompt);
        // Set exactly once, here, before any command can read it.
        let _ = shared.set(catalog.clone());
        let spill = match &namespace {
            Some(ns) => {
                SpillDir::new(&shell.folder().open_dir(&ns.home).map_err(|e| EngineError::Namespace(e.to_string()))?)
            }
            None => SpillDir::new(shell.folder()),
        };
        Ok(Engine {
            shell,
            catalog,
            present: config.present,
            spill,
            sandbox,
            deadline,
            seen,
            commands: registry,
            tools_run,
            gate,
            control,
            notices,
        })
    }

    /// What a person should know about this engine, found as it started:
    /// the secret stores it hides, skills that did not load. One line
    /// each; the front-end decides how often to say them.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The session's mode: `auto`, `review` or `read-only`.
    pub fn mode(&self) -> clix_checkpoint::WorkMode {
        self.control.mode
    }

    /// Switches between `auto` and `review` for the calls that follow.
    /// `read-only` is set when an engine starts (its shell's handle and its
    /// sandbox's mounts are opened read-only), so it is neither entered nor
    /// left here: the error says so.
    pub fn set_mode(&mut self, mode: clix_checkpoint::WorkMode) -> Result<(), control::ModeError> {
        self.control.set_mode(mode)
    }

    /// The calls that follow belong to run `run` (an agent's run id): their
    /// checkpoints are its steps, for `clix diff` and `clix undo`.
    pub fn set_checkpoint_run(&mut self, run: &str) {
        self.control.set_run(run);
    }

    /// The session's policy gate (its rules, context and answers), when it has one.
    pub fn policy(&self) -> Option<&clix_policy::Gate> {
        self.gate.as_deref()
    }

    /// What this engine can run, as the `run` tool's description and `help` list it.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The shell session: its workspace, cwd and limits.
    pub fn shell(&self) -> &Shell {
        &self.shell
    }

    /// Cancels the line this engine is running, from another task (MCP
    /// `notifications/cancelled`, Ctrl-C). Sandboxed programs are killed.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.shell.cancel_handle()
    }

    /// Layer 1 only: the lossless result, for `--raw` and differential tests.
    pub async fn run_raw(&mut self, line: &str, stdin: Option<&[u8]>) -> RawResult {
        self.execute(line, stdin, None).await.0
    }

    /// Layer 1: in-process, or whole in the sandbox's GNU tools when the
    /// line streams a big file or walks a big tree (see
    /// [`route::routed_line`]).
    async fn execute(&mut self, line: &str, stdin: Option<&[u8]>, limit: Option<Duration>) -> (RawResult, Capture) {
        let budget = self.shell.limits().max_workspace_growth_bytes;
        let watch = disk::DiskWatch::start(self.shell.folder(), budget, self.shell.cancel_handle());
        let (raw, capture) = self.execute_watched(line, stdin, limit).await;
        match watch.and_then(disk::DiskWatch::finish) {
            Some(message) => {
                // The watch's cancel is spent on this line, never the next.
                self.shell.cancel_handle().clear();
                // The limit's line says why the line ended; the cancel's would only repeat it.
                let cancelled = clix_shell::CANCELLED_MESSAGE.as_bytes();
                let stderr = raw.stderr.split_inclusive(|b| *b == b'\n').filter(|l| *l != cancelled);
                let stderr: Vec<u8> = stderr.flatten().copied().collect();
                (RawResult::stopped_outside(raw.stdout, stderr, &message, raw.duration), capture)
            }
            None => (raw, capture),
        }
    }

    /// [`execute`](Self::execute) without the disk's watch.
    async fn execute_watched(
        &mut self,
        line: &str,
        stdin: Option<&[u8]>,
        limit: Option<Duration>,
    ) -> (RawResult, Capture) {
        let configured = self.shell.limits().timeout();
        let limit = limit.map_or(configured, |l| l.min(configured));
        self.deadline.start(limit);
        if let Some(sandbox) = &self.sandbox
            && let Some(argv) = route::routed_line(&self.shell, sandbox, line)
        {
            // The shell's hook never sees this line: the gate reads it whole.
            if let Some(gate) = &self.gate
                && let Err(message) = gate.admit_line(line, Some(&self.shell.cwd()))
            {
                return (
                    RawResult::refused(Vec::new(), Vec::new(), &message.message, Duration::ZERO),
                    Capture::Complete,
                );
            }
            let raw = self.run_whole_in_sandbox(sandbox, &argv, stdin, limit).await;
            return (raw, Capture::Complete);
        }
        if tracing::enabled!(tracing::Level::DEBUG) {
            self.explain_stages(line);
        }
        // Output past the shell's memory limit is an error the shell reports
        // itself (`raw.capped`, a non-zero exit), not a capture cap.
        let raw = self.shell.exec_within(line, stdin, Some(limit)).await;
        (raw, Capture::Complete)
    }

    /// A routed line: `argv` in the sandbox, cancellable like any line, and
    /// stopped like any line when its output passes the memory budget.
    async fn run_whole_in_sandbox(
        &self,
        sandbox: &Arc<Sandbox>,
        argv: &[String],
        stdin: Option<&[u8]>,
        limit: Duration,
    ) -> RawResult {
        let cwd = self.shell.cwd();
        let started = std::time::Instant::now();
        let limits = self.shell.limits();
        let stage = StageRun {
            sandbox: Arc::clone(sandbox),
            timeout: limit,
            deadline: self.deadline.clone(),
            output_cap: limits.max_memory_bytes,
        };
        // A routed line is a few streaming tools over files: no variable of the session matters to them.
        let run = stage.run(argv, &cwd, stdin, &[]);
        let result = match self.shell.cancel_handle().guard(run).await {
            Some(Ok(result)) => result,
            Some(Err(limit)) => return RawResult::stopped_by(&limit, limits, started.elapsed()),
            None => clix_shell::ExecResult::err(clix_shell::CANCELLED_MESSAGE, clix_shell::CANCELLED_EXIT),
        };
        RawResult {
            stdout: result.stdout.into_bytes(),
            stderr: result.stderr.into_bytes(),
            exit_code: result.exit_code,
            duration: started.elapsed(),
            timed_out: None,
            capped: false,
            // GNU bash ran it: its stages' codes stay inside the sandbox.
            pipelines: Vec::new(),
        }
    }

    /// Layer 1, then Layer 2 on the final result.
    pub async fn run(&mut self, line: &str, stdin: Option<&[u8]>) -> RunOutput {
        self.run_within(line, stdin, None).await
    }

    /// [`run`](Self::run) with a time limit for this call, capped by the configured one.
    pub async fn run_within(&mut self, line: &str, stdin: Option<&[u8]>, limit: Option<Duration>) -> RunOutput {
        let problem = self.control.before();
        let (mut raw, capture) = self.execute(line, stdin, limit).await;
        let changes = self.control.after(line, problem);
        self.tell_control(&mut raw, &changes);
        let pipelines: Vec<Vec<StageExit>> = raw
            .pipelines
            .iter()
            .map(|p| {
                p.stages.iter().map(|s| StageExit { command: s.command.clone(), exit_code: s.exit_code }).collect()
            })
            .collect();
        let output = CommandOutput {
            stdout: &raw.stdout,
            stderr: &raw.stderr,
            exit_code: raw.exit_code,
            duration: raw.duration,
            timed_out: raw.timed_out,
            capture,
            pipelines: &pipelines,
        };
        let shell = &self.shell;
        let mut spill = ShellSpill { dir: &mut self.spill, shell };
        let shown = present(&output, || origin(shell, line), &self.present, &mut spill);
        let truncated = shown.truncated || raw.capped;
        let images = std::mem::take(&mut *self.seen.lock().unwrap_or_else(|p| p.into_inner()));
        RunOutput {
            text: shown.text,
            images,
            raw,
            truncated,
            spill_path: shown.spill_path,
            exit_code: shown.exit_code,
            failed_stages: shown.failed_stages,
            changes,
        }
    }

    /// What the model must know of the person's control, on the line's
    /// stderr: a write refused by the read-only mode, changes declined, a
    /// checkpoint that could not be kept.
    fn tell_control(&self, raw: &mut RawResult, changes: &CallChanges) {
        let mut notes = Vec::new();
        if self.control.mode == clix_checkpoint::WorkMode::ReadOnly
            && raw.exit_code != 0
            && String::from_utf8_lossy(&raw.stderr).contains("Read-only file system")
        {
            notes.push(format!("clix: {}", control::READ_ONLY));
        }
        if changes.declined {
            notes.push(
                "clix: the person declined this call's changes (review mode): the workspace is as it was \
                 before the call. Ask what they want, or try another way."
                    .to_string(),
            );
        }
        if let Some(problem) = &changes.problem {
            notes.push(format!("clix: {problem}"));
        }
        for note in notes {
            if !raw.stderr.is_empty() && !raw.stderr.ends_with(b"\n") {
                raw.stderr.push(b'\n');
            }
            raw.stderr.extend_from_slice(note.as_bytes());
            raw.stderr.push(b'\n');
        }
    }
}

/// The spill folder, told the shell's cwd only when it is needed: reading
/// the cwd copies the shell's state, too costly for every call.
struct ShellSpill<'a> {
    dir: &'a mut SpillDir,
    shell: &'a Shell,
}

impl SpillSink for ShellSpill<'_> {
    fn spill(&mut self, bytes: &[u8]) -> std::io::Result<String> {
        self.dir.set_cwd(self.shell.cwd());
        self.dir.spill(bytes)
    }
}

/// The last command of `line` and the file it names, if that file exists.
fn origin(shell: &Shell, line: &str) -> Origin {
    let cwd = shell.cwd();
    let Some(last) = shell.analyze(line).and_then(|a| a.commands.into_iter().last()) else {
        return Origin::default();
    };
    let is_file = |a: &String| shell.folder().metadata(&cwd.join(a)).is_ok_and(|m| m.kind == Kind::File);
    let path = last.args.iter().rev().flatten().find(|a| !a.starts_with('-')).filter(|a| is_file(a)).cloned();
    let asked_help = last.args.iter().flatten().any(|a| a == "--help");
    Origin { command: last.name, path, asked_help }
}
