//! The spill folder: full outputs that overflowed, kept for later commands.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use clix_present::SpillSink;

/// `<workspace>/.clix/out/cmd-<n>.txt`, numbered upwards and never overwritten,
/// even by another clix process on the same workspace.
pub struct SpillDir {
    workspace: PathBuf,
    dir: PathBuf,
    /// Next number to try; found by scanning once, then kept in memory.
    next: Option<u64>,
    /// The shell's cwd, so the path shown is one the next command can open.
    cwd: PathBuf,
}

impl SpillDir {
    pub fn new(workspace: &Path) -> Self {
        SpillDir {
            workspace: workspace.to_path_buf(),
            dir: workspace.join(".clix").join("out"),
            next: None,
            cwd: workspace.to_path_buf(),
        }
    }

    /// Paths are shown relative to the workspace when the shell is there,
    /// absolute otherwise (the workspace sits at its own path in the shell).
    pub fn set_cwd(&mut self, cwd: PathBuf) {
        self.cwd = cwd;
    }

    fn prepare(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let ignore = self.workspace.join(".clix").join(".gitignore");
        if !ignore.exists() {
            std::fs::write(ignore, "*\n")?;
        }
        Ok(())
    }

    fn highest_existing(&self) -> u64 {
        std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_prefix("cmd-")?.strip_suffix(".txt")?.parse::<u64>().ok()
            })
            .max()
            .unwrap_or(0)
    }

    fn display(&self, path: &Path) -> String {
        if self.cwd == self.workspace {
            if let Ok(rel) = path.strip_prefix(&self.workspace) {
                return rel.display().to_string();
            }
        }
        path.display().to_string()
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
            let path = self.dir.join(format!("cmd-{n}.txt"));
            // create_new: a number another process took is skipped, never overwritten.
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    let written = file.write_all(bytes).and_then(|()| file.sync_data());
                    if let Err(e) = written {
                        drop(file);
                        let _ = std::fs::remove_file(&path);
                        return Err(e);
                    }
                    self.next = Some(n + 1);
                    return Ok(self.display(&path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_grow_and_survive_restarts_and_strangers() {
        let ws = tempfile::tempdir().unwrap();
        let mut spill = SpillDir::new(ws.path());
        assert_eq!(spill.spill(b"one").unwrap(), ".clix/out/cmd-1.txt");
        assert_eq!(spill.spill(b"two").unwrap(), ".clix/out/cmd-2.txt");
        // Another process took 3 meanwhile.
        std::fs::write(ws.path().join(".clix/out/cmd-3.txt"), "other").unwrap();
        assert_eq!(spill.spill(b"four").unwrap(), ".clix/out/cmd-4.txt");
        // A new session continues after the highest number.
        let mut again = SpillDir::new(ws.path());
        assert_eq!(again.spill(b"five").unwrap(), ".clix/out/cmd-5.txt");
        assert_eq!(std::fs::read(ws.path().join(".clix/out/cmd-1.txt")).unwrap(), b"one");
        assert_eq!(std::fs::read(ws.path().join(".clix/out/cmd-3.txt")).unwrap(), b"other");
        assert_eq!(std::fs::read_to_string(ws.path().join(".clix/.gitignore")).unwrap(), "*\n");
    }

    #[test]
    fn absolute_path_when_the_shell_left_the_root() {
        let ws = tempfile::tempdir().unwrap();
        let mut spill = SpillDir::new(ws.path());
        spill.set_cwd(ws.path().join("sub"));
        let shown = spill.spill(b"x").unwrap();
        assert_eq!(shown, ws.path().join(".clix/out/cmd-1.txt").display().to_string());
    }
}
