//! A folder's whole state, to compare a tree with itself before and after.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// One path's state: its bytes (empty for a folder or a link), its
/// permission bits (0 for a link) and a link's target.
pub type PathState = (Vec<u8>, u32, Option<String>);

/// Every path under `root` (relative), except clix's spills (`.clix/out`,
/// and `.clix` itself while it holds nothing else), with its bytes, mode
/// and link target, never following a link. Panics on a folder it cannot
/// read: a test's tree is its own.
pub fn tree_picture(root: &Path) -> BTreeMap<String, PathState> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path();
            let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
            if rel == ".clix/out" || (rel == ".clix" && only_spills(&path)) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
                out.insert(rel, (Vec::new(), 0, Some(target.to_string_lossy().into_owned())));
            } else if meta.is_dir() {
                out.insert(rel, (Vec::new(), mode, None));
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
                out.insert(rel, (bytes, mode, None));
            }
        }
    }
    out
}

/// Whether clix's folder holds only what clix puts there itself.
fn only_spills(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .is_ok_and(|entries| entries.flatten().all(|e| matches!(e.file_name().to_str(), Some("out" | ".gitignore"))))
}
