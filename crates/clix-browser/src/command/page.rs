//! The `browser` subcommands that keep or read a page: cookies, storage
//! and saved state, uploads, PDFs, Markdown and diffs. `browser.rs` parses
//! the words and calls [`act`]; the browser does the work (`clix-browser`).
//! Files go through the workspace handle (`io.fs`): state files are
//! written 0600, as they hold secrets, and an upload's files are read
//! through it and handed to Chromium as copies in `.clix/browser/uploads/`,
//! so a symlink planted in the workspace cannot make it read a host file.
//! The page may read a copy any time before it is left (a form sends it
//! when submitted), so the copies go when the browser does: at `browser
//! close`, and when the next browser starts (after an idle close or a
//! crash, which no command saw).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Browser, BrowserError, Change, Cookie, SavedState, StorageKind, mark_untrusted};
use clix_command::CommandIo;
use serde_json::{Value, json};

use clix_command::flags::common::JSON;
use clix_command::flags::{Arity, Item, Operand, Opt, Parsed, Syntax, Takes};
use clix_command::{fs_reason, resolve};

const ONLY_JSON: &[Item] = &[Item::Shown(JSON)];

/// Where an upload's copies go, in the workspace.
const UPLOADS: &str = ".clix/browser/uploads";

/// Removes every upload copy (the browser that could read them is gone),
/// through the workspace handle: a symlink planted at `.clix/browser`
/// cannot point it at other files (a test plants one). A failure leaves
/// them for the next time, logged, and fails nothing.
pub(super) async fn remove_uploads(io: &CommandIo<'_>, workspace: &Path) {
    let folder = workspace.join(UPLOADS);
    if io.fs.lstat(&folder).await.is_err() {
        return;
    }
    if let Err(e) = io.fs.remove(&folder, true).await {
        tracing::debug!(folder = %folder.display(), error = %fs_reason(&e), "browser: upload copies not removed");
    }
}

const COOKIES: Syntax = Syntax::plain(
    "browser cookies",
    &[Operand { shown: "[get|set NAME VALUE|clear]", arity: Arity::Rest }],
    &[
        Item::Shown(Opt { short: None, long: "--url", takes: Takes::Text("U") }),
        Item::Shown(Opt { short: None, long: "--values", takes: Takes::Nothing }),
        Item::Shown(JSON),
    ],
);
const STORAGE: Syntax = Syntax::plain(
    "browser storage",
    &[Operand { shown: "[local|session] [get [KEY]|set KEY VALUE|clear]", arity: Arity::Rest }],
    ONLY_JSON,
);
const STATE: Syntax = Syntax::plain(
    "browser state",
    &[Operand { shown: "save|load", arity: Arity::One }, Operand { shown: "<file>", arity: Arity::One }],
    ONLY_JSON,
);
const UPLOAD: Syntax = Syntax::plain(
    "browser upload",
    &[Operand { shown: "@eN", arity: Arity::One }, Operand { shown: "<file>", arity: Arity::Many }],
    ONLY_JSON,
);
const PDF: Syntax = Syntax::plain("browser pdf", &[Operand { shown: "[path.pdf]", arity: Arity::Optional }], ONLY_JSON);
const READ: Syntax = Syntax::plain(
    "browser read",
    &[Operand { shown: "[@eN]", arity: Arity::Optional }],
    &[Item::Shown(Opt { short: Some("-s"), long: "--selector", takes: Takes::Text("SELECTOR") }), Item::Shown(JSON)],
);
const DIFF: Syntax = Syntax::plain("browser diff", &[], ONLY_JSON);

/// These subcommands, in the order `--help` lists them, with their summaries.
pub(super) const SUMMARIES: [(&Syntax, &str); 7] = [
    (&COOKIES, "list cookies (values hidden unless --values), set NAME VALUE [--url U], or clear them"),
    (&STORAGE, "the page's local (default) or session storage: get [KEY], set KEY VALUE, clear"),
    (&STATE, "save cookies and storage to a file (0600, a secret) or load them: a login survives a restart"),
    (&UPLOAD, "put workspace files on a file input"),
    (&PDF, "save the page as a PDF (in .clix/browser/ by default)"),
    (&READ, "the page or an element (@eN, -s SELECTOR) as Markdown: headings, text, lists, links, tables"),
    (&DIFF, "lines added and removed on the page since the last snapshot (a page that updates itself)"),
];

/// What one of these subcommands prints: text, or JSON with `--json`.
pub(super) struct Shown {
    pub(super) text: String,
    pub(super) json: Value,
}

