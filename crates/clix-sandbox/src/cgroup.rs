//! Per-run cgroups: a pids cgroup makes the process limit real even when
//! clix runs as root (where RLIMIT_NPROC is not enforced), and a memory
//! cgroup bounds the run's whole process tree rather than each process.
//!
//! Each run gets its own, named `clix-<clix's pid>-<n>`, made when it starts
//! and removed when it ends: a normal end, a time-out, or a run whose caller
//! gave up (the folder goes once the kill has emptied it). Making and
//! removing one costs well under a millisecond. A clix that was killed
//! cannot clean up: its warden (`clix_process::warden`), which holds each
//! run's folders until they are removed, removes them once the kill has
//! emptied them. A start does nothing for earlier runs.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// How long a run's cgroup may stay busy after the run (its processes are
/// still being killed) before it is left to the warden.
const REMOVE_PATIENCE: Duration = Duration::from_secs(10);

/// The cgroup-v1 controllers clix uses, with the file that sets the limit.
const PIDS: (&str, &str) = ("pids", "pids.max");
const MEMORY: (&str, &str) = ("memory", "memory.limit_in_bytes");

/// Which limits this host lets clix enforce with cgroups.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Support {
    pub pids: bool,
    pub memory: bool,
}

/// Tried once per process: make, limit and remove a probe cgroup.
pub(crate) fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(|| {
        let probe = |(controller, limit): (&str, &str), value: u64| {
            let dir = controller_dir(controller).and_then(|base| make(&base, &name("probe"), limit, value));
            dir.is_some_and(|d| removed(&d))
        };
        let support = Support { pids: probe(PIDS, 1024), memory: probe(MEMORY, 1 << 30) };
        tracing::debug!(
            pids = support.pids,
            memory = support.memory,
            "cgroup support (v1 controllers clix can make and limit); rlimits cover the rest"
        );
        support
    })
}

/// The cgroups one run's programs join; removed when dropped.
#[derive(Debug, Default)]
pub(crate) struct RunCgroups {
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` files the child writes itself into before exec.
    pub procs_files: Vec<CString>,
    pub pids: bool,
    pub memory: bool,
}

impl RunCgroups {
    /// Creates what this host allows; whatever fails is simply not enforced
    /// this way, and the caller falls back to rlimits.
    pub(crate) fn create(max_pids: u64, memory_bytes: u64) -> Self {
        let mut run = RunCgroups::default();
        let id = name(&COUNTER.fetch_add(1, Ordering::Relaxed).to_string());
        if let Some(dir) = controller_dir(PIDS.0).and_then(|base| make(&base, &id, PIDS.1, max_pids)) {
            run.add(dir);
            run.pids = true;
        }
        if let Some(dir) = controller_dir(MEMORY.0).and_then(|base| make(&base, &id, MEMORY.1, memory_bytes)) {
            let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), memory_bytes.to_string());
            run.add(dir);
            run.memory = true;
        }
        run
    }

    fn add(&mut self, dir: PathBuf) {
        match CString::new(dir.join("cgroup.procs").into_os_string().into_encoded_bytes()) {
            Ok(procs) => {
                self.procs_files.push(procs);
                self.dirs.push(dir);
            }
            Err(_) => {
                removed(&dir);
            }
        }
    }
}

impl RunCgroups {
    /// Removes the run's cgroups once its last processes have left: bwrap
    /// exits as soon as the program does, while its pid namespace is still
    /// being torn down, so this waits for that (a few milliseconds; at most
    /// a second, after which dropping hands the rest to a thread).
    pub(crate) async fn remove(mut self) {
        let started = Instant::now();
        loop {
            self.dirs.retain(|d| !removed(d));
            if self.dirs.is_empty() || started.elapsed() > Duration::from_secs(1) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

impl Drop for RunCgroups {
    fn drop(&mut self) {
        // Whatever `remove` did not get to: a run that was given up is still
        // being killed (SIGTERM, a grace period, SIGKILL), and its folders go
        // once that is over.
        let busy: Vec<PathBuf> = self.dirs.drain(..).filter(|d| !removed(d)).collect();
        if busy.is_empty() {
            return;
        }
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut busy = busy;
            while !busy.is_empty() && started.elapsed() < REMOVE_PATIENCE {
                std::thread::sleep(Duration::from_millis(20));
                busy.retain(|d| !removed(d));
            }
        });
    }
}

/// Removes the run's cgroup folder `dir` if it is empty; whether it is gone.
fn removed(dir: &Path) -> bool {
    let gone = std::fs::remove_dir(dir).is_ok() || !dir.exists();
    if gone {
        clix_process::warden::forget_path(dir);
    }
    gone
}

/// `clix-<this process's pid>-<suffix>`.
fn name(suffix: &str) -> String {
    format!("clix-{}-{suffix}", std::process::id())
}

/// Removes the cgroups of clix processes that are gone and whose warden
/// could not remove them (it was killed too, or the machine went down
/// mid-run): `clix doctor`'s cleanup, never a start's.
pub fn remove_leftover_cgroups() -> Vec<PathBuf> {
    [PIDS.0, MEMORY.0]
        .into_iter()
        .filter_map(controller_dir)
        .flat_map(|base| remove_stale(&base, process_alive))
        .collect()
}

/// Removes the `clix-<pid>-*` folders in `parent` whose pid is not `alive`,
/// and returns them. Only empty cgroups can be removed (the kernel refuses
/// the others), so a cgroup still holding processes is left alone.
pub(crate) fn remove_stale(parent: &Path, alive: impl Fn(u32) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else { return Vec::new() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else { continue };
        if !alive(pid) && std::fs::remove_dir(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// The pid in a `clix-<pid>-<anything>` name.
fn owner_pid(name: &str) -> Option<u32> {
    let (pid, rest) = name.strip_prefix("clix-")?.split_once('-')?;
    (!rest.is_empty() && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then(|| pid.parse().ok())?
}

/// Whether a process with this pid exists (in this pid namespace).
pub(crate) fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

/// This process's cgroup folder for a cgroup-v1 `controller`, if mounted.
pub(crate) fn controller_dir(controller: &str) -> Option<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in table.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == controller) {
            let base = Path::new("/sys/fs/cgroup").join(controller).join(path.trim_start_matches('/'));
            return base.is_dir().then_some(base);
        }
    }
    None
}

fn make(base: &Path, id: &str, limit_file: &str, value: u64) -> Option<PathBuf> {
    let dir = base.join(id);
    std::fs::create_dir(&dir).ok()?;
    if std::fs::write(dir.join(limit_file), value.to_string()).is_err() {
        let _ = std::fs::remove_dir(&dir);
        return None;
    }
    clix_process::warden::watch_path(&dir);
    Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that was just used and whose process is gone.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_alive(pid));
        pid
    }

