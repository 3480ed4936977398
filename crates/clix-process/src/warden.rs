//! The warden: what ends a process's children when the process itself
//! ends without doing it (it was killed with SIGKILL, or it exited while a
//! child was being set up or a drop's grace was still running).
//!
//! bubblewrap's `--die-with-parent` is not enough on its own. bwrap sets it
//! in its outer process only after cloning the sandbox's first process,
//! and that process waits on an eventfd until the outer one has written
//! the user namespace's maps. An outer bwrap killed in between (because
//! clix died) leaves the inner one waiting on that eventfd for ever, with
//! init as its parent: the leftovers issue 55 found after eval runs.
//!
//! So the first child a process starts also starts a warden: a process
//! forked from it, in a session of its own, that holds the read end of a
//! pipe whose write end only its owner has. Every process group a child
//! leads (see [`crate::Groups`]) and every folder to remove afterwards
//! (a run's cgroups) is written to the pipe when it appears and again when
//! it is gone. When the pipe reads end of file, the owner is gone, however
//! it ended: the warden sends SIGKILL to every group still listed, removes
//! the folders once their processes have left, and exits.
//!
//! The warden is forked, not started from a program, so that any binary
//! (clix, a test, a benchmark) has one. Between `fork` and `_exit` it runs
//! only async-signal-safe calls on memory of its own stack: no allocation,
//! no lock, nothing that can panic.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;

/// Record kinds, one byte each, then a little-endian `u16` length and the payload.
const WATCH_GROUP: u8 = b'G';
const FORGET_GROUP: u8 = b'g';
const WATCH_PATH: u8 = b'P';
const FORGET_PATH: u8 = b'p';
const HEADER: usize = 3;
/// A record is written whole in one `write`, which a pipe keeps whole up
/// to `PIPE_BUF` bytes: records of many threads never interleave.
const MAX_RECORD: usize = 4096;

/// What the warden can hold: process groups, and folders (paths up to
/// `PATH_SLOT - 1` bytes). Beyond that, more are simply not watched.
const GROUP_SLOTS: usize = 1024;
const PATH_SLOTS: usize = 64;
const PATH_SLOT: usize = 512;

/// How long the warden tries to remove the folders after the kill:
/// `TRIES` times, `PAUSE_NS` apart.
const TRIES: u32 = 150;
const PAUSE_NS: i64 = 20_000_000;

/// The write end of the warden's pipe (close-on-exec: no child holds it).
struct Warden {
    pipe: OwnedFd,
}

static WARDEN: OnceLock<Option<Warden>> = OnceLock::new();

/// This process's warden, started on first need; `None` when it could not
/// be (no pipe or no fork), which leaves bwrap's `--die-with-parent`.
fn warden() -> Option<&'static Warden> {
    WARDEN
        .get_or_init(|| {
            start().inspect_err(|e| tracing::warn!(error = %e, "no warden: children may outlive a killed clix")).ok()
        })
        .as_ref()
}

/// Has the warden kill process group `pgid` if this process ends first.
pub fn watch_group(pgid: i32) {
    if pgid > 0 {
        send(WATCH_GROUP, &pgid.to_le_bytes());
    }
}

/// Has `cmd`'s child tell the warden its own process group, between fork
/// and exec: a child is watched from before it runs, so this process may
/// end at any moment of its start (a sandbox takes milliseconds to set
/// up) without leaving it behind. The child must lead its own group
/// (`process_group(0)`, which the child applies before this hook).
pub fn enlist(cmd: &mut tokio::process::Command) {
    let Some(warden) = warden() else { return };
    let fd = warden.pipe.as_raw_fd();
    // SAFETY: the hook only calls getpid, write and close, all async-signal-safe,
    // on a buffer of its own stack.
    unsafe {
        cmd.pre_exec(move || {
            let pid = libc::getpid().to_le_bytes();
            let record = [WATCH_GROUP, 4, 0, pid[0], pid[1], pid[2], pid[3]];
            libc::write(fd, record.as_ptr().cast(), record.len());
            // The child's copy of the pipe would close at exec; closed now,
            // a child stuck before its exec (an exec-time check whose
            // answerer died with clix) cannot keep the warden waiting.
            libc::close(fd);
            Ok(())
        });
    }
}

