//! The race that broke bashkit's RealFs: a thread exchanges a real folder
//! and a symlink to a canary folder with `renameat2(RENAME_EXCHANGE)` as
//! fast as it can, while the code under test goes through the name.

use std::ffi::CString;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running swapper; [`Swapper::stop`] ends it and returns the swap count.
pub struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: JoinHandle<Result<u64, String>>,
    started: Instant,
}

impl Swapper {
    /// Starts exchanging `a` and `b` (both must exist).
    pub fn start(a: &Path, b: &Path) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let (a, b) = (c_path(a), c_path(b));
        let thread = {
            let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
            std::thread::spawn(move || {
                let mut done = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: both paths are valid NUL-terminated strings owned by this thread.
                    let rc = unsafe {
                        libc::syscall(
                            libc::SYS_renameat2,
                            libc::AT_FDCWD,
                            a.as_ptr(),
                            libc::AT_FDCWD,
                            b.as_ptr(),
                            libc::RENAME_EXCHANGE,
                        )
                    };
                    if rc != 0 {
                        return Err(format!("renameat2 failed: {}", std::io::Error::last_os_error()));
                    }
                    done += 1;
                    swaps.store(done, Ordering::Relaxed);
                }
                Ok(done)
            })
        };
        Swapper { stop, swaps, thread, started: Instant::now() }
    }

    /// Whether the caller, having made `attempts` attempts, should go on: at
    /// least 1,000 attempts, and on until the swapper has really raced them
    /// (2,000 swaps; a busy machine may give it little time), within
    /// `deadline` of the start.
    pub fn keep_racing(&self, attempts: u64, deadline: Duration) -> bool {
        attempts < 1000 || (self.swaps.load(Ordering::Relaxed) < 2000 && self.started.elapsed() < deadline)
    }

    /// Stops the swapper. Panics if the race did not run (under 1,000 swaps)
    /// or a swap failed: such a test proved nothing.
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let swaps = match self.thread.join() {
            Ok(Ok(swaps)) => swaps,
            Ok(Err(e)) => panic!("{e}"),
            Err(_) => panic!("the swapper thread panicked"),
        };
        assert!(swaps > 1000, "the race did not run ({swaps} swaps)");
        swaps
    }
}

fn c_path(path: &Path) -> CString {
    match CString::new(path.as_os_str().as_encoded_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("{} holds a NUL byte", path.display()),
    }
}
