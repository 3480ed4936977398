//! What a folder holds at one moment, to tell afterwards which files a run
//! created, changed or removed (an agent's `artifacts`).
//!
//! Programs in the sandbox write the workspace directly, so no write hook
//! sees every change: two listings, before and after, do. A file counts as
//! changed when its size, modification time or status-change time differ
//! (ctime catches a rewrite that restored the old mtime).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::folder::{Folder, Kind};

/// Folders never walked: clix's own files (spills, policy) and the usual
/// large trees that are tools' caches rather than work.
const SKIPPED: &[&str] = &[".clix", ".git", "node_modules", "target", "__pycache__", ".venv"];

/// The regular files and symlinks under a folder, by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    files: BTreeMap<PathBuf, (u64, SystemTime, SystemTime)>,
    /// The walk stopped at its limit: changes past it are not seen.
    pub truncated: bool,
}

/// How a file differs between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Not there before.
    Created,
    /// There before, different now.
    Modified,
    /// There before, gone now.
    Deleted,
}

impl Change {
    /// `created`, `modified`, `deleted`.
    pub fn label(self) -> &'static str {
        match self {
            Change::Created => "created",
            Change::Modified => "modified",
            Change::Deleted => "deleted",
        }
    }
}

impl Folder {
    /// The files under `under` (relative to this folder), walking at most
    /// `limit` entries (folders count too, so a million empty folders stop
    /// the walk as a million files would), never following a symlink and
    /// skipping clix's and tools' own trees. Entries that cannot be listed
    /// are left out.
    pub fn snapshot(&self, under: &Path, limit: usize) -> Snapshot {
        let mut snap = Snapshot::default();
        let mut pending = vec![under.to_path_buf()];
        let mut walked = 0usize;
        while let Some(dir) = pending.pop() {
            let Ok(entries) = self.read_dir(&dir) else { continue };
            for (name, entry) in entries {
                walked += 1;
                if walked > limit {
                    snap.truncated = true;
                    return snap;
                }
                let path = dir.join(&name);
                match entry.kind {
                    Kind::Dir if !SKIPPED.contains(&name.as_str()) => pending.push(path),
                    Kind::Dir => {}
                    _ => {
                        snap.files.insert(path, (entry.len, entry.modified, entry.changed));
                    }
                }
            }
        }
        snap
    }
}

impl Snapshot {
    /// What changed from `self` to `after`, in path order, with each file's
    /// size now (0 when deleted).
    pub fn changes(&self, after: &Snapshot) -> Vec<(PathBuf, Change, u64)> {
        let mut out = Vec::new();
        for (path, now) in &after.files {
            match self.files.get(path) {
                None => out.push((path.clone(), Change::Created, now.0)),
                Some(before) if before != now => out.push((path.clone(), Change::Modified, now.0)),
                Some(_) => {}
            }
        }
        for path in self.files.keys().filter(|p| !after.files.contains_key(*p)) {
            out.push((path.clone(), Change::Deleted, 0));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// How many files it holds.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// It holds no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_modified_and_deleted_files_are_told_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = Folder::open(tmp.path()).unwrap();
        folder.write(Path::new("keep.txt"), b"same").unwrap();
        folder.write(Path::new("edit.txt"), b"old").unwrap();
        folder.write(Path::new("gone.txt"), b"x").unwrap();
        folder.create_dir(Path::new(".clix/out"), true).unwrap();
        let before = folder.snapshot(Path::new(""), 100);
        folder.write(Path::new("edit.txt"), b"newer").unwrap();
        folder.remove(Path::new("gone.txt"), false).unwrap();
        folder.create_dir(Path::new("sub"), false).unwrap();
        folder.write(Path::new("sub/new.txt"), b"hello").unwrap();
        folder.write(Path::new(".clix/out/cmd-1.txt"), b"spill").unwrap();
        folder.symlink(Path::new("../keep.txt"), Path::new("sub/link")).unwrap();
        let after = folder.snapshot(Path::new(""), 100);
        let changes: Vec<(String, &str, u64)> = before
            .changes(&after)
            .into_iter()
            .map(|(p, c, n)| (p.to_string_lossy().into_owned(), c.label(), n))
            .collect();
        assert_eq!(
            changes,
            [
                ("edit.txt".into(), "modified", 5),
                ("gone.txt".into(), "deleted", 0),
                ("sub/link".into(), "created", 11),
                ("sub/new.txt".into(), "created", 5),
            ]
        );
        // Folders count toward the limit as files do.
        let capped = folder.snapshot(Path::new(""), 2);
        assert!(capped.truncated && capped.len() < after.len(), "{capped:?}");
    }
}