    #[test]
    fn names_table() {
        for (name, pid) in [
            ("clix-123-0", Some(123)),
            ("clix-123-probe", Some(123)),
            ("clix-123-x-y", Some(123)),
            ("clix-123-", None),
            ("clix-123", None),
            ("clix--1", None),
            ("clix-12a-1", None),
            ("clix-+12-1", None),
            ("other-123-1", None),
            ("clix-99999999999-1", None),
        ] {
            assert_eq!(owner_pid(name), pid, "{name}");
        }
    }

    #[test]
    fn liveness() {
        assert!(process_alive(std::process::id()));
        assert!(process_alive(1));
        assert!(!process_alive(dead_pid()));
        assert!(!process_alive(0) && !process_alive(u32::MAX));
    }

    #[test]
    fn only_folders_of_gone_processes_are_removed() {
        let parent = tempfile::tempdir().unwrap();
        let p = parent.path();
        let (dead, me) = (dead_pid(), std::process::id());
        let busy = format!("clix-{dead}-busy");
        for d in [
            format!("clix-{dead}-0"),
            format!("clix-{dead}-x"),
            format!("clix-{me}-0"),
            "clix-abc-0".into(),
            "other".into(),
            busy.clone(),
        ] {
            std::fs::create_dir(p.join(d)).unwrap();
        }
        // A cgroup that still holds processes cannot be removed: like a folder that is not empty.
        std::fs::write(p.join(&busy).join("cgroup.procs"), "42\n").unwrap();
        let mut removed = remove_stale(p, process_alive);
        removed.sort();
        assert_eq!(removed, vec![p.join(format!("clix-{dead}-0")), p.join(format!("clix-{dead}-x"))]);
        let mut left: Vec<String> =
            std::fs::read_dir(p).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        let mut expected = vec![format!("clix-{me}-0"), "clix-abc-0".to_string(), "other".to_string(), busy];
        expected.sort();
        assert_eq!(left, expected);
    }
}
