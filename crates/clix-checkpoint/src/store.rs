//! The store of checkpoints: one folder per workspace in clix's state
//! folder, mode 0700. Contents are kept once by their SHA-256
//! (`blobs/ab/cdef…`), each run's change sets as JSON lines
//! (`runs/<run>.jsonl`), and the last tree seen (`tree.json`), so the next
//! clix on this workspace reads again only what changed since.
//!
//! These are clix's own files, outside the workspace: they are opened by
//! path with `std::fs`. Nothing here takes a path from the workspace.

use std::fs;
use std::io::{self, ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::changes::ChangeSet;
use crate::scan::Tree;

/// Bytes of contents held, computed once per process and kept up to date
/// by [`CheckpointStore::put`]; `u64::MAX` until computed.
const UNCOUNTED: u64 = u64::MAX;

/// The checkpoints of one workspace.
#[derive(Debug)]
pub struct CheckpointStore {
    root: PathBuf,
    held: AtomicU64,
}

/// One run in the store, as `clix runs` and `clix diff` list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    /// The run's id.
    pub run: String,
    /// Its calls that changed something.
    pub steps: usize,
    /// When its last change was kept, milliseconds since the epoch.
    pub last_at_ms: u64,
}

/// The name a content is kept under: its SHA-256, hex.
pub(crate) fn content_hash(content: &[u8]) -> String {
    clix_common::sha256_hex(content)
}

fn private_dir(path: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(path)
}

/// Writes `bytes` to `path` whole or not at all (a temporary file
/// renamed). Not synced: a call's checkpoint must cost less than the call,
/// and a crash of clix (not of the machine) loses nothing written.
fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
    file.write_all(bytes)?;
    fs::rename(&tmp, path)
}

/// A run id as a file name: kept when it is plain, hashed when not.
fn file_name(run: &str) -> String {
    let plain = !run.is_empty()
        && run.len() <= 100
        && run.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !run.starts_with('.');
    if plain { run.to_string() } else { clix_common::sha256_hex_prefix(run.as_bytes(), 16) }
}

impl CheckpointStore {
    /// The store of the workspace at `workspace` (its host path) under
    /// `state_dir`'s `checkpoints/`, made if missing.
    pub fn open(state_dir: &Path, workspace: &Path) -> io::Result<CheckpointStore> {
        let key = clix_common::sha256_hex_prefix(workspace.as_os_str().as_encoded_bytes(), 8);
        let root = crate::store_dir(state_dir).join(key);
        private_dir(&root.join("blobs"))?;
        private_dir(&root.join("runs"))?;
        let marker = root.join("workspace");
        if !marker.exists() {
            write_atomic(&marker, workspace.as_os_str().as_encoded_bytes())?;
        }
        Ok(CheckpointStore { root, held: AtomicU64::new(UNCOUNTED) })
    }

