//! Starting a run in two steps. First bubblewrap sets the sandbox up around
//! a waiting shell, the *stub*: the new namespaces, the mounts, the syscall
//! filter and the run's own cgroups. None of that depends on the request,
//! and it is most of a start's cost (moving a process into a cgroup-v1
//! cgroup alone waits for an RCU grace period, 7–27 ms measured here).
//! Then the request (its folder, the program and its arguments) is written
//! to the stub as one line of shell, and the stub `exec`s the program. The
//! program is the process bwrap started, with the environment, limits and
//! descriptors a direct start would give it; the shell leaves nothing
//! behind but `PWD`/`OLDPWD`, which the line puts back as they were.
//!
//! A cold start does both steps at once. A sandbox that keeps a stub ready
//! (`keep_ready`, on by default) has the next one set up on a thread of its
//! own while the current run goes on, so the next run of a session starts
//! in the time an `exec` takes.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::cgroup::RunCgroups;
use crate::exec_check::{self, ExecJudge, Refusals};
use clix_process::Groups;

use crate::run::{BwrapPipes, ChildLimits, KILL_GRACE, SandboxError, Started, pipe, run_cgroups, unavailable};
use crate::settings::SandboxSettings;

/// The descriptor the stub reads its line from. A shell's redirections
/// only reach single-digit descriptors, and the line closes this one
/// (`3<&-`) so the program never sees it.
pub(crate) const SCRIPT_FD: i32 = 3;

/// The stub's program: `sh -c '. /proc/self/fd/3' sandbox`. `$0` names
/// the shell in its own messages (`sandbox: 1: exec: nope: not found`).
pub(crate) fn stub_argv(sh: &Path) -> Vec<String> {
    vec![sh.display().to_string(), "-c".into(), format!(". /proc/self/fd/{SCRIPT_FD}"), "sandbox".into()]
}

/// bwrap and its stub, built but not started.
pub(crate) struct Launch {
    pub(crate) cmd: tokio::process::Command,
    pub(crate) settings: SandboxSettings,
    pub(crate) pipes: BwrapPipes,
    /// The judge of every exec inside, with the sandbox's own two; `None`: no check.
    pub(crate) exec_check: Option<(Arc<dyn ExecJudge>, exec_check::Setup)>,
    /// The repository paths mounted read-only in it (`Sandbox::git_protected`).
    pub(crate) git: Vec<PathBuf>,
}

/// A sandbox that is set up, its shell waiting for the line to run.
pub(crate) struct Stub {
    child: tokio::process::Child,
    groups: Groups,
    cgroups: RunCgroups,
    line: OwnedFd,
    refusals: Refusals,
    git: Vec<PathBuf>,
}

impl Launch {
    /// Spawns bwrap and returns once the sandbox is set up around the stub.
    /// Blocks the calling thread while the child joins its cgroups.
    pub(crate) async fn spawn(self) -> Result<Stub, SandboxError> {
        self.spawn_telling(&AtomicI32::new(0)).await
    }

