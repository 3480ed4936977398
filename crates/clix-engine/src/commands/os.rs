//! Real programs, found on the host PATH, run through the sandbox.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bashkit::{Builtin, LimitExceeded};
use clix_command::Deadline;
use clix_sandbox::{Outcome, Request, Sandbox};
use clix_shell::{BuiltinContext, CommandResolver, ExecResult, async_trait};

use super::UnknownCommands;

/// Exit code of a command that was found but cannot run, as in bash.
const CANNOT_RUN_EXIT: i32 = clix_common::exit::CANNOT_RUN;

/// Where the OS tier sends a name that is neither a shell builtin nor one of
/// ours: the one rule [`OsResolver`] follows and the engine's stage
/// explanation reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostChoice {
    /// An HTTP client (`curl`, `wget`, `http`) while the session has no
    /// network: the error says so, and how a person turns it on.
    NoNetwork,
    /// Found on the sandbox's PATH: this program runs in the sandbox.
    Program(PathBuf),
    /// Nowhere: the navigating unknown-command error, exit 127.
    Unknown,
}

impl HostChoice {
    /// The choice for `name`; `program` looks it up on the sandbox's PATH.
    fn decide(network: bool, name: &str, program: impl FnOnce() -> Option<PathBuf>) -> Self {
        if !network && clix_shell::NETWORK_BUILTINS.contains(&name) {
            return HostChoice::NoNetwork;
        }
        program().map_or(HostChoice::Unknown, HostChoice::Program)
    }

    /// The choice for `name` in `sandbox`, looked up afresh.
    pub(crate) fn of(sandbox: &Sandbox, name: &str) -> Self {
        Self::decide(sandbox.settings().network, name, || sandbox.program_path(name))
    }

    /// Where the stage runs, for debug events: `sandbox` or `unknown`.
    pub(crate) fn runs(&self) -> &'static str {
        match self {
            HostChoice::Program(_) => "sandbox",
            HostChoice::NoNetwork | HostChoice::Unknown => "unknown",
        }
    }

    /// Why, for debug events.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            HostChoice::NoNetwork => "an HTTP client, and the session has no network (a person turns it on: --network)",
            HostChoice::Program(_) => "not a shell builtin or clix command; found on the sandbox's PATH",
            HostChoice::Unknown => "not a builtin, not a clix command, not on the sandbox's PATH: exit 127",
        }
    }

    /// The program that runs, if one does.
    pub(crate) fn program(&self) -> Option<&Path> {
        match self {
            HostChoice::Program(path) => Some(path),
            HostChoice::NoNetwork | HostChoice::Unknown => None,
        }
    }
}

/// The OS tier in front of the unknown-command fallback: a name that exists
/// on the sandbox's PATH runs there; any other name gets the navigating error.
/// So do the HTTP clients (`curl`, `wget`, `http`) when the session has no
/// network: the error says so, and how a person turns it on.
pub(crate) struct OsResolver {
    stage: StageRun,
    fallback: UnknownCommands,
    /// PATH lookups, cached: bashkit asks on every unresolved name.
    known: Mutex<HashMap<String, Option<PathBuf>>>,
}

impl OsResolver {
    pub(crate) fn new(stage: StageRun, fallback: UnknownCommands) -> Self {
        OsResolver { stage, fallback, known: Mutex::default() }
    }

    fn program_path(&self, name: &str) -> Option<PathBuf> {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.entry(name.to_string()).or_insert_with(|| self.stage.sandbox.program_path(name)).clone()
    }
}

impl CommandResolver for OsResolver {
    /// Called by bashkit at run time, for the name of the stage about to run;
    /// the debug event is the decision itself, also for a name computed by
    /// the line (`$tool x`), which the stage explanation made before the
    /// line ran can only call "decided at run time".
    fn resolve(&self, name: &str) -> Option<Arc<dyn Builtin>> {
        let network = self.stage.sandbox.settings().network;
        let choice = HostChoice::decide(network, name, || self.program_path(name));
        tracing::debug!(
            command = name,
            runs = choice.runs(),
            reason = choice.reason(),
            program = choice.program().map(|p| p.display().to_string()),
            "OS resolver: a name the shell does not know"
        );
        if choice.program().is_none() {
            return Some(self.fallback.command(name, network));
        }
        let program = OsProgram { name: name.to_string(), stage: self.stage.clone(), network };
        Some(Arc::new(program))
    }
}

/// One host program, run in the sandbox with the pipeline's stdin and cwd.
struct OsProgram {
    name: String,
    stage: StageRun,
    network: bool,
}

