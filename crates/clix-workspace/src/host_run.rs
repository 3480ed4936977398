//! What git runs on the host from a repository's `.git`: its config
//! (`core.fsmonitor`, `core.hooksPath`, filter and diff drivers, aliases,
//! `credential.helper`…), its hooks, and `info/attributes` (which selects
//! drivers). A person's next `git status` (a shell prompt or an editor runs
//! it unasked) runs whatever the agent planted there, outside any sandbox.
//! So the agent never writes them: the handle refuses, and the sandbox
//! mounts them read-only ([`Folder::git_protected`]).

use std::io::{self, ErrorKind};
use std::path::{Component, Path, PathBuf};

use crate::folder::{Folder, Kind};

/// The entries of a `.git` folder that git runs programs from (or reads
/// a program's name from), and those that hold other repositories' (submodules, worktrees).
pub const GIT_RUNS: &[&str] = &["config", "config.worktree", "hooks", "info", "modules", "worktrees"];

/// Whether `rel` is, or lies beneath, one of [`GIT_RUNS`] in a `.git` folder.
pub(crate) fn runs_on_host(rel: &Path) -> bool {
    let names: Vec<&std::ffi::OsStr> =
        rel.components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect();
    names.windows(2).any(|pair| pair[0] == ".git" && GIT_RUNS.iter().any(|r| pair[1] == *r))
}

/// Whether some component of `path` is `.git`.
pub(crate) fn names_a_git_folder(path: &Path) -> bool {
    path.components().any(|c| matches!(c, Component::Normal(n) if n == ".git"))
}

/// The error for a write git would run later.
pub(crate) fn refused(path: &Path) -> io::Error {
    io::Error::new(
        ErrorKind::PermissionDenied,
        format!(
            "{}: clix does not write what git runs on the host later (a repository's config, hooks, info, \
             submodules and worktrees): a person changes those with git themselves",
            path.display()
        ),
    )
}

impl Folder {
    /// The host paths of this folder's repository (`.git` here) that a
    /// sandbox must mount read-only: `.git` itself first (bound over itself,
    /// so it cannot be renamed away and replaced), then each of
    /// [`GIT_RUNS`] that exists and is not a symlink. A missing `hooks`
    /// folder is made first, empty, so none can be made inside the sandbox.
    /// Empty when `.git` is not a real folder (no repository, or a
    /// worktree's `.git` file, whose repository lies elsewhere).
    pub fn git_protected(&self) -> Vec<PathBuf> {
        let git = Path::new(".git");
        if !self.symlink_metadata(git).is_ok_and(|e| e.kind == Kind::Dir) {
            return Vec::new();
        }
        if self.symlink_metadata(&git.join("hooks")).is_err_and(|e| e.kind() == ErrorKind::NotFound) {
            // The handle refuses to write there: this is clix's own set-up,
            // through the folder itself. Should it fail (a read-only
            // repository), nothing inside can make one either.
            let _ = self.create_git_hooks();
        }
        let mut out = vec![self.root().join(git)];
        for name in GIT_RUNS {
            let rel = git.join(name);
            if self.symlink_metadata(&rel).is_ok_and(|e| matches!(e.kind, Kind::Dir | Kind::File)) {
                out.push(self.root().join(rel));
            }
        }
        out
    }
}
