//! What the sandbox sees: the bubblewrap arguments for one program.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clix_workspace::SECRET_STORES;

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

/// Credential files a toolchain keeps inside its own folder, relative to a
/// home like [`SECRET_STORES`] (`*` stands for any one name). Only the part
/// inside a mounted folder matters: they are covered, not mounted.
const TOOLCHAIN_SECRETS: &[&str] = &[
    // npm's global config (`npm config set --global`, e.g. an auth token) of each node nvm installed.
    ".nvm/versions/node/*/etc/npmrc",
    // pip's per-interpreter config, whose index URL can carry a password.
    ".pyenv/versions/*/pip.conf",
];

/// Every store, home-relative: clix-workspace's one list, then the toolchains' own.
fn stores() -> impl Iterator<Item = &'static str> {
    SECRET_STORES.iter().chain(TOOLCHAIN_SECRETS).copied()
}

/// Toolchain folders in the home and the variable that tells the tool where it is
/// (HOME inside the sandbox is empty, so defaults like ~/.pyenv would miss).
const TOOLCHAINS: &[(&str, &str)] =
    &[(".pyenv", "PYENV_ROOT"), (".cargo", "CARGO_HOME"), (".rustup", "RUSTUP_HOME"), (".nvm", "NVM_DIR")];

/// Toolchains that need a sibling folder to run (cargo's proxies need rustup's toolchains).
const COMPANIONS: &[(&str, &str)] = &[(".cargo", ".rustup")];

/// The mount plan for one sandbox; also what `sandbox status` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The workspace, whose stores below its top are covered at each run
    /// ([`nested_masks`]), mounted read-write or, confined, read-only.
    pub workspace: PathBuf,
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
    /// The folders no mount may reach.
    pub private: &'a Private,
}

/// What no mount may reach: clix's own folders (config with API keys, data
/// with every topic's memory, state with the audit log, cache), neither
/// holding them nor inside them, and the home folder, which no mount may
/// hold (a toolchain inside it, `~/.cargo`, is fine).
#[derive(Debug, Clone, Default)]
pub(crate) struct Private {
    pub clix: Vec<PathBuf>,
    pub home: Option<PathBuf>,
}

impl Private {
    /// Whether mounting `p` would show one of these: it holds one, or lies
    /// inside one of clix's.
    pub(crate) fn reached_by(&self, p: &Path) -> bool {
        self.any_form(p, |p| self.holds(p) || self.clix.iter().any(|c| p.starts_with(c)))
    }

    /// Whether `p` holds one of these (a hub tool's own folder may lie in
    /// clix's config folder, but no mount may hold that folder).
    pub(crate) fn holds(&self, p: &Path) -> bool {
        self.any_form(p, |p| {
            self.clix.iter().any(|c| c.starts_with(p)) || self.home.as_deref().is_some_and(|h| h.starts_with(p))
        })
    }

    /// `test` on `p` as written and as resolved (a symlinked PATH folder).
    fn any_form(&self, p: &Path, test: impl Fn(&Path) -> bool) -> bool {
        test(p) || std::fs::canonicalize(p).is_ok_and(|resolved| test(&resolved))
    }
}

/// Whether mounting `p` would show a secret store: it is one, lies inside
/// one, or holds one (a whole home folder), or it reaches a [`Private`] folder.
/// A store only partly inside `p` (`.cargo/credentials.toml` for a mounted
/// `~/.cargo`) does not hide `p`: [`masks`] covers it.
pub(crate) fn exposes_secret(p: &Path, private: &Private) -> bool {
    stores().any(|store| {
        let store: Vec<&str> = store.split('/').collect();
        p.ancestors().any(|a| ends_with(a, &store)) || !expand(p, &store).is_empty()
    }) || private.reached_by(p)
}

/// Whether `p`'s last components match `pattern` (`*` matches any one name).
fn ends_with(p: &Path, pattern: &[&str]) -> bool {
    let names: Vec<&std::ffi::OsStr> = p.iter().collect();
    names.len() > pattern.len()
        && names[names.len() - pattern.len()..].iter().zip(pattern).all(|(n, pat)| *pat == "*" || *n == *pat)
}

/// The existing paths `base/pattern` names (`*` matches any one name).
fn expand(base: &Path, pattern: &[&str]) -> Vec<PathBuf> {
    let mut found = vec![base.to_path_buf()];
    for part in pattern {
        found = if *part == "*" {
            found
                .iter()
                .filter_map(|dir| std::fs::read_dir(dir).ok())
                .flat_map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())))
                .collect()
        } else {
            found.iter().map(|dir| dir.join(part)).collect()
        };
    }
    found.retain(|p| p.symlink_metadata().is_ok());
    found
}

