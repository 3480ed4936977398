//! The exec-time check: every program that starts inside the sandbox,
//! however it was reached (`sandbox run|bash`, a routed line, a script, a
//! skill's script, a hub tool, a wrapper, `awk`'s `system()`), is held
//! against the caller's [`ExecJudge`] before it runs.
//!
//! Between fork and exec of bubblewrap, the child installs a seccomp filter
//! whose one verdict besides "allow" is `SECCOMP_RET_USER_NOTIF` for
//! `execve` and `execveat`, asks the kernel for its listener
//! (`SECCOMP_FILTER_FLAG_NEW_LISTENER`), and sends the listener to clix
//! over a socket pair. bwrap and everything it starts inherit the filter,
//! and nothing inside can remove it. A thread of clix's own (one per
//! sandbox start) receives each exec while the caller waits in the kernel,
//! reads its path, arguments and folder from `/proc`, and answers: go on
//! (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`), or `EACCES` after every process
//! of the sandbox has been killed, so a refused command stops its line as
//! a refusal in the shell does. When clix goes, the listener goes with it
//! and every later exec fails (`ENOSYS`): the check fails closed.
//!
//! The first two execs of a start are the sandbox's own (bwrap, then its
//! waiting shell); they must be exactly those. Every later one is the
//! judge's.
//!
//! What it cannot see (docs/security.md): what a program does without a
//! new exec (a Python script deleting files itself); and a program that
//! rewrites its own memory from a second thread while the kernel waits on
//! the answer can exec other words than those judged (the kernel's
//! documented limit of the continue answer). Both stay inside the
//! sandbox's walls.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One program about to start inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    /// The file executed, as the caller named it (made absolute when relative).
    pub path: String,
    /// Its arguments, `argv[0]` first, as the caller passed them.
    pub argv: Vec<String>,
    /// The folder it starts in, when it could be read.
    pub cwd: Option<PathBuf>,
}

/// Decides whether a program may start inside the sandbox. `Err` is the
/// refusal's message, shown with the run's output; the sandbox then ends
/// the whole run. Called on a thread of the sandbox's while the program
/// waits; it may block (a person answering `ask`).
pub trait ExecJudge: Send + Sync {
    /// The decision on `exec`.
    fn judge(&self, exec: &Exec) -> Result<(), String>;
}

/// The refusals of one run, each once, in order.
#[derive(Clone, Default)]
pub(crate) struct Refusals(Arc<Mutex<Vec<String>>>);

impl Refusals {
    fn push(&self, message: String) {
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !all.contains(&message) {
            all.push(message);
        }
    }

    /// Every refusal so far.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The sandbox's own two execs, the ones before the judge's.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    /// bubblewrap, as it is started.
    pub(crate) bwrap: PathBuf,
    /// The stub's argv (its program first), as bwrap starts it.
    pub(crate) stub: Vec<String>,
}

/// What the child needs between fork and exec: the filter and its end of
/// the socket the listener goes back through.
pub(crate) struct ChildEnd {
    filter: Vec<libc::sock_filter>,
    socket: OwnedFd,
    /// The answering thread's end of the socket, as the fork copied it: the
    /// child closes its copy first, so that when clix dies the listener in
    /// flight dies with it and the child's exec fails instead of waiting
    /// for an answer for ever.
    answerer: RawFd,
}

impl ChildEnd {
    /// In the forked child: no new privileges, the filter with its
    /// listener, the listener sent to clix. Only async-signal-safe calls,
    /// on memory prepared before the fork.
    pub(crate) fn install(&self) -> io::Result<()> {
        // SAFETY: closes this process's copy of a socket it does not use.
        unsafe { libc::close(self.answerer) };
        let program = libc::sock_fprog { len: self.filter.len() as u16, filter: self.filter.as_ptr().cast_mut() };
        // SAFETY: prctl and seccomp with valid arguments; `program` points
        // at the filter, alive for the call.
        let listener = unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                &program as *const libc::sock_fprog,
            )
        };
        if listener < 0 {
            return Err(io::Error::last_os_error());
        }
        let sent = send_fd(self.socket.as_raw_fd(), listener as RawFd);
        // SAFETY: the listener is this process's own fd, no longer needed here.
        unsafe { libc::close(listener as RawFd) };
        sent
    }
}

