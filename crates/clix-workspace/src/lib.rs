//! The workspace capability handle: the one way clix touches workspace files.
//!
//! The workspace is hostile: a program in the sandbox can plant symlinks, FIFOs
//! and devices there, and swap a folder for a symlink while clix is working. So
//! nothing checks a path and then opens it again by name.
//!
//! This crate owns:
//!
//! - [`Folder`]: a folder opened once as a directory handle (`cap-std`), every
//!   path resolved beneath it by the kernel (`openat2` with `RESOLVE_BENEATH`),
//!   so `..`, absolute paths and symlinks, even one swapped in mid-call, never
//!   lead out. A final symlink is never followed; only regular files are read
//!   or written, opened without blocking (a FIFO or a device is an error, not a
//!   hang), reads capped; setuid and setgid bits are never set; listings,
//!   `holds_at_least` (a tree-size probe) and the inotify watches of
//!   clix-checkpoint (`watch_dir`) go through the handle too;
//! - [`Workspace`]: a `Folder` that passed the checks of which folders may be
//!   one (not `/`, a system folder or the home folder, not holding clix's own
//!   config, data, state or cache, not inside a secret store), and whose handle
//!   hides every secret store at any depth (not listed, not found, never read
//!   nor written);
//! - confinement: `Folder::confined`, the same folder readable everywhere and
//!   writable only beneath named subfolders, each with a handle of its own (a
//!   plan agent's namespace), and `Folder::read_only` (a session's read-only
//!   mode);
//! - what git runs from a repository's `.git` (config, hooks, `info`, modules,
//!   worktrees: `GIT_RUNS`): never written through the handle, and named by
//!   `Folder::git_protected` for the sandbox to mount read-only, since a
//!   person's next `git status` would run whatever was planted there;
//! - `Folder::snapshot`: the files under a folder (size, mtime, ctime), to tell
//!   what a run created, changed or removed;
//! - the one list of secret stores ([`SECRET_STORES`], `secret_store_in`) and
//!   of clix's own folders (`clix_folders`), shared by the workspace check, the
//!   handle's hiding and the sandbox's never-mount rule.
//!
//! It must not know about the shell, the sandbox or presentation: it is files
//! only. No path string from a model or a workspace file may reach `std::fs`
//! outside this crate (ARCHITECTURE.md names the one exception, the sandbox's
//! walk for nested secret stores).

mod check;
mod folder;
mod host_run;
mod secrets;
mod snapshot;

pub use host_run::GIT_RUNS;
pub use secrets::{SECRET_STORES, secret_store_in};

pub use check::{Workspace, WorkspaceError, clix_folders};
pub use folder::{Entry, Folder, Kind, normalize};
pub use snapshot::{Change, Snapshot};

/// The most clix reads of a file it reads for itself (a manifest, an
/// image, a file given to `see`), so that a planted `/dev/zero`-sized file
/// cannot exhaust memory.
pub const OWN_READ_LIMIT: u64 = 32 << 20;
