//! A long-lived program in the sandbox (the browser, an MCP server):
//! started with the same layout, environment, filter and limits as a run,
//! talked to over pipes at fixed descriptors or over its stdin and stdout,
//! and ended when its [`Service`] is dropped or stopped.
//!
//! Unlike a run it has no time limit and no captured stdout: the caller
//! owns its pipes. Its stderr is kept as a short tail, for the error that
//! explains why it died.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use clix_process::Groups;
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout};

use crate::cgroup::RunCgroups;
use crate::run::{BwrapPipes, ChildLimits, KILL_GRACE, Sandbox, SandboxError, high, run_cgroups};

/// The end of the program's stderr kept for error messages.
const STDERR_TAIL: usize = 4096;

/// One program to keep running.
#[derive(Debug)]
pub struct ServiceRequest<'a> {
    /// The program and its arguments (an absolute path, or a name on the sandbox's PATH).
    pub argv: &'a [String],
    /// Working directory, inside the workspace.
    pub cwd: &'a Path,
    /// Extra host folders visible read-only (fonts, the program's own folder).
    pub read_only: &'a [PathBuf],
    /// Share the host's network namespace. The caller then restricts the
    /// program itself (the browser's resolver rules); `false` gives it none.
    pub share_network: bool,
    /// Pipe ends handed to the program at fixed descriptor numbers (CDP
    /// reads fd 3 and writes fd 4); each number must be 3..=9.
    pub fds: Vec<(i32, OwnedFd)>,
}

/// A running service; dropping it ends the program and everything it
/// started (its process group, and the sandbox's pid namespace with it).
pub struct Service {
    child: tokio::process::Child,
    groups: Groups,
    _cgroups: RunCgroups,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Sandbox {
    /// Starts `req` in the sandbox and returns once the sandbox is set up.
    pub async fn start_service(&self, req: ServiceRequest<'_>) -> Result<Service, SandboxError> {
        Ok(self.start(req, &[], false).await?.0)
    }

    /// Starts `req` with its stdin and stdout as pipes (a program that
    /// speaks over them, as an MCP server does), and `env` set on top of
    /// the allowlist: variables its caller's configuration names for it.
    pub async fn start_stdio_service(
        &self,
        req: ServiceRequest<'_>,
        env: &[(String, String)],
    ) -> Result<(Service, ChildStdin, ChildStdout), SandboxError> {
        let program = req.argv.first().cloned().unwrap_or_default();
        let (service, stdio) = self.start(req, env, true).await?;
        stdio
            .ok_or_else(|| SandboxError::Spawn { program, reason: "no pipes to its stdin and stdout".into() })
            .map(|(stdin, stdout)| (service, stdin, stdout))
    }

    async fn start(
        &self,
        req: ServiceRequest<'_>,
        env: &[(String, String)],
        stdio: bool,
    ) -> Result<(Service, Option<(ChildStdin, ChildStdout)>), SandboxError> {
        let program = req.argv.first().cloned().unwrap_or_default();
        let spawn_error = |reason: String| SandboxError::Spawn { program: program.clone(), reason };
        if let Some((n, _)) = req.fds.iter().find(|(n, _)| !(3..=9).contains(n)) {
            return Err(spawn_error(format!("descriptor {n} cannot be handed on; use 3 to 9")));
        }
        // As for a run: a service's own folder (an MCP server's) must not
        // bring a secret store, the home folder or clix's folders with it.
        self.check_read_only(req.read_only).map_err(spawn_error)?;
        let bwrap = self.ready()?;
        let settings = self.settings();
        let cgroups = run_cgroups(settings);
        let pipes = BwrapPipes::when(bwrap.as_deref(), &program)?;
        let git = if bwrap.is_some() { self.git_protected() } else { Vec::new() };
        let sandboxed = bwrap.as_deref().zip(pipes.as_ref()).map(|(bwrap, pipes)| (bwrap, pipes, git.as_slice()));
        let mut cmd = self.launcher(req.argv, req.cwd, req.read_only, req.share_network, sandboxed);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        let piped = || if stdio { Stdio::piped() } else { Stdio::null() };
        cmd.stdin(piped()).stdout(piped()).stderr(Stdio::piped());
        // Moved above the fixed numbers first, so placing one never closes another.
        let mut handed = Vec::new();
        for (n, fd) in req.fds {
            handed.push((n, high(fd).map_err(|e| spawn_error(e.to_string()))?));
        }
        let map: Vec<(i32, i32)> = handed.iter().map(|(n, fd)| (fd.as_raw_fd(), *n)).collect();
        let inherited = pipes.as_ref().map(|p| p.child_fds().to_vec()).unwrap_or_default();
        // A browser reserves far more address space than it uses, so the
        // memory limit is the cgroup's or none, never RLIMIT_AS.
        ChildLimits::new(settings, &cgroups, inherited).without_address_limit().with_fds_at(map).install(&mut cmd);
        tracing::debug!(argv = ?req.argv, share_network = req.share_network, sandboxed = bwrap.is_some(), "sandbox: starting a service");
        let mut child = cmd.spawn().map_err(|e| spawn_error(e.to_string()))?;
        drop(handed);
        let mut groups = Groups::of(&child, KILL_GRACE);
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(pipe) = child.stderr.take() {
            tokio::spawn(keep_tail(pipe, Arc::clone(&stderr)));
        }
        if let Some(pipes) = pipes {
            let Some(program) = pipes.child_pid().await else {
                // As for a run's stub: bwrap failed, or the reading did while it sets up.
                groups.kill_now();
                let _ = child.wait().await;
                let reason = tail_text(&stderr);
                return Err(crate::run::unavailable(&format!("bwrap cannot create the sandbox here: {reason}")));
            };
            groups.set_inner(program);
        }
        let pipes = child.stdin.take().zip(child.stdout.take());
        Ok((Service { child, groups, _cgroups: cgroups, stderr }, pipes))
    }
}

impl Service {
    /// The exit code if the program has ended (it crashed, or was killed).
    pub fn exited(&mut self) -> Option<i32> {
        Some(clix_process::exit_code(self.child.try_wait().ok()??))
    }

    /// The last lines the program wrote to stderr, for an error message.
    pub fn stderr_tail(&self) -> String {
        tail_text(&self.stderr)
    }

    /// Ends the program (SIGTERM, then SIGKILL after a grace period) and
    /// waits until bubblewrap is gone.
    pub async fn stop(mut self) {
        self.groups.end(&mut self.child).await;
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // Not stopped politely: its groups end now, not after a grace,
        // and bwrap's death takes the whole pid namespace with it.
        if self.groups.is_armed() {
            self.groups.kill_now();
        }
    }
}

async fn keep_tail(mut pipe: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            return;
        }
        let mut kept = tail.lock().unwrap_or_else(|p| p.into_inner());
        kept.extend_from_slice(&buf[..n]);
        let excess = kept.len().saturating_sub(STDERR_TAIL);
        kept.drain(..excess);
    }
}

fn tail_text(tail: &Mutex<Vec<u8>>) -> String {
    let kept = tail.lock().unwrap_or_else(|p| p.into_inner());
    String::from_utf8_lossy(&kept).trim().to_string()
}
