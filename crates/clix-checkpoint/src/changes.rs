//! What one `run` call changed in the workspace.

use serde::{Deserialize, Serialize};

use crate::scan::{Changed, Node};

/// One path the call changed: what it was before (`None`: it did not
/// exist) and after (`None`: the call removed it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Relative to the workspace, `/`-separated.
    pub path: String,
    /// The path before the call.
    pub before: Option<Node>,
    /// The path after the call.
    pub after: Option<Node>,
}

impl Change {
    /// `created`, `deleted`, `mode` (permission bits only), or `modified`.
    pub fn kind(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, _) => "created",
            (_, None) => "deleted",
            (Some(Node::File { hash: a, size: sa, .. }), Some(Node::File { hash: b, size: sb, .. }))
                if a == b && sa == sb && a.is_some() =>
            {
                "mode"
            }
            (Some(Node::Dir { .. }), Some(Node::Dir { .. })) => "mode",
            _ => "modified",
        }
    }
}

/// A path the checkpoints saw change but did not keep, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotKept {
    /// Relative to the workspace.
    pub path: String,
    /// Why its content is not in the store.
    pub why: String,
}

/// Everything one `run` call changed: step `step` of run `run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSet {
    /// The run (an agent run's id, an MCP session's, a `clix run`'s).
    pub run: String,
    /// The call's number in the run, from 1.
    pub step: u32,
    /// The command line the call ran.
    pub line: String,
    /// When the call ended, milliseconds since the epoch.
    pub at_ms: u64,
    /// Each changed path, in path order.
    pub changes: Vec<Change>,
    /// Paths seen changing whose content was not kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_kept: Vec<NotKept>,
}

impl ChangeSet {
    /// The change set of step `step`: each changed path, and what was not kept.
    pub(crate) fn new(run: &str, step: u32, line: &str, changed: Changed, mut not_kept: Vec<NotKept>) -> ChangeSet {
        let changes = changed
            .into_iter()
            .filter(|(_, (before, after))| before != after)
            .map(|(path, (before, after))| Change { path, before, after })
            .collect();
        // A path not kept is named once, whatever else is said of it.
        not_kept.sort_by(|a, b| a.path.cmp(&b.path));
        not_kept.dedup_by(|a, b| a.path == b.path);
        ChangeSet { run: run.to_string(), step, line: line.to_string(), at_ms: now_ms(), changes, not_kept }
    }

    /// Nothing changed and nothing was left out.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.not_kept.is_empty()
    }

    /// The changed files and links outside repositories' `.git` (folders
    /// are not counted): created, modified (mode changes included), deleted.
    pub fn counts(&self) -> (usize, usize, usize) {
        let files = self.changes.iter().filter(|c| {
            !in_git(&c.path)
                && (c.before.as_ref().is_some_and(Node::is_file_like)
                    || c.after.as_ref().is_some_and(Node::is_file_like))
        });
        let (mut created, mut modified, mut deleted) = (0, 0, 0);
        for change in files {
            match change.kind() {
                "created" => created += 1,
                "deleted" => deleted += 1,
                _ => modified += 1,
            }
        }
        (created, modified, deleted)
    }

    /// The one line a person reads after the call:
    /// `changed 3 files: +2 ~1 −0 (clix diff last --step 4)`; `None` when
    /// nothing changed.
    pub fn summary(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let (created, modified, deleted) = self.counts();
        let total = created + modified + deleted;
        let files = if total == 1 { "file" } else { "files" };
        let mut line = format!("changed {total} {files}: +{created} ~{modified} \u{2212}{deleted}");
        if self.changes.iter().any(|c| in_git(&c.path)) {
            line.push_str(", and the repository (.git)");
        }
        if !self.not_kept.is_empty() {
            line.push_str(&format!(", {} not kept", self.not_kept.len()));
        }
        line.push_str(&format!(" (clix diff {} --step {})", self.run, self.step));
        Some(line)
    }
}

/// Whether `path` lies in a repository's `.git` folder: git's own records
/// (objects, refs, index), shown to people as one line.
pub(crate) fn in_git(path: &str) -> bool {
    path.split('/').any(|part| part == ".git")
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The net change of several calls, path by path: what each path was
/// before the first of them and after the last. A path put back as it was
/// is left out.
pub(crate) fn net(sets: &[ChangeSet]) -> Vec<Change> {
    let mut by_path: std::collections::BTreeMap<&str, Change> = std::collections::BTreeMap::new();
    for set in sets {
        for change in &set.changes {
            by_path
                .entry(&change.path)
                .and_modify(|net| net.after = change.after.clone())
                .or_insert_with(|| change.clone());
        }
    }
    by_path.into_values().filter(|c| c.before != c.after).collect()
}