/// Starts the check of one sandbox start: the child's end to install, and
/// the refusals the check will record. The thread that answers lives until
/// every process under the filter is gone.
pub(crate) fn start(judge: Arc<dyn ExecJudge>, setup: Setup) -> io::Result<(ChildEnd, Refusals)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills two fds we then own.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just created and are owned by nobody else.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // Both above the numbers the child hands fds on at: dup2 onto 3 must
    // not close `theirs`, and the child's close of its copy of `ours`
    // (`ChildEnd::install`, after the dup2s) must not close what was handed
    // on at its number. A socket pair at 3, free in a busy process, closed
    // the stub's line, and its shell never got one (CI, issue 53's stop).
    let (ours, theirs) = (crate::run::high(ours)?, crate::run::high(theirs)?);
    let refusals = Refusals::default();
    let check = Check { judge, setup, refusals: refusals.clone(), execs: 0 };
    // Open until the child has sent its listener (the thread waits for it), so open at the fork.
    let answerer = ours.as_raw_fd();
    std::thread::Builder::new().name("clix-exec-check".into()).spawn(move || {
        // No listener: the child failed before it could send one (its spawn reports why).
        if let Some(listener) = recv_fd(&ours) {
            drop(ours);
            check.serve(&listener);
        }
    })?;
    Ok((ChildEnd { filter: filter(), socket: theirs, answerer }, refusals))
}

struct Check {
    judge: Arc<dyn ExecJudge>,
    setup: Setup,
    refusals: Refusals,
    /// Execs answered so far: the first two are the setup's.
    execs: usize,
}

impl Check {
    fn serve(mut self, listener: &OwnedFd) {
        loop {
            let mut poll = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: poll on one valid pollfd.
            let ready = unsafe { libc::poll(&mut poll, 1, -1) };
            if ready < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            if poll.revents & libc::POLLIN == 0 {
                // POLLHUP: no process is left under the filter.
                return;
            }
            // SAFETY: an all-zero seccomp_notif is what RECV requires.
            let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
            // SAFETY: RECV fills the struct we own.
            if unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) } != 0 {
                // ENOENT: the caller died (or was interrupted) before we read it.
                continue;
            }
            self.answer(listener, &notif);
        }
    }

    fn answer(&mut self, listener: &OwnedFd, notif: &libc::seccomp_notif) {
        let read = read_exec(notif);
        // The pid may have died and been reused while we read its memory:
        // only an answer to a call still waiting counts.
        // SAFETY: ID_VALID reads the u64 we pass.
        if unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &notif.id) } != 0 {
            return;
        }
        let step = self.execs;
        self.execs += 1;
        let decision = match (step, read) {
            (_, Err(e)) => Err(format!(
                "[error] policy: a program the line started in the sandbox could not be checked ({e}), so it did not run\n"
            )),
            (0, Ok(exec)) if Path::new(&exec.path) == self.setup.bwrap => Ok(()),
            (1, Ok(exec))
                if exec.argv == self.setup.stub && Path::new(&exec.path) == Path::new(&self.setup.stub[0]) =>
            {
                Ok(())
            }
            (0 | 1, Ok(exec)) => {
                Err(format!("[error] sandbox: its set-up ran an unexpected program ({}), so nothing runs\n", exec.path))
            }
            (_, Ok(exec)) => self.judge.judge(&exec),
        };
        let allow = match decision {
            Ok(()) => true,
            Err(message) => {
                self.refusals.push(message);
                kill_namespace(notif.pid as i32);
                false
            }
        };
        let response = libc::seccomp_notif_resp {
            id: notif.id,
            val: 0,
            error: if allow { 0 } else { -libc::EACCES },
            flags: if allow { libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32 } else { 0 },
        };
        // SAFETY: SEND reads the response we own. A call that went away meanwhile answers ENOENT, which is fine.
        unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &response) };
    }
}

/// The most a program's arguments can hold on Linux with a default stack
/// limit is 2 MiB; more than twice that is refused as unreadable.
const MAX_ARG_BYTES: usize = 4 << 20;
/// `PATH_MAX`.
const MAX_PATH: usize = 4096;

