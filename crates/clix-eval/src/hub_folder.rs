//! A task's hub folder. A suite is untrusted input (a cloned repository's
//! `evals/`), so its hub folder is read through a handle on it: a symlink
//! in it (to `~/.ssh`, say) is skipped, never followed, as are FIFOs and
//! devices. Its files are copied into each attempt's workspace as
//! `.clix/hub` (whose tools get no `[hub.env]` values, no network and no
//! program outside the workspace and system folders), and they are part
//! of the task's digest, so shards of one run prove they ran the same tools.

use std::io;
use std::path::{Path, PathBuf};

use clix_workspace::{Folder, Kind};

/// Most bytes of one file of a task's hub folder.
const MAX_FILE: u64 = 16 << 20;

/// One regular file of the folder.
pub(crate) struct HubFile {
    /// Its path inside the folder.
    pub(crate) path: PathBuf,
    /// Its permission bits.
    pub(crate) mode: u32,
    pub(crate) bytes: Vec<u8>,
}

/// The folder's regular files, in path order.
pub(crate) fn files(dir: &Path) -> io::Result<Vec<HubFile>> {
    let folder = Folder::open(dir)?;
    let mut found = Vec::new();
    collect(&folder, Path::new(""), &mut found)?;
    Ok(found)
}

fn collect(folder: &Folder, rel: &Path, found: &mut Vec<HubFile>) -> io::Result<()> {
    for (name, entry) in folder.read_dir(rel)? {
        let path = rel.join(&name);
        match entry.kind {
            Kind::Dir => collect(folder, &path, found)?,
            Kind::File => found.push(HubFile { bytes: folder.read(&path, MAX_FILE)?, path, mode: entry.mode }),
            _ => {}
        }
    }
    Ok(())
}

/// SHA-256 (hex) of the folder's files: each one's path, mode and bytes.
pub(crate) fn digest(dir: &Path) -> io::Result<String> {
    let mut all = Vec::new();
    for file in files(dir)? {
        all.extend_from_slice(file.path.to_string_lossy().as_bytes());
        all.extend_from_slice(format!("\0{:o}\0{}\0", file.mode & 0o777, file.bytes.len()).as_bytes());
        all.extend_from_slice(&file.bytes);
    }
    Ok(clix_common::sha256_hex(&all))
}