    /// [`Launch::spawn`], with bwrap's process group in `setting_up` from
    /// its start until the stub is set up (0 otherwise): what the owner of
    /// a stub being set up on another thread kills if it goes first.
    async fn spawn_telling(self, setting_up: &AtomicI32) -> Result<Stub, SandboxError> {
        let Launch { mut cmd, settings, pipes, exec_check, git } = self;
        let spawn_error = |e: std::io::Error| SandboxError::Spawn { program: "bwrap".into(), reason: e.to_string() };
        let (line_read, line) = pipe().map_err(spawn_error)?;
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let cgroups = run_cgroups(&settings);
        let mut limits = ChildLimits::new(&settings, &cgroups, pipes.child_fds().to_vec())
            .with_fds_at(vec![(line_read.as_raw_fd(), SCRIPT_FD)]);
        let mut refusals = Refusals::default();
        if let Some((judge, setup)) = exec_check {
            let (child_end, check_refusals) = exec_check::start(judge, setup).map_err(spawn_error)?;
            limits = limits.with_exec_check(child_end);
            refusals = check_refusals;
        }
        limits.install(&mut cmd);
        let child = cmd.spawn().map_err(|e| match e.raw_os_error() {
            // The filter with a listener needs Linux 5.0 (5.5 for its "go on" answer).
            Some(libc::EINVAL | libc::ENOSYS) => unavailable(&format!(
                "this kernel cannot check each program the sandbox starts against the policy (seccomp user \
                 notification: {e}); a policy with rules needs Linux 5.5 or later"
            )),
            _ => spawn_error(e),
        })?;
        drop(cmd);
        drop(line_read);
        let mut groups = Groups::of(&child, KILL_GRACE);
        let _told = Told::new(setting_up, child.id().and_then(|pid| i32::try_from(pid).ok()).unwrap_or(0));
        // The shell, and then the program it becomes, leads a session of its own (bwrap --new-session).
        let Some(shell) = pipes.child_pid().await else {
            // bwrap writes the child's pid once the sandbox is set up;
            // without it, bwrap itself failed (no user namespaces, …), or the
            // reading did (the runtime is shutting down): then bwrap may be
            // alive mid-setup, its first process waiting for it, so both go
            // now (the pid is not reaped yet, so the group is still theirs).
            let out = end_failed(child, groups, cgroups).await.map_err(spawn_error)?;
            let reason = String::from_utf8_lossy(&out.stderr).trim().to_string();
            tracing::debug!(%reason, "sandbox: bwrap could not set the sandbox up");
            return Err(unavailable(&format!("bwrap cannot create the sandbox here: {reason}")));
        };
        groups.set_inner(shell);
        Ok(Stub { child, groups, cgroups, line, refusals, git })
    }
}

/// A process group published for as long as this lives.
struct Told<'a>(&'a AtomicI32);

impl<'a> Told<'a> {
    fn new(slot: &'a AtomicI32, pgid: i32) -> Self {
        slot.store(pgid, Ordering::SeqCst);
        Told(slot)
    }
}

impl Drop for Told<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::SeqCst);
    }
}

impl Stub {
    /// Whether the stub is still waiting: bwrap has not ended, and its
    /// shell is neither gone nor a zombie (nothing killed it since it was
    /// made). bwrap holds the line's pipe too, so a dead shell would
    /// otherwise only show as the run's exit status.
    fn waiting(&mut self) -> bool {
        let shell_alive = self.groups.inner().is_some_and(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
            matches!(state, Some(s) if s != "Z" && s != "X")
        });
        shell_alive && matches!(self.child.try_wait(), Ok(None))
    }

    /// Ends a stub that was never given a line: SIGKILL to its groups now,
    /// with no grace, since nothing of anyone's runs in it yet.
    fn discard(mut self) {
        self.groups.kill_now();
    }

    /// The repository paths mounted read-only in this stub.
    pub(crate) fn git_protected(&self) -> &[PathBuf] {
        &self.git
    }

    /// Hands the stub its line; the program is running (or its shell is
    /// reporting why not) once this returns. `Err` if the stub was gone,
    /// with why: the write's error, then what bwrap said as it ended (a
    /// mount that failed, a refused exec), so that the failure names its cause.
    pub(crate) async fn start(self, line: Vec<u8>) -> Result<Started, String> {
        let Stub { child, groups, cgroups, line: fd, refusals, .. } = self;
        // The line fits a pipe's buffer unless its arguments are huge; a
        // thread of its own keeps a long one from blocking the caller.
        let written = tokio::task::spawn_blocking(move || std::fs::File::from(fd).write_all(&line)).await;
        let error = match written {
            Ok(Ok(())) => return Ok((child, groups, cgroups, refusals)),
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        let mut why = vec![error];
        if let Ok(out) = end_failed(child, groups, cgroups).await {
            why.push(format!("bwrap {}", out.status));
            why.extend(
                String::from_utf8_lossy(&out.stderr).lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from),
            );
        }
        why.extend(refusals.take().iter().map(|r| r.trim().to_string()));
        Err(why.join("; "))
    }
}

