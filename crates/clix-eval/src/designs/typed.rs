//! The `typed` design: file tools with JSON arguments, plus `shell`.
//!
//! A typical typed tool set: `read_file`, `write_file`, `edit_file`
//! (replace a unique string), `list_dir`, `search_files` (a regex over the
//! files under a folder) and `shell` (the `bash` design's tool under another
//! name). The file tools touch the workspace only through its capability
//! handle, so a path from the model can never leave it. Results are plain
//! text cut at 30,000 characters like `bash`'s; an error is a failed call
//! (exit 1) whose text says what went wrong.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clix_workspace::{Folder, Kind, OWN_READ_LIMIT, Workspace};
use regex::Regex;
use serde_json::{Value, json};

use super::bash::{self, BashTools, OUTPUT_LIMIT_CHARS};
use super::{ToolSpec, optional_string_arg, string_arg};
use crate::trace::TracedCall;

/// The tools of the typed set.
pub(super) const TOOL_NAMES: &[&str] = &["read_file", "write_file", "edit_file", "list_dir", "search_files", "shell"];

/// Files `search_files` reads before it stops, so one call stays bounded.
const SEARCH_FILE_LIMIT: usize = 10_000;
/// Folders below the start that `search_files` descends.
const SEARCH_DEPTH: usize = 24;
/// Folders `search_files` skips, as grep-like tools do: version control and clix's own.
const SEARCH_SKIPS: &[&str] = &[".git", ".clix"];
/// Bytes looked at to call a file binary (a NUL among them).
const BINARY_SNIFF: usize = 8_000;

/// The typed tools of one attempt.
pub struct TypedTools {
    workspace: Workspace,
    shell: BashTools,
}

impl TypedTools {
    /// File tools over `workspace`, and `shell` through `shell`.
    pub fn new(workspace: Workspace, shell: BashTools) -> Self {
        TypedTools { workspace, shell }
    }

    /// One call of the tool `tool`, one of [`TOOL_NAMES`].
    pub async fn call(&self, tool: &str, arguments: &Value) -> TracedCall {
        if tool == "shell" {
            return self.shell.call("shell", arguments).await;
        }
        let started = Instant::now();
        let folder: &Folder = &self.workspace;
        let result = match tool {
            "read_file" => read_file(folder, arguments),
            "write_file" => write_file(folder, arguments),
            "edit_file" => edit_file(folder, arguments),
            "list_dir" => list_dir(folder, arguments),
            "search_files" => search_files(folder, arguments),
            _ => Err(format!("unknown tool `{tool}`; the tools are: {}", TOOL_NAMES.join(", "))),
        };
        answer(tool, arguments, result, started)
    }
}

/// A file tool's call as the model gets it: the output cut as the shell's
/// is, or `error: …` (exit 1). `mcp-direct`'s `read_file` is answered so too.
pub(super) fn answer(tool: &str, arguments: &Value, result: Result<String, String>, started: Instant) -> TracedCall {
    let (text, stdout, stderr, exit_code) = match result {
        Ok(full) => (bash::cut(&full), full, String::new(), 0),
        Err(message) => {
            let message = format!("error: {message}");
            (message.clone(), String::new(), message, 1)
        }
    };
    TracedCall {
        tool: tool.to_string(),
        arguments: arguments.clone(),
        text,
        images: Vec::new(),
        stdout,
        stderr,
        exit_code,
        duration: started.elapsed(),
        stage_failed: false,
    }
}

fn count_arg(arguments: &Value, name: &str) -> Result<Option<usize>, String> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => {
            Ok(n.as_u64().map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
        }
        Some(other) => Err(format!("argument `{name}` must be a whole number from 1, not {other}")),
    }
}

/// The text of the file at `path`, or why it is not text.
fn text_of(folder: &Folder, path: &str) -> Result<String, String> {
    let bytes = folder.read(Path::new(path), OWN_READ_LIMIT).map_err(|e| e.to_string())?;
    if bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0) {
        return Err(format!("{path} is a binary file ({} bytes); read_file shows text only", bytes.len()));
    }
    String::from_utf8(bytes).map_err(|_| format!("{path} is not UTF-8 text; read_file shows text only"))
}

pub(super) fn read_file(folder: &Folder, arguments: &Value) -> Result<String, String> {
    let path = string_arg(arguments, "path")?;
    let offset = count_arg(arguments, "offset")?.unwrap_or(1);
    let limit = count_arg(arguments, "limit")?;
    let text = text_of(folder, path)?;
    if offset == 1 && limit.is_none() {
        return Ok(text);
    }
    let lines = text.split_inclusive('\n').skip(offset - 1);
    Ok(match limit {
        Some(n) => lines.take(n).collect(),
        None => lines.collect(),
    })
}

fn write_file(folder: &Folder, arguments: &Value) -> Result<String, String> {
    let path = string_arg(arguments, "path")?;
    let content = string_arg(arguments, "content")?;
    if let Some(parent) = Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
        folder.create_dir(parent, true).map_err(|e| e.to_string())?;
    }
    folder.write(Path::new(path), content.as_bytes()).map_err(|e| e.to_string())?;
    Ok(format!("wrote {} bytes to {path}", content.len()))
}

