//! The tree of a workspace at one moment, listed through the handle.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::time::SystemTime;

use clix_workspace::{Entry, Folder, Kind, SECRET_STORES};
use serde::{Deserialize, Serialize};

use crate::CheckpointSettings;
use crate::changes::NotKept;
use crate::store::CheckpointStore;
use crate::watch::Watch;

/// Folders whose content is not kept: clix's own spills, and tools' build
/// output and caches, which are large and remade by the tools. Each is
/// still listed as a folder, so a change among its top entries is named.
const NOT_KEPT_FOLDERS: &[&str] = &["node_modules", "target", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"];

/// clix's spilled outputs in a workspace, never part of a checkpoint (the
/// rest of `.clix`, a project's policy and skills, is the project's).
const SPILLS: &str = ".clix/out";

/// One path of the tree, as a restore needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Node {
    /// A regular file; `hash` is its content in the store, `None` when it
    /// was not kept (too big, secret-shaped).
    File {
        /// SHA-256 of the content, hex.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hash: Option<String>,
        /// Its size in bytes.
        size: u64,
        /// Permission bits.
        mode: u32,
    },
    /// A symlink and its target as stored.
    Link {
        /// The target, as `readlink` gives it.
        target: String,
    },
    /// A folder.
    Dir {
        /// Permission bits.
        mode: u32,
    },
    /// A folder whose content is not kept (build output): only whether it changed.
    Skipped,
}

impl Node {
    /// Whether this is a file or a link (what a change summary counts).
    pub fn is_file_like(&self) -> bool {
        matches!(self, Node::File { .. } | Node::Link { .. })
    }
}

/// What tells, without reading it, that an entry may have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    size: u64,
    mode: u32,
    modified_ns: i128,
    changed_ns: i128,
}

impl Stamp {
    fn of(entry: &Entry) -> Stamp {
        let ns = |t: SystemTime| match t.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        };
        Stamp { size: entry.len, mode: entry.mode, modified_ns: ns(entry.modified), changed_ns: ns(entry.changed) }
    }
}

/// Every path of the workspace (relative, `/`-separated) with its node and stamp.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Tree {
    entries: BTreeMap<String, (Node, Stamp)>,
}

impl Tree {
    /// The content hashes the tree refers to.
    pub(crate) fn hashes(&self) -> impl Iterator<Item = &str> {
        self.entries.values().filter_map(|(node, _)| match node {
            Node::File { hash: Some(h), .. } => Some(h.as_str()),
            _ => None,
        })
    }
}

/// Whether a file of this name is secret-shaped: the secret stores' names
/// at any depth, `.env` files and private keys. Never copied to the store.
pub(crate) fn is_secret(name: &str) -> bool {
    let store_names = SECRET_STORES.iter().filter_map(|s| s.rsplit('/').next());
    store_names.into_iter().any(|s| s == name)
        || name == ".env"
        || name.starts_with(".env.")
        || name.ends_with(".pem")
        || name.ends_with(".key")
        || name.starts_with("id_rsa")
        || name.starts_with("id_ed25519")
        || name.starts_with("id_ecdsa")
}

/// Each changed path: what it was and what it is (`None`: not there).
pub(crate) type Changed = BTreeMap<String, (Option<Node>, Option<Node>)>;

fn record(changed: &mut Changed, path: &str, before: Option<Node>, after: Option<Node>) {
    changed.entry(path.to_string()).or_insert((before, None)).1 = after;
}

/// What one scan needs besides the tree it updates.
pub(crate) struct Scanner<'a> {
    pub(crate) folder: &'a Folder,
    pub(crate) store: &'a CheckpointStore,
    pub(crate) settings: &'a CheckpointSettings,
    pub(crate) watch: Option<&'a mut Watch>,
    pub(crate) not_kept: Vec<NotKept>,
}

