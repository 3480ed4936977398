//! What the words of one command mean to a rule: a program's name whatever
//! its path, options however they are spelt, and which operands name a
//! folder no recursive command may touch.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The name a command is matched by: `/usr/bin/rm`, `./rm` and `rm` are all `rm`.
pub(crate) fn basename(word: &str) -> &str {
    word.rsplit('/').next().filter(|b| !b.is_empty()).unwrap_or(word)
}

/// A shell-style glob over one word: `*` any run, `?` one character; every
/// other character stands for itself. It allocates nothing: it runs for
/// rules on every command (plain words are compared directly, see `rule.rs`).
pub(crate) fn glob_matches(pattern: &str, word: &str) -> bool {
    let (p, w) = (pattern.as_bytes(), word.as_bytes());
    // Iterative matcher with one backtrack point (the last `*`). `?` is one
    // byte, so a pattern with `?` is only used on ASCII words by the rules.
    let (mut pi, mut wi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while wi < w.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, wi));
                pi += 1;
            }
            Some(c) if *c == b'?' || *c == w[wi] => {
                pi += 1;
                wi += 1;
            }
            _ => match star {
                Some((sp, sw)) => {
                    pi = sp + 1;
                    wi = sw + 1;
                    star = Some((sp, sw + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == b'*')
}

/// The option words of `args`: every word before `--` that starts with `-`
/// (a lone `-` is an operand, as for most tools).
pub(crate) fn options(args: &[String]) -> impl Iterator<Item = &str> {
    args.iter().map(String::as_str).take_while(|a| *a != "--").filter(|a| a.len() > 1 && a.starts_with('-'))
}

/// The operands of `args`: words that are not options (options may come
/// anywhere before `--`, as GNU tools permute them), and every word after `--`.
pub(crate) fn operands(args: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut after_dashes = false;
    for arg in args {
        if !after_dashes && arg == "--" {
            after_dashes = true;
        } else if after_dashes || !(arg.len() > 1 && arg.starts_with('-')) {
            out.push(arg.as_str());
        }
    }
    out
}

/// Whether `args` carry the option `flag` in any spelling GNU tools accept:
/// `-r` alone or inside a cluster (`-rf`, `-fr`), `--recursive` whole, with a
/// value (`--recursive=x`) or abbreviated to a unique-looking prefix (`--rec`).
pub(crate) fn has_flag(args: &[String], flag: &str) -> bool {
    options(args).any(|option| {
        if let Some(long) = flag.strip_prefix("--") {
            let Some(given) = option.strip_prefix("--") else { return false };
            let given = given.split_once('=').map_or(given, |(name, _)| name);
            given == long || (given.len() >= 3 && long.starts_with(given))
        } else if let Some(short) = flag.strip_prefix('-') {
            !option.starts_with("--") && short.chars().count() == 1 && option[1..].contains(short)
        } else {
            false
        }
    })
}

/// What the policy may look at in the workspace, which it never touches
/// itself: its caller reads through the workspace handle. Each answer is
/// `None` when the place cannot be read (outside the workspace, gone, too big).
pub trait WorkspaceFiles: Send + Sync {
    /// A folder's entry names.
    fn entries(&self, folder: &Path) -> Option<Vec<String>>;
    /// A script's text (a file a shell is told to run).
    fn script(&self, file: &Path) -> Option<String>;
}

/// A shared [`WorkspaceFiles`], as a [`Context`] holds it.
#[derive(Clone)]
pub struct Files(Arc<dyn WorkspaceFiles>);

impl Files {
    /// The policy's view of the workspace through `files`.
    pub fn new(files: impl WorkspaceFiles + 'static) -> Self {
        Files(Arc::new(files))
    }
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Files")
    }
}

impl PartialEq for Files {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Files {}

/// Where the command runs: enough to tell which paths are precious.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The shell's `$HOME` (what `~` expands to inside `run`).
    pub home: String,
    /// The workspace folder: it and every folder above it are protected.
    pub workspace: PathBuf,
    /// The folder the command runs in, when known before it runs (a line's
    /// start, followed through its literal `cd`s): relative paths are
    /// judged where they lead. Unknown, only `.`/`..` paths are protected.
    pub cwd: Option<PathBuf>,
    /// The workspace as the policy may look at it: a protected folder's
    /// entries, so that operands a glob expanded (`rm -rf *` as the hook
    /// and the exec-time check see it: every entry by name) are known to be
    /// all of it, and the scripts a line hands to a shell (`bash wipe.sh`).
    /// `None`: only what the line shows is judged.
    pub files: Option<Files>,
}

impl Context {
    /// The context of a session on `workspace` whose `$HOME` is `home`.
    pub fn new(workspace: impl Into<PathBuf>, home: impl Into<String>) -> Self {
        Context { workspace: workspace.into(), home: home.into(), cwd: None, files: None }
    }

    /// The same session, whose workspace the policy may look at through `files`.
    pub fn with_files(self, files: Files) -> Context {
        Context { files: Some(files), ..self }
    }

    /// The text of the script `word` names (placed from the current folder).
    pub(crate) fn script(&self, word: &str) -> Option<String> {
        let files = self.files.as_ref()?;
        match placed(&self.expand_home(word), self)? {
            Placed::At(path) => files.0.script(&path),
            Placed::Unplaced(_) => None,
        }
    }

    /// The same session, with commands running in `cwd`.
    pub(crate) fn at(&self, cwd: Option<PathBuf>) -> Context {
        Context { cwd, ..self.clone() }
    }

    /// Where `cd ARG` (`None`: a bare `cd`) leads from `from`; `None` when
    /// it cannot be told without running it (`cd -`).
    pub(crate) fn cd(&self, from: &Path, arg: Option<&str>) -> Option<PathBuf> {
        let arg = match arg {
            None => return Some(PathBuf::from(&self.home)),
            Some("-") => return None,
            Some(arg) => self.expand_home(arg),
        };
        lexical(&Path::new(from).join(arg).to_string_lossy())
    }

    /// `~`, `$HOME` or `${HOME}` at the start of `word`, replaced by the home folder.
    fn expand_home(&self, word: &str) -> String {
        let home_words = ["~", "$HOME", "${HOME}"];
        match home_words.iter().find_map(|h| word.strip_prefix(h)) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{}{rest}", self.home),
            _ => word.to_string(),
        }
    }
}

