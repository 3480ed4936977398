//! A shell session: one engine instance whose state (cwd, variables,
//! functions) lives across calls, jailed to one workspace folder.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bashkit::{
    Bash, CommandResolver, Error, ExecOptions, ExecutionBudgetExceeded, LimitExceeded, PipelineStatus, PosixFs,
    ScriptAnalysis, StreamData,
};
use clix_workspace::Workspace;

use crate::command::CommandRegistry;
use crate::gate::{self, CommandGate, without_hook_notes};
use crate::jailfs::JailFs;
use crate::limits::{LIMIT_EXIT, ShellLimits, Stop, stop_message};
use crate::printed::Printed;
use crate::stop::LineStop;

/// Exit code of a line stopped by its time limit, as GNU `timeout` uses.
pub(crate) const TIMEOUT_EXIT: i32 = clix_common::exit::TIMEOUT;
/// Exit code of a line cancelled by the caller (SIGINT convention).
pub const CANCELLED_EXIT: i32 = clix_common::exit::CANCELLED;

/// The line a cancelled line ends with.
pub const CANCELLED_MESSAGE: &str = "clix: cancelled\n";

/// How to build a [`Shell`].
pub struct ShellConfig {
    /// Mounted read-write at its own absolute path; the starting cwd.
    pub workspace: Workspace,
    /// Time, output, input and loop limits of every line.
    pub limits: ShellLimits,
    /// Our commands, run as builtins (they take precedence over the resolver).
    pub commands: CommandRegistry,
    /// Consulted for every name that is neither a bashkit builtin nor one of
    /// ours; the OS tier fills it. `None` gives bash's "command not found".
    pub resolver: Option<Arc<dyn CommandResolver>>,
    /// Asked before every command runs (the engine's policy); `None` runs everything.
    pub gate: Option<Arc<dyn CommandGate>>,
    /// The starting cwd, relative to the workspace; `None` is its root.
    pub start_in: Option<PathBuf>,
}

/// Why a session could not start.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// The folder cannot be a workspace, or could not be mounted.
    #[error("workspace {path}: {reason}")]
    Workspace {
        /// The folder as given.
        path: PathBuf,
        /// Why, with what to do instead.
        reason: String,
    },
}

impl From<clix_workspace::WorkspaceError> for ShellError {
    fn from(e: clix_workspace::WorkspaceError) -> Self {
        ShellError::Workspace { path: e.path, reason: e.reason }
    }
}

/// The raw outcome of one command line: lossless, with no added text
/// beyond the engine's own error messages on stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawResult {
    /// Everything the line wrote to stdout, up to `max_memory_bytes`.
    pub stdout: Vec<u8>,
    /// Everything the line wrote to stderr, up to `max_memory_bytes`.
    pub stderr: Vec<u8>,
    /// The exit code of the line as bash gives it (the last stage's), or
    /// 124 timed out, 130 cancelled, 2 a syntax error, 126 refused, 1 stopped
    /// by the memory limit or a count limit (never 0 when a limit stopped it).
    pub exit_code: i32,
    /// Wall time from the start of the line to its end.
    pub duration: Duration,
    /// The line was stopped at this time limit (exit code 124).
    pub timed_out: Option<Duration>,
    /// stdout or stderr reached `max_memory_bytes`: the rest was not kept, and
    /// the line failed with the limit's `[error]` line.
    pub capped: bool,
    /// The line's pipelines of two stages or more, each stage with its
    /// command and status, in the order they ended: those in which a stage
    /// other than the last failed (the first 16), then the last one, from
    /// anywhere in the line (a loop, a function, `$(…)`, another stage).
    /// A pipeline's status is its last stage's, so `exit_code` alone hides
    /// `jq … | awk …` whose jq failed. Empty for a line that ran no
    /// pipeline, and for one routed whole to the sandbox.
    pub pipelines: Vec<PipelineStatus>,
}

/// bashkit's HTTP clients, left out of every session: built without its
/// network they only answer with a message about a build feature. The
/// names go to the resolver instead (the OS tier runs the sandbox's real
/// programs when the network is on, and says there is none when it is off).
pub const NETWORK_BUILTINS: &[&str] = &["curl", "wget", "http"];

/// bashkit's editors, left out too: they need a bashkit terminal, which a
/// session never has, and would only say "not a terminal". The names go to
/// the resolver like any other program.
pub(crate) const TERMINAL_BUILTINS: &[&str] = &["vi", "nano"];

pub(crate) fn kept_builtin(name: &str) -> bool {
    !NETWORK_BUILTINS.contains(&name) && !TERMINAL_BUILTINS.contains(&name)
}

/// What a bare engine is, learnt once: building one costs a tenth of a
/// cold `clix run`, so both facts come from the same one.
struct Bare {
    builtin_names: Vec<String>,
    home: String,
}