#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// The exec `notif` is about: its path, argv and folder, read from the
/// caller's memory and `/proc`.
fn read_exec(notif: &libc::seccomp_notif) -> Result<Exec, String> {
    let pid = notif.pid;
    let nr = i64::from(notif.data.nr);
    #[cfg(target_arch = "x86_64")]
    let (nr, pointer_size) = if nr & X32_SYSCALL_BIT != 0 { (x32_native(nr), 4) } else { (nr, 8) };
    #[cfg(not(target_arch = "x86_64"))]
    let pointer_size = 8;
    let args = notif.data.args;
    let (dirfd, path_at, argv_at, flags) = if nr == libc::SYS_execveat {
        (args[0] as i32, args[1], args[2], args[4] as i32)
    } else {
        (libc::AT_FDCWD, args[0], args[1], 0)
    };
    let mem = File::open(format!("/proc/{pid}/mem")).map_err(|e| format!("its memory: {e}"))?;
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
    let mut budget = MAX_ARG_BYTES;
    let path = read_string(&mem, path_at, MAX_PATH.min(budget)).ok_or("its path is unreadable")?;
    let path = where_is(pid, &path, dirfd, flags, cwd.as_deref());
    let mut argv = Vec::new();
    let mut at = argv_at;
    while at != 0 {
        let mut word = [0u8; 8];
        mem.read_exact_at(&mut word[..pointer_size], at).map_err(|_| "its arguments are unreadable")?;
        let pointer = u64::from_ne_bytes(word);
        if pointer == 0 {
            break;
        }
        let arg = read_string(&mem, pointer, budget).ok_or("its arguments are unreadable or too long")?;
        budget = budget.saturating_sub(arg.len() + 1 + pointer_size);
        argv.push(arg);
        at += pointer_size as u64;
    }
    Ok(Exec { path, argv, cwd })
}

/// On x86_64, an x32 call's number as the native call it is.
#[cfg(target_arch = "x86_64")]
fn x32_native(nr: i64) -> i64 {
    match nr & !X32_SYSCALL_BIT {
        520 => libc::SYS_execve,
        545 => libc::SYS_execveat,
        other => other,
    }
}

/// `path` as the kernel will find it: through `dirfd` when it is relative
/// to one (or empty, with `AT_EMPTY_PATH`), else through the caller's folder.
fn where_is(pid: u32, path: &str, dirfd: i32, flags: i32, cwd: Option<&Path>) -> String {
    let base = if dirfd == libc::AT_FDCWD {
        cwd.map(Path::to_path_buf)
    } else {
        std::fs::read_link(format!("/proc/{pid}/fd/{dirfd}")).ok()
    };
    if path.is_empty() && flags & libc::AT_EMPTY_PATH != 0 {
        return base.map(|p| p.display().to_string()).unwrap_or_default();
    }
    match base {
        Some(base) if !path.starts_with('/') => base.join(path).display().to_string(),
        _ => path.to_string(),
    }
}

/// The NUL-terminated string at `at` in `mem`, at most `max` bytes; read a
/// page at a time, so a string that ends just before an unmapped page is read.
fn read_string(mem: &File, mut at: u64, max: usize) -> Option<String> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let room = 4096 - (at % 4096) as usize;
        let n = mem.read_at(&mut chunk[..room], at).ok().filter(|&n| n > 0)?;
        if let Some(end) = chunk[..n].iter().position(|&b| b == 0) {
            bytes.extend_from_slice(&chunk[..end]);
            return Some(String::from_utf8_lossy(&bytes).into_owned());
        }
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() > max {
            return None;
        }
        at += n as u64;
    }
}

