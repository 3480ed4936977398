//! Copying a file or a folder tree between two folder handles: the
//! workspace and a private staging folder, or the workspace and a `local`
//! environment's folder. Every path goes through a [`Folder`], so a symlink
//! planted on either side is never followed.

use std::io;
use std::path::{Path, PathBuf};

use clix_workspace::{Folder, Kind};

/// The most a transfer copies: per file, and in all. Files are streamed
/// (memory stays flat); the cap keeps a pull from filling the disk.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// What a copy moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moved {
    /// Regular files copied.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Symlinks, FIFOs, sockets and devices left out, by path.
    pub skipped: Vec<PathBuf>,
}

/// Copies `from` (a file or a folder, in `src`) to `to` (in `dst`): a
/// file replaces a file, a folder is merged into a folder (made with its
/// parents when missing). Only regular files and folders are copied.
pub fn copy_tree(src: &Folder, from: &Path, dst: &Folder, to: &Path) -> io::Result<Moved> {
    let mut moved = Moved::default();
    let entry = src.symlink_metadata(from)?;
    match entry.kind {
        Kind::File => {
            if let Some(parent) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
                dst.create_dir(parent, true)?;
            }
            copy_file(src, from, dst, to, &mut moved)?;
        }
        Kind::Dir => copy_dir(src, from, dst, to, &mut moved)?,
        other => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: {} is neither a file nor a folder", from.display(), describe(other)),
            ));
        }
    }
    Ok(moved)
}

fn copy_dir(src: &Folder, from: &Path, dst: &Folder, to: &Path, moved: &mut Moved) -> io::Result<()> {
    match dst.symlink_metadata(to) {
        Ok(e) if e.kind == Kind::Dir => {}
        Ok(e) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: {} is in the way of a folder", to.display(), describe(e.kind)),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => dst.create_dir(to, true)?,
        Err(e) => return Err(e),
    }
    for (name, entry) in src.read_dir(from)? {
        let (from, to) = (from.join(&name), to.join(&name));
        match entry.kind {
            Kind::File => copy_file(src, &from, dst, &to, moved)?,
            Kind::Dir => copy_dir(src, &from, dst, &to, moved)?,
            _ => moved.skipped.push(from),
        }
    }
    Ok(())
}

fn copy_file(src: &Folder, from: &Path, dst: &Folder, to: &Path, moved: &mut Moved) -> io::Result<()> {
    let left = MAX_FILE_BYTES.saturating_sub(moved.bytes);
    let copied = src.copy_to(from, dst, to, left).map_err(|e| {
        if e.kind() != io::ErrorKind::FileTooLarge {
            return e;
        }
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "{}: the copy would pass clip's cap of {} MiB per transfer ({} MiB copied before it); copy a \
                 smaller part (compress it or split it where it is), or fetch it another way",
                from.display(),
                MAX_FILE_BYTES >> 20,
                moved.bytes >> 20
            ),
        )
    })?;
    moved.files += 1;
    moved.bytes += copied;
    Ok(())
}

fn describe(kind: Kind) -> &'static str {
    match kind {
        Kind::File => "a file",
        Kind::Dir => "a folder",
        Kind::Symlink => "a symlink",
        Kind::Fifo => "a FIFO",
        Kind::Socket => "a socket",
        Kind::Device => "a device",
    }
}

/// The last part of a remote or local path, for naming the copy:
/// `/var/log/app/` → `app`; `None` for `/`, `.` or `..`.
pub fn base_name(path: &str) -> Option<String> {
    let trimmed = path.trim_end_matches('/');
    let last = trimmed.rsplit('/').next().unwrap_or("");
    (!last.is_empty() && last != "." && last != ".." && last != "~").then(|| last.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn base_names() {
        for (path, want) in [
            ("/var/log/app/", Some("app")),
            ("x.txt", Some("x.txt")),
            ("a/b", Some("b")),
            ("/", None),
            (".", None),
            ("..", None),
            ("~", None),
        ] {
            assert_eq!(base_name(path).as_deref(), want, "{path}");
        }
    }

    #[test]
    fn trees_copy_files_and_folders_and_leave_links_out() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir_all(a.path().join("d/sub")).unwrap();
        std::fs::write(a.path().join("d/one.txt"), "1\n").unwrap();
        std::fs::write(a.path().join("d/sub/two.txt"), "22\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", a.path().join("d/link")).unwrap();
        let (src, dst) = (Folder::open(a.path()).unwrap(), Folder::open(b.path()).unwrap());
        let moved = copy_tree(&src, Path::new("d"), &dst, Path::new("out/d")).unwrap();
        assert_eq!((moved.files, moved.bytes), (2, 5));
        assert_eq!(moved.skipped, [PathBuf::from("d/link")]);
        assert_eq!(std::fs::read_to_string(b.path().join("out/d/sub/two.txt")).unwrap(), "22\n");
        assert!(!b.path().join("out/d/link").exists());
        let moved = copy_tree(&src, Path::new("d/one.txt"), &dst, Path::new("new/one.txt")).unwrap();
        assert_eq!((moved.files, moved.bytes), (1, 2));
        let err = copy_tree(&src, Path::new("d"), &dst, Path::new("new/one.txt")).unwrap_err();
        assert!(err.to_string().contains("is in the way of a folder"), "{err}");
    }
}