fn bare() -> &'static Bare {
    static BARE: std::sync::OnceLock<Bare> = std::sync::OnceLock::new();
    BARE.get_or_init(|| {
        let bash = Bash::builder().builtin_filter(kept_builtin).build();
        let state = bash.shell_state_view();
        let home = state.env.get("HOME").or_else(|| state.variables.get("HOME")).cloned();
        Bare { builtin_names: bash.builtin_names(), home: home.unwrap_or_else(|| "/home/user".into()) }
    })
}

/// The names bashkit runs itself (its builtins), which no added command
/// may take over.
pub fn builtin_names() -> &'static [String] {
    &bare().builtin_names
}

/// The shell's `$HOME` (what `~` expands to inside a session).
pub fn shell_home() -> &'static str {
    &bare().home
}

/// One conversation's shell.
pub struct Shell {
    bash: Bash,
    folder: Workspace,
    limits: ShellLimits,
    cancel: CancelHandle,
    gate: Option<Arc<dyn CommandGate>>,
    stop: Arc<LineStop>,
}

impl Shell {
    /// A shell on `config.workspace`, with our commands and the resolver.
    pub async fn new(config: ShellConfig) -> Result<Self, ShellError> {
        let folder = config.workspace;
        let workspace = folder.root().to_path_buf();
        let cwd = config.start_in.as_ref().map_or_else(|| workspace.clone(), |dir| workspace.join(dir));
        let mut builder = Bash::builder()
            .cwd(&cwd)
            .builtin_filter(kept_builtin)
            .limits(config.limits.to_bashkit())
            .memory_limits(config.limits.to_bashkit_memory())
            .filesystem_limits(config.limits.to_bashkit_fs())
            .session_limits(config.limits.to_bashkit_session());
        // Our commands answer `--help` themselves (progressive help); the
        // shell's hook answers it for bashkit's.
        let mut ours = std::collections::HashSet::new();
        for (name, command) in config.commands.adapters() {
            ours.insert(name.clone());
            builder = builder.command(name, command);
        }
        if let Some(resolver) = config.resolver {
            builder = builder.command_resolver(resolver);
        }
        let stop = Arc::new(LineStop::default());
        if let Some(gate) = &config.gate {
            builder = builder.before_tool(gate::hook(&stop, Arc::clone(gate)));
        }
        let mut bash = builder.build();
        let ours = Arc::new(ours);
        bash.set_flag_help(Arc::new(move |name: String| {
            let ours = Arc::clone(&ours);
            Box::pin(async move { if ours.contains(&name) { None } else { crate::help::flag_help(&name).await } })
        }));
        stop.bind(bash.cancellation_token());
        // The folders above the workspace exist in the shell's own memory
        // (empty), as the path to its mount: builtins that resolve a path
        // from `/` down (grep -r, realpath) look at each of them.
        let mount_error = |reason: String| ShellError::Workspace { path: workspace.clone(), reason };
        if let Some(parent) = workspace.parent() {
            bash.fs().mkdir(parent, true).await.map_err(|e| mount_error(e.to_string()))?;
        }
        // The workspace is reached only through its capability handle (see
        // jailfs.rs), never through bashkit's RealFs.
        let jail = JailFs::new((*folder).clone(), &config.limits, Arc::clone(&stop));
        bash.mount(&workspace, Arc::new(PosixFs::new(jail))).map_err(|e| mount_error(e.to_string()))?;
        Ok(Shell { bash, folder, limits: config.limits, cancel: CancelHandle::default(), gate: config.gate, stop })
    }

    /// The canonical workspace path (host path and path inside the shell).
    pub fn workspace(&self) -> &Path {
        self.folder.root()
    }

    /// The workspace's capability handle: the only way to touch its files.
    pub fn folder(&self) -> &Workspace {
        &self.folder
    }

    /// The limits every line of this session runs under.
    pub fn limits(&self) -> &ShellLimits {
        &self.limits
    }

    /// The shell's current directory.
    pub fn cwd(&self) -> PathBuf {
        self.bash.shell_state_view().cwd
    }

    /// Every command name the engine runs without the resolver: bashkit's
    /// builtins and ours, sorted.
    pub fn command_names(&self) -> Vec<String> {
        self.bash.builtin_names()
    }

    /// Static view of a line (commands, redirects), without running it.
    pub fn analyze(&self, line: &str) -> Option<ScriptAnalysis> {
        self.bash.analyze(line).ok()
    }

