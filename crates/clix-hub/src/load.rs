//! Finding manifest files in hub folders, parsing them (JSON, TOML, YAML),
//! resolving each tool's command, and keeping tool names unique.
//!
//! Layout of a hub folder: every `*.json`, `*.toml`, `*.yaml` or `*.yml`
//! file directly in it is one tool; a subfolder may hold one tool as
//! `manifest.{json,toml,yaml,yml}` next to its executable and data files
//! (other files in a subfolder are not read). Hidden entries are skipped.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::manifest::{self, Manifest};
use crate::problem::{FieldProblem, Problem};

/// Manifests larger than this are refused (a manifest is a few KiB).
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;
const EXTENSIONS: &[&str] = &["json", "toml", "yaml", "yml"];

/// A tool that loaded: its manifest and where its program is.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub manifest: Manifest,
    /// The manifest file.
    pub manifest_path: PathBuf,
    /// The folder of the manifest: relative `command` and `cwd` are resolved against it.
    pub dir: PathBuf,
    /// The absolute path of the executable to run.
    pub program: PathBuf,
    /// From one of the user's own hub folders (not a workspace's
    /// `.clix/hub`, which comes with whatever repository was cloned).
    pub trusted: bool,
}

/// One folder to scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSource {
    pub path: PathBuf,
    /// A folder named by the user (`--hub DIR`) must exist; a default one may be absent.
    pub must_exist: bool,
    /// The user's own folder; a workspace's `.clix/hub` is not: its tools
    /// get no `[hub.env]` values and no network.
    pub trusted: bool,
}

impl HubSource {
    pub fn explicit(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), must_exist: true, trusted: true }
    }

    pub fn default_dir(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), must_exist: false, trusted: true }
    }

    /// A workspace's own hub folder.
    pub fn workspace(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), must_exist: false, trusted: false }
    }
}

#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The PATH searched for a bare `command` name; `None` uses this process's PATH.
    pub search_path: Option<OsString>,
}

/// The result of loading a hub: the tools that are available and every problem.
#[derive(Debug, Clone, Default)]
pub struct Hub {
    pub tools: Vec<Tool>,
    pub problems: Vec<Problem>,
}

impl Hub {
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.manifest.name == name)
    }
}

/// Load every manifest of the sources, in order. When two manifests declare
/// the same name, the first one wins and the later one is a problem.
pub fn load_hub(sources: &[HubSource], opts: &LoadOptions) -> Hub {
    let mut hub = Hub::default();
    for source in sources {
        let files = match manifest_files(&source.path) {
            Ok(files) => files,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !source.must_exist => continue,
            Err(e) => {
                let fix = if e.kind() == std::io::ErrorKind::NotFound {
                    "create the folder or correct the --hub path"
                } else {
                    "check that the path is a readable folder"
                };
                hub.problems.push(Problem {
                    file: source.path.clone(),
                    field: String::new(),
                    message: format!("cannot read hub folder: {e}"),
                    fix: fix.into(),
                });
                continue;
            }
        };
        for file in files {
            match load_file(&file, opts) {
                Ok(mut tool) => {
                    tool.trusted = source.trusted;
                    if let Some(first) = hub.get(&tool.manifest.name) {
                        hub.problems.push(Problem {
                            file: file.clone(),
                            field: "name".into(),
                            message: format!(
                                "tool `{}` is already defined by {}",
                                tool.manifest.name,
                                first.manifest_path.display()
                            ),
                            fix: "rename one of the two tools or remove one manifest".into(),
                        });
                    } else {
                        hub.tools.push(tool);
                    }
                }
                Err(problems) => hub.problems.extend(problems),
            }
        }
    }
    hub
}

