//! Putting the workspace back as it was before some calls, through the
//! handle: a symlink the agent planted never leads a restore outside, and
//! a path the person changed since is left as it is unless forced.

use std::io::{self, ErrorKind};
use std::path::Path;

use clix_workspace::{Folder, Kind};

use crate::changes::{Change, ChangeSet, net};
use crate::scan::Node;
use crate::store::CheckpointStore;

/// What an undo did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UndoReport {
    /// Paths put back as they were (removed, when the calls created them).
    pub restored: Vec<String>,
    /// Paths left as they are, each with why.
    pub left: Vec<(String, String)>,
    /// The person's versions `--force` replaced, kept under these names.
    pub backups: Vec<String>,
}

/// Undoes run `run` from step `from_step` on (the whole run when 1): the
/// workspace as it was before that step, the earlier steps' changes kept.
pub fn undo(
    store: &CheckpointStore,
    folder: &Folder,
    run: &str,
    from_step: u32,
    force: bool,
) -> io::Result<UndoReport> {
    let sets: Vec<ChangeSet> = store.changes_of(run)?.into_iter().filter(|s| s.step >= from_step).collect();
    if sets.is_empty() {
        return Err(io::Error::new(
            ErrorKind::NotFound,
            format!("run {run} changed nothing at step {from_step} or later; `clix diff {run}` shows its steps"),
        ));
    }
    let report = restore(store, folder, &sets, force)?;
    // Undone steps are no longer the run's: a later undo of an earlier
    // step starts from the tree they left. Kept while a path was left.
    if report.left.is_empty() {
        for set in &sets {
            store.drop_step(run, set.step)?;
        }
    }
    Ok(report)
}

/// The node at `path` now, read through the handle; `None` when nothing is
/// there or the path leads out of the workspace.
fn current(folder: &Folder, path: &Path, max_read: u64) -> Option<Node> {
    let entry = folder.symlink_metadata(path).ok()?;
    Some(match entry.kind {
        Kind::Dir => Node::Dir { mode: entry.mode },
        Kind::Symlink => Node::Link { target: folder.read_link(path).ok()?.to_string_lossy().into_owned() },
        Kind::File => {
            let hash = if entry.len <= max_read {
                folder.read(path, max_read).ok().map(|c| crate::store::content_hash(&c))
            } else {
                None
            };
            Node::File { hash, size: entry.len, mode: entry.mode }
        }
        _ => return None,
    })
}

/// Whether the node found at a path is the one a change set recorded. A
/// file whose content was not kept (a secret, one too big) is known by
/// its size and mode alone.
fn is(now: &Option<Node>, recorded: &Option<Node>) -> bool {
    match (now, recorded) {
        (Some(Node::File { size, mode, .. }), Some(Node::File { hash: None, size: s, mode: m })) => {
            size == s && mode == m
        }
        _ => now == recorded,
    }
}

fn depth(path: &str) -> usize {
    path.matches('/').count()
}

pub(crate) fn restore(
    store: &CheckpointStore,
    folder: &Folder,
    sets: &[ChangeSet],
    force: bool,
) -> io::Result<UndoReport> {
    let mut report = UndoReport::default();
    let mut todo: Vec<(Change, Option<Node>)> = Vec::new();
    for change in net(sets) {
        let path = Path::new(&change.path);
        let size = |node: &Option<Node>| match node {
            Some(Node::File { size, .. }) => *size,
            _ => 0,
        };
        let now = current(folder, path, size(&change.after).max(size(&change.before)));
        if is(&now, &change.before) {
            // Already as it was (an earlier undo that left other paths).
            report.restored.push(change.path.clone());
            continue;
        }
        if !is(&now, &change.after) {
            if !force {
                report.left.push((
                    change.path.clone(),
                    "changed since the agent's call; left as it is (--force puts it back and keeps this version \
                     beside it)"
                        .into(),
                ));
                continue;
            }
            if matches!(now, Some(Node::File { .. })) {
                let backup = format!("{}.clix-undo-backup", change.path);
                match folder.copy(path, Path::new(&backup), u64::MAX) {
                    Ok(()) => report.backups.push(backup),
                    Err(e) => {
                        report.left.push((change.path.clone(), format!("could not keep your version: {e}")));
                        continue;
                    }
                }
            }
        }
        if let Some(Node::File { hash: None, .. }) = &change.before {
            report.left.push((change.path.clone(), "its earlier content was not kept".into()));
            continue;
        }
        todo.push((change, now));
    }
    // What is in the way goes first, deepest first: a file inside a folder
    // the calls made, a symlink where a folder was.
    todo.sort_by(|a, b| depth(&b.0.path).cmp(&depth(&a.0.path)).then(b.0.path.cmp(&a.0.path)));
    let mut blocked = std::collections::HashSet::new();
    for (change, now) in &todo {
        let replace = match (&change.before, now) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(Node::Dir { .. }), Some(Node::Dir { .. })) | (Some(Node::File { .. }), Some(Node::File { .. })) => {
                false
            }
            (Some(_), Some(_)) => true,
        };
        if replace && let Err(e) = folder.remove(Path::new(&change.path), false) {
            report.left.push((change.path.clone(), format!("could not remove what is there now: {e}")));
            blocked.insert(change.path.clone());
        }
    }
    // Then what was there comes back, shallowest first.
    todo.reverse();
    for (change, _) in &todo {
        if blocked.contains(&change.path) {
            continue;
        }
        let path = Path::new(&change.path);
        let put = match &change.before {
            None => Ok(()),
            Some(Node::Dir { mode }) => match folder.create_dir(path, false) {
                Err(e) if e.kind() == ErrorKind::AlreadyExists => folder.chmod(path, *mode),
                other => other.and_then(|()| folder.chmod(path, *mode)),
            },
            Some(Node::File { hash: Some(hash), mode, .. }) => store
                .get(hash)
                .and_then(|content| folder.write(path, &content))
                .and_then(|()| folder.chmod(path, *mode)),
            Some(Node::Link { target }) => folder.symlink(Path::new(target), path),
            Some(Node::File { hash: None, .. }) | Some(Node::Skipped) => Ok(()),
        };
        match put {
            Ok(()) => report.restored.push(change.path.clone()),
            Err(e) => report.left.push((change.path.clone(), format!("could not put it back: {e}"))),
        }
    }
    report.restored.sort();
    report.left.sort();
    Ok(report)
}