/// Ends a bwrap whose sandbox failed before anything of anyone's ran in
/// it: every process of it at once (no grace), then what it said as it
/// ended, its cgroups removed. A bwrap still not reaped 2 s after the
/// SIGKILL is an error rather than a wait for ever.
async fn end_failed(
    child: tokio::process::Child,
    mut groups: Groups,
    cgroups: RunCgroups,
) -> std::io::Result<std::process::Output> {
    groups.kill_now();
    let ended = tokio::time::timeout(Duration::from_secs(2), child.wait_with_output()).await;
    cgroups.remove().await;
    ended.map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "bwrap did not end 2 s after SIGKILL"))?
}

/// The stub's line for `argv` in `cwd`: go there, put `PWD` and `OLDPWD`
/// back as the program's environment (`var`) has them, and become the
/// program, with stdin from `/dev/null` unless the run has some.
pub(crate) fn line<'a>(argv: &[String], cwd: &Path, stdin: bool, var: impl Fn(&str) -> Option<&'a str>) -> Vec<u8> {
    let mut s = b"cd -- ".to_vec();
    clix_common::shell_quote_into(&mut s, cwd.as_os_str().as_encoded_bytes());
    s.extend_from_slice(b" || exit 1;");
    for name in ["OLDPWD", "PWD"] {
        match var(name) {
            Some(value) => {
                s.extend_from_slice(format!(" export {name}=").as_bytes());
                clix_common::shell_quote_into(&mut s, value.as_bytes());
                s.push(b';');
            }
            None => s.extend_from_slice(format!(" unset {name};").as_bytes()),
        }
    }
    s.extend_from_slice(b" exec");
    for arg in argv {
        s.push(b' ');
        clix_common::shell_quote_into(&mut s, arg.as_bytes());
    }
    s.extend_from_slice(format!(" {SCRIPT_FD}<&-").as_bytes());
    if !stdin {
        s.extend_from_slice(b" </dev/null");
    }
    s.push(b'\n');
    s
}

type Prepared = oneshot::Receiver<Result<Stub, SandboxError>>;
type Job = (Launch, oneshot::Sender<Result<Stub, SandboxError>>);

/// The next stub of a sandbox, set up ahead on a thread of the sandbox's
/// own. That thread lives as long as the sandbox: bwrap's
/// `--die-with-parent` ends a sandbox when the *thread* that started it
/// ends, so a short-lived thread cannot start one. When the sandbox goes,
/// the thread ends and a stub still waiting is killed with it.
#[derive(Default)]
pub(crate) struct ReadyStub {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    next: Mutex<Option<Prepared>>,
    /// bwrap's process group while the thread sets a stub up. The thread
    /// borrows its caller's runtime, and a runtime that ended (a test's, an
    /// attempt's) can leave it waiting for bwrap's word for ever: the
    /// sandbox's drop kills that group itself.
    setting_up: Arc<AtomicI32>,
}

