//! One child process, supervised: everything between its spawn and its
//! [`Outcome`], written once for every crate that starts a program and waits
//! for it (clix-sandbox for bubblewrap, clix-clip for ssh, scp, docker and
//! kubectl).
//!
//! This crate owns:
//!
//! - feeding stdin: the bytes are written by a task of their own, so stdin
//!   larger than a pipe's buffer never blocks the wait, and a child that stops
//!   reading (`head`, `true`) is not an error; a piped stdin with nothing to
//!   feed is closed at once, so the child reads end of file;
//! - capture: stdout and stderr read as they come, each kept up to a cap, every
//!   byte (and every stdout newline) counted, so the totals are exact however
//!   much was dropped;
//! - the time limit: SIGTERM to the child's innermost process group (see
//!   [`Groups`]), SIGKILL to every group after one grace, then SIGKILL again to
//!   every group, so what the child left running in them goes with it; the exit
//!   code is then `clix_common::exit::TIMEOUT` (124, as GNU `timeout`);
//! - what is kept on time-out: everything read until the end. An agent sees the
//!   partial output of a command that timed out, which is often what tells it
//!   why (the last line before a hang);
//! - the bounded drain: once the child has ended, its pipes are read for at
//!   most [`DRAIN`] more ([`DRAIN_AFTER_KILL`] after a kill at the time limit),
//!   since a process it left behind may hold them open for ever; what was read
//!   by then is kept;
//! - cancellation: dropping the future of [`supervise`] (its caller gave up: a
//!   cancelled line, an outer time limit) sends SIGTERM to the groups at once
//!   and SIGKILL after the grace, from a thread of its own, since a drop cannot
//!   wait; the stdin and capture tasks end with it;
//! - the exit code of a status: the child's own, or 128+N for signal N;
//! - the warden ([`warden`]): a process forked (not executed) with the first
//!   child, in a session of its own, reading a pipe only its owner writes.
//!   Children enlist their group between fork and exec (`warden::enlist`), and
//!   `Groups` and a run's cgroups register and forget themselves; at end of
//!   file (the owner died, SIGKILL included) the warden sends SIGKILL to every
//!   group still listed and removes the folders. bwrap's `--die-with-parent`
//!   alone is not enough: an outer bwrap killed mid-setup left the sandbox's
//!   first process waiting on an eventfd for ever, with init as its parent.
//!
//! It spawns nothing but its warden: the caller builds and starts the child
//! (its program, isolation, environment and resource limits) in a process group
//! of its own (`Command::process_group(0)`), and hands it over with its groups.
//! It knows nothing of what the child is or why it runs (no sandbox, no remote
//! shell, no audit, no presentation): it sees a child, its process groups and
//! bytes.

use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;
use tokio::task::JoinHandle;

pub mod warden;

/// How long the pipes are still read after the child ended by itself: a
/// grandchild that holds them open must not hang the caller.
pub const DRAIN: Duration = Duration::from_millis(500);
/// The same after a kill at the time limit. What mattered was read while
/// the child ran (capture reads as output comes); a pipe whose writers are
/// all dead ends at once; and a pipe still open after the kill is held by
/// a process outside the child's groups (a detached grandchild, a shared
/// connection that relays a remote command until that ends), which the
/// caller, already past its limit, must not wait for.
pub const DRAIN_AFTER_KILL: Duration = Duration::from_millis(50);
/// The bytes read from a pipe at a time.
const CHUNK: usize = 64 * 1024;

/// What a child did. Totals are exact even when output was capped.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Standard output, up to the cap.
    pub stdout: Vec<u8>,
    /// Standard error, up to the cap.
    pub stderr: Vec<u8>,
    /// The exit code; 128+N for a signal, 124 for the time limit.
    pub exit_code: i32,
    /// Wall time from the caller's start to the end.
    pub duration: Duration,
    /// The limit that ended it, when the time limit did.
    pub timed_out: Option<Duration>,
    /// Bytes written to stdout, kept or not.
    pub stdout_total: u64,
    /// Newlines written to stdout, kept or not.
    pub stdout_lines_total: u64,
    /// Bytes written to stderr, kept or not.
    pub stderr_total: u64,
}

