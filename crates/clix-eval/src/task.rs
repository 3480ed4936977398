//! The task format: one JSON object a line, a suite is a `.jsonl` file or a
//! folder of them.
//!
//! bashkit-eval's lines read unchanged (`id`, `category`, `description`,
//! `system`, `prompt`, `files`, `expectations`); ours add `solution`,
//! `solution_for`, `setup`, `tags`, `timeout_secs`, `max_steps`, `hub` and
//! `mcp`.
//! Every field is checked when the suite loads, so a bad line stops the
//! suite before anything runs, with an error naming file, line and field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clix_common::names::UnknownField;
use clix_mcp_client::ServerEntry;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::checks::Check;
use crate::designs::Design;

/// The tag of a task only the `run` design can do (it needs clix's own
/// commands: `see`, `memory`, hub tools); other designs skip it.
pub const RUN_ONLY: &str = "run-only";

/// The fields a task line may have.
const FIELDS: &[&str] = &[
    "id",
    "category",
    "description",
    "system",
    "prompt",
    "files",
    "expectations",
    "solution",
    "solution_for",
    "setup",
    "tags",
    "timeout_secs",
    "max_steps",
    "hub",
    "mcp",
];

/// One task.
#[derive(Debug, Clone)]
pub struct Task {
    /// Unique within a suite.
    pub id: String,
    /// Results are summarised per category.
    pub category: String,
    /// One line for people.
    pub description: String,
    /// A system prompt of the task's own, if any.
    pub system: Option<String>,
    /// What the model is asked.
    pub prompt: String,
    /// Files to create before the attempt: path → text. Absolute paths are
    /// mapped into the workspace (see `paths`).
    pub files: BTreeMap<String, String>,
    /// The checks, each with its weight.
    pub expectations: Vec<Expectation>,
    /// Reference steps for every design: command lines and an optional answer.
    pub solution: Option<Vec<Step>>,
    /// Reference steps of one design, replacing `solution` there.
    pub solution_for: BTreeMap<Design, Vec<Step>>,
    /// Command lines run before the attempt (by clix's shell, not counted).
    pub setup: Vec<String>,
    /// Free labels; [`RUN_ONLY`] has a meaning.
    pub tags: Vec<String>,
    /// Wall time of the whole attempt, in seconds.
    pub timeout_secs: Option<u64>,
    /// Most model turns of an attempt.
    pub max_steps: Option<u32>,
    /// A hub folder the `run` design loads (resolved against the suite file's folder).
    pub hub: Option<PathBuf>,
    /// An MCP server (`[[mcp.server]]`'s fields, `./` arguments beside the
    /// suite file): a command under `run`, typed tools under `mcp-direct`;
    /// `bash` and `typed` cannot reach it and skip the task.
    pub mcp: Option<ServerEntry>,
    /// Where the task was read.
    pub source: Source,
    /// A digest (SHA-256, hex) of the task's line as JSON, whitespace
    /// aside, and of its hub folder's files: the same definition gives the
    /// same digest on every machine, so shards of one run can prove they
    /// read the same suite and the same tools.
    pub digest: String,
}

/// A check and its weight.
#[derive(Debug, Clone)]
pub struct Expectation {
    /// The parsed check.
    pub check: Check,
    /// Its weight in the score (1 unless the line says otherwise).
    pub weight: f64,
}

/// One step of a reference solution.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Step {
    /// A command line: the design's shell tool runs it (`run`, `bash`, or
    /// the typed set's `shell`).
    Line(String),
    /// A call of one of the design's tools by name, with JSON arguments, as
    /// a model makes it.
    Call {
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
    },
    /// The model's final answer, `{"answer": "…"}`: what a model says after
    /// it has looked (at an image, say) rather than what a command printed.
    /// Without one, a solution's answer is its last step's stdout.
    Answer {
        /// The answer text.
        answer: String,
    },
}

/// The file and line a task came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// The suite file.
    pub file: PathBuf,
    /// The line, from 1.
    pub line: usize,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

impl Task {
    /// Whether only the `run` design can do this task.
    pub fn run_only(&self) -> bool {
        self.tags.iter().any(|t| t == RUN_ONLY)
    }

