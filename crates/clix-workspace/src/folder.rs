//! [`Folder`]: a directory handle through which every access stays inside.

use std::io::{self, ErrorKind, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt, Permissions, PermissionsExt};

/// Mode bits clix never sets on a workspace file: a setuid or setgid file
/// left in a workspace would run with its owner's rights for whoever runs it.
const PRIVILEGE_BITS: u32 = 0o6000;

/// What kind of entry a path names, without following a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file: the only kind clix reads or writes.
    File,
    /// A folder.
    Dir,
    /// A symlink, reported as itself: clix never follows a final link.
    Symlink,
    /// A named pipe: opening it for reading would block, so clix refuses it.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character or block device.
    Device,
}

impl Kind {
    fn of_mode(mode: u32) -> Self {
        match mode & libc::S_IFMT {
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            libc::S_IFIFO => Kind::Fifo,
            libc::S_IFSOCK => Kind::Socket,
            libc::S_IFCHR | libc::S_IFBLK => Kind::Device,
            _ => Kind::File,
        }
    }

    /// How an error names this kind: "a FIFO", "a device".
    fn described(self) -> &'static str {
        match self {
            Kind::File => "a regular file",
            Kind::Dir => "a folder",
            Kind::Symlink => "a symlink",
            Kind::Fifo => "a FIFO",
            Kind::Socket => "a socket",
            Kind::Device => "a device",
        }
    }
}

/// The facts about an entry that callers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// What the entry is, the final symlink not followed.
    pub kind: Kind,
    /// Size in bytes (of the link itself for a symlink).
    pub len: u64,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    /// Last modification time, for listings and cache keys.
    pub modified: SystemTime,
    /// Last status change (ctime): set by the kernel on every write, chmod
    /// or rename, and unlike `modified` never to a time a user chooses
    /// (`touch -d`, `cp -p`), so a cache key holding it sees a file replaced.
    pub changed: SystemTime,
}

impl Entry {
    fn from_metadata(m: &cap_std::fs::Metadata) -> Self {
        Entry {
            kind: Kind::of_mode(m.mode()),
            len: m.len(),
            mode: m.mode() & 0o7777,
            modified: since_epoch(m.mtime(), m.mtime_nsec()),
            changed: since_epoch(m.ctime(), m.ctime_nsec()),
        }
    }
}

/// A stat time (seconds, which may be negative, and nanoseconds) as a `SystemTime`.
fn since_epoch(secs: i64, nanos: i64) -> SystemTime {
    let span = Duration::new(secs.unsigned_abs(), u32::try_from(nanos).unwrap_or(0));
    if secs >= 0 { SystemTime::UNIX_EPOCH + span } else { SystemTime::UNIX_EPOCH - span }
}

/// A folder opened once as a capability: every path given to it is resolved
/// beneath it by the kernel (`openat2` with `RESOLVE_BENEATH`), so `..`,
/// absolute paths and symlinks, even ones swapped in during the call, can
/// never reach outside. A final symlink is never followed: callers that want
/// POSIX link semantics resolve links themselves (bashkit does, in its VFS).
///
/// Reads are of regular files only, opened without blocking, so a FIFO or a
/// device planted in the folder is an error, never a hang.
///
/// Paths may be relative to the folder or absolute below its host path.
#[derive(Clone)]
pub struct Folder {
    root: PathBuf,
    dir: Arc<Dir>,
    /// `None`: the whole folder is writable. `Some`: only these subfolders
    /// are (see [`Folder::confined`]).
    writable: Option<Arc<[Writable]>>,
    /// Why a write outside the writable places is refused, when the reason
    /// is not a plan's namespace (see [`Folder::read_only`]).
    read_only_because: Option<Arc<str>>,
    /// `Some`: secret stores are hidden (a workspace's handle), and this is
    /// where the folder lies in the workspace, so that `gh` inside a handle
    /// on `.config` is known for `.config/gh`.
    hiding_at: Option<PathBuf>,
}

/// A subfolder a confined [`Folder`] may write in, with its own handle:
/// writes resolve beneath it, so a symlink inside that leads out of it (to
/// a sibling's folder) is refused by the kernel, not by a path check.
#[derive(Clone)]
struct Writable {
    rel: PathBuf,
    folder: Folder,
}