/// Where the command's files are: the line's handle and the workspace.
pub(super) struct Files<'a, 'io> {
    pub(super) io: &'a CommandIo<'io>,
    pub(super) workspace: &'a Path,
}

/// Runs `sub` when it is one of these subcommands; `None` otherwise.
pub(super) async fn act(
    browser: &mut Browser,
    files: &Files<'_, '_>,
    sub: &str,
    parsed: &Parsed,
    limit: Duration,
) -> Option<Result<Shown, BrowserError>> {
    let words = &parsed.operands;
    Some(match sub {
        "cookies" => cookies(browser, parsed).await,
        "storage" => storage(browser, words).await,
        // The syntaxes make these operands there; a usage error all the same if not.
        "state" => match words.as_slice() {
            [verb, file] => state(browser, files, verb, file, limit).await,
            _ => Err(usage("browser state save|load FILE")),
        },
        "upload" => match words.split_first() {
            Some((reference, names)) if !names.is_empty() => upload(browser, files, reference, names, limit).await,
            _ => Err(usage("browser upload @eN FILE…")),
        },
        "pdf" => pdf(browser, files, words.first().map(String::as_str)).await,
        "read" => read(browser, words.first().map(String::as_str), parsed.text("--selector")).await,
        "diff" => browser.diff().await.map(diff),
        _ => return None,
    })
}

fn usage(line: &str) -> BrowserError {
    BrowserError::Usage(format!("usage: {line}"))
}

async fn cookies(browser: &mut Browser, parsed: &Parsed) -> Result<Shown, BrowserError> {
    let words: Vec<&str> = parsed.operands.iter().map(String::as_str).collect();
    match words.as_slice() {
        [] | ["get"] => {
            let cookies = browser.cookies().await?;
            Ok(listed(&cookies, parsed.on("--values")))
        }
        ["set", name, value] => {
            let url = browser.set_cookie(name, value, parsed.text("--url")).await?;
            Ok(message(&format!("set cookie {name} for {url}")))
        }
        ["clear"] => {
            let n = browser.clear_cookies().await?;
            Ok(message(&format!("cleared {n} cookie{}", if n == 1 { "" } else { "s" })))
        }
        _ => Err(usage("browser cookies [get [--values]|set NAME VALUE [--url U]|clear]")),
    }
}

/// Cookies as lines: name, where it is sent, when it expires, its flags,
/// and its value only when asked (a value is a secret: a session, a token).
fn listed(cookies: &[Cookie], values: bool) -> Shown {
    let mut text = match cookies.len() {
        0 => "no cookies\n".to_string(),
        n if values => format!("{n} cookie{}:\n", if n == 1 { "" } else { "s" }),
        n => format!("{n} cookie{} (values hidden; --values shows them):\n", if n == 1 { "" } else { "s" }),
    };
    let mut shown = Vec::new();
    for c in cookies {
        let expires = if c.expires <= 0.0 { "session".to_string() } else { format!("expires {}", c.expires as i64) };
        let mut flags = Vec::new();
        if c.http_only {
            flags.push("httpOnly");
        }
        if c.secure {
            flags.push("secure");
        }
        let value = if values { format!(" = {:?}", c.value) } else { format!(" ({} chars)", c.value.chars().count()) };
        // Names and domains are the site's: quoted, so each stays one line.
        text.push_str(&format!("{:?}{value}  {:?}{}  {expires}  {}\n", c.name, c.domain, c.path, flags.join(" ")));
        let mut cookie = serde_json::to_value(c).unwrap_or_default();
        if !values {
            cookie["value"] = json!("***");
        }
        shown.push(cookie);
    }
    Shown { text, json: json!({ "cookies": shown }) }
}

fn message(text: &str) -> Shown {
    Shown { text: format!("{text}\n"), json: json!({ "message": text }) }
}

async fn storage(browser: &mut Browser, words: &[String]) -> Result<Shown, BrowserError> {
    let mut words: Vec<&str> = words.iter().map(String::as_str).collect();
    let kind = match words.first() {
        Some(&"session") => StorageKind::Session,
        Some(&"local") => StorageKind::Local,
        _ => {
            words.insert(0, "local");
            StorageKind::Local
        }
    };
    let store = words[0];
    match &words[1..] {
        [] | ["get"] | ["get", _] => {
            let (origin, items) = browser.storage_items(kind, words.get(2).copied()).await?;
            let mut lines = String::new();
            for item in &items {
                lines.push_str(&format!("{} = {}\n", item.name, item.value));
            }
            let text = if items.is_empty() {
                format!("{store} storage of {origin} is empty\n")
            } else {
                mark_untrusted(&origin, &lines)
            };
            Ok(Shown { text, json: json!({ "origin": origin, "storage": store, "items": items }) })
        }
        ["set", key, value] => {
            let origin = browser.storage_set(kind, key, value).await?;
            Ok(message(&format!("set {key} in the {store} storage of {origin}")))
        }
        ["clear"] => {
            let (origin, n) = browser.storage_clear(kind).await?;
            Ok(message(&format!(
                "cleared {n} item{} from the {store} storage of {origin}",
                if n == 1 { "" } else { "s" }
            )))
        }
        _ => Err(usage("browser storage [local|session] [get [KEY]|set KEY VALUE|clear]")),
    }
}

