//! Running one program in the sandbox: spawn, feed, capture, limit, tear down.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clix_process::{Groups, Outcome};

use crate::audit::{AuditLog, AuditRecord, redact_argv};
use crate::cgroup::{self, RunCgroups};
use crate::env::sandbox_env;
use crate::exec_check::{self, ExecJudge, Refusals};
use crate::mounts::{Host, Layout, Private, SANDBOX_HOME, bwrap_args, exposes_secret, layout};
use crate::probe::{Availability, bwrap_path, bwrap_version, is_executable, probe};
use crate::seccomp;
use crate::settings::{SandboxMode, SandboxSettings};
use crate::stub::{self, Launch, ReadyStub};
use clix_audit::Pending;

/// A run's bwrap, its process groups (which end it if the run is given
/// up), its cgroups, and what the exec-time check refused in it.
pub(crate) type Started = (tokio::process::Child, Groups, RunCgroups, Refusals);

/// Time a program gets between SIGTERM and SIGKILL. It is the real program
/// (a build, a test run, a server) and may have files to finish and
/// children to stop, so it gets what `timeout -k 2` would give it.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);
/// Pipes handed to bubblewrap are moved to fds at least this high, so the
/// child's stdio set-up (fds 0-2) can never land on them.
pub(crate) const HIGH_FD: i32 = 10;

/// Why a program did not start; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// No sandbox can be made here (bwrap missing, namespaces refused, the
    /// OS tier off): nothing ran, and nothing runs unsandboxed instead.
    #[error("sandbox unavailable: {0}")]
    Unavailable(String),
    /// This request was refused or the process could not be spawned.
    #[error("cannot start {program}: {reason}")]
    Spawn {
        /// The program asked for.
        program: String,
        /// Why, and what to change.
        reason: String,
    },
}

/// Why a sandbox cannot be confined to a plan agent's places.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// `mode = "host"` confines nothing.
    #[error(
        "sandbox.mode = \"host\" runs programs unconfined; a plan's namespaces need the sandbox (sandbox.mode = \
         \"bwrap\")"
    )]
    HostMode,
    /// A place is not a plain relative folder path.
    #[error("{}: a writable place must be a plain folder path inside the workspace", .0.display())]
    NotAPlace(PathBuf),
    /// An extra read-write mount would let every agent write there.
    #[error(
        "sandbox.extra_rw {} overlaps the workspace, so a plan's namespaces cannot be enforced; remove it",
        .0.display()
    )]
    OverlappingMount(PathBuf),
}

/// One program to run.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The program and its arguments; the program is looked up on the sandbox's PATH.
    pub argv: &'a [String],
    /// Working directory, inside the workspace.
    pub cwd: &'a Path,
    /// Bytes for stdin; `None` gives `/dev/null`.
    pub stdin: Option<&'a [u8]>,
    /// Wall time before SIGTERM (then SIGKILL after a grace period); exit 124.
    pub timeout: Duration,
    /// Extra host folders visible read-only for this run (a hub tool's own
    /// folder). Mounted over the workspace, so one inside it stays read-only.
    pub read_only: &'a [PathBuf],
    /// Variables set for this run on top of the allowlist. The caller has
    /// decided they may pass (a hub manifest names them explicitly).
    pub env: &'a [(String, String)],
    /// Network for this run; `None` follows the settings.
    pub network: Option<bool>,
    /// Write this run's audit line. A hub call writes its own (with its
    /// parameters redacted by name), so its argv is not logged twice.
    pub audit: bool,
    /// Bytes of stdout and of stderr kept; `None` follows the settings
    /// (`output_cap_mb`). A shell stage keeps up to the line's memory budget.
    pub output_cap: Option<usize>,
}

impl<'a> Request<'a> {
    /// A run with only the sandbox's own mounts, environment and network.
    pub fn new(argv: &'a [String], cwd: &'a Path, stdin: Option<&'a [u8]>, timeout: Duration) -> Self {
        Request { argv, cwd, stdin, timeout, read_only: &[], env: &[], network: None, audit: true, output_cap: None }
    }
}

/// The host facts a sandbox is laid out from: its PATH (which toolchains
/// are mounted) and the home folder. [`Sandbox::new`] reads them from the
/// process environment; tests hand in their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEnv {
    /// The host's PATH: its toolchain folders are mounted read-only.
    pub path: String,
    /// The person's home folder, never mounted whole.
    pub home: Option<PathBuf>,
}