/// A credential store inside a mounted folder, covered in the sandbox: a
/// file by `/dev/null` (reading it is refused: the mount is `nodev`), a
/// folder by an empty read-only tmpfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mask {
    pub path: PathBuf,
    pub dir: bool,
}

/// The stores inside the folders `mounts` (mounted at their own paths), as
/// they are on disk now: a store is any path of [`SECRET_STORES`] or
/// [`TOOLCHAIN_SECRETS`] whose leading folders a mount ends with (or holds),
/// e.g. `credentials.toml` in a mounted `~/.cargo`. A store that is a symlink
/// is followed (as the sandbox would) and covered where it points, if that
/// is inside a mount; elsewhere the sandbox cannot reach it.
pub(crate) fn masks<'a>(mounts: impl IntoIterator<Item = &'a Path> + Clone) -> Vec<Mask> {
    let mut masks: Vec<Mask> = Vec::new();
    for mount in mounts.clone() {
        for store in stores() {
            let store: Vec<&str> = store.split('/').collect();
            for k in 0..store.len() {
                if k > 0 && !ends_with(mount, &store[..k]) {
                    continue;
                }
                for found in expand(mount, &store[k..]) {
                    if let Some(mask) = resolve(&found, mounts.clone())
                        && !masks.contains(&mask)
                    {
                        masks.push(mask);
                    }
                }
            }
        }
    }
    masks
}

/// Secret stores below the workspace's top (the top's are [`masks`]'), as
/// the workspace's handle hides them from the shell: found by a walk that
/// follows no symlink, skips `.git`, and stops at [`NESTED_DEPTH`] levels
/// and [`NESTED_FOLDERS`] folders, so that a run's set-up stays quick in a
/// big tree. A store deeper than that is hidden from the shell but not
/// covered here (docs/security.md says so).
pub(crate) fn nested_masks<'a>(workspace: &Path, mounts: impl IntoIterator<Item = &'a Path> + Clone) -> Vec<Mask> {
    let mut masks = Vec::new();
    let mut pending = vec![(workspace.to_path_buf(), 0usize)];
    let mut listed = 0usize;
    while let Some((dir, depth)) = pending.pop() {
        listed += 1;
        if listed > NESTED_FOLDERS {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(rel) = path.strip_prefix(workspace) else { continue };
            if clix_workspace::secret_store_in(rel).is_some() {
                if depth > 0
                    && let Some(mask) = resolve(&path, mounts.clone())
                    && !masks.contains(&mask)
                {
                    masks.push(mask);
                }
            } else if depth + 1 < NESTED_DEPTH
                && entry.file_name() != ".git"
                && entry.file_type().is_ok_and(|t| t.is_dir())
            {
                pending.push((path, depth + 1));
            }
        }
    }
    masks
}

/// How deep below the workspace's top [`nested_masks`] looks.
const NESTED_DEPTH: usize = 5;

/// How many folders [`nested_masks`] lists at most.
const NESTED_FOLDERS: usize = 4000;

/// `path` with its symlinks followed lexically (as the sandbox sees the
/// mounts, at their host paths), if the result is inside one of `mounts`.
fn resolve<'a>(path: &Path, mounts: impl IntoIterator<Item = &'a Path> + Clone) -> Option<Mask> {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        if !mounts.clone().into_iter().any(|m| path.starts_with(m)) {
            return None;
        }
        let meta = path.symlink_metadata().ok()?;
        if !meta.file_type().is_symlink() {
            return Some(Mask { dir: meta.is_dir(), path });
        }
        let target = std::fs::read_link(&path).ok()?;
        path = normalize(&path.parent()?.join(target));
    }
    None
}

/// `..` and `.` removed without touching the disk.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