/// `state save|load FILE`: the file is the browser's secrets, written only
/// by its owner's account (0600) and never printed.
async fn state(
    browser: &mut Browser,
    files: &Files<'_, '_>,
    verb: &str,
    shown: &str,
    limit: Duration,
) -> Result<Shown, BrowserError> {
    let io = files.io;
    let path = resolve(io.cwd, shown);
    let failed = |e: bashkit::Error| BrowserError::Element(format!("{shown}: {}", fs_reason(&e)));
    match verb {
        "save" => {
            let state = browser.save_state().await?;
            let bytes = serde_json::to_vec_pretty(&state).unwrap_or_default();
            if let Some(parent) = path.parent() {
                io.fs.mkdir(parent, true).await.map_err(failed)?;
            }
            // Made empty and 0600 first, so the secrets are never in a file others may read.
            io.fs.write_file(&path, b"").await.map_err(failed)?;
            io.fs.chmod(&path, 0o600).await.map_err(failed)?;
            io.fs.write_file(&path, &bytes).await.map_err(failed)?;
            let what = counted(&state);
            Ok(Shown {
                text: format!("saved {what} to {shown} (0600; it holds your logins: keep it out of git)\n"),
                json: json!({ "path": path, "cookies": state.cookies.len(), "origins": state.origins.len() }),
            })
        }
        "load" => {
            let bytes = io.fs.read_file(&path).await.map_err(failed)?;
            let state: SavedState = serde_json::from_slice(&bytes).map_err(|e| {
                BrowserError::Usage(format!("{shown} is not a state file ({e}); make one with browser state save FILE"))
            })?;
            let tab = browser.load_state(&state, limit).await?;
            let what = counted(&state);
            let place = match tab {
                Some(n) => format!(" (the storage in a new tab {n}, now current; the page's tab stays)"),
                None => String::new(),
            };
            Ok(Shown {
                text: format!("loaded {what} from {shown}{place}; open the site now: browser open URL\n"),
                json: json!({ "path": path, "cookies": state.cookies.len(), "origins": state.origins.len(), "tab": tab }),
            })
        }
        other => Err(BrowserError::Usage(format!("state {other}? usage: browser state save|load FILE"))),
    }
}

fn counted(state: &SavedState) -> String {
    let (c, o) = (state.cookies.len(), state.origins.len());
    format!(
        "{c} cookie{} and the storage of {o} origin{}",
        if c == 1 { "" } else { "s" },
        if o == 1 { "" } else { "s" }
    )
}

/// `upload @eN FILE…`: each file read through the workspace handle (so
/// nothing outside the workspace, through a symlink or not) and written
/// as a fresh copy Chromium reads.
async fn upload(
    browser: &mut Browser,
    files: &Files<'_, '_>,
    reference: &str,
    names: &[String],
    limit: Duration,
) -> Result<Shown, BrowserError> {
    let io = files.io;
    let folder = files.workspace.join(UPLOADS).join(format!("{:016x}", rand_u64()));
    let mut copies: Vec<PathBuf> = Vec::new();
    for name in names {
        let failed = |e: bashkit::Error| BrowserError::Element(format!("cannot upload {name}: {}", fs_reason(&e)));
        let path = real_path(io, &resolve(io.cwd, name)).await.map_err(failed)?;
        if !path.starts_with(files.workspace) {
            return Err(BrowserError::Usage(format!(
                "{name} is outside the workspace ({}{}); the browser uploads workspace files only: copy it in first",
                files.workspace.display(),
                if path == resolve(io.cwd, name) { String::new() } else { format!("; it leads to {}", path.display()) }
            )));
        }
        let bytes = io.fs.read_file(&path).await.map_err(failed)?;
        let file_name = path.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "upload".into());
        // One folder per file, so two files of the same name keep their names.
        let copy = folder.join(copies.len().to_string()).join(file_name);
        if let Some(parent) = copy.parent() {
            io.fs.mkdir(parent, true).await.map_err(failed)?;
        }
        io.fs.write_file(&copy, &bytes).await.map_err(failed)?;
        copies.push(copy);
    }
    let change = browser.upload(reference, &copies, limit).await?;
    let mut shown = changed(&change);
    shown.text =
        format!("set {} file{} on {reference}; {}", names.len(), if names.len() == 1 { "" } else { "s" }, shown.text);
    Ok(shown)
}

