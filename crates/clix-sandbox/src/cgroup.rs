//! Per-sandbox cgroups: a pids cgroup makes the process limit real even
//! when clix runs as root (where RLIMIT_NPROC is not enforced), and a
//! memory cgroup bounds the whole sandbox rather than each process. They
//! are made once per sandbox, on its first run, and removed with it:
//! creating and removing them per run cost more than bubblewrap itself.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The cgroups a sandbox's programs join; removed when dropped.
#[derive(Debug, Default)]
pub(crate) struct SandboxCgroups {
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` files the child writes itself into before exec.
    pub procs_files: Vec<CString>,
    pub pids: bool,
    pub memory: bool,
}

impl SandboxCgroups {
    /// Creates what this host allows; whatever fails is simply not enforced
    /// this way, and the caller falls back to rlimits.
    pub(crate) fn create(max_pids: u64, memory_bytes: u64) -> Self {
        let mut run = SandboxCgroups::default();
        let id = format!("clix-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        if let Some(dir) = controller_dir("pids").and_then(|base| make(&base, &id, "pids.max", max_pids)) {
            run.add(dir);
            run.pids = true;
        }
        if let Some(dir) =
            controller_dir("memory").and_then(|base| make(&base, &id, "memory.limit_in_bytes", memory_bytes))
        {
            let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), memory_bytes.to_string());
            run.add(dir);
            run.memory = true;
        }
        run
    }

    fn add(&mut self, dir: PathBuf) {
        if let Ok(procs) = CString::new(dir.join("cgroup.procs").into_os_string().into_encoded_bytes()) {
            self.procs_files.push(procs);
            self.dirs.push(dir);
        }
    }
}

impl Drop for SandboxCgroups {
    fn drop(&mut self) {
        for dir in &self.dirs {
            // Empty once the sandbox is gone; an exiting straggler keeps it
            // busy for a moment, so retry briefly rather than leak it.
            for _ in 0..250 {
                if std::fs::remove_dir(dir).is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }
}

/// This process's cgroup folder for a cgroup-v1 `controller`, if mounted and writable.
fn controller_dir(controller: &str) -> Option<PathBuf> {
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
    Some(dir)
}
