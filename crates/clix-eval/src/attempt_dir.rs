//! The folder of one attempt, named the same from one run to the next.
//!
//! The workspace's path is in what the model reads (the system prompt, and
//! the task's absolute paths mapped into the workspace). A random name
//! (`clix-eval-Ab3xQz`) made every run's prompts differ, so even a model
//! served greedily answered two runs of the same agent differently, and two
//! versions could not be compared attempt by attempt. The folder is the
//! first free `clix-eval-N`; run after run (one at a time, `-j 1`) the same
//! task gets the same path.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// How many names are tried before giving up.
const NAMES: u32 = 10_000;

/// An attempt's folder, removed when dropped unless kept.
#[derive(Debug)]
pub(crate) struct AttemptDir {
    path: PathBuf,
    keep: bool,
}

impl AttemptDir {
    /// The first free `clix-eval-N` in `parent` (N = 1, 2, …), made by this
    /// call alone and private to the user: `mkdir` fails on anything
    /// already at the name, another user's folder or a planted symlink
    /// included, and the next name is tried.
    pub(crate) fn create(parent: &Path, keep: bool) -> io::Result<AttemptDir> {
        for n in 1..=NAMES {
            let path = parent.join(format!("clix-eval-{n}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(AttemptDir { path, keep }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("clix-eval-1 … clix-eval-{NAMES} all exist in {}; remove the old ones", parent.display()),
        ))
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for AttemptDir {
    fn drop(&mut self) {
        if !self.keep {
            // Symlinks inside are removed, never followed.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_free_name_is_taken_and_given_back() {
        let parent = tempfile::tempdir().unwrap();
        let first = AttemptDir::create(parent.path(), false).unwrap();
        let second = AttemptDir::create(parent.path(), false).unwrap();
        assert_eq!(first.path(), parent.path().join("clix-eval-1"));
        assert_eq!(second.path(), parent.path().join("clix-eval-2"));
        drop(first);
        assert!(!parent.path().join("clix-eval-1").exists());
        let again = AttemptDir::create(parent.path(), false).unwrap();
        assert_eq!(again.path(), parent.path().join("clix-eval-1"), "the next run's attempt has the same path");
        let kept = AttemptDir::create(parent.path(), true).unwrap();
        let kept_path = kept.path().to_path_buf();
        drop(kept);
        assert!(kept_path.is_dir(), "--keep leaves it");
    }

    #[test]
    fn a_planted_symlink_is_passed_over_and_left_alone() {
        let parent = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        std::fs::write(target.path().join("precious"), "x").unwrap();
        std::os::unix::fs::symlink(target.path(), parent.path().join("clix-eval-1")).unwrap();
        let dir = AttemptDir::create(parent.path(), false).unwrap();
        assert_eq!(dir.path(), parent.path().join("clix-eval-2"));
        std::os::unix::fs::symlink(target.path(), dir.path().join("link")).unwrap();
        drop(dir);
        assert!(target.path().join("precious").exists(), "removal never follows a symlink");
        assert!(parent.path().join("clix-eval-1").is_symlink());
    }
}
