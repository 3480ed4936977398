//! Which folders may be a workspace.
//!
//! An agent can read and write everything in its workspace, so a workspace
//! must not hold what would let it escape: clix's own config (API keys, and
//! the setting that turns the sandbox off) or its data; nor lie inside a
//! secret store. A secret store inside a workspace (a project's `.npmrc`)
//! is no reason to refuse it: the workspace's handle hides it.

use std::path::{Path, PathBuf};

use crate::folder::Folder;
use crate::secrets::SECRET_STORES;

/// Host trees that are never a workspace, nor hold one.
const SYSTEM_ROOTS: &[&str] = &["/proc", "/sys", "/dev", "/etc", "/boot", "/run", "/var/run"];

/// Why a folder cannot be a workspace.
#[derive(Debug, thiserror::Error)]
#[error("workspace {path}: {reason}")]
pub struct WorkspaceError {
    /// The folder that was asked for.
    pub path: PathBuf,
    /// Why it was refused and what to pass instead.
    pub reason: String,
}

/// The workspace: a [`Folder`] that passed the checks above. Only
/// [`Workspace::open`] makes one, so holding one proves the checks ran.
#[derive(Clone, Debug)]
pub struct Workspace(Folder);

impl std::ops::Deref for Workspace {
    type Target = Folder;

    fn deref(&self) -> &Folder {
        &self.0
    }
}

impl Workspace {
    /// Opens `path` as the workspace, or says why it cannot be one and what
    /// to pass instead.
    pub fn open(path: &Path) -> Result<Workspace, WorkspaceError> {
        let fail = |reason: String| WorkspaceError { path: path.to_path_buf(), reason };
        let canonical =
            std::fs::canonicalize(path).map_err(|e| fail(format!("{e}; pass an existing folder with --workspace")))?;
        if !canonical.is_dir() {
            return Err(fail("not a directory; pass a folder with --workspace".into()));
        }
        let private = private_folders();
        if let Some(reason) = refusal(&canonical, &private) {
            return Err(fail(format!("{reason}; pass a project folder with --workspace")));
        }
        let folder = Folder::open(&canonical).map_err(|e| fail(e.to_string()))?;
        Ok(Workspace(folder.hiding_secret_stores()))
    }

    /// The secret stores at the workspace's top, which it hides (nested
    /// ones are hidden too, unnamed: finding them would mean a walk).
    /// Looked at through the handle, so a planted symlink counts as itself.
    pub fn hidden_at_top(&self) -> Vec<&'static str> {
        SECRET_STORES.iter().copied().filter(|s| self.0.holds_unhidden(Path::new(s))).collect()
    }

    /// The same workspace, writable only beneath `writable` (see
    /// [`Folder::confined`]): a plan agent's namespace.
    pub fn confined(&self, writable: &[PathBuf]) -> std::io::Result<Workspace> {
        Ok(Workspace(self.0.confined(writable)?))
    }

    /// The same workspace, writable only beneath `writable` (clix's own
    /// places), every other write refused with `because` (see
    /// [`Folder::read_only`]).
    pub fn read_only(&self, writable: &[PathBuf], because: &str) -> std::io::Result<Workspace> {
        Ok(Workspace(self.0.read_only(writable, because)?))
    }
}

/// clix's own config, data, state and cache folders (memory, audit log,
/// keys), resolved: no workspace may hold them and no sandbox may mount them.
pub fn clix_folders() -> Vec<(PathBuf, &'static str)> {
    let paths = clix_config::Paths::from_env(None);
    let folders = [
        (paths.config_dir, "clix's config folder"),
        (paths.data_dir, "clix's data folder"),
        (paths.state_dir, "clix's state folder"),
        (paths.cache_dir, "clix's cache folder"),
    ];
    folders.into_iter().map(|(p, what)| (std::fs::canonicalize(&p).unwrap_or(p), what)).collect()
}

/// The folders a workspace may neither be nor contain: the home folder and
/// clix's own folders, with what each is.
fn private_folders() -> Vec<(PathBuf, &'static str)> {
    let mut folders = clix_folders();
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let home = PathBuf::from(home);
        folders.push((std::fs::canonicalize(&home).unwrap_or(home), "your home folder"));
    }
    folders
}

/// Why `canonical` may not be a workspace, judged from its path alone.
fn refusal(canonical: &Path, private: &[(PathBuf, &str)]) -> Option<String> {
    if canonical.parent().is_none() {
        return Some("the host's root cannot be a workspace".into());
    }
    if let Some(root) = SYSTEM_ROOTS.iter().find(|r| canonical.starts_with(r)) {
        return Some(format!("{root} is a system folder"));
    }
    let inside_store = canonical.ancestors().any(|a| SECRET_STORES.iter().any(|s| a.ends_with(s)));
    if inside_store {
        return Some("it is inside a secret store".into());
    }
    if let Some((_, what)) = private.iter().find(|(folder, _)| folder == canonical) {
        return Some(format!("it is {what}, where an agent could read your keys or turn off its own sandbox"));
    }
    for (folder, what) in private {
        if folder.starts_with(canonical) {
            return Some(format!(
                "it contains {what} ({}), where an agent could read your keys or turn off its own sandbox",
                folder.display()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private() -> Vec<(PathBuf, &'static str)> {
        vec![
            (PathBuf::from("/home/u"), "your home folder"),
            (PathBuf::from("/home/u/.config/clix"), "clix's config folder"),
        ]
    }

    #[test]
    fn refusals_by_path() {
        let cases: &[(&str, Option<&str>)] = &[
            ("/", Some("host's root")),
            ("/etc/x", Some("system folder")),
            ("/proc/1", Some("system folder")),
            ("/home/u", Some("your home folder")),
            ("/home", Some("contains your home folder")),
            ("/home/u/.config", Some("contains clix's config folder")),
            ("/home/u/.ssh/keys", Some("inside a secret store")),
            ("/home/u/.config/gh/x", Some("inside a secret store")),
            ("/home/u/project", None),
            ("/srv/app", None),
        ];
        for (path, expected) in cases {
            let got = refusal(Path::new(path), &private());
            match expected {
                Some(part) => {
                    let got = got.unwrap_or_else(|| panic!("{path} was accepted"));
                    assert!(got.contains(part), "{path}: {got}");
                }
                None => assert_eq!(got, None, "{path}"),
            }
        }
    }
}
