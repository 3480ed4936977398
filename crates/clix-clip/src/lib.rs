//! `clip`: other machines as commands. A "clip" is one such environment, the
//! name the seed's design (agent-clip, on the Pinix runtime) gives the
//! external places an agent operates: `clip list`, `clip <name> <command>`,
//! `clip <name> pull|push`. An agent reaches the places where the
//! work is (a build server, a staging host, a container, a pod in the cluster)
//! through the tools people already run there: `ssh`, `docker`/`podman`,
//! `kubectl`, or a second folder run through clix's own sandbox.
//!
//! This crate owns:
//!
//! - the `[[clip]]` environment declarations ([`ClipEntry`], serde, from the
//!   person's config only) and their check into [`Environment`]s, with errors
//!   that name the field and say what to fix;
//! - the argv of every child, per kind ([`argv`]): `ssh` with `BatchMode=yes`
//!   first (the person's `options` cannot turn it off) and a shared connection
//!   started on its own (`ssh -f -N`, `ControlMaster`/`ControlPersist=300`, its
//!   socket named by a hash in a 0700 folder under `<state>/clip/ssh`, or under
//!   `/tmp` when that path is too long for a socket), which calls join; the
//!   line handed to the remote shell as one argument under a remote `timeout`,
//!   so it ends there too; `<engine> exec -i` and `kubectl exec -i … --` (the
//!   line stays one argv element; a selector's first ready pod asked at each
//!   call); `scp -r -p`, `<engine> cp`, `kubectl cp`;
//! - running those clients on the host (`child.rs`): the person's environment
//!   minus every secret-looking variable, a process group of their own,
//!   enlisted with clix's warden, a short grace (500 ms: a client relays a
//!   program whose grace is the remote side's); their supervision (stdin,
//!   capped capture with exact counts, the time limit) is `clix-process`'s.
//!   This is the one place clix runs real programs outside `clix-sandbox`
//!   (ARCHITECTURE.md states the exception with the rule): they are clients
//!   reaching another machine, which the sandbox's empty network and home would
//!   cut off from their keys and known hosts;
//! - the `local` kind, run through `clix-sandbox` with the folder as the
//!   sandbox's workspace (checked as a workspace is);
//! - pull and push through a private staging folder, copied to and from the
//!   workspace through its capability handle (so a planted symlink is never
//!   followed), folders included, symlinks and special files left out and
//!   listed, with the bytes moved;
//! - the reachability probe (short time-out, cached for [`PROBE_TTL`] in memory
//!   and in `<state>/clip/probes.json`) and the classification of a failure
//!   ([`Failure`]: DNS, refused, time-out, authentication, host key, not
//!   running, client missing) with what to check; an unreachable environment
//!   exits 255, ssh's own code, whatever its kind;
//! - one `kind: "clip"` audit line per call (environment, action, command with
//!   secret-looking words redacted, exit code, bytes, duration; `cancelled`
//!   when its caller gave up), through clix-audit's envelope, redaction and
//!   writer;
//! - the `clip` command (`clip list`, `clip NAME [COMMAND…]`, `clip NAME
//!   pull|push`), joined to an engine as a `clix_command::Capability`
//!   ([`ClipConfig`]): the line sent to an environment is put to the session's
//!   policy (the `LineJudge` the engine lends) as a local line is, local paths
//!   of `pull` and `push` are workspace paths, and the environments are listed
//!   in the `run` tool's description only when there are some.
//!
//! The shared ssh connection is meant to outlive a call: it ends by itself
//! `ControlPersist` (300 s) after its last use, even after clix has ended.
//!
//! It must not: run a child through a local shell (the only shell string is the
//! line handed to the remote shell); read environments from anywhere but the
//! entries its caller gives (the person's config, never a workspace); touch
//! workspace files except through the [`Folder`] handle it is given; decide
//! policy (the session's gate judges each line first); print.

pub mod argv;
mod child;
mod command;
mod config;
mod failure;
mod transfer;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clix_audit::{AuditLog, Pending, Record, now_ms, redact_argv, redact_line};
use clix_sandbox::{Outcome, Request, Sandbox, SandboxMode, SandboxSettings};
use clix_workspace::{Folder, Workspace};
use serde::{Deserialize, Serialize};

pub use config::{
    ClipConfigError, ClipEntry, Container, EntryProblem, Environment, Kubernetes, Pod, Shell, Ssh, Target, check,
};
pub use failure::Failure;
pub use transfer::{MAX_FILE_BYTES, Moved, base_name, copy_tree};

