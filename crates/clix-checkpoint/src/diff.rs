//! Change sets shown as a person reads them: a unified diff, or a stat.

use std::io;

use similar::TextDiff;

use crate::changes::{Change, ChangeSet, in_git, net};
use crate::scan::Node;
use crate::store::CheckpointStore;

/// Contents past this size are not compared line by line.
const MAX_TEXT_DIFF: u64 = 8 << 20;

/// The unified diff of what `sets` changed together: text files line by
/// line, binary files as one line each with their sizes, modes and
/// symlinks shown, folders named.
pub fn diff(store: &CheckpointStore, sets: &[ChangeSet]) -> io::Result<String> {
    let (git, changes): (Vec<Change>, Vec<Change>) = net(sets).into_iter().partition(|c| in_git(&c.path));
    let mut out = String::new();
    for change in changes {
        show(store, &change, &mut out)?;
    }
    out.push_str(&git_line(&git));
    Ok(out)
}

/// git's own records in one line: what a person reads of a commit is the
/// commit, not its objects (`git log` shows it; undo puts it all back).
fn git_line(git: &[Change]) -> String {
    if git.is_empty() {
        return String::new();
    }
    let refs = git.iter().filter(|c| c.path.contains(".git/refs/") || c.path.ends_with(".git/HEAD")).count();
    let objects = git.iter().filter(|c| c.path.contains(".git/objects/") && c.before.is_none()).count();
    format!(
        "the repository (.git): {} paths changed ({refs} refs, {objects} new objects); `git log` and `git status` show what\n",
        git.len()
    )
}

/// One line per changed path (`path | +3 -1`), then the totals.
pub fn stat(store: &CheckpointStore, sets: &[ChangeSet]) -> io::Result<String> {
    let (git, changes): (Vec<Change>, Vec<Change>) = net(sets).into_iter().partition(|c| in_git(&c.path));
    let width = changes.iter().map(|c| c.path.len()).max().unwrap_or(0);
    let mut out = String::new();
    let (mut added, mut removed) = (0, 0);
    for change in &changes {
        let what = match (&change.before, &change.after) {
            (Some(Node::File { hash: Some(a), size, .. }), Some(Node::File { hash: Some(b), .. })) if a != b => {
                match (text_of(store, a, *size)?, text_of_node(store, change.after.as_ref())?) {
                    (Some(old), Some(new)) => {
                        let (plus, minus) = line_counts(&old, &new);
                        added += plus;
                        removed += minus;
                        format!("+{plus} -{minus}")
                    }
                    _ => "binary".into(),
                }
            }
            _ => change.kind().to_string(),
        };
        out.push_str(&format!("{:width$} | {what}\n", change.path));
    }
    out.push_str(&git_line(&git));
    out.push_str(&format!("{} paths changed, {added} lines added, {removed} removed\n", changes.len()));
    Ok(out)
}

fn line_counts(old: &str, new: &str) -> (usize, usize) {
    let diff = TextDiff::from_lines(old, new);
    let (mut plus, mut minus) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => plus += 1,
            similar::ChangeTag::Delete => minus += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (plus, minus)
}

/// The text of a kept file, `None` when it is binary or too big to compare.
fn text_of(store: &CheckpointStore, hash: &str, size: u64) -> io::Result<Option<String>> {
    if size > MAX_TEXT_DIFF {
        return Ok(None);
    }
    let bytes = store.get(hash)?;
    if bytes.contains(&0) {
        return Ok(None);
    }
    Ok(String::from_utf8(bytes).ok())
}

fn text_of_node(store: &CheckpointStore, node: Option<&Node>) -> io::Result<Option<String>> {
    match node {
        Some(Node::File { hash: Some(hash), size, .. }) => text_of(store, hash, *size),
        _ => Ok(Some(String::new())),
    }
}

fn show(store: &CheckpointStore, change: &Change, out: &mut String) -> io::Result<()> {
    let path = &change.path;
    match (&change.before, &change.after) {
        (Some(Node::Dir { .. }), None) => out.push_str(&format!("deleted folder {path}/\n")),
        (None, Some(Node::Dir { mode })) => out.push_str(&format!("new folder {path}/ (mode {mode:o})\n")),
        (Some(Node::Dir { mode: a }), Some(Node::Dir { mode: b })) => {
            out.push_str(&format!("folder {path}/: mode {a:o} \u{2192} {b:o}\n"))
        }
        (before, after) if is_link(before) || is_link(after) => {
            let name = |node: &Option<Node>| match node {
                Some(Node::Link { target }) => format!("symlink \u{2192} {target}"),
                Some(Node::File { size, .. }) => format!("file of {size} bytes"),
                Some(Node::Dir { .. }) => "folder".into(),
                Some(Node::Skipped) => "build folder".into(),
                None => "nothing".into(),
            };
            out.push_str(&format!("{path}: {} \u{2192} {}\n", name(before), name(after)));
        }
        (before, after) => show_file(store, path, before.as_ref(), after.as_ref(), out)?,
    }
    Ok(())
}

fn is_link(node: &Option<Node>) -> bool {
    matches!(node, Some(Node::Link { .. }))
}

fn show_file(
    store: &CheckpointStore,
    path: &str,
    before: Option<&Node>,
    after: Option<&Node>,
    out: &mut String,
) -> io::Result<()> {
    let facts = |node: Option<&Node>| match node {
        Some(Node::File { hash, size, mode }) => Some((hash.clone(), *size, *mode)),
        _ => None,
    };
    let (old, new) = (facts(before), facts(after));
    out.push_str(&format!("diff --clix a/{path} b/{path}\n"));
    match (&old, &new) {
        (None, Some((_, _, mode))) => out.push_str(&format!("new file mode {:o}\n", 0o100000 | mode)),
        (Some((_, _, mode)), None) => out.push_str(&format!("deleted file mode {:o}\n", 0o100000 | mode)),
        (Some((_, _, a)), Some((_, _, b))) if a != b => {
            out.push_str(&format!("old mode {:o}\nnew mode {:o}\n", 0o100000 | a, 0o100000 | b))
        }
        _ => {}
    }
    let same_content = matches!((&old, &new), (Some((a, _, _)), Some((b, _, _))) if a == b && a.is_some());
    if same_content {
        return Ok(());
    }
    let unkept = |f: &Option<(Option<String>, u64, u32)>| matches!(f, Some((None, _, _)));
    if unkept(&old) || unkept(&new) {
        out.push_str(&format!("{path}: content not kept (secret-shaped or over [checkpoints] max_file_bytes)\n"));
        return Ok(());
    }
    let text = |f: &Option<(Option<String>, u64, u32)>| -> io::Result<Option<String>> {
        match f {
            Some((Some(hash), size, _)) => text_of(store, hash, *size),
            _ => Ok(Some(String::new())),
        }
    };
    match (text(&old)?, text(&new)?) {
        (Some(a), Some(b)) => {
            let (from, to) = (
                if old.is_some() { format!("a/{path}") } else { "/dev/null".into() },
                if new.is_some() { format!("b/{path}") } else { "/dev/null".into() },
            );
            let diff = TextDiff::from_lines(&a, &b);
            out.push_str(&diff.unified_diff().context_radius(3).header(&from, &to).to_string());
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        _ => {
            let size = |f: &Option<(Option<String>, u64, u32)>| f.as_ref().map_or(0, |(_, s, _)| *s);
            out.push_str(&format!(
                "Binary files a/{path} and b/{path} differ ({} \u{2192} {} bytes)\n",
                size(&old),
                size(&new)
            ));
        }
    }
    Ok(())
}
