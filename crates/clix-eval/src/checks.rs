//! The check kinds, parsed from `kind:value` strings, and how each is scored.
//!
//! Scoring follows bashkit-eval, so results are comparable: `stdout_*`
//! passes when any tool call's raw stdout matches, `stderr_empty` when every
//! call's stderr is empty, `exit_code` looks at the last call (-1 when there
//! was none). A task passes only when all its checks pass; its score is the
//! weighted share that pass.

use std::path::Path;

use clix_workspace::{Folder, Kind, OWN_READ_LIMIT};
use regex::Regex;
use serde::Serialize;

use crate::trace::Trace;

/// Every check kind, as written before the first `:`.
pub const CHECK_KINDS: &[&str] = &[
    "exit_code",
    "stdout_contains",
    "stdout_regex",
    "stderr_empty",
    "file_exists",
    "dir_exists",
    "file_contains",
    "file_line_regex",
    "answer_contains",
    "answer_regex",
    "command",
];

/// One parsed check.
#[derive(Debug, Clone)]
pub struct Check {
    spec: String,
    kind: CheckKind,
}

/// What a check looks at.
#[derive(Debug, Clone)]
pub enum CheckKind {
    /// `exit_code:N`: the last tool call exited with N.
    ExitCode(i32),
    /// `stdout_contains:TEXT`: some call's raw stdout contains TEXT.
    StdoutContains(String),
    /// `stdout_regex:RE`: some call's raw stdout matches RE.
    StdoutRegex(Regex),
    /// `stderr_empty`: no call wrote to stderr.
    StderrEmpty,
    /// `file_exists:PATH`: something is at PATH (a folder counts).
    FileExists(String),
    /// `dir_exists:PATH`: a folder is at PATH.
    DirExists(String),
    /// `file_contains:PATH:TEXT`: the file at PATH contains TEXT.
    FileContains {
        /// The file, relative to the workspace or absolute inside it.
        path: String,
        /// The text it must contain.
        text: String,
    },
    /// `file_line_regex:PATH:RE`: one line of the file at PATH matches RE.
    FileLineRegex {
        /// The file, relative to the workspace or absolute inside it.
        path: String,
        /// The pattern one line must match.
        regex: Regex,
    },
    /// `answer_contains:TEXT`: the final answer contains TEXT.
    AnswerContains(String),
    /// `answer_regex:RE`: the final answer matches RE.
    AnswerRegex(Regex),
    /// `command:LINE`: LINE, run after the attempt in the workspace by
    /// clix's shell (its programs in the sandbox), exits 0.
    Command(String),
}

/// A check written wrong: its kind as written, and what is wrong with it
/// and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct CheckSpecError {
    /// The kind as written (before the first colon).
    pub kind: String,
    /// What is wrong, and what is expected.
    pub why: String,
}

impl Check {
    /// Parses `kind:value`; the error says what is wrong and what is expected.
    pub fn parse(spec: &str) -> Result<Check, CheckSpecError> {
        let (name, value) = spec.split_once(':').unwrap_or((spec, ""));
        let bad = |why: String| CheckSpecError { kind: name.to_string(), why };
        let nonempty = |what: &str| {
            if value.is_empty() {
                Err(bad(format!("`{name}` needs {what} after the colon: {name}:{what}")))
            } else {
                Ok(value.to_string())
            }
        };
        let regex = |text: &str| Regex::new(text).map_err(|e| bad(format!("`{name}`: invalid regex `{text}`: {e}")));
        let path_and = |what: &str| match value.split_once(':') {
            Some((path, rest)) if !path.is_empty() && !rest.is_empty() => Ok((path.to_string(), rest.to_string())),
            _ => Err(bad(format!("`{name}` needs a path and {what}: {name}:PATH:{what}"))),
        };
        let kind = match name {
            "exit_code" => CheckKind::ExitCode(
                value
                    .trim()
                    .parse()
                    .map_err(|_| bad(format!("`exit_code` needs an integer, as exit_code:0; got `{value}`")))?,
            ),
            "stdout_contains" => CheckKind::StdoutContains(nonempty("TEXT")?),
            "stdout_regex" => CheckKind::StdoutRegex(regex(&nonempty("RE")?)?),
            "stderr_empty" if value.is_empty() => CheckKind::StderrEmpty,
            "stderr_empty" => return Err(bad(format!("`stderr_empty` takes no value; got `{value}`"))),
            "file_exists" => CheckKind::FileExists(nonempty("PATH")?),
            "dir_exists" => CheckKind::DirExists(nonempty("PATH")?),
            "file_contains" => {
                let (path, text) = path_and("TEXT")?;
                CheckKind::FileContains { path, text }
            }
            "file_line_regex" => {
                let (path, pattern) = path_and("RE")?;
                CheckKind::FileLineRegex { path, regex: regex(&pattern)? }
            }
            "answer_contains" => CheckKind::AnswerContains(nonempty("TEXT")?),
            "answer_regex" => CheckKind::AnswerRegex(regex(&nonempty("RE")?)?),
            "command" => CheckKind::Command(nonempty("LINE")?),
            _ => return Err(bad(format!("unknown check kind `{name}`; known: {}", CHECK_KINDS.join(", ")))),
        };
        Ok(Check { spec: spec.to_string(), kind })
    }