/// Exit code of a call whose environment could not be reached (ssh's own).
pub const UNREACHABLE_EXIT: i32 = clix_common::exit::UNREACHABLE;
/// How long a probe's answer is reused.
pub const PROBE_TTL: Duration = Duration::from_secs(30);
/// How long a probe may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// A unix socket path must fit in 107 bytes; ssh adds a suffix of 17 while
/// it binds, and a socket's name is 16 hex digits after a `/`.
const MAX_SOCKET_DIR: usize = 107 - 17 - 17;

/// What a [`Clip`] is built from.
#[derive(Debug, Clone, Default)]
pub struct ClipConfig {
    /// The person's `[[clip]]` entries, from their own config only.
    pub environments: Vec<ClipEntry>,
    /// clix's state folder: ssh sockets, probe cache and staging go under `clip/`.
    pub state_dir: PathBuf,
    /// Where each call's audit line goes.
    pub audit_log: Option<AuditLog>,
    /// Names this session's lines in the audit log.
    pub session_id: String,
    /// The sandbox the `local` kind runs in; `None`: no OS tier, no `local`.
    pub sandbox: Option<SandboxSettings>,
    /// clix's config folder, never mounted into a `local` sandbox.
    pub clix_config_dir: Option<PathBuf>,
    /// Bytes kept of each stream of a call; the rest is counted. An engine
    /// sets it to its line's memory budget (`[limits] max_memory_bytes`).
    pub output_cap_bytes: usize,
}

/// Why a call did not run its command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClipError {
    /// The environment could not be reached.
    Unreachable {
        /// What failed.
        failure: Failure,
        /// The client's own words, first lines.
        detail: String,
        /// What to check.
        check: String,
    },
    /// A path or a transfer was refused or failed; the message says why.
    Failed(String),
}

impl ClipError {
    /// The message for the model: what failed, the client's words, what to check.
    pub fn message(&self, env: &Environment) -> String {
        match self {
            ClipError::Unreachable { failure, detail, check } => {
                let mut text = format!("cannot reach {} ({}): {}", env.name, env.target_text(), failure.label());
                if !detail.is_empty() && !failure.label().contains(detail.as_str()) {
                    text.push_str(&format!("\n  {detail}"));
                }
                text.push_str(&format!("\nhint: {check}"));
                text
            }
            ClipError::Failed(why) => why.clone(),
        }
    }
}

/// Whether an environment answered its probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reachability {
    /// It answered.
    pub reachable: bool,
    /// Why not, with what to check.
    pub reason: Option<String>,
    /// How long the probe took, in ms (0 when the answer came from the cache).
    pub probe_ms: u64,
    /// The answer came from the cache.
    pub cached: bool,
}

/// What a pull or push moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    /// Files and bytes.
    pub moved: Moved,
    /// The workspace path written (pull) or read (push), relative to it.
    pub local: PathBuf,
    /// Wall time.
    pub duration: Duration,
}

/// The environments of one session and what their calls share: the ssh
/// socket folder, the probe cache, the `local` sandboxes.
pub struct Clip {
    environments: Vec<Environment>,
    config: ClipConfig,
    sockets: PathBuf,
    probes: Mutex<HashMap<String, (Instant, Reachability)>>,
    locals: Mutex<HashMap<String, Arc<Sandbox>>>,
}

impl std::fmt::Debug for Clip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clip").field("environments", &self.environments).field("sockets", &self.sockets).finish()
    }
}

impl Clip {
    /// Checks the entries (every problem reported, with what to fix) and
    /// prepares the private socket folder.
    pub fn new(config: ClipConfig) -> Result<Clip, ClipConfigError> {
        let environments = check(&config.environments)?;
        let sockets = socket_dir(&config.state_dir.join("clip").join("ssh"));
        Ok(Clip { environments, config, sockets, probes: Mutex::default(), locals: Mutex::default() })
    }

    /// The environments, in the config's order.
    pub fn environments(&self) -> &[Environment] {
        &self.environments
    }

    /// The environment called `name`.
    pub fn get(&self, name: &str) -> Option<&Environment> {
        self.environments.iter().find(|e| e.name == name)
    }

    /// Where ssh's shared connections live.
    pub fn socket_folder(&self) -> &Path {
        &self.sockets
    }

    /// Bytes kept of each stream of a call (64 MiB when none was set).
    pub fn output_cap(&self) -> usize {
        if self.config.output_cap_bytes == 0 { 64 << 20 } else { self.config.output_cap_bytes }
    }