    /// Where this store lives.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn blob(&self, hash: &str) -> PathBuf {
        let (head, rest) = hash.split_at(2.min(hash.len()));
        self.root.join("blobs").join(head).join(rest)
    }

    /// Keeps `content` and returns its hash; kept once whatever the calls.
    pub(crate) fn put(&self, content: &[u8]) -> io::Result<String> {
        let hash = content_hash(content);
        let path = self.blob(&hash);
        if !path.exists() {
            if let Some(parent) = path.parent() {
                private_dir(parent)?;
            }
            write_atomic(&path, content)?;
            let _ = self.held.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                (held != UNCOUNTED).then(|| held + content.len() as u64)
            });
        }
        Ok(hash)
    }

    /// The content kept under `hash`.
    pub fn get(&self, hash: &str) -> io::Result<Vec<u8>> {
        fs::read(self.blob(hash)).map_err(|e| {
            io::Error::new(e.kind(), format!("checkpoint content {hash} is not in the store ({e}); it was pruned"))
        })
    }

    /// The tree the last scan saw; empty when there is none yet.
    pub(crate) fn load_tree(&self) -> io::Result<Tree> {
        match fs::read(self.root.join("tree.json")) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(io::Error::other),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(Tree::default()),
            Err(e) => Err(e),
        }
    }

    pub(crate) fn save_tree(&self, tree: &Tree) -> io::Result<()> {
        write_atomic(&self.root.join("tree.json"), &serde_json::to_vec(tree).map_err(io::Error::other)?)
    }

    fn run_file(&self, run: &str) -> PathBuf {
        self.root.join("runs").join(format!("{}.jsonl", file_name(run)))
    }

    pub(crate) fn append(&self, set: &ChangeSet) -> io::Result<()> {
        let mut line = serde_json::to_vec(set).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut file = fs::OpenOptions::new().create(true).append(true).mode(0o600).open(self.run_file(&set.run))?;
        file.write_all(&line)
    }

    /// The change sets of `run`, in step order; an error that says so when
    /// the run was pruned or never changed anything here.
    pub fn changes_of(&self, run: &str) -> io::Result<Vec<ChangeSet>> {
        let text = match fs::read_to_string(self.run_file(run)) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let pruned = fs::read_to_string(self.root.join("pruned")).unwrap_or_default();
                let why = if pruned.lines().any(|l| l == run) {
                    format!(
                        "run {run} was pruned from the checkpoints to keep them under [checkpoints] max_bytes; \
                         its changes can no longer be shown or undone"
                    )
                } else {
                    format!("run {run} changed nothing in this workspace (see `clix runs` for the runs here)")
                };
                return Err(io::Error::new(ErrorKind::NotFound, why));
            }
            Err(e) => return Err(e),
        };
        let mut sets: Vec<ChangeSet> = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            // A line cut by a crash is the end of what was kept.
            match serde_json::from_str(line) {
                Ok(set) => sets.push(set),
                Err(_) => break,
            }
        }
        sets.sort_by_key(|s| s.step);
        Ok(sets)
    }

    /// Forgets step `step` of `run` (its changes were declined and undone).
    pub(crate) fn drop_step(&self, run: &str, step: u32) -> io::Result<()> {
        let kept: Vec<ChangeSet> =
            self.changes_of(run).unwrap_or_default().into_iter().filter(|s| s.step != step).collect();
        if kept.is_empty() {
            return match fs::remove_file(self.run_file(run)) {
                Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        let mut text = Vec::new();
        for set in &kept {
            text.extend(serde_json::to_vec(set).map_err(io::Error::other)?);
            text.push(b'\n');
        }
        write_atomic(&self.run_file(run), &text)
    }

    /// The runs that changed something here, the latest first.
    pub fn runs(&self) -> io::Result<Vec<RunInfo>> {
        let mut runs = Vec::new();
        for entry in fs::read_dir(self.root.join("runs"))? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".jsonl") else { continue };
            let Ok(sets) = self.changes_of(stem) else { continue };
            let Some(last) = sets.last() else { continue };
            runs.push(RunInfo { run: last.run.clone(), steps: sets.len(), last_at_ms: last.at_ms });
        }
        runs.sort_by(|a, b| b.last_at_ms.cmp(&a.last_at_ms).then(b.run.cmp(&a.run)));
        Ok(runs)
    }

    /// `last` as the latest run's id; any other name as itself.
    pub fn resolve(&self, run: &str) -> io::Result<String> {
        if run != "last" {
            return Ok(run.to_string());
        }
        self.runs()?.into_iter().next().map(|r| r.run).ok_or_else(|| {
            io::Error::new(ErrorKind::NotFound, "no run has changed this workspace yet: nothing to show or undo")
        })
    }

    fn held_bytes(&self) -> io::Result<u64> {
        let held = self.held.load(Ordering::Relaxed);
        if held != UNCOUNTED {
            return Ok(held);
        }
        let mut total = 0;
        for head in fs::read_dir(self.root.join("blobs"))? {
            for blob in fs::read_dir(head?.path())? {
                total += blob?.metadata()?.len();
            }
        }
        self.held.store(total, Ordering::Relaxed);
        Ok(total)
    }

    /// Past `max_bytes` of contents, removes the oldest runs (never
    /// `current`) and the contents only they needed, until under it.
    pub(crate) fn prune(&self, max_bytes: u64, current: &str) -> io::Result<()> {
        while self.held_bytes()? > max_bytes {
            let runs = self.runs()?;
            let Some(oldest) = runs.iter().rev().find(|r| r.run != current) else { return Ok(()) };
            fs::remove_file(self.run_file(&oldest.run))?;
            let mut pruned =
                fs::OpenOptions::new().create(true).append(true).mode(0o600).open(self.root.join("pruned"))?;
            writeln!(pruned, "{}", oldest.run)?;
            self.collect_garbage()?;
        }
        Ok(())
    }

    /// Removes the contents that no run and not the last tree refer to.
    fn collect_garbage(&self) -> io::Result<()> {
        let mut live = std::collections::HashSet::new();
        let tree = self.load_tree()?;
        live.extend(tree.hashes().map(str::to_string));
        for run in self.runs()? {
            for set in self.changes_of(&run.run)? {
                for change in &set.changes {
                    for node in [&change.before, &change.after].into_iter().flatten() {
                        if let crate::Node::File { hash: Some(h), .. } = node {
                            live.insert(h.clone());
                        }
                    }
                }
            }
        }
        let mut held = 0;
        for head in fs::read_dir(self.root.join("blobs"))? {
            let head = head?;
            let prefix = head.file_name().to_string_lossy().into_owned();
            for blob in fs::read_dir(head.path())? {
                let blob = blob?;
                let hash = format!("{prefix}{}", blob.file_name().to_string_lossy());
                if live.contains(&hash) {
                    held += blob.metadata()?.len();
                } else {
                    fs::remove_file(blob.path())?;
                }
            }
        }
        self.held.store(held, Ordering::Relaxed);
        Ok(())
    }
}
