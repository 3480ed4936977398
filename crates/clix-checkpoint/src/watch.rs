//! Which paths changed since the last look, from inotify: every writer's
//! change to a watched folder's entries is queued by the kernel as it
//! happens (the sandbox's programs write the same inodes), so a call's
//! changes are found without listing the whole tree. When the queue
//! overflowed, or a folder could not be watched, the caller lists the tree
//! instead: the watch only ever saves work, it never decides alone.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use clix_workspace::Folder;

/// What a folder's watch reports: entries made, removed, written, renamed,
/// their modes changed, and the folder itself removed or moved.
const MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;

/// One inotify instance over the workspace's folders.
pub(crate) struct Watch {
    fd: OwnedFd,
    dirs: HashMap<i32, String>,
    /// A folder could not be watched, or events were lost: only a full
    /// listing tells what changed until the watch is set up again.
    pub(crate) blind: bool,
}

impl Watch {
    /// A new instance; `None` when the system has none to give (the
    /// per-user limit), and the caller lists the tree every time.
    pub(crate) fn new() -> Option<Watch> {
        // SAFETY: inotify_init1 takes flags only and returns a new fd or -1.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            tracing_note(&io::Error::last_os_error());
            return None;
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        Some(Watch { fd: unsafe { OwnedFd::from_raw_fd(fd) }, dirs: HashMap::new(), blind: false })
    }

    /// Watches the folder `dir` (relative, `""` for the root).
    pub(crate) fn add(&mut self, folder: &Folder, dir: &str) {
        let path = if dir.is_empty() { Path::new(".") } else { Path::new(dir) };
        match folder.watch_dir(self.fd.as_fd(), path, MASK) {
            Ok(wd) => {
                self.dirs.insert(wd, dir.to_string());
            }
            Err(e) => {
                // Gone already (the next events say so), or the limit: blind.
                if e.kind() != io::ErrorKind::NotFound {
                    tracing_note(&e);
                    self.blind = true;
                }
            }
        }
    }

    /// Forgets every folder (a full listing adds them again).
    pub(crate) fn reset(&mut self) {
        for wd in self.dirs.keys() {
            // SAFETY: removing a watch of our own fd; a stale wd is an error we ignore.
            unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), *wd) };
        }
        self.dirs.clear();
        self.blind = false;
    }

    /// The paths touched since the last call, each relative; `None` when
    /// events were lost and only a full listing can tell.
    pub(crate) fn drain(&mut self) -> Option<BTreeSet<String>> {
        let mut touched = BTreeSet::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: reading into a buffer we own, of its length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            let n = n as usize;
            let header = std::mem::size_of::<libc::inotify_event>();
            while at + header <= n {
                // SAFETY: the kernel wrote whole events; read_unaligned copes with the byte buffer.
                let event: libc::inotify_event = unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let name_bytes = &buf[at + header..(at + header + event.len as usize).min(n)];
                at += header + event.len as usize;
                if event.mask & libc::IN_Q_OVERFLOW != 0 {
                    self.blind = true;
                    continue;
                }
                if event.mask & libc::IN_IGNORED != 0 {
                    self.dirs.remove(&event.wd);
                    continue;
                }
                let Some(dir) = self.dirs.get(&event.wd) else { continue };
                let name = String::from_utf8_lossy(name_bytes.split(|b| *b == 0).next().unwrap_or_default());
                if name.is_empty() {
                    // The folder itself was removed or moved: its parent's event names it too.
                    if !dir.is_empty() {
                        touched.insert(dir.clone());
                    }
                    continue;
                }
                touched.insert(if dir.is_empty() { name.into_owned() } else { format!("{dir}/{name}") });
            }
        }
        if self.blind { None } else { Some(touched) }
    }
}

fn tracing_note(e: &io::Error) {
    // A blind watch costs time (a full listing per call), never results.
    tracing::debug!(error = %e, "checkpoints: a folder is not watched; each call lists the whole tree");
}
