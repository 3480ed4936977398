//! Absolute task paths (`/data`, `/app`, `/home/eval`, `/etc`, `/tmp` …)
//! mapped into the attempt's workspace.
//!
//! bashkit-eval's tasks ran in a virtual filesystem, so they name absolute
//! folders freely. Each such top-level folder becomes a folder of the
//! workspace (`/data` → `<workspace>/data`), and the same rewrite is applied
//! to the files, the prompt, the setup and solution lines and the checks, so
//! a task runs unchanged. The map is part of the attempt's record.
//!
//! Which roots are mapped: those of the task's files and of its file checks
//! (the task says they are its data), plus the usual data roots
//! ([`DATA_ROOTS`]) where they appear in its text. System folders such as
//! `/bin` and `/usr` stay as they are (`#!/bin/bash` keeps working), and so
//! does anything that is not a path (`/api/users` in a log).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use crate::task::{Step, Task};

/// Top-level folders that hold a task's data when its text names them.
pub const DATA_ROOTS: &[&str] = &[
    "app",
    "backup",
    "build",
    "config",
    "data",
    "dist",
    "doc",
    "docs",
    "etc",
    "home",
    "logs",
    "opt",
    "output",
    "project",
    "release",
    "reports",
    "scripts",
    "src",
    "srv",
    "tmp",
    "uploads",
    "var",
    "workspace",
];

/// The roots of one attempt: `/data` → `<workspace>/data`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PathMap {
    /// Root as the task writes it → where it is in this attempt.
    pub roots: BTreeMap<String, String>,
}

impl PathMap {
    /// The map of `task` into the workspace at `workspace` (its host path).
    pub fn for_task(task: &Task, workspace: &Path) -> PathMap {
        let roots = roots_of(task)
            .into_iter()
            .map(|name| (format!("/{name}"), workspace.join(&name).display().to_string()))
            .collect();
        PathMap { roots }
    }