/// A kind of operand a rule can ask about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OperandKind {
    /// `/` itself (also `/*`, `/.`, `//`).
    Root,
    /// `/`, the home folder, the workspace, a folder above it, or a relative
    /// path made only of `.` and `..` (the current folder or one above it).
    Protected,
    /// A disk device: `/dev/sd*`, `/dev/nvme*`, `/dev/hd*`, `/dev/vd*`, …
    Device,
}

impl OperandKind {
    /// Whether `word` (one operand, or the value of a `key=value` operand) is of this kind.
    pub(crate) fn covers(self, word: &str, ctx: &Context) -> bool {
        match self {
            OperandKind::Root => lexical(&strip_glob(word)).is_some_and(|p| p == Path::new("/")),
            OperandKind::Protected => is_protected(word, ctx),
            OperandKind::Device => is_disk_device(word),
        }
    }
}

/// Disk devices by the names Linux gives them.
const DISK_DEVICES: &[&str] =
    &["/dev/sd*", "/dev/nvme*", "/dev/hd*", "/dev/vd*", "/dev/xvd*", "/dev/mmcblk*", "/dev/dm-*", "/dev/disk/*"];

pub(crate) fn is_disk_device(word: &str) -> bool {
    lexical(word).is_some_and(|p| DISK_DEVICES.iter().any(|d| glob_matches(d, &p.to_string_lossy())))
}

/// Globs that stand for everything in a folder (hidden entries too, in
/// the spellings people use to reach them).
const EVERYTHING: &[&str] = &["*", ".*", ".[!.]*", ".[^.]*", "..?*", "{*,.*}", "{.*,*}"];

/// `dir/*`, `dir/.*` and the like stand for everything in `dir` (a bare
/// `*` for everything here): for a recursive delete, as bad as `dir`.
fn strip_glob(word: &str) -> String {
    if EVERYTHING.contains(&word) {
        return ".".into();
    }
    let trimmed = EVERYTHING
        .iter()
        .find_map(|glob| word.strip_suffix(glob).and_then(|dir| dir.strip_suffix('/')))
        .unwrap_or(word);
    if trimmed.is_empty() && word.starts_with('/') { "/".into() } else { trimmed.into() }
}

fn is_protected(word: &str, ctx: &Context) -> bool {
    match placed(&ctx.expand_home(&strip_glob(word)), ctx) {
        Some(Placed::At(path)) => is_protected_place(&path, ctx),
        Some(Placed::Unplaced(only_dots)) => only_dots,
        None => false,
    }
}