    /// The check as written.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// What the check looks at.
    pub fn kind(&self) -> &CheckKind {
        &self.kind
    }

    /// The command line of a `command:` check, which the caller runs.
    pub fn command(&self) -> Option<&str> {
        match &self.kind {
            CheckKind::Command(line) => Some(line),
            _ => None,
        }
    }

    /// The workspace path a file check reads, for the path mapping.
    pub fn path(&self) -> Option<&str> {
        match &self.kind {
            CheckKind::FileExists(p) | CheckKind::DirExists(p) => Some(p),
            CheckKind::FileContains { path, .. } | CheckKind::FileLineRegex { path, .. } => Some(path),
            _ => None,
        }
    }

    /// Scores every kind but `command:` (see [`command_verdict`]) against
    /// the trace and the workspace: (passed, why).
    pub fn evaluate(&self, trace: &Trace, workspace: &Folder) -> Option<(bool, String)> {
        let any_stdout = |pred: &dyn Fn(&str) -> bool| trace.calls.iter().any(|c| pred(&c.stdout));
        let verdict = match &self.kind {
            CheckKind::ExitCode(want) => {
                let got = trace.last_exit_code();
                (got == *want, format!("expected {want}, got {got}"))
            }
            CheckKind::StdoutContains(text) => {
                let found = any_stdout(&|s| s.contains(text.as_str()));
                (found, if found { "found".into() } else { format!("`{text}` not in any tool call's stdout") })
            }
            CheckKind::StdoutRegex(re) => {
                let found = any_stdout(&|s| re.is_match(s));
                (found, if found { "matched".into() } else { format!("`{re}` matched no tool call's stdout") })
            }
            CheckKind::StderrEmpty => match trace.calls.iter().find(|c| !c.stderr.is_empty()) {
                None => (true, "all stderr empty".into()),
                Some(c) => (false, format!("stderr: {}", c.stderr.chars().take(100).collect::<String>())),
            },
            CheckKind::FileExists(path) => match workspace.metadata(Path::new(path)) {
                Ok(_) => (true, "exists".into()),
                Err(e) => (false, format!("not found: {e}")),
            },
            CheckKind::DirExists(path) => match workspace.metadata(Path::new(path)) {
                Ok(m) if m.kind == Kind::Dir => (true, "directory exists".into()),
                Ok(_) => (false, format!("{path} is not a directory")),
                Err(e) => (false, format!("directory not found: {e}")),
            },
            CheckKind::FileContains { path, text } => match read_text(workspace, path) {
                Ok(content) if content.contains(text.as_str()) => (true, "found in file".into()),
                Ok(_) => (false, format!("`{text}` not in {path}")),
                Err(e) => (false, e),
            },
            CheckKind::FileLineRegex { path, regex } => match read_text(workspace, path) {
                Ok(content) if content.lines().any(|l| regex.is_match(l)) => (true, "matched a line".into()),
                Ok(_) => (false, format!("no line of {path} matches `{regex}`")),
                Err(e) => (false, e),
            },
            CheckKind::AnswerContains(text) => match trace.answer.as_deref() {
                Some(answer) if answer.contains(text.as_str()) => (true, "found in the answer".into()),
                Some(_) => (false, format!("`{text}` not in the answer")),
                None => (false, "no final answer".into()),
            },
            CheckKind::AnswerRegex(re) => match trace.answer.as_deref() {
                Some(answer) if re.is_match(answer) => (true, "the answer matched".into()),
                Some(_) => (false, format!("the answer does not match `{re}`")),
                None => (false, "no final answer".into()),
            },
            CheckKind::Command(_) => return None,
        };
        Some(verdict)
    }
}

