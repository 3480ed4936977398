//! Which processes are alive, for the tests that check nothing outlives
//! clix (the browser's Chromium, a sandboxed program's children).

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