pub(crate) fn layout(workspace: &Path, settings: &SandboxSettings, host: &Host<'_>) -> Layout {
    let mut l = Layout { workspace: workspace.to_path_buf(), ..Layout::default() };
    let mut path_dirs: Vec<PathBuf> = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    for dir in host.path.split(':').filter(|d| d.starts_with('/')).map(PathBuf::from) {
        if !dir.is_dir() || path_dirs.contains(&dir) {
            continue;
        }
        // A toolchain's root that would hold clix's folders or the home
        // (`~/.local` for `~/.local/bin`, the home for `~/bin`) gives way to
        // the PATH folder itself.
        let root =
            Some(toolchain_root(&dir)).filter(|root| !host.private.reached_by(root)).unwrap_or_else(|| dir.clone());
        if exposes_secret(&root, host.private) {
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
        if exposes_secret(&p, host.private) {
            l.hidden.push((p, "would expose a secret store"));
        } else if p.exists() && !l.read_only.contains(&p) {
            l.read_only.push(p);
        }
    }
    l.read_write.push(workspace.to_path_buf());
    for extra in &settings.extra_rw {
        if exposes_secret(extra, host.private) {
            l.hidden.push((extra.clone(), "would expose a secret store"));
        } else if extra.exists() {
            l.read_write.push(extra.clone());
        }
    }
    let mounted = l.read_only.iter().chain(&l.read_write).map(PathBuf::as_path);
    for mask in masks(mounted.clone()) {
        l.hidden.push((mask.path, "credentials inside a mounted folder: covered, never readable"));
    }
    for mask in nested_masks(workspace, mounted) {
        l.hidden.push((mask.path, "a secret store in the workspace: covered, never readable"));
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
/// `git` is the workspace repository's [`clix_workspace::Folder::git_protected`]:
/// `.git` bound over itself (unless `confined`, where the workspace is
/// read-only already), then what git runs from it, read-only.
pub(crate) fn bwrap_args(
    layout: &Layout,
    extra_ro: &[PathBuf],
    cwd: &Path,
    network: bool,
    git: &[PathBuf],
    confined: bool,
) -> Vec<OsString> {
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
    // Looked up at each run, so a credential file made since (`cargo login`) is covered too.
    let mounted = layout.read_only.iter().chain(&layout.read_write).chain(extra_ro).map(PathBuf::as_path);
    let workspace = nested_masks(&layout.workspace, mounted.clone());
    for mask in masks(mounted).into_iter().chain(workspace) {
        if mask.dir {
            push(&[&"--tmpfs", &mask.path, &"--remount-ro", &mask.path]);
        } else {
            push(&[&"--ro-bind", &"/dev/null", &mask.path]);
        }
    }
    if let Some((git_dir, runs)) = git.split_first() {
        // A mount point cannot be renamed or removed: the repository's
        // `.git` stays the one whose config and hooks are read-only.
        if !confined {
            push(&[&"--bind", git_dir, git_dir]);
        }
        for path in runs {
            push(&[&"--ro-bind", path, path]);
        }
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
        let private = Private { clix: vec![h.join(".config/clix")], home: None };
        let l = layout(ws.path(), &settings, &Host { path: &path, private: &private });
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

    /// What a path inside the sandbox shows, from the bwrap arguments in
    /// order (a later mount covers an earlier one): `Some(host path)` when it
    /// is a host folder's content, `None` when it is covered or not there.
    fn shown(args: &[OsString], path: &Path) -> Option<PathBuf> {
        let a: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let mut shown = None;
        let mut i = 0;
        while i < a.len() {
            let (op, width) = match a[i].to_str().unwrap() {
                "--ro-bind" | "--bind" | "--symlink" => (Some((a[i + 1], a[i + 2])), 3),
                "--tmpfs" | "--proc" | "--dev" | "--remount-ro" => (Some((a[i], a[i + 1])), 2),
                "--chdir" | "--hostname" | "--uid" | "--gid" | "--cap-drop" => (None, 2),
                _ => (None, 1),
            };
            if let Some((source, dest)) = op {
                let dest = Path::new(dest);
                if path.starts_with(dest) && a[i] != "--remount-ro" {
                    shown = match a[i].to_str().unwrap() {
                        "--ro-bind" | "--bind" if Path::new(source) != Path::new("/dev/null") => {
                            Some(Path::new(source).join(path.strip_prefix(dest).unwrap()))
                        }
                        _ => None,
                    };
                }
            }
            i += width;
        }
        shown
    }

    #[test]
    fn no_secret_store_under_a_home_is_ever_mounted() {
        for as_folders in [false, true] {
            let home = tempfile::tempdir().unwrap();
            let h = home.path();
            let concrete = |s: &str| s.replace('*', "v1");
            let all: Vec<String> = SECRET_STORES.iter().chain(TOOLCHAIN_SECRETS).map(|s| concrete(s)).collect();
            for store in &all {
                let p = h.join(store);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                if as_folders {
                    std::fs::create_dir_all(&p).unwrap();
                    std::fs::write(p.join("token"), "CANARY").unwrap();
                } else {
                    std::fs::write(&p, "CANARY").unwrap();
                }
            }
            // Every folder on the way to a store is a toolchain on PATH and an extra mount.
            let mut folders: Vec<PathBuf> = Vec::new();
            for store in &all {
                for a in h.join(store).ancestors().skip(1).take_while(|a| a.starts_with(h) && *a != h) {
                    if !folders.contains(&a.to_path_buf()) {
                        folders.push(a.to_path_buf());
                    }
                }
            }
            let mut path = String::from("/usr/bin:/bin");
            for f in &folders {
                std::fs::create_dir_all(f.join("bin")).unwrap();
                path.push_str(&format!(":{}", f.join("bin").display()));
            }
            let ws = tempfile::tempdir().unwrap();
            let mut extra = folders.clone();
            extra.push(h.to_path_buf());
            let settings =
                SandboxSettings { extra_ro: extra.clone(), extra_rw: extra.clone(), ..SandboxSettings::default() };
            let l = layout(ws.path(), &settings, &Host { path: &path, private: &Private::default() });
            assert!(l.read_only.contains(&h.join(".cargo")), "toolchains are still mounted: {:?}", l.read_only);
            let args = bwrap_args(&l, &extra, ws.path(), false, &[], false);
            for store in &all {
                let p = h.join(store);
                assert_eq!(shown(&args, &p), None, "{store} is mounted (folders: {as_folders})");
                if as_folders {
                    assert_eq!(shown(&args, &p.join("token")), None, "{store}/token is mounted");
                }
            }
            assert_eq!(shown(&args, &h.join(".cargo/bin")), Some(h.join(".cargo/bin")), "the toolchain itself shows");
            let hidden: Vec<&PathBuf> = l.hidden.iter().map(|(p, _)| p).collect();
            assert!(hidden.contains(&&h.join(".cargo/credentials.toml")), "status lists it: {hidden:?}");
        }
    }

    #[test]
    fn a_store_that_is_a_symlink_is_covered_where_it_points() {
        let home = tempfile::tempdir().unwrap();
        let cargo = home.path().join(".cargo");
        std::fs::create_dir_all(cargo.join("stash")).unwrap();
        std::fs::write(cargo.join("stash/creds"), "CANARY").unwrap();
        std::os::unix::fs::symlink("stash/creds", cargo.join("credentials.toml")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/creds", cargo.join("credentials")).unwrap();
        let m = masks([cargo.as_path()]);
        assert_eq!(
            m,
            vec![Mask { path: cargo.join("stash/creds"), dir: false }],
            "a link out of the mounts is unreachable"
        );
    }

    /// Issue 28, finding 2: with `~/.local/bin` on PATH (Ubuntu's default)
    /// `~/.local` was mounted, and with it every topic's memory and the audit
    /// log; with `~/bin`, the whole home.
    #[test]
    fn clix_own_folders_and_the_home_are_never_mounted_for_a_path_folder() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path().canonicalize().unwrap();
        let clix: Vec<PathBuf> = [".config/clix", ".local/share/clix", ".local/state/clix", ".cache/clix"]
            .iter()
            .map(|d| h.join(d))
            .collect();
        for d in clix.iter().chain(&[h.join(".local/bin"), h.join("bin"), h.join(".local/share/clix/bin")]) {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(h.join(".local/share/clix/memory.sqlite"), "every topic").unwrap();
        let path = format!("{0}/.local/bin:{0}/bin:{0}/.local/share/clix/bin:/usr/bin", h.display());
        let private = Private { clix, home: Some(h.clone()) };
        let ws = tempfile::tempdir().unwrap();
        let settings = SandboxSettings { extra_ro: vec![h.join(".local"), h.clone()], ..SandboxSettings::default() };
        let l = layout(ws.path(), &settings, &Host { path: &path, private: &private });
        assert_eq!(l.read_only, vec![h.join(".local/bin"), h.join("bin")], "{l:#?}");
        let hidden: Vec<&Path> = l.hidden.iter().map(|(p, _)| p.as_path()).collect();
        for refused in [h.join(".local/share/clix/bin"), h.join(".local"), h.clone()] {
            assert!(hidden.contains(&refused.as_path()), "{} is not refused: {l:#?}", refused.display());
        }
        assert!(!l.path.contains(".local/share/clix"), "{}", l.path);
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
