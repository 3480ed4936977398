//! Which processes are alive, for the tests that check nothing outlives
//! clix (the browser's Chromium, a sandboxed program's children), and how
//! much memory a finished one used at its peak.

/// Waits for the child with pid `pid` (spawned by this process, not yet
/// waited for) and returns its exit code (`None` when a signal ended it)
/// and its peak resident memory in KiB: its own or that of a child it waited
/// for, whichever is larger (`ru_maxrss` from `wait4`; std's wait cannot
/// give it).
pub fn wait_with_peak_rss(pid: u32) -> (Option<i32>, u64) {
    let pid = pid as i32;
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: rusage is plain data; wait4 reaps our own child.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, usage.ru_maxrss as u64)
}

/// Pids of the running processes whose command line contains `needle`
/// (arguments are separated by NUL bytes, as in `/proc/PID/cmdline`).
pub fn pids_with_cmdline(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline).contains(needle).then_some(pid)
        })
        .collect()
}

/// The Chromium processes the clix process `pid` started: their profile
/// folder is named after it (`clix-browser-<pid>-<n>`).
pub fn chromiums_of(pid: u32) -> Vec<u32> {
    pids_with_cmdline(&format!("--user-data-dir=/tmp/clix-browser-{pid}-"))
}

/// This process's cgroup-v1 folder of `controller` (`pids`, `memory`), as
/// clix-sandbox finds it, if the controller is mounted: where a run's
/// `clix-<pid>-<n>` cgroups are made.
pub fn cgroup_v1_dir(controller: &str) -> Option<std::path::PathBuf> {
    let table = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    table.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| std::path::Path::new("/sys/fs/cgroup").join(controller).join(path.trim_start_matches('/')))
    })
}