    /// A handle that cancels the running line from another task; the line
    /// ends at once with exit code 130 and "clix: cancelled". A cancel while
    /// nothing runs cancels the next line (see [`CancelHandle`]).
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Runs one command line. `stdin` feeds the line's standard input.
    pub async fn exec(&mut self, line: &str, stdin: Option<&[u8]>) -> RawResult {
        self.exec_within(line, stdin, None).await
    }

    /// Like [`exec`](Self::exec), with a time limit shorter than the
    /// configured one for this call only (longer requests are capped by it).
    pub async fn exec_within(&mut self, line: &str, stdin: Option<&[u8]>, limit: Option<Duration>) -> RawResult {
        self.exec_once(line, stdin, limit.filter(|l| *l < self.limits.timeout())).await
    }

    async fn exec_once(&mut self, line: &str, stdin: Option<&[u8]>, short: Option<Duration>) -> RawResult {
        let started = Instant::now();
        self.stop.reset();
        if let Some(gate) = &self.gate
            && let Err(message) = gate.line_start(line, &self.cwd())
        {
            return RawResult::refused(Vec::new(), Vec::new(), &message, started.elapsed());
        }
        let printed: Arc<Mutex<Printed>> = Arc::default();
        let sink = Arc::clone(&printed);
        let mut options = ExecOptions::new().streaming(Box::new(move |out, err| {
            if let Ok(mut p) = sink.lock() {
                p.push(out, err);
            }
        }));
        if let Some(bytes) = stdin {
            options = options.stdin(StreamData::from(bytes));
        }
        let cancel = self.cancel.clone();
        let run = async {
            tokio::select! {
                outcome = self.bash.exec_with_options(line, options) => outcome,
                () = sleep_or_never(short) => {
                    Err(Error::ResourceLimit(LimitExceeded::Timeout(short.unwrap_or_default())))
                }
            }
        };
        let outcome = cancel.guard(run).await.unwrap_or(Err(Error::Cancelled));
        let duration = started.elapsed();
        // Taken whatever the outcome: a line stopped later still ran them.
        let pipelines = self.bash.take_pipelines();
        // Taken now, so that the chunks it shares with the result are let go
        // before the result's buffers are taken whole.
        let printed = std::mem::take(&mut *printed.lock().unwrap_or_else(|p| p.into_inner()));
        if let Some(halt) = self.stop.take() {
            // What the line printed before it was stopped stays: it already happened.
            let (stdout, stderr) = match outcome {
                Ok(r) => {
                    drop(printed);
                    (r.stdout.into_bytes(), r.stderr.into_bytes())
                }
                Err(_) => printed.into_bytes(),
            };
            let stopped =
                RawResult::stopped(stdout, without_hook_notes(&stderr), &halt.message, halt.exit_code, duration);
            return RawResult { pipelines, ..stopped };
        }
        match outcome {
            Ok(r) => {
                drop(printed);
                let capped = r.stdout_truncated || r.stderr_truncated;
                let mut stderr = r.stderr.into_bytes();
                let mut exit_code = r.exit_code;
                if capped {
                    // What was kept is not the answer: say so, and fail.
                    stderr.extend_from_slice(
                        stop_message(&Stop::Memory("the line's output".into()), &self.limits).as_bytes(),
                    );
                    exit_code = LIMIT_EXIT;
                }
                RawResult {
                    capped,
                    stdout: r.stdout.into_bytes(),
                    stderr,
                    exit_code,
                    duration,
                    timed_out: None,
                    pipelines,
                }
            }
            Err(error) => {
                let (stdout, mut stderr) = printed.into_bytes();
                let (exit_code, timed_out, message) = describe_failure(&error, &self.limits);
                if let Some(message) = message {
                    stderr.extend_from_slice(message.as_bytes());
                }
                RawResult { stdout, stderr, exit_code, duration, timed_out, capped: false, pipelines }
            }
        }
    }
}

/// Cancels the line a [`Shell`] is running.
///
/// A cancel sticks until a line sees it: one that arrives before the line
/// has started (an MCP `notifications/cancelled` racing the call it names)
/// cancels that line as soon as it starts. Once a line has seen it, or has
/// ended while it arrived, it is spent, so the line after runs normally.
#[derive(Clone, Default)]
pub struct CancelHandle {
    notify: Arc<tokio::sync::Notify>,
    /// A cancel no line has seen yet.
    pending: Arc<AtomicBool>,
}

