//! One host child (`ssh`, `scp`, `docker`, `kubectl`): the user's own
//! environment minus clix's secrets, stdin piped, both streams captured up
//! to a cap with exact counts, and the time limit enforced by killing its
//! process group.

use std::process::Stdio;
use std::time::{Duration, Instant};

use clix_sandbox::{Outcome, is_secret_name};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// Time between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(1);
/// How long output is still read after the child ended: a process it left
/// behind holding the pipe must not hang the call.
const DRAIN_LIMIT: Duration = Duration::from_millis(500);

/// Why a child did not start.
#[derive(Debug)]
pub(crate) enum SpawnError {
    /// The program is not installed (on PATH).
    Missing(String),
    /// Any other reason.
    Other(String),
}

/// The environment a child gets: this process's, without any variable
/// whose name looks secret (`AGENT_API_KEY`, `OPENAI_API_KEY`, `GH_TOKEN`…).
/// ssh still finds the person's keys and agent (`HOME`, `SSH_AUTH_SOCK`).
pub(crate) fn child_env() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os().filter(|(name, _)| !is_secret_name(&name.to_string_lossy())).collect()
}

/// Runs `argv` on the host within `timeout`, keeping at most `cap` bytes
/// of each stream.
pub(crate) async fn run(
    argv: &[String],
    stdin: Option<&[u8]>,
    timeout: Duration,
    cap: usize,
) -> Result<Outcome, SpawnError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(SpawnError::Other("nothing to run".into()));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(child_env())
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => SpawnError::Missing(program.clone()),
        _ => SpawnError::Other(format!("cannot start {program}: {e}")),
    })?;
    let mut guard = GroupGuard { pid: child.id().map_or(0, |p| p as i32), armed: true };

    let stdin_task = match (child.stdin.take(), stdin) {
        (Some(mut pipe), Some(bytes)) => {
            let bytes = bytes.to_vec();
            Some(tokio::spawn(async move {
                // A program that stops reading early is not an error.
                let _ = pipe.write_all(&bytes).await;
            }))
        }
        _ => None,
    };
    let stdout = tokio::spawn(capture(child.stdout.take(), cap));
    let stderr = tokio::spawn(capture(child.stderr.take(), cap));
    let (status, timed_out) = tokio::select! {
        status = child.wait() => (status.ok(), None),
        () = tokio::time::sleep(timeout) => {
            signal_group(guard.pid, libc::SIGTERM);
            let status = match tokio::time::timeout(KILL_GRACE, child.wait()).await {
                Ok(status) => status.ok(),
                Err(_) => {
                    signal_group(guard.pid, libc::SIGKILL);
                    child.wait().await.ok()
                }
            };
            // What it started in its group goes with it.
            signal_group(guard.pid, libc::SIGKILL);
            (status, Some(timeout))
        }
    };
    guard.armed = false;
    if let Some(task) = stdin_task {
        task.abort();
    }
    let (stdout, stderr) = (drain(stdout).await, drain(stderr).await);
    let exit_code = match (timed_out, status) {
        (Some(_), _) => clix_common::exit::TIMEOUT,
        (None, Some(s)) => exit_code_of(s),
        (None, None) => 1,
    };
    Ok(Outcome {
        exit_code,
        duration: started.elapsed(),
        timed_out,
        stdout_total: stdout.total,
        stdout_lines_total: stdout.lines,
        stderr_total: stderr.total,
        stdout: stdout.kept,
        stderr: stderr.kept,
    })
}

/// Kills the child's group when the call is dropped (a cancelled line).
struct GroupGuard {
    pid: i32,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            signal_group(self.pid, libc::SIGKILL);
        }
    }
}

fn signal_group(pid: i32, signal: i32) {
    if pid > 0 {
        // SAFETY: kill with a negative pid signals that process group, ours.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

fn exit_code_of(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    total: u64,
    lines: u64,
}

async fn capture(stream: Option<impl AsyncRead + Unpin>, cap: usize) -> Captured {
    let mut c = Captured::default();
    let Some(mut stream) = stream else { return c };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return c,
            Ok(n) => {
                let chunk = &buf[..n];
                c.total += n as u64;
                c.lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
                let room = cap.saturating_sub(c.kept.len());
                c.kept.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
}

async fn drain(task: tokio::task::JoinHandle<Captured>) -> Captured {
    let abort = task.abort_handle();
    match tokio::time::timeout(DRAIN_LIMIT, task).await {
        Ok(Ok(c)) => c,
        _ => {
            abort.abort();
            Captured::default()
        }
    }
}