/// The verdict of a `command:` check from its run: exit 0 passes; the
/// detail quotes what the line printed on stderr (or stdout), so a failing
/// check says why.
pub fn command_verdict(exit_code: i32, stdout: &str, stderr: &str) -> (bool, String) {
    if exit_code == 0 {
        return (true, "exit 0".into());
    }
    let said = if stderr.trim().is_empty() { stdout } else { stderr };
    let said: String = said.trim().chars().take(200).collect();
    if said.is_empty() { (false, format!("exit {exit_code}")) } else { (false, format!("exit {exit_code}: {said}")) }
}

fn read_text(workspace: &Folder, path: &str) -> Result<String, String> {
    match workspace.read(Path::new(path), OWN_READ_LIMIT) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => Err(format!("cannot read {path}: {e}")),
    }
}

/// One check's outcome in an attempt's result.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct CheckResult {
    /// The check as scored (after path mapping).
    pub check: String,
    /// Whether it passed.
    pub passed: bool,
    /// Its weight in the score.
    pub weight: f64,
    /// Why it passed or failed.
    pub detail: String,
}

/// An attempt's checks, scored.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Score {
    /// Each check's outcome, in the task's order.
    pub checks: Vec<CheckResult>,
    /// The weighted share of checks that passed, 0 to 1 (1 when the weights
    /// add up to 0, as bashkit-eval scores it).
    pub score: f64,
    /// Whether every check passed.
    pub passed: bool,
}

impl Score {
    /// The score of these outcomes.
    pub fn of(checks: Vec<CheckResult>) -> Score {
        let total: f64 = checks.iter().map(|c| c.weight).sum();
        let earned: f64 = checks.iter().filter(|c| c.passed).map(|c| c.weight).sum();
        let score = if total > 0.0 { earned / total } else { 1.0 };
        let passed = checks.iter().all(|c| c.passed);
        Score { checks, score, passed }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::Value;

    use super::*;
    use crate::trace::TracedCall;

    fn call(stdout: &str, stderr: &str, exit_code: i32) -> TracedCall {
        TracedCall {
            tool: "run".into(),
            arguments: Value::Null,
            text: String::new(),
            images: Vec::new(),
            stdout: stdout.into(),
            stderr: stderr.into(),
            exit_code,
            duration: Duration::ZERO,
            stage_failed: false,
        }
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        folder: Folder,
    }

    fn workspace() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::open(dir.path()).unwrap();
        folder.create_dir(Path::new("data/sub"), true).unwrap();
        folder.write(Path::new("data/report.csv"), b"name,total\nana,17\nli,4\n").unwrap();
        Fixture { _dir: dir, folder }
    }

    fn verdict(spec: &str, trace: &Trace, ws: &Folder) -> bool {
        Check::parse(spec).unwrap().evaluate(trace, ws).unwrap().0
    }

    #[test]
    fn every_kind_passes_and_fails() {
        let ws = workspace();
        let trace =
            Trace { calls: vec![call("total 17\n", "", 0), call("done\n", "", 3)], answer: Some("Ana has 17.".into()) };
        let quiet = Trace { calls: vec![call("x", "", 0)], answer: None };
        let noisy = Trace { calls: vec![call("x", "", 0), call("", "warning: y\n", 0)], answer: None };
        // (check, trace, passes)
        let cases: &[(&str, &Trace, bool)] = &[
            ("exit_code:3", &trace, true),
            ("exit_code:0", &trace, false),
            ("stdout_contains:total 17", &trace, true),
            ("stdout_contains:total 18", &trace, false),
            (r"stdout_regex:^done$\n?", &trace, false),
            (r"stdout_regex:(?m)^done$", &trace, true),
            ("stderr_empty", &quiet, true),
            ("stderr_empty", &noisy, false),
            ("file_exists:data/report.csv", &trace, true),
            ("file_exists:data", &trace, true),
            ("file_exists:data/missing.csv", &trace, false),
            ("dir_exists:data/sub", &trace, true),
            ("dir_exists:data/report.csv", &trace, false),
            ("dir_exists:nowhere", &trace, false),
            ("file_contains:data/report.csv:ana,17", &trace, true),
            ("file_contains:data/report.csv:ana,18", &trace, false),
            ("file_contains:data/missing.csv:ana", &trace, false),
            (r"file_line_regex:data/report.csv:^li,\d+$", &trace, true),
            // One line must match: the pattern cannot span two lines.
            (r"file_line_regex:data/report.csv:17\nli", &trace, false),
            ("answer_contains:17", &trace, true),
            ("answer_contains:18", &trace, false),
            ("answer_contains:17", &quiet, false),
            (r"answer_regex:\b17\b", &trace, true),
            (r"answer_regex:\b1\b", &trace, false),
            (r"answer_regex:.", &quiet, false),
        ];
        for (spec, trace, want) in cases {
            assert_eq!(verdict(spec, trace, &ws.folder), *want, "{spec}");
        }
    }

