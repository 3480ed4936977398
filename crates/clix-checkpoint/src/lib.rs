//! Checkpoints of the workspace: what each `run` call changed, kept so a person
//! can see it, approve it and undo it, whoever made the change (a Layer 1
//! command, a program in the sandbox, git, a hub tool).
//!
//! No write hook sees every writer, so a call's changes are found the way `git
//! status` finds them: [`Checkpoints::before_call`] brings the tree up to date
//! (the person's own edits absorbed, so the call's before-images are already
//! kept) and [`Checkpoints::after_call`] compares it again, by size, mode and
//! change time ([`scan`]); only files whose stamp moved are read. The tree is
//! listed whole around an engine's first call; from the second call on, one
//! inotify instance (each folder watched through the handle,
//! `Folder::watch_dir`) names the paths to look at again; a lost event
//! (`IN_Q_OVERFLOW`) or a folder it cannot watch lists the tree whole again.
//! A one-line `clix run` so never sets up inotify, whose watches cost the
//! kernel some 16 ms to tear down when the process ends.
//!
//! This crate owns:
//!
//! - the content store ([`CheckpointStore`], `<state>/checkpoints/<hash of the workspace
//!   path>/`, 0700): contents kept once by SHA-256 (`blobs/`), one change set
//!   per call that changed something appended to `runs/<run>.jsonl` as step N,
//!   pruned past `[checkpoints] max_bytes`, oldest runs first, never the
//!   current one, the pruned runs named;
//! - [`ChangeSet`]: every path a call created, modified or deleted (a file's
//!   hash, size and mode, a link's target, a folder's mode, before and after),
//!   and what was deliberately not kept, named: secret-shaped files (the secret
//!   stores' names at any depth, `.env*`, keys, any file in which
//!   `clix_common::holds_secret` finds a value), files over `max_file_bytes`,
//!   build folders (`node_modules`, `target`, `__pycache__`, `.venv`, …,
//!   watched only at their top), FIFOs, sockets and devices;
//! - `diff` (unified; a binary file, a link, a mode or a repository's `.git` as
//!   one line) and `stat`;
//! - `undo`: the net change of steps N… put back through the handle, each path
//!   only while it is still what the agent left unless forced (the person's
//!   version then kept as `PATH.clix-undo-backup`), removals deepest first,
//!   then creations shallowest first, so a folder swapped for a symlink out of
//!   the workspace is removed, never followed;
//! - [`WorkMode`] (`auto`, `review`, `read-only`), the [`Reviewer`] that
//!   answers `review`, and the `[checkpoints]` settings.
//!
//! It touches workspace paths only through [`clix_workspace::Folder`], copies
//! no secret-shaped file into the store, and knows nothing of the shell, the
//! agent or how results are shown to a model; when a call happens is the
//! engine's to decide.

mod changes;
mod diff;
mod scan;
mod store;
mod undo;
mod watch;

pub use changes::{Change, ChangeSet, NotKept};
pub use diff::{diff, stat};
pub use scan::Node;
pub use store::{CheckpointStore, RunInfo};
pub use undo::{UndoReport, undo};

use std::io;
use std::path::PathBuf;

use clix_workspace::Folder;

/// `[checkpoints]`: whether each call's changes are kept, and how much.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointSettings {
    /// Keep each call's changes (`clix diff`, `clix undo`). Off, `review`
    /// mode cannot start and nothing can be undone.
    pub enabled: bool,
    /// A file bigger than this is named in the change set, not kept.
    pub max_file_bytes: u64,
    /// The store's size past which the oldest runs are pruned.
    pub max_bytes: u64,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings { enabled: true, max_file_bytes: 16 << 20, max_bytes: 2 << 30 }
    }
}

impl clix_common::settings::Validate for CheckpointSettings {
    fn validate(&self) -> Vec<clix_common::settings::BadValue> {
        use clix_common::settings::BadValue;
        let mut bad = Vec::new();
        if self.max_file_bytes == 0 {
            bad.push(BadValue::new("max_file_bytes", "0", "at least 1 (bytes; 16777216 keeps files up to 16 MiB)"));
        }
        if self.max_bytes < self.max_file_bytes {
            bad.push(BadValue::new(
                "max_bytes",
                self.max_bytes,
                "at least max_file_bytes (bytes; 2147483648 keeps up to 2 GiB of contents)",
            ));
        }
        bad
    }
}

