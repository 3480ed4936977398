//! One host child (`ssh`, `scp`, `docker`, `kubectl`): the user's own
//! environment minus clix's secrets, stdin piped, both streams captured up
//! to a cap with exact counts, and the time limit enforced by killing its
//! process group.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clix_sandbox::{Outcome, is_secret_name};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// Time between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(500);
/// How long output is still read after the child ended: a process it left
/// behind holding the pipe must not hang the call.
const DRAIN_LIMIT: Duration = Duration::from_millis(500);
/// The same after a kill at the time limit: ssh's master connection holds
/// a killed client's pipes until the remote command ends.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(50);

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
/// of each stream; with `max_file`, no file it writes grows past that
/// many bytes (RLIMIT_FSIZE: a copy client that would is stopped).
pub(crate) async fn run(
    argv: &[String],
    stdin: Option<&[u8]>,
    timeout: Duration,
    cap: usize,
    max_file: Option<u64>,
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
    if let Some(bytes) = max_file {
        let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
        // SAFETY: between fork and exec only async-signal-safe calls are
        // allowed; setrlimit is one, and `limit` was made before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
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
    let (out_buf, err_buf) = (Arc::new(Mutex::new(Captured::default())), Arc::new(Mutex::new(Captured::default())));
    let stdout = tokio::spawn(capture(child.stdout.take(), cap, Arc::clone(&out_buf)));
    let stderr = tokio::spawn(capture(child.stderr.take(), cap, Arc::clone(&err_buf)));
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
    let limit = if timed_out.is_some() { DRAIN_AFTER_KILL } else { DRAIN_LIMIT };
    let (stdout, stderr) = (drain(stdout, &out_buf, limit).await, drain(stderr, &err_buf, limit).await);
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

/// Reads `stream` to its end into `into`, which keeps what was read even
/// if the reading is abandoned.
async fn capture(stream: Option<impl AsyncRead + Unpin>, cap: usize, into: Arc<Mutex<Captured>>) {
    let Some(mut stream) = stream else { return };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let chunk = &buf[..n];
                let mut c = into.lock().unwrap_or_else(|p| p.into_inner());
                c.total += n as u64;
                c.lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
                let room = cap.saturating_sub(c.kept.len());
                c.kept.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
}

/// Waits for a capture to end, at most `limit`, and takes what it read.
async fn drain(task: tokio::task::JoinHandle<()>, buf: &Mutex<Captured>, limit: Duration) -> Captured {
    let abort = task.abort_handle();
    if tokio::time::timeout(limit, task).await.is_err() {
        abort.abort();
    }
    std::mem::take(&mut *buf.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Runs `argv` with no stdin and its output thrown away, within `timeout`:
/// for a program that leaves a process in the background (ssh's master
/// connection), which would otherwise hold the output pipes open. Its
/// exit code, or `None` when the time ran out.
pub(crate) async fn run_detached(argv: &[String], timeout: Duration) -> Result<Option<i32>, SpawnError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(SpawnError::Other("nothing to run".into()));
    };
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env_clear()
        .envs(child_env())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SpawnError::Missing(program.clone()),
            _ => SpawnError::Other(format!("cannot start {program}: {e}")),
        })?;
    let mut guard = GroupGuard { pid: child.id().map_or(0, |p| p as i32), armed: true };
    let code = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => Some(status.map(exit_code_of).unwrap_or(1)),
        Err(_) => None,
    };
    // Ended by itself: what it left in the background is meant to stay.
    guard.armed = code.is_none();
    Ok(code)
}
