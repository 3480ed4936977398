//! The workspace's disk while a line runs: whoever writes (the shell, a
//! sandboxed program, a hub tool), the line may take at most `[limits]
//! max_workspace_growth_bytes` of the filesystem's free space. A task reads
//! the free space every 50 ms through the workspace handle and cancels the
//! line once it has fallen by more than the budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clix_shell::{CancelHandle, Folder};

/// How often the free space is read.
const EVERY: Duration = Duration::from_millis(50);

/// A watch over one line.
pub(super) struct DiskWatch {
    /// Bytes taken when the budget was passed; 0 while it holds.
    passed: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
    budget: u64,
}

impl DiskWatch {
    /// Starts watching `folder`'s filesystem for a line that may take
    /// `budget` bytes of it; `None` when its free space cannot be read.
    pub(super) fn start(folder: &Folder, budget: u64, cancel: CancelHandle) -> Option<DiskWatch> {
        let before = folder.free_bytes().ok()?;
        let folder = folder.clone();
        let passed = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&passed);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(EVERY);
            loop {
                tick.tick().await;
                let Ok(now) = folder.free_bytes() else { continue };
                let taken = before.saturating_sub(now);
                if taken > budget {
                    seen.store(taken, Ordering::SeqCst);
                    cancel.cancel();
                    return;
                }
            }
        });
        Some(DiskWatch { passed, task, budget })
    }

    /// Stops watching; the `[error]` line when the budget was passed.
    pub(super) fn finish(self) -> Option<String> {
        self.task.abort();
        let taken = self.passed.load(Ordering::SeqCst);
        (taken > 0).then(|| {
            format!(
                "[error] stopped: the line took {} MiB of the workspace's disk, more than the {} MiB one line may \
                 take ([limits] max_workspace_growth_bytes); what it wrote stays. Remove what is not needed, or \
                 write less per line\n",
                taken >> 20,
                self.budget >> 20
            )
        })
    }
}
