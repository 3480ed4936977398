//! `clix diff` and `clix undo` as a person reads them.

use clix_checkpoint::{ChangeSet, UndoReport};

use crate::text::{escaped, for_stdout};

/// Each step's header (its line, what was not kept), then `text`, the
/// diff or the stat; a workspace file's escapes are shown on a terminal,
/// never obeyed.
pub fn diff(sets: &[ChangeSet], text: &str) -> String {
    let mut out = String::new();
    for set in sets {
        out.push_str(&format!("# step {}: {}\n", set.step, escaped(&set.line)));
        for n in &set.not_kept {
            out.push_str(&format!("#   not kept: {} ({})\n", n.path, n.why));
        }
    }
    out.push_str(&for_stdout(text.trim_end_matches('\n')));
    out.push('\n');
    out
}

/// What `undo` of `what` put back, and the person's versions it kept.
pub fn undone(what: &str, report: &UndoReport) -> String {
    let mut out = format!("undid {what}: {} paths as they were\n", report.restored.len());
    let (git, files): (Vec<&String>, Vec<&String>) =
        report.restored.iter().partition(|p| p.split('/').any(|part| part == ".git"));
    for path in files {
        out.push_str(&format!("  restored {path}\n"));
    }
    if !git.is_empty() {
        out.push_str(&format!("  restored the repository (.git): {} paths\n", git.len()));
    }
    for backup in &report.backups {
        out.push_str(&format!("  your version kept as {backup}\n"));
    }
    out
}