impl Scanner<'_> {
    /// The node of the entry `name` at `path`: the one `old` has when the
    /// stamp is the same, else read (and its content put in the store);
    /// `None` for what is never kept (a FIFO, a device) or vanished.
    fn node_of(&mut self, path: &str, name: &str, entry: &Entry, old: Option<&(Node, Stamp)>) -> Option<Node> {
        let stamp = Stamp::of(entry);
        if let Some((node, was)) = old
            && *was == stamp
            && entry.kind != Kind::Dir
        {
            return Some(node.clone());
        }
        Some(match entry.kind {
            Kind::Dir if NOT_KEPT_FOLDERS.contains(&name) => Node::Skipped,
            Kind::Dir => Node::Dir { mode: entry.mode },
            Kind::Symlink => {
                Node::Link { target: self.folder.read_link(Path::new(path)).ok()?.to_string_lossy().into_owned() }
            }
            Kind::File if is_secret(name) => {
                self.not_kept.push(NotKept { path: path.into(), why: "secret-shaped: never copied".into() });
                Node::File { hash: None, size: entry.len, mode: entry.mode }
            }
            Kind::File if entry.len > self.settings.max_file_bytes => {
                self.not_kept.push(NotKept {
                    path: path.into(),
                    why: format!(
                        "{} bytes, over [checkpoints] max_file_bytes ({})",
                        entry.len, self.settings.max_file_bytes
                    ),
                });
                Node::File { hash: None, size: entry.len, mode: entry.mode }
            }
            Kind::File => {
                // Gone or grown since it was listed: the next look sees it again.
                let content = self.folder.read(Path::new(path), self.settings.max_file_bytes).ok()?;
                // The one rule for secrets in free text: a file holding a
                // token-shaped value is not copied, whatever its name.
                if clix_common::holds_secret(&String::from_utf8_lossy(&content)) {
                    self.not_kept.push(NotKept {
                        path: path.into(),
                        why: "holds a secret-shaped value (a token, a key, a password): never copied".into(),
                    });
                    return Some(Node::File { hash: None, size: entry.len, mode: entry.mode });
                }
                Node::File { hash: Some(self.store.put(&content).ok()?), size: entry.len, mode: entry.mode }
            }
            Kind::Fifo | Kind::Socket | Kind::Device => {
                self.not_kept.push(NotKept { path: path.into(), why: "not a file, folder or link".into() });
                return None;
            }
        })
    }

    /// Lists the folder `under` and everything beneath it into `tree`
    /// (entries whose stamp `previous` has keep their node), watching each
    /// folder; every path put in is recorded in `changed` when given.
    fn walk(
        &mut self,
        under: &str,
        previous: &Tree,
        tree: &mut Tree,
        mut changed: Option<&mut Changed>,
    ) -> io::Result<()> {
        let mut pending = vec![under.to_string()];
        while let Some(dir) = pending.pop() {
            if let Some(watch) = self.watch.as_deref_mut() {
                watch.add(self.folder, &dir);
            }
            let listing = match self.folder.read_dir(Path::new(if dir.is_empty() { "." } else { &dir })) {
                Ok(listing) => listing,
                Err(e) if dir.is_empty() => return Err(e),
                // A folder that vanished or cannot be read: its content stays unseen.
                Err(_) => continue,
            };
            for (name, entry) in listing {
                let path = if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") };
                if path == SPILLS {
                    continue;
                }
                let Some(node) = self.node_of(&path, &name, &entry, previous.entries.get(&path)) else { continue };
                match &node {
                    Node::Dir { .. } => pending.push(path.clone()),
                    Node::Skipped => {
                        if let Some(watch) = self.watch.as_deref_mut() {
                            watch.add(self.folder, &path);
                        }
                    }
                    _ => {}
                }
                if let Some(changed) = changed.as_deref_mut() {
                    record(changed, &path, None, Some(node.clone()));
                }
                tree.entries.insert(path, (node, Stamp::of(&entry)));
            }
        }
        Ok(())
    }

    /// The whole tree as it is now.
    pub(crate) fn full(&mut self, previous: &Tree) -> io::Result<Tree> {
        let mut tree = Tree::default();
        self.walk("", previous, &mut tree, None)?;
        Ok(tree)
    }

    /// Brings `tree` up to date at the `touched` paths (and beneath those
    /// that are folders), and returns what changed there.
    pub(crate) fn update(
        &mut self,
        tree: &mut Tree,
        touched: &std::collections::BTreeSet<String>,
    ) -> io::Result<Changed> {
        let mut changed = Changed::new();
        for path in touched {
            if path == SPILLS || path.starts_with(".clix/out/") {
                continue;
            }
            if let Some(skipped) = skipped_ancestor(tree, path) {
                self.not_kept.push(NotKept { path: format!("{skipped}/"), why: "build output: not kept".into() });
                continue;
            }
            let old = tree.entries.get(path).cloned();
            let name = path.rsplit('/').next().unwrap_or(path);
            let now = self.folder.symlink_metadata(Path::new(path)).ok();
            let was_dir = matches!(old, Some((Node::Dir { .. }, _)));
            match now {
                None => {
                    remove(tree, path, &mut changed);
                }
                Some(entry) if entry.kind == Kind::Dir && !NOT_KEPT_FOLDERS.contains(&name) && was_dir => {
                    let node = Node::Dir { mode: entry.mode };
                    if old.as_ref().map(|(n, _)| n) != Some(&node) {
                        record(&mut changed, path, old.map(|(n, _)| n), Some(node.clone()));
                    }
                    tree.entries.insert(path.clone(), (node, Stamp::of(&entry)));
                }
                Some(entry) => {
                    if was_dir || old.is_none() {
                        remove(tree, path, &mut changed);
                    }
                    let Some(node) = self.node_of(path, name, &entry, old.as_ref()) else {
                        remove(tree, path, &mut changed);
                        continue;
                    };
                    let before = old.as_ref().filter(|_| !was_dir).map(|(n, _)| n.clone());
                    if before.as_ref() != Some(&node) {
                        record(&mut changed, path, before, Some(node.clone()));
                    }
                    tree.entries.insert(path.clone(), (node.clone(), Stamp::of(&entry)));
                    match node {
                        Node::Dir { .. } => {
                            let mut fresh = Tree::default();
                            self.walk(path, &Tree::default(), &mut fresh, Some(&mut changed))?;
                            tree.entries.extend(fresh.entries);
                        }
                        Node::Skipped => {
                            if let Some(watch) = self.watch.as_deref_mut() {
                                watch.add(self.folder, path);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        // A build folder made, removed or changed is named, not kept.
        let not_kept = &mut self.not_kept;
        changed.retain(|path, (before, after)| {
            if matches!(before, Some(Node::Skipped)) || matches!(after, Some(Node::Skipped)) {
                not_kept.push(NotKept { path: format!("{path}/"), why: "build output: not kept".into() });
                return false;
            }
            before != after
        });
        Ok(changed)
    }
}

/// The build folder `path` lies in, if any.
fn skipped_ancestor<'t>(tree: &'t Tree, path: &str) -> Option<&'t str> {
    let mut at = 0;
    while let Some(slash) = path[at..].find('/') {
        let dir = &path[..at + slash];
        if let Some((key, (Node::Skipped, _))) = tree.entries.get_key_value(dir) {
            return Some(key.as_str());
        }
        at += slash + 1;
    }
    None
}

/// Takes `path` and everything beneath it out of `tree`, recording each.
fn remove(tree: &mut Tree, path: &str, changed: &mut Changed) {
    let below = format!("{path}/");
    let gone: Vec<String> = std::iter::once(path.to_string())
        .filter(|p| tree.entries.contains_key(p))
        .chain(tree.entries.range(below.clone()..).take_while(|(k, _)| k.starts_with(&below)).map(|(k, _)| k.clone()))
        .collect();
    for key in gone {
        if let Some((node, _)) = tree.entries.remove(&key) {
            record(changed, &key, Some(node), None);
        }
    }
}

/// What differs between two whole trees, and the build folders that changed.
pub(crate) fn differences(before: &Tree, after: &Tree) -> (Changed, Vec<NotKept>) {
    let mut changed = Changed::new();
    let mut not_kept = Vec::new();
    for (path, (node, stamp)) in &after.entries {
        match before.entries.get(path) {
            Some((Node::Skipped, was)) if *node == Node::Skipped => {
                if was != stamp {
                    not_kept.push(NotKept { path: format!("{path}/"), why: "build output: not kept".into() });
                }
            }
            None if *node == Node::Skipped => {
                not_kept.push(NotKept { path: format!("{path}/"), why: "build output: not kept".into() })
            }
            Some((old, _)) if old == node => {}
            old => record(&mut changed, path, old.map(|(n, _)| n.clone()), Some(node.clone())),
        }
    }
    for (path, (node, _)) in &before.entries {
        if !after.entries.contains_key(path) && *node != Node::Skipped {
            record(&mut changed, path, Some(node.clone()), None);
        }
    }
    (changed, not_kept)
}
