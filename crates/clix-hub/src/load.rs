//! Finding manifest files in hub folders, parsing them (JSON, TOML, YAML),
//! resolving each tool's command, and keeping tool names unique.
//!
//! Layout of a hub folder: every `*.json`, `*.toml`, `*.yaml` or `*.yml`
//! file directly in it is one tool; a subfolder may hold one tool as
//! `manifest.{json,toml,yaml,yml}` next to its executable and data files
//! (other files in a subfolder are not read). Hidden entries are skipped.
//!
//! Every hub folder is read through a [`Folder`] handle: a manifest must be
//! a regular file, is opened without blocking and read up to
//! [`MAX_MANIFEST_BYTES`], and no path leads out of the folder, through a
//! symlink or otherwise. A workspace's `.clix/hub` comes with whatever was
//! cloned and a program in the sandbox may have planted anything in it: it
//! is opened beneath the workspace handle, its tools may run only a program
//! inside the workspace or in a system folder, and the user's own folders
//! win over it for a name.

use std::ffi::OsString;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use clix_sandbox::SYSTEM_DIRS;
use clix_workspace::{Entry, Folder, Kind, normalize};
use serde_json::Value;

use crate::formats::{EXTENSIONS, parse_document};
use crate::manifest::{self, Manifest};
use crate::problem::{FieldProblem, Problem};

/// Manifests larger than this are refused (a manifest is a few KiB).
pub(crate) const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// A tool that loaded: its manifest and where its program is.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// What the manifest declares, checked.
    pub manifest: Manifest,
    /// The manifest file.
    pub manifest_path: PathBuf,
    /// The folder of the manifest: relative `command` and `cwd` are resolved
    /// against it. For a workspace's tool, its path below the workspace's
    /// root as written (never resolved through symlinks on the host).
    pub dir: PathBuf,
    /// The absolute path of the executable to run. A workspace's tool runs
    /// a program inside the workspace or in a system folder, nothing else.
    pub program: PathBuf,
    /// From one of the user's own hub folders (not a workspace's
    /// `.clix/hub`, which comes with whatever repository was cloned).
    pub trusted: bool,
    /// The manifest's and the program's modification and change times and
    /// sizes when loaded: what a cached self-test result is valid for.
    pub(crate) stamp: String,
}

/// One folder to scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSource {
    /// The folder, as the user or the config named it.
    pub path: PathBuf,
    /// A folder named by the user (`--hub DIR`) must exist; a default one may be absent.
    pub must_exist: bool,
    /// The user's own folder; a workspace's `.clix/hub` is not: it is read
    /// beneath the workspace handle only (`path` must be inside the
    /// workspace), and its tools get no `[hub.env]` values, no network, no
    /// program outside the workspace and the system folders, and lose to the
    /// user's tools of the same name.
    pub trusted: bool,
}

impl HubSource {
    /// A folder the user named (`--hub DIR`, `hub.dirs`, `CLIX_HUB_PATH`):
    /// one that does not exist is a problem.
    pub fn explicit(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), must_exist: true, trusted: true }
    }

    /// The config folder's `hub/`: the user's, and fine to be absent.
    pub fn default_dir(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), must_exist: false, trusted: true }
    }

    /// A workspace's own hub folder (`.clix/hub`): untrusted, read only
    /// beneath the workspace handle, and fine to be absent.
    pub fn workspace(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), must_exist: false, trusted: false }
    }
}

/// How manifests' commands are looked up while loading.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The PATH searched for a bare `command` name; `None` uses this process's PATH.
    pub search_path: Option<OsString>,
}

/// The result of loading a hub: the tools that are available and every problem.
#[derive(Debug, Clone, Default)]
pub struct Hub {
    /// The tools that loaded, first of each name only, in the sources' order.
    pub tools: Vec<Tool>,
    /// Why each other manifest (or folder) did not load; each one makes
    /// only its own tool unavailable.
    pub problems: Vec<Problem>,
}

impl Hub {
    /// The tool of that name, if it loaded.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.manifest.name == name)
    }
}