impl std::fmt::Debug for Folder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let writable: Option<Vec<&Path>> = self.writable.as_ref().map(|w| w.iter().map(|w| w.rel.as_path()).collect());
        f.debug_struct("Folder").field("root", &self.root).field("writable", &writable).finish()
    }
}

impl Folder {
    /// Opens `path` as a capability. Use [`crate::Workspace::open`] for a
    /// workspace: it also checks that the folder may be one.
    pub fn open(path: &Path) -> io::Result<Self> {
        let root = std::fs::canonicalize(path)?;
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority())?;
        Ok(Folder { root, dir: Arc::new(dir), writable: None, read_only_because: None, hiding_at: None })
    }

    /// The same folder with every secret store in it, at any depth, hidden
    /// ([`crate::secret_store_in`]): not listed, not found, never read nor
    /// written. Paths are judged as given, after `..` is applied; the shell
    /// resolves symlinks itself before it asks, so a link to a store is
    /// judged by where it leads.
    pub(crate) fn hiding_secret_stores(self) -> Folder {
        Folder { hiding_at: Some(PathBuf::from(".")), ..self }
    }

    /// An error when `rel` is or lies in a hidden secret store.
    fn refuse_hidden(&self, rel: &Path, shown: &Path) -> io::Result<()> {
        let Some(at) = &self.hiding_at else { return Ok(()) };
        match crate::secrets::secret_store_in(&at.join(rel)) {
            Some(store) => Err(io::Error::new(
                ErrorKind::NotFound,
                format!("{}: hidden from agents: {store} is a secret store", shown.display()),
            )),
            None => Ok(()),
        }
    }

    /// Whether anything is at `rel`, hidden or not: for clix's own notice of
    /// what it hides.
    pub(crate) fn holds_unhidden(&self, rel: &Path) -> bool {
        self.dir.symlink_metadata(rel).is_ok()
    }

    /// A handle on the folder at `rel` beneath this one, hiding what this one hides.
    fn sub(&self, rel: &Path, dir: Dir) -> Folder {
        Folder {
            root: normalize(&self.root.join(rel)),
            dir: Arc::new(dir),
            writable: None,
            read_only_because: None,
            hiding_at: self.hiding_at.as_ref().map(|at| at.join(rel)),
        }
    }

    /// The same folder, readable everywhere but writable only beneath
    /// `writable` (paths relative to it): an agent's namespace in a plan.
    /// Each must already be a folder reached through folders only (no
    /// symlink on the way), and each gets its own handle. A write anywhere
    /// else is a `ReadOnlyFilesystem` error naming where writes may go.
    pub fn confined(&self, writable: &[PathBuf]) -> io::Result<Folder> {
        let mut handles = Vec::new();
        for path in writable {
            let rel = self.relative(path)?;
            if rel == Path::new(".") {
                return Err(io::Error::new(
                    ErrorKind::InvalidInput,
                    format!("{}: the whole folder cannot be a writable place of a confined one", path.display()),
                ));
            }
            let mut walked = PathBuf::new();
            for part in rel.components() {
                walked.push(part);
                let kind = self.symlink_metadata(&walked)?.kind;
                if kind != Kind::Dir {
                    return Err(io::Error::new(
                        ErrorKind::InvalidInput,
                        format!(
                            "{}: {} is {}, not a folder; a writable place must be a folder",
                            path.display(),
                            walked.display(),
                            kind.described()
                        ),
                    ));
                }
            }
            let sub = self.dir.open_dir(&rel).map_err(|e| explain(e, path))?;
            handles.push(Writable { folder: self.sub(&rel, sub), rel });
        }
        // The longest prefix wins, so a nested writable place is found first.
        handles.sort_by_key(|w| std::cmp::Reverse(w.rel.components().count()));
        Ok(Folder { writable: Some(handles.into()), ..self.clone() })
    }

    /// The same folder, writable only beneath `writable` (clix's own
    /// places), every other write refused with `because` (a session's
    /// read-only mode).
    pub fn read_only(&self, writable: &[PathBuf], because: &str) -> io::Result<Folder> {
        Ok(Folder { read_only_because: Some(because.into()), ..self.confined(writable)? })
    }

    /// The places this folder may write in, when it is confined.
    pub fn writable(&self) -> Option<Vec<PathBuf>> {
        self.writable.as_ref().map(|w| w.iter().map(|w| w.rel.clone()).collect())
    }

    /// The handle a write of `path` goes through and the path relative to
    /// it: this folder, or the confined place that holds `path`.
    fn for_write(&self, path: &Path) -> io::Result<(&Folder, PathBuf)> {
        let rel = self.relative(path)?;
        if crate::host_run::runs_on_host(&rel) {
            return Err(crate::host_run::refused(path));
        }
        self.refuse_hidden(&rel, path)?;
        let Some(writable) = &self.writable else {
            return Ok((self, rel));
        };
        for place in writable.iter() {
            if let Ok(rest) = rel.strip_prefix(&place.rel) {
                let rest = if rest.as_os_str().is_empty() { PathBuf::from(".") } else { rest.to_path_buf() };
                return Ok((&place.folder, rest));
            }
        }
        if let Some(because) = &self.read_only_because {
            return Err(io::Error::new(ErrorKind::ReadOnlyFilesystem, format!("{}: {because}", path.display())));
        }
        let places: Vec<String> = writable.iter().map(|w| format!("{}/", w.rel.display())).collect();
        Err(io::Error::new(
            ErrorKind::ReadOnlyFilesystem,
            format!("{}: read-only here; this agent may write only in {}", path.display(), places.join(", ")),
        ))
    }

    /// The folder at `path` inside this one, as a capability of its own.
    /// Its [`root`](Self::root) is the lexical path below this folder's root
    /// (symlinks inside may make the real place differ, never lie outside).
    pub fn open_dir(&self, path: &Path) -> io::Result<Folder> {
        let rel = self.relative(path)?;
        self.refuse_hidden(&rel, path)?;
        let dir = self.dir.open_dir(&rel).map_err(|e| explain(e, path))?;
        let Some(places) = &self.writable else {
            return Ok(self.sub(&rel, dir));
        };
        // A subfolder of a confined folder is as writable as its paths were:
        // wholly when it lies in a writable place (opened through that
        // place's handle), else in the places beneath it.
        if let Some(place) = places.iter().find(|p| rel.starts_with(&p.rel)) {
            let rest = rel.strip_prefix(&place.rel).unwrap_or(Path::new("."));
            let rest = if rest.as_os_str().is_empty() { Path::new(".") } else { rest };
            return place.folder.open_dir(rest);
        }
        let below = places
            .iter()
            .filter_map(|p| {
                let rest = p.rel.strip_prefix(&rel).ok().filter(|_| rel != Path::new("."))?;
                Some(Writable { rel: rest.to_path_buf(), folder: p.folder.clone() })
            })
            .collect::<Vec<_>>();
        let below = if rel == Path::new(".") { places.to_vec() } else { below };
        Ok(Folder {
            writable: Some(below.into()),
            read_only_because: self.read_only_because.clone(),
            ..self.sub(&rel, dir)
        })
    }

    /// Bytes free for an unprivileged writer on the folder's filesystem
    /// (`fstatvfs` on the handle).
    pub fn free_bytes(&self) -> io::Result<u64> {
        use std::os::fd::{AsFd, AsRawFd};
        // SAFETY: an all-zero statvfs is a valid value for fstatvfs to fill.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: fstatvfs fills the struct we own, on the handle's own fd.
        if unsafe { libc::fstatvfs(self.dir.as_fd().as_raw_fd(), &mut stat) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
    }

    /// Adds an inotify watch for `mask` on the folder `path` to the inotify
    /// instance `inotify`, and returns its watch descriptor. The folder is
    /// opened through the handle without following a symlink, and watched
    /// by that open file, so no path the workspace controls is resolved
    /// outside it.
    pub fn watch_dir(&self, inotify: std::os::fd::BorrowedFd<'_>, path: &Path, mask: u32) -> io::Result<i32> {
        use cap_fs_ext::DirExt;
        use std::os::fd::{AsFd, AsRawFd};
        let rel = self.relative(path)?;
        let dir = if rel == Path::new(".") {
            self.dir.try_clone()?
        } else {
            self.dir.open_dir_nofollow(&rel).map_err(|e| explain(e, path))?
        };
        let by_fd = std::ffi::CString::new(format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd()))
            .map_err(|e| io::Error::new(ErrorKind::InvalidInput, e))?;
        // SAFETY: both fds are open for the call, and by_fd is a NUL-terminated string we own.
        let wd = unsafe { libc::inotify_add_watch(inotify.as_raw_fd(), by_fd.as_ptr(), mask) };
        if wd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(wd)
    }

    /// The folder's canonical host path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` relative to the folder, or an error when it names a place
    /// outside it. `..` is resolved lexically first, as the shell does.
    pub fn relative(&self, path: &Path) -> io::Result<PathBuf> {
        let absolute = if path.is_absolute() { normalize(path) } else { normalize(&self.root.join(path)) };
        match absolute.strip_prefix(&self.root) {
            Ok(rest) if rest.as_os_str().is_empty() => Ok(PathBuf::from(".")),
            Ok(rest) => Ok(rest.to_path_buf()),
            Err(_) => Err(outside(path)),
        }
    }

    /// The whole content of the regular file at `path`, at most `limit`
    /// bytes; a bigger file is an error that gives its size.
    pub fn read(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        let rel = self.relative(path)?;
        let mut options = OpenOptions::new();
        options.read(true);
        let file = self.open_regular(&rel, path, &options)?;
        let len = file.metadata()?.len();
        if len > limit {
            return Err(io::Error::new(
                ErrorKind::FileTooLarge,
                format!("{}: {len} bytes is more than the {limit} clix reads", path.display()),
            ));
        }
        let mut content = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        // A file that grows while being read still stops at the limit.
        file.take(limit).read_to_end(&mut content)?;
        Ok(content)
    }

    /// Replaces (or creates) the regular file at `path` with `content`.
    pub fn write(&self, path: &Path, content: &[u8]) -> io::Result<()> {
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        self.write_with(path, content, &options)
    }

    /// Creates the regular file at `path` with `content`. Anything already
    /// there, a symlink included, is an `AlreadyExists` error and is left as
    /// it is. A failed write leaves no partial file.
    pub fn create_new(&self, path: &Path, content: &[u8]) -> io::Result<()> {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let written = self.write_with(path, content, &options);
        if let Err(e) = &written
            && e.kind() != ErrorKind::AlreadyExists
        {
            let _ = self.remove(path, false);
        }
        written
    }

    /// Appends `content` to the regular file at `path`, creating it.
    pub fn append(&self, path: &Path, content: &[u8]) -> io::Result<()> {
        let mut options = OpenOptions::new();
        options.append(true).create(true);
        self.write_with(path, content, &options)
    }

    fn write_with(&self, path: &Path, content: &[u8], options: &OpenOptions) -> io::Result<()> {
        let (folder, rel) = self.for_write(path)?;
        let mut file = folder.open_regular(&rel, path, options)?;
        file.write_all(content)
    }

    /// Opens `rel` without following a final symlink and without blocking,
    /// then insists on a regular file.
    fn open_regular(&self, rel: &Path, shown: &Path, options: &OpenOptions) -> io::Result<cap_std::fs::File> {
        self.refuse_hidden(rel, shown)?;
        let mut options = options.clone();
        options.follow(FollowSymlinks::No).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        let file = self.dir.open_with(rel, &options).map_err(|e| explain(e, shown))?;
        let kind = Kind::of_mode(file.metadata()?.mode());
        if kind != Kind::File {
            return Err(not_regular(shown, kind));
        }
        Ok(file)
    }

    /// The entry at `path` itself (a final symlink is described, not followed).
    pub fn symlink_metadata(&self, path: &Path) -> io::Result<Entry> {
        let rel = self.relative(path)?;
        self.refuse_hidden(&rel, path)?;
        self.dir.symlink_metadata(&rel).map(|m| Entry::from_metadata(&m)).map_err(|e| explain(e, path))
    }

    /// The entry at `path`, following symlinks as long as they stay inside.
    pub fn metadata(&self, path: &Path) -> io::Result<Entry> {
        let rel = self.relative(path)?;
        self.refuse_hidden(&rel, path)?;
        self.dir.metadata(&rel).map(|m| Entry::from_metadata(&m)).map_err(|e| explain(e, path))
    }

    /// Whether anything (a dangling symlink included) is at `path`.
    pub fn exists(&self, path: &Path) -> io::Result<bool> {
        match self.symlink_metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The folder's entries, each described without following symlinks.
    pub fn read_dir(&self, path: &Path) -> io::Result<Vec<(String, Entry)>> {
        let rel = self.relative(path)?;
        self.refuse_hidden(&rel, path)?;
        // Only a dot-name, or a name below one, can be (in) a store.
        let below_dot = self
            .hiding_at
            .as_ref()
            .is_some_and(|at| crate::secrets::has_dot_name(at) || crate::secrets::has_dot_name(&rel));
        let mut entries = Vec::new();
        for entry in self.dir.read_dir(&rel).map_err(|e| explain(e, path))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if (below_dot || name.starts_with('.')) && self.refuse_hidden(&rel.join(&name), path).is_err() {
                continue;
            }
            // The entry can vanish between the listing and its stat.
            if let Ok(m) = entry.metadata() {
                entries.push((name, Entry::from_metadata(&m)));
            }
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(entries)
    }

    /// Whether the tree under `path` holds at least `entries` entries
    /// (files, folders and links below it), counted from the listings alone
    /// (no stat per entry, as `find` reads `d_type`), never following a
    /// symlink, and stopping as soon as the count is reached. Folders that
    /// cannot be listed count as empty; a path outside holds nothing.
    pub fn holds_at_least(&self, path: &Path, entries: usize) -> bool {
        let Ok(rel) = self.relative(path) else { return false };
        let mut pending = vec![rel];
        let mut seen = 0usize;
        while let Some(dir) = pending.pop() {
            let Ok(listing) = self.dir.read_dir(&dir) else { continue };
            for entry in listing.flatten() {
                seen += 1;
                if seen >= entries {
                    return true;
                }
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    pending.push(dir.join(entry.file_name()));
                }
            }
        }
        false
    }

    /// Creates the folder `path` beneath this one; `recursive` makes the
    /// missing parents too, as `mkdir -p`.
    pub fn create_dir(&self, path: &Path, recursive: bool) -> io::Result<()> {
        let (folder, rel) = self.for_write(path)?;
        let made = if recursive { folder.dir.create_dir_all(&rel) } else { folder.dir.create_dir(&rel) };
        made.map_err(|e| explain(e, path))
    }

    /// Removes the entry at `path`; a symlink is removed, never its target.
    pub fn remove(&self, path: &Path, recursive: bool) -> io::Result<()> {
        let (folder, rel) = self.for_write(path)?;
        let removed = match folder.symlink_metadata(&rel)?.kind {
            Kind::Dir if recursive => folder.dir.remove_dir_all(&rel),
            Kind::Dir => folder.dir.remove_dir(&rel),
            _ => folder.dir.remove_file(&rel),
        };
        removed.map_err(|e| explain(e, path))
    }

    /// Renames `from` to `to`, both beneath this folder; a symlink is
    /// renamed as itself.
    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let ((from_dir, from_rel), (to_dir, to_rel)) = (self.for_write(from)?, self.for_write(to)?);
        // A repository's `.git` moved away could be replaced by one whose
        // config and hooks were written elsewhere.
        for (rel, shown) in [(&from_rel, from), (&to_rel, to)] {
            if rel.file_name().is_some_and(|n| n == ".git") {
                return Err(crate::host_run::refused(shown));
            }
        }
        from_dir.dir.rename(&from_rel, &to_dir.dir, &to_rel).map_err(|e| explain(e, from))
    }

    /// Copies the regular file `from` to `to`, with its permission bits
    /// (never setuid or setgid).
    pub fn copy(&self, from: &Path, to: &Path, limit: u64) -> io::Result<()> {
        self.copy_to(from, self, to, limit).map(|_| ())
    }

    /// Copies the regular file `from` to `to` beneath `dst` (another folder
    /// or this one), with its permission bits (never setuid or setgid),
    /// streamed: memory stays flat whatever the size. A file bigger than
    /// `limit` is an error that gives its size, and nothing is written.
    /// Returns the bytes copied.
    pub fn copy_to(&self, from: &Path, dst: &Folder, to: &Path, limit: u64) -> io::Result<u64> {
        let rel = self.relative(from)?;
        let mut options = OpenOptions::new();
        options.read(true);
        let source = self.open_regular(&rel, from, &options)?;
        let meta = source.metadata()?;
        if meta.len() > limit {
            return Err(io::Error::new(
                ErrorKind::FileTooLarge,
                format!("{}: {} bytes is more than the {limit} clix copies", from.display(), meta.len()),
            ));
        }
        let (folder, rel_to) = dst.for_write(to)?;
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        let mut target = folder.open_regular(&rel_to, to, &options)?.into_std();
        // A file that grows while being copied still stops at the limit.
        let copied = io::copy(&mut source.into_std().take(limit), &mut target)?;
        dst.chmod(to, meta.mode() & 0o7777)?;
        Ok(copied)
    }

    /// Creates a symlink at `link`. The target is stored as given; an
    /// absolute target is refused, since it would mean one place to the
    /// shell and another to the sandbox's programs.
    pub fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        let (folder, rel) = self.for_write(link)?;
        // A link into a `.git` folder, or named `.git`, would reach its config and hooks by another name.
        if crate::host_run::names_a_git_folder(target) || crate::host_run::names_a_git_folder(&rel) {
            return Err(crate::host_run::refused(link));
        }
        folder.dir.symlink(target, &rel).map_err(|e| {
            if target.is_absolute() {
                io::Error::new(
                    ErrorKind::PermissionDenied,
                    format!(
                        "{}: a symlink to an absolute path is not allowed in the workspace; use a relative target",
                        link.display()
                    ),
                )
            } else {
                explain(e, link)
            }
        })
    }

    /// The target stored in the symlink at `path`, as written.
    pub fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let rel = self.relative(path)?;
        self.refuse_hidden(&rel, path)?;
        self.dir.read_link_contents(&rel).map_err(|e| explain(e, path))
    }

    /// Makes the empty `.git/hooks` folder of a repository that has none
    /// (see [`Folder::git_protected`]): clix's own set-up, which the
    /// agent's writes may not do.
    pub(crate) fn create_git_hooks(&self) -> io::Result<()> {
        self.dir.create_dir(".git/hooks").map_err(|e| explain(e, Path::new(".git/hooks")))
    }

    /// Sets the permission bits of `path`, without setuid and setgid.
    pub fn chmod(&self, path: &Path, mode: u32) -> io::Result<()> {
        let (folder, rel) = self.for_write(path)?;
        if folder.symlink_metadata(&rel)?.kind == Kind::Symlink {
            return Err(io::Error::new(ErrorKind::PermissionDenied, format!("{}: is a symlink", path.display())));
        }
        let permissions = Permissions::from_mode(mode & 0o7777 & !PRIVILEGE_BITS);
        folder.dir.set_permissions(&rel, permissions).map_err(|e| explain(e, path))
    }

    /// Sets the modification time of `path` (a final symlink is not followed).
    pub fn set_modified(&self, path: &Path, time: SystemTime) -> io::Result<()> {
        let (folder, rel) = self.for_write(path)?;
        let mut options = OpenOptions::new();
        options.read(true).follow(FollowSymlinks::No).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        let file = folder.dir.open_with(&rel, &options).map_err(|e| explain(e, path))?;
        file.into_std().set_modified(time)
    }
}