impl HostEnv {
    /// `$PATH` (or a minimal default) and `$HOME` of this process.
    pub fn from_process() -> Self {
        HostEnv {
            path: std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }
}

/// The OS tier of one session: a fixed layout over one workspace, worked
/// out when a program first needs it (a session that runs none, or a
/// `clix run` of in-process commands, pays nothing for it).
pub struct Sandbox {
    settings: SandboxSettings,
    workspace: PathBuf,
    /// The host's PATH and HOME the layout is made from.
    host: HostEnv,
    /// Variables its caller set for every program ([`Sandbox::with_env`]).
    caller_env: Vec<(String, String)>,
    /// The mounts and environment, made once, on first need.
    prepared: std::sync::OnceLock<Prepared>,
    audit: Option<AuditLog>,
    session: String,
    private: Private,
    /// Set by [`Sandbox::confined`]: the only workspace places programs may write.
    writable: Option<Vec<PathBuf>>,
    /// The next run's sandbox, set up ahead (`keep_ready`).
    next_stub: ReadyStub,
    /// Asked about every program that starts inside (`with_exec_judge`).
    judge: Option<Arc<dyn ExecJudge>>,
    /// The workspace through its handle: which of its repository's files
    /// git runs on the host, mounted read-only at each start.
    folder: Option<clix_workspace::Folder>,
}

/// What a sandbox's programs see: its mounts and its environment.
struct Prepared {
    layout: Layout,
    env: BTreeMap<String, String>,
}

impl Sandbox {
    /// `clix_config` is clix's own config folder, never mounted.
    pub fn new(
        settings: SandboxSettings,
        workspace: &Path,
        clix_config: Option<&Path>,
        audit: Option<AuditLog>,
        session: String,
    ) -> Self {
        Self::with_host(settings, workspace, clix_config, audit, session, HostEnv::from_process())
    }

    /// The same sandbox with the workspace mounted read-only and only
    /// `writable` (paths relative to it) read-write over it: a plan
    /// agent's namespace, enforced by the mounts. The caller checks that
    /// each is a real folder (the workspace handle's `confined` does), and
    /// no other agent may write its parent, so none can be swapped for a
    /// symlink. `mode = "host"` cannot confine anything and is refused.
    pub fn confined(mut self, writable: &[PathBuf]) -> Result<Self, ConfineError> {
        if self.settings.mode == SandboxMode::Host {
            return Err(ConfineError::HostMode);
        }
        let ws = self.workspace.clone();
        if let Some(bad) = writable
            .iter()
            .find(|w| w.as_os_str().is_empty() || !w.components().all(|c| matches!(c, std::path::Component::Normal(_))))
        {
            return Err(ConfineError::NotAPlace(bad.clone()));
        }
        // An extra read-write mount over or inside the workspace would be
        // writable by every agent, whatever its namespace.
        if let Some(overlap) =
            self.settings.extra_rw.iter().find(|p| **p != ws && (ws.starts_with(p) || p.starts_with(&ws)))
        {
            return Err(ConfineError::OverlappingMount(overlap.clone()));
        }
        self.writable = Some(writable.to_vec());
        Ok(self)
    }

    /// The mounts and environment, worked out on first need: the host's
    /// toolchains, the stores to cover, the PATH inside; a confined
    /// sandbox's workspace read-only but its places.
    fn prepared(&self) -> &Prepared {
        self.prepared.get_or_init(|| {
            let host = Host { path: &self.host.path, private: &self.private };
            let mut layout = layout(&self.workspace, &self.settings, &host);
            if let Some(writable) = &self.writable {
                let ws = &self.workspace;
                layout.read_write.retain(|p| p != ws);
                layout.read_only.push(ws.clone());
                layout.read_write.splice(0..0, writable.iter().map(|w| ws.join(w)));
            }
            let (path, home_var) = match self.settings.mode {
                SandboxMode::Host => {
                    (self.host.path.clone(), self.host.home.as_deref().unwrap_or(Path::new("/")).display().to_string())
                }
                _ => (layout.path.clone(), SANDBOX_HOME.to_string()),
            };
            let mut env =
                sandbox_env(|k| std::env::var(k).ok(), &path, &home_var, &self.settings.env, &layout.toolchain_vars);
            env.extend(self.caller_env.iter().cloned());
            log_layout(&self.settings, &self.workspace, &layout, &env);
            Prepared { layout, env }
        })
    }

    /// The same sandbox with `vars` set for every program it runs, over
    /// the environment it passes on: what its caller tells them.
    pub fn with_env(mut self, vars: &[(String, String)]) -> Self {
        self.caller_env.extend(vars.iter().cloned());
        self
    }

    /// [`Sandbox::new`] laid out from `host` instead of this process's PATH and HOME.
    pub fn with_host(
        settings: SandboxSettings,
        workspace: &Path,
        clix_config: Option<&Path>,
        audit: Option<AuditLog>,
        session: String,
        host_env: HostEnv,
    ) -> Self {
        let mut clix: Vec<PathBuf> = clix_workspace::clix_folders().into_iter().map(|(p, _)| p).collect();
        clix.extend(clix_config.map(Path::to_path_buf));
        let private = Private { clix, home: host_env.home.clone() };
        Sandbox {
            settings,
            workspace: workspace.to_path_buf(),
            host: host_env,
            caller_env: Vec::new(),
            prepared: std::sync::OnceLock::new(),
            audit,
            session,
            private,
            writable: None,
            next_stub: ReadyStub::default(),
            judge: None,
            folder: clix_workspace::Folder::open(workspace).ok(),
        }
    }