/// Load every manifest of the sources: the user's own folders first, in
/// their order, then the workspace's (whatever order they are given in).
/// When two manifests declare the same name, the first one wins and the
/// later one is a problem: a workspace's tool of the same name as one of the
/// user's is reported as shadowed, so a cloned repository can never replace
/// a tool the user chose.
///
/// A workspace's folder (a source that is not `trusted`) is read beneath
/// `workspace` only; without it, it is a problem and nothing of it is read.
pub fn load_hub(sources: &[HubSource], opts: &LoadOptions, workspace: Option<&Folder>) -> Hub {
    let mut hub = Hub::default();
    let ordered = sources.iter().filter(|s| s.trusted).chain(sources.iter().filter(|s| !s.trusted));
    for source in ordered {
        let place = match Place::open(source, workspace) {
            Ok(Some(place)) => place,
            Ok(None) => continue,
            Err(problem) => {
                hub.problems.push(problem);
                continue;
            }
        };
        let files = match manifest_files(&place.folder, place.workspace.is_none()) {
            Ok(files) => files,
            Err(e) => {
                hub.problems.push(Problem {
                    file: place.shown.clone(),
                    field: String::new(),
                    message: format!("cannot read hub folder: {e}"),
                    fix: "check that the path is a readable folder".into(),
                });
                continue;
            }
        };
        for file in files {
            match place.load(&file, opts) {
                Ok(tool) => add(&mut hub, tool),
                Err(problems) => hub.problems.extend(problems),
            }
        }
    }
    hub
}

/// Adds `tool` unless its name is taken, which is then a problem of its file.
fn add(hub: &mut Hub, tool: Tool) {
    let Some(first) = hub.get(&tool.manifest.name) else {
        hub.tools.push(tool);
        return;
    };
    let (name, file, first_file) = (&tool.manifest.name, tool.manifest_path.display(), first.manifest_path.display());
    let (message, fix) = if first.trusted && !tool.trusted {
        (
            format!("tool `{name}` from {file} is shadowed by {first_file}"),
            "your own hub folder's tool is used; rename the workspace's tool to have both",
        )
    } else {
        (
            format!("tool `{name}` is already defined by {first_file}"),
            "rename one of the two tools or remove one manifest",
        )
    };
    hub.problems.push(Problem { file: tool.manifest_path.clone(), field: "name".into(), message, fix: fix.into() });
}

/// A hub folder, opened once.
struct Place<'a> {
    folder: Folder,
    /// How the folder is named in problems and tools: as the user gave it, or
    /// for a workspace's, its path below the workspace's root.
    shown: PathBuf,
    /// For a workspace's folder: the workspace, beneath which its tools'
    /// programs must be. `None` for the user's own folders.
    workspace: Option<&'a Folder>,
}