/// Group `pgid` is over: the warden forgets it (its number may be reused).
pub fn forget_group(pgid: i32) {
    if pgid > 0 && WARDEN.get().is_some() {
        send(FORGET_GROUP, &pgid.to_le_bytes());
    }
}

/// Has the warden remove the empty folder `path` (a cgroup) if this
/// process ends before it does.
pub fn watch_path(path: &Path) {
    if let Some(path) = slot_path(path) {
        send(WATCH_PATH, path);
    }
}

/// `path` was removed: the warden forgets it.
pub fn forget_path(path: &Path) {
    if let Some(path) = slot_path(path)
        && WARDEN.get().is_some()
    {
        send(FORGET_PATH, path);
    }
}

/// `path` as the bytes a slot holds, if it fits one (with its NUL).
fn slot_path(path: &Path) -> Option<&[u8]> {
    let bytes = path.as_os_str().as_encoded_bytes();
    (bytes.len() < PATH_SLOT && !bytes.contains(&0)).then_some(bytes)
}

fn send(kind: u8, payload: &[u8]) {
    let Some(warden) = warden() else { return };
    let mut record = [0u8; MAX_RECORD];
    record[0] = kind;
    record[1..HEADER].copy_from_slice(&(payload.len() as u16).to_le_bytes());
    record[HEADER..HEADER + payload.len()].copy_from_slice(payload);
    let len = HEADER + payload.len();
    // SAFETY: writes `len` initialized bytes from a live buffer to our own fd.
    // A warden that died gives EPIPE (SIGPIPE is ignored by Rust programs): nothing to do.
    unsafe { libc::write(warden.pipe.as_raw_fd(), record.as_ptr().cast(), len) };
}

/// Forks the warden and returns the pipe's write end.
fn start() -> std::io::Result<Warden> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both were just created and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the child runs only `serve`, which makes async-signal-safe
    // calls on its own stack and never returns.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => serve(read.as_raw_fd()),
        _ => Ok(Warden { pipe: write }),
    }
}

/// The warden's life, in the forked child: detach, read the records until
/// end of file, then end what is left and exit. An owner that died
/// before the fork returned has closed the write end already: the first
/// read sees end of file.
fn serve(pipe: i32) -> ! {
    // SAFETY: every call below is async-signal-safe and takes valid
    // arguments; the buffers are on this stack.
    unsafe {
        // A session of its own: a signal to its owner's group (Ctrl-C, a
        // job killed with `kill -- -PGID`) does not reach it, and only end
        // of file ends it.
        libc::setsid();
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE] {
            libc::signal(signal, libc::SIG_IGN);
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_NAME, c"clix-warden".as_ptr());
        // Nothing of its owner's stays open here (a pipe the owner's
        // caller reads to its end, a workspace folder), but the records.
        if libc::dup2(pipe, 3) != 3 {
            libc::_exit(1);
        }
        libc::syscall(libc::SYS_close_range, 0u32, 2u32, 0u32);
        libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32);
        libc::chdir(c"/".as_ptr());
    }
    let mut held = Held { groups: [0; GROUP_SLOTS], paths: [[0; PATH_SLOT]; PATH_SLOTS] };
    let mut buf = [0u8; 2 * MAX_RECORD];
    let mut filled = 0usize;
    loop {
        // SAFETY: reads into the free part of `buf`.
        let n = unsafe { libc::read(3, buf.as_mut_ptr().add(filled).cast(), buf.len() - filled) };
        if n == 0 {
            break;
        }
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        filled += n as usize;
        let used = held.apply_records(&buf[..filled]);
        buf.copy_within(used..filled, 0);
        filled -= used;
    }
    held.end();
    // SAFETY: _exit ends the process without running anything of the owner's.
    unsafe { libc::_exit(0) }
}

/// What the warden holds.
struct Held {
    groups: [i32; GROUP_SLOTS],
    /// NUL-terminated paths; an empty slot starts with NUL.
    paths: [[u8; PATH_SLOT]; PATH_SLOTS],
}

