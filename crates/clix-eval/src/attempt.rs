//! One attempt's world: a fresh workspace and its own CLIX_HOME, the task's
//! files and setup, the tools of a design, and the scoring at the end.
//!
//! Attempts never see each other: each has its own folder (`clix-eval-N`,
//! the same name run after run, see [`crate::attempt_dir`]) holding
//! `ws/` (the workspace) and `home/` (config, data with the memory store,
//! state with the audit log and the hub cache). Setup lines and `command:`
//! checks run through clix's shell with its sandbox (and the task's hub, if
//! it has one), on that workspace and home, and are never shown to the model
//! or counted. A task's MCP server is an `[[mcp.server]]` entry of the
//! attempt's own settings (the isolated session's config), so under `run`
//! it is a command, and `mcp-direct` offers its tools directly.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clix_config::Paths;
use clix_engine::{Engine, EngineConfig, PresentOptions, SandboxMode};
use clix_engine::{SandboxSettings, ShellLimits};
use clix_sandbox::{AuditLog, Availability, Sandbox};
use clix_session::{Parts, Session};
use clix_workspace::Workspace;

use crate::attempt_dir::AttemptDir;
use crate::checks::{Check, CheckResult, Score, command_verdict};
use crate::designs::{BashTools, Design, Executor, McpDirectTools, RunTools, TypedTools};
use crate::paths::PathMap;
use crate::task::{Step, Task};
use crate::trace::Trace;

/// The memory topic of every attempt (each attempt has its own store).
const TOPIC: &str = "eval";

/// How attempts are set up; one value serves a whole run.
#[derive(Debug, Clone)]
pub struct AttemptOptions {
    /// The OS tier: `bash` and `typed` need it, `run` uses it for real programs.
    pub sandbox: SandboxSettings,
    /// Limits of one command line (its time limit is each call's).
    pub limits: ShellLimits,
    /// Layer 2's thresholds, for the `run` design.
    pub present: PresentOptions,
    /// Wall time of a whole attempt when the task gives no `timeout_secs`.
    pub timeout: Duration,
    /// Model turns of an attempt when the task gives no `max_steps`
    /// (bashkit-eval's default).
    pub max_steps: u32,
    /// Keep each attempt's folder after it ends (for looking at it later).
    pub keep: bool,
    /// Where attempt folders are made; the system's temporary folder by default.
    pub parent: Option<PathBuf>,
}

impl Default for AttemptOptions {
    fn default() -> Self {
        AttemptOptions {
            sandbox: SandboxSettings::default(),
            limits: ShellLimits::default(),
            present: PresentOptions::default(),
            timeout: Duration::from_secs(300),
            max_steps: 10,
            keep: false,
            parent: None,
        }
    }
}

/// Why an attempt could not be set up: the harness or the task is at
/// fault, not the model, so it is reported as an error, never as a fail.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AttemptError {
    /// The temporary folders or the task's files could not be made.
    #[error("cannot prepare the attempt: {0}")]
    Prepare(String),
    /// A setup line failed.
    #[error("setup line {index} `{line}` exited {exit_code}: {output}")]
    Setup {
        /// Its position, from 1.
        index: usize,
        /// The line as run (mapped).
        line: String,
        /// Its exit code.
        exit_code: i32,
        /// What it printed on stderr (or stdout).
        output: String,
    },
    /// The design's tools could not start.
    #[error("cannot start the {design} tools: {reason}")]
    Tools {
        /// Which design.
        design: Design,
        /// Why, and what to do.
        reason: String,
    },
}

/// Copies the task's hub folder (see `hub_folder`) into the workspace's
/// `.clix/hub`, where it is as untrusted as any workspace's tools.
fn copy_hub(from: &Path, workspace: &Workspace) -> std::io::Result<()> {
    let to = Path::new(".clix").join("hub");
    workspace.create_dir(&to, true)?;
    for file in crate::hub_folder::files(from)? {
        let path = to.join(&file.path);
        if let Some(parent) = path.parent() {
            workspace.create_dir(parent, true)?;
        }
        workspace.write(&path, &file.bytes)?;
        workspace.chmod(&path, file.mode & 0o755)?;
    }
    Ok(())
}

/// A prepared attempt of one task.
pub struct Attempt {
    _dir: AttemptDir,
    root: PathBuf,
    workspace: Workspace,
    home: PathBuf,
    map: PathMap,
    prompt: String,
    system: Option<String>,
    checks: Vec<(String, f64)>,
    /// Whether the task has a hub (copied into the workspace's `.clix/hub`).
    hub: bool,
    /// The task's MCP server.
    mcp: Option<clix_mcp_client::ServerEntry>,
    options: AttemptOptions,
    session: String,
    timeout: Duration,
    max_steps: u32,
}