impl<'a> Place<'a> {
    /// Opens `source`: `None` when a folder that may be absent is.
    fn open(source: &HubSource, workspace: Option<&'a Folder>) -> Result<Option<Self>, Problem> {
        let problem = |message: String, fix: &str| Problem {
            file: source.path.clone(),
            field: String::new(),
            message,
            fix: fix.into(),
        };
        if source.trusted {
            return match Folder::open(&source.path) {
                Ok(folder) => Ok(Some(Place { folder, shown: source.path.clone(), workspace: None })),
                Err(e) if e.kind() == ErrorKind::NotFound && !source.must_exist => Ok(None),
                Err(e) => {
                    let fix = if e.kind() == ErrorKind::NotFound {
                        "create the folder or correct the --hub path"
                    } else {
                        "check that the path is a readable folder"
                    };
                    Err(problem(format!("cannot read hub folder: {e}"), fix))
                }
            };
        }
        let Some(ws) = workspace else {
            let message = "a workspace's hub folder is read only through the workspace, which is not open".to_string();
            return Err(problem(message, "load the hub with the session's workspace"));
        };
        let Some(rel) = workspace_relative(ws, &source.path) else {
            return Err(problem(
                format!("is not inside the workspace {}", ws.root().display()),
                "a workspace's hub folder is its .clix/hub",
            ));
        };
        match ws.open_dir(&rel) {
            Ok(folder) => Ok(Some(Place { shown: folder.root().to_path_buf(), folder, workspace: Some(ws) })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => {
                Err(problem(format!("cannot read hub folder: {e}"), "make .clix/hub a plain folder of the workspace"))
            }
        }
    }

    /// The host path of `rel` in this folder, as problems and tools show it.
    fn shown(&self, rel: &Path) -> PathBuf {
        if rel.as_os_str().is_empty() { self.shown.clone() } else { self.shown.join(rel) }
    }

    /// Reads and checks the manifest at `rel`, resolving its command.
    fn load(&self, rel: &Path, opts: &LoadOptions) -> Result<Tool, Vec<Problem>> {
        let path = self.shown(rel);
        let file_problem = |message: String, fix: &str| vec![FieldProblem::new("", message, fix).in_file(&path)];
        let entry = self
            .folder
            .symlink_metadata(rel)
            .map_err(|e| file_problem(format!("cannot read: {e}"), "check the file exists"))?;
        match entry.kind {
            Kind::File => {}
            Kind::Symlink => {
                let (message, fix) = self.symlink_problem(rel);
                return Err(file_problem(message, fix));
            }
            kind => {
                return Err(file_problem(
                    format!(
                        "is {}, not a regular file; clix reads a manifest only from a regular file",
                        described(kind)
                    ),
                    "remove it, or put the manifest there as a regular file",
                ));
            }
        }
        if entry.len > MAX_MANIFEST_BYTES {
            return Err(file_problem(
                format!("the manifest is {} bytes, more than {MAX_MANIFEST_BYTES}", entry.len),
                "keep a manifest small: move data out of it",
            ));
        }
        // The handle opens it again without following a symlink or blocking,
        // so a swap since the look above is refused, never followed.
        let bytes = self.folder.read(rel, MAX_MANIFEST_BYTES).map_err(|e| {
            if e.kind() == ErrorKind::FileTooLarge {
                file_problem(format!("the manifest is more than {MAX_MANIFEST_BYTES} bytes"), "keep a manifest small")
            } else {
                file_problem(format!("cannot read: {e}"), "check the file's permissions")
            }
        })?;
        let Ok(text) = String::from_utf8(bytes) else {
            return Err(file_problem("the manifest is not UTF-8 text".into(), "save it as UTF-8"));
        };
        let ext = rel.extension().and_then(|e| e.to_str()).unwrap_or("");
        let doc = parse_document(ext, &text).map_err(|p| vec![p.in_file(&path)])?;
        let dir = match rel.parent() {
            Some(sub) if !sub.as_os_str().is_empty() => self.folder.root().join(sub),
            _ => self.folder.root().to_path_buf(),
        };
        let resolve = |command: &str| match self.workspace {
            None => resolve_command(command, &dir, opts),
            Some(ws) => resolve_workspace_command(command, &dir, ws, opts),
        };
        let manifest = match manifest::from_value(&doc) {
            Ok(m) => m,
            Err(mut problems) => {
                // Report a bad command too, so one `hub check` shows every problem of the file.
                if let Some(command) = doc.get("command").and_then(Value::as_str).filter(|c| !c.trim().is_empty())
                    && let Err(p) = resolve(command)
                {
                    problems.push(p);
                }
                return Err(problems.into_iter().map(|p| p.in_file(&path)).collect());
            }
        };
        let program = resolve(&manifest.command).map_err(|p| vec![p.in_file(&path)])?;
        let stamp = match self.workspace {
            None => format!("{}\0{}", host_stamp(&path), host_stamp(&program)),
            Some(ws) => {
                let program_stamp = match ws.relative(&program) {
                    Ok(_) => entry_stamp(ws.metadata(&program).ok()),
                    Err(_) => host_stamp(&program),
                };
                format!("{}\0{program_stamp}", entry_stamp(Some(entry)))
            }
        };
        Ok(Tool { manifest, manifest_path: path, dir, program, trusted: self.workspace.is_none(), stamp })
    }

    /// Why the symlink at `rel` is not read as a manifest, and the fix.
    fn symlink_problem(&self, rel: &Path) -> (String, &'static str) {
        let fix = "put the manifest (or the tool's folder) itself in the hub folder, not a symlink to it";
        let leads_out = |folder: &Folder, path: &Path| matches!(folder.metadata(path), Err(e) if e.kind() == ErrorKind::PermissionDenied);
        let message = if self.workspace.is_some_and(|ws| leads_out(ws, &self.shown(rel))) {
            "is a symlink leading outside the workspace; clix does not follow it"
        } else if leads_out(&self.folder, rel) {
            "is a symlink leading outside the hub folder; clix does not follow it"
        } else {
            "is a symlink; clix reads a manifest only from a regular file, never through a symlink"
        };
        (message.to_string(), fix)
    }
}

/// How a problem names a kind of entry.
fn described(kind: Kind) -> &'static str {
    match kind {
        Kind::File => "a regular file",
        Kind::Dir => "a folder",
        Kind::Symlink => "a symlink",
        Kind::Fifo => "a FIFO",
        Kind::Socket => "a socket",
        Kind::Device => "a device",
    }
}