    /// Runs `line` in `env` with `stdin`, within `limit`. `Ok` whenever the
    /// command ran, whatever its exit code; `Err` when the environment
    /// could not be reached. One audit line either way.
    pub async fn run(
        &self,
        env: &Environment,
        line: &str,
        stdin: Option<&[u8]>,
        limit: Duration,
    ) -> Result<Outcome, ClipError> {
        let mut audit = self.audit_start(env, "run", line);
        let result = self.run_inner(env, line, stdin, limit).await;
        match &result {
            Ok(o) => audit.finish(o.exit_code, o.stdout_total, o.stderr_total, None, ended(o)),
            Err(_) => audit.finish(UNREACHABLE_EXIT, 0, 0, None, "unreachable"),
        }
        result
    }

    async fn run_inner(
        &self,
        env: &Environment,
        line: &str,
        stdin: Option<&[u8]>,
        limit: Duration,
    ) -> Result<Outcome, ClipError> {
        let started = Instant::now();
        // The shared ssh connection a call went through, to tell its 255 from the command's.
        let mut shared: Option<PathBuf> = None;
        let argv = match &env.target {
            Target::Local(_) => return self.run_local(env, line, stdin, limit).await,
            Target::Ssh(ssh) => {
                let socket = self.master(env, ssh, limit).await?;
                shared = Some(socket.clone());
                argv::ssh_run(ssh, &socket, env.shell, line, limit.saturating_sub(started.elapsed()))
            }
            Target::Container(c) => argv::container_run(c, env.shell, line, limit),
            Target::Kubernetes(k) => {
                let pod = self.pod(env, k, limit).await?;
                argv::kubectl_run(k, &pod, env.shell, line, limit.saturating_sub(started.elapsed()))
            }
        };
        let outcome = self.host(env, &argv, stdin, limit.saturating_sub(started.elapsed())).await?;
        if outcome.timed_out.is_none()
            && let Some(failure) = Failure::classify(env, outcome.exit_code, &String::from_utf8_lossy(&outcome.stderr))
        {
            // A container or pod that is gone fails the same way every time;
            // ssh's 255 with a connection error never reached the command.
            let stderr = String::from_utf8_lossy(&outcome.stderr);
            // Through a shared connection that still answers, a 255 is the
            // remote command's own (an inner ssh, say), never a lost connection.
            let connection_error = match &shared {
                Some(socket) => std::os::unix::net::UnixStream::connect(socket).is_err(),
                None => stderr.lines().count() <= 3 && outcome.stdout_total == 0 && outcome.exit_code != 0,
            };
            if connection_error {
                return Err(unreachable(env, failure, &stderr));
            }
        }
        Ok(outcome)
    }

    /// Runs a host child; a missing client becomes its own failure.
    async fn host(
        &self,
        env: &Environment,
        argv: &[String],
        stdin: Option<&[u8]>,
        limit: Duration,
    ) -> Result<Outcome, ClipError> {
        self.host_capped(env, argv, stdin, limit, None).await
    }

    /// [`Self::host`], no file the child writes growing past `max_file`.
    async fn host_capped(
        &self,
        env: &Environment,
        argv: &[String],
        stdin: Option<&[u8]>,
        limit: Duration,
        max_file: Option<u64>,
    ) -> Result<Outcome, ClipError> {
        tracing::debug!(environment = %env.name, argv = ?redact_argv(argv), "clip: starting");
        match child::run(argv, stdin, limit, self.output_cap(), max_file).await {
            Ok(outcome) => Ok(outcome),
            Err(child::SpawnError::Missing(program)) => {
                Err(unreachable(env, Failure::NoClient(program.clone()), &format!("{program}: not found on PATH")))
            }
            Err(child::SpawnError::Other(why)) => Err(ClipError::Failed(why)),
        }
    }

    /// The sandbox of a `local` environment, made once.
    fn local_sandbox(&self, env: &Environment) -> Result<(Arc<Sandbox>, Workspace), ClipError> {
        let Target::Local(path) = &env.target else {
            return Err(ClipError::Failed(format!("{} is not a local environment", env.name)));
        };
        let folder = Workspace::open(path).map_err(|e| {
            let failure = Failure::Local(format!("its folder cannot be used: {}", e.reason));
            unreachable(env, failure, "")
        })?;
        let Some(settings) = self.config.sandbox.clone().filter(|s| s.mode != SandboxMode::Off) else {
            let failure = Failure::Local("the sandbox is off (sandbox.mode = \"off\"), and local runs in it".into());
            return Err(unreachable(env, failure, ""));
        };
        let mut locals = self.locals.lock().unwrap_or_else(|p| p.into_inner());
        let sandbox = locals.entry(env.name.clone()).or_insert_with(|| {
            Arc::new(Sandbox::new(
                settings,
                folder.root(),
                self.config.clix_config_dir.as_deref(),
                None,
                self.config.session_id.clone(),
            ))
        });
        Ok((Arc::clone(sandbox), folder))
    }