    #[test]
    fn exit_code_without_calls_is_minus_one() {
        let ws = workspace();
        let empty = Trace::default();
        assert!(verdict("exit_code:-1", &empty, &ws.folder));
        assert!(!verdict("exit_code:0", &empty, &ws.folder));
    }

    #[test]
    fn file_checks_cannot_leave_the_workspace() {
        let ws = workspace();
        let (passed, why) =
            Check::parse("file_exists:/etc/passwd").unwrap().evaluate(&Trace::default(), &ws.folder).unwrap();
        assert!(!passed);
        assert!(why.contains("outside the workspace"), "{why}");
        let (passed, _) = Check::parse("file_contains:../../etc/passwd:root")
            .unwrap()
            .evaluate(&Trace::default(), &ws.folder)
            .unwrap();
        assert!(!passed);
    }

    #[test]
    fn absolute_paths_inside_the_workspace_are_read() {
        let ws = workspace();
        let spec = format!("file_contains:{}/data/report.csv:li,4", ws.folder.root().display());
        assert!(verdict(&spec, &Trace::default(), &ws.folder));
    }

    #[test]
    fn command_checks_are_scored_by_their_exit_code() {
        let ws = workspace();
        let check = Check::parse("command:test -f data/report.csv").unwrap();
        assert_eq!(check.command(), Some("test -f data/report.csv"));
        assert!(check.evaluate(&Trace::default(), &ws.folder).is_none(), "the caller runs it");
        assert_eq!(command_verdict(0, "", ""), (true, "exit 0".into()));
        assert_eq!(command_verdict(1, "", "no such file\n"), (false, "exit 1: no such file".into()));
        assert_eq!(command_verdict(2, "usage: x\n", ""), (false, "exit 2: usage: x".into()));
        assert_eq!(command_verdict(1, "", ""), (false, "exit 1".into()));
    }

    #[test]
    fn malformed_checks_say_what_is_expected() {
        let cases = [
            ("stdout_has:x", "unknown check kind `stdout_has`; known: exit_code"),
            ("exit_code:zero", "needs an integer"),
            ("exit_code", "needs an integer"),
            ("stdout_contains:", "needs TEXT"),
            ("stdout_regex:(", "invalid regex"),
            ("stderr_empty:yes", "takes no value"),
            ("file_exists:", "needs PATH"),
            ("file_contains:a.txt", "needs a path and TEXT"),
            ("file_contains::x", "needs a path and TEXT"),
            ("file_line_regex:a.txt:[", "invalid regex"),
            ("answer_regex:)", "invalid regex"),
            ("command:", "needs LINE"),
        ];
        for (spec, want) in cases {
            let err = Check::parse(spec).unwrap_err();
            assert_eq!(err.kind, spec.split(':').next().unwrap(), "{spec}");
            assert!(err.why.contains(want), "{spec}: {err}");
        }
    }

    #[test]
    fn the_value_keeps_its_colons() {
        let check = Check::parse("file_line_regex:/data/e.csv:^(?:\"A\"|A),1$").unwrap();
        assert_eq!(check.path(), Some("/data/e.csv"));
        match check.kind() {
            CheckKind::FileLineRegex { regex, .. } => assert!(regex.is_match("\"A\",1")),
            other => panic!("{other:?}"),
        }
        let check = Check::parse("stdout_contains:a:b").unwrap();
        assert!(matches!(check.kind(), CheckKind::StdoutContains(t) if t == "a:b"));
    }

    #[test]
    fn score_is_the_weighted_share_and_pass_needs_all() {
        let result = |passed, weight| CheckResult { check: "c".into(), passed, weight, detail: String::new() };
        let s = Score::of(vec![result(true, 2.0), result(false, 1.0), result(true, 1.0)]);
        assert_eq!(s.score, 0.75);
        assert!(!s.passed);
        let s = Score::of(vec![result(true, 1.0), result(true, 0.5)]);
        assert_eq!((s.score, s.passed), (1.0, true));
        let s = Score::of(vec![result(true, 0.0)]);
        assert_eq!((s.score, s.passed), (1.0, true));
        let s = Score::of(vec![result(false, 0.0)]);
        assert_eq!((s.score, s.passed), (1.0, false), "a failing check fails the task whatever its weight");
    }
}