    /// The same sandbox with `judge` asked about every program that starts
    /// inside it, whoever starts it (see `exec_check.rs`). A refused one
    /// ends the run with the judge's message and exit 126. Host mode has
    /// no inside and checks nothing.
    pub fn with_exec_judge(mut self, judge: Arc<dyn ExecJudge>) -> Self {
        self.judge = Some(judge);
        self
    }

    /// The settings this sandbox was made with.
    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// Whether `name` is a program the sandbox can run (found on its PATH).
    pub fn has_program(&self, name: &str) -> bool {
        self.program_path(name).is_some()
    }

    /// Where `name` is found on the sandbox's PATH: the program that runs.
    pub fn program_path(&self, name: &str) -> Option<PathBuf> {
        if self.settings.mode == SandboxMode::Off || name.contains('/') {
            return None;
        }
        let path = self.prepared().env.get("PATH")?;
        path.split(':').map(|dir| Path::new(dir).join(name)).find(|p| is_executable(p))
    }

    /// bubblewrap's path, `None` in host mode, or the error that says how to
    /// fix a missing sandbox. Whether namespaces work is learnt from the
    /// real run (bwrap reports no child when it cannot set up), so no
    /// separate trial run is paid for on every clix start.
    pub(crate) fn ready(&self) -> Result<Option<PathBuf>, SandboxError> {
        match self.settings.mode {
            SandboxMode::Host => Ok(None),
            SandboxMode::Bwrap => match bwrap_path() {
                Some(bwrap) => Ok(Some(bwrap)),
                None => Err(unavailable("bubblewrap (bwrap) is not installed")),
            },
            SandboxMode::Off => Err(SandboxError::Unavailable(
                "the OS tier is off (sandbox.mode = \"off\"); set sandbox.mode = \"bwrap\" to run programs".into(),
            )),
        }
    }

    /// `sandbox status`: isolation, mounts, network and limits in force.
    pub fn status(&self) -> String {
        let mut s = String::new();
        let isolation = match self.settings.mode {
            SandboxMode::Bwrap => match probe() {
                Availability::Ready { bwrap } => format!(
                    "bubblewrap ({}): new user, pid, ipc, uts, net and cgroup namespaces; uid 1000; no capabilities; \
                     seccomp: no setuid/setgid files, device nodes or nested user namespaces",
                    bwrap_version(&bwrap)
                ),
                Availability::Unavailable(reason) => format!("UNAVAILABLE: {reason}"),
            },
            SandboxMode::Host => "NONE: sandbox.mode = \"host\", programs run directly on the host (unsafe)".into(),
            SandboxMode::Off => "off: no OS programs run (sandbox.mode = \"off\")".into(),
        };
        s.push_str(&format!("isolation: {isolation}\n"));
        match &self.writable {
            None => s.push_str(&format!("workspace (read-write): {}\n", self.workspace.display())),
            Some(places) => {
                let places: Vec<String> = places.iter().map(|p| format!("{}/", p.display())).collect();
                s.push_str(&format!("workspace (read-only but {}): {}\n", places.join(", "), self.workspace.display()));
            }
        }
        let shown = self.writable.as_ref().map_or(1, Vec::len);
        let Prepared { layout, env } = self.prepared();
        for p in layout.read_write.iter().skip(shown) {
            s.push_str(&format!("read-write: {}\n", p.display()));
        }
        s.push_str("read-only: /usr /bin /lib* /etc (minimal)");
        for p in &layout.read_only {
            s.push_str(&format!(" {}", p.display()));
        }
        s.push('\n');
        for (p, why) in &layout.hidden {
            s.push_str(&format!("hidden: {} ({why})\n", p.display()));
        }
        s.push_str(&format!("home: {SANDBOX_HOME} (empty tmpfs); /tmp: private tmpfs\n"));
        s.push_str(&format!("network: {}\n", if self.settings.network { "ON (host network shared)" } else { "off" }));
        let cgroup::Support { pids, memory } = cgroup::support();
        let pid_limit = if pids {
            "cgroup pids.max, per run"
        } else if is_root() {
            "NOT ENFORCED: running as root without a writable pids cgroup"
        } else {
            "RLIMIT_NPROC"
        };
        let mem_limit = if memory { "cgroup memory.limit_in_bytes, per run" } else { "RLIMIT_AS per process" };
        s.push_str(&format!(
            "limits: time as limits.timeout_secs (--timeout); memory {} MiB ({mem_limit}); processes {} ({pid_limit}); \
             file size {} MiB; open files {}; output kept {} MiB per stream of a hub tool's self-test (a line's \
             programs and tools: limits.max_memory_bytes)\n",
            self.settings.memory_mb,
            self.settings.max_processes,
            self.settings.max_file_size_mb,
            self.settings.max_open_files,
            self.settings.output_cap_mb
        ));
        s.push_str(&format!(
            "environment: {} (secret-looking names never pass)\n",
            env.keys().cloned().collect::<Vec<_>>().join(" ")
        ));
        s
    }