/// How much the agent may change (`--mode`, `[agent] mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkMode {
    /// Changes stay, each call checkpointed.
    #[default]
    Auto,
    /// Each call's changes are shown and kept only when the person says yes.
    Review,
    /// Nothing in the workspace can change.
    ReadOnly,
}

impl WorkMode {
    /// `auto`, `review`, `read-only`.
    pub fn name(self) -> &'static str {
        match self {
            WorkMode::Auto => "auto",
            WorkMode::Review => "review",
            WorkMode::ReadOnly => "read-only",
        }
    }
}

impl std::str::FromStr for WorkMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(WorkMode::Auto),
            "review" => Ok(WorkMode::Review),
            "read-only" | "readonly" => Ok(WorkMode::ReadOnly),
            other => Err(format!("{other:?} is not a mode; use read-only, review or auto")),
        }
    }
}

/// The person who says whether a call's changes stay (`review` mode).
pub trait Reviewer: Send + Sync {
    /// Shown `diff` (the call's changes) for `line`; true keeps them.
    fn keep(&self, line: &str, set: &ChangeSet, diff: &str) -> bool;
}

/// The checkpoints of one run over one workspace: call
/// [`Checkpoints::before_call`] before each `run` call and
/// [`Checkpoints::after_call`] after it. The tree is listed whole around
/// the first call; after that, inotify says which paths to look at again.
pub struct Checkpoints {
    store: CheckpointStore,
    folder: Folder,
    settings: CheckpointSettings,
    run: String,
    step: u32,
    /// The tree as the last look left it; `None` until the first call.
    tree: Option<scan::Tree>,
    watch: Option<watch::Watch>,
    /// Whether inotify is set up from the second call on (not when the
    /// tree is to be listed whole every time).
    inotify: bool,
    /// How many times the tree was brought up to date.
    looks: u32,
    /// The tree changed since it was last saved for the next clix.
    unsaved: bool,
    /// Where this run may write (a plan task's places); changes elsewhere
    /// are other writers' and not its steps. `None`: the whole workspace.
    scope: Option<Vec<String>>,
}

impl Checkpoints {
    /// Checkpoints of run `run` over `folder`, kept in `state_dir`'s store.
    pub fn open(
        state_dir: &std::path::Path,
        folder: Folder,
        run: &str,
        settings: CheckpointSettings,
    ) -> io::Result<Self> {
        let store = CheckpointStore::open(state_dir, folder.root())?;
        let mut checkpoints = Checkpoints {
            store,
            folder,
            settings,
            run: String::new(),
            step: 0,
            tree: None,
            watch: None,
            inotify: true,
            looks: 0,
            unsaved: false,
            scope: None,
        };
        checkpoints.set_run(run);
        Ok(checkpoints)
    }

    /// The same checkpoints listing the tree whole at every call, as they
    /// do where the system has no inotify instance left to give (for
    /// measuring, and for checking that both ways see the same).
    pub fn listing_whole(mut self) -> Self {
        self.watch = None;
        self.inotify = false;
        self
    }

    /// Only changes beneath `places` (relative folders) are this run's: a
    /// plan task writes only there, and its siblings' changes are theirs.
    pub fn within(mut self, places: &[std::path::PathBuf]) -> Self {
        self.scope = Some(places.iter().map(|p| p.to_string_lossy().trim_end_matches('/').to_string()).collect());
        self
    }

    /// The run these checkpoints belong to.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// Goes on as run `run` (an agent run that has its own id, or a resumed
    /// one): its steps go on from its last.
    pub fn set_run(&mut self, run: &str) {
        if self.run != run {
            self.run = run.to_string();
            self.step =
                self.store.changes_of(run).map(|sets| sets.iter().map(|s| s.step).max().unwrap_or(0)).unwrap_or(0);
        }
    }

    /// The store these checkpoints write to.
    pub fn store(&self) -> &CheckpointStore {
        &self.store
    }