fn edit_file(folder: &Folder, arguments: &Value) -> Result<String, String> {
    let path = string_arg(arguments, "path")?;
    let old = string_arg(arguments, "old_string")?;
    let new = string_arg(arguments, "new_string")?;
    if old.is_empty() {
        return Err("old_string must not be empty; to write a whole file use write_file".into());
    }
    let text = text_of(folder, path)?;
    match text.matches(old).count() {
        0 => Err(format!("old_string not found in {path}; read the file and copy the text exactly")),
        1 => {
            folder.write(Path::new(path), text.replacen(old, new, 1).as_bytes()).map_err(|e| e.to_string())?;
            Ok(format!("edited {path}"))
        }
        n => {
            Err(format!("old_string occurs {n} times in {path}; include more of the text around it to make it unique"))
        }
    }
}

fn list_dir(folder: &Folder, arguments: &Value) -> Result<String, String> {
    let path = optional_string_arg(arguments, "path")?.unwrap_or(".");
    let entries = folder.read_dir(Path::new(path)).map_err(|e| e.to_string())?;
    if entries.is_empty() {
        return Ok("(empty)\n".into());
    }
    Ok(entries
        .iter()
        .map(|(name, entry)| match entry.kind {
            Kind::Dir => format!("{name}/\n"),
            _ => format!("{name}\n"),
        })
        .collect())
}

fn search_files(folder: &Folder, arguments: &Value) -> Result<String, String> {
    let pattern = string_arg(arguments, "pattern")?;
    let regex = Regex::new(pattern).map_err(|e| format!("invalid regex `{pattern}`: {e}"))?;
    let start = optional_string_arg(arguments, "path")?.unwrap_or(".");
    let mut search = Search { folder, regex, out: String::new(), files: 0 };
    match folder.metadata(Path::new(start)).map_err(|e| e.to_string())?.kind {
        Kind::Dir => search.folder(Path::new(start), 0),
        _ => search.file(Path::new(start)),
    }
    if search.out.is_empty() {
        return Ok(format!("no matches for `{pattern}` under {start}\n"));
    }
    Ok(search.out)
}

/// One `search_files` walk: matching lines as `path:line:text`.
struct Search<'a> {
    folder: &'a Folder,
    regex: Regex,
    out: String,
    files: usize,
}

impl Search<'_> {
    fn folder(&mut self, dir: &Path, depth: usize) {
        let Ok(entries) = self.folder.read_dir(dir) else { return };
        for (name, entry) in entries {
            if self.files >= SEARCH_FILE_LIMIT || self.out.len() > OUTPUT_LIMIT_CHARS * 4 {
                return;
            }
            let path = if dir == Path::new(".") { PathBuf::from(&name) } else { dir.join(&name) };
            match entry.kind {
                Kind::Dir if depth < SEARCH_DEPTH && !SEARCH_SKIPS.contains(&name.as_str()) => {
                    self.folder(&path, depth + 1);
                }
                Kind::File => self.file(&path),
                // Symlinks are not followed; devices and FIFOs are not read.
                _ => {}
            }
        }
    }

    fn file(&mut self, path: &Path) {
        self.files += 1;
        let Ok(bytes) = self.folder.read(path, OWN_READ_LIMIT) else { return };
        if bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0) {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        for (index, line) in text.lines().enumerate() {
            if self.regex.is_match(line) {
                self.out.push_str(&format!("{}:{}:{line}\n", path.display(), index + 1));
            }
        }
    }
}