#[async_trait]
impl Builtin for OsProgram {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        // An editor opened on a file would wait for keys until the time limit.
        if let Some(advice) = clix_present::needs_a_terminal(&self.name, ctx.args) {
            return Ok(ExecResult::err(format!("[error] {advice}\n"), CANNOT_RUN_EXIT));
        }
        let argv: Vec<String> = std::iter::once(self.name.clone()).chain(ctx.args.iter().cloned()).collect();
        let stdin = ctx.stdin.map(|s| s.as_bytes());
        let env = clix_command::exported_env(ctx.env);
        let mut result = self.stage.run(&argv, ctx.cwd, stdin, &env).await.map_err(bashkit::Error::ResourceLimit)?;
        // An installed editor, package manager or network client that failed
        // most likely failed for a reason of this place (no terminal, no
        // network): say what works instead, after the program's own words.
        if result.exit_code != 0
            && let Some(hint) = clix_present::failure_hint(&self.name, self.network)
        {
            let mut stderr = std::mem::take(&mut result.stderr).into_bytes();
            stderr.extend_from_slice(format!("clix: {hint}\n").as_bytes());
            result.stderr = stderr.into();
        }
        Ok(result)
    }
}

/// How a sandboxed stage of a line runs: in which sandbox, within what is
/// left of the line's time limit, and keeping at most the line's memory
/// budget of each of its output streams.
#[derive(Clone)]
pub(crate) struct StageRun {
    pub(crate) sandbox: Arc<Sandbox>,
    pub(crate) timeout: Duration,
    pub(crate) deadline: Deadline,
    /// Bytes of stdout and of stderr kept: `[limits] max_memory_bytes`.
    pub(crate) output_cap: usize,
}

impl StageRun {
    /// Runs `argv` and turns the outcome into a shell result. A note about
    /// a time-out goes to this stage's stderr, where the model sees it. It is
    /// written here, in Layer 1, because it is about this stage: in
    /// `python3 slow.py | head` only the stage knows it was stopped (the
    /// line's exit code is `head`'s), and its stderr follows the line's
    /// redirections like any program's. A line stopped as a whole is Layer
    /// 2's to say (`RawResult::timed_out`); the wording is one,
    /// `clix_common::timeout_line`.
    ///
    /// Output past the cap is an error that stops the whole line: kept in
    /// part, it would reach the next stage (or a file) as if whole, with
    /// exit 0.
    pub(crate) async fn run(
        &self,
        argv: &[String],
        cwd: &std::path::Path,
        stdin: Option<&[u8]>,
        env: &[(String, String)],
    ) -> Result<ExecResult, LimitExceeded> {
        self.run_with(argv, cwd, stdin, env, &[]).await
    }

    /// [`run`](Self::run) with `read_only` host folders mounted for this run
    /// only (a person's skill folder, whose script runs).
    pub(crate) async fn run_with(
        &self,
        argv: &[String],
        cwd: &std::path::Path,
        stdin: Option<&[u8]>,
        env: &[(String, String)],
        read_only: &[PathBuf],
    ) -> Result<ExecResult, LimitExceeded> {
        let name = argv.first().map(String::as_str).unwrap_or("program");
        let timeout = self.deadline.remaining(self.timeout);
        let request =
            Request { env, read_only, output_cap: Some(self.output_cap), ..Request::new(argv, cwd, stdin, timeout) };
        match self.sandbox.run(request).await {
            Ok(outcome) if outcome.was_capped() => {
                Err(LimitExceeded::BuiltinOutput { command: name.to_string(), limit: self.output_cap })
            }
            Ok(outcome) => Ok(to_exec_result(outcome, self.timeout)),
            Err(e) => Ok(ExecResult::err(format!("[error] {e}\n"), CANNOT_RUN_EXIT)),
        }
    }
}

#[async_trait]
impl clix_command::StageRunner for StageRun {
    async fn run(
        &self,
        argv: &[String],
        cwd: &Path,
        stdin: Option<&[u8]>,
        env: &[(String, String)],
        read_only: &[PathBuf],
    ) -> Result<ExecResult, LimitExceeded> {
        self.run_with(argv, cwd, stdin, env, read_only).await
    }

    fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }
}

fn to_exec_result(o: Outcome, limit: Duration) -> ExecResult {
    // Moved, never copied: a program's output may be many megabytes.
    let Outcome { stdout, mut stderr, exit_code, timed_out, .. } = o;
    if timed_out.is_some() {
        stderr.extend_from_slice(format!("{}\n", clix_common::timeout_line(limit)).as_bytes());
    }
    if exit_code != 0
        && let Some(hint) = clix_present::protected_git_hint(&stderr)
    {
        stderr.extend_from_slice(format!("clix: {hint}\n").as_bytes());
    }
    ExecResult { stderr: stderr.into(), exit_code, ..ExecResult::ok_bytes(stdout) }
}