/// `path` (a workspace's hub folder as the caller named it) relative to the
/// workspace. The caller may name the workspace by another path than its
/// canonical one (a symlinked parent): only the folders down to the
/// workspace itself are resolved on the host, never one inside it.
fn workspace_relative(ws: &Folder, path: &Path) -> Option<PathBuf> {
    if let Ok(rel) = ws.relative(path) {
        return Some(rel);
    }
    let ancestors: Vec<&Path> = path.ancestors().collect();
    for above in ancestors.into_iter().rev() {
        let Ok(real) = fs::canonicalize(above) else { return None };
        if real == ws.root() {
            return path.strip_prefix(above).ok().map(Path::to_path_buf);
        }
        if real.starts_with(ws.root()) {
            return None;
        }
    }
    None
}

/// The manifest files of one hub folder, relative to it, sorted. Entries
/// are described without following symlinks; a symlinked tool folder is
/// looked into only when it stays inside, and one leading outside is listed
/// so that loading it reports why it is not read. In the workspace that is
/// any symlink leading outside; in the user's own folder, one to a folder
/// (a symlinked program there is the manifest's business).
fn manifest_files(folder: &Folder, trusted: bool) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for (name, entry) in folder.read_dir(Path::new("."))? {
        if name.starts_with('.') {
            continue;
        }
        let path = PathBuf::from(&name);
        let is_manifest = path.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e));
        let is_dir = match entry.kind {
            Kind::Dir => true,
            Kind::Symlink if !is_manifest => match folder.metadata(&path) {
                Ok(target) => target.kind == Kind::Dir,
                Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                    if !trusted || folder.root().join(&path).is_dir() {
                        out.push(path);
                    }
                    continue;
                }
                Err(_) => false,
            },
            _ => false,
        };
        if is_dir {
            for ext in EXTENSIONS {
                let m = path.join(format!("manifest.{ext}"));
                if folder.symlink_metadata(&m).is_ok() {
                    out.push(m);
                }
            }
        } else if is_manifest {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Load and check one manifest file of the user's own, resolving its
/// command. The file is read like any in a hub folder: a regular file,
/// without blocking, at most 1 MiB.
pub fn load_file(path: &Path, opts: &LoadOptions) -> Result<Tool, Vec<Problem>> {
    let file_problem = |message: String, fix: &str| vec![FieldProblem::new("", message, fix).in_file(path)];
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(file_problem("not a file's path".into(), "name a manifest file"));
    };
    let opened = Folder::open(if dir.as_os_str().is_empty() { Path::new(".") } else { dir });
    let folder = opened.map_err(|e| file_problem(format!("cannot read: {e}"), "check the file exists"))?;
    Place { folder, shown: dir.to_path_buf(), workspace: None }.load(Path::new(name), opts)
}