    async fn run_local(
        &self,
        env: &Environment,
        line: &str,
        stdin: Option<&[u8]>,
        limit: Duration,
    ) -> Result<Outcome, ClipError> {
        let (sandbox, folder) = self.local_sandbox(env)?;
        let argv = [env.shell.program().to_string(), "-c".into(), line.to_string()];
        // The clip audit line is this call's; the sandbox does not write its own.
        let request = Request { audit: false, ..Request::new(&argv, folder.root(), stdin, limit) };
        sandbox.run(request).await.map_err(|e| unreachable(env, Failure::Local(e.to_string()), ""))
    }

    /// The pod a Kubernetes call goes to: the named one, or the first ready
    /// pod of the selector, asked now.
    async fn pod(&self, env: &Environment, k: &Kubernetes, limit: Duration) -> Result<String, ClipError> {
        let selector = match &k.pod {
            Pod::Named(pod) => return Ok(pod.clone()),
            Pod::Selector(selector) => selector,
        };
        let argv = argv::kubectl_pods(k, selector);
        let outcome = self.host(env, &argv, None, limit.min(PROBE_TIMEOUT * 2)).await?;
        let stderr = String::from_utf8_lossy(&outcome.stderr).into_owned();
        if outcome.exit_code != 0 {
            let failure = Failure::classify(env, outcome.exit_code, &stderr).unwrap_or(Failure::Other(first(&stderr)));
            return Err(unreachable(env, failure, &stderr));
        }
        argv::first_ready(&String::from_utf8_lossy(&outcome.stdout)).ok_or_else(|| {
            unreachable(env, Failure::NotRunning, &format!("no ready pod matches the selector {selector}"))
        })
    }

    /// Copies `remote` from `env` into the workspace at `target` (relative
    /// to the workspace; an existing folder there receives it under its own
    /// name). Folders are copied whole.
    pub async fn pull(
        &self,
        env: &Environment,
        remote: &str,
        workspace: &Folder,
        target: &Path,
        limit: Duration,
    ) -> Result<Transfer, ClipError> {
        let mut audit = self.audit_start(env, "pull", remote);
        let result = self.pull_inner(env, remote, workspace, target, limit).await;
        audit.finish_transfer(&result);
        result
    }

    async fn pull_inner(
        &self,
        env: &Environment,
        remote: &str,
        workspace: &Folder,
        target: &Path,
        limit: Duration,
    ) -> Result<Transfer, ClipError> {
        let started = Instant::now();
        let name = base_name(remote).unwrap_or_else(|| "pulled".into());
        let dest = match workspace.metadata(target) {
            Ok(e) if e.kind == clix_workspace::Kind::Dir && target == Path::new(".") => PathBuf::from(&name),
            Ok(e) if e.kind == clix_workspace::Kind::Dir => target.join(&name),
            _ => target.to_path_buf(),
        };
        let failed =
            |e: std::io::Error| ClipError::Failed(format!("cannot write {} in the workspace: {e}", dest.display()));
        if let Target::Local(_) = &env.target {
            let (_, folder) = self.local_sandbox(env)?;
            let from = folder.relative(Path::new(remote)).map_err(|_| outside_local(env, remote, folder.root()))?;
            let moved = match folder.symlink_metadata(&from) {
                Ok(_) => copy_tree(&folder, &from, workspace, &dest).map_err(failed)?,
                Err(e) => return Err(ClipError::Failed(format!("{}: {remote}: {e}", env.name))),
            };
            return Ok(Transfer { moved, local: dest, duration: started.elapsed() });
        }
        let staging = self.staging()?;
        let staged = staging.path().join(&name);
        let argv = self.pull_argv(env, remote, &staged, limit).await?;
        self.transfer(env, &argv, limit.saturating_sub(started.elapsed())).await?;
        let folder = Folder::open(staging.path()).map_err(|e| ClipError::Failed(format!("the staging folder: {e}")))?;
        if !folder.exists(Path::new(&name)).unwrap_or(false) {
            return Err(ClipError::Failed(format!("{}: {remote}: nothing was copied", env.name)));
        }
        let moved = copy_tree(&folder, Path::new(&name), workspace, &dest).map_err(failed)?;
        Ok(Transfer { moved, local: dest, duration: started.elapsed() })
    }

