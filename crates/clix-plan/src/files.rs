//! Files a person names on the command line (a plan, a plan's result)
//! that usually lie in the workspace, where an agent may have planted a
//! symlink or a FIFO in their place: inside the workspace they are read
//! and written through its handle (a final symlink is not followed, only
//! regular files are opened); elsewhere they are the person's own.

use std::path::{Path, PathBuf};

use clix_workspace::{OWN_READ_LIMIT, Workspace};

/// `path` made absolute against the current folder.
fn absolute(path: &Path) -> Result<PathBuf, String> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let cwd = std::env::current_dir().map_err(|e| format!("cannot find the current folder: {e}"))?;
    Ok(cwd.join(path))
}

/// The workspace at `workspace`, when `path` lies inside it.
fn holding(workspace: &Path, path: &Path) -> Option<Workspace> {
    let folder = Workspace::open(workspace).ok()?;
    folder.relative(path).is_ok().then_some(folder)
}

/// The text of the file at `path`.
pub fn read_named(workspace: &Path, path: &Path) -> Result<String, String> {
    let abs = absolute(path)?;
    let bytes = match holding(workspace, &abs) {
        Some(folder) => folder.read(&abs, OWN_READ_LIMIT).map_err(|e| e.to_string())?,
        None => std::fs::read(&abs).map_err(|e| format!("{}: {e}", path.display()))?,
    };
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

/// Writes `text` to the file at `path`, replacing it.
pub fn write_named(workspace: &Path, path: &Path, text: &str) -> Result<(), String> {
    let abs = absolute(path)?;
    match holding(workspace, &abs) {
        Some(folder) => folder.write(&abs, text.as_bytes()).map_err(|e| e.to_string()),
        None => std::fs::write(&abs, text).map_err(|e| format!("cannot write {}: {e}", path.display())),
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
        assert!(read_named(ws.path(), &planted).is_err());
        assert!(write_named(ws.path(), &planted, "overwritten").is_err());
        assert_eq!(std::fs::read_to_string(outside.path().join("secret")).unwrap(), "secret");
        // A regular file inside, and a file outside the workspace, work.
        write_named(ws.path(), &ws.path().join("real.toml"), "x = 1").unwrap();
        assert_eq!(read_named(ws.path(), &ws.path().join("real.toml")).unwrap(), "x = 1");
        let elsewhere = outside.path().join("out.toml");
        write_named(ws.path(), &elsewhere, "y = 2").unwrap();
        assert_eq!(read_named(ws.path(), &elsewhere).unwrap(), "y = 2");
    }
}