    fn scanner(&mut self) -> scan::Scanner<'_> {
        scan::Scanner {
            folder: &self.folder,
            store: &self.store,
            settings: &self.settings,
            watch: self.watch.as_mut(),
            not_kept: Vec::new(),
        }
    }

    /// The tree brought up to date: from the watch's paths when it has
    /// them, else listed whole. Returns what changed and what was not kept.
    fn look(&mut self) -> io::Result<(scan::Changed, Vec<NotKept>)> {
        // Past the first call's two looks: a session of many calls, which
        // inotify serves (the listing below, whole this once, watches each folder).
        self.looks += 1;
        let fresh = self.inotify && self.watch.is_none() && self.looks > 2;
        if fresh {
            self.watch = watch::Watch::new();
            self.inotify = self.watch.is_some();
        }
        let touched = match (&self.tree, self.watch.as_mut()) {
            (Some(_), Some(watch)) if !fresh => watch.drain(),
            _ => None,
        };
        // Whether the tree in memory is the one kept on disk.
        let kept = !self.unsaved;
        self.unsaved = true;
        match (touched, self.tree.take()) {
            (Some(touched), Some(mut tree)) => {
                let mut scanner = self.scanner();
                let changed = scanner.update(&mut tree, &touched);
                let not_kept = scanner.not_kept;
                self.tree = Some(tree);
                Ok((changed?, not_kept))
            }
            (_, previous) => {
                let kept = kept || previous.is_none();
                let previous = match previous {
                    Some(tree) => tree,
                    None => self.store.load_tree().unwrap_or_default(),
                };
                if let Some(watch) = self.watch.as_mut() {
                    watch.reset();
                }
                let mut scanner = self.scanner();
                let tree = scanner.full(&previous)?;
                let mut not_kept = scanner.not_kept;
                let (changed, skipped) = scan::differences(&previous, &tree);
                not_kept.extend(skipped);
                // Listed whole: kept for the next clix, which then reads again
                // only what changed; not written again when it is what is kept
                // (around a call that changed nothing, a start after no edits).
                if !(kept && tree == previous) {
                    self.store.save_tree(&tree)?;
                }
                self.unsaved = false;
                self.tree = Some(tree);
                Ok((changed, not_kept))
            }
        }
    }

    /// Brings the tree up to date before a call: what changed since the
    /// last call (the person's edits) is kept, so the call's before-images
    /// are in the store before anything can change them.
    pub fn before_call(&mut self) -> io::Result<()> {
        self.look().map(|_| ())
    }

    /// What the call changed, kept as step N of the run (N counts the
    /// run's calls from 1); an empty change set is not stored.
    pub fn after_call(&mut self, line: &str) -> io::Result<ChangeSet> {
        let (mut changed, mut not_kept) = self.look()?;
        if let Some(places) = &self.scope {
            let ours = |path: &str| places.iter().any(|p| path == p || path.starts_with(&format!("{p}/")));
            changed.retain(|path, _| ours(path));
            not_kept.retain(|n| ours(n.path.trim_end_matches('/')));
        }
        self.step += 1;
        let set = ChangeSet::new(&self.run, self.step, line, changed, not_kept);
        if !set.is_empty() {
            self.store.append(&set)?;
            self.store.prune(self.settings.max_bytes, &self.run)?;
        }
        Ok(set)
    }

    /// Puts the tree of the last call back (a `review` the person declined):
    /// the workspace as it was before it, and the call's change set dropped.
    pub fn decline(&mut self, set: &ChangeSet) -> io::Result<UndoReport> {
        let report = undo::restore(&self.store, &self.folder, std::slice::from_ref(set), false)?;
        self.store.drop_step(&self.run, set.step)?;
        // The restore's own writes are not the next call's.
        self.before_call()?;
        Ok(report)
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        if self.unsaved
            && let Some(tree) = &self.tree
        {
            // Only a cache: the next clix lists the tree whole without it.
            let _ = self.store.save_tree(tree);
        }
    }
}

/// Where the store of checkpoints lives under a state folder.
pub fn store_dir(state_dir: &std::path::Path) -> PathBuf {
    state_dir.join("checkpoints")
}