    /// Copies `local` (relative to the workspace) to `remote` in `env`.
    pub async fn push(
        &self,
        env: &Environment,
        workspace: &Folder,
        local: &Path,
        remote: &str,
        limit: Duration,
    ) -> Result<Transfer, ClipError> {
        let mut audit = self.audit_start(env, "push", remote);
        let result = self.push_inner(env, workspace, local, remote, limit).await;
        audit.finish_transfer(&result);
        result
    }

    async fn push_inner(
        &self,
        env: &Environment,
        workspace: &Folder,
        local: &Path,
        remote: &str,
        limit: Duration,
    ) -> Result<Transfer, ClipError> {
        let started = Instant::now();
        let read_failed =
            |e: std::io::Error| ClipError::Failed(format!("cannot read {} in the workspace: {e}", local.display()));
        workspace.symlink_metadata(local).map_err(read_failed)?;
        if let Target::Local(_) = &env.target {
            let (_, folder) = self.local_sandbox(env)?;
            let to = folder.relative(Path::new(remote)).map_err(|_| outside_local(env, remote, folder.root()))?;
            let to = match folder.metadata(&to) {
                Ok(e) if e.kind == clix_workspace::Kind::Dir => {
                    to.join(base_name(&local.display().to_string()).unwrap_or_else(|| "pushed".into()))
                }
                _ => to,
            };
            let moved = copy_tree(workspace, local, &folder, &to)
                .map_err(|e| ClipError::Failed(format!("{}: cannot write {remote}: {e}", env.name)))?;
            return Ok(Transfer { moved, local: local.to_path_buf(), duration: started.elapsed() });
        }
        let name = base_name(&local.display().to_string()).unwrap_or_else(|| "pushed".into());
        let staging = self.staging()?;
        let folder = Folder::open(staging.path()).map_err(|e| ClipError::Failed(format!("the staging folder: {e}")))?;
        let moved = copy_tree(workspace, local, &folder, Path::new(&name)).map_err(read_failed)?;
        let argv = self.push_argv(env, &staging.path().join(&name), remote, limit).await?;
        self.transfer(env, &argv, limit.saturating_sub(started.elapsed())).await?;
        Ok(Transfer { moved, local: local.to_path_buf(), duration: started.elapsed() })
    }

    async fn pull_argv(
        &self,
        env: &Environment,
        remote: &str,
        staged: &Path,
        limit: Duration,
    ) -> Result<Vec<String>, ClipError> {
        Ok(match &env.target {
            Target::Ssh(ssh) => argv::scp_pull(ssh, &self.master(env, ssh, limit).await?, remote, staged),
            Target::Container(c) => argv::container_pull(c, remote, staged),
            Target::Kubernetes(k) => argv::kubectl_pull(k, &self.pod(env, k, limit).await?, remote, staged),
            Target::Local(_) => return Err(ClipError::Failed("a local environment copies directly".into())),
        })
    }

    async fn push_argv(
        &self,
        env: &Environment,
        staged: &Path,
        remote: &str,
        limit: Duration,
    ) -> Result<Vec<String>, ClipError> {
        Ok(match &env.target {
            Target::Ssh(ssh) => argv::scp_push(ssh, &self.master(env, ssh, limit).await?, staged, remote),
            Target::Container(c) => argv::container_push(c, staged, remote),
            Target::Kubernetes(k) => argv::kubectl_push(k, &self.pod(env, k, limit).await?, staged, remote),
            Target::Local(_) => return Err(ClipError::Failed("a local environment copies directly".into())),
        })
    }