/// Where the program of `command` is: a path (with a `/`) relative to the
/// manifest's folder, or a bare name in that folder or on PATH.
fn resolve_command(command: &str, dir: &Path, opts: &LoadOptions) -> Result<PathBuf, FieldProblem> {
    let not_executable = |p: &Path| {
        FieldProblem::new("command", format!("{} is not executable", p.display()), format!("chmod +x {}", p.display()))
    };
    if command.contains('/') {
        let p = if Path::new(command).is_absolute() { PathBuf::from(command) } else { dir.join(command) };
        if !p.is_file() {
            return Err(FieldProblem::new(
                "command",
                format!("{} does not exist or is not a file", p.display()),
                "correct the path (relative paths start from the manifest's folder)",
            ));
        }
        return if is_executable(&p) { Ok(fs::canonicalize(&p).unwrap_or(p)) } else { Err(not_executable(&p)) };
    }
    let local = dir.join(command);
    if local.is_file() {
        // Resolved through symlinks: the sandbox mounts the target's folder.
        return if is_executable(&local) {
            Ok(fs::canonicalize(&local).unwrap_or(local))
        } else {
            Err(not_executable(&local))
        };
    }
    match search_path(command, opts, |_| true) {
        Some(Ok(p)) => return Ok(p),
        Some(Err(p)) => return Err(not_executable(&p)),
        None => {}
    }
    Err(FieldProblem::new(
        "command",
        format!("`{command}` is not in the manifest's folder nor on PATH"),
        "install it, or give its path relative to the manifest's folder (e.g. \"./bin/tool\")",
    ))
}

/// `command` in the PATH folders (lexically normalized) whose result
/// `usable` accepts: the first executable one, else the first file of that
/// name that is not executable (as `Err`), else `None`.
fn search_path(command: &str, opts: &LoadOptions, usable: impl Fn(&Path) -> bool) -> Option<Result<PathBuf, PathBuf>> {
    let path = opts.search_path.clone().or_else(|| std::env::var_os("PATH")).unwrap_or_default();
    let mut found_not_exec = None;
    for d in std::env::split_paths(&path).filter(|d| !d.as_os_str().is_empty()) {
        let p = if d.is_absolute() { normalize(&d).join(command) } else { d.join(command) };
        if !usable(&p) || !p.is_file() {
            continue;
        }
        if is_executable(&p) {
            return Some(Ok(p));
        }
        found_not_exec.get_or_insert(p);
    }
    found_not_exec.map(Err)
}

fn is_executable(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where the program of a workspace's manifest is: inside the workspace
/// (checked through its handle, so no symlink leads out) or in a system
/// folder. Anything else of the host is out of a cloned repository's reach:
/// the sandbox mounts nothing else for its tool.
fn resolve_workspace_command(
    command: &str,
    dir: &Path,
    ws: &Folder,
    opts: &LoadOptions,
) -> Result<PathBuf, FieldProblem> {
    let not_executable = |p: &Path| {
        FieldProblem::new("command", format!("{} is not executable", p.display()), format!("chmod +x {}", p.display()))
    };
    let missing = |p: &Path| {
        FieldProblem::new(
            "command",
            format!("{} does not exist or is not a file", p.display()),
            "correct the path (relative paths start from the manifest's folder)",
        )
    };
    if command.contains('/') {
        let p = normalize(&if Path::new(command).is_absolute() { PathBuf::from(command) } else { dir.join(command) });
        if p.starts_with(ws.root()) {
            return match ws.metadata(&p) {
                Ok(e) if e.kind == Kind::File && e.mode & 0o111 != 0 => Ok(p),
                Ok(e) if e.kind == Kind::File => Err(not_executable(&p)),
                Ok(_) => Err(missing(&p)),
                Err(e) if e.kind() == ErrorKind::NotFound => Err(missing(&p)),
                Err(e) => Err(FieldProblem::new(
                    "command",
                    format!("cannot use {}: {e}", p.display()),
                    "make the program a regular file inside the workspace",
                )),
            };
        }
        if in_system_folder(&p) {
            if !p.is_file() {
                return Err(missing(&p));
            }
            return if is_executable(&p) { Ok(p) } else { Err(not_executable(&p)) };
        }
        return Err(FieldProblem::new(
            "command",
            format!(
                "{} is outside the workspace and the system folders ({}); a workspace's manifest can run only a \
                 program inside the workspace or a system one",
                p.display(),
                SYSTEM_DIRS.join(", ")
            ),
            "put the program in the workspace (e.g. next to the manifest, \"./bin/tool\"), or put the tool in your \
             own hub folder (the config folder's hub/, or --hub DIR)",
        ));
    }
    let local = dir.join(command);
    match ws.metadata(&local) {
        Ok(e) if e.kind == Kind::File => {
            return if e.mode & 0o111 != 0 { Ok(local) } else { Err(not_executable(&local)) };
        }
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => {
            return Err(FieldProblem::new(
                "command",
                format!("cannot use {}: {e}", local.display()),
                "make the program a regular file inside the workspace",
            ));
        }
    }
    // Relative entries and ones in the workspace are not looked at on the host.
    let on_host = |p: &Path| p.is_absolute() && !p.starts_with(ws.root());
    match search_path(command, opts, |p| on_host(p) && in_system_folder(p)) {
        Some(Ok(p)) => return Ok(p),
        Some(Err(p)) => return Err(not_executable(&p)),
        None => {}
    }
    if search_path(command, opts, |p| on_host(p) && !in_system_folder(p)).is_some() {
        return Err(FieldProblem::new(
            "command",
            format!(
                "`{command}` is on PATH only outside the system folders ({}); a workspace's manifest can run only \
                 a program inside the workspace or a system one",
                SYSTEM_DIRS.join(", ")
            ),
            "give the path of a program inside the workspace (e.g. \"./bin/tool\"), or put the tool in your own \
             hub folder (the config folder's hub/, or --hub DIR)",
        ));
    }
    Err(FieldProblem::new(
        "command",
        format!("`{command}` is not in the manifest's folder nor in a system folder on PATH"),
        "install it, or give its path relative to the manifest's folder (e.g. \"./bin/tool\")",
    ))
}

/// Whether `p` (already normalized) lies in one of the sandbox's system folders.
fn in_system_folder(p: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|s| p.starts_with(s))
}

