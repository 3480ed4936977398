//! What the sandbox sees: the bubblewrap arguments for one program.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::settings::SandboxSettings;

/// Inside the sandbox, `$HOME` is an empty tmpfs here.
pub(crate) const SANDBOX_HOME: &str = "/home/agent";

/// System trees mounted read-only (or re-created as symlinks when they are links).
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// The part of `/etc` programs need to start, find libraries and certificates.
const ETC_ENTRIES: &[&str] = &[
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/passwd",
    "/etc/group",
    "/etc/gitconfig",
    "/etc/python3",
    "/etc/pip.conf",
];

/// Secret stores under the user's home that are never mounted.
const SECRET_STORES: &[&str] = &[".ssh", ".aws", ".gnupg", ".netrc", ".docker", ".config/gh", ".kube", ".gcloud"];

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
    pub home: Option<&'a Path>,
    /// clix's own config folder: holds API keys, never mounted.
    pub clix_config: Option<&'a Path>,
}

pub(crate) fn layout(workspace: &Path, settings: &SandboxSettings, host: &Host<'_>) -> Layout {
    let mut l = Layout::default();
    let secrets: Vec<PathBuf> = host
        .home
        .map(|h| SECRET_STORES.iter().map(|s| h.join(s)).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(host.clix_config.map(Path::to_path_buf))
        .collect();
    let exposes_secret = |p: &Path| secrets.iter().any(|s| s.starts_with(p) || p.starts_with(s));

    let add_ro = |l: &mut Layout, p: PathBuf, why_hidden: &mut Vec<(PathBuf, &'static str)>| {
        if exposes_secret(&p) {
            why_hidden.push((p, "would expose a secret store"));
        } else if !l.read_only.contains(&p) && p.exists() {
            l.read_only.push(p);
        }
    };

    let mut hidden = Vec::new();
    let mut path_dirs = Vec::new();
    for dir in host.path.split(':').filter(|d| d.starts_with('/')).map(PathBuf::from) {
        if !dir.is_dir() || path_dirs.contains(&dir) {
            continue;
        }
        let root = toolchain_root(&dir, host.home);
        if SYSTEM_DIRS.iter().any(|s| root.starts_with(s)) {
            path_dirs.push(dir);
            continue;
        }
        if let Some(home) = host.home
            && let Ok(rel) = root.strip_prefix(home)
        {
            let top = rel.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned()).unwrap_or_default();
            if let Some((_, var)) = TOOLCHAINS.iter().find(|(name, _)| *name == top) {
                l.toolchain_vars.push((var.to_string(), root.display().to_string()));
            }
            for (name, companion) in COMPANIONS {
                if top == *name {
                    let sibling = home.join(companion);
                    if let Some((_, var)) = TOOLCHAINS.iter().find(|(n, _)| n == companion) {
                        l.toolchain_vars.push((var.to_string(), sibling.display().to_string()));
                    }
                    add_ro(&mut l, sibling, &mut hidden);
                }
            }
        }
        if exposes_secret(&root) {
            hidden.push((root, "would expose a secret store"));
            continue;
        }
        add_ro(&mut l, root, &mut hidden);
        path_dirs.push(dir);
    }
    for extra in &settings.extra_ro {
        add_ro(&mut l, extra.clone(), &mut hidden);
    }
    l.read_write.push(workspace.to_path_buf());
    for extra in &settings.extra_rw {
        if exposes_secret(extra) {
            hidden.push((extra.clone(), "would expose a secret store"));
        } else if extra.exists() {
            l.read_write.push(extra.clone());
        }
    }
    l.toolchain_vars.sort();
    l.toolchain_vars.dedup();
    l.hidden = hidden;
    l.path = path_dirs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":");
    l
}

/// The folder to mount for a PATH entry: the toolchain folder directly under
/// the home (`~/.pyenv` for `~/.pyenv/shims`), or the parent of a `bin`
/// folder elsewhere (`/opt/node` for `/opt/node/bin`), so libraries come along.
fn toolchain_root(dir: &Path, home: Option<&Path>) -> PathBuf {
    if let Some(home) = home
        && let Ok(rel) = dir.strip_prefix(home)
        && let Some(first) = rel.components().next()
    {
        return home.join(first);
    }
    match (dir.file_name(), dir.parent()) {
        (Some(name), Some(parent)) if name == "bin" && parent != Path::new("/") => parent.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// bubblewrap arguments for `layout`, ending before the program's argv.
pub(crate) fn bwrap_args(layout: &Layout, cwd: &Path, network: bool) -> Vec<OsString> {
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
    if network && Path::new("/etc/resolv.conf").exists() {
        push(&[&"--ro-bind", &"/etc/resolv.conf", &"/etc/resolv.conf"]);
    }
    push(&[&"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/tmp", &"--tmpfs", &SANDBOX_HOME]);
    for dir in &layout.read_only {
        push(&[&"--ro-bind", dir, dir]);
    }
    for dir in &layout.read_write {
        push(&[&"--bind", dir, dir]);
    }
    push(&[&"--chdir", &cwd]);
    push(&[&"--unshare-all", &"--hostname", &"clix-sandbox"]);
    if network {
        push(&[&"--share-net"]);
    }
    push(&[&"--uid", &"1000", &"--gid", &"1000", &"--cap-drop", &"ALL"]);
    push(&[&"--die-with-parent", &"--new-session", &"--clearenv"]);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolchains_are_mounted_by_their_root_and_secrets_never() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        for d in [".pyenv/shims", ".pyenv/bin", ".cargo/bin", ".rustup", ".ssh", "bin-tools/bin", ".config/clix"] {
            std::fs::create_dir_all(h.join(d)).unwrap();
        }
        let path =
            format!("{0}/.pyenv/shims:{0}/.pyenv/bin:{0}/.cargo/bin:/usr/bin:/bin:relative/bin:{0}/.ssh", h.display());
        let ws = tempfile::tempdir().unwrap();
        let settings = SandboxSettings { extra_ro: vec![h.join(".config/clix")], ..SandboxSettings::default() };
        let l = layout(
            ws.path(),
            &settings,
            &Host { path: &path, home: Some(h), clix_config: Some(&h.join(".config/clix")) },
        );
        assert_eq!(l.read_only, vec![h.join(".pyenv"), h.join(".rustup"), h.join(".cargo")]);
        assert_eq!(l.read_write, vec![ws.path().to_path_buf()]);
        assert!(l.toolchain_vars.contains(&("PYENV_ROOT".into(), h.join(".pyenv").display().to_string())));
        assert!(l.toolchain_vars.contains(&("RUSTUP_HOME".into(), h.join(".rustup").display().to_string())));
        let hidden: Vec<&PathBuf> = l.hidden.iter().map(|(p, _)| p).collect();
        assert!(hidden.contains(&&h.join(".ssh")), "{hidden:?}");
        assert!(hidden.contains(&&h.join(".config/clix")), "{hidden:?}");
        assert!(!l.path.contains(".ssh") && !l.path.contains("relative"), "{}", l.path);
        assert!(l.path.starts_with(&format!("{}/.pyenv/shims:", h.display())));
    }

    #[test]
    fn bin_folders_bring_their_parent() {
        assert_eq!(toolchain_root(Path::new("/opt/node/bin"), None), PathBuf::from("/opt/node"));
        assert_eq!(toolchain_root(Path::new("/opt/tools"), None), PathBuf::from("/opt/tools"));
        assert_eq!(toolchain_root(Path::new("/bin"), None), PathBuf::from("/bin"));
    }
}