impl Outcome {
    /// Bytes of stdout that were counted but not kept.
    pub fn stdout_dropped(&self) -> u64 {
        self.stdout_total - self.stdout.len() as u64
    }

    /// Whether some of stdout or stderr was counted but not kept.
    pub fn was_capped(&self) -> bool {
        self.stdout_dropped() > 0 || self.stderr_total > self.stderr.len() as u64
    }
}

/// The process groups of one started child, and the rule that ends them:
/// SIGTERM to the innermost group, then, after the grace, SIGKILL to all.
///
/// Armed from the start: dropped armed (the caller gave up on the child),
/// the groups get SIGTERM at once and SIGKILL after the grace.
#[derive(Debug)]
pub struct Groups {
    /// The child itself, leader of its own process group.
    outer: i32,
    /// A group inside the child that holds the real program, when the
    /// child is a wrapper that started it in a session of its own.
    inner: Option<i32>,
    /// Time between SIGTERM and SIGKILL.
    grace: Duration,
    armed: bool,
}

impl Groups {
    /// The group of `child`, which must lead its own process group (spawned
    /// with `process_group(0)`), ended with `grace` between SIGTERM and
    /// SIGKILL. The caller chooses the grace: it is the time the program
    /// gets to clean up after itself.
    pub fn of(child: &Child, grace: Duration) -> Groups {
        // No id: the child was already reaped, and there is nothing to signal.
        let outer = child.id().and_then(|pid| i32::try_from(pid).ok()).unwrap_or(0);
        warden::watch_group(outer);
        Groups { outer, inner: None, grace, armed: true }
    }

    /// Adds the group led by `pid` inside the child: the real program,
    /// started by the child in a session of its own. It gets SIGTERM
    /// instead of the child, so the program can clean up while the child,
    /// which may end it abruptly when it dies itself, is left alive until
    /// the SIGKILL that both get.
    pub fn set_inner(&mut self, pid: i32) {
        warden::watch_group(pid);
        self.inner = Some(pid);
    }

    /// The inner group's leader, if there is one.
    pub fn inner(&self) -> Option<i32> {
        self.inner
    }

    /// SIGTERM to the innermost group.
    pub fn terminate(&self) {
        signal_group(self.inner.unwrap_or(self.outer), libc::SIGTERM);
    }

    /// SIGKILL to every group.
    pub fn kill(&self) {
        for pid in self.inner.into_iter().chain([self.outer]) {
            signal_group(pid, libc::SIGKILL);
        }
    }

    /// SIGKILL to every group now, with no grace, then disarmed: for a
    /// child that never ran anything of anyone's (a sandbox that failed or
    /// was not wanted), or that must go at once. Its groups are signalled
    /// before they are forgotten, so nothing in them is left to the warden's
    /// table or to nobody.
    pub fn kill_now(&mut self) {
        self.kill();
        self.disarm();
    }

    /// The child is over (or is meant to outlive this value): dropping it
    /// signals nothing.
    pub fn disarm(&mut self) {
        if self.armed {
            self.forget();
        }
        self.armed = false;
    }

    /// The warden need not end these groups any more.
    fn forget(&self) {
        for pid in self.inner.into_iter().chain([self.outer]) {
            warden::forget_group(pid);
        }
    }

    /// Whether dropping it now would end the groups (nothing has ended or
    /// disarmed them yet).
    pub fn is_armed(&self) -> bool {
        self.armed
    }

    /// Ends `child` now: SIGTERM, up to the grace for it to exit, SIGKILL,
    /// then SIGKILL again to every group for what it left running in them.
    /// Returns its status (`None` if it could not be waited for) and
    /// disarms.
    pub async fn end(&mut self, child: &mut Child) -> Option<ExitStatus> {
        self.terminate();
        let status = match tokio::time::timeout(self.grace, child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                self.kill();
                child.wait().await.ok()
            }
        };
        self.kill();
        self.disarm();
        status
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.terminate();
        let later = Groups { armed: false, ..*self };
        let grace = self.grace;
        // Should this process end during the grace, its warden sends the SIGKILL.
        let spawned = std::thread::Builder::new().name("clix-process-kill".into()).spawn(move || {
            std::thread::sleep(grace);
            later.kill();
            later.forget();
        });
        if spawned.is_err() {
            // No thread to wait on: no grace either, rather than no end.
            self.kill();
            self.forget();
        }
    }
}