    /// Whether `design` runs this task: every design does, but a
    /// [`RUN_ONLY`] task runs in `run` alone, a task with an MCP server in
    /// `run` and `mcp-direct`, and `mcp-direct` only tasks with a server.
    pub fn runs_in(&self, design: Design) -> bool {
        self.skip_reason(design).is_none()
    }

    /// Why `design` does not run this task, for the results' `skipped`.
    pub fn skip_reason(&self, design: Design) -> Option<String> {
        match design {
            Design::Run => None,
            _ if self.run_only() => Some(format!("{RUN_ONLY}: it needs clix's own commands")),
            Design::McpDirect if self.mcp.is_none() => {
                Some("no MCP server: mcp-direct offers a task's MCP server's tools".into())
            }
            Design::Bash | Design::Typed if self.mcp.is_some() => {
                Some("it needs its MCP server, which only run and mcp-direct reach".into())
            }
            _ => None,
        }
    }

    /// The reference steps for `design`: its own, else `solution`'s lines.
    pub fn solution(&self, design: Design) -> Option<Vec<Step>> {
        if let Some(steps) = self.solution_for.get(&design) {
            return Some(steps.clone());
        }
        self.solution.clone()
    }
}

/// A task line that cannot be used; nothing of its suite runs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}:{line}: {}{message}", file.display(), field.as_deref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct TaskError {
    /// The suite file.
    pub file: PathBuf,
    /// The line, from 1.
    pub line: usize,
    /// The field at fault (`expectations[2].check`), when one is.
    pub field: Option<String>,
    /// What is wrong and what to write instead.
    pub message: String,
}

/// Why a suite did not load.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The path could not be read.
    #[error("{}: {error}; pass a .jsonl file or a folder of them", path.display())]
    Read {
        /// The path given.
        path: PathBuf,
        /// The reason.
        error: std::io::Error,
    },
    /// A line is malformed.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// Nothing to run.
    #[error("{}: no tasks; a suite is a .jsonl file with one task per line, or a folder of them", path.display())]
    Empty {
        /// The path given.
        path: PathBuf,
    },
}

/// Loads every task of the suites at `paths` (each a `.jsonl` file or a
/// folder whose `*.jsonl` files are read in name order). Ids must be unique
/// across them all.
pub fn load_suites(paths: &[PathBuf]) -> Result<Vec<Task>, SuiteError> {
    let mut tasks: Vec<Task> = Vec::new();
    for path in paths {
        let files = suite_files(path)?;
        let before = tasks.len();
        for file in files {
            let text =
                std::fs::read_to_string(&file).map_err(|error| SuiteError::Read { path: file.clone(), error })?;
            for task in parse_suite(&file, &text)? {
                if let Some(first) = tasks.iter().find(|t| t.id == task.id) {
                    return Err(TaskError {
                        file: task.source.file.clone(),
                        line: task.source.line,
                        field: Some("id".into()),
                        message: format!("duplicate id `{}`, first at {}; ids must be unique", task.id, first.source),
                    }
                    .into());
                }
                tasks.push(task);
            }
        }
        if tasks.len() == before {
            return Err(SuiteError::Empty { path: path.clone() });
        }
    }
    Ok(tasks)
}