impl Drop for ReadyStub {
    fn drop(&mut self) {
        let pgid = self.setting_up.swap(0, Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill with a negative pid signals that process group;
            // bwrap is not reaped yet (its thread holds it), so the group is still its.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
}

impl ReadyStub {
    /// The stub set up earlier, once it is ready; `None` if there is none
    /// or it died waiting.
    pub(crate) async fn take(&self) -> Option<Stub> {
        let prepared = self.next.lock().ok()?.take()?;
        let mut stub = prepared.await.ok()?.ok()?;
        stub.waiting().then_some(stub)
    }

    /// Whether a stub is set up (or being set up) for the next run.
    pub(crate) fn pending(&self) -> bool {
        self.next.lock().is_ok_and(|next| next.is_some())
    }

    /// Has `launch` set up on the sandbox's thread for the next run.
    pub(crate) fn prepare(&self, launch: Launch) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (Ok(mut jobs), Ok(mut next)) = (self.jobs.lock(), self.next.lock()) else { return };
        let sender = jobs.get_or_insert_with(|| start_thread(runtime, Arc::clone(&self.setting_up)));
        let (reply, prepared) = oneshot::channel();
        if sender.send((launch, reply)).is_ok() {
            *next = Some(prepared);
        }
    }
}

fn start_thread(runtime: tokio::runtime::Handle, setting_up: Arc<AtomicI32>) -> mpsc::Sender<Job> {
    let (sender, jobs) = mpsc::channel::<Job>();
    let spawned = std::thread::Builder::new().name("clix-sandbox-ready".into()).spawn(move || {
        for (launch, reply) in jobs {
            // A stub nobody waits for any more never ran anything: it is killed at once.
            if let Err(Ok(unwanted)) = reply.send(runtime.block_on(launch.spawn_telling(&setting_up))) {
                unwanted.discard();
            }
        }
    });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "sandbox: no thread to set the next run up ahead; runs start cold");
    }
    sender
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(argv: &[&str], cwd: &str, stdin: bool, env: &[(&str, &str)]) -> String {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let var = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        String::from_utf8(line(&argv, Path::new(cwd), stdin, var)).unwrap()
    }

    #[test]
    fn the_line_quotes_every_byte_and_closes_its_own_descriptor() {
        /// argv, current folder, has stdin, variables, the line.
        type Case<'a> = (&'a [&'a str], &'a str, bool, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            (
                &["grep", "-c", "x"],
                "/ws",
                false,
                &[],
                "cd -- '/ws' || exit 1; unset OLDPWD; unset PWD; exec 'grep' '-c' 'x' 3<&- </dev/null\n",
            ),
            (
                &["sh", "-c", "echo 'a' $HOME\n`x`"],
                "/w s/it's",
                true,
                &[("PWD", "/p")],
                "cd -- '/w s/it'\\''s' || exit 1; unset OLDPWD; export PWD='/p'; \
                 exec 'sh' '-c' 'echo '\\''a'\\'' $HOME\n`x`' 3<&-\n",
            ),
        ];
        for (argv, cwd, stdin, env, want) in cases {
            assert_eq!(text(argv, cwd, *stdin, env), *want, "{argv:?}");
        }
    }

    /// A stub that ended before it took its line (a bwrap whose set-up
    /// failed): the error says why, in bwrap's own words and exit status.
    #[tokio::test]
    async fn a_stub_that_ended_says_why_it_could_not_take_its_line() {
        let (line_read, line_write) = pipe().unwrap();
        let child = tokio::process::Command::new("sh")
            .args(["-c", "echo 'bwrap: cannot mount the workspace' >&2; exit 3"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        drop(line_read);
        let pid = child.id().unwrap();
        // Ended (a zombie, not reaped): what bwrap is when its set-up failed.
        for _ in 0..500 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            if stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let groups = Groups::of(&child, KILL_GRACE);
        let stub = Stub {
            child,
            groups,
            cgroups: RunCgroups::default(),
            line: line_write,
            refusals: Refusals::default(),
            git: Vec::new(),
        };
        let Err(why) = stub.start(b"exec true\n".to_vec()).await else { panic!("a stub with no reader took its line") };
        assert!(why.starts_with("Broken pipe"), "{why}");
        assert!(why.contains("bwrap exit status: 3"), "{why}");
        assert!(why.ends_with("bwrap: cannot mount the workspace"), "{why}");
    }

    /// The line run by a real `sh`: every argument arrives byte for byte.
    #[test]
    fn a_real_shell_hands_every_argument_on_unchanged() {
        let args = ["plain", "it's", "$HOME `id` $(id) \\n", "two\nlines", "", "*", "--", "-c"];
        let mut argv = vec!["printf".to_string(), "<%s>".to_string()];
        argv.extend(args.iter().map(|s| s.to_string()));
        let dir = tempfile::tempdir().unwrap();
        let script = line(&argv, dir.path(), false, |_| None);
        std::fs::write(dir.path().join("line"), &script).unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", ". ./line"])
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        let want: String = args.iter().map(|a| format!("<{a}>")).collect();
        assert_eq!(String::from_utf8_lossy(&out.stdout), want);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