    /// Whether the process limit is really enforced for a fork bomb (tests use this).
    pub fn process_limit_enforced(&self) -> bool {
        cgroup::support().pids || !is_root()
    }

    /// Runs `req.argv` in the sandbox: check the request, start it (in the
    /// stub set up ahead when there is one), supervise until it ends or its
    /// time is up, then clean up and audit.
    pub async fn run(&self, req: Request<'_>) -> Result<Outcome, SandboxError> {
        let bwrap = self.ready()?;
        let program = req.argv.first().cloned().unwrap_or_default();
        let spawn_error = |reason: String| SandboxError::Spawn { program: program.clone(), reason };
        self.check_request(&req).map_err(spawn_error)?;
        let network = req.network.unwrap_or(self.settings.network);
        log_start(&req, bwrap.is_some(), network);
        let started = Instant::now();
        let (child, groups, cgroups, refusals) = match &bwrap {
            Some(bwrap) => self.start_in_stub(bwrap, &req, network).await?,
            None => self.start_on_host(&req).map_err(|e| spawn_error(e.to_string()))?,
        };
        let bwrap_group = bwrap.as_ref().and_then(|_| child.id()).and_then(|pid| i32::try_from(pid).ok());
        // Written even if the caller drops this future (its own time limit, a cancel).
        // A run whose caller audits it counts as already written.
        let mut audit = self.audit_line(req.argv, req.cwd, req.audit, started);
        // The next run's stub is built while this program runs (a
        // millisecond of lookups), and set up once this run's cgroups are
        // gone: making the next one's holds the kernel's cgroup lock for
        // an RCU grace period, which removing them would wait for.
        let next = bwrap.filter(|_| self.usual(&req, network)).and_then(|bwrap| {
            self.stub_launch(&bwrap, &[], network, &[])
                .inspect_err(|e| tracing::debug!(error = %e, "sandbox: the next run's stub cannot be set up ahead"))
                .ok()
        });
        let cap = req.output_cap.unwrap_or((self.settings.output_cap_mb << 20) as usize);
        let outcome = clix_process::supervise(child, groups, req.stdin, req.timeout, cap, started).await;
        if let Some(pgid) = bwrap_group {
            // bwrap has ended. A bwrap that died mid-setup leaves its first
            // process waiting on an eventfd in bwrap's group (it has not made
            // its own session yet) for ever: nothing of a run outlives it.
            // SAFETY: kill with a negative pid signals that process group; a
            // group with a member left keeps its number from reuse.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        let outcome = refused(outcome, refusals.take());
        cgroups.remove().await;
        audit.finish(|line| {
            line.exit_code = outcome.exit_code;
            line.stdout_bytes = outcome.stdout_total;
            line.stderr_bytes = outcome.stderr_total;
            line.ended = if outcome.timed_out.is_some() { "timeout" } else { "exit" }.into();
        });
        if let Some(launch) = next {
            self.next_stub.prepare(launch);
        }
        tracing::debug!(
            program = %program,
            exit_code = outcome.exit_code,
            duration_ms = outcome.duration.as_millis() as u64,
            timed_out = outcome.timed_out.is_some(),
            stdout_bytes = outcome.stdout_total,
            stderr_bytes = outcome.stderr_total,
            "sandbox: finished"
        );
        Ok(outcome)
    }

    /// Whether `req` has the shape of the stub kept ready: no extra mounts
    /// or variables, the default network.
    fn usual(&self, req: &Request<'_>, network: bool) -> bool {
        self.settings.keep_ready && req.read_only.is_empty() && req.env.is_empty() && network == self.settings.network
    }

    /// Starts `req` in a stub: for a usual request, the one set up ahead
    /// on the sandbox's own thread (the first run of a session waits for
    /// it, so that thread starts them all); else one started here.
    async fn start_in_stub(&self, bwrap: &Path, req: &Request<'_>, network: bool) -> Result<Started, SandboxError> {
        let mut ready = None;
        if self.usual(req, network) {
            if !self.next_stub.pending() {
                self.next_stub.prepare(self.stub_launch(bwrap, &[], network, &[])?);
            }
            ready = self.next_stub.take().await;
            // Set up before a repository appeared (`git init` in the last
            // run): its config and hooks would be writable in it.
            if ready.as_ref().is_some_and(|stub| stub.git_protected() != self.git_protected()) {
                tracing::debug!("sandbox: the workspace's repository changed since the stub was set up; a new one");
                ready = None;
            }
        }
        // The program's variables: the allowlist, then the request's own (the later one wins).
        let var = |name: &str| {
            let extra = req.env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
            extra.or_else(|| self.prepared().env.get(name).map(String::as_str))
        };
        let line = stub::line(req.argv, req.cwd, req.stdin.is_some(), var);
        if let Some(stub) = ready {
            match stub.start(line.clone()).await {
                Ok(started) => {
                    tracing::debug!("sandbox: started in the stub set up ahead");
                    return Ok(started);
                }
                Err(why) => tracing::debug!(%why, "sandbox: the stub set up ahead was gone; starting a new one"),
            }
        }
        tracing::debug!(
            "sandbox: setting a stub up for this run (none was ready, or the request is not the usual shape)"
        );
        let stub = self.stub_launch(bwrap, req.read_only, network, req.env)?.spawn().await?;
        stub.start(line).await.map_err(|why| SandboxError::Spawn {
            program: req.argv.first().cloned().unwrap_or_default(),
            reason: format!("the sandbox's shell ended before the program started: {why}"),
        })
    }

    /// bwrap around the stub, with `read_only` extras, `network` and `env` on top of the allowlist.
    fn stub_launch(
        &self,
        bwrap: &Path,
        read_only: &[PathBuf],
        network: bool,
        env: &[(String, String)],
    ) -> Result<Launch, SandboxError> {
        let sh = self
            .program_path("sh")
            .ok_or_else(|| unavailable("the sandbox has no `sh` on its PATH to start programs with (install dash)"))?;
        let pipes = BwrapPipes::when(Some(bwrap), "sh")?.ok_or_else(|| unavailable("no pipes for bwrap"))?;
        let stub_argv = stub::stub_argv(&sh);
        // Looked up once: the stub remembers what it mounts, to be set aside if that changes.
        let git = self.git_protected();
        let bwrap_and_pipes = Some((bwrap, &pipes, git.as_slice()));
        let mut cmd = self.launcher(&stub_argv, &self.workspace, read_only, network, bwrap_and_pipes);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        let exec_check =
            self.judge.clone().map(|judge| (judge, exec_check::Setup { bwrap: bwrap.to_path_buf(), stub: stub_argv }));
        Ok(Launch { cmd, settings: self.settings.clone(), pipes, exec_check, git })
    }

    /// `mode = "host"`: the program itself, UNSANDBOXED, with the same limits.
    fn start_on_host(&self, req: &Request<'_>) -> std::io::Result<Started> {
        let mut cmd = self.launcher(req.argv, req.cwd, req.read_only, false, None);
        cmd.envs(req.env.iter().map(|(k, v)| (k, v)));
        cmd.stdin(if req.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let cgroups = run_cgroups(&self.settings);
        ChildLimits::new(&self.settings, &cgroups, Vec::new()).install(&mut cmd);
        let child = cmd.spawn()?;
        let groups = Groups::of(&child, KILL_GRACE);
        Ok((child, groups, cgroups, Refusals::default()))
    }

    /// Refuses extra read-only folders that would expose a secret, the home
    /// folder or clix's config, and a current folder the sandbox cannot see.
    fn check_request(&self, req: &Request<'_>) -> Result<(), String> {
        self.check_read_only(req.read_only)?;
        // A confined sandbox mounts the workspace read-only: still a place to start in.
        let confined_workspace = self.writable.is_some().then_some(&self.workspace);
        let visible = self.prepared().layout.read_write.iter().chain(req.read_only).chain(confined_workspace);
        if !visible.into_iter().any(|dir| req.cwd.starts_with(dir)) {
            return Err(format!(
                "the current folder {} is outside the workspace; cd into {} first",
                req.cwd.display(),
                self.workspace.display()
            ));
        }
        Ok(())
    }

    /// Refuses extra read-only folders (a tool's or a service's own) that
    /// would expose a secret store, the home folder or clix's own folders.
    /// Stores inside a folder that passes are covered when it is mounted
    /// (`mounts::masks`).
    pub(crate) fn check_read_only(&self, read_only: &[PathBuf]) -> Result<(), String> {
        match read_only.iter().find(|d| exposes_secret(d, &Private::default()) || self.private.holds(d)) {
            Some(dir) => Err(format!(
                "{} would expose a secret store, clix's own folders or the home folder; move the program to a \
                 folder of its own",
                dir.display()
            )),
            None => Ok(()),
        }
    }

    /// bwrap with this sandbox's layout around `argv` (or, in host mode,
    /// `argv` itself started in `cwd`), in a process group of its own, with
    /// exactly the allowed variables; the caller sets up stdio. A run and a
    /// [`Service`](crate::Service) both start this way.
    /// `sandboxed`: bwrap, its pipes, and the repository paths to mount
    /// read-only ([`Sandbox::git_protected`]); `None` in host mode.
    pub(crate) fn launcher(
        &self,
        argv: &[String],
        cwd: &Path,
        read_only: &[PathBuf],
        network: bool,
        sandboxed: Option<(&Path, &BwrapPipes, &[PathBuf])>,
    ) -> tokio::process::Command {
        let mut cmd = match sandboxed {
            Some((bwrap, pipes, git)) => {
                let mut c = tokio::process::Command::new(bwrap);
                c.args(bwrap_args(&self.prepared().layout, read_only, cwd, network, git, self.writable.is_some()));
                let [info, seccomp] = pipes.child_fds();
                c.arg("--info-fd").arg(info.to_string());
                c.arg("--seccomp").arg(seccomp.to_string());
                c.arg("--").args(argv);
                c
            }
            None => {
                let program = argv.first().map(String::as_str).unwrap_or_default();
                let mut c = tokio::process::Command::new(program);
                c.args(argv.get(1..).unwrap_or_default()).current_dir(cwd);
                c
            }
        };
        // Not even bwrap itself sees clix's environment: only the allowed
        // variables, which it hands on to the program.
        cmd.env_clear().envs(&self.prepared().env).process_group(0);
        // Watched from before bwrap runs: a clix that dies while the sandbox
        // is being set up must not leave its first process waiting for ever.
        clix_process::warden::enlist(&mut cmd);
        cmd
    }

    /// The workspace repository's `.git` and what git runs from it, as
    /// they are now (a repository made since the last start is protected
    /// from this one on).
    pub(crate) fn git_protected(&self) -> Vec<PathBuf> {
        self.folder.as_ref().map(clix_workspace::Folder::git_protected).unwrap_or_default()
    }

    /// The line of a run of `argv` in `cwd` that starts now: as a
    /// cancelled one until the run ends.
    fn audit_line(&self, argv: &[String], cwd: &Path, audited: bool, started: Instant) -> Pending<'_, AuditRecord> {
        let record = AuditRecord {
            argv: redact_argv(argv),
            cwd: cwd.display().to_string(),
            exit_code: clix_common::exit::NO_CODE,
            duration_ms: 0,
            stdout_bytes: 0,
            stderr_bytes: 0,
            ended: String::new(),
            mode: format!("{:?}", self.settings.mode).to_lowercase(),
        };
        let sink = self.audit.as_ref().filter(|_| audited).map(|log| (log, self.session.as_str()));
        Pending::since(sink, record, started)
    }
}

/// `outcome` with the exec-time check's refusals: each message after
/// the program's own stderr, and exit 126, as a refusal in the shell ends
/// its line (the sandbox was killed at the refusal).
fn refused(mut outcome: Outcome, refusals: Vec<String>) -> Outcome {
    if refusals.is_empty() {
        return outcome;
    }
    for message in refusals {
        if outcome.stderr.last().is_some_and(|b| *b != b'\n') {
            outcome.stderr.push(b'\n');
            outcome.stderr_total += 1;
        }
        outcome.stderr.extend_from_slice(message.as_bytes());
        outcome.stderr_total += message.len() as u64;
    }
    outcome.exit_code = clix_common::exit::CANNOT_RUN;
    outcome
}

/// The two pipes bwrap is given: it writes `{"child-pid": N}` to the info
/// pipe once the sandbox is set up, and reads the syscall filter from the
/// seccomp pipe. The child's ends are closed here once it has started.
pub(crate) struct BwrapPipes {
    info_read: OwnedFd,
    info_write: OwnedFd,
    seccomp_read: OwnedFd,
}

enum PipeError {
    /// The seccomp filter could not be built: the sandbox cannot be trusted.
    Filter(String),
    Io(std::io::Error),
}

impl BwrapPipes {
    /// The pipes of one start when it goes through bwrap (`None` in host mode).
    pub(crate) fn when(bwrap: Option<&Path>, program: &str) -> Result<Option<Self>, SandboxError> {
        if bwrap.is_none() {
            return Ok(None);
        }
        Self::open().map(Some).map_err(|e| match e {
            PipeError::Filter(reason) => SandboxError::Unavailable(reason),
            PipeError::Io(e) => SandboxError::Spawn { program: program.to_string(), reason: e.to_string() },
        })
    }