impl Held {
    /// Applies the whole records at the start of `bytes`; returns how many
    /// bytes they took (a record cut by the read waits for the rest).
    fn apply_records(&mut self, bytes: &[u8]) -> usize {
        let mut at = 0;
        while let (Some(&kind), Some(len)) = (bytes.get(at), bytes.get(at + 1..at + HEADER)) {
            let len = u16::from_le_bytes([len[0], len[1]]) as usize;
            let Some(payload) = bytes.get(at + HEADER..at + HEADER + len) else { break };
            self.apply(kind, payload);
            at += HEADER + len;
        }
        at
    }

    fn apply(&mut self, kind: u8, payload: &[u8]) {
        match kind {
            WATCH_GROUP => {
                let Ok(bytes) = <[u8; 4]>::try_from(payload) else { return };
                let pgid = i32::from_le_bytes(bytes);
                // A child enlists itself and its parent watches it too: once is enough.
                if self.groups.contains(&pgid) {
                    return;
                }
                self.forget_ended();
                if let Some(slot) = self.groups.iter_mut().find(|g| **g == 0) {
                    *slot = pgid;
                }
            }
            FORGET_GROUP => {
                let Ok(bytes) = <[u8; 4]>::try_from(payload) else { return };
                let pgid = i32::from_le_bytes(bytes);
                if let Some(slot) = self.groups.iter_mut().find(|g| **g == pgid) {
                    *slot = 0;
                }
            }
            WATCH_PATH => {
                if let Some(slot) = self.paths.iter_mut().find(|p| p[0] == 0)
                    && let Some(dest) = slot.get_mut(..payload.len())
                {
                    dest.copy_from_slice(payload);
                    if let Some(end) = slot.get_mut(payload.len()) {
                        *end = 0;
                    }
                }
            }
            FORGET_PATH => {
                if let Some(slot) = self.paths.iter_mut().find(|p| slot_is(p, payload)) {
                    slot[0] = 0;
                }
            }
            _ => {}
        }
    }

    /// Forgets the groups that have ended: no process in the group and
    /// none with the leader's number (a leader that has not made its group
    /// yet). A child that enlisted itself and then failed to start is never
    /// forgotten by its parent, and its number must not be killed once
    /// another process has it.
    fn forget_ended(&mut self) {
        let missing = |pid: i32| {
            // SAFETY: signal 0 only checks that the process or group exists.
            let failed = unsafe { libc::kill(pid, 0) } != 0;
            failed && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        };
        for slot in self.groups.iter_mut().filter(|g| **g > 0) {
            if missing(-*slot) && missing(*slot) {
                *slot = 0;
            }
        }
    }

    /// SIGKILL to every group, then the folders removed once empty.
    fn end(&mut self) {
        for &pgid in self.groups.iter().filter(|g| **g > 0) {
            // SAFETY: kill with a negative pid signals that process group.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        for _ in 0..TRIES {
            let mut left = false;
            for slot in self.paths.iter_mut().filter(|p| p[0] != 0) {
                // SAFETY: the slot holds a NUL-terminated path.
                let removed = unsafe { libc::rmdir(slot.as_ptr().cast()) } == 0
                    || std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT);
                if removed {
                    slot[0] = 0;
                } else {
                    left = true;
                }
            }
            if !left {
                return;
            }
            let pause = libc::timespec { tv_sec: 0, tv_nsec: PAUSE_NS };
            // SAFETY: nanosleep with a valid timespec.
            unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
        }
    }
}

