//! One host child (`ssh`, `scp`, `docker`, `kubectl`): the user's own
//! environment minus clix's secrets, in a process group of its own,
//! supervised by `clix-process` (stdin, capped capture with exact counts,
//! the time limit, what is kept when it hits).

use std::process::Stdio;
use std::time::{Duration, Instant};

use clix_process::{Groups, Outcome, supervise};
use clix_sandbox::is_secret_name;

/// Time between SIGTERM and SIGKILL. Shorter than the sandbox's: the child
/// is a client that relays a program running elsewhere, which gets its own
/// grace there (the remote `timeout -k`); the client has nothing to clean
/// up, and one that lingers only delays the answer.
const KILL_GRACE: Duration = Duration::from_millis(500);

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
    let mut cmd = command(argv)?;
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
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
    let child = spawn(&mut cmd, argv)?;
    let groups = Groups::of(&child, KILL_GRACE);
    Ok(supervise(child, groups, stdin, timeout, cap, started).await)
}

/// Runs `argv` with no stdin and its output thrown away, within `timeout`:
/// for a program that leaves a process in the background (ssh's master
/// connection), which would otherwise hold the output pipes open. Its
/// exit code, or `None` when the time ran out.
pub(crate) async fn run_detached(argv: &[String], timeout: Duration) -> Result<Option<i32>, SpawnError> {
    let mut cmd = command(argv)?;
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let child = spawn(&mut cmd, argv)?;
    let groups = Groups::of(&child, KILL_GRACE);
    // Ended by itself, what it left in the background is meant to stay;
    // the supervisor only ends the groups at the time limit.
    let outcome = supervise(child, groups, None, timeout, 0, Instant::now()).await;
    Ok(outcome.timed_out.is_none().then_some(outcome.exit_code))
}

/// `argv` with the person's environment minus secrets, in a process group
/// of its own (so the time limit reaches all it starts); the caller sets
/// its stdio.
fn command(argv: &[String]) -> Result<tokio::process::Command, SpawnError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(SpawnError::Other("nothing to run".into()));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).env_clear().envs(child_env()).process_group(0);
    clix_process::warden::enlist(&mut cmd);
    Ok(cmd)
}

fn spawn(cmd: &mut tokio::process::Command, argv: &[String]) -> Result<tokio::process::Child, SpawnError> {
    let program = argv.first().map(String::as_str).unwrap_or_default();
    cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => SpawnError::Missing(program.to_string()),
        _ => SpawnError::Other(format!("cannot start {program}: {e}")),
    })
}