fn is_protected_place(path: &Path, ctx: &Context) -> bool {
    path == Path::new("/") || path == Path::new(&ctx.home) || ctx.workspace.starts_with(path)
}

/// Where a word names.
enum Placed {
    /// This absolute path.
    At(PathBuf),
    /// A relative path with no current folder to place it; `true` when it
    /// is only `.` and `..` (the current folder or one above it, which the
    /// run-time hook cannot place, so it is always refused).
    Unplaced(bool),
}

fn placed(word: &str, ctx: &Context) -> Option<Placed> {
    let path = lexical(word)?;
    if !path.is_relative() {
        return Some(Placed::At(path));
    }
    match &ctx.cwd {
        Some(cwd) => lexical(&cwd.join(&path).to_string_lossy()).map(Placed::At),
        None => {
            Some(Placed::Unplaced(path.components().all(|c| matches!(c, Component::CurDir | Component::ParentDir))))
        }
    }
}

/// Whether `words` (a command's operands, two or more) are together every
/// entry of a protected folder (hidden ones aside, as `*` leaves them out):
/// `rm -rf *` once the shell has expanded the glob. Needs the context's
/// lister and a known place for each word.
pub(crate) fn cover_a_protected_folder(words: &[&str], ctx: &Context) -> bool {
    let Some(files) = &ctx.files else { return false };
    if words.len() < 2 {
        return false;
    }
    let mut by_folder: std::collections::BTreeMap<PathBuf, std::collections::BTreeSet<String>> = Default::default();
    for word in words {
        let Some(Placed::At(path)) = placed(&ctx.expand_home(word), ctx) else { continue };
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { continue };
        by_folder.entry(parent.to_path_buf()).or_default().insert(name.to_string_lossy().into_owned());
    }
    by_folder.into_iter().any(|(folder, named)| {
        named.len() >= 2
            && is_protected_place(&folder, ctx)
            && files.0.entries(&folder).is_some_and(|entries| {
                let visible: Vec<&String> = entries.iter().filter(|e| !e.starts_with('.')).collect();
                !visible.is_empty() && visible.iter().all(|e| named.contains(*e))
            })
    })
}