    /// `text` with every mapped root that starts a path replaced, in one
    /// pass (a replacement is never mapped again).
    pub fn apply(&self, text: &str) -> String {
        if self.roots.is_empty() {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        let mut previous: Option<char> = None;
        while let Some(slash) = rest.find('/') {
            let before = &rest[..slash];
            out.push_str(before);
            let prev = before.chars().next_back().or(previous);
            let after = &rest[slash + 1..];
            match starts_path(prev)
                .then(|| root_at(after))
                .flatten()
                .and_then(|n| Some((n, self.roots.get(&format!("/{n}"))?)))
            {
                Some((name, target)) => {
                    out.push_str(target);
                    rest = &after[name.len()..];
                    previous = name.chars().next_back();
                }
                None => {
                    out.push('/');
                    rest = after;
                    previous = Some('/');
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// A solution step with its command line or its arguments' strings mapped.
    pub fn apply_step(&self, step: &Step) -> Step {
        match step {
            Step::Line(line) => Step::Line(self.apply(line)),
            Step::Call { tool, arguments } => Step::Call { tool: tool.clone(), arguments: self.apply_json(arguments) },
            Step::Answer { answer } => Step::Answer { answer: self.apply(answer) },
        }
    }

    fn apply_json(&self, value: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::String(s) => Value::String(self.apply(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.apply_json(v)).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), self.apply_json(v))).collect()),
            other => other.clone(),
        }
    }
}

/// Characters that continue a word or a path: a `/` after one of them is
/// inside something (`usr/lib`, `$HOME/data`, `$(pwd)/x`), not the start of
/// an absolute path.
fn continues_word(c: char) -> bool {
    c.is_alphanumeric() || "_.~/-$})".contains(c)
}

fn starts_path(previous: Option<char>) -> bool {
    previous.is_none_or(|c| !continues_word(c))
}

/// The folder name at the start of `after` (what follows a `/`), without a
/// sentence's final dots (`/backup.` names `backup`).
fn root_at(after: &str) -> Option<&str> {
    let end = after.find(|c: char| !(c.is_alphanumeric() || "_.-".contains(c))).unwrap_or(after.len());
    let name = after[..end].trim_end_matches('.');
    (!name.is_empty()).then_some(name)
}

/// The top-level folders of `task` to map.
fn roots_of(task: &Task) -> BTreeSet<String> {
    let first = |path: &str| {
        let rest = path.strip_prefix('/')?;
        let name = rest.split('/').next().filter(|n| !n.is_empty())?;
        Some(name.to_string())
    };
    let mut roots: BTreeSet<String> = task.files.keys().filter_map(|p| first(p)).collect();
    roots.extend(task.expectations.iter().filter_map(|e| e.check.path()).filter_map(first));
    let mut texts: Vec<&str> = vec![&task.prompt];
    texts.extend(task.system.as_deref());
    texts.extend(task.files.values().map(String::as_str));
    texts.extend(task.setup.iter().map(String::as_str));
    texts.extend(task.solution.iter().flatten().filter_map(|step| match step {
        Step::Line(text) | Step::Answer { answer: text } => Some(text.as_str()),
        Step::Call { .. } => None,
    }));
    texts.extend(task.expectations.iter().map(|e| e.check.spec()));
    for text in texts {
        roots.extend(data_roots_in(text));
    }
    roots
}

/// The [`DATA_ROOTS`] that start a path somewhere in `text`.
fn data_roots_in(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices('/') {
        if !starts_path(text[..at].chars().next_back()) {
            continue;
        }
        if let Some(name) = root_at(&text[at + 1..]).filter(|n| DATA_ROOTS.contains(n)) {
            found.insert(name.to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::parse_task;

    fn task(line: &str) -> Task {
        parse_task(Path::new("t.jsonl"), 1, line).unwrap()
    }

    fn map(roots: &[&str]) -> PathMap {
        PathMap { roots: roots.iter().map(|r| (format!("/{r}"), format!("/ws/{r}"))).collect() }
    }

    #[test]
    fn roots_come_from_files_checks_and_data_roots_in_the_text() {
        let t = task(
            r##"{"id":"a","category":"c","description":"d",
            "prompt":"Create /lib/utils.sh with '#!/bin/bash', read /data/sample.txt and /etc/app.conf, list /usr/share. Save to /backup.",
            "files":{"/srv2/x.txt":"see /reports/q1.md"},
            "expectations":[{"check":"file_exists:/lib/utils.sh"},{"check":"stdout_contains:/api/users"}]}"##
                .replace('\n', "")
                .as_str(),
        );
        let roots = roots_of(&t);
        let want: BTreeSet<String> =
            ["backup", "data", "etc", "lib", "reports", "srv2"].iter().map(|s| s.to_string()).collect();
        assert_eq!(roots, want, "lib from a file check, srv2 from a file; bin, usr and api stay");
        let m = PathMap::for_task(&t, Path::new("/tmp/w"));
        assert_eq!(m.roots.get("/lib").map(String::as_str), Some("/tmp/w/lib"));
    }

    #[test]
    fn only_roots_that_start_a_path_are_replaced() {
        let m = map(&["data", "tmp", "backup", "home"]);
        let cases = [
            ("cat /data/a.txt", "cat /ws/data/a.txt"),
            ("/data", "/ws/data"),
            ("cd /data && ls /tmp/", "cd /ws/data && ls /ws/tmp/"),
            ("file_contains:/data/x:/data/y", "file_contains:/ws/data/x:/ws/data/y"),
            ("'/data/q.txt'", "'/ws/data/q.txt'"),
            ("Save it to /backup.", "Save it to /ws/backup."),
            ("/home/eval/myproject", "/ws/home/eval/myproject"),
            // Not the start of a path, or not a mapped root:
            ("/usr/data/x", "/usr/data/x"),
            ("$HOME/data", "$HOME/data"),
            ("$(pwd)/data", "$(pwd)/data"),
            ("./data/x", "./data/x"),
            ("/database/x", "/database/x"),
            ("/data.csv", "/data.csv"),
            ("a/b /api/users", "a/b /api/users"),
            ("#!/bin/bash", "#!/bin/bash"),
        ];
        for (text, want) in cases {
            assert_eq!(m.apply(text), want, "{text}");
        }
    }

    #[test]
    fn a_replacement_is_never_mapped_again() {
        // The workspace itself lives under a mapped root's name.
        let m = PathMap { roots: [("/tmp".to_string(), "/tmp/eval-1/ws/tmp".to_string())].into() };
        assert_eq!(m.apply("/tmp/notes.txt and /tmp"), "/tmp/eval-1/ws/tmp/notes.txt and /tmp/eval-1/ws/tmp");
    }

    #[test]
    fn an_empty_map_changes_nothing() {
        assert_eq!(PathMap::default().apply("cat /data/x"), "cat /data/x");
    }

    #[test]
    fn steps_are_mapped_inside_their_arguments() {
        let m = map(&["data"]);
        let step = Step::Call {
            tool: "edit_file".into(),
            arguments: serde_json::json!({"path": "/data/a", "old_string": "x", "n": 1}),
        };
        assert_eq!(
            m.apply_step(&step),
            Step::Call {
                tool: "edit_file".into(),
                arguments: serde_json::json!({"path": "/ws/data/a", "old_string": "x", "n": 1}),
            }
        );
        assert_eq!(m.apply_step(&Step::Line("ls /data".into())), Step::Line("ls /ws/data".into()));
    }
}