impl Attempt {
    /// Makes the attempt's folders, writes the task's files (paths and text
    /// mapped) and runs its setup lines.
    pub async fn prepare(task: &Task, options: &AttemptOptions) -> Result<Attempt, AttemptError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| AttemptError::Prepare(format!("{what}: {e}"));
        let parent = options.parent.clone().unwrap_or_else(std::env::temp_dir);
        let dir = AttemptDir::create(&parent, options.keep).map_err(|e| fail("attempt folder", &e))?;
        let root = dir.path().to_path_buf();
        let home = root.join("home");
        for sub in ["ws", "home/data", "home/state", "home/cache"] {
            std::fs::create_dir_all(root.join(sub)).map_err(|e| fail(sub, &e))?;
        }
        let workspace = Workspace::open(&root.join("ws")).map_err(|e| fail("workspace", &e))?;
        let map = PathMap::for_task(task, workspace.root());
        // The virtual filesystem these paths come from had its folders (/tmp,
        // /home …) already; so does the attempt.
        for folder in map.roots.values() {
            workspace.create_dir(Path::new(folder), true).map_err(|e| fail("mapped folder", &e))?;
        }
        for (path, content) in &task.files {
            let path = PathBuf::from(map.apply(path));
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                workspace.create_dir(parent, true).map_err(|e| fail("task file folder", &e))?;
            }
            workspace.write(&path, map.apply(content).as_bytes()).map_err(|e| fail("task file", &e))?;
        }
        if let Some(hub) = &task.hub {
            copy_hub(hub, &workspace).map_err(|e| fail(&format!("the task's hub folder {}", hub.display()), &e))?;
        }
        let attempt = Attempt {
            _dir: dir,
            home,
            map: map.clone(),
            prompt: map.apply(&task.prompt),
            system: task.system.as_deref().map(|s| map.apply(s)),
            checks: task.expectations.iter().map(|e| (map.apply(e.check.spec()), e.weight)).collect(),
            hub: task.hub.is_some(),
            mcp: task.mcp.clone(),
            options: options.clone(),
            session: format!("eval-{}-{}", task.id, std::process::id()),
            timeout: task.timeout_secs.map_or(options.timeout, Duration::from_secs),
            max_steps: task.max_steps.unwrap_or(options.max_steps),
            root,
            workspace,
        };
        attempt.setup(&task.setup).await?;
        Ok(attempt)
    }

    async fn setup(&self, lines: &[String]) -> Result<(), AttemptError> {
        if lines.is_empty() {
            return Ok(());
        }
        let prepare = |e: String| AttemptError::Prepare(format!("the setup shell: {e}"));
        let config = self.engine_config(self.hub).map_err(prepare)?;
        let mut engine = Engine::new(config).await.map_err(|e| prepare(e.to_string()))?;
        for (index, line) in lines.iter().enumerate() {
            let line = self.map.apply(line);
            let raw = engine.run_raw(&line, None).await;
            if raw.exit_code != 0 {
                let said = if raw.stderr.is_empty() { &raw.stdout } else { &raw.stderr };
                return Err(AttemptError::Setup {
                    index: index + 1,
                    line,
                    exit_code: raw.exit_code,
                    output: String::from_utf8_lossy(said).trim().chars().take(300).collect(),
                });
            }
        }
        Ok(())
    }

    /// The prompt, paths mapped.
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// The task's own system prompt, paths mapped.
    pub fn system(&self) -> Option<&str> {
        self.system.as_deref()
    }

    /// Where the task's absolute paths are in this attempt.
    pub fn map(&self) -> &PathMap {
        &self.map
    }

    /// The attempt's workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The attempt's CLIX_HOME (config, `data/`, `state/`, `cache/`).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The folder holding the workspace and the home (kept when asked).
    pub fn folder(&self) -> &Path {
        &self.root
    }

    /// Wall time the whole attempt may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Model turns the attempt may take.
    pub fn max_steps(&self) -> u32 {
        self.max_steps
    }

    /// The task's reference steps for `design`, paths mapped.
    pub fn solution(&self, task: &Task, design: Design) -> Option<Vec<Step>> {
        task.solution(design).map(|steps| steps.iter().map(|s| self.map.apply_step(s)).collect())
    }

    /// The tools of `design` over this attempt's workspace.
    pub async fn executor(&self, design: Design) -> Result<Executor, AttemptError> {
        let tools = |reason: String| AttemptError::Tools { design, reason };
        Ok(match design {
            Design::Run => {
                if let Some(entry) = &self.mcp {
                    let lists = Paths::at_home(&self.home).mcp_tool_lists();
                    let sandbox = self.sandbox().map_err(tools)?;
                    crate::mcp_server::keep_tool_list(entry, sandbox, self.workspace.root(), &lists)
                        .await
                        .map_err(tools)?;
                }
                Executor::Run(
                    RunTools::open(self.engine_config(true).map_err(tools)?).await.map_err(|e| tools(e.to_string()))?,
                )
            }
            Design::Bash => Executor::Bash(self.bash().map_err(tools)?),
            Design::Typed => Executor::Typed(TypedTools::new(self.workspace.clone(), self.bash().map_err(tools)?)),
            Design::McpDirect => {
                let entry = self.mcp.clone().ok_or_else(|| tools("the task has no MCP server".into()))?;
                let direct = McpDirectTools::open(entry, self.sandbox().map_err(tools)?, self.workspace.clone());
                Executor::McpDirect(direct.await.map_err(tools)?)
            }
        })
    }

    fn bash(&self) -> Result<BashTools, String> {
        Ok(BashTools::new(self.sandbox()?, self.workspace.root().to_path_buf(), self.options.limits.timeout()))
    }

    /// The attempt's sandbox: its workspace, its home, its audit log.
    fn sandbox(&self) -> Result<Sandbox, String> {
        let settings = &self.options.sandbox;
        match settings.mode {
            SandboxMode::Off => return Err("it runs real programs in the sandbox, and sandbox.mode is off".into()),
            SandboxMode::Bwrap => {
                if let Availability::Unavailable(why) = clix_sandbox::probe() {
                    return Err(format!(
                        "the sandbox is unavailable: {why}; install bubblewrap (apt-get install bubblewrap)"
                    ));
                }
            }
            SandboxMode::Host => {}
        }
        let audit = AuditLog::new(self.home.join("state/audit.jsonl"));
        Ok(Sandbox::new(settings.clone(), self.workspace.root(), Some(&self.home), Some(audit), self.session.clone()))
    }

    /// The engine of this attempt, as `clix ask` would make it on this
    /// workspace with this home (`clix-session` assembles both): the OS
    /// tier, the memory store, the built-in policy with no one to answer an
    /// `ask`, (when `with_hub`) the hub with the task's folder, which lies
    /// in the workspace's `.clix/hub` and is so untrusted, and the task's
    /// MCP server as a command. Nothing of
    /// the process running the eval (its keys, `CLIX_HUB_PATH`) reaches it.
    fn engine_config(&self, with_hub: bool) -> Result<EngineConfig, String> {
        let mut settings = clix_session::Settings {
            sandbox: self.options.sandbox.clone(),
            limits: self.options.limits.clone(),
            present: self.options.present.clone(),
            ..Default::default()
        };
        settings.memory.topic = TOPIC.into();
        settings.mcp.server = self.mcp.iter().cloned().collect();
        let parts = Parts { hub: with_hub, browser: false, clip: false, ..Parts::ALL };
        Session::isolated(Paths::at_home(&self.home), settings, self.workspace.root())
            .id(self.session.clone())
            .parts(parts)
            .engine_config()
            .map_err(|e| format!("{e:#}"))
    }

    /// Scores `trace`: the checks that read the trace and the files first,
    /// then the `command:` checks (which may change the workspace) through
    /// clix's shell on this workspace and home.
    pub async fn score(&self, trace: &Trace) -> Score {
        let mut results: Vec<Option<CheckResult>> = Vec::with_capacity(self.checks.len());
        let mut commands = Vec::new();
        for (index, (spec, weight)) in self.checks.iter().enumerate() {
            let result =
                |(passed, detail): (bool, String)| CheckResult { check: spec.clone(), passed, weight: *weight, detail };
            match Check::parse(spec) {
                Err(e) => results.push(Some(result((false, e.to_string())))),
                Ok(check) => match check.evaluate(trace, &self.workspace) {
                    Some(verdict) => results.push(Some(result(verdict))),
                    None => {
                        commands.push((index, check.command().unwrap_or_default().to_string()));
                        results.push(None);
                    }
                },
            }
        }
        if !commands.is_empty() {
            let engine = match self.engine_config(self.hub) {
                Ok(config) => Engine::new(config).await.map_err(|e| e.to_string()),
                Err(e) => Err(e),
            };
            let mut engine = engine.map_err(|e| format!("the check shell did not start: {e}"));
            for (index, line) in commands {
                let verdict = match &mut engine {
                    Ok(engine) => {
                        let raw = engine.run_raw(&line, None).await;
                        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                        command_verdict(raw.exit_code, &text(&raw.stdout), &text(&raw.stderr))
                    }
                    Err(e) => (false, e.clone()),
                };
                let (spec, weight) = &self.checks[index];
                results[index] =
                    Some(CheckResult { check: spec.clone(), passed: verdict.0, weight: *weight, detail: verdict.1 });
            }
        }
        Score::of(results.into_iter().flatten().collect())
    }
}
