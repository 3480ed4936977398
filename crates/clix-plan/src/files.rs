//! Files a person names on the command line (a plan, a plan's result)
//! that usually lie in the workspace, where an agent may have planted a
//! symlink or a FIFO in their place: inside the workspace they are read
//! and written through its handle (a final symlink is not followed, only
//! regular files are opened); elsewhere they are the person's own.

use std::path::{Path, PathBuf};

use clix_workspace::{OWN_READ_LIMIT, Workspace};

/// Why a file a person named (a plan, a plan's result, a replay page)
/// could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    /// A relative path, and no current folder to read it from.
    #[error("cannot find the current folder: {0}")]
    NoCurrentFolder(#[source] std::io::Error),
    /// Inside the workspace, its handle refused or failed (a planted
    /// symlink, a FIFO, a missing file); its error says which.
    #[error("{0}")]
    Workspace(#[source] std::io::Error),
    /// Outside the workspace, the file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// As the person named it.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Outside the workspace, the file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// As the person named it.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("{}: not UTF-8 text", .0.display())]
    NotText(PathBuf),
}

/// `path` made absolute against the current folder.
fn absolute(path: &Path) -> Result<PathBuf, PlanFileError> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir().map_err(PlanFileError::NoCurrentFolder)?.join(path))
}

/// The workspace at `workspace`, when `path` lies inside it.
fn holding(workspace: &Path, path: &Path) -> Option<Workspace> {
    let folder = Workspace::open(workspace).ok()?;
    folder.relative(path).is_ok().then_some(folder)
}

/// The text of the file at `path`.
pub fn read_named(workspace: &Path, path: &Path) -> Result<String, PlanFileError> {
    let abs = absolute(path)?;
    let bytes = match holding(workspace, &abs) {
        Some(folder) => folder.read(&abs, OWN_READ_LIMIT).map_err(PlanFileError::Workspace)?,
        None => std::fs::read(&abs).map_err(|source| PlanFileError::Read { path: path.to_path_buf(), source })?,
    };
    String::from_utf8(bytes).map_err(|_| PlanFileError::NotText(path.to_path_buf()))
}

/// Writes `text` to the file at `path`, replacing it.
pub fn write_named(workspace: &Path, path: &Path, text: &str) -> Result<(), PlanFileError> {
    let abs = absolute(path)?;
    match holding(workspace, &abs) {
        Some(folder) => folder.write(&abs, text.as_bytes()).map_err(PlanFileError::Workspace),
        None => std::fs::write(&abs, text).map_err(|source| PlanFileError::Write { path: path.to_path_buf(), source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_planted_in_the_workspace_is_not_followed() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "secret").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("PLAN.toml")).unwrap();
        let planted = ws.path().join("PLAN.toml");
        assert!(matches!(read_named(ws.path(), &planted), Err(PlanFileError::Workspace(_))));
        assert!(matches!(write_named(ws.path(), &planted, "overwritten"), Err(PlanFileError::Workspace(_))));
        let missing = outside.path().join("missing.toml");
        assert!(matches!(read_named(ws.path(), &missing), Err(PlanFileError::Read { .. })));
        assert_eq!(std::fs::read_to_string(outside.path().join("secret")).unwrap(), "secret");
        // A regular file inside, and a file outside the workspace, work.
        write_named(ws.path(), &ws.path().join("real.toml"), "x = 1").unwrap();
        assert_eq!(read_named(ws.path(), &ws.path().join("real.toml")).unwrap(), "x = 1");
        let elsewhere = outside.path().join("out.toml");
        write_named(ws.path(), &elsewhere, "y = 2").unwrap();
        assert_eq!(read_named(ws.path(), &elsewhere).unwrap(), "y = 2");
    }
}