    /// Runs a copy child, no file it stages growing past the transfer cap;
    /// a failure is classified, or told in the client's words.
    async fn transfer(&self, env: &Environment, argv: &[String], limit: Duration) -> Result<(), ClipError> {
        let outcome = self.host_capped(env, argv, None, limit, Some(MAX_FILE_BYTES)).await?;
        if outcome.exit_code == 0 {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&outcome.stderr).into_owned();
        if outcome.exit_code == clix_common::exit::SIGNALLED + libc::SIGXFSZ || stderr.contains("File too large") {
            return Err(ClipError::Failed(format!(
                "{}: a file of the copy is larger than clip's cap of {} MiB per transfer, and nothing was copied \
                 into the workspace; copy a smaller part (compress it or split it where it is)",
                env.name,
                MAX_FILE_BYTES >> 20
            )));
        }
        if outcome.timed_out.is_some() {
            return Err(ClipError::Failed(format!("{}: the copy timed out after {:?}", env.name, limit)));
        }
        if let Some(failure) = Failure::classify(env, outcome.exit_code, &stderr)
            && !matches!(failure, Failure::Other(_))
        {
            return Err(unreachable(env, failure, &stderr));
        }
        let words = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).take(3).collect::<Vec<_>>().join("; ");
        Err(ClipError::Failed(format!("{}: {} failed (exit {}): {words}", env.name, argv[0], outcome.exit_code)))
    }

    /// A private folder for one transfer, removed when dropped.
    fn staging(&self) -> Result<tempfile::TempDir, ClipError> {
        let dir = self.config.state_dir.join("clip");
        private_dir(&dir).map_err(|e| ClipError::Failed(format!("cannot make {}: {e}", dir.display())))?;
        tempfile::Builder::new()
            .prefix("staging-")
            .tempdir_in(&dir)
            .map_err(|e| ClipError::Failed(format!("cannot make a staging folder in {}: {e}", dir.display())))
    }

    /// The shared connection of an ssh environment: its socket, with a
    /// master connection listening on it. A master is started when none
    /// answers (one at a time per environment, across processes too); a
    /// connection failure is told here, before any command is sent.
    async fn master(&self, env: &Environment, ssh: &Ssh, limit: Duration) -> Result<PathBuf, ClipError> {
        private_dir(&self.sockets).map_err(|e| {
            ClipError::Failed(format!("cannot make the ssh socket folder {}: {e}", self.sockets.display()))
        })?;
        // Named by the environment and its target: a changed entry gets a new connection.
        let stem = format!("{:016x}", fnv(format!("{}|{ssh:?}", env.name).as_bytes()));
        let socket = self.sockets.join(&stem);
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            return Ok(socket);
        }
        let lock = self.sockets.join(format!("{stem}.lock"));
        let _held = tokio::task::spawn_blocking(move || FileLock::exclusive(&lock))
            .await
            .map_err(|e| ClipError::Failed(e.to_string()))?
            .map_err(|e| ClipError::Failed(format!("cannot lock the ssh socket folder: {e}")))?;
        // Another call may have started it while this one waited.
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            return Ok(socket);
        }
        let _ = std::fs::remove_file(&socket);
        let log = self.sockets.join(format!("{stem}.log"));
        let _ = std::fs::write(&log, b"");
        let connect = limit.as_secs().clamp(1, 10);
        let argv = argv::ssh_master(ssh, &socket, &log, connect);
        let started = Instant::now();
        let code = match child::run_detached(&argv, limit).await {
            Ok(code) => code,
            Err(child::SpawnError::Missing(program)) => {
                return Err(unreachable(env, Failure::NoClient(program.clone()), &format!("{program}: not found")));
            }
            Err(child::SpawnError::Other(why)) => return Err(ClipError::Failed(why)),
        };
        tracing::debug!(environment = %env.name, ?code, ms = started.elapsed().as_millis() as u64, "clip: ssh master");
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        match code {
            Some(0) => Ok(socket),
            None => Err(unreachable(env, Failure::Timeout, &said)),
            Some(code) => match Failure::classify(env, code, &said) {
                Some(failure) => Err(unreachable(env, failure, &said)),
                // Not a connection failure: the call itself will say what is wrong.
                None => Ok(socket),
            },
        }
    }

    /// Whether `env` answers now: a short probe, its answer reused for
    /// [`PROBE_TTL`] (also by other clix processes, through the state folder).
    pub async fn probe(&self, env: &Environment) -> Reachability {
        let key = format!("{:?}|{:?}", env.target, env.shell);
        if let Some(cached) = self.cached_probe(&env.name, &key) {
            return cached;
        }
        let started = Instant::now();
        let result = self.probe_now(env).await;
        let reach = Reachability {
            reachable: result.is_ok(),
            reason: result.err().map(|e| e.message(env)),
            probe_ms: started.elapsed().as_millis() as u64,
            cached: false,
        };
        self.store_probe(&env.name, &key, &reach);
        reach
    }

    /// Every environment's probe, all at once.
    pub async fn probe_all(&self) -> Vec<Reachability> {
        let probes = self.environments.iter().map(|env| self.probe(env));
        futures_util::future::join_all(probes).await
    }

    async fn probe_now(&self, env: &Environment) -> Result<(), ClipError> {
        let argv = match &env.target {
            Target::Local(_) => {
                let (_, folder) = self.local_sandbox(env)?;
                return match clix_sandbox::probe() {
                    clix_sandbox::Availability::Ready { .. } => Ok(()),
                    clix_sandbox::Availability::Unavailable(why)
                        if self.config.sandbox.as_ref().is_some_and(|s| s.mode == SandboxMode::Host) =>
                    {
                        tracing::debug!(%why, folder = %folder.root().display(), "clip: local runs unsandboxed (host mode)");
                        Ok(())
                    }
                    clix_sandbox::Availability::Unavailable(why) => Err(unreachable(env, Failure::Local(why), "")),
                };
            }
            // A master connection up means the host answered and took the key;
            // no remote command is needed (a login shell may take long to start).
            Target::Ssh(ssh) => {
                let socket = self.master(env, ssh, PROBE_TIMEOUT).await?;
                if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
                    return Ok(());
                }
                let said = std::fs::read_to_string(socket.with_extension("log")).unwrap_or_default();
                return Err(unreachable(env, Failure::Other(first(&said)), &said));
            }
            Target::Container(c) => argv::container_probe(c),
            Target::Kubernetes(k) => argv::kubectl_probe(k, &self.pod(env, k, PROBE_TIMEOUT).await?),
        };
        let outcome = self.host(env, &argv, None, PROBE_TIMEOUT).await?;
        let (stdout, stderr) =
            (String::from_utf8_lossy(&outcome.stdout).trim().to_string(), String::from_utf8_lossy(&outcome.stderr));
        if outcome.timed_out.is_some() {
            return Err(unreachable(env, Failure::Timeout, "no answer within the probe's time"));
        }
        let answered = match &env.target {
            Target::Container(_) => outcome.exit_code == 0 && stdout == "true",
            Target::Kubernetes(_) => outcome.exit_code == 0 && stdout == "Running",
            _ => outcome.exit_code == 0,
        };
        if answered {
            return Ok(());
        }
        let failure = Failure::classify(env, outcome.exit_code, &stderr).unwrap_or(match &env.target {
            Target::Container(_) | Target::Kubernetes(_) if outcome.exit_code == 0 => Failure::NotRunning,
            _ => Failure::Other(first(&stderr)),
        });
        Err(unreachable(env, failure, &stderr))
    }

    fn probe_file(&self) -> PathBuf {
        self.config.state_dir.join("clip").join("probes.json")
    }

    fn cached_probe(&self, name: &str, key: &str) -> Option<Reachability> {
        let fresh = |at: Instant| at.elapsed() < PROBE_TTL;
        if let Some((at, reach)) = self.probes.lock().unwrap_or_else(|p| p.into_inner()).get(name)
            && fresh(*at)
        {
            return Some(Reachability { cached: true, probe_ms: 0, ..reach.clone() });
        }
        let text = std::fs::read_to_string(self.probe_file()).ok()?;
        let all: HashMap<String, StoredProbe> = serde_json::from_str(&text).ok()?;
        let stored = all.get(name).filter(|s| s.key == key)?;
        let age = now_ms().saturating_sub(stored.at_ms);
        (u128::from(age) < PROBE_TTL.as_millis()).then(|| Reachability {
            cached: true,
            probe_ms: 0,
            ..stored.reach.clone()
        })
    }

    fn store_probe(&self, name: &str, key: &str, reach: &Reachability) {
        self.probes.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string(), (Instant::now(), reach.clone()));
        let path = self.probe_file();
        let mut all: HashMap<String, StoredProbe> =
            std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
        all.insert(name.to_string(), StoredProbe { key: key.to_string(), at_ms: now_ms(), reach: reach.clone() });
        let written = path
            .parent()
            .map_or(Ok(()), private_dir)
            .and_then(|()| serde_json::to_vec(&all).map_err(std::io::Error::other))
            .and_then(|bytes| {
                // Written whole, then renamed: a reader never sees half of it.
                let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
                std::fs::File::create(&tmp)?.write_all(&bytes)?;
                std::fs::rename(&tmp, &path)
            });
        if let Err(e) = written {
            tracing::debug!(error = %e, "clip: the probe cache could not be written");
        }
    }

    fn audit_start<'a>(&'a self, env: &Environment, action: &'static str, command: &str) -> PendingAudit<'a> {
        let record = ClipAudit {
            environment: env.name.clone(),
            env_kind: env.kind(),
            target: env.target_text(),
            action,
            command: redact_line(command),
            exit_code: clix_common::exit::NO_CODE,
            duration_ms: 0,
            stdout_bytes: 0,
            stderr_bytes: 0,
            bytes_moved: None,
            ended: "",
        };
        let sink = self.config.audit_log.as_ref().map(|log| (log, self.config.session_id.as_str()));
        PendingAudit(Pending::new(sink, record))
    }
}