/// The definitions of the typed set.
pub(super) fn specs() -> Vec<ToolSpec> {
    let tool = |name: &str, description: &str, properties: Value, required: &[&str]| ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false
        }),
    };
    let path = json!({"type": "string", "description": "Path relative to the workspace folder."});
    vec![
        tool(
            "read_file",
            "Read a text file. Optionally only `limit` lines from line `offset` (from 1). Output over 30000 \
             characters is cut.",
            json!({"path": path, "offset": {"type": "integer", "minimum": 1}, "limit": {"type": "integer", "minimum": 1}}),
            &["path"],
        ),
        tool(
            "write_file",
            "Create or overwrite a file with the given content; missing parent folders are created.",
            json!({"path": path, "content": {"type": "string"}}),
            &["path", "content"],
        ),
        tool(
            "edit_file",
            "Replace old_string with new_string in a file. old_string must occur exactly once; include \
             surrounding text to make it unique.",
            json!({"path": path, "old_string": {"type": "string"}, "new_string": {"type": "string"}}),
            &["path", "old_string", "new_string"],
        ),
        tool(
            "list_dir",
            "List a folder's entries, one per line; folders end with /.",
            json!({"path": {"type": "string", "description": "Folder relative to the workspace (default: the workspace)."}}),
            &[],
        ),
        tool(
            "search_files",
            "Search text files under a folder for lines matching a regular expression; prints path:line:text.",
            json!({
                "pattern": {"type": "string", "description": "A regular expression (Rust regex syntax)."},
                "path": {"type": "string", "description": "Folder or file to search (default: the workspace)."}
            }),
            &["pattern"],
        ),
        bash::spec("shell"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        _dir: tempfile::TempDir,
        folder: Folder,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::open(dir.path()).unwrap();
        folder.create_dir(Path::new("src/deep"), true).unwrap();
        folder.create_dir(Path::new(".git"), true).unwrap();
        folder.write(Path::new("src/a.py"), b"import os\nTIMEOUT = 30\nprint(TIMEOUT)\n").unwrap();
        folder.write(Path::new("src/deep/b.py"), b"TIMEOUT = 30\n").unwrap();
        folder.write(Path::new(".git/HEAD"), b"TIMEOUT = 1\n").unwrap();
        folder.write(Path::new("blob.bin"), b"TIMEOUT\0\x01").unwrap();
        Fixture { _dir: dir, folder }
    }

    #[test]
    fn read_file_whole_or_a_range() {
        let f = fixture();
        assert_eq!(
            read_file(&f.folder, &json!({"path": "src/a.py"})).unwrap(),
            "import os\nTIMEOUT = 30\nprint(TIMEOUT)\n"
        );
        assert_eq!(
            read_file(&f.folder, &json!({"path": "src/a.py", "offset": 2, "limit": 1})).unwrap(),
            "TIMEOUT = 30\n"
        );
        assert_eq!(read_file(&f.folder, &json!({"path": "src/a.py", "offset": 3})).unwrap(), "print(TIMEOUT)\n");
        let err = read_file(&f.folder, &json!({"path": "blob.bin"})).unwrap_err();
        assert!(err.contains("binary file (9 bytes)"), "{err}");
        assert!(read_file(&f.folder, &json!({"path": "src/a.py", "offset": 0})).unwrap_err().contains("from 1"));
        assert!(read_file(&f.folder, &json!({"path": "../../etc/passwd"})).unwrap_err().contains("outside"));
        assert!(read_file(&f.folder, &json!({})).unwrap_err().contains("missing argument `path`"));
    }

    #[test]
    fn write_file_creates_parents() {
        let f = fixture();
        assert_eq!(
            write_file(&f.folder, &json!({"path": "out/new/x.txt", "content": "hé\n"})).unwrap(),
            "wrote 4 bytes to out/new/x.txt"
        );
        assert_eq!(f.folder.read(Path::new("out/new/x.txt"), 100).unwrap(), "hé\n".as_bytes());
        assert!(write_file(&f.folder, &json!({"path": "/etc/x", "content": ""})).unwrap_err().contains("outside"));
    }

    #[test]
    fn edit_file_replaces_only_a_unique_string() {
        let f = fixture();
        let edit = |old: &str, new: &str| {
            edit_file(&f.folder, &json!({"path": "src/a.py", "old_string": old, "new_string": new}))
        };
        assert!(edit("TIMEOUT", "X").unwrap_err().contains("occurs 2 times"));
        assert!(edit("TIMEOUT = 99", "X").unwrap_err().contains("not found"));
        assert!(edit("", "X").unwrap_err().contains("must not be empty"));
        assert_eq!(edit("TIMEOUT = 30", "TIMEOUT = 60").unwrap(), "edited src/a.py");
        assert_eq!(f.folder.read(Path::new("src/a.py"), 100).unwrap(), b"import os\nTIMEOUT = 60\nprint(TIMEOUT)\n");
    }

    #[test]
    fn list_dir_marks_folders() {
        let f = fixture();
        assert_eq!(list_dir(&f.folder, &json!({})).unwrap(), ".git/\nblob.bin\nsrc/\n");
        assert_eq!(list_dir(&f.folder, &json!({"path": "src"})).unwrap(), "a.py\ndeep/\n");
        f.folder.create_dir(Path::new("empty"), false).unwrap();
        assert_eq!(list_dir(&f.folder, &json!({"path": "empty"})).unwrap(), "(empty)\n");
        assert!(list_dir(&f.folder, &json!({"path": "nope"})).is_err());
    }

    #[test]
    fn search_files_walks_text_files_and_skips_git_and_binaries() {
        let f = fixture();
        assert_eq!(
            search_files(&f.folder, &json!({"pattern": r"TIMEOUT = \d+"})).unwrap(),
            "src/a.py:2:TIMEOUT = 30\nsrc/deep/b.py:1:TIMEOUT = 30\n"
        );
        assert_eq!(
            search_files(&f.folder, &json!({"pattern": "print", "path": "src/a.py"})).unwrap(),
            "src/a.py:3:print(TIMEOUT)\n"
        );
        assert_eq!(
            search_files(&f.folder, &json!({"pattern": "zzz", "path": "src"})).unwrap(),
            "no matches for `zzz` under src\n"
        );
        assert!(search_files(&f.folder, &json!({"pattern": "("})).unwrap_err().contains("invalid regex"));
    }

    #[test]
    fn every_tool_has_a_definition() {
        let names: Vec<String> = specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, TOOL_NAMES);
    }
}