fn suite_files(path: &Path) -> Result<Vec<PathBuf>, SuiteError> {
    let read = |error| SuiteError::Read { path: path.to_path_buf(), error };
    if !path.is_dir() {
        // A missing file is reported by the read.
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(read)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// The tasks of one suite file's text; blank lines are skipped. `file` names
/// the errors and anchors a relative `hub` folder.
pub fn parse_suite(file: &Path, text: &str) -> Result<Vec<Task>, TaskError> {
    let mut tasks = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        tasks.push(parse_task(file, index + 1, line)?);
    }
    Ok(tasks)
}

/// One task line.
pub fn parse_task(file: &Path, line: usize, text: &str) -> Result<Task, TaskError> {
    let at = Line { file, line };
    let value: Value = serde_json::from_str(text).map_err(|e| at.error(None, format!("not valid JSON: {e}")))?;
    let Value::Object(object) = value else {
        return Err(at.error(None, "a task is a JSON object {\"id\": …, \"prompt\": …, \"expectations\": […]}".into()));
    };
    if let Some(unknown) = UnknownField::among(object.keys().map(String::as_str), FIELDS).into_iter().next() {
        return Err(at.error(Some(&unknown.field), format!("unknown field; {}", unknown.hint())));
    }
    let fields = Fields { at, object: &object };
    let id = fields.string("id")?;
    if !id.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) {
        return Err(at.error(Some("id"), format!("`{id}`: use letters, digits, _ - . only (it names files)")));
    }
    let hub = match fields.optional_string("hub")? {
        Some(dir) => {
            let resolved = file.parent().unwrap_or(Path::new(".")).join(&dir);
            if !resolved.is_dir() {
                return Err(at.error(Some("hub"), format!("{} is not a folder (relative to the suite file)", dir)));
            }
            Some(resolved)
        }
        None => None,
    };
    let suite_dir = file.parent().unwrap_or(Path::new("."));
    let mcp = match object.get("mcp") {
        None | Some(Value::Null) => None,
        Some(value) => Some(crate::mcp_server::parse(value, suite_dir).map_err(|e| at.error(Some("mcp"), e))?),
    };
    let task = Task {
        category: fields.string("category")?,
        description: fields.string("description")?,
        system: fields.optional_string("system")?,
        prompt: fields.string("prompt")?,
        files: fields.string_map("files")?,
        expectations: fields.expectations()?,
        solution: fields.solution()?,
        solution_for: fields.solution_for()?,
        setup: fields.string_list("setup")?,
        tags: fields.string_list("tags")?,
        timeout_secs: fields.positive("timeout_secs")?,
        max_steps: fields.positive("max_steps")?.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        hub,
        mcp,
        source: Source { file: file.to_path_buf(), line },
        id,
        digest: String::new(),
    };
    // Writing a map of JSON values cannot fail. A hub folder's files are
    // part of the definition: its tools shape every attempt.
    let line_digest = clix_common::sha256_hex(&serde_json::to_vec(&object).unwrap_or_default());
    let digest = match &task.hub {
        Some(dir) => {
            let files = crate::hub_folder::digest(dir)
                .map_err(|e| at.error(Some("hub"), format!("cannot read {}: {e}", dir.display())))?;
            clix_common::sha256_hex(format!("{line_digest}\0hub\0{files}").as_bytes())
        }
        None => line_digest,
    };
    // So are an MCP server's own files (its script).
    let digest = match &task.mcp {
        Some(entry) => {
            let mut bytes = digest.clone().into_bytes();
            for path in crate::mcp_server::files(entry) {
                let content = std::fs::read(&path)
                    .map_err(|e| at.error(Some("mcp"), format!("cannot read {}: {e}", path.display())))?;
                bytes.extend(b"\0mcp\0");
                bytes.extend(content);
            }
            clix_common::sha256_hex(&bytes)
        }
        None => digest,
    };
    let task = Task { digest, ..task };
    Ok(task)
}

#[derive(Clone, Copy)]
struct Line<'a> {
    file: &'a Path,
    line: usize,
}

impl Line<'_> {
    fn error(&self, field: Option<&str>, message: String) -> TaskError {
        TaskError { file: self.file.to_path_buf(), line: self.line, field: field.map(String::from), message }
    }
}