/// Feeds `stdin` to `child`, captures its stdout and stderr (at most `cap`
/// bytes of each kept, all counted), and waits for it to end or for
/// `timeout` to pass, when [`Groups::end`] ends it (exit 124). Output read
/// until then is kept either way. `started` is when the caller began (the
/// outcome's duration counts from it). Dropping the future ends the child
/// as dropping its [`Groups`] does.
///
/// The child must have been spawned with its stdout and stderr piped (a
/// stream that is not is read as empty) and, for `stdin` to reach it, its
/// stdin piped.
pub async fn supervise(
    mut child: Child,
    mut groups: Groups,
    stdin: Option<&[u8]>,
    timeout: Duration,
    cap: usize,
    started: Instant,
) -> Outcome {
    // A piped stdin with nothing to feed is dropped here: the child reads end of file.
    let feed = match (child.stdin.take(), stdin) {
        (Some(mut pipe), Some(bytes)) => {
            let bytes = bytes.to_vec();
            Some(Task(tokio::spawn(async move {
                // A child that stops reading early is not an error.
                let _ = pipe.write_all(&bytes).await;
            })))
        }
        _ => None,
    };
    let stdout = Capture::start(child.stdout.take(), cap);
    let stderr = Capture::start(child.stderr.take(), cap);
    let (status, timed_out) = tokio::select! {
        status = child.wait() => (status.ok(), None),
        () = tokio::time::sleep(timeout) => (groups.end(&mut child).await, Some(timeout)),
    };
    groups.disarm();
    drop(feed);
    let limit = if timed_out.is_some() { DRAIN_AFTER_KILL } else { DRAIN };
    let (stdout, stderr) = tokio::join!(stdout.drain(limit), stderr.drain(limit));
    let exit_code = match (timed_out, status) {
        (Some(_), _) => clix_common::exit::TIMEOUT,
        (None, Some(status)) => exit_code(status),
        (None, None) => clix_common::exit::FAILURE,
    };
    Outcome {
        exit_code,
        duration: started.elapsed(),
        timed_out,
        stdout_total: stdout.total,
        stdout_lines_total: stdout.lines,
        stderr_total: stderr.total,
        stdout: stdout.kept,
        stderr: stderr.kept,
    }
}

/// The exit code of `status`: the child's own, or 128+N for signal N.
pub fn exit_code(status: ExitStatus) -> i32 {
    use clix_common::exit::{FAILURE, SIGNALLED};
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| SIGNALLED + s)).unwrap_or(FAILURE)
}

fn signal_group(pid: i32, signal: i32) {
    if pid > 0 {
        // SAFETY: kill with a negative pid signals that process group.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

/// A spawned task, aborted when dropped: nothing outlives its supervisor.
struct Task(JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Output kept up to a cap, with exact totals.
#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    total: u64,
    lines: u64,
}

/// One stream being read into a buffer that keeps what was read even when
/// the reading is abandoned.
struct Capture {
    task: Task,
    read: Arc<Mutex<Captured>>,
}

impl Capture {
    fn start(stream: Option<impl AsyncRead + Unpin + Send + 'static>, cap: usize) -> Capture {
        let read = Arc::new(Mutex::new(Captured::default()));
        let into = Arc::clone(&read);
        let task = Task(tokio::spawn(async move {
            let Some(mut stream) = stream else { return };
            let mut buf = vec![0u8; CHUNK];
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
        }));
        Capture { task, read }
    }

    /// Waits up to `limit` for the stream's end, then takes what was read.
    async fn drain(mut self, limit: Duration) -> Captured {
        let _ = tokio::time::timeout(limit, &mut self.task.0).await;
        std::mem::take(&mut *self.read.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
