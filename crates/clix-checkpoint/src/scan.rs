//! The tree of a workspace at one moment, listed through the handle.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::time::SystemTime;

use clix_workspace::{Entry, Folder, Kind, SECRET_STORES};
use serde::{Deserialize, Serialize};

use crate::CheckpointSettings;
use crate::changes::NotKept;
use crate::store::Store;

/// Folders whose content is not kept: clix's own spills, and tools' build
/// output and caches, which are large and remade by the tools. Each is
/// still listed as a folder, so a change among its top entries is named.
const NOT_KEPT_FOLDERS: &[&str] = &["node_modules", "target", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"];

/// clix's own folder in a workspace (spilled outputs), never part of a checkpoint.
const CLIX_FOLDER: &str = ".clix";

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
pub struct Tree {
    entries: BTreeMap<String, (Node, Stamp)>,
}

impl Tree {
    /// The node at `path`, if the tree has one.
    pub fn node(&self, path: &str) -> Option<&Node> {
        self.entries.get(path).map(|(node, _)| node)
    }

    /// The stamp of `path`, if the tree has it.
    pub(crate) fn stamp(&self, path: &str) -> Option<Stamp> {
        self.entries.get(path).map(|(_, stamp)| *stamp)
    }

    /// Every path with its node, in path order.
    pub fn nodes(&self) -> impl Iterator<Item = (&String, &Node)> {
        self.entries.iter().map(|(path, (node, _))| (path, node))
    }

    /// The content hashes the tree refers to.
    pub(crate) fn hashes(&self) -> impl Iterator<Item = &str> {
        self.entries.values().filter_map(|(node, _)| match node {
            Node::File { hash: Some(h), .. } => Some(h.as_str()),
            _ => None,
        })
    }

    /// How many paths it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// It holds no path.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
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

/// Lists `folder` as it is now. Entries whose stamp is the one `previous`
/// has keep their node; others are read, and their content put in
/// `store`. Returns the tree and what was seen but not kept.
pub(crate) fn scan(
    folder: &Folder,
    previous: &Tree,
    store: &Store,
    settings: &CheckpointSettings,
) -> io::Result<(Tree, Vec<NotKept>)> {
    let mut tree = Tree::default();
    let mut not_kept = Vec::new();
    let mut pending = vec![String::new()];
    while let Some(dir) = pending.pop() {
        let listing = match folder.read_dir(Path::new(if dir.is_empty() { "." } else { &dir })) {
            Ok(listing) => listing,
            // A folder that vanished or cannot be read: its content stays unseen.
            Err(e) if dir.is_empty() => return Err(e),
            Err(_) => continue,
        };
        for (name, entry) in listing {
            if dir.is_empty() && name == CLIX_FOLDER {
                continue;
            }
            let path = if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") };
            let stamp = Stamp::of(&entry);
            if let Some((node, old)) = previous.entries.get(&path)
                && *old == stamp
                && entry.kind != Kind::Dir
            {
                tree.entries.insert(path, (node.clone(), stamp));
                continue;
            }
            let node = match entry.kind {
                Kind::Dir if NOT_KEPT_FOLDERS.contains(&name.as_str()) => Node::Skipped,
                Kind::Dir => {
                    pending.push(path.clone());
                    Node::Dir { mode: entry.mode }
                }
                Kind::Symlink => match folder.read_link(Path::new(&path)) {
                    Ok(target) => Node::Link { target: target.to_string_lossy().into_owned() },
                    Err(_) => continue,
                },
                Kind::File if is_secret(&name) => {
                    not_kept.push(NotKept { path: path.clone(), why: "secret-shaped: never copied".into() });
                    Node::File { hash: None, size: entry.len, mode: entry.mode }
                }
                Kind::File if entry.len > settings.max_file_bytes => {
                    not_kept.push(NotKept {
                        path: path.clone(),
                        why: format!(
                            "{} bytes, over [checkpoints] max_file_bytes ({})",
                            entry.len, settings.max_file_bytes
                        ),
                    });
                    Node::File { hash: None, size: entry.len, mode: entry.mode }
                }
                Kind::File => match folder.read(Path::new(&path), settings.max_file_bytes) {
                    Ok(content) => Node::File { hash: Some(store.put(&content)?), size: entry.len, mode: entry.mode },
                    // Gone or grown since it was listed: the next scan sees it again.
                    Err(_) => continue,
                },
                Kind::Fifo | Kind::Socket | Kind::Device => {
                    not_kept.push(NotKept { path: path.clone(), why: "not a file, folder or link".into() });
                    continue;
                }
            };
            tree.entries.insert(path, (node, stamp));
        }
    }
    Ok((tree, not_kept))
}