/// Typed reads of a task object's fields, each error naming its field.
struct Fields<'a> {
    at: Line<'a>,
    object: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn string(&self, name: &str) -> Result<String, TaskError> {
        match self.object.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(Value::String(_)) => Err(self.at.error(Some(name), "must not be empty".into())),
            Some(other) => Err(self.at.error(Some(name), format!("must be a string, not {}", type_name(other)))),
            None => Err(self.at.error(Some(name), "missing; every task needs it".into())),
        }
    }

    fn optional_string(&self, name: &str) -> Result<Option<String>, TaskError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.string(name).map(Some),
        }
    }

    fn string_list(&self, name: &str) -> Result<Vec<String>, TaskError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(self
                        .at
                        .error(Some(&format!("{name}[{i}]")), format!("must be a string, not {}", type_name(other)))),
                })
                .collect(),
            Some(other) => {
                Err(self.at.error(Some(name), format!("must be a list of strings, not {}", type_name(other))))
            }
        }
    }

    fn string_map(&self, name: &str) -> Result<BTreeMap<String, String>, TaskError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(key, value)| match value {
                    Value::String(s) if !key.is_empty() => Ok((key.clone(), s.clone())),
                    Value::String(_) => Err(self.at.error(Some(name), "a file path must not be empty".into())),
                    other => Err(self.at.error(
                        Some(&format!("{name}.{key}")),
                        format!("a file's content must be a string, not {}", type_name(other)),
                    )),
                })
                .collect(),
            Some(other) => {
                Err(self.at.error(Some(name), format!("must be an object of path → content, not {}", type_name(other))))
            }
        }
    }

    fn positive(&self, name: &str) -> Result<Option<u64>, TaskError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => Ok(n.as_u64()),
            Some(other) => Err(self.at.error(Some(name), format!("must be a whole number above 0, not {other}"))),
        }
    }

    fn expectations(&self) -> Result<Vec<Expectation>, TaskError> {
        let items = match self.object.get("expectations") {
            Some(Value::Array(items)) if !items.is_empty() => items,
            Some(Value::Array(_)) => {
                return Err(self.at.error(Some("expectations"), "needs at least one check".into()));
            }
            Some(other) => {
                return Err(self.at.error(
                    Some("expectations"),
                    format!("must be a list of {{\"check\": …}} objects, not {}", type_name(other)),
                ));
            }
            None => return Err(self.at.error(Some("expectations"), "missing; every task needs its checks".into())),
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let field = |f: &str| format!("expectations[{i}]{f}");
                let Value::Object(object) = item else {
                    return Err(self
                        .at
                        .error(Some(&field("")), "must be an object {\"check\": \"kind:value\"}".into()));
                };
                let keys = object.keys().map(String::as_str);
                if let Some(unknown) = UnknownField::among(keys, &["check", "weight"]).into_iter().next() {
                    let message = format!("unknown field; {}", unknown.hint());
                    return Err(self.at.error(Some(&field(&format!(".{}", unknown.field))), message));
                }
                let spec = match object.get("check") {
                    Some(Value::String(s)) => s,
                    _ => return Err(self.at.error(Some(&field(".check")), "missing, or not a string".into())),
                };
                let check = Check::parse(spec).map_err(|e| self.at.error(Some(&field(".check")), e.to_string()))?;
                let weight = match object.get("weight") {
                    None => 1.0,
                    Some(Value::Number(n)) => match n.as_f64() {
                        Some(w) if w.is_finite() && w >= 0.0 => w,
                        _ => return Err(self.at.error(Some(&field(".weight")), "must be a number ≥ 0".into())),
                    },
                    Some(other) => {
                        return Err(self.at.error(Some(&field(".weight")), format!("must be a number, not {other}")));
                    }
                };
                Ok(Expectation { check, weight })
            })
            .collect()
    }

    fn solution(&self) -> Result<Option<Vec<Step>>, TaskError> {
        let items = match self.object.get("solution") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(self.at.error(
                    Some("solution"),
                    format!("must be a list of command lines (and an {{\"answer\"}}), not {}", type_name(other)),
                ));
            }
        };
        let steps = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let field = format!("solution[{i}]");
                match item {
                    Value::Object(object) if object.contains_key("tool") => Err(self.at.error(
                        Some(&field),
                        "a tool call names one design's tool: put it under solution_for.<design>".into(),
                    )),
                    _ => step(Some(&[]), item).map_err(|e| self.at.error(Some(&field), e)),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(steps))
    }

    fn solution_for(&self) -> Result<BTreeMap<Design, Vec<Step>>, TaskError> {
        let map = match self.object.get("solution_for") {
            None | Some(Value::Null) => return Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map,
            Some(other) => {
                return Err(self.at.error(
                    Some("solution_for"),
                    format!("must be an object of design → steps, not {}", type_name(other)),
                ));
            }
        };
        let mut out = BTreeMap::new();
        for (name, steps) in map {
            let field = format!("solution_for.{name}");
            let design: Design = name.parse().map_err(|e: String| self.at.error(Some(&field), e))?;
            let Value::Array(items) = steps else {
                return Err(self.at.error(Some(&field), "must be a list of steps".into()));
            };
            let steps = items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    // mcp-direct's tools are its server's, known when it starts.
                    let tools = (design != Design::McpDirect).then(|| design.tool_names());
                    step(tools, item).map_err(|e| self.at.error(Some(&format!("{field}[{i}]")), e))
                })
                .collect::<Result<Vec<_>, _>>()?;
            out.insert(design, steps);
        }
        Ok(out)
    }
}