impl CancelHandle {
    /// Stops the running line at once (exit 130, "clix: cancelled"), or the
    /// next line to start when none is running yet.
    pub fn cancel(&self) {
        self.pending.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Forgets a cancel no line has seen yet: for a caller whose cancel came
    /// between two lines and was meant for neither (an agent interrupted
    /// while waiting for its model starts its next task with this).
    pub fn clear(&self) {
        self.pending.store(false, Ordering::SeqCst);
    }

    /// Runs `work` so that [`cancel`](Self::cancel) stops it: `None` when
    /// cancelled, before it started or while it ran. Stopping drops the
    /// future; bashkit closes what the request held, and sandboxed programs
    /// are killed by their guards.
    pub async fn guard<F: std::future::Future>(&self, work: F) -> Option<F::Output> {
        // Registered before the pending flag is read, so a cancel between
        // the two is seen by one or the other, never by neither.
        let cancelled = self.notify.notified();
        tokio::pin!(cancelled);
        cancelled.as_mut().enable();
        if self.pending.swap(false, Ordering::SeqCst) {
            return None;
        }
        let outcome = tokio::select! {
            output = work => Some(output),
            () = &mut cancelled => None,
        };
        // Seen, or too late for this line: spent either way.
        self.clear();
        outcome
    }
}

impl RawResult {
    /// A line stopped by the gate: exit 126 ("cannot run", as bash), its
    /// output so far, then the refusal.
    pub fn refused(stdout: Vec<u8>, stderr: Vec<u8>, message: &str, duration: Duration) -> RawResult {
        RawResult::stopped(stdout, stderr, message, clix_common::exit::CANNOT_RUN, duration)
    }

    /// A line run outside the shell (routed whole to the sandbox) that
    /// reached `limit`: the same exit code and `[error]` line as a line the
    /// shell stopped there.
    pub fn stopped_by(limit: &LimitExceeded, limits: &ShellLimits, duration: Duration) -> RawResult {
        RawResult::stopped(
            Vec::new(),
            Vec::new(),
            &stop_message(&Stop::of_streamed(limit), limits),
            LIMIT_EXIT,
            duration,
        )
    }

    /// A line stopped by a bound clix watches from outside it (the
    /// workspace's disk): exit 1, its output so far, then `message`.
    pub fn stopped_outside(stdout: Vec<u8>, stderr: Vec<u8>, message: &str, duration: Duration) -> RawResult {
        RawResult::stopped(stdout, stderr, message, LIMIT_EXIT, duration)
    }

    /// A line stopped with `exit_code`: its output so far, then why.
    fn stopped(stdout: Vec<u8>, mut stderr: Vec<u8>, message: &str, exit_code: i32, duration: Duration) -> RawResult {
        stderr.extend_from_slice(message.as_bytes());
        RawResult { stdout, stderr, exit_code, duration, timed_out: None, capped: false, pipelines: Vec::new() }
    }
}

async fn sleep_or_never(limit: Option<Duration>) {
    match limit {
        Some(limit) => tokio::time::sleep(limit).await,
        None => std::future::pending().await,
    }
}

/// Exit code, timeout and stderr line for an engine error, worded like bash
/// where bash has a word for it.
fn describe_failure(error: &Error, limits: &ShellLimits) -> (i32, Option<Duration>, Option<String>) {
    match error {
        Error::ResourceLimit(LimitExceeded::Timeout(limit))
        | Error::ResourceLimit(LimitExceeded::ExecutionBudget(ExecutionBudgetExceeded::Deadline { limit })) => {
            (TIMEOUT_EXIT, Some(*limit), None)
        }
        Error::Parse { message, line, .. } => (2, None, Some(format!("bash: line {line}: syntax error: {message}\n"))),
        Error::Cancelled => (CANCELLED_EXIT, None, Some(CANCELLED_MESSAGE.into())),
        Error::ResourceLimit(limit) => (LIMIT_EXIT, None, Some(stop_message(&Stop::of(limit), limits))),
        other => (1, None, Some(format!("clix: {other}\n"))),
    }
}

#[cfg(test)]
mod tests {
    use super::CancelHandle;

    #[tokio::test]
    async fn a_cancel_before_the_work_starts_sticks_until_seen_then_clears() {
        let handle = CancelHandle::default();
        handle.cancel();
        assert_eq!(handle.guard(async { 1 }).await, None, "the cancel came first: this work is cancelled");
        assert_eq!(handle.guard(async { 2 }).await, Some(2), "seen once, then spent");
        handle.cancel();
        handle.clear();
        assert_eq!(handle.guard(async { 3 }).await, Some(3), "a cleared cancel is forgotten");
    }

    #[tokio::test]
    async fn a_cancel_during_the_work_stops_it_and_is_spent() {
        let handle = CancelHandle::default();
        let canceller = handle.clone();
        let stopped = handle.guard(async move {
            canceller.cancel();
            std::future::pending::<()>().await
        });
        assert_eq!(stopped.await, None);
        // A cancel that lands as the work ends is spent with it.
        let late = handle.clone();
        assert_eq!(handle.guard(async move { late.cancel() }).await, Some(()));
        assert_eq!(handle.guard(async { 4 }).await, Some(4));
    }
}
