//! `serialize: true`: one call of a tool at a time, across every clix
//! process of the user (seed 001: "tools that write fixed temp files run
//! one at a time"). An exclusive `flock` on a file per tool in the state
//! folder; the kernel drops it when the holder exits, even killed.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often a waiting call tries the lock again.
const POLL: Duration = Duration::from_millis(10);

/// Held while the call runs; closing the file releases the lock.
pub(crate) struct CallLock {
    _file: File,
}

/// Waits up to `patience` for the tool's lock. `Ok(None)` means another
/// call still held it when the time was up.
pub(crate) async fn acquire(locks_dir: &Path, tool: &str, patience: Duration) -> std::io::Result<Option<CallLock>> {
    std::fs::create_dir_all(locks_dir)?;
    let file = File::options().create(true).truncate(false).write(true).open(locks_dir.join(format!("{tool}.lock")))?;
    let until = Instant::now() + patience;
    loop {
        // SAFETY: a valid open file descriptor; LOCK_NB never blocks the runtime.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Some(CallLock { _file: file }));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(err);
        }
        if Instant::now() >= until {
            return Ok(None);
        }
        tokio::time::sleep(POLL).await;
    }
}