/// Whether the NUL-terminated `slot` holds exactly `path`.
fn slot_is(slot: &[u8; PATH_SLOT], path: &[u8]) -> bool {
    slot[0] != 0 && slot.get(..path.len()) == Some(path) && slot.get(path.len()) == Some(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut r = vec![kind];
        r.extend_from_slice(&(payload.len() as u16).to_le_bytes());
        r.extend_from_slice(payload);
        r
    }

    fn held() -> Box<Held> {
        Box::new(Held { groups: [0; GROUP_SLOTS], paths: [[0; PATH_SLOT]; PATH_SLOTS] })
    }

    #[test]
    fn records_add_and_forget_groups_and_paths_and_wait_for_the_rest_of_a_cut_one() {
        let mut h = held();
        let mut sleeper = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let (me, other) = (std::process::id() as i32, sleeper.id() as i32);
        let mut bytes = record(WATCH_GROUP, &me.to_le_bytes());
        bytes.extend(record(WATCH_GROUP, &other.to_le_bytes()));
        bytes.extend(record(WATCH_GROUP, &other.to_le_bytes()));
        bytes.extend(record(WATCH_PATH, b"/sys/fs/cgroup/pids/clix-1-0"));
        bytes.extend(record(WATCH_PATH, b"/a"));
        bytes.extend(record(FORGET_GROUP, &me.to_le_bytes()));
        bytes.extend(record(FORGET_PATH, b"/a"));
        let cut = record(WATCH_GROUP, &me.to_le_bytes());
        bytes.extend_from_slice(&cut[..4]);
        let used = h.apply_records(&bytes);
        assert_eq!(used, bytes.len() - 4, "the cut record waits");
        let groups: Vec<i32> = h.groups.iter().copied().filter(|g| *g != 0).collect();
        assert_eq!(groups, vec![other], "watched twice, held once");
        let paths: Vec<&[u8]> =
            h.paths.iter().filter(|p| p[0] != 0).map(|p| &p[..p.iter().position(|b| *b == 0).unwrap()]).collect();
        assert_eq!(paths, vec![&b"/sys/fs/cgroup/pids/clix-1-0"[..]]);
        // Once the other has ended, the next watch forgets it.
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        assert_eq!(h.apply_records(&cut), cut.len());
        let groups: Vec<i32> = h.groups.iter().copied().filter(|g| *g != 0).collect();
        assert_eq!(groups, vec![me]);
    }

    #[test]
    fn a_prefix_of_a_held_path_is_another_path() {
        let mut h = held();
        h.apply(WATCH_PATH, b"/x/clix-1-10");
        h.apply(FORGET_PATH, b"/x/clix-1-1");
        assert!(slot_is(&h.paths[0], b"/x/clix-1-10"));
    }

    /// A real warden, in a child process of the test: the child starts a
    /// process group it registers and a folder it watches, then is killed
    /// with SIGKILL. The group must die and the folder go.
    #[test]
    fn a_killed_owners_groups_die_and_its_folders_go() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("cgroup-like");
        std::fs::create_dir(&folder).unwrap();
        let exe = std::env::current_exe().unwrap();
        let mut owner = std::process::Command::new(exe)
            .args(["--exact", "warden::tests::owner_that_gets_killed", "--nocapture", "--include-ignored"])
            .env("CLIX_TEST_WARDEN_DIR", dir.path())
            .spawn()
            .unwrap();
        let pid_file = dir.path().join("sleeper-pid");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !pid_file.exists() {
            assert!(std::time::Instant::now() < deadline, "the owner never started its sleeper");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let sleeper: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        owner.kill().unwrap();
        owner.wait().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while alive(sleeper) || folder.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "after its owner's SIGKILL: sleeper alive {}, folder there {}",
                alive(sleeper),
                folder.exists()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Whether `pid` is a process that has not ended (a zombie has).
    fn alive(pid: i32) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
        matches!(state, Some(s) if s != "Z" && s != "X")
    }

    /// Run by the test above as a process of its own; ignored otherwise.
    #[test]
    #[ignore = "the owner process of a_killed_owners_groups_die_and_its_folders_go"]
    fn owner_that_gets_killed() {
        let Some(dir) = std::env::var_os("CLIX_TEST_WARDEN_DIR") else { return };
        use std::os::unix::process::CommandExt;
        let dir = std::path::PathBuf::from(dir);
        // Never waited for: the test kills this process, and the warden the sleeper.
        #[allow(clippy::zombie_processes)]
        let sleeper = std::process::Command::new("sleep").arg("300").process_group(0).spawn().unwrap();
        let pgid = sleeper.id() as i32;
        watch_group(pgid);
        watch_path(&dir.join("cgroup-like"));
        std::fs::write(dir.join("sleeper-pid"), pgid.to_string()).unwrap();
        std::thread::sleep(std::time::Duration::from_secs(300));
    }
}