/// The manifest files of one hub folder, sorted by path.
fn manifest_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            for ext in EXTENSIONS {
                let m = path.join(format!("manifest.{ext}"));
                if m.is_file() {
                    out.push(m);
                }
            }
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e)) {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Load and check one manifest file, resolving its command.
pub fn load_file(path: &Path, opts: &LoadOptions) -> Result<Tool, Vec<Problem>> {
    let file_problem = |message: String, fix: &str| vec![FieldProblem::new("", message, fix).in_file(path)];
    let size =
        fs::metadata(path).map_err(|e| file_problem(format!("cannot read: {e}"), "check the file exists"))?.len();
    if size > MAX_MANIFEST_BYTES {
        return Err(file_problem(
            format!("the manifest is {size} bytes, more than {MAX_MANIFEST_BYTES}"),
            "keep a manifest small: move data out of it",
        ));
    }
    let bytes =
        fs::read(path).map_err(|e| file_problem(format!("cannot read: {e}"), "check the file's permissions"))?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(file_problem("the manifest is not UTF-8 text".into(), "save it as UTF-8"));
    };
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let doc = parse_document(&text, ext).map_err(|message| {
        let fix = format!("correct the {} syntax", ext.to_uppercase());
        file_problem(message, &fix)
    })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let dir = fs::canonicalize(&dir).unwrap_or(dir);
    let manifest = match manifest::from_value(&doc) {
        Ok(m) => m,
        Err(mut problems) => {
            // Report a bad command too, so one `hub check` shows every problem of the file.
            if let Some(command) = doc.get("command").and_then(Value::as_str).filter(|c| !c.trim().is_empty())
                && let Err(p) = resolve_command(command, &dir, opts)
            {
                problems.push(p);
            }
            return Err(problems.into_iter().map(|p| p.in_file(path)).collect());
        }
    };
    let program = resolve_command(&manifest.command, &dir, opts).map_err(|p| vec![p.in_file(path)])?;
    Ok(Tool { manifest, manifest_path: path.to_path_buf(), dir, program, trusted: true })
}

/// Parse a manifest's text by its file extension into a JSON value.
pub fn parse_document(text: &str, ext: &str) -> Result<Value, String> {
    match ext {
        "json" => serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}")),
        "toml" => {
            let v: toml::Value = toml::from_str(text).map_err(|e| format!("invalid TOML: {}", e.to_string().trim()))?;
            serde_json::to_value(v).map_err(|e| format!("invalid TOML: {e}"))
        }
        "yaml" | "yml" => serde_norway::from_str(text).map_err(|e| format!("invalid YAML: {e}")),
        other => Err(format!("unknown manifest format `.{other}`")),
    }
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
    let path = opts.search_path.clone().or_else(|| std::env::var_os("PATH")).unwrap_or_default();
    let mut found_not_exec = None;
    for d in std::env::split_paths(&path) {
        if d.as_os_str().is_empty() {
            continue;
        }
        let p = d.join(command);
        if p.is_file() {
            if is_executable(&p) {
                return Ok(p);
            }
            found_not_exec.get_or_insert(p);
        }
    }
    if let Some(p) = found_not_exec {
        return Err(not_executable(&p));
    }
    Err(FieldProblem::new(
        "command",
        format!("`{command}` is not in the manifest's folder nor on PATH"),
        "install it, or give its path relative to the manifest's folder (e.g. \"./bin/tool\")",
    ))
}

fn is_executable(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The hub folders of a session, in the order they are searched (the first
/// tool of a name wins): `<workspace>/.clix/hub`, `<config_dir>/hub`
/// (`$CLIX_HOME/hub` or the XDG config folder), each `--hub DIR`, then each
/// folder of `CLIX_HUB_PATH` (`:`-separated). The first two may be absent;
/// folders the user names must exist.
pub fn hub_sources(
    workspace: Option<&Path>,
    config_dir: &Path,
    hub_flags: &[PathBuf],
    hub_path_env: Option<&std::ffi::OsStr>,
) -> Vec<HubSource> {
    let mut sources = Vec::new();
    if let Some(ws) = workspace {
        sources.push(HubSource::workspace(ws.join(".clix").join("hub")));
    }
    sources.push(HubSource::default_dir(config_dir.join("hub")));
    sources.extend(hub_flags.iter().map(HubSource::explicit));
    if let Some(var) = hub_path_env {
        sources.extend(std::env::split_paths(var).filter(|p| !p.as_os_str().is_empty()).map(HubSource::explicit));
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
            HubSource::workspace("/ws/.clix/hub"),
            HubSource::default_dir("/home/clix/hub"),
            HubSource::explicit("/a"),
            HubSource::explicit("b"),
            HubSource::explicit("/c"),
            HubSource::explicit("/d"),
        ];
        assert_eq!(got, want);
        assert_eq!(hub_sources(None, Path::new("/h"), &[], None), vec![HubSource::default_dir("/h/hub")]);
    }
}
