//! The workspace capability handle: the one way clix touches workspace files.
//!
//! The workspace is hostile: a program in the sandbox can plant symlinks,
//! FIFOs and devices there, and swap a folder for a symlink while clix is
//! working. This crate opens the workspace once as a directory handle and
//! resolves every path relative to it with `openat2(RESOLVE_BENEATH)`
//! (through `cap-std`), so the kernel refuses any path that leaves the
//! folder, including through a symlink swapped in mid-call. It also owns the
//! rule of which folders may be a workspace at all, and the one list of
//! secret stores ([`SECRET_STORES`]).
//!
//! It must not know about the shell, the sandbox or presentation: it is
//! files only. No path string from a model or a workspace file may reach
//! `std::fs` outside this crate.

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