/// The probe cache's entry for one environment.
#[derive(Serialize, Deserialize)]
struct StoredProbe {
    /// The environment's target when probed: a changed entry is probed again.
    key: String,
    at_ms: u64,
    reach: Reachability,
}

/// One `clip` call in the audit log, a `kind: "clip"` line (the envelope
/// is clix-audit's).
#[derive(Debug, Clone, Serialize)]
struct ClipAudit {
    environment: String,
    env_kind: &'static str,
    target: String,
    /// `run`, `pull` or `push`.
    action: &'static str,
    /// The line (run) or the remote path (pull, push), secret-looking words redacted.
    command: String,
    exit_code: i32,
    duration_ms: u128,
    stdout_bytes: u64,
    stderr_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes_moved: Option<u64>,
    /// `exit`, `timeout`, `unreachable`, `failed` or `cancelled`.
    ended: &'static str,
}

impl Record for ClipAudit {
    const KIND: &'static str = "clip";
}

/// A clip call's audit line (clix-audit's [`Pending`]): written when the
/// call ends, or as cancelled when its caller gives up on it.
struct PendingAudit<'a>(Pending<'a, ClipAudit>);

impl PendingAudit<'_> {
    /// A pull's or push's line: its exit code and the bytes it moved.
    fn finish_transfer(&mut self, result: &Result<Transfer, ClipError>) {
        let (code, bytes) = match result {
            Ok(t) => (0, t.moved.bytes),
            Err(ClipError::Unreachable { .. }) => (UNREACHABLE_EXIT, 0),
            Err(ClipError::Failed(_)) => (1, 0),
        };
        self.finish(code, 0, 0, Some(bytes), if code == 0 { "exit" } else { "failed" });
    }

    fn finish(&mut self, exit_code: i32, stdout: u64, stderr: u64, moved: Option<u64>, ended: &'static str) {
        self.0.finish(|record| {
            record.exit_code = exit_code;
            record.stdout_bytes = stdout;
            record.stderr_bytes = stderr;
            record.bytes_moved = moved;
            record.ended = ended;
        });
    }
}

