//! The spill folder: full outputs that overflowed, kept for later commands.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use clix_present::SpillSink;
use clix_shell::Folder;

/// `<workspace>/.clix/out/cmd-<n>.txt`, numbered upwards and never overwritten,
/// even by another clix process on the same workspace. Written through the
/// workspace's handle: a `.clix` planted as a symlink leads nowhere.
pub struct SpillDir {
    folder: Folder,
    /// Next number to try; found by scanning once, then kept in memory.
    next: Option<u64>,
    /// The shell's cwd, so the path shown is one the next command can open.
    cwd: PathBuf,
}

const OUT_DIR: &str = ".clix/out";

impl SpillDir {
    /// The spill folder `.clix/out` of `folder`, created at the first spill;
    /// numbering goes on from the files already there.
    pub fn new(folder: &Folder) -> Self {
        SpillDir { folder: folder.clone(), next: None, cwd: folder.root().to_path_buf() }
    }

    /// Paths are shown relative to the workspace when the shell is there,
    /// absolute otherwise (the workspace sits at its own path in the shell).
    pub fn set_cwd(&mut self, cwd: PathBuf) {
        self.cwd = cwd;
    }

    fn prepare(&self) -> std::io::Result<()> {
        self.folder.create_dir(Path::new(OUT_DIR), true)?;
        match self.folder.create_new(Path::new(".clix/.gitignore"), b"*\n") {
            Err(e) if e.kind() != ErrorKind::AlreadyExists => Err(e),
            _ => Ok(()),
        }
    }

    fn highest_existing(&self) -> u64 {
        self.folder
            .read_dir(Path::new(OUT_DIR))
            .into_iter()
            .flatten()
            .filter_map(|(name, _)| name.strip_prefix("cmd-")?.strip_suffix(".txt")?.parse::<u64>().ok())
            .max()
            .unwrap_or(0)
    }

    fn display(&self, rel: &Path) -> String {
        if self.cwd == self.folder.root() {
            return rel.display().to_string();
        }
        self.folder.root().join(rel).display().to_string()
    }
}

impl SpillSink for SpillDir {
    fn spill(&mut self, bytes: &[u8]) -> std::io::Result<String> {
        self.prepare()?;
        let mut n = match self.next {
            Some(n) => n,
            None => self.highest_existing() + 1,
        };
        loop {
            let rel = Path::new(OUT_DIR).join(format!("cmd-{n}.txt"));
            // A number another process took is skipped, never overwritten.
            match self.folder.create_new(&rel, bytes) {
                Ok(()) => {
                    self.next = Some(n + 1);
                    return Ok(self.display(&rel));
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(ws: &tempfile::TempDir) -> SpillDir {
        SpillDir::new(&Folder::open(ws.path()).unwrap())
    }

    #[test]
    fn numbers_grow_and_survive_restarts_and_strangers() {
        let ws = tempfile::tempdir().unwrap();
        let mut spill = open(&ws);
        assert_eq!(spill.spill(b"one").unwrap(), ".clix/out/cmd-1.txt");
        assert_eq!(spill.spill(b"two").unwrap(), ".clix/out/cmd-2.txt");
        // Another process took 3 meanwhile.
        std::fs::write(ws.path().join(".clix/out/cmd-3.txt"), "other").unwrap();
        assert_eq!(spill.spill(b"four").unwrap(), ".clix/out/cmd-4.txt");
        // A new session continues after the highest number.
        let mut again = open(&ws);
        assert_eq!(again.spill(b"five").unwrap(), ".clix/out/cmd-5.txt");
        assert_eq!(std::fs::read(ws.path().join(".clix/out/cmd-1.txt")).unwrap(), b"one");
        assert_eq!(std::fs::read(ws.path().join(".clix/out/cmd-3.txt")).unwrap(), b"other");
        assert_eq!(std::fs::read_to_string(ws.path().join(".clix/.gitignore")).unwrap(), "*\n");
    }

    #[test]
    fn absolute_path_when_the_shell_left_the_root() {
        let ws = tempfile::tempdir().unwrap();
        let mut spill = open(&ws);
        spill.set_cwd(ws.path().join("sub"));
        let shown = spill.spill(b"x").unwrap();
        assert_eq!(shown, ws.path().join(".clix/out/cmd-1.txt").display().to_string());
    }

    /// A `.clix` planted as a symlink to a host folder: the spill fails and
    /// nothing is written there.
    #[test]
    fn a_symlinked_spill_folder_is_not_followed() {
        let ws = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), ws.path().join(".clix")).unwrap();
        let err = open(&ws).spill(b"attacker content").unwrap_err();
        assert!(err.to_string().contains(".clix"), "{err}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
