//! What the sandbox sees: the bubblewrap arguments for one program.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::settings::SandboxSettings;

/// Inside the sandbox, `$HOME` is an empty tmpfs here.
pub(crate) const SANDBOX_HOME: &str = "/home/agent";

/// System trees mounted read-only (or re-created as symlinks when they are links).
pub const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// The part of `/etc` programs need to start and find libraries and
/// certificates. Kept short: every mount adds to each program's start time.
const ETC_ENTRIES: &[&str] = &[
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
];

/// Name resolution files, mounted only when the network is on.
const NETWORK_ETC_ENTRIES: &[&str] = &["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ca-certificates"];

/// Secret stores under the user's home that are never mounted.
const SECRET_STORES: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".docker",
    ".config/gh",
    ".kube",
    ".gcloud",
    ".config/gcloud",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".password-store",
    ".local/share/keyrings",
    ".config/clix",
];

/// Toolchain folders in the home and the variable that tells the tool where it is
/// (HOME inside the sandbox is empty, so defaults like ~/.pyenv would miss).
const TOOLCHAINS: &[(&str, &str)] =
    &[(".pyenv", "PYENV_ROOT"), (".cargo", "CARGO_HOME"), (".rustup", "RUSTUP_HOME"), (".nvm", "NVM_DIR")];

/// Toolchains that need a sibling folder to run (cargo's proxies need rustup's toolchains).
const COMPANIONS: &[(&str, &str)] = &[(".cargo", ".rustup")];

/// The mount plan for one sandbox; also what `sandbox status` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    pub read_only: Vec<PathBuf>,
    pub read_write: Vec<PathBuf>,
    /// PATH inside the sandbox: the host's, minus folders that are not there.
    pub path: String,
    pub toolchain_vars: Vec<(String, String)>,
    /// Host paths deliberately left out, with the reason.
    pub hidden: Vec<(PathBuf, &'static str)>,
}

/// Host facts the layout depends on, gathered once.
pub(crate) struct Host<'a> {
    pub path: &'a str,
    /// clix's own config folder: holds API keys, never mounted.
    pub clix_config: Option<&'a Path>,
}

/// Whether mounting `p` would show a secret store: it is one, lies inside
/// one, or holds one (a whole home folder), or it is clix's config.
pub(crate) fn exposes_secret(p: &Path, clix_config: Option<&Path>) -> bool {
    let inside = |store: &str| {
        let store = Path::new(store);
        p.ancestors().any(|a| a.ends_with(store))
    };
    SECRET_STORES.iter().any(|s| inside(s) || p.join(s).exists())
        || clix_config.is_some_and(|c| c.starts_with(p) || p.starts_with(c))
}

pub(crate) fn layout(workspace: &Path, settings: &SandboxSettings, host: &Host<'_>) -> Layout {
    let mut l = Layout::default();
    let mut path_dirs: Vec<PathBuf> = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    for dir in host.path.split(':').filter(|d| d.starts_with('/')).map(PathBuf::from) {
        if !dir.is_dir() || path_dirs.contains(&dir) {
            continue;
        }
        let root = toolchain_root(&dir);
        if exposes_secret(&root, host.clix_config) {
            l.hidden.push((root, "would expose a secret store"));
            continue;
        }
        path_dirs.push(dir);
        if SYSTEM_DIRS.iter().any(|s| root.starts_with(s)) {
            continue;
        }
        if let Some(name) = root.file_name().and_then(|n| n.to_str()) {
            if let Some((_, var)) = TOOLCHAINS.iter().find(|(t, _)| *t == name) {
                l.toolchain_vars.push((var.to_string(), root.display().to_string()));
            }
            for (_, companion) in COMPANIONS.iter().filter(|(t, _)| *t == name) {
                let sibling = root.with_file_name(companion);
                if let Some((_, var)) = TOOLCHAINS.iter().find(|(t, _)| t == companion) {
                    l.toolchain_vars.push((var.to_string(), sibling.display().to_string()));
                }
                candidates.push(sibling);
            }
        }
        candidates.push(root);
    }
    candidates.extend(settings.extra_ro.iter().cloned());
    for p in candidates {
        if exposes_secret(&p, host.clix_config) {
            l.hidden.push((p, "would expose a secret store"));
        } else if p.exists() && !l.read_only.contains(&p) {
            l.read_only.push(p);
        }
    }
    l.read_write.push(workspace.to_path_buf());
    for extra in &settings.extra_rw {
        if exposes_secret(extra, host.clix_config) {
            l.hidden.push((extra.clone(), "would expose a secret store"));
        } else if extra.exists() {
            l.read_write.push(extra.clone());
        }
    }
    l.toolchain_vars.sort();
    l.toolchain_vars.dedup();
    l.path = path_dirs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":");
    l
}

