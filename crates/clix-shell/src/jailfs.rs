//! The workspace as bashkit sees it: bashkit's `FsBackend` over the
//! workspace's capability handle.
//!
//! bashkit's own `RealFs` checks a path and then opens it again by name, so
//! a program in the sandbox that swaps a folder for a symlink between the two
//! steps made the shell read, write and delete host files. Here every call is
//! one operation on the [`Folder`] handle, resolved beneath the workspace by
//! the kernel, so there is no window to race. bashkit's `PosixFs` wraps this
//! for POSIX checks and its `FollowFs` follows symlinks in the VFS namespace
//! (where nothing of the host but the workspace exists), which is why the
//! backend itself never follows a final symlink.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use bashkit::{DirEntry, FileType, FsBackend, Metadata};
use clix_workspace::{Entry, Folder, Kind};

use crate::limits::{LIMIT_EXIT, ShellLimits, Stop, stop_message};
use crate::stop::LineStop;

/// bashkit's storage backend for the workspace mount.
pub(crate) struct JailFs {
    folder: Folder,
    /// bashkit reads a file whole, into memory: a file bigger than the
    /// line's memory limit stops the line, as reaching the limit any other
    /// way does, rather than failing one stage whose empty output the next
    /// stage would take for the answer.
    limits: ShellLimits,
    stop: Arc<LineStop>,
}

impl JailFs {
    pub(crate) fn new(folder: Folder, limits: &ShellLimits, stop: Arc<LineStop>) -> Self {
        JailFs { folder, limits: limits.clone(), stop }
    }

    /// Runs one handle operation off the async threads, with the mount's
    /// path (`/a/b`, rooted at the workspace) made relative.
    async fn on<T: Send + 'static>(
        &self,
        path: &Path,
        op: impl FnOnce(&Folder, &Path) -> io::Result<T> + Send + 'static,
    ) -> bashkit::Result<T> {
        let folder = self.folder.clone();
        let rel = mount_relative(path);
        let outcome = tokio::task::spawn_blocking(move || op(&folder, &rel))
            .await
            .map_err(|e| io::Error::other(format!("workspace access stopped: {e}")))?;
        Ok(outcome?)
    }

    /// Runs one stat, listing, link or read in place: a few system calls on
    /// the handle, far cheaper than a hand-off to the blocking pool, which
    /// made a walk of 30,000 files cost a second and `grep -r` over them
    /// five. A read holds the worker for as long as the disk takes; files
    /// big enough for that to matter run in the sandbox (big-file routing).
    /// Writes, copies and removals still go through [`on`](Self::on).
    fn now<T>(&self, path: &Path, op: impl FnOnce(&Folder, &Path) -> io::Result<T>) -> bashkit::Result<T> {
        Ok(op(&self.folder, &mount_relative(path))?)
    }
}

/// A mount path (`/`, `/a/b`) as a path relative to the workspace.
fn mount_relative(path: &Path) -> PathBuf {
    let rel = path.strip_prefix("/").unwrap_or(path);
    if rel.as_os_str().is_empty() { PathBuf::from(".") } else { rel.to_path_buf() }
}

fn metadata(entry: &Entry) -> Metadata {
    let file_type = match entry.kind {
        Kind::Dir => FileType::Directory,
        Kind::Symlink => FileType::Symlink,
        Kind::Fifo => FileType::Fifo,
        // Sockets and devices are listed like files; reading them is refused.
        Kind::File | Kind::Socket | Kind::Device => FileType::File,
    };
    let size = if entry.kind == Kind::Dir { 0 } else { entry.len };
    Metadata { file_type, size, mode: entry.mode, modified: entry.modified, created: entry.modified }
}

#[bashkit::async_trait]
impl FsBackend for JailFs {
    async fn read(&self, path: &Path) -> bashkit::Result<Vec<u8>> {
        let limit = self.limits.max_memory_bytes as u64;
        let read = self.now(path, |f, p| f.read(p, limit));
        if let Err(bashkit::Error::Io(e)) = &read
            && e.kind() == io::ErrorKind::FileTooLarge
        {
            let what = format!("the file {}", mount_relative(path).display());
            self.stop.halt(stop_message(&Stop::Memory(what), &self.limits), LIMIT_EXIT);
        }
        read
    }

    async fn write(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        let content = content.to_vec();
        self.on(path, move |f, p| f.write(p, &content)).await
    }

    async fn append(&self, path: &Path, content: &[u8]) -> bashkit::Result<()> {
        let content = content.to_vec();
        self.on(path, move |f, p| f.append(p, &content)).await
    }

    async fn mkdir(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.on(path, move |f, p| f.create_dir(p, recursive)).await
    }

    async fn remove(&self, path: &Path, recursive: bool) -> bashkit::Result<()> {
        self.on(path, move |f, p| f.remove(p, recursive)).await
    }

    async fn stat(&self, path: &Path) -> bashkit::Result<Metadata> {
        self.now(path, |f, p| f.symlink_metadata(p).map(|e| metadata(&e)))
    }

    async fn read_dir(&self, path: &Path) -> bashkit::Result<Vec<DirEntry>> {
        self.now(path, |f, p| {
            let entries = f.read_dir(p)?;
            Ok(entries.into_iter().map(|(name, e)| DirEntry { name, metadata: metadata(&e) }).collect())
        })
    }

    async fn exists(&self, path: &Path) -> bashkit::Result<bool> {
        self.now(path, |f, p| f.exists(p))
    }

    async fn rename(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        let to = mount_relative(to);
        self.on(from, move |f, p| f.rename(p, &to)).await
    }

    async fn copy(&self, from: &Path, to: &Path) -> bashkit::Result<()> {
        // A copy streams through a small buffer: the disk bounds it, not memory.
        let to = mount_relative(to);
        self.on(from, move |f, p| f.copy(p, &to, u64::MAX)).await
    }

    async fn symlink(&self, target: &Path, link: &Path) -> bashkit::Result<()> {
        let target = target.to_path_buf();
        self.on(link, move |f, p| f.symlink(&target, p)).await
    }

    async fn read_link(&self, path: &Path) -> bashkit::Result<PathBuf> {
        self.now(path, |f, p| f.read_link(p))
    }

    async fn chmod(&self, path: &Path, mode: u32) -> bashkit::Result<()> {
        self.on(path, move |f, p| f.chmod(p, mode)).await
    }

    async fn set_modified_time(&self, path: &Path, time: SystemTime) -> bashkit::Result<()> {
        self.on(path, move |f, p| f.set_modified(p, time)).await
    }
}