/// A host file's modification and change times and size (`cp -p` keeps
/// the first, not the others).
fn host_stamp(p: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(p).map_or_else(
        |_| "missing".to_string(),
        |m| format!("{}.{}/{}.{}/{}", m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec(), m.size()),
    )
}

/// The same for a file seen through a workspace handle, with its mode: a
/// program there may be swapped for another of the same size and
/// modification time (`cp -p`), never of the same change time.
fn entry_stamp(entry: Option<Entry>) -> String {
    let time = |t: std::time::SystemTime| {
        let since = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        format!("{}.{}", since.as_secs(), since.subsec_nanos())
    };
    entry.map_or_else(
        || "missing".to_string(),
        |e| format!("{}/{}/{}/{:o}", time(e.modified), time(e.changed), e.len, e.mode),
    )
}

/// The hub folders of a session, in the order they are searched (the first
/// tool of a name wins): the user's own first, `<config_dir>/hub`
/// (`$CLIX_HOME/hub` or the XDG config folder), each `--hub DIR`, each
/// folder of `CLIX_HUB_PATH` (`:`-separated), and the workspace's
/// `<workspace>/.clix/hub` last, so a cloned repository cannot replace a
/// tool of the user's. The config folder's and the workspace's may be
/// absent; folders the user names must exist.
pub fn hub_sources(
    workspace: Option<&Path>,
    config_dir: &Path,
    hub_flags: &[PathBuf],
    hub_path_env: Option<&std::ffi::OsStr>,
) -> Vec<HubSource> {
    let mut sources = vec![HubSource::default_dir(config_dir.join("hub"))];
    sources.extend(hub_flags.iter().map(HubSource::explicit));
    if let Some(var) = hub_path_env {
        sources.extend(std::env::split_paths(var).filter(|p| !p.as_os_str().is_empty()).map(HubSource::explicit));
    }
    if let Some(ws) = workspace {
        sources.push(HubSource::workspace(ws.join(".clix").join("hub")));
    }
    sources
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_in_search_order() {
        let got = hub_sources(
            Some(Path::new("/ws")),
            Path::new("/home/clix"),
            &[PathBuf::from("/a"), PathBuf::from("b")],
            Some(std::ffi::OsStr::new("/c::/d")),
        );
        let want = vec![
            HubSource::default_dir("/home/clix/hub"),
            HubSource::explicit("/a"),
            HubSource::explicit("b"),
            HubSource::explicit("/c"),
            HubSource::explicit("/d"),
            HubSource::workspace("/ws/.clix/hub"),
        ];
        assert_eq!(got, want);
        assert_eq!(hub_sources(None, Path::new("/h"), &[], None), vec![HubSource::default_dir("/h/hub")]);
    }
}