/// The folder to mount for a PATH entry: the innermost dot-folder a
/// toolchain lives in (`~/.pyenv` for `~/.pyenv/shims`), or the parent of a `bin` folder
/// elsewhere (`/opt/node` for `/opt/node/bin`), so its libraries come along.
fn toolchain_root(dir: &Path) -> PathBuf {
    // The innermost dot-folder: `/tmp/.cache/x/.pyenv/shims` is `.pyenv`'s.
    let mut root = PathBuf::new();
    let mut dot_root = None;
    for component in dir.components() {
        root.push(component);
        if component.as_os_str().to_string_lossy().starts_with('.') {
            dot_root = Some(root.clone());
        }
    }
    if let Some(dot_root) = dot_root {
        return dot_root;
    }
    match (dir.file_name(), dir.parent()) {
        (Some(name), Some(parent)) if name == "bin" && parent != Path::new("/") => parent.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// bubblewrap arguments for `layout`, ending before the program's argv.
/// `extra_ro` comes last so a folder inside the workspace stays read-only.
pub(crate) fn bwrap_args(layout: &Layout, extra_ro: &[PathBuf], cwd: &Path, network: bool) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |items: &[&dyn AsRef<std::ffi::OsStr>]| {
        a.extend(items.iter().map(|i| i.as_ref().to_os_string()));
    };
    for dir in SYSTEM_DIRS {
        let path = Path::new(dir);
        match std::fs::read_link(path) {
            Ok(target) => push(&[&"--symlink", &target, &path]),
            Err(_) if path.is_dir() => push(&[&"--ro-bind", &path, &path]),
            Err(_) => {}
        }
    }
    for entry in ETC_ENTRIES.iter().map(Path::new).filter(|p| p.exists()) {
        push(&[&"--ro-bind", &entry, &entry]);
    }
    if network {
        for entry in NETWORK_ETC_ENTRIES.iter().map(Path::new).filter(|p| p.exists()) {
            push(&[&"--ro-bind", &entry, &entry]);
        }
    }
    push(&[&"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/tmp", &"--tmpfs", &SANDBOX_HOME]);
    for dir in &layout.read_only {
        push(&[&"--ro-bind", dir, dir]);
    }
    for dir in &layout.read_write {
        push(&[&"--bind", dir, dir]);
    }
    for dir in extra_ro {
        push(&[&"--ro-bind", dir, dir]);
    }
    push(&[&"--chdir", &cwd]);
    push(&[&"--unshare-all", &"--hostname", &"clix-sandbox"]);
    if network {
        push(&[&"--share-net"]);
    }
    push(&[&"--uid", &"1000", &"--gid", &"1000", &"--cap-drop", &"ALL"]);
    // The environment comes from bwrap's own (set by the caller to exactly
    // the allowed variables), never from `--setenv NAME VALUE`: arguments
    // are visible to every local user in `ps`.
    push(&[&"--die-with-parent", &"--new-session"]);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolchains_are_mounted_by_their_root_and_secrets_never() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        for d in [".pyenv/shims", ".pyenv/bin", ".cargo/bin", ".rustup", ".ssh/bin", "tools/bin", ".config/clix"] {
            std::fs::create_dir_all(h.join(d)).unwrap();
        }
        let path = format!(
            "{0}/.pyenv/shims:{0}/.pyenv/bin:{0}/.cargo/bin:/usr/bin:/bin:relative/bin:{0}/.ssh/bin:{0}/.pyenv/shims",
            h.display()
        );
        let ws = tempfile::tempdir().unwrap();
        let settings = SandboxSettings {
            extra_ro: vec![h.join(".config/clix"), h.to_path_buf(), h.join("tools")],
            ..SandboxSettings::default()
        };
        let l = layout(ws.path(), &settings, &Host { path: &path, clix_config: Some(&h.join(".config/clix")) });
        assert_eq!(l.read_only, vec![h.join(".pyenv"), h.join(".rustup"), h.join(".cargo"), h.join("tools")]);
        assert_eq!(l.read_write, vec![ws.path().to_path_buf()]);
        assert!(l.toolchain_vars.contains(&("PYENV_ROOT".into(), h.join(".pyenv").display().to_string())));
        assert!(l.toolchain_vars.contains(&("RUSTUP_HOME".into(), h.join(".rustup").display().to_string())));
        let hidden: Vec<&PathBuf> = l.hidden.iter().map(|(p, _)| p).collect();
        for secret in [h.join(".ssh"), h.join(".config/clix"), h.to_path_buf()] {
            assert!(hidden.contains(&&secret), "{} not hidden: {hidden:?}", secret.display());
        }
        let dirs: Vec<&str> = l.path.split(':').collect();
        assert_eq!(dirs.iter().filter(|d| d.ends_with(".pyenv/shims")).count(), 1, "deduplicated");
        assert!(!l.path.contains(".ssh") && !l.path.contains("relative"), "{}", l.path);
    }

    #[test]
    fn mount_roots_table() {
        for (dir, root) in [
            ("/root/.pyenv/shims", "/root/.pyenv"),
            ("/home/u/.local/bin", "/home/u/.local"),
            ("/opt/node/bin", "/opt/node"),
            ("/opt/tools", "/opt/tools"),
            ("/tmp/.tmpX/.cargo/bin", "/tmp/.tmpX/.cargo"),
            ("/bin", "/bin"),
        ] {
            assert_eq!(toolchain_root(Path::new(dir)), PathBuf::from(root), "{dir}");
        }
    }
}