/// `path` with every symlink in it followed, as the workspace handle sees
/// them (a link out of the workspace then names a path outside it).
async fn real_path(io: &CommandIo<'_>, path: &Path) -> bashkit::Result<PathBuf> {
    let mut done = PathBuf::from("/");
    let mut left: Vec<std::ffi::OsString> = path.components().rev().map(|c| c.as_os_str().to_owned()).collect();
    left.pop(); // the root
    let mut hops = 0;
    while let Some(part) = left.pop() {
        let next = bashkit::normalize_path(&done.join(&part));
        let is_link = io.fs.lstat(&next).await.is_ok_and(|m| m.file_type.is_symlink());
        if !is_link {
            done = next;
            continue;
        }
        hops += 1;
        if hops > 40 {
            return Err(std::io::Error::other("too many levels of symbolic links").into());
        }
        let target = io.fs.read_link(&next).await?;
        let target = if target.is_absolute() { target } else { done.join(target) };
        let target = bashkit::normalize_path(&target);
        left.extend(target.components().rev().map(|c| c.as_os_str().to_owned()));
        left.pop();
        done = PathBuf::from("/");
    }
    Ok(done)
}

/// A folder name no earlier upload took: std's randomly keyed hasher over the time.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// An action's result as `browser.rs` shows every action's.
fn changed(change: &Change) -> Shown {
    Shown { text: super::describe(change), json: serde_json::to_value(change).unwrap_or_default() }
}

async fn pdf(browser: &mut Browser, files: &Files<'_, '_>, shown: Option<&str>) -> Result<Shown, BrowserError> {
    let io = files.io;
    let bytes = browser.pdf().await?;
    let path = match shown {
        Some(shown) => resolve(io.cwd, shown),
        None => {
            let mut n = 1;
            loop {
                let candidate = files.workspace.join(format!(".clix/browser/page-{n}.pdf"));
                if !io.fs.exists(&candidate).await.unwrap_or(false) {
                    break candidate;
                }
                n += 1;
            }
        }
    };
    let named = path.strip_prefix(io.cwd).map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
    let failed = |e: bashkit::Error| BrowserError::Element(format!("cannot save {named}: {}", fs_reason(&e)));
    if let Some(parent) = path.parent() {
        io.fs.mkdir(parent, true).await.map_err(failed)?;
    }
    io.fs.write_file(&path, &bytes).await.map_err(failed)?;
    Ok(Shown {
        text: format!("saved {named} (PDF, {} bytes)\n", bytes.len()),
        json: json!({ "path": path, "bytes": bytes.len() }),
    })
}

async fn read(browser: &mut Browser, reference: Option<&str>, selector: Option<&str>) -> Result<Shown, BrowserError> {
    let (url, markdown) = browser.read(reference, selector).await?;
    let text = if markdown.trim().is_empty() {
        format!("(no text to read on {url}; try browser snapshot)\n")
    } else {
        mark_untrusted(&url, &markdown)
    };
    Ok(Shown { text, json: json!({ "url": url, "markdown": markdown }) })
}

/// `diff`'s result: only what changed, or that nothing did.
fn diff(change: Change) -> Shown {
    let json = serde_json::to_value(&change).unwrap_or_default();
    let mut lines = String::new();
    let text = if change.navigated {
        for line in &change.added {
            lines.push_str(&format!("{line}\n"));
        }
        format!(
            "no earlier snapshot of this page to compare with; it is now (browser diff again shows what changes):\n{}",
            mark_untrusted(&change.url, &lines)
        )
    } else if change.added.is_empty() && change.removed.is_empty() {
        "nothing changed since the last snapshot\n".to_string()
    } else {
        for line in &change.added {
            lines.push_str(&format!("+ {line}\n"));
        }
        for line in &change.removed {
            lines.push_str(&format!("- {line}\n"));
        }
        let more = match change.more {
            0 => String::new(),
            n => format!("… {n} more lines: browser snapshot\n"),
        };
        format!("changed since the last snapshot:\n{}{more}", mark_untrusted(&change.url, &lines))
    };
    Shown { text, json }
}