/// Kills every process in `pid`'s pid namespace: the sandbox's, all of it.
fn kill_namespace(pid: i32) {
    let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/ns/pid")) else { return };
    let Ok(ours) = std::fs::read_link("/proc/self/ns/pid") else { return };
    if ns == ours {
        // Never the namespace clix itself runs in (a host-mode program).
        return;
    }
    // Twice: a process forked while the first pass ran is caught by the second.
    for _ in 0..2 {
        let Ok(entries) = std::fs::read_dir("/proc") else { return };
        for entry in entries.flatten() {
            let Some(other) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            if std::fs::read_link(format!("/proc/{other}/ns/pid")).is_ok_and(|n| n == ns) {
                // SAFETY: kill has no memory preconditions.
                unsafe { libc::kill(other, libc::SIGKILL) };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 0xC000_00F3;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]
const AUDIT_ARCH: u32 = 0;

/// The calls the judge is asked about: this build's `execve` and
/// `execveat`, and on x86_64 their x32 numbers too.
fn exec_calls() -> Vec<u32> {
    let mut calls = vec![libc::SYS_execve as u32, libc::SYS_execveat as u32];
    #[cfg(target_arch = "x86_64")]
    calls.extend([(520 | X32_SYSCALL_BIT) as u32, (545 | X32_SYSCALL_BIT) as u32]);
    calls
}

/// The filter: an exec of this architecture goes to the listener, every
/// other call is allowed (the sandbox's own filter, stacked on this one,
/// still refuses what it refuses, and kills other architectures).
fn filter() -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    let ins = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let calls = exec_calls();
    let n = calls.len() as u8;
    let mut program = vec![
        ins(LD_W_ABS, 0, 0, 4), // seccomp_data.arch
        ins(JEQ_K, 0, n + 1, AUDIT_ARCH),
        ins(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
    ];
    for (i, nr) in calls.iter().enumerate() {
        program.push(ins(JEQ_K, n - i as u8, 0, *nr));
    }
    program.push(ins(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    program.push(ins(RET_K, 0, 0, libc::SECCOMP_RET_USER_NOTIF));
    program
}

/// A message of one byte (`iov`) with room in `control` for one fd, as
/// both ends of the socket use it. Async-signal-safe.
///
/// # Safety
/// The message points into `iov` and `control`: it is used while they live.
unsafe fn fd_message(iov: &mut libc::iovec, control: &mut [u64; 4]) -> libc::msghdr {
    // SAFETY: an all-zero msghdr is a valid empty message; CMSG_SPACE is arithmetic.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
        msg
    }
}

/// Sends `fd` over the socket `socket` (`SCM_RIGHTS`). Async-signal-safe.
fn send_fd(socket: RawFd, fd: RawFd) -> io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = [0u64; 4];
    // SAFETY: the message and its cmsg lie in buffers of this frame, sized by CMSG_SPACE.
    unsafe {
        let msg = fd_message(&mut iov, &mut control);
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        if libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The fd sent over `socket`; `None` at end of file (the sender closed it unsent).
fn recv_fd(socket: &OwnedFd) -> Option<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = [0u64; 4];
    // SAFETY: as in send_fd; the received fd is new and ours.
    unsafe {
        let mut msg = fd_message(&mut iov, &mut control);
        loop {
            let n = libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if n <= 0 {
                return None;
            }
            break;
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() || (*cmsg).cmsg_level != libc::SOL_SOCKET || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
        Some(OwnedFd::from_raw_fd(fd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the child closes and keeps of the check's socket is above every
    /// number an fd is handed on at, however low the numbers free in clix
    /// are: the lowest free ones are taken first here, as a busy process
    /// frees them.
    #[test]
    fn the_check_s_sockets_never_sit_where_fds_are_handed_on() {
        struct Never;
        impl ExecJudge for Never {
            fn judge(&self, _: &Exec) -> Result<(), String> {
                Err("no".into())
            }
        }
        // Take every free number below HIGH_FD, then free the lowest of
        // them: the socket pair's first end lands there unless moved up.
        let mut low = Vec::new();
        loop {
            let fd = OwnedFd::from(File::open("/dev/null").unwrap());
            if fd.as_raw_fd() >= crate::run::HIGH_FD {
                break;
            }
            low.push(fd);
        }
        if !low.is_empty() {
            low.remove(0);
        }
        let setup = Setup { bwrap: "/usr/bin/bwrap".into(), stub: vec!["/bin/sh".into()] };
        let (child_end, _) = start(Arc::new(Never), setup).unwrap();
        assert!(child_end.answerer >= crate::run::HIGH_FD, "answerer at {}", child_end.answerer);
        assert!(child_end.socket.as_raw_fd() >= crate::run::HIGH_FD);
    }

    #[test]
    fn the_filter_sends_every_exec_to_the_listener_and_nothing_else() {
        let p = filter();
        let calls = exec_calls();
        // Walk the program for a given (arch, nr).
        let verdict = |arch: u32, nr: u32| {
            let mut pc = 0usize;
            let mut acc = 0u32;
            loop {
                let i = &p[pc];
                pc += 1;
                match i.code {
                    0x20 => acc = if i.k == 4 { arch } else { nr },
                    0x15 => pc += usize::from(if acc == i.k { i.jt } else { i.jf }),
                    0x06 => return i.k,
                    other => panic!("unexpected instruction {other:#x}"),
                }
            }
        };
        for nr in &calls {
            assert_eq!(verdict(AUDIT_ARCH, *nr), libc::SECCOMP_RET_USER_NOTIF, "exec call {nr}");
        }
        for nr in [0u32, 1, 2, 56, 57, 435, libc::SYS_execve as u32 + 1000] {
            assert_eq!(verdict(AUDIT_ARCH, nr), libc::SECCOMP_RET_ALLOW, "call {nr}");
        }
        assert_eq!(verdict(0x4000_0003, libc::SYS_execve as u32), libc::SECCOMP_RET_ALLOW, "another arch");
    }

    #[test]
    fn a_path_is_placed_where_the_kernel_will_find_it() {
        let cwd = Path::new("/ws/sub");
        assert_eq!(where_is(1, "/usr/bin/rm", libc::AT_FDCWD, 0, Some(cwd)), "/usr/bin/rm");
        assert_eq!(where_is(1, "./x.sh", libc::AT_FDCWD, 0, Some(cwd)), "/ws/sub/./x.sh");
        assert_eq!(where_is(1, "rm", libc::AT_FDCWD, 0, None), "rm");
    }
}