/// `path` with `.` and `..` resolved by name (no filesystem access: the
/// hook must not touch the workspace). `None` for an empty word.
fn lexical(word: &str) -> Option<PathBuf> {
    if word.is_empty() {
        return None;
    }
    let mut out = PathBuf::new();
    let mut ups = 0usize;
    for component in Path::new(word).components() {
        match component {
            Component::RootDir => out.push("/"),
            Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                if out.file_name().is_some() {
                    out.pop();
                } else if !out.has_root() {
                    ups += 1;
                }
            }
            Component::Normal(name) => out.push(name),
        }
    }
    if out.as_os_str().is_empty() && ups == 0 {
        return Some(PathBuf::from("."));
    }
    let mut relative: PathBuf = std::iter::repeat_n("..", ups).collect();
    if out.has_root() {
        return Some(out);
    }
    relative.push(out);
    Some(relative)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace of fixed entries and scripts.
    struct Fixed;

    impl WorkspaceFiles for Fixed {
        fn entries(&self, folder: &Path) -> Option<Vec<String>> {
            match folder.to_str()? {
                "/ws" => Some(vec!["a.txt".into(), "src".into(), ".git".into()]),
                "/ws/src" => Some(vec!["main.rs".into(), "lib.rs".into()]),
                _ => None,
            }
        }

        fn script(&self, _: &Path) -> Option<String> {
            None
        }
    }

    /// `rm -rf *` as the hook sees it, expanded: all of a protected folder's
    /// visible entries, placed from the folder the command runs in.
    #[test]
    fn operands_that_are_all_of_a_protected_folder_cover_it() {
        let ctx = Context::new("/ws", "/home/u").with_files(Files::new(Fixed));
        let at = |cwd: &str| ctx.at(Some(PathBuf::from(cwd)));
        for (words, cwd, covered) in [
            (&["a.txt", "src"][..], "/ws", true),
            (&["src", "a.txt", ".git"], "/ws", true),
            (&["/ws/a.txt", "/ws/src"], "/tmp", true),
            (&["../a.txt", "../src"], "/ws/src", true),
            (&["a.txt"], "/ws", false),
            (&["src"], "/ws", false),
            (&["a.txt", "other"], "/ws", false),
            // A folder inside the workspace is not protected.
            (&["main.rs", "lib.rs"], "/ws/src", false),
            // Unplaced (no folder known), or no view of the workspace.
            (&["a.txt", "src"], "", false),
        ] {
            let ctx = if cwd.is_empty() { ctx.clone() } else { at(cwd) };
            assert_eq!(cover_a_protected_folder(words, &ctx), covered, "{words:?} in {cwd:?}");
        }
        let blind = Context::new("/ws", "/home/u").at(Some(PathBuf::from("/ws")));
        assert!(!cover_a_protected_folder(&["a.txt", "src"], &blind));
    }

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn globs_match_like_the_shell() {
        for (pattern, word, expected) in [
            ("mkfs*", "mkfs.ext4", true),
            ("mkfs.*", "mkfs", false),
            ("*", "", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("/dev/sd*", "/dev/sda1", true),
            ("/dev/sd*", "/dev/null", false),
            ("*x*y", "axbxcy", true),
        ] {
            assert_eq!(glob_matches(pattern, word), expected, "{pattern} ~ {word}");
        }
    }

    #[test]
    fn flags_in_every_spelling_and_never_after_double_dash() {
        for (args, flag, expected) in [
            ("-rf /", "-r", true),
            ("-fr /", "-r", true),
            ("/ -rf", "-r", true),
            ("-r -f /", "-f", true),
            ("--recursive /", "--recursive", true),
            ("--recu /", "--recursive", true),
            ("--re /", "--recursive", false),
            ("--recursive=yes", "--recursive", true),
            ("-- -r", "-r", false),
            ("--force x", "-f", false),
            ("-R x", "-r", false),
        ] {
            assert_eq!(has_flag(&words(args), flag), expected, "{args} has {flag}");
        }
        assert_eq!(operands(&words("-rf a -- -f")), vec!["a", "-f"]);
    }

    #[test]
    fn protected_paths() {
        let ctx = Context::new("/tmp/x/ws", "/home/user");
        for (word, expected) in [
            ("/", true),
            ("//", true),
            ("/*", true),
            ("/tmp/x", true),
            ("/tmp/x/ws", true),
            ("/tmp/x/ws/", true),
            ("/tmp/x/ws/build", false),
            ("/tmp/x/ws/build/..", true),
            ("~", true),
            ("~/", true),
            ("$HOME", true),
            ("~/projects", false),
            ("/home/user", true),
            (".", true),
            ("./", true),
            ("..", true),
            ("../..", true),
            ("build", false),
            ("./node_modules", false),
            ("build/..", true),
            ("../sibling", false),
            ("", false),
            ("*", true),
            (".[!.]*", true),
            ("..?*", true),
            ("./*", true),
            ("build/*", false),
            ("*.log", false),
            ("/tmp/x/ws/.*", true),
        ] {
            assert_eq!(OperandKind::Protected.covers(word, &ctx), expected, "{word:?}");
        }
        // Where the line's own `cd`s lead, relative paths are judged there.
        let above = ctx.at(Some("/tmp/x".into()));
        for (word, expected) in [("ws", true), ("ws/build", false), ("*", true), ("other", false), (".", true)] {
            assert_eq!(OperandKind::Protected.covers(word, &above), expected, "from /tmp/x: {word:?}");
        }
        let inside = ctx.at(Some("/tmp/x/ws/build".into()));
        for (word, expected) in [("*", false), (".", false), ("..", true), ("../..", true), ("obj", false)] {
            assert_eq!(OperandKind::Protected.covers(word, &inside), expected, "from ws/build: {word:?}");
        }
        assert_eq!(ctx.cd(Path::new("/tmp/x/ws"), Some("..")), Some(PathBuf::from("/tmp/x")));
        assert_eq!(ctx.cd(Path::new("/tmp/x/ws"), Some("~/p")), Some(PathBuf::from("/home/user/p")));
        assert_eq!(ctx.cd(Path::new("/tmp/x/ws"), None), Some(PathBuf::from("/home/user")));
        assert_eq!(ctx.cd(Path::new("/tmp/x/ws"), Some("-")), None);
        assert!(OperandKind::Root.covers("/.", &ctx));
        assert!(!OperandKind::Root.covers("/tmp", &ctx));
        assert!(OperandKind::Device.covers("/dev/nvme0n1", &ctx));
        assert!(!OperandKind::Device.covers("/dev/null", &ctx));
        assert_eq!(basename("/usr/bin/rm"), "rm");
        assert_eq!(basename("./rm"), "rm");
    }
}