/// `path` made absolute-style with `.` dropped and `..` applied, without
/// touching the disk (as the shell resolves `cd ..`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn outside(path: &Path) -> io::Error {
    io::Error::new(
        ErrorKind::PermissionDenied,
        format!("{}: outside the workspace; only paths inside it can be used", path.display()),
    )
}

fn not_regular(path: &Path, kind: Kind) -> io::Error {
    io::Error::new(
        ErrorKind::InvalidInput,
        format!(
            "{}: is {}, not a regular file; clix reads and writes only regular files",
            path.display(),
            kind.described()
        ),
    )
}

/// Puts the path and the reason into errors the kernel words tersely.
fn explain(error: io::Error, path: &Path) -> io::Error {
    match error.raw_os_error() {
        // O_NOFOLLOW on a final symlink.
        Some(libc::ELOOP) => io::Error::new(
            ErrorKind::NotFound,
            format!("{}: is a symlink; clix does not follow it here", path.display()),
        ),
        // A FIFO opened for writing with no reader.
        Some(libc::ENXIO) => not_regular(path, Kind::Fifo),
        // cap-std's wording for openat2's RESOLVE_BENEATH refusal.
        _ if error.kind() == ErrorKind::PermissionDenied && error.to_string().contains("outside of the filesystem") => {
            leads_outside(path)
        }
        _ => error,
    }
}

fn leads_outside(path: &Path) -> io::Error {
    io::Error::new(
        ErrorKind::PermissionDenied,
        format!("{}: leads outside the workspace (through a symlink or ..); clix does not follow it", path.display()),
    )
}