impl clix_audit::Cancellable for ClipAudit {
    fn cancel(&mut self) {
        self.exit_code = clix_common::exit::NO_CODE;
        self.ended = clix_audit::ENDED_CANCELLED;
    }

    fn took(&mut self, elapsed: std::time::Duration) {
        self.duration_ms = elapsed.as_millis();
    }
}

fn ended(o: &Outcome) -> &'static str {
    if o.timed_out.is_some() { "timeout" } else { "exit" }
}

fn unreachable(env: &Environment, failure: Failure, stderr: &str) -> ClipError {
    let check = failure.check(env);
    let detail = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).take(2).collect::<Vec<_>>().join("; ");
    ClipError::Unreachable { failure, detail, check }
}

fn outside_local(env: &Environment, remote: &str, root: &Path) -> ClipError {
    ClipError::Failed(format!("{}: {remote} is outside the environment's folder {}", env.name, root.display()))
}

fn first(text: &str) -> String {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("failed").to_string()
}

/// Makes `dir` (and its parents) with only the owner allowed in.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me {
        return Err(std::io::Error::other(format!("{} is not a folder of this user", dir.display())));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// The ssh socket folder: under the state folder, or a private folder
/// under /tmp when that path is too long for a unix socket.
fn socket_dir(preferred: &Path) -> PathBuf {
    if preferred.as_os_str().len() <= MAX_SOCKET_DIR {
        return preferred.to_path_buf();
    }
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    // Distinct per state folder, so two clix homes do not share sockets.
    let hash = fnv(preferred.as_os_str().as_encoded_bytes());
    std::env::temp_dir().join(format!("clix-{uid}-ssh-{:08x}", hash as u32))
}

/// An exclusive lock on a file (`flock`), released when dropped (the file closes).
struct FileLock {
    _file: std::fs::File,
}

impl FileLock {
    fn exclusive(path: &Path) -> std::io::Result<FileLock> {
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
        file.lock()?;
        Ok(FileLock { _file: file })
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x100_0000_01b3);
    }
    hash
}