/// A solution step: a command line, `{"answer": "…"}`, or
/// `{"tool", "arguments"}` naming one of `tools` (any name when `None`).
fn step(tools: Option<&[&str]>, item: &Value) -> Result<Step, String> {
    match item {
        Value::String(line) => Ok(Step::Line(line.clone())),
        Value::Object(object) if object.contains_key("answer") => match (object.get("answer"), object.len()) {
            (Some(Value::String(answer)), 1) => Ok(Step::Answer { answer: answer.clone() }),
            _ => Err("an answer step is {\"answer\": \"text\"} and nothing else".into()),
        },
        Value::Object(object) => {
            if let Some(unknown) =
                UnknownField::among(object.keys().map(String::as_str), &["tool", "arguments"]).into_iter().next()
            {
                return Err(format!("{unknown} (a call is {{\"tool\": …, \"arguments\": {{…}}}})"));
            }
            let tool = match object.get("tool") {
                Some(Value::String(t)) => match tools {
                    Some(tools) if !tools.contains(&t.as_str()) => {
                        return Err(format!("`{t}` is not a tool of this design; its tools: {}", tools.join(", ")));
                    }
                    _ => t.clone(),
                },
                _ => return Err("a call needs \"tool\": the tool's name".into()),
            };
            match object.get("arguments") {
                Some(arguments @ Value::Object(_)) => Ok(Step::Call { tool, arguments: arguments.clone() }),
                _ => Err("a call needs \"arguments\": an object".into()),
            }
        }
        other => Err(format!(
            "a step is a command line, an {{\"answer\"}} or a {{\"tool\", \"arguments\"}} call, not {}",
            type_name(other)
        )),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"id":"t1","category":"c","description":"d","prompt":"p","files":{"/data/a.txt":"x"},"expectations":[{"check":"exit_code:0"},{"check":"file_contains:/data/a.txt:x","weight":2}]}"#;

    fn parse(line: &str) -> Result<Task, TaskError> {
        parse_task(Path::new("suite.jsonl"), 7, line)
    }

    fn error_of(line: &str) -> String {
        parse(line).unwrap_err().to_string()
    }

    #[test]
    fn reads_a_bashkit_eval_line() {
        let task = parse(GOOD).unwrap();
        assert_eq!(task.id, "t1");
        assert_eq!(task.files.get("/data/a.txt").map(String::as_str), Some("x"));
        assert_eq!(task.expectations.len(), 2);
        assert_eq!(task.expectations[1].weight, 2.0);
        assert_eq!(task.expectations[1].check.spec(), "file_contains:/data/a.txt:x");
        assert_eq!(task.source.to_string(), "suite.jsonl:7");
        assert!(task.solution(Design::Run).is_none());
        assert!(!task.run_only());
    }

    #[test]
    fn reads_our_fields() {
        let line = r#"{"id":"t2","category":"c","description":"d","prompt":"p","expectations":[{"check":"stdout_contains:x"}],
            "solution":["echo x",{"answer":"x"}],"setup":["git init -q"],"tags":["run-only"],"timeout_secs":60,"max_steps":5,
            "solution_for":{"typed":[{"tool":"read_file","arguments":{"path":"a"}},"echo x"],"run":["echo x; echo y"]}}"#
            .replace('\n', "");
        let task = parse(&line).unwrap();
        assert_eq!(task.setup, vec!["git init -q"]);
        assert!(task.run_only());
        assert_eq!((task.timeout_secs, task.max_steps), (Some(60), Some(5)));
        assert_eq!(
            task.solution(Design::Bash),
            Some(vec![Step::Line("echo x".into()), Step::Answer { answer: "x".into() }])
        );
        assert_eq!(task.solution(Design::Run), Some(vec![Step::Line("echo x; echo y".into())]));
        let typed = task.solution(Design::Typed).unwrap();
        assert_eq!(typed[0], Step::Call { tool: "read_file".into(), arguments: serde_json::json!({"path": "a"}) });
        assert_eq!(typed[1], Step::Line("echo x".into()));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let base = r#""category":"c","description":"d","prompt":"p","expectations":[{"check":"exit_code:0"}]"#;
        let cases = [
            ("{", "suite.jsonl:7: not valid JSON"),
            ("[1]", "suite.jsonl:7: a task is a JSON object"),
            (&format!(r#"{{{base}}}"#), "field `id`: missing"),
            (&format!(r#"{{"id":3,{base}}}"#), "field `id`: must be a string, not a number"),
            (&format!(r#"{{"id":"a b",{base}}}"#), "field `id`: `a b`: use letters"),
            (&format!(r#"{{"id":"a","extra":1,{base}}}"#), "field `extra`: unknown field; known fields: id, category,"),
            (
                &format!(r#"{{"id":"a","promt":"p",{base}}}"#),
                "suite.jsonl:7: field `promt`: unknown field; did you mean `prompt`?",
            ),
            (
                r#"{"id":"a","category":"c","description":"d","prompt":"p","expectations":[]}"#,
                "field `expectations`: needs at least one check",
            ),
            (
                r#"{"id":"a","category":"c","description":"d","prompt":"p","expectations":[{"check":"exit_code:0"},{"check":"stdout_has:x"}]}"#,
                "field `expectations[1].check`: unknown check kind `stdout_has`",
            ),
            (
                r#"{"id":"a","category":"c","description":"d","prompt":"p","expectations":[{"check":"exit_code:0","weight":-1}]}"#,
                "field `expectations[0].weight`: must be a number ≥ 0",
            ),
            (
                r#"{"id":"a","category":"c","description":"d","prompt":"p","expectations":[{"check":"exit_code:0","wieght":1}]}"#,
                "field `expectations[0].wieght`: unknown field; did you mean `weight`?",
            ),
            (
                r#"{"id":"a","category":"c","description":"d","prompt":"p","expectations":[{"check":"exit_code:0","colour":1}]}"#,
                "field `expectations[0].colour`: unknown field; known fields: check, weight",
            ),
            (
                &format!(r#"{{"id":"a","solution_for":{{"typed":[{{"tool":"read_file","argumnets":{{}}}}]}},{base}}}"#),
                "field `solution_for.typed[0]`: unknown field `argumnets`; did you mean `arguments`?",
            ),
            (
                &format!(r#"{{"id":"a","solution_for":{{"typed":[{{"tool":"read_file","colour":1}}]}},{base}}}"#),
                "field `solution_for.typed[0]`: unknown field `colour`; known fields: tool, arguments",
            ),
            (
                &format!(r#"{{"id":"a","files":{{"x":1}},{base}}}"#),
                "field `files.x`: a file's content must be a string",
            ),
            (&format!(r#"{{"id":"a","solution":"ls",{base}}}"#), "field `solution`: must be a list of command lines"),
            (&format!(r#"{{"id":"a","solution":[1],{base}}}"#), "field `solution[0]`: a step is a command line"),
            (
                &format!(r#"{{"id":"a","solution":[{{"tool":"run","arguments":{{}}}}],{base}}}"#),
                "field `solution[0]`: a tool call names one design's tool",
            ),
            (
                &format!(r#"{{"id":"a","solution":[{{"answer":"x","extra":1}}],{base}}}"#),
                "field `solution[0]`: an answer step is",
            ),
            (&format!(r#"{{"id":"a","setup":[1],{base}}}"#), "field `setup[0]`: must be a string"),
            (&format!(r#"{{"id":"a","timeout_secs":0,{base}}}"#), "field `timeout_secs`: must be a whole number"),
            (&format!(r#"{{"id":"a","hub":"no/such/dir",{base}}}"#), "field `hub`: no/such/dir is not a folder"),
            (
                &format!(r#"{{"id":"a","solution_for":{{"zsh":[]}},{base}}}"#),
                "field `solution_for.zsh`: unknown design",
            ),
            (
                &format!(r#"{{"id":"a","solution_for":{{"bash":[{{"tool":"read_file","arguments":{{}}}}]}},{base}}}"#),
                "field `solution_for.bash[0]`: `read_file` is not a tool of this design; its tools: bash",
            ),
            (
                &format!(r#"{{"id":"a","solution_for":{{"typed":[{{"tool":"read_file"}}]}},{base}}}"#),
                "field `solution_for.typed[0]`: a call needs \"arguments\"",
            ),
        ];
        for (line, want) in cases {
            let got = error_of(line);
            assert!(got.contains(want), "{line}\n  got:  {got}\n  want: {want}");
        }
    }

    #[test]
    fn a_suite_skips_blank_lines_and_counts_lines_from_one() {
        let text = format!("\n{GOOD}\n\n{}\n", GOOD.replace("\"t1\"", "\"t2\""));
        let tasks = parse_suite(Path::new("s.jsonl"), &text).unwrap();
        assert_eq!(tasks.iter().map(|t| t.source.line).collect::<Vec<_>>(), vec![2, 4]);
        let broken = format!("{GOOD}\n{{\"id\":\"x\"}}\n");
        let err = parse_suite(Path::new("s.jsonl"), &broken).unwrap_err();
        assert_eq!((err.line, err.field.as_deref()), (2, Some("category")));
    }

    #[test]
    fn suites_load_from_files_and_folders_and_ids_stay_unique() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.jsonl"), GOOD.replace("\"t1\"", "\"t2\"")).unwrap();
        std::fs::write(dir.path().join("a.jsonl"), GOOD).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a suite").unwrap();
        let tasks = load_suites(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), vec!["t1", "t2"]);

        let again = load_suites(&[dir.path().join("a.jsonl"), dir.path().to_path_buf()]).unwrap_err().to_string();
        assert!(again.contains("duplicate id `t1`, first at") && again.contains("a.jsonl:1"), "{again}");

        let empty = tempfile::tempdir().unwrap();
        let err = load_suites(&[empty.path().to_path_buf()]).unwrap_err().to_string();
        assert!(err.contains("no tasks"), "{err}");
        let err = load_suites(&[dir.path().join("missing.jsonl")]).unwrap_err().to_string();
        assert!(err.contains("missing.jsonl") && err.contains("pass a .jsonl file"), "{err}");
    }

    #[test]
    fn a_hub_folder_is_relative_to_the_suite_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tools")).unwrap();
        let line = GOOD.replace("\"prompt\"", "\"hub\":\"tools\",\"prompt\"");
        let task = parse_task(&dir.path().join("s.jsonl"), 1, &line).unwrap();
        assert_eq!(task.hub, Some(dir.path().join("tools")));
    }

    /// Shards must not merge runs whose tools differ: the hub folder's
    /// files are part of the task's digest, and only they.
    #[test]
    fn a_hub_folder_s_files_are_part_of_the_task_digest() {
        let dir = tempfile::tempdir().unwrap();
        let tools = dir.path().join("tools/weather");
        std::fs::create_dir_all(&tools).unwrap();
        std::fs::write(tools.join("run"), "echo sunny").unwrap();
        let line = GOOD.replace("\"prompt\"", "\"hub\":\"tools\",\"prompt\"");
        let digest = || parse_task(&dir.path().join("s.jsonl"), 1, &line).unwrap().digest;
        let first = digest();
        assert_eq!(digest(), first, "the same files give the same digest");
        assert_ne!(first, parse(GOOD).unwrap().digest, "a hub changes it");
        std::fs::write(tools.join("run"), "echo rainy").unwrap();
        let changed = digest();
        assert_ne!(changed, first, "a changed tool changes it");
        std::os::unix::fs::symlink("/etc/hostname", tools.join("link")).unwrap();
        assert_eq!(digest(), changed, "a symlink is skipped, never followed");
        std::fs::write(tools.join("manifest.json"), "{}").unwrap();
        assert_ne!(digest(), changed, "a new file changes it");
    }
}