    fn open() -> Result<Self, PipeError> {
        let filter = seccomp::program_bytes().map_err(PipeError::Filter)?;
        tracing::debug!(
            instructions = filter.len() / 8,
            denies = "setuid/setgid modes, device nodes, nested user namespaces; ENOSYS for openat2, clone3, io_uring",
            "seccomp filter handed to bwrap"
        );
        let (info_read, info_write) = pipe().map_err(PipeError::Io)?;
        let seccomp_read = filled_pipe(filter).map_err(PipeError::Io)?;
        Ok(BwrapPipes { info_read, info_write, seccomp_read })
    }

    /// The fds the child inherits: `[info, seccomp]`.
    pub(crate) fn child_fds(&self) -> [i32; 2] {
        [self.info_write.as_raw_fd(), self.seccomp_read.as_raw_fd()]
    }

    /// Closes the child's ends (so the info pipe ends when bwrap does) and
    /// waits for the sandboxed program's pid; `None` if bwrap failed first.
    pub(crate) async fn child_pid(self) -> Option<i32> {
        let BwrapPipes { info_read, info_write, seccomp_read } = self;
        drop(info_write);
        drop(seccomp_read);
        read_child_pid(info_read).await
    }
}

/// What is about to start (debug); argv redacted, extra variables by name only.
fn log_start(req: &Request<'_>, sandboxed: bool, network: bool) {
    tracing::debug!(
        argv = ?logged_argv(req.argv, req.audit),
        cwd = %req.cwd.display(),
        mode = if sandboxed { "bwrap" } else { "host (UNSANDBOXED)" },
        network,
        timeout_ms = req.timeout.as_millis() as u64,
        stdin_bytes = req.stdin.map_or(0, <[u8]>::len),
        extra_read_only = ?req.read_only,
        // Names only: a hub tool's variable may carry a key.
        extra_env = ?req.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        "sandbox: starting"
    );
}

/// The mounts and environment of a new sandbox (debug): what programs see.
/// Variable names only, never values.
fn log_layout(settings: &SandboxSettings, workspace: &Path, layout: &Layout, env: &BTreeMap<String, String>) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let hidden: Vec<String> = layout.hidden.iter().map(|(p, why)| format!("{} ({why})", p.display())).collect();
    tracing::debug!(
        mode = ?settings.mode,
        workspace = %workspace.display(),
        read_write = ?layout.read_write,
        read_only = ?layout.read_only,
        system = "/usr /bin /lib* /etc (minimal), read-only",
        hidden = ?hidden,
        network = settings.network,
        path = %layout.path,
        env = ?env.keys().collect::<Vec<_>>(),
        "sandbox layout"
    );
}

/// The argv a log line may show: secrets redacted as in the audit log; a
/// hub call's values left out whole (its manifest says which are secret,
/// and the hub logs them by that rule).
fn logged_argv(argv: &[String], audited_here: bool) -> Vec<String> {
    if audited_here {
        return redact_argv(argv);
    }
    let program = argv.first().cloned().unwrap_or_default();
    vec![program, format!("<{} arguments of a hub call>", argv.len().saturating_sub(1))]
}

/// One run's (or service's) cgroups, made now and removed when dropped,
/// with how its limits are enforced logged.
pub(crate) fn run_cgroups(s: &SandboxSettings) -> RunCgroups {
    let cgroups = RunCgroups::create(s.max_processes, s.memory_mb << 20);
    log_limits(s, &cgroups);
    cgroups
}

/// How this run's limits are enforced (debug): per-run cgroups where the
/// host allows them, rlimits otherwise.
fn log_limits(s: &SandboxSettings, cgroups: &RunCgroups) {
    let memory =
        if cgroups.memory { "cgroup memory.limit_in_bytes (the whole run)" } else { "RLIMIT_AS (each process)" };
    let processes = if cgroups.pids {
        "cgroup pids.max"
    } else if is_root() {
        "NOT ENFORCED (root, and no writable pids cgroup)"
    } else {
        "RLIMIT_NPROC"
    };
    tracing::debug!(
        memory_mb = s.memory_mb,
        memory_by = memory,
        max_processes = s.max_processes,
        processes_by = processes,
        max_file_size_mb = s.max_file_size_mb,
        max_open_files = s.max_open_files,
        output_cap_mb = s.output_cap_mb,
        "sandbox limits"
    );
}

pub(crate) fn unavailable(reason: &str) -> SandboxError {
    SandboxError::Unavailable(format!(
        "{reason}. Fix: apt-get install bubblewrap (and allow unprivileged user namespaces), \
         or set sandbox.mode = \"host\" in config.toml to run programs UNSANDBOXED"
    ))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Resource limits applied in the child between fork and exec.
pub(crate) struct ChildLimits {
    rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    procs_files: Vec<CString>,
    /// Fds bwrap is told about: kept open across exec.
    inherited: Vec<i32>,
    /// `(fd, number)`: fds handed on at fixed numbers (a service's pipes, the stub's line).
    fds_at: Vec<(i32, i32)>,
    /// The exec-time check's filter, installed last.
    exec_check: Option<exec_check::ChildEnd>,
}

impl ChildLimits {
    pub(crate) fn new(s: &SandboxSettings, cgroups: &RunCgroups, inherited: Vec<i32>) -> Self {
        let mut rlimits = vec![
            (libc::RLIMIT_FSIZE, s.max_file_size_mb << 20),
            (libc::RLIMIT_NOFILE, s.max_open_files),
            (libc::RLIMIT_CORE, 0),
        ];
        if !cgroups.memory {
            rlimits.push((libc::RLIMIT_AS, s.memory_mb << 20));
        }
        if !cgroups.pids && !is_root() {
            rlimits.push((libc::RLIMIT_NPROC, s.max_processes));
        }
        ChildLimits {
            rlimits,
            procs_files: cgroups.procs_files.clone(),
            inherited,
            fds_at: Vec::new(),
            exec_check: None,
        }
    }

    /// Also installs the exec-time check's filter, after everything else:
    /// from then on every exec waits for the check's answer, bwrap's own first.
    pub(crate) fn with_exec_check(mut self, child_end: exec_check::ChildEnd) -> Self {
        self.exec_check = Some(child_end);
        self
    }

    /// Also hands each `(fd, number)` on at that number. The numbers must
    /// be below [`HIGH_FD`], where no fd of `fds_at` or `inherited` is.
    pub(crate) fn with_fds_at(mut self, fds_at: Vec<(i32, i32)>) -> Self {
        self.fds_at = fds_at;
        self
    }

    /// The same limits without RLIMIT_AS, for a program that reserves far
    /// more address space than it uses (a browser); the cgroup's memory
    /// limit still applies where there is one.
    pub(crate) fn without_address_limit(mut self) -> Self {
        self.rlimits.retain(|(resource, _)| *resource != libc::RLIMIT_AS);
        self
    }

    /// Has `cmd`'s child apply these limits between fork and exec.
    pub(crate) fn install(self, cmd: &mut tokio::process::Command) {
        // SAFETY: the closure only calls async-signal-safe libc functions
        // (open, write, setrlimit, close_range, fcntl, dup2) on memory
        // prepared before the fork.
        unsafe {
            cmd.pre_exec(move || self.apply());
        }
    }

    /// Runs in the forked child: only async-signal-safe calls.
    fn apply(&self) -> std::io::Result<()> {
        for procs in &self.procs_files {
            // SAFETY: a valid NUL-terminated path; open/write/close are async-signal-safe.
            unsafe {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
                if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
            }
        }
        for &(resource, value) in &self.rlimits {
            let limit = libc::rlimit { rlim_cur: value, rlim_max: value };
            // SAFETY: setrlimit with a valid struct.
            if unsafe { libc::setrlimit(resource, &limit) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        close_on_exec_above_stdio();
        for &fd in &self.inherited {
            // SAFETY: fcntl on an fd this process owns; clears only CLOEXEC.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        for &(fd, number) in &self.fds_at {
            // SAFETY: dup2 onto a low number no other fd handed on uses; the copy is not close-on-exec.
            if unsafe { libc::dup2(fd, number) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Some(check) = &self.exec_check {
            check.install()?;
        }
        Ok(())
    }
}

/// Marks every fd above stdio close-on-exec (in the forked child), so no
/// fd clix inherited from whatever started it (an agent harness, a
/// terminal) reaches bwrap or the program; the fds meant for them are
/// handed on after this. Async-signal-safe.
fn close_on_exec_above_stdio() {
    // SAFETY: close_range only changes flags of this process's own fds.
    let marked = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) } == 0;
    if !marked {
        // Kernels before 5.11: one fcntl per possible fd (unused ones fail harmlessly).
        // SAFETY: getrlimit with a valid struct; fcntl on fds of this process.
        unsafe {
            let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            let top =
                if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 { limit.rlim_cur.min(1 << 16) } else { 1024 };
            for fd in 3..top as i32 {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
}

/// A close-on-exec pipe (read end, write end), both at fds >= `HIGH_FD`:
/// what bwrap's pipes and a [`Service`](crate::Service)'s fds are made from.
pub fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((high(read)?, high(write)?))
}

/// `fd` moved to a number >= `HIGH_FD` (close-on-exec).
pub(crate) fn high(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    if fd.as_raw_fd() >= HIGH_FD {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC on an owned fd returns a new fd we own.
    let copy = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, HIGH_FD) };
    if copy < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `copy` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// The read end of a pipe that already holds `bytes` and is closed for
/// writing, so the reader gets exactly `bytes` and then end of file. Each
/// run gets its own, so concurrent runs never share a file offset.
fn filled_pipe(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    use std::io::Write;
    let (read, write) = pipe()?;
    // The filter (a few hundred bytes) fits a pipe's buffer (64 KiB): this never blocks.
    if bytes.len() > 16 * 1024 {
        return Err(std::io::Error::other("the syscall filter is larger than a pipe buffer"));
    }
    std::fs::File::from(write).write_all(bytes)?;
    Ok(read)
}

/// The host pid of the sandboxed program, from bwrap's info fd.
async fn read_child_pid(fd: OwnedFd) -> Option<i32> {
    let text = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut s = String::new();
        let _ = std::fs::File::from(fd).read_to_string(&mut s);
        s
    })
    .await
    .ok()?;
    let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    value.get("child-pid")?.as_i64().map(|p| p as i32)
}
